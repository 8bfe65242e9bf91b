"""Rules for the JobSet template: replicatedJobs (names, replicas), dependsOn (targets, order, cycles), the JobSet
fields (startupPolicy, successPolicy, TTL, volumeClaimPolicies) and the ancestor-step webhook rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import constants as c
from ..labels import dns1123_label_problems
from .checker import (
    _CheckerBase,
    _container_names,
    _is_int,
    _key,
    _kind,
    _RJob,
    _show,
)


class _TemplateChecks(_CheckerBase):
    """spec.template rules and the ancestor-step webhook rules."""

    # -- template

    def check_template(self, spec: dict) -> None:
        base = "spec.template.spec"
        template = self.mapping(spec, "template", "spec.template", required=True)
        if template is None:
            return
        jobset = self.mapping(template, "spec", "spec.template.spec", required=True)
        if jobset is None:
            return
        rjobs = self.sequence(jobset, "replicatedJobs", f"{base}.replicatedJobs")
        if not rjobs:
            if rjobs is not None or "replicatedJobs" not in jobset:
                self.error(
                    f"{base}.replicatedJobs",
                    "template.replicated_jobs.required",
                    f"{base}.replicatedJobs must list at least one ReplicatedJob; add one named 'node' labelled "
                    f"{c.ANCESTOR_LABEL}: trainer",
                )
            return
        for index, raw in enumerate(rjobs):
            self.collect_rjob(index, raw, f"{base}.replicatedJobs[{index}]")
        for rjob in self.rjobs:
            self.check_depends_on(rjob)
        self.check_cycles()
        self.check_jobset_policies(jobset, base)

    def collect_rjob(self, index: int, raw: Any, path: str) -> None:
        if not isinstance(raw, dict):
            self.error(path, "field.type", f"{path} must be a mapping with name and template, not {_kind(raw)}")
            return
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            self.error(f"{path}.name", "replicated_job.name.required", f"{path}.name is required; add a name")
            name = None
        else:
            problems = dns1123_label_problems(name)
            if problems:
                self.error(
                    f"{path}.name",
                    "replicated_job.name.invalid",
                    f"ReplicatedJob name {_show(name)} must be a DNS-1123 label (it becomes part of Job and Pod "
                    f"names): {'; '.join(problems)}",
                )
            if len(name) > c.MAX_REPLICATED_JOB_NAME_LENGTH:
                # Decision D4: Trainer v2.4.0 rejects longer names in runtimes.
                self.error(
                    f"{path}.name",
                    "replicated_job.name.too_long",
                    f"ReplicatedJob name {_show(name)} has {len(name)} characters; Trainer v2.4 limits ReplicatedJob "
                    f"names in runtimes to {c.MAX_REPLICATED_JOB_NAME_LENGTH} ({c.TRAINER_RJOB_NAME_CHANGE}): "
                    f"rename it to at most {c.MAX_REPLICATED_JOB_NAME_LENGTH} characters, e.g. "
                    f"{_show(name[: c.MAX_REPLICATED_JOB_NAME_LENGTH].rstrip('-'))}",
                )
            if name in self.rjob_by_name:
                self.error(
                    f"{path}.name",
                    "replicated_job.name.duplicate",
                    f"ReplicatedJob name {_show(name)} is used twice; give each ReplicatedJob a unique name",
                )
                name = None
        replicas: int | None = 1
        if "replicas" in raw:
            value = raw["replicas"]
            if not _is_int(value) or value < 0:
                self.error(
                    f"{path}.replicas",
                    "replicated_job.replicas.invalid",
                    f"{path}.replicas must be a whole number ≥ 1, got {_show(value)}",
                )
                replicas = None
            elif value == 0:
                # Decision D5: 0 is legal for JobSet (it creates no Jobs) but almost always a mistake here.
                self.warn(
                    f"{path}.replicas",
                    "replicated_job.replicas.zero",
                    "replicas is 0, so this ReplicatedJob creates no Jobs; set replicas ≥ 1 or remove it",
                )
                replicas = 0
            else:
                replicas = value
        template = self.mapping(raw, "template", f"{path}.template", required=True)
        ancestor = None
        pod_spec = None
        if template is not None:
            meta = template.get("metadata")
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if isinstance(labels, dict) and c.ANCESTOR_LABEL in labels:
                value = labels[c.ANCESTOR_LABEL]
                ancestor = value if isinstance(value, str) else _show(value)
            job_spec = template.get("spec")
            pod_template = job_spec.get("template") if isinstance(job_spec, dict) else None
            candidate = pod_template.get("spec") if isinstance(pod_template, dict) else None
            pod_spec = candidate if isinstance(candidate, dict) else None
        depends = []
        entries = self.sequence(raw, "dependsOn", f"{path}.dependsOn")
        for item in entries or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                depends.append((item["name"], item.get("status") if isinstance(item.get("status"), str) else ""))
        rjob = _RJob(index, name, path, raw, replicas, ancestor, depends, pod_spec)
        self.rjobs.append(rjob)
        if name is not None:
            self.rjob_by_name[name] = rjob

    def check_depends_on(self, rjob: _RJob) -> None:
        entries = rjob.raw.get("dependsOn")
        if not isinstance(entries, list):
            return
        path = f"{rjob.path}.dependsOn"
        seen: set[str] = set()
        for _, item_path, item in self.mapping_items(
            entries,
            path,
            limit=c.MAX_DEPENDS_ON,
            code="replicated_job.depends_on.too_many",
            too_many=f"{path} has {len(entries)} entries; JobSet allows at most {c.MAX_DEPENDS_ON}",
            fields="name and status",
        ):
            target = item.get("name")
            if not isinstance(target, str) or not target:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.name_required",
                    f"{item_path}.name is required; name the ReplicatedJob to wait for",
                )
            elif target == rjob.name:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.self",
                    f"ReplicatedJob {_show(target)} cannot depend on itself; remove this dependsOn entry",
                )
            elif target not in self.rjob_by_name:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.unknown",
                    f"dependsOn names {_show(target)}, which is not a ReplicatedJob of this runtime; use one of "
                    f"{', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                )
            elif target in seen:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.duplicate",
                    f"{_show(target)} is listed twice in dependsOn; keep one entry",
                )
            elif self.rjob_by_name[target].index > rjob.index:
                self.warn(
                    f"{item_path}.name",
                    "replicated_job.depends_on.order",
                    f"{_show(target)} is listed after {_show(rjob.name)}; JobSet expects dependencies to be "
                    "listed before the ReplicatedJobs that depend on them: move it up",
                )
            if isinstance(target, str):
                seen.add(target)
            status = item.get("status")
            if status not in c.DEPENDS_ON_STATUSES:
                self.error(
                    f"{item_path}.status",
                    "replicated_job.depends_on.status",
                    f"{item_path}.status must be Ready or Complete, got {_show(status)}",
                )

    def check_cycles(self) -> None:
        graph = {r.name: [d for d, _ in r.depends_on if d in self.rjob_by_name] for r in self.rjobs if r.name}
        state: dict[str, int] = {}
        for start in graph:
            if state.get(start):
                continue
            # Iterative DFS (0 = new, 1 = on stack, 2 = done) so hostile input cannot exhaust the stack.
            stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
            state[start] = 1
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(child) == 1:
                    names = [n for n, _ in stack]
                    cycle = [*names[names.index(child) :], child]
                    rjob = self.rjob_by_name[node]
                    self.error(
                        f"{rjob.path}.dependsOn",
                        "replicated_job.depends_on.cycle",
                        f"dependsOn forms a cycle ({' → '.join(cycle)}), so none of these can ever start; "
                        "remove one of the dependencies",
                    )
                    return
                elif not state.get(child):
                    state[child] = 1
                    stack.append((child, iter(graph.get(child, []))))

    def check_jobset_policies(self, jobset: dict, base: str) -> None:
        startup = self.mapping(jobset, "startupPolicy", f"{base}.startupPolicy")
        if startup is not None:
            order = startup.get("startupPolicyOrder")
            if order is not None and order not in c.STARTUP_POLICY_ORDERS:
                self.error(
                    f"{base}.startupPolicy.startupPolicyOrder",
                    "template.startup_policy.order",
                    f"startupPolicyOrder must be AnyOrder or InOrder, got {_show(order)}",
                )
            self.startup_in_order = order == "InOrder"
            if self.startup_in_order and any("dependsOn" in r.raw for r in self.rjobs):
                self.error(
                    f"{base}.startupPolicy",
                    "template.startup_policy.depends_on_exclusive",
                    "StartupPolicy and DependsOn APIs are mutually exclusive: remove startupPolicy (dependsOn "
                    "replaces it) or remove every dependsOn",
                )
        success = self.mapping(jobset, "successPolicy", f"{base}.successPolicy")
        if success is not None:
            operator = success.get("operator")
            if operator not in c.SUCCESS_POLICY_OPERATORS:
                self.error(
                    f"{base}.successPolicy.operator",
                    "template.success_policy.operator",
                    f"successPolicy.operator must be All or Any, got {_show(operator)}",
                )
            targets = self.sequence(success, "targetReplicatedJobs", f"{base}.successPolicy.targetReplicatedJobs")
            for position, target in enumerate(targets or []):
                if not isinstance(target, str) or target not in self.rjob_by_name:
                    self.error(
                        f"{base}.successPolicy.targetReplicatedJobs[{position}]",
                        "template.success_policy.unknown_target",
                        f"successPolicy targets {_show(target)}, which is not a ReplicatedJob of this runtime; use "
                        f"one of {', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                    )
        if "ttlSecondsAfterFinished" in jobset:
            value = jobset["ttlSecondsAfterFinished"]
            if not _is_int(value) or value < 0:
                self.error(
                    f"{base}.ttlSecondsAfterFinished",
                    "template.ttl.invalid",
                    f"ttlSecondsAfterFinished must be an integer ≥ 0, got {_show(value)}",
                )
        policies = self.sequence(jobset, "volumeClaimPolicies", f"{base}.volumeClaimPolicies")
        if policies is not None:
            if len(policies) > c.MAX_VOLUME_CLAIM_POLICIES:
                self.error(
                    f"{base}.volumeClaimPolicies",
                    "template.volume_claim_policies.too_many",
                    f"volumeClaimPolicies has {len(policies)} entries; at most {c.MAX_VOLUME_CLAIM_POLICIES}",
                )
            for position, policy in enumerate(policies):
                templates = policy.get("templates") if isinstance(policy, dict) else None
                for t_index, claim in enumerate(templates if isinstance(templates, list) else []):
                    meta = claim.get("metadata") if isinstance(claim, dict) else None
                    if isinstance(meta, dict) and "namespace" in meta:
                        path = f"{base}.volumeClaimPolicies[{position}].templates[{t_index}].metadata.namespace"
                        self.error(
                            path,
                            "template.volume_claim_policies.namespace",
                            "volume claim templates must not set a namespace (claims are created in the "
                            "TrainJob's namespace); remove it",
                        )

    # -- ancestor-step webhook rules

    def check_ancestors(self) -> None:
        owners: dict[str, _RJob] = {}
        for rjob in self.rjobs:
            if rjob.ancestor is None:
                continue
            lpath = _key(f"{rjob.path}.template.metadata.labels", c.ANCESTOR_LABEL)
            if rjob.ancestor not in c.ANCESTOR_STEPS:
                self.error(
                    lpath,
                    "ancestor.invalid_step",
                    f"{c.ANCESTOR_LABEL} must be one of {', '.join(c.ANCESTOR_STEPS)}, got {_show(rjob.ancestor)}",
                )
                continue
            if rjob.ancestor in owners:
                self.error(
                    lpath,
                    "ancestor.duplicate",
                    f"ReplicatedJobs {_show(owners[rjob.ancestor].name)} and {_show(rjob.name)} are both labelled "
                    f"{rjob.ancestor}; only one ReplicatedJob may carry each ancestor step",
                )
            else:
                owners[rjob.ancestor] = rjob
            if rjob.replicas != 1:
                self.error(
                    f"{rjob.path}.replicas",
                    "ancestor.replicas",
                    f"a ReplicatedJob labelled {rjob.ancestor} must have replicas: 1 (the Trainer webhook rejects "
                    f"other values); got {_show(rjob.raw.get('replicas'))}",
                )
            container = c.ANCESTOR_CONTAINER[rjob.ancestor]
            if container not in _container_names(rjob.pod_spec):
                self.error(
                    f"{rjob.path}.template.spec.template.spec.containers",
                    "ancestor.container_missing",
                    f"a ReplicatedJob labelled {rjob.ancestor} needs a container named {_show(container)}; rename "
                    "the main container",
                )
        if self.rjobs and c.ANCESTOR_TRAINER not in owners:
            self.warn(
                "spec.template.spec.replicatedJobs",
                "ancestor.no_trainer",
                f"no ReplicatedJob is labelled {c.ANCESTOR_LABEL}: trainer, so numNodes and the TrainJob's trainer "
                "settings will not apply; label the training ReplicatedJob",
            )
        if (
            self.ml_kind == "mpi"
            and self.mpi.get("runLauncherAsNode") is True
            and self.num_nodes >= 2
            and not {c.MPI_LAUNCHER_JOB, c.MPI_NODE_JOB} <= set(self.rjob_by_name)
        ):
            self.error(
                "spec.template.spec.replicatedJobs",
                "ml_policy.mpi.launcher_as_node_jobs",
                "with mpi.runLauncherAsNode and numNodes ≥ 2 the runtime needs both a 'launcher' and a 'node' "
                "ReplicatedJob; add the missing one or set numNodes to 1",
            )
