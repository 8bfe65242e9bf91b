"""Rules for one scheduling group at any level (schedulingPolicy, topology constraints, disruptionMode,
resourceClaims), misspelt field names, and the scheduling fields the TrainJob controller owns."""

from __future__ import annotations

from typing import Any

from .. import constants as c
from ..labels import label_key_problems
from .checker import (
    LEGACY_DISRUPTION_MODES,
    SCHEDULING_TYPOS,
    TOPOLOGY_TYPOS,
    _CheckerBase,
    _show,
)


class _GroupChecks(_CheckerBase):
    """Per-group spec.scheduling rules and controller-owned fields."""

    def check_group(self, group: dict, path: str, *, level: int) -> None:
        policy = self.mapping(group, "schedulingPolicy", f"{path}.schedulingPolicy")
        if policy is not None:
            ppath = f"{path}.schedulingPolicy"
            members = [k for k in ("basic", "gang") if k in policy]
            if len(members) != 1:
                self.error(
                    ppath,
                    "scheduling.policy.one_of",
                    f"schedulingPolicy must set exactly one of basic or gang (found {', '.join(members) or 'none'}); "
                    "e.g. {gang: {}}",
                )
            for extra in sorted(set(policy) - {"basic", "gang"}):
                self.error(
                    f"{ppath}.{extra}",
                    "scheduling.policy.unknown",
                    f"schedulingPolicy has no field {_show(extra)}; use basic: {{}} or gang: {{}}",
                )
            gang = policy.get("gang")
            if gang is not None and not isinstance(gang, dict):
                self.error(f"{ppath}.gang", "field.type", "gang must be a mapping; write gang: {}")
            if isinstance(gang, dict):
                for forbidden in ("minCount", "minGroupCount"):
                    if forbidden in gang:
                        self.error(
                            f"{ppath}.gang.{forbidden}",
                            "scheduling.policy.min_count",
                            f"{forbidden} is computed from numNodes by the TrainJob controller; remove it",
                        )
            basic = policy.get("basic")
            if basic is not None and not isinstance(basic, dict):
                self.error(f"{ppath}.basic", "field.type", "basic must be a mapping; write basic: {}")
        constraints = self.mapping(group, "schedulingConstraints", f"{path}.schedulingConstraints")
        if constraints is not None:
            cpath = f"{path}.schedulingConstraints"
            self.check_typos(constraints, cpath, allowed=("topology",))
            topology = self.sequence(constraints, "topology", f"{cpath}.topology")
            if topology is not None and len(topology) > c.MAX_TOPOLOGY_CONSTRAINTS:
                self.error(
                    f"{cpath}.topology",
                    "scheduling.topology.too_many",
                    f"only {c.MAX_TOPOLOGY_CONSTRAINTS} topology constraint per group is allowed, found "
                    f"{len(topology)}; keep one key",
                )
            for position, item in enumerate(topology or []):
                self.check_topology_item(item, f"{cpath}.topology[{position}]")
        self.check_disruption_mode(group, path)
        claims = self.sequence(group, "resourceClaims", f"{path}.resourceClaims")
        if claims is not None:
            if level != 3:
                self.check_claims_level(path, level)
            elif claims and self.options.dra_claims_gate is False:
                self.warn(
                    f"{path}.resourceClaims",
                    "scheduling.resource_claims.gate_off",
                    f"these claims will be dropped on this cluster: its {c.GATE_DRA_CLAIMS} feature gate is off (beta, "
                    "off by default in Kubernetes 1.37), so the API server silently removes resourceClaims from the "
                    "Workload and the PodGroups and the pods share no device; enable "
                    f"{c.GATE_DRA_CLAIMS}=true on kube-apiserver (and kube-scheduler)",
                )
            self.check_resource_claims(claims, f"{path}.resourceClaims")

    def check_claims_level(self, path: str, level: int) -> None:
        """Report resourceClaims on a level-1 group or a level-2 entry: Trainer v2.4 has them only under `job`."""
        # Decision D17: KEP-3015 68e528b8 and JobSet's ReplicatedJobScheduling keep claims on per-Job groups only.
        where = "spec.scheduling" if level == 1 else f"the entry {path}"
        self.error(
            f"{path}.resourceClaims",
            "scheduling.resource_claims.level",
            f"resourceClaims is not a field of {where} in Trainer v2.4: claims belong to level 3, under job, where "
            "each claim is copied into the per-Job PodGroup and shared by all its pods; move it to "
            "spec.scheduling.replicatedJobs[].job.resourceClaims of an entry that targets the ReplicatedJob "
            "whose pods share the device (e.g. `{targetReplicatedJobs: [node], job: {resourceClaims: [...]}}`)",
        )

    def check_topology_item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            self.error(path, "field.type", f"{path} must be a mapping like {{key: topology.kubernetes.io/zone}}")
            return
        for wrong, right in TOPOLOGY_TYPOS.items():
            if wrong in item:
                self.error(
                    f"{path}.{wrong}",
                    "scheduling.typo",
                    f"topology constraints have no field {_show(wrong)}; use {right!r} (the node label key)",
                )
        key = item.get("key")
        if key is None:
            if not any(w in item for w in TOPOLOGY_TYPOS):
                self.error(
                    f"{path}.key",
                    "scheduling.topology.key_required",
                    "topology[].key is required: the node label key of the domain, e.g. topology.kubernetes.io/zone",
                )
            return
        problems = label_key_problems(key) if isinstance(key, str) else ["must be a string"]
        if problems:
            self.error(
                f"{path}.key",
                "scheduling.topology.key_invalid",
                f"topology key {_show(key)} is not a valid node label key: {'; '.join(problems)}",
            )
            return
        if self.options.topology_gate is False:
            self.warn(
                f"{path}.key",
                "scheduling.topology.gate_off",
                f"this {_show(key)} constraint is ignored by this cluster: its {c.GATE_TOPOLOGY} feature gate is off, "
                "so the API server drops schedulingConstraints from the PodGroups and the gang is placed without "
                f"it; enable {c.GATE_TOPOLOGY}=true on kube-apiserver and kube-scheduler",
            )
        known = self.options.known_topology_keys
        if known and key not in known:
            self.warn(
                f"{path}.key",
                "scheduling.topology.key_unknown",
                f"no node in the cluster has the label {_show(key)}, so no domain can satisfy this constraint; "
                f"use one of {', '.join(known)} or label the nodes",
            )

    def check_disruption_mode(self, group: dict, path: str) -> None:
        if "disruptionMode" not in group:
            return
        mode = group["disruptionMode"]
        dpath = f"{path}.disruptionMode"
        form = self.options.disruption_mode_form
        if form == c.DISRUPTION_MODE_STRING:
            self.check_string_disruption_mode(mode, dpath)
            return
        if isinstance(mode, str):
            if mode in LEGACY_DISRUPTION_MODES and form == c.DISRUPTION_MODE_UNION:
                self.error(
                    dpath,
                    "scheduling.disruption_mode.cluster_form",
                    f"this cluster's ClusterTrainingRuntime CRD embeds the Kubernetes 1.37 scheduling types, where "
                    f"disruptionMode is a union: write {{{LEGACY_DISRUPTION_MODES[mode]}: {{}}}} instead of "
                    f"{mode!r}",
                )
                return
            if mode in LEGACY_DISRUPTION_MODES:
                union = LEGACY_DISRUPTION_MODES[mode]
                self.warn(
                    dpath,
                    "scheduling.disruption_mode.legacy_string",
                    f"disruptionMode {mode!r} is the v1alpha2 string form; write {{{union}: {{}}}} (the union form "
                    "used from Kubernetes 1.37)",
                )
                return
            self.error(
                dpath,
                "scheduling.disruption_mode.one_of",
                f"disruptionMode must be {{single: {{}}}} or {{all: {{}}}}, got {_show(mode)}",
            )
            return
        if not isinstance(mode, dict) or len([k for k in ("single", "all") if k in mode]) != 1 or len(mode) != 1:
            self.error(
                dpath,
                "scheduling.disruption_mode.one_of",
                f"disruptionMode must set exactly one of single or all, e.g. {{all: {{}}}}; got {_show(mode)}",
            )

    def check_string_disruption_mode(self, mode: Any, dpath: str) -> None:
        """Check disruptionMode against a CRD embedding the v1alpha2 types (the string enum Pod | PodGroup)."""
        if isinstance(mode, str) and mode in LEGACY_DISRUPTION_MODES:
            return
        union = {v: k for k, v in LEGACY_DISRUPTION_MODES.items()}
        member = next(iter(mode), None) if isinstance(mode, dict) and len(mode) == 1 else None
        fix = f"write {union[member]!r}" if member in union else "write 'Pod' or 'PodGroup'"
        self.error(
            dpath,
            "scheduling.disruption_mode.cluster_form",
            "this cluster's ClusterTrainingRuntime CRD embeds the Kubernetes 1.36 (v1alpha2) scheduling types, "
            f"where disruptionMode is the string Pod or PodGroup, not {_show(mode)}: {fix}",
        )

    def check_resource_claims(self, claims: list, path: str) -> None:
        seen: set[str] = set()
        for _, item, claim in self.mapping_items(
            claims,
            path,
            limit=c.MAX_RESOURCE_CLAIMS,
            code="scheduling.resource_claims.too_many",
            too_many=f"resourceClaims has {len(claims)} items; at most {c.MAX_RESOURCE_CLAIMS} per group",
            fields="name and a claim source",
        ):
            name = claim.get("name")
            if not isinstance(name, str) or not name:
                self.error(f"{item}.name", "scheduling.resource_claims.name_required", f"{item}.name is required")
            elif name in seen:
                self.error(
                    f"{item}.name",
                    "scheduling.resource_claims.duplicate",
                    f"claim name {_show(name)} is used twice; give each claim a unique name",
                )
            else:
                seen.add(name)
            sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(k)]
            if len(sources) != 1:
                self.error(
                    item,
                    "scheduling.resource_claims.source",
                    f"{item} must set exactly one of resourceClaimName or resourceClaimTemplateName",
                )

    def check_typos(self, group: dict, path: str, *, allowed: tuple[str, ...]) -> None:
        for key in group:
            if key in allowed or key not in SCHEDULING_TYPOS:
                continue
            self.error(
                f"{path}.{key}",
                "scheduling.typo",
                f"{path} has no field {_show(key)}; did you mean {SCHEDULING_TYPOS[key]}?",
            )

    def check_owned_fields(self, spec: dict) -> None:
        template = spec.get("template")
        jobset = template.get("spec") if isinstance(template, dict) else None
        if isinstance(jobset, dict) and "scheduling" in jobset:
            self.error(
                "spec.template.spec.scheduling",
                "scheduling.jobset_owned",
                "JobSet scheduling must not be set, it is owned by the TrainJob controller when spec.scheduling is "
                "set; remove spec.template.spec.scheduling",
            )
        for rjob in self.rjobs:
            job_spec = rjob.raw.get("template", {}).get("spec") if isinstance(rjob.raw.get("template"), dict) else None
            if isinstance(job_spec, dict) and "scheduling" in job_spec:
                self.error(
                    f"{rjob.path}.template.spec.scheduling",
                    "scheduling.job_owned",
                    "Job scheduling must not be set, it is owned by the TrainJob controller; remove it",
                )
            if rjob.pod_spec is not None and "schedulingGroup" in rjob.pod_spec:
                self.error(
                    f"{rjob.path}.template.spec.template.spec.schedulingGroup",
                    "scheduling.pod_scheduling_group_owned",
                    "Pod schedulingGroup must not be set, it is owned by the TrainJob controller; remove it",
                )
