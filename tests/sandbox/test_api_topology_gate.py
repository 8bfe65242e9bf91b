"""The `TopologyAwareWorkloadScheduling` gate of the API server (`--gate TopologyAwareWorkloadScheduling=false`).

With the alpha gate off a real kube-apiserver silently drops `schedulingConstraints` from PodGroup specs and Workload
`podGroupTemplates[]` on create, update and apply (dry-run too); a server-side dry-run create therefore tells a client
whether the gate is on (docs/reference/kubernetes-apis.md §2.5 item 7).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sandbox.testing import SandboxProcess
from tests.sandbox.api_support import raw

GATE = "TopologyAwareWorkloadScheduling"
ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
BETA = "/apis/scheduling.k8s.io/v1beta1/namespaces/default"
ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
APPLY = "application/apply-patch+yaml"


def pod_group(name: str, version: str = "v1beta1", **spec) -> dict:
    ref = ({"workloadRef": {"workloadName": "wl", "templateName": "node"}} if version == "v1beta1" else
           {"podGroupTemplateRef": {"workload": {"workloadName": "wl", "podGroupTemplateName": "node"}}})
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {**ref, "schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def workload(name: str, version: str = "v1beta1", constraints: dict | None = None) -> dict:
    node = {"name": "node", "schedulingPolicy": {"gang": {"minCount": 2}}}
    if constraints is not None:
        node["schedulingConstraints"] = constraints
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "Workload", "metadata": {"name": name},
            "spec": {"podGroupTemplates": [node, {"name": "init", "schedulingPolicy": {"basic": {}},
                                                  **({"schedulingConstraints": constraints} if constraints else {})}]}}


@pytest.fixture(scope="module")
def gate_off() -> Iterator[SandboxProcess]:
    with SandboxProcess(topology="none", controllers=False, gates={GATE: False}) as proc:
        yield proc


@pytest.fixture
def off(gate_off: SandboxProcess) -> SandboxProcess:
    gate_off.reset()
    return gate_off


def test_the_gate_is_on_by_default_and_reported(cluster, off):
    assert cluster.info()["featureGates"] == {GATE: True, "DRAWorkloadResourceClaims": False}
    assert off.info()["featureGates"] == {GATE: False, "DRAWorkloadResourceClaims": False}
    assert f"gates {GATE}=false" in "\n".join(off.output)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "stored"])
def test_gate_off_drops_pod_group_constraints_silently(off, dry_run):
    path = f"{BETA}/podgroups" + ("?dryRun=All" if dry_run else "")
    code, body = raw(off.url, "POST", path, pod_group("pg", schedulingConstraints=ZONE))
    assert code == 201, body
    assert "schedulingConstraints" not in body["spec"]
    assert body["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    stored = raw(off.url, "GET", f"{BETA}/podgroups/pg")
    assert stored[0] == (404 if dry_run else 200)


def test_gate_off_drops_workload_template_constraints(off):
    code, body = raw(off.url, "POST", f"{BETA}/workloads?dryRun=All", workload("wl", constraints=ZONE))
    assert code == 201
    assert [t.get("schedulingConstraints") for t in body["spec"]["podGroupTemplates"]] == [None, None]
    code, body = raw(off.url, "POST", f"{BETA}/workloads", workload("wl", constraints=ZONE))
    assert code == 201 and all("schedulingConstraints" not in t for t in body["spec"]["podGroupTemplates"])


def test_gate_off_drops_constraints_on_update_and_apply(off):
    assert raw(off.url, "POST", f"{BETA}/podgroups", pod_group("pg"))[0] == 201
    code, body = raw(off.url, "PATCH", f"{BETA}/podgroups/pg", {"spec": {"schedulingConstraints": ZONE}},
                     "application/merge-patch+json")
    assert code == 200 and "schedulingConstraints" not in body["spec"]  # dropped, so not "field is immutable"
    code, body = raw(off.url, "PATCH", f"{BETA}/podgroups/applied?fieldManager=tool",
                     pod_group("applied", schedulingConstraints=ZONE), APPLY)
    assert code == 201 and "schedulingConstraints" not in body["spec"]
    code, body = raw(off.url, "PATCH", f"{BETA}/workloads/wa?fieldManager=tool", workload("wa", constraints=ZONE),
                     APPLY)
    assert code == 201 and all("schedulingConstraints" not in t for t in body["spec"]["podGroupTemplates"])


def test_gate_on_keeps_constraints_in_a_dry_run_and_stores_nothing(cluster):
    code, body = raw(cluster.url, "POST", f"{BETA}/podgroups?dryRun=All", pod_group("probe",
                                                                                     schedulingConstraints=ZONE))
    assert code == 201 and body["spec"]["schedulingConstraints"] == ZONE
    assert raw(cluster.url, "GET", f"{BETA}/podgroups/probe")[0] == 404
    code, body = raw(cluster.url, "POST", f"{BETA}/workloads?dryRun=All", workload("probe", constraints=ZONE))
    assert code == 201 and body["spec"]["podGroupTemplates"][0]["schedulingConstraints"] == ZONE


@pytest.mark.parametrize("enabled", [True, False], ids=["gate-on", "gate-off"])
def test_typed_client_detects_the_gate_with_a_dry_run(cluster, off, enabled):
    target = cluster if enabled else off
    api_client = k8s_config.new_client_from_config(config_file=target.kubeconfig)
    try:
        api = k8s.SchedulingV1beta1Api(api_client)
        answer = api.create_namespaced_pod_group("default", pod_group("probe", schedulingConstraints=ZONE),
                                                 dry_run="All")
        kept = answer.spec.scheduling_constraints is not None
        assert kept is enabled
        assert api.list_namespaced_pod_group("default").items == []
    finally:
        api_client.close()


def test_gate_off_on_a_136_cluster_drops_v1alpha2_constraints():
    with SandboxProcess(topology="none", controllers=False, kube_version="1.36", gates={GATE: False}) as proc:
        code, body = raw(proc.url, "POST", f"{ALPHA2}/podgroups?dryRun=All",
                         pod_group("pg", "v1alpha2", schedulingConstraints=ZONE))
        assert code == 201 and "schedulingConstraints" not in body["spec"]
        code, body = raw(proc.url, "POST", f"{ALPHA2}/workloads", workload("wl", "v1alpha2", constraints=ZONE))
        assert code == 201 and all("schedulingConstraints" not in t for t in body["spec"]["podGroupTemplates"])


@pytest.mark.parametrize(("flag", "message"), [("Bogus=false", "unrecognized feature gate 'Bogus'"),
                                               (f"{GATE}=maybe", f"expected {GATE}=true or {GATE}=false")])
def test_a_bad_gate_flag_is_refused_at_start(tmp_path, flag, message):
    done = subprocess.run([sys.executable, "-m", "sandbox", "--kubeconfig", str(tmp_path / "kc"), "--topology",
                           "none", "--no-controllers", "--gate", flag], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2 and message in done.stderr
