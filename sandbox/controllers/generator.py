"""The demo workload generator: keeps a sandbox cluster busy so the dashboard shows the whole lifecycle.

On start it creates the namespaces `team-a` and `team-b`, the PriorityClass `demo-urgent`, and the demo
ClusterTrainingRuntimes of `sandbox/demo_runtimes/` that do not exist yet (the three upstream examples plus one
runtime with `spec.scheduling` per level, and an urgent-priority zone gang). It then plays the scripted storyline of
`story.py` (every state within a few minutes) and, every `60 / rate` seconds, submits a TrainJob of a random size
against a random demo runtime, with a run time annotation (and, for a few, a failure), so jobs queue (Unschedulable
gangs), get admitted, run and complete. numNodes of random jobs is halved until the job would fit the empty
cluster, so no random job waits forever. It never has more than `max_active` unfinished generated jobs (all
namespaces together) and deletes the oldest finished ones of a namespace beyond `keep_finished`.

Every TrainJob is created with `fieldManager=<user>` (alice, amir in team-a; bea, bruno in team-b), so its creator is
the manager of its first `metadata.managedFields` entry, as on a real cluster where the client names itself.

Configuration (environment, read by `GeneratorConfig.from_env`): SANDBOX_GENERATOR_RATE (jobs per minute,
default 10; 0 = storyline only), SANDBOX_GENERATOR_MAX_ACTIVE (default 16), SANDBOX_GENERATOR_SEED (default 7),
SANDBOX_GENERATOR_NAMESPACE (comma-separated, default "team-a,team-b"), SANDBOX_GENERATOR_MIN_SECONDS /
_MAX_SECONDS (run time range, default 20-180), SANDBOX_GENERATOR_FAILURE_RATIO (default 0.08),
SANDBOX_GENERATOR_STORY (default 1; 0 = no storyline), SANDBOX_GENERATOR_STORY_SPEED (default 1; 10 plays it ten
times faster).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from sandbox.controllers.client import MERGE_PATCH, ApiError, Client
from sandbox.controllers.common import (
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    GENERATED_LABEL,
    TRAINER_GROUP_VERSION,
    condition_is_true,
    meta,
    trainjob_path,
)
from sandbox.controllers.expansion import PlanError, plan_for
from sandbox.controllers.fit import try_place
from sandbox.controllers.informer import Informer
from sandbox.controllers.podspec import build_pod
from sandbox.controllers.story import PRIORITY_CLASSES, STORY, TEAMS, Step, step_trainjob

log = logging.getLogger("sandbox.controllers.generator")

DEMO_RUNTIMES_DIR = Path(__file__).resolve().parent.parent / "demo_runtimes"
RUNTIMES_PATH = f"/apis/{TRAINER_GROUP_VERSION}/clustertrainingruntimes"
STORY_ONLY_LABEL = "sandbox.trainer-portal.io/story-only"


def demo_runtimes() -> list[dict]:
    """Return the ClusterTrainingRuntime objects of sandbox/demo_runtimes/*.yaml, sorted by file name."""
    return [yaml.safe_load(path.read_text()) for path in sorted(DEMO_RUNTIMES_DIR.glob("*.yaml"))]


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


@dataclass(frozen=True)
class GeneratorConfig:
    """Generator knobs; `rate` is TrainJobs per minute."""

    rate: float = 10.0
    max_active: int = 16
    keep_finished: int = 20
    seed: int = 7
    namespace: str = "team-a,team-b"
    min_seconds: int = 20
    max_seconds: int = 180
    failure_ratio: float = 0.08
    story: bool = True
    story_speed: float = 1.0
    kueue: bool = False  # play the storyline's Kueue steps (the simulated Kueue runs)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Return the namespaces random jobs go to, in turn."""
        return tuple(n.strip() for n in self.namespace.split(",") if n.strip()) or ("default",)

    @classmethod
    def from_env(cls) -> GeneratorConfig:
        """Return the configuration from SANDBOX_GENERATOR_* variables. Raises ValueError on a non-number."""
        return cls(
            rate=_env_number("SANDBOX_GENERATOR_RATE", cls.rate),
            max_active=int(_env_number("SANDBOX_GENERATOR_MAX_ACTIVE", cls.max_active)),
            seed=int(_env_number("SANDBOX_GENERATOR_SEED", cls.seed)),
            min_seconds=int(_env_number("SANDBOX_GENERATOR_MIN_SECONDS", cls.min_seconds)),
            max_seconds=int(_env_number("SANDBOX_GENERATOR_MAX_SECONDS", cls.max_seconds)),
            failure_ratio=_env_number("SANDBOX_GENERATOR_FAILURE_RATIO", cls.failure_ratio),
            namespace=os.environ.get("SANDBOX_GENERATOR_NAMESPACE") or cls.namespace,
            story=_env_number("SANDBOX_GENERATOR_STORY", 1) != 0,
            story_speed=max(_env_number("SANDBOX_GENERATOR_STORY_SPEED", cls.story_speed), 0.01),
            kueue=os.environ.get("SANDBOX_KUEUE", "").strip().lower() in ("1", "true", "yes", "on"),
        )


def make_trainjob(runtime: dict, index: int, rng: random.Random, config: GeneratorConfig) -> dict:
    """Return a generated TrainJob for `runtime`: random numNodes (mostly small, sometimes large), run time."""
    runtime_name = meta(runtime)["name"]
    has_gpus = "nvidia.com/gpu" in str((runtime.get("spec") or {}).get("template"))
    num_nodes = rng.choices([1, 2, 4, 8, 16, 24, 32], weights=[8, 12, 14, 12, 7, 4, 3])[0]
    trainer: dict = {"numNodes": num_nodes}
    if not has_gpus:
        gpus = rng.choice(["1", "2", "4", "8"])
        trainer["resourcesPerNode"] = {"requests": {"nvidia.com/gpu": gpus}, "limits": {"nvidia.com/gpu": gpus}}
    duration = rng.randint(config.min_seconds, max(config.min_seconds, config.max_seconds))
    annotations = {DURATION_ANNOTATION: str(duration)}
    if rng.random() < config.failure_ratio:
        annotations[FAIL_AFTER_ANNOTATION] = str(max(1, int(duration * rng.uniform(0.2, 0.8))))
    short = runtime_name.replace("distributed", "dist").replace(".", "-")[:30].rstrip("-")
    return {
        "apiVersion": TRAINER_GROUP_VERSION,
        "kind": "TrainJob",
        "metadata": {
            "name": f"gen-{short}-{index:04d}",
            "namespace": config.namespaces[index % len(config.namespaces)],
            "labels": {GENERATED_LABEL: "true"},
            "annotations": annotations,
        },
        "spec": {"runtimeRef": {"name": runtime_name}, "trainer": trainer},
    }


def fits_empty_cluster(job: dict, runtime: dict, nodes: list[dict]) -> bool:
    """Return True when every PodGroup of `job` (and every ungrouped pod) fits `nodes` with nothing running.

    Uses the controller's plan and the scheduler's own `try_place`, so a generated job can always run eventually.
    Returns False when the runtime cannot be expanded for this job.
    """
    try:
        plan = plan_for(runtime, job)
    except PlanError:
        return False
    for rjob in plan.replicated_jobs:
        for job_index in range(rjob.replicas):
            if plan.group_for(rjob.name, job_index) is None:
                pod = build_pod(job, runtime, rjob.name, job_index, 0, rjob.resources, None)
                if not try_place([pod], nodes, [], None).fits:
                    return False
    for group in plan.groups:
        if group.policy != "gang":
            continue
        pods = [build_pod(job, runtime, rjob.name, job_index, pod_index, rjob.resources, group.name)
                for rjob in plan.replicated_jobs if rjob.name in group.replicated_jobs
                for job_index in range(rjob.replicas) if group.job_index in (None, job_index)
                for pod_index in range(rjob.pods_per_job)]
        if not try_place(pods, nodes, [], group.topology_key).fits:
            return False
    return True


def shrink_to_fit(job: dict, runtime: dict, nodes: list[dict]) -> dict | None:
    """Return `job` with numNodes halved until it fits an empty cluster of `nodes`, or None when even 1 does not."""
    trainer = job["spec"].setdefault("trainer", {})
    num_nodes = int(trainer.get("numNodes") or 1)
    while num_nodes >= 1:
        trainer["numNodes"] = num_nodes
        if fits_empty_cluster(job, runtime, nodes):
            return job
        num_nodes //= 2
    return None


class Generator:
    """Submits generated TrainJobs at a steady rate (daemon thread)."""

    def __init__(self, api_url: str, stop: threading.Event, *, trainjobs: Informer, cluster_runtimes: Informer,
                 nodes: Informer | None = None, config: GeneratorConfig | None = None):
        self.client = Client(api_url, user_agent="sandbox-generator")
        self.stop = stop
        self.trainjobs, self.cluster_runtimes, self.nodes = trainjobs, cluster_runtimes, nodes
        self.config = config or GeneratorConfig.from_env()
        self.rng = random.Random(self.config.seed)
        self.index = 0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the generator thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="controller-generator", daemon=True)
            self._thread.start()

    def ensure_runtimes(self) -> int:
        """Create the demo namespaces, PriorityClasses and runtimes that do not exist yet; return how many runtimes
        were created."""
        for namespace in sorted({*self.config.namespaces, *TEAMS}):
            self._create_once("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": namespace}})
        for priority_class in PRIORITY_CLASSES:
            self._create_once("/apis/scheduling.k8s.io/v1/priorityclasses", priority_class)
        created = 0
        for runtime in demo_runtimes():
            if self.cluster_runtimes.get(meta(runtime)["name"]) is None:
                created += self._create_once(RUNTIMES_PATH, runtime)
        return created

    def _create_once(self, collection: str, obj: dict) -> int:
        """Create `obj` unless it exists; return 1 when created. Raises nothing (logs other failures)."""
        try:
            self.client.create(collection, obj)
            return 1
        except ApiError as error:
            if error.status != 409:
                log.warning("demo object %s not created: %s", meta(obj)["name"], error)
            return 0

    def submit(self, job: dict, user: str) -> dict:
        """Create `job` as `user` (its field manager, which is how the cluster remembers who created it)."""
        return self.client.request("POST", trainjob_path(meta(job)["namespace"]), job,
                                   query={"fieldManager": user})

    def play(self, step: Step) -> None:
        """Run one storyline step (submit, or resume). Raises ApiError on failures other than AlreadyExists."""
        if step.resume:
            self.client.request("PATCH", trainjob_path(step.namespace, step.name), {"spec": {"suspend": False}},
                                content_type=MERGE_PATCH, query={"fieldManager": step.user})
            return
        try:
            self.submit(step_trainjob(step, self.config.story_speed), step.user)
        except ApiError as error:
            if error.status != 409:
                raise

    def tick(self) -> str | None:
        """Submit one TrainJob if below max_active, prune old finished ones; return the new job's name or None."""
        self.index += 1
        namespace = self.config.namespaces[self.index % len(self.config.namespaces)]
        everywhere = [j for j in self.trainjobs.items()
                      if (meta(j).get("labels") or {}).get(GENERATED_LABEL) == "true"
                      and meta(j).get("namespace") in self.config.namespaces]
        generated = [j for j in everywhere if meta(j).get("namespace") == namespace]
        finished = [j for j in generated if condition_is_true(j, "Complete") or condition_is_true(j, "Failed")]
        excess = len(finished) - self.config.keep_finished
        oldest = sorted(finished, key=lambda j: (meta(j).get("creationTimestamp") or "", meta(j)["name"]))
        for job in oldest[:max(excess, 0)]:
            try:
                self.client.delete(trainjob_path(namespace, meta(job)["name"]))
            except ApiError as error:
                log.info("pruning %s failed: %s", meta(job)["name"], error)
        unfinished = [j for j in everywhere if not (condition_is_true(j, "Complete") or condition_is_true(j, "Failed"))]
        if len(unfinished) >= self.config.max_active:  # across the namespaces, so the load does not grow with them
            return None
        runtimes = sorted((r for r in self.cluster_runtimes.items()
                           if (meta(r).get("labels") or {}).get(STORY_ONLY_LABEL) != "true"),
                          key=lambda r: meta(r)["name"])
        if not runtimes:
            return None
        existing = {meta(j)["name"] for j in self.trainjobs.items()}
        nodes = self.nodes.items() if self.nodes is not None else None
        for _ in range(20):
            runtime = self.rng.choice(runtimes)
            job = make_trainjob(runtime, self.index, self.rng, self.config)
            job["metadata"]["namespace"] = namespace
            if meta(job)["name"] in existing:
                self.index += len(self.config.namespaces)
                continue
            if nodes is not None:
                job = shrink_to_fit(job, runtime, nodes)
            if job is not None:
                self.submit(job, self.rng.choice(TEAMS.get(namespace, ("demo-user",))))
                return meta(job)["name"]
        return None

    def _run(self) -> None:
        for informer in (self.trainjobs, self.cluster_runtimes, self.nodes):
            while informer is not None and not informer.synced.wait(0.5):
                if self.stop.is_set():
                    return
        # Demo runtimes are created once: a user deleting one later should not see it come back.
        while not self.stop.is_set():
            try:
                self.ensure_runtimes()
                break
            except Exception:
                log.exception("creating the demo runtimes failed; retrying")
                self.stop.wait(2.0)
        started = time.monotonic()
        # The Kueue steps only make sense (and only leave the rest of the storyline's capacity alone) with Kueue.
        steps = sorted((s for s in STORY if self.config.kueue or not s.queue), key=lambda s: s.at) \
            if self.config.story else []
        interval = 60.0 / self.config.rate if self.config.rate > 0 else None
        next_tick = started
        while not self.stop.is_set() and (steps or interval is not None):
            elapsed = time.monotonic() - started
            while steps and steps[0].at / self.config.story_speed <= elapsed:
                step = steps.pop(0)
                try:
                    self.play(step)
                except Exception:
                    log.exception("storyline step %s/%s failed", step.namespace, step.name)
            if interval is not None and time.monotonic() >= next_tick:
                try:
                    name = self.tick()
                    if name:
                        log.info("generator submitted %s", name)
                except Exception:
                    log.exception("generator tick failed")
                next_tick = time.monotonic() + interval
            waits = [next_tick - time.monotonic()] if interval is not None else []
            if steps:
                waits.append(started + steps[0].at / self.config.story_speed - time.monotonic())
            self.stop.wait(max(0.05, min(waits)))
