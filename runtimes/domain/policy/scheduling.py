"""Rules for the legacy spec.podGroupPolicy and the v2.4 spec.scheduling levels: level 1 on spec.scheduling,
level-2 replicatedJobs entries and their targets, level-3 job groups, and the PodGroupTemplate count."""

from __future__ import annotations

from .. import constants as c
from .checker import (
    GROUP_FIELDS,
    LEVEL1_FIELDS,
    _CheckerBase,
    _policy_of,
    _show,
    _topology_key,
)


class _SchedulingChecks(_CheckerBase):
    """spec.podGroupPolicy and spec.scheduling level rules."""

    # -- legacy podGroupPolicy

    def check_pod_group_policy(self, spec: dict) -> None:
        path = "spec.podGroupPolicy"
        policy = self.mapping(spec, "podGroupPolicy", path)
        if policy is None:
            return
        if "coscheduling" in policy and "volcano" in policy:
            self.error(
                path,
                "pod_group_policy.multiple",
                "podGroupPolicy sets both coscheduling and volcano; only one of its members may be specified",
            )
        if "workload" in policy:
            # Decision D1: the early KEP's podGroupPolicy.workload was rejected upstream in favour of spec.scheduling.
            self.warn(
                f"{path}.workload",
                "pod_group_policy.workload_rejected",
                "podGroupPolicy.workload comes from an early KEP draft that was rejected; no Trainer release "
                "implements it. Use spec.scheduling (level 1 gang) instead",
            )
        cos = self.mapping(policy, "coscheduling", f"{path}.coscheduling")
        if cos is not None:
            # 0 means "use the plugin's default" upstream (the CRD has no minimum), so only negatives are refused.
            self.positive_int(
                cos,
                "scheduleTimeoutSeconds",
                f"{path}.coscheduling.scheduleTimeoutSeconds",
                "pod_group_policy.schedule_timeout",
                minimum=0,
            )
        volcano = self.mapping(policy, "volcano", f"{path}.volcano")
        topology = self.mapping(volcano, "networkTopology", f"{path}.volcano.networkTopology") if volcano else None
        if topology is not None:
            mode = topology.get("mode")
            if "mode" in topology and mode not in c.VOLCANO_MODES:
                self.error(
                    f"{path}.volcano.networkTopology.mode",
                    "pod_group_policy.volcano_mode",
                    f"networkTopology.mode must be hard or soft, got {_show(mode)}",
                )
            self.positive_int(
                topology,
                "highestTierAllowed",
                f"{path}.volcano.networkTopology.highestTierAllowed",
                "pod_group_policy.volcano_tier",
            )

    # -- v2.4 spec.scheduling

    def check_priorities(self, path: str) -> None:
        """Report ReplicatedJobs that disagree on `priorityClassName` under spec.scheduling.

        kube-apiserver refuses a Workload whose PodGroupTemplates carry different priorities ("detected multiple
        priority configurations"), so the TrainJob gets no Workload and never starts; inside one PodGroup a pod with
        a different priority blocks the whole gang. Either way the runtime cannot work: an error.
        """
        by_class: dict[str, list[str]] = {}
        for rjob in self.rjobs:
            if not rjob.name:
                continue
            value = rjob.pod_spec.get("priorityClassName") if isinstance(rjob.pod_spec, dict) else None
            by_class.setdefault(value if isinstance(value, str) and value else "", []).append(rjob.name)
        if len(by_class) < 2:
            return
        shown = "; ".join(
            f"{', '.join(names)} {f'use {name}' if name else 'set none'}" for name, names in sorted(by_class.items())
        )
        chosen = max((name for name in by_class if name), key=lambda name: len(by_class[name]))
        self.error(
            path,
            "scheduling.priority.mixed",
            f"the ReplicatedJobs disagree on priorityClassName ({shown}): the API server refuses the Workload "
            "(\"detected multiple priority configurations\") and the TrainJob never starts; set the same "
            f"priorityClassName on every ReplicatedJob's pod template (e.g. {chosen}) or on none",
        )

    def check_scheduling(self, spec: dict) -> None:
        path = "spec.scheduling"
        scheduling = self.mapping(spec, "scheduling", path)
        if scheduling is None:
            return
        composite = self.options.composite_enabled
        if "podGroupPolicy" in spec:
            self.error(
                path,
                "scheduling.pod_group_policy_exclusive",
                "scheduling and podGroupPolicy are mutually exclusive: remove spec.podGroupPolicy (coscheduling/"
                "volcano) or spec.scheduling",
            )
        self.check_owned_fields(spec)
        self.check_typos(scheduling, path, allowed=(*LEVEL1_FIELDS, "replicatedJobs"))
        level1 = [f for f in LEVEL1_FIELDS if f in scheduling]
        entries = self.sequence(scheduling, "replicatedJobs", f"{path}.replicatedJobs")
        if level1 and entries and not composite:
            self.error(
                path,
                "scheduling.levels_exclusive",
                f"level 1 ({', '.join(level1)}) and level 2 (replicatedJobs) cannot be combined: Trainer v2.4.0 "
                f"keeps them mutually exclusive (composite PodGroups are {c.COMPOSITE_RELEASE_LABEL}); keep one "
                "level: remove the level-1 fields, or remove replicatedJobs",
            )
        elif level1 and entries:
            self.warn(
                path,
                "scheduling.composite.alpha2",
                f"level 1 ({', '.join(level1)}) around level-2 groups is a composite (gang-of-gangs) policy, "
                f"{c.COMPOSITE_RELEASE_LABEL}: a Trainer v2.4.0 cluster rejects it; keep one level to apply it to "
                "such a cluster",
            )
        self.check_group(scheduling, path, level=1)
        self.check_priorities(path)
        level1_gang = _policy_of(scheduling) == "gang" and (bool(level1) or not entries)
        if level1_gang and (self.startup_in_order or any(r.depends_on for r in self.rjobs)):
            # KEP-3015: with sequenced startup Trainer falls back to one PodGroup per ReplicatedJob, so nothing
            # deadlocks; the user asked for one gang over the whole TrainJob and gets one per ReplicatedJob instead.
            self.warn(
                f"{path}.schedulingPolicy",
                "scheduling.level1_gang_per_replicated_job",
                "this runtime starts ReplicatedJobs in sequence (dependsOn / startupPolicy InOrder), so a level-1 "
                "gang becomes one gang per ReplicatedJob (KEP-3015): each ReplicatedJob is scheduled all-or-nothing "
                "on its own, not the whole TrainJob at once; use level-2 entries to say which ReplicatedJobs gang "
                "together",
            )
        sequenced = self.startup_in_order or any(r.depends_on for r in self.rjobs)
        if not entries and level1_gang and sequenced and len(self.rjobs) > c.MAX_POD_GROUP_TEMPLATES:
            self.error(
                path,
                "scheduling.too_many_pod_groups",
                f"with sequenced startup a level-1 gang falls back to one PodGroupTemplate per ReplicatedJob "
                f"({len(self.rjobs)}); Kubernetes allows at most {c.MAX_POD_GROUP_TEMPLATES}",
            )
        if entries is None:
            return
        if not entries:
            self.warn(
                f"{path}.replicatedJobs", "scheduling.replicated_jobs.empty", "replicatedJobs is empty: remove it"
            )
            return
        targeted: dict[str, int] = {}
        templates = 0
        for index, epath, entry in self.mapping_items(
            entries,
            f"{path}.replicatedJobs",
            limit=c.MAX_SCHEDULING_ENTRIES,
            code="scheduling.replicated_jobs.too_many",
            too_many=f"scheduling.replicatedJobs has {len(entries)} entries; at most {c.MAX_SCHEDULING_ENTRIES}",
            fields="targetReplicatedJobs",
        ):
            templates += self.check_entry(entry, epath, index, targeted)
        untargeted = [r.name for r in self.rjobs if r.name and r.name not in targeted]
        for name in untargeted:
            # Decision D3: Trainer v2.4.0 rejects a runtime whose replicatedJobs leave a ReplicatedJob untargeted.
            self.error(
                f"{path}.replicatedJobs",
                "scheduling.untargeted_replicated_job",
                f"ReplicatedJob {_show(name)} is not targeted by any {path}.replicatedJobs entry; with "
                "replicatedJobs every ReplicatedJob must be targeted by exactly one entry (Trainer v2.4): add an "
                f"entry `targetReplicatedJobs: [{name}]` with `schedulingPolicy: {{basic: {{}}}}` (or add "
                f"{_show(name)} to an existing entry's targetReplicatedJobs)",
            )
        templates += len(untargeted) + (1 if level1 else 0)
        if templates > c.MAX_POD_GROUP_TEMPLATES:
            self.error(
                f"{path}.replicatedJobs",
                "scheduling.too_many_pod_groups",
                f"this scheduling resolves to {templates} PodGroupTemplates (level-3 entries count once per replica, "
                f"untargeted ReplicatedJobs once each); Kubernetes allows at most {c.MAX_POD_GROUP_TEMPLATES}: "
                "merge entries or reduce replicas",
            )

    def check_entry(self, entry: dict, epath: str, index: int, targeted: dict[str, int]) -> int:
        """Check one level-2 entry; return how many PodGroupTemplates it resolves to."""
        composite = self.options.composite_enabled
        self.check_typos(entry, epath, allowed=(*GROUP_FIELDS, "targetReplicatedJobs", "job"))
        targets = self.sequence(entry, "targetReplicatedJobs", f"{epath}.targetReplicatedJobs", required=True)
        names: list[str] = []
        tpath = f"{epath}.targetReplicatedJobs"
        if targets is not None:
            if not 1 <= len(targets) <= c.MAX_TARGETS_PER_ENTRY:
                self.error(
                    tpath,
                    "scheduling.targets.count",
                    f"targetReplicatedJobs must list 1–{c.MAX_TARGETS_PER_ENTRY} ReplicatedJob names, "
                    f"has {len(targets)}",
                )
            for position, target in enumerate(targets):
                item = f"{tpath}[{position}]"
                if not isinstance(target, str) or not target or len(target) > c.MAX_NAME_LENGTH:
                    self.error(
                        item,
                        "scheduling.targets.invalid",
                        f"{item} must be a ReplicatedJob name (1–{c.MAX_NAME_LENGTH} characters)",
                    )
                    continue
                if target in names:
                    self.error(item, "scheduling.targets.duplicate", f"{_show(target)} is listed twice; keep one")
                    continue
                names.append(target)
                if target not in self.rjob_by_name:
                    self.error(
                        item,
                        "scheduling.targets.unknown",
                        f"{_show(target)} is not a ReplicatedJob of this runtime; use one of "
                        f"{', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                    )
                elif target in targeted:
                    self.error(
                        item,
                        "scheduling.targets.targeted_twice",
                        f"a ReplicatedJob must not be targeted by more than one replicatedJobs entry: {_show(target)} "
                        f"is already in entry {targeted[target]}; remove it from one of them",
                    )
                else:
                    targeted[target] = index
        job = self.mapping(entry, "job", f"{epath}.job")
        self.check_group(entry, epath, level=2)
        if job is None:
            if _policy_of(entry) == "gang":
                self.check_gang_dependencies(names, epath)
            return 1
        jpath = f"{epath}.job"
        if targets is not None and len(targets) != 1:
            self.error(
                tpath,
                "scheduling.job.single_target",
                "an entry with job (level 3) must target exactly one ReplicatedJob; split it into one entry per "
                "ReplicatedJob",
            )
        # resourceClaims on the entry has its own error (scheduling.resource_claims.level) saying where it belongs.
        entry_fields = [f for f in GROUP_FIELDS if f in entry and f != "resourceClaims"]
        if entry_fields and not composite:
            self.error(
                epath,
                "scheduling.job.excludes_entry_fields",
                f"an entry with job cannot also set {', '.join(entry_fields)} in Trainer v2.4.0 (an entry that is a "
                f"group of per-Job groups is composite, {c.COMPOSITE_RELEASE_LABEL}); move them under job or remove "
                "them",
            )
        elif entry_fields:
            self.warn(
                epath,
                "scheduling.composite.alpha2",
                f"an entry with both {', '.join(entry_fields)} and job is a composite (gang-of-gangs) group, "
                f"{c.COMPOSITE_RELEASE_LABEL}: a Trainer v2.4.0 cluster rejects it; move the fields under job to "
                "apply it to such a cluster",
            )
        self.check_typos(job, jpath, allowed=GROUP_FIELDS)
        self.check_group(job, jpath, level=3)
        rjob = self.rjob_by_name.get(names[0]) if len(names) == 1 else None
        replicas = rjob.replicas if rjob and rjob.replicas is not None else 1
        if rjob is not None and replicas > self.options.max_level3_replicas:
            self.error(
                tpath,
                "scheduling.job.replicas",
                f"level 3 (job) targets {_show(rjob.name)} with replicas {replicas}; at most "
                f"{self.options.max_level3_replicas} replica(s) are supported (Trainer v2.4, until Kubernetes "
                "1.38): set replicas to 1 or use a level-2 entry",
            )
        if rjob is not None and _policy_of(job) == "gang":
            pods = self.pods_per_job(rjob)
            if pods >= c.LARGE_LEVEL3_GANG:
                key = _topology_key(job) or "topology domain"
                self.warn(
                    jpath,
                    "capacity.level3_gang_large",
                    f"the level-3 gang for {_show(rjob.name)} needs all {pods} pods (numNodes) in one {key} "
                    "domain at once; check that a single domain has that capacity or use a wider topology key",
                )
        return max(replicas, 1) + (1 if composite and entry_fields else 0)
