"""The demo storyline: a few minutes of scripted TrainJobs in two team namespaces that show every state.

On the demo topology (zone-a: 32 usable 8-GPU nodes, zone-b: 28) the steps below play out as:
- `a-pretrain` (team-a, 24-node zone gang) and `b-sweep` (team-b, 24 nodes) fit, one zone each, and run;
  `b-finetune` (4-node rack gang) fits a rack; all three complete.
- `b-too-big` (40-node zone gang) can never fit a zone: it stays `Unschedulable` ("no domain fits 40 pods (best
  zone "zone-a" fits …)") until someone deletes it.
- `a-waits` (20-node zone gang) waits for capacity (`Unschedulable`) and is admitted when `a-pretrain` finishes.
- `a-queued` is created suspended (no Workload, no PodGroups, no pods) and resumed later; `b-parked` stays suspended.
- `b-flaky` (torch-distributed, no gang) fails part-way.
- `a-urgent` (16-node zone gang on `torch-gang-zone-urgent`, PriorityClass `demo-urgent`) arrives when both zones are
  busy and preempts a whole lower-priority gang (`DisruptionTarget` / `PreemptionByScheduler`); the victim waits and
  runs again later.
With the simulated Kueue on (SANDBOX_KUEUE=1, as `make run` starts it: ClusterQueues `cq-team-a` and `cq-team-b`
of 16 GPUs each in cohort `demo`, reclaimWithinCohort Any) the Kueue steps play too, all through LocalQueue
`user-queue` with 8-GPU pods:
- `a-q-prep` and `a-q-train` (1 node each) fill team-a's 16 GPUs; `a-q-sweep` (2 nodes) borrows team-b's idle 16;
- `a-q-tune` and `a-q-eval` wait for quota in team-a's queue (positions 1 and 2);
- `b-q-train` (team-b, 1 node) reclaims team-b's lent quota: one of team-a's admitted jobs is preempted
  (`InCohortReclamation`) and queues again until team-a's own jobs finish.
Times are seconds after the generator starts, divided by `speed` (so are the run times).
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.controllers.common import (
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    GENERATED_LABEL,
    TRAINER_GROUP_VERSION,
)

TEAMS = {"team-a": ("alice", "amir"), "team-b": ("bea", "bruno")}
URGENT_CLASS = "demo-urgent"
PRIORITY_CLASSES = (
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": URGENT_CLASS},
     "value": 1000, "preemptionPolicy": "PreemptLowerPriority",
     "description": "Demo: deadline-bound jobs that may preempt other teams' gangs"},
)
STORY_LABEL = "sandbox.trainer-portal.io/story"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class Step:
    """One scripted action: submit a TrainJob, or resume a suspended one."""

    at: float
    namespace: str
    name: str
    user: str
    runtime: str = ""
    num_nodes: int = 1
    gpus: int | None = None
    duration: float | None = None
    fail_after: float | None = None
    suspend: bool = False
    resume: bool = False
    queue: str = ""  # a Kueue LocalQueue: the step plays only with Kueue on, and the job carries the queue label


STORY = (
    Step(0, "team-a", "a-pretrain", "alice", "torch-gang-zone", 24, duration=90),
    Step(1, "team-b", "b-too-big", "bea", "torch-gang-zone", 40),
    Step(2, "team-b", "b-sweep", "bruno", "torch-gang-zone", 24, duration=60),
    Step(5, "team-b", "b-finetune", "bea", "torch-gang-rack", 4, duration=60),
    Step(10, "team-a", "a-waits", "amir", "torch-gang-zone", 20, duration=45),
    Step(15, "team-a", "a-queued", "alice", "torch-gang-rack", 2, duration=30, suspend=True),
    Step(16, "team-b", "b-parked", "bruno", "torch-gang-rack", 2, duration=30, suspend=True),
    Step(20, "team-b", "b-flaky", "bea", "torch-distributed", 2, gpus=4, duration=60, fail_after=15),
    Step(40, "team-a", "a-urgent", "amir", "torch-gang-zone-urgent", 16, duration=45),
    Step(60, "team-a", "a-queued", "alice", resume=True),
    # Kueue (only with the simulated Kueue on): queueing, borrowing, and a reclaim that preempts the borrower.
    Step(3, "team-a", "a-q-prep", "alice", "torch-distributed", 1, gpus=8, duration=150, queue="user-queue"),
    Step(4, "team-a", "a-q-train", "amir", "torch-distributed", 1, gpus=8, duration=180, queue="user-queue"),
    Step(6, "team-a", "a-q-sweep", "alice", "torch-distributed", 2, gpus=8, duration=120, queue="user-queue"),
    Step(8, "team-a", "a-q-tune", "amir", "torch-distributed", 1, gpus=8, duration=60, queue="user-queue"),
    Step(9, "team-a", "a-q-eval", "alice", "torch-distributed", 1, gpus=8, duration=60, queue="user-queue"),
    Step(45, "team-b", "b-q-train", "bea", "torch-distributed", 1, gpus=8, duration=90, queue="user-queue"),
)


def step_trainjob(step: Step, speed: float = 1.0) -> dict:
    """Return the TrainJob a submit step creates (run times divided by `speed`)."""
    annotations = {}
    if step.duration is not None:
        annotations[DURATION_ANNOTATION] = f"{step.duration / speed:g}"
    if step.fail_after is not None:
        annotations[FAIL_AFTER_ANNOTATION] = f"{step.fail_after / speed:g}"
    trainer: dict = {"numNodes": step.num_nodes}
    if step.gpus is not None:
        trainer["resourcesPerNode"] = {"requests": {"nvidia.com/gpu": step.gpus},
                                       "limits": {"nvidia.com/gpu": step.gpus}}
    spec: dict = {"runtimeRef": {"name": step.runtime}, "trainer": trainer}
    if step.suspend:
        spec["suspend"] = True
    labels = {GENERATED_LABEL: "true", STORY_LABEL: "true"}
    if step.queue:
        labels[QUEUE_LABEL] = step.queue
    return {"apiVersion": TRAINER_GROUP_VERSION, "kind": "TrainJob",
            "metadata": {"name": step.name, "namespace": step.namespace,
                         "labels": labels, "annotations": annotations},
            "spec": spec}
