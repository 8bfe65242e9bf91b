"""What the installed ClusterTrainingRuntime CRD says about `spec.scheduling`, read from its openAPIV3Schema.

Pure (no I/O): `status.probe_crd_schema` fetches the CRD. Which Kubernetes scheduling types Trainer v2.4 embeds is
still open upstream (the v1alpha2 string `disruptionMode` `Pod | PodGroup`, or the 1.37 v1beta1/v1alpha3 union
`{single: {}} | {all: {}}`), so the portal reads it from the cluster instead of guessing. `scheduling_schema(crd)`
returns a `SchedulingSchema`; the policy app feeds its `disruption_mode` to validation and export.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

DISRUPTION_MODE_UNION = "union"
DISRUPTION_MODE_STRING = "string"
DISRUPTION_MODE_UNKNOWN = ""
TRAINER_SCHEDULING_GATE = "TrainJobWorkloadAwareScheduling"


@dataclass(frozen=True)
class SchedulingSchema:
    """The `spec.scheduling` facts of one CRD version.

    present: the CRD has `spec.scheduling` (False: Trainer < v2.4, or its TrainJobWorkloadAwareScheduling gate off).
    version: the CRD version read (the storage version, else the first served one); "" when none has a schema.
    disruption_mode: DISRUPTION_MODE_UNION / _STRING, or _UNKNOWN (absent, or the levels disagree).
    min_count: `gang.minCount` appears in the embedded schedulingPolicy schema (None when there is no policy schema).
    claim_levels: the levels (1, 2, 3) whose schema has `resourceClaims`.
    """

    present: bool
    version: str = ""
    disruption_mode: str = DISRUPTION_MODE_UNKNOWN
    min_count: bool | None = None
    claim_levels: tuple[int, ...] = ()

    @property
    def embedded_types(self) -> str:
        """Return which Kubernetes scheduling types the CRD embeds, in words ("" when unknown)."""
        if self.disruption_mode == DISRUPTION_MODE_STRING:
            return "Kubernetes 1.36 scheduling.k8s.io/v1alpha2 types (disruptionMode is the string Pod or PodGroup)"
        if self.disruption_mode == DISRUPTION_MODE_UNION:
            return "Kubernetes 1.37 scheduling types (disruptionMode is {single: {}} or {all: {}})"
        return ""

    def as_dict(self) -> dict[str, Any]:
        """Return the facts with `embedded_types` and `summary`, JSON-ready."""
        return {
            **asdict(self),
            "claim_levels": list(self.claim_levels),
            "embedded_types": self.embedded_types,
            "summary": self.summary,
        }

    @property
    def summary(self) -> str:
        """Return one line for the cluster page."""
        if not self.present:
            return (
                "The installed ClusterTrainingRuntime CRD has no spec.scheduling: Trainer < v2.4 or the "
                f"{TRAINER_SCHEDULING_GATE} gate is off, so workload-aware scheduling policies are rejected"
            )
        parts = [f"spec.scheduling is served ({self.version})"]
        if self.embedded_types:
            parts.append(f"it embeds the {self.embedded_types}")
        if self.min_count is not None:
            parts.append("gang.minCount is in the schema" if self.min_count else "gang.minCount is not in the schema")
        return "; ".join(parts)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _properties(schema: Any) -> dict:
    return _dict(_dict(schema).get("properties"))


def _version_schema(crd: Any) -> tuple[str, dict]:
    versions = _dict(crd.get("spec") if isinstance(crd, dict) else None).get("versions")
    versions = [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []
    ordered = [v for v in versions if v.get("storage")] + [v for v in versions if v.get("served")] + versions
    for version in ordered:
        schema = _dict(_dict(version.get("schema")).get("openAPIV3Schema"))
        if schema:
            return str(version.get("name") or ""), schema
    return "", {}


def _disruption_form(group: dict) -> str:
    mode = _properties(group).get("disruptionMode")
    if not isinstance(mode, dict):
        return DISRUPTION_MODE_UNKNOWN
    if mode.get("type") == "string" or isinstance(mode.get("enum"), list):
        return DISRUPTION_MODE_STRING
    if mode.get("type") == "object" or "properties" in mode:
        return DISRUPTION_MODE_UNION
    return DISRUPTION_MODE_UNKNOWN


def scheduling_schema(crd: Any) -> SchedulingSchema:
    """Return the `spec.scheduling` facts of a CustomResourceDefinition (a dict as the API serves it).

    Never raises: anything unreadable counts as absent or unknown.
    """
    version, schema = _version_schema(crd)
    scheduling = _dict(_properties(_properties(schema).get("spec")).get("scheduling"))
    if not scheduling:
        return SchedulingSchema(present=False, version=version)
    entry = _dict(_dict(_properties(scheduling).get("replicatedJobs")).get("items"))
    job = _dict(_properties(entry).get("job"))
    levels = ((1, scheduling), (2, entry), (3, job))
    forms = {_disruption_form(group) for _, group in levels if group} - {DISRUPTION_MODE_UNKNOWN}
    policies = [_dict(_properties(group).get("schedulingPolicy")) for _, group in levels]
    gangs = [_dict(_properties(policy).get("gang")) for policy in policies if policy]
    return SchedulingSchema(
        present=True,
        version=version,
        disruption_mode=forms.pop() if len(forms) == 1 else DISRUPTION_MODE_UNKNOWN,
        min_count=any("minCount" in _properties(gang) for gang in gangs) if any(policies) else None,
        claim_levels=tuple(level for level, group in levels if group and "resourceClaims" in _properties(group)),
    )
