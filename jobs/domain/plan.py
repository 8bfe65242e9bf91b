"""The startup plan: which ReplicatedJobs of a TrainJob are the trainer, and which wait for others through `dependsOn`.

JobSet creates a ReplicatedJob's Jobs only once every `dependsOn` target reached its status (`Complete`: all its Jobs
succeeded; `Ready`: all its Jobs ready or succeeded). The plan is read from the TrainJob's JobSet (its
`replicatedJobs`, slimmed by the ownership index), progress from the TrainJob's `status.jobsStatus` (the Trainer
copies the JobSet's `replicatedJobsStatus` there) or the JobSet's own status, and from the pods that exist.

Pure: no framework.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import signals as sig

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
INITIALIZER_STEPS = frozenset({"dataset-initializer", "model-initializer"})


@dataclass(frozen=True)
class Step:
    """One ReplicatedJob of the JobSet: `replicas` Jobs of `pods_per_job` pods, `depends_on` (name, status) pairs."""

    name: str
    replicas: int
    pods_per_job: int
    depends_on: tuple[tuple[str, str], ...]
    initializer: bool

    @property
    def pods(self) -> int:
        """Return how many pods the ReplicatedJob runs in all."""
        return self.replicas * self.pods_per_job


@dataclass(frozen=True)
class StartupWait:
    """A ReplicatedJob not created yet because its `dependsOn` targets have not reached their status."""

    waiting: str
    targets: tuple[tuple[str, str], ...]
    done: int

    @property
    def message(self) -> str:
        """Return e.g. "node waits for dataset-initializer and model-initializer to complete; 1 of 2 done"."""
        complete = [name for name, status in self.targets if status != "Ready"]
        ready = [name for name, status in self.targets if status == "Ready"]
        parts = []
        if complete:
            parts.append(f"{_and(complete)} to complete")
        if ready:
            parts.append(f"{_and(ready)} to be ready")
        return f"{self.waiting} waits for {' and '.join(parts)}; {self.done} of {len(self.targets)} done"


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def is_initializer(name: str, ancestor: str = "") -> bool:
    """Return True for a ReplicatedJob that prepares the trainer (dataset/model initializer) rather than trains."""
    return ancestor in INITIALIZER_STEPS or (not ancestor and name.endswith("initializer"))


def slim_jobset_spec(jobset: dict) -> dict:
    """Return the part of a JobSet's spec the startup plan reads: each ReplicatedJob's name, replicas, parallelism,
    dependsOn and ancestor label (a few hundred bytes, whatever the pod templates hold)."""
    result = []
    for raw in sig.as_list(sig.spec(jobset).get("replicatedJobs")):
        rjob = sig.as_dict(raw)
        template = sig.as_dict(rjob.get("template"))
        job_spec = sig.as_dict(template.get("spec"))
        entry = {"name": sig.as_str(rjob.get("name")), "replicas": rjob.get("replicas", 1),
                 "parallelism": job_spec.get("parallelism", 1),
                 "ancestor": sig.labels_of(template).get(ANCESTOR_LABEL, "")}
        depends = [{"name": sig.as_str(sig.as_dict(d).get("name")), "status": sig.as_str(sig.as_dict(d).get("status"))}
                   for d in sig.as_list(rjob.get("dependsOn"))]
        if depends:
            entry["dependsOn"] = depends
        result.append(entry)
    return {"replicatedJobs": result}


def plan_of(jobsets: Iterable[dict]) -> tuple[Step, ...]:
    """Return the steps of the first JobSet that lists ReplicatedJobs (full or slimmed form), in spec order; () when
    none is known."""
    for jobset in jobsets:
        steps = []
        for raw in sig.as_list(sig.spec(jobset).get("replicatedJobs")):
            rjob = sig.as_dict(raw)
            name = sig.as_str(rjob.get("name"))
            if not name:
                continue
            template = sig.as_dict(rjob.get("template"))
            ancestor = sig.as_str(rjob.get("ancestor")) or sig.labels_of(template).get(ANCESTOR_LABEL, "")
            parallelism = rjob.get("parallelism", sig.as_dict(template.get("spec")).get("parallelism", 1))
            depends = tuple((sig.as_str(sig.as_dict(d).get("name")), sig.as_str(sig.as_dict(d).get("status")))
                            for d in sig.as_list(rjob.get("dependsOn")) if sig.as_dict(d).get("name"))
            steps.append(Step(name, max(sig.as_int(rjob.get("replicas"), 1), 0),
                              max(sig.as_int(parallelism, 1), 1), depends, is_initializer(name, ancestor)))
        if steps:
            return tuple(steps)
    return ()


def _progress(trainjob: dict, jobsets: Iterable[dict]) -> dict[str, dict]:
    """Return {ReplicatedJob: {ready, succeeded, …}} from the TrainJob's jobsStatus, else the JobSet's status."""
    found = {entry["name"]: entry for entry in sig.jobs_status(trainjob) if entry["name"]}
    if found:
        return found
    for jobset in jobsets:
        for raw in sig.as_list(sig.status(jobset).get("replicatedJobsStatus")):
            entry = sig.as_dict(raw)
            name = sig.as_str(entry.get("name"))
            if name:
                found[name] = {key: sig.as_int(entry.get(key)) for key in ("ready", "active", "succeeded", "failed")}
    return found


def pods_of_step(pods: Iterable, name: str) -> list:
    """Return the live (not Failed) pods of ReplicatedJob ``name``."""
    return [p for p in pods if sig.label_of(p, sig.REPLICATED_JOB_LABEL) == name and sig.pod_phase(p) != "Failed"]


def _reached(step: Step, status: str, progress: dict[str, dict], pods: Sequence) -> bool:
    """Return whether ``step`` reached ``status`` (Complete: every Job succeeded; Ready: every Job ready or done)."""
    entry = progress.get(step.name)
    if entry is not None:
        done = sig.as_int(entry.get("succeeded"))
        if status == "Ready":
            done += sig.as_int(entry.get("ready"))
        return done >= step.replicas
    own = pods_of_step(pods, step.name)
    if len(own) < step.pods:
        return False
    if status == "Ready":
        return all(sig.pod_phase(p) in ("Running", "Succeeded") for p in own)
    return all(sig.pod_phase(p) == "Succeeded" for p in own)


def startup_wait(trainjob: dict, jobsets: Sequence[dict], pods: Sequence) -> StartupWait | None:
    """Return the first ReplicatedJob (in spec order) that has no pods yet because a `dependsOn` target has not
    reached its status, or None (no plan known, nothing waits, or every target is done and JobSet is about to
    create it)."""
    plan = plan_of(jobsets)
    by_name = {step.name: step for step in plan}
    progress = _progress(trainjob, jobsets)
    for step in plan:
        if not step.depends_on or pods_of_step(pods, step.name):
            continue
        done = sum(1 for target, status in step.depends_on
                   if target in by_name and _reached(by_name[target], status, progress, pods))
        if done < len(step.depends_on):
            return StartupWait(step.name, step.depends_on, done)
    return None


def trainer_pods(jobsets: Sequence[dict], pods: Sequence, num_nodes: int) -> tuple[int, int, int]:
    """Return (needed, bound, running) for the trainer's pods — every ReplicatedJob but the initializers. With a
    known plan `needed` is its pod count; otherwise the trainer pods that exist, or ``num_nodes`` while none does."""
    return trainer_of_rows(plan_of(jobsets), [sig.pod_row(p) for p in pods], num_nodes)


def trainer_of_rows(plan: Sequence[Step], rows: Sequence[sig.PodRow], num_nodes: int) -> tuple[int, int, int]:
    """Return :func:`trainer_pods` from the plan and the pods' PodRows."""
    names = {step.name for step in plan if not step.initializer}
    needed = sum(step.pods for step in plan if not step.initializer)
    trainer: dict[str, bool] = {}  # ReplicatedJob → is it the trainer's (decided once per name)
    live = bound = running = 0
    for row in rows:  # one pass: filter and count
        rjob = row[1]
        mine = trainer.get(rjob)
        if mine is None:
            mine = trainer[rjob] = rjob in names if plan else not is_initializer(rjob)
        if not mine or row[3] == "Failed":
            continue
        live += 1
        bound += bool(row[4])
        running += row[3] in ("Running", "Succeeded")
    if not plan:
        needed = live or max(num_nodes, 1)
    return needed, bound, running


def trainer_of_counts(plan: Sequence[Step], counts: dict[tuple[str, str, str, str, bool], int], num_nodes: int
                      ) -> tuple[int, int, int]:
    """Return :func:`trainer_pods` from the plan and the pods counted by (PodGroup, ReplicatedJob, Job index,
    phase, bound) (``gates.PodTally.counts``)."""
    names = {step.name for step in plan if not step.initializer}
    needed = sum(step.pods for step in plan if not step.initializer)
    live = bound = running = 0
    for (_, rjob, _, phase, on_node), count in counts.items():
        mine = rjob in names if plan else not is_initializer(rjob)
        if not mine or phase == "Failed":
            continue
        live += count
        bound += count if on_node else 0
        running += count if phase in ("Running", "Succeeded") else 0
    if not plan:
        needed = live or max(num_nodes, 1)
    return needed, bound, running
