"""What every admission gate reads and returns: the job's linked objects read once (``JobView``), the ``Admission``
a gate decides, and the PodGroup summaries.

A gate is a pure function ``JobView → Admission | None``: an Admission when it holds the job (the first that does
decides), None to let the job pass to the next gate. The order lives in :mod:`jobs.domain.admission`.

Pure: no framework.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from operator import attrgetter, itemgetter

from . import plan as startup
from . import signals as sig
from . import states as st

_JOB_TEMPLATE = re.compile(r"^(?P<rjob>.+)-(?P<index>\d+)$")


@dataclass(frozen=True)
class PodGroupStatus:
    """One PodGroup as the job detail shows it ("63 / 64 bound")."""

    name: str
    policy: str
    min_count: int | None
    members: int
    bound: int
    running: int
    condition: str
    reason: str
    message: str
    topology_key: str
    template: str
    verdict: str  # placed | unschedulable | pending | unknown
    since: dt.datetime | None = None

    @property
    def needed(self) -> int:
        """Return how many bound members make the group placed (minCount for gangs, every member otherwise)."""
        if self.policy == "gang":
            return self.min_count or self.members
        return self.members

    def to_dict(self) -> dict:
        """Return the JSON form stored on the TrainJob row."""
        return {"name": self.name, "policy": self.policy, "minCount": self.min_count, "bound": self.bound,
                "members": self.members, "running": self.running, "condition": self.condition,
                "reason": self.reason, "message": self.message, "topologyKey": self.topology_key,
                "template": self.template}


@dataclass(frozen=True)
class Admission:
    """The state of a TrainJob with its one leading reason (a code) and a human message; ``gate`` names the gate
    that decided it (kueue, startup, objects, gang, running, …)."""

    state: str
    reason: str
    message: str
    since: dt.datetime | None = None
    level: str = st.LEVEL_UNKNOWN
    pod_groups: tuple[PodGroupStatus, ...] = ()
    signals: dict = field(default_factory=dict)
    gate: str = ""


def _first_scheduled_condition(conditions: dict[str, sig.Condition]) -> sig.Condition | None:
    for kind in sig.SCHEDULED_CONDITIONS:
        if kind in conditions:
            return conditions[kind]
    return None


def pod_group_status(pod_group: dict, members: Sequence[dict]) -> PodGroupStatus:
    """Return the status of one PodGroup given its member pods (non-terminal members count as bound when they
    have a node; terminal members that ran count too, so a finishing gang does not look unscheduled)."""
    return group_status(pod_group, [sig.pod_row(p) for p in members])


def group_status(pod_group: dict, rows: Sequence[sig.PodRow]) -> PodGroupStatus:
    """Return :func:`pod_group_status` from the members' PodRows."""
    live, bound, running = 0, 0, 0
    for row in rows:
        if row.phase == "Failed":
            continue
        live += 1
        bound += bool(row.node)
        running += row.phase in ("Running", "Succeeded")
    return counted_group_status(pod_group, live, bound, running, lambda: [r.pod for r in rows])


def counted_group_status(pod_group: dict, live: int, bound: int, running: int,
                         members: Callable[[], Sequence[object]],
                         conditions: dict[str, sig.Condition] | None = None,
                         template: str | None = None) -> PodGroupStatus:
    """Return :func:`pod_group_status` from the counts of the group's live (not Failed) members, bound ones and
    running ones; ``members()`` returns the member pods, read only for an unschedulable group whose condition has
    no message (the pods' own PodScheduled message stands in); ``conditions`` are the PodGroup's conditions when
    the caller has read them already, ``template`` its PodGroup template name likewise."""
    policy, min_count = sig.pod_group_policy(pod_group)
    if conditions is None:
        conditions = sig.conditions_of(pod_group)
    scheduled = _first_scheduled_condition(conditions)
    if template is None:
        _, template = sig.pod_group_workload(pod_group)
    condition_text = f"{scheduled.type}={'True' if scheduled.true else 'False' if scheduled.false else 'Unknown'}" \
        if scheduled else ""
    reason = scheduled.reason if scheduled else ""
    message = scheduled.message if scheduled else ""
    need = (min_count or live) if policy == "gang" else live
    unknown_types = sorted(set(conditions) - sig.KNOWN_PODGROUP_CONDITIONS)
    if policy == "unknown":
        verdict, reason = "unknown", "UnknownPolicy"
        message = "the PodGroup's schedulingPolicy is neither gang nor basic"
    elif need and bound >= need:
        verdict = "placed"
    elif scheduled is not None and scheduled.false:
        verdict = "unschedulable"
        reason = reason or "Unschedulable"
        if not message:
            message = next((m for m in map(sig.pod_unschedulable_message, members()) if m), "")
    elif scheduled is None and unknown_types:
        verdict, reason = "unknown", "UnknownCondition"
        condition_text = ", ".join(unknown_types)
        message = f"only unrecognised conditions ({', '.join(unknown_types)}): cannot tell whether it is scheduled"
    else:
        verdict = "pending"
    return PodGroupStatus(sig.name_of(pod_group), policy, min_count, live, bound, running, condition_text,
                          reason, message, sig.pod_group_topology_key(pod_group), template, verdict,
                          scheduled.last_transition if scheduled else None)


def scheduling_level(trainjob: dict, pod_groups: Sequence[dict], pods: Sequence[dict],
                     workloads: Sequence[dict] = ()) -> str:
    """Return the gang level the PodGroups were built at: trainjob (one group for the whole job), replicatedjob
    (groups of ReplicatedJobs), job (one group per Job replica), none (pods in no group), or unknown."""
    return level_of_scan(pod_groups, scan_pods(pods), workloads)


@dataclass
class PodScan:
    """The pods of a job read in one pass: their rows, grouped by PodGroup, with what the level is judged on."""

    rows: list[sig.PodRow]
    by_group: dict[str, list[sig.PodRow]]
    pairs: dict[str, set[tuple[str, str]]]  # PodGroup → its members' (ReplicatedJob, Job index)
    rjobs: set[str]


def scan_pods(pods: Sequence) -> PodScan:
    """Return the PodScan of ``pods`` (one read per pod: the gates run for every job on every refresh)."""
    rows: list[sig.PodRow] = []
    by_group: dict[str, list[sig.PodRow]] = {}
    pairs: dict[str, set[tuple[str, str]]] = {}
    rjobs: set[str] = set()
    row_of = sig.pod_row
    for pod in pods:
        row = row_of(pod)
        rows.append(row)
        group, rjob = row[0], row[1]
        bucket = by_group.get(group)
        if bucket is None:
            by_group[group] = [row]
            if group:
                pairs[group] = {(rjob, row[2])}
        else:
            bucket.append(row)
            if group:
                pairs[group].add((rjob, row[2]))
        if rjob:
            rjobs.add(rjob)
    return PodScan(rows, by_group, pairs, rjobs)


def level_of_rows(pod_groups: Sequence[dict], rows: Sequence[sig.PodRow], workloads: Sequence[dict] = ()) -> str:
    """Return :func:`scheduling_level` from the pods' PodRows."""
    return level_of_scan(pod_groups, scan_pods([r.pod for r in rows]), workloads)


def level_of_scan(pod_groups: Sequence[dict], scan: PodScan, workloads: Sequence[dict] = ()) -> str:
    """Return :func:`scheduling_level` from a PodScan."""
    return _level(pod_groups, bool(scan.rows), scan.pairs, scan.rjobs, workloads)


def _level(pod_groups: Sequence[dict], has_pods: bool, members: dict[str, set[tuple[str, str]]],
           all_rjobs: set[str], workloads: Sequence[dict],
           refs: Sequence[tuple[str, str]] | None = None) -> str:
    """Return :func:`scheduling_level` from whether there are pods, each PodGroup's members' (ReplicatedJob, Job
    index) pairs and the ReplicatedJobs of every pod; ``refs`` are the PodGroups' (Workload, template) when the
    caller has read them already."""
    if not pod_groups:
        if has_pods and not members and not workloads:
            return st.LEVEL_NONE
        return st.LEVEL_UNKNOWN
    levels = set()
    for group, (_, template) in zip(pod_groups, refs if refs is not None else map(sig.pod_group_workload, pod_groups),
                                    strict=True):
        jobs = members.get(sig.name_of(group), set())
        rjobs = {rjob for rjob, _ in jobs}
        match = _JOB_TEMPLATE.match(template or "")
        if match and len(jobs) <= 1 and (not jobs or (match["rjob"], match["index"]) in jobs):
            levels.add(st.LEVEL_JOB)
        elif len(pod_groups) == 1 and (not all_rjobs or rjobs == all_rjobs):
            levels.add(st.LEVEL_TRAINJOB)
        else:
            levels.add(st.LEVEL_REPLICATEDJOB)
    if levels == {st.LEVEL_JOB}:
        return st.LEVEL_JOB
    if st.LEVEL_TRAINJOB in levels:
        return st.LEVEL_TRAINJOB
    return st.LEVEL_REPLICATEDJOB


# A pod as the gates count it: (PodGroup, ReplicatedJob, Job index, phase, bound to a node).
TallyKey = tuple[str, str, str, str, bool]


@dataclass
class PodTally:
    """The pods of a job read in one pass and counted by what the gates ask of them: how many pods share each
    (PodGroup, ReplicatedJob, Job index, phase, bound). A job's pods fall into a handful of such keys, so every
    later question (a group's bound/running count, the trainer's, the gang level) reads the few counts instead of
    every pod again."""

    pods: Sequence[dict]
    counts: dict[TallyKey, int]

    def group_counts(self) -> dict[str, tuple[int, int, int]]:
        """Return PodGroup name → (live, bound, running) of its members (Failed members left out)."""
        result: dict[str, tuple[int, int, int]] = {}
        for (group, _, _, phase, bound), count in self.counts.items():
            if phase == "Failed":
                continue
            live, on_node, running = result.get(group, (0, 0, 0))
            result[group] = (live + count, on_node + (count if bound else 0),
                             running + (count if phase in ("Running", "Succeeded") else 0))
        return result

    def members_of(self, group: str) -> list[dict]:
        """Return the pods whose PodGroup is ``group`` (Failed ones too), in the order given, as dicts."""
        return [p for p in map(as_pod_object, self.pods) if sig.pod_row(p).group == group]

    def pairs(self) -> dict[str, set[tuple[str, str]]]:
        """Return PodGroup → its members' (ReplicatedJob, Job index) pairs (pods in no group left out)."""
        pairs: dict[str, set[tuple[str, str]]] = {}
        for group, rjob, index, _, _ in self.counts:
            if group:
                pairs.setdefault(group, set()).add((rjob, index))
        return pairs

    def rjobs(self) -> set[str]:
        """Return the ReplicatedJobs named by any pod."""
        return {key[1] for key in self.counts if key[1]}


def tally_pods(pods: Sequence) -> PodTally:
    """Return the PodTally of ``pods`` (dicts, or the tracker's pod records with ``group``, ``rjob``,
    ``job_index``, ``phase`` and ``node`` attributes): each pod read once, with the values
    :func:`signals.pod_row` reads."""
    if pods and not isinstance(pods[0], dict):
        counts = _tally_records(pods)
        if counts is not None:
            return PodTally(pods, counts)
        pods = list(map(as_pod_object, pods))
    counts = _tally_uniform(pods)
    if counts is None:
        counts = _tally_each(pods)
    return PodTally(pods, counts)


_RECORD_COLUMNS = tuple(attrgetter(name) for name in ("group", "rjob", "job_index", "phase", "node"))


def _tally_records(records: Sequence) -> dict[TallyKey, int] | None:
    """Return the counts of the tracker's pod records, read column by column in C (the records hold clean strings:
    the tracker parsed each pod once when it arrived, so a refresh reads five attributes per pod and nothing
    else). Returns None when a record is not of that shape or names its PodGroup only through a 1.35
    ``workloadRef`` (the dict path reads those)."""
    group, rjob, index, phase, node = _RECORD_COLUMNS
    try:
        counts: dict[TallyKey, int] = Counter(zip(map(group, records), map(rjob, records), map(index, records),
                                                  map(phase, records), map(bool, map(node, records)), strict=True))
    except (AttributeError, TypeError):
        return None
    for key_group, _, _, key_phase, _ in counts:
        if not (key_group and key_phase):
            return None
    return counts


_SPEC, _METADATA, _LABELS, _STATUS, _PHASE = (itemgetter(k) for k in ("spec", "metadata", "labels", "status", "phase"))
_GROUP, _GROUP_NAME = itemgetter("schedulingGroup"), itemgetter("podGroupName")
_STR_OR_NONE = {str, type(None)}


def _tally_uniform(pods: Sequence) -> dict[TallyKey, int] | None:
    """Return the counts of ``pods`` when every pod has the shape a cluster gives (in a PodGroup, a phase, string
    labels and node), read column by column in C (``map`` over item getters, ``Counter`` over the rows): a Python
    step per pod is most of the gates' cost at 50k pods. Returns None when any pod differs, for
    :func:`_tally_each` to read pod by pod."""
    get = dict.get
    try:
        specs = list(map(_SPEC, pods))
        labels = list(map(_LABELS, map(_METADATA, pods)))
        nodes = list(map(get, specs, repeat("nodeName")))  # None while unbound: pod_row reads it as ""
        if not set(map(type, nodes)) <= _STR_OR_NONE:
            return None
        # The other columns stream straight into the Counter, row by row.
        counts: dict[TallyKey, int] = Counter(zip(
            map(_GROUP_NAME, map(_GROUP, specs)), map(get, labels, repeat(sig.REPLICATED_JOB_LABEL)),
            map(get, labels, repeat(sig.JOB_INDEX_LABEL)), map(_PHASE, map(_STATUS, pods)), map(bool, nodes),
            strict=True))
    except (KeyError, TypeError, AttributeError):  # TypeError: a value that cannot be hashed
        return None
    # The values are checked on the few distinct keys, not on every pod.
    for group, rjob, index, phase, _ in counts:
        if not (group and phase and type(group) is str and type(rjob) is str and type(index) is str
                and type(phase) is str):
            return None
    return counts


def _tally_each(pods: Sequence) -> dict[TallyKey, int]:
    """Return the counts of ``pods`` read pod by pod with :func:`signals.pod_row` (any shape, never raises)."""
    counts: dict[TallyKey, int] = {}
    for pod in pods:
        group, rjob, index, phase, node, _ = sig.pod_row(pod)
        key = (group, rjob, index, phase, node != "")
        counts[key] = counts.get(key, 0) + 1
    return counts


def as_pod_object(pod: object) -> object:
    """Return ``pod`` as the dict :mod:`signals` reads: a dict as it is, a tracker's pod record inflated."""
    return pod if isinstance(pod, dict) else pod.as_object()


def plural(count: int, word: str) -> str:
    """Return "1 PodGroup" / "2,048 PodGroups"."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class GateFacts:
    """The part of :class:`signals.TrainJobFacts` the gates read, with the same values: the full facts also read
    the creator, the requests per node and the timestamps, which no gate needs (a third of a running job's cost)."""

    uid: str
    name: str
    runtime_kind: str
    runtime_name: str
    num_nodes: int
    suspend: bool
    queue_name: str


def gate_facts(trainjob: object) -> GateFacts:
    """Return the GateFacts of a TrainJob (the fields as :func:`signals.trainjob_facts` reads them)."""
    meta = sig.metadata(trainjob)
    tj_spec = sig.spec(trainjob)
    runtime_ref = sig.as_dict(tj_spec.get("runtimeRef"))
    raw_nodes = sig.as_dict(tj_spec.get("trainer")).get("numNodes")
    queue = sig.label_of(trainjob, sig.QUEUE_LABEL)
    return GateFacts(
        uid=sig.as_str(meta.get("uid")),
        name=sig.as_str(meta.get("name")),
        runtime_kind=sig.as_str(runtime_ref.get("kind")) or "ClusterTrainingRuntime",
        runtime_name=sig.as_str(runtime_ref.get("name")),
        num_nodes=sig.as_int(raw_nodes, 1) if raw_nodes is not None else 1,
        suspend=tj_spec.get("suspend") is True,
        queue_name=queue,
    )


@dataclass
class JobView:
    """A TrainJob's linked objects, read once for every gate. Derived facts are computed on first use, so a job
    decided by an early gate (finished, held by Kueue) never pays for the startup plan or the PodGroup summaries."""

    trainjob: dict
    pod_groups: list[dict]
    pods: list[dict]
    kueue_workload: dict | None
    workloads: list[dict]
    missing: list[str]
    problems: list[tuple[str, str]]
    events: list[dict]
    jobsets: list[dict]
    gate: str = ""

    @cached_property
    def facts(self) -> GateFacts:
        """Return the TrainJob's own facts the gates read (name, uid, suspend, queue label, size, runtime)."""
        return gate_facts(self.trainjob)

    @cached_property
    def conditions(self) -> dict[str, sig.Condition]:
        """Return the TrainJob's conditions by type."""
        return sig.conditions_of(self.trainjob)

    @cached_property
    def kueue(self) -> dict[str, sig.Condition]:
        """Return the Kueue Workload's conditions by type ({} when Kueue does not manage the job)."""
        return sig.conditions_of(self.kueue_workload) if self.kueue_workload else {}

    @cached_property
    def tally(self) -> PodTally:
        """Return the pods read once and counted by (PodGroup, ReplicatedJob, Job index, phase, bound)."""
        return tally_pods(self.pods)

    @cached_property
    def groups(self) -> tuple[PodGroupStatus, ...]:
        """Return the PodGroups' statuses, in the order the PodGroups were given."""
        if not self.pod_groups:
            return ()
        tally = self.tally
        counts = tally.group_counts()
        result = []
        for group, conditions, (_, template) in zip(self.pod_groups, self.group_conditions, self.group_refs,
                                                    strict=True):
            name = sig.name_of(group)
            live, bound, running = counts.get(name, (0, 0, 0))
            result.append(counted_group_status(group, live, bound, running,
                                               lambda name=name: tally.members_of(name), conditions, template))
        return tuple(result)

    @cached_property
    def group_refs(self) -> tuple[tuple[str, str], ...]:
        """Return each PodGroup's (Workload name, template name), in the order the PodGroups were given."""
        return tuple(map(sig.pod_group_workload, self.pod_groups))

    @cached_property
    def group_conditions(self) -> tuple[dict[str, sig.Condition], ...]:
        """Return each PodGroup's conditions by type, in the order the PodGroups were given (read once: the
        statuses, the disruption gate and the preemption note all ask)."""
        return tuple(map(sig.conditions_of, self.pod_groups))

    @cached_property
    def level(self) -> str:
        """Return the gang level the PodGroups were built at."""
        tally = self.tally
        return _level(self.pod_groups, bool(self.pods), tally.pairs(), tally.rjobs(), self.workloads, self.group_refs)

    @cached_property
    def pod_objects(self) -> list[dict]:
        """Return the pods as dicts (the tracker's pod records inflated: only the rare gates that read single pods
        ask, e.g. jobs without PodGroups)."""
        return list(map(as_pod_object, self.pods))

    @cached_property
    def live_pods(self) -> list[dict]:
        """Return the pods that are not Failed."""
        return [p for p in self.pod_objects if sig.pod_phase(p) != "Failed"]

    @cached_property
    def legacy(self) -> list[dict]:
        """Return the 1.35 (v1alpha1) Workloads: no PodGroup objects, admission read from pods."""
        return [w for w in self.workloads if sig.as_str(w.get("apiVersion")).endswith("/v1alpha1")]

    @cached_property
    def wait(self) -> startup.StartupWait | None:
        """Return the ReplicatedJob waiting for its dependsOn targets, or None."""
        if not any(step.depends_on for step in startup.plan_of(self.jobsets)):
            return None  # nothing can wait: the pods are not read (most jobs)
        return startup.startup_wait(self.trainjob, self.jobsets, self.pod_objects)

    @cached_property
    def trainer(self) -> tuple[int, int, int]:
        """Return (needed, bound, running) of the trainer's pods (every ReplicatedJob but the initializers)."""
        return startup.trainer_of_counts(startup.plan_of(self.jobsets), self.tally.counts, self.facts.num_nodes)

    @cached_property
    def active_groups(self) -> list[PodGroupStatus]:
        """Return the groups waiting to be placed or placed: a group with no members while its ReplicatedJob waits
        for its startup order has nothing of its own for the scheduler to place yet."""
        wait = self.wait
        return [g for g in self.groups if g.members or wait is None]

    @cached_property
    def preemption_note(self) -> str:
        """Return "; preemption requested (PodGroup …)" for a disrupted gang whose members are still bound."""
        for group, status, conditions in zip(self.pod_groups, self.groups, self.group_conditions, strict=True):
            disruption = conditions.get(sig.DISRUPTION_CONDITION)
            if disruption is not None and disruption.true and status.verdict == "placed":
                return f"; preemption requested (PodGroup {sig.name_of(group)}" + (
                    f": {disruption.message})" if disruption.message else ")")
        return ""

    def result(self, state: str, reason: str, message: str, since: dt.datetime | None = None) -> Admission:
        """Return the Admission ``state``/``reason``/``message`` with the job's level and PodGroups."""
        return Admission(state, reason, message, since, self.level, self.groups, gate=self.gate)


Gate = Callable[[JobView], Admission | None]
