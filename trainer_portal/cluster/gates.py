"""Probes for the Kubernetes 1.37 feature gates that silently change the scheduling objects a TrainJob gets.

`DRAWorkloadResourceClaims` (beta, off by default in 1.37): with it off kube-apiserver drops `resourceClaims` from
Workloads and PodGroups without an error (`dropDisabledDRAWorkloadResourceClaimsFields`), so every level-3 claim of
a policy is lost. Probed like the topology gate (`status.probe_topology_gate`): a server-side dry-run create of a
PodGroup with one claim that comes back without it means the gate is off. Nothing is stored by a dry run.
"""

from __future__ import annotations

from typing import Any

from trainer_portal import kube

DRA_CLAIMS_GATE = "DRAWorkloadResourceClaims"
DRA_PROBE_NAME = "trainer-portal-claims-probe"
DRA_PROBE_NAMESPACE = "default"
DRA_PROBE_CLAIM = {"name": "probe", "resourceClaimTemplateName": "trainer-portal-probe"}
DRA_GATE_HINT = (
    f"Enable --feature-gates={DRA_CLAIMS_GATE}=true on kube-apiserver and kube-scheduler (beta, off by default in "
    "Kubernetes 1.37); until then the resourceClaims of every level-3 policy are dropped from the PodGroups."
)


def probe_dra_claims_gate(gateway: kube.Gateway, served: list[str]) -> dict[str, Any]:
    """Return ``{enabled, message, hint}``: whether the API server keeps ``resourceClaims`` on PodGroups.

    ``enabled`` is None when the probe could not run (no PodGroup API, no permission, another error); the message
    and hint then say why. Never raises.
    """
    if not served:
        return {"enabled": None, "message": "No PodGroup API is served, so there is nothing to probe.",
                "hint": "Enable the Workload API first (see scheduling support)."}
    try:
        resource = gateway.resolve(kube.PODGROUP)
        answer = gateway.create(resource, body=_claims_probe(resource), dry_run=True)
    except kube.KubeInvalid as exc:
        if "resourceClaims" not in exc.message:
            return {"enabled": None, "message": exc.message, "hint": ""}
        return {"enabled": False, "message": f"The API server refuses PodGroup resourceClaims: {exc.message}",
                "hint": DRA_GATE_HINT}
    except kube.KubeError as exc:
        return {"enabled": None, "message": exc.message, "hint": ""}
    if ((answer or {}).get("spec") or {}).get("resourceClaims"):
        return {"enabled": True,
                "message": f"The API server keeps PodGroup resourceClaims ({DRA_CLAIMS_GATE} is on).",
                "hint": ""}
    return {
        "enabled": False,
        "message": f"The API server dropped the resourceClaims of a dry-run PodGroup: {DRA_CLAIMS_GATE} is off, so "
        "the level-3 claims of every policy are silently lost on this cluster.",
        "hint": DRA_GATE_HINT,
    }


def _claims_probe(resource: kube.Resource) -> dict[str, Any]:
    ref = ({"podGroupTemplateRef": {"workload": {"workloadName": DRA_PROBE_NAME, "podGroupTemplateName": "node"}}}
           if resource.version == "v1alpha2" else
           {"workloadRef": {"workloadName": DRA_PROBE_NAME, "templateName": "node"}})
    return {
        "apiVersion": f"{resource.group}/{resource.version}",
        "kind": "PodGroup",
        "metadata": {"name": DRA_PROBE_NAME, "namespace": DRA_PROBE_NAMESPACE},
        "spec": {**ref, "schedulingPolicy": {"basic": {}}, "resourceClaims": [dict(DRA_PROBE_CLAIM)]},
    }
