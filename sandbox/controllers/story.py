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
    return {"apiVersion": TRAINER_GROUP_VERSION, "kind": "TrainJob",
            "metadata": {"name": step.name, "namespace": step.namespace,
                         "labels": {GENERATED_LABEL: "true", STORY_LABEL: "true"}, "annotations": annotations},
            "spec": spec}
