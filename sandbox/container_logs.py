"""What the simulated containers print: the output behind `pods/{name}/log`.

Nothing runs in the sandbox, so a container's output is a pure function of what the simulated kubelet wrote into
the pod's status (when each container started, when and how it ended) and of the pod itself (its TrainJob, its
rank): the API server recomputes it on every request and a `follow` stream reveals lines as their time comes.
Shared by the API server (`pods/log`) and documented with the kubelet simulation; it imports neither.

A trainer container prints a start banner with its rank, then one line per second of training (`step`, a
decreasing `loss`, throughput), and, when its container exited 0, a last line `Completed`; a failing one ends
with a traceback-like error line. Initializer containers print download progress. Lines are deterministic for a
pod UID, so two reads agree and a follow stream continues exactly where the read stopped.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

STEP_SECONDS = 1.0
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
_RANK_ENV = ("PET_NODE_RANK", "RANK", "NODE_RANK", "JOB_COMPLETION_INDEX")
_WORLD_ENV = ("PET_NNODES", "WORLD_SIZE", "NNODES")


@dataclass(frozen=True)
class Line:
    """One line of output: when it was written (POSIX seconds) and its text (no newline)."""

    time: float
    text: str


@dataclass(frozen=True)
class ContainerRun:
    """One run of a container as the kubelet reported it: started (and finished, with an exit code) at."""

    started: float
    finished: float | None
    exit_code: int | None


def _parse(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def container_run(pod: dict[str, Any], container: str) -> ContainerRun | None:
    """Returns the current run of a container from the pod's status, or None when it has not started."""
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if entry.get("name") != container:
            continue
        state = entry.get("state") or {}
        if "running" in state:
            started = _parse((state["running"] or {}).get("startedAt"))
            return ContainerRun(started, None, None) if started is not None else None
        if "terminated" in state:
            terminated = state["terminated"] or {}
            started = _parse(terminated.get("startedAt"))
            finished = _parse(terminated.get("finishedAt"))
            if started is None:
                return None
            return ContainerRun(started, finished if finished is not None else started,
                                int(terminated.get("exitCode") or 0))
    return None


def _env_value(container: dict[str, Any], names: tuple[str, ...]) -> str | None:
    values = {e.get("name"): e.get("value") for e in container.get("env") or [] if isinstance(e, dict)}
    for name in names:
        if isinstance(values.get(name), str) and values[name].isdigit():
            return values[name]
    return None


def _noise(seed: str, step: int) -> float:
    """Returns a deterministic value in [-1, 1) for (seed, step)."""
    digest = hashlib.sha256(f"{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**31 - 1.0


class ContainerOutput:
    """The output of one container of one pod; `lines(until)` yields every line written up to `until`."""

    def __init__(self, pod: dict[str, Any], container: str) -> None:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        pod_spec = pod.get("spec") or {}
        every = (pod_spec.get("containers") or []) + (pod_spec.get("initContainers") or [])
        spec = next((c for c in every if isinstance(c, dict) and c.get("name") == container), {})
        self.seed = f"{meta.get('uid') or meta.get('name')}/{container}"
        self.container = container
        self.image = spec.get("image") or "unknown"
        self.rank = _env_value(spec, _RANK_ENV) or labels.get(COMPLETION_INDEX_LABEL) or "0"
        self.world = _env_value(spec, _WORLD_ENV)
        self.job = labels.get(JOBSET_NAME_LABEL) or meta.get("name") or "job"
        self.step_name = labels.get(REPLICATED_JOB_LABEL) or container
        self.role = labels.get(ANCESTOR_LABEL) or ("trainer" if container == "node" else container)
        self.run = container_run(pod, container)

    def _banner(self) -> list[str]:
        world = f" of {self.world}" if self.world else ""
        if self.role.endswith("initializer"):
            return [f"[{self.step_name}] {self.role} starting (image {self.image})",
                    f"[{self.step_name}] fetching artifacts for TrainJob {self.job}"]
        return [f"[rank {self.rank}] starting {self.step_name} for TrainJob {self.job} (image {self.image})",
                f"[rank {self.rank}] node rank {self.rank}{world}, distributed backend nccl initialised"]

    def _step(self, step: int) -> str:
        if self.role.endswith("initializer"):
            percent = min(99, 5 * step)
            return f"[{self.step_name}] downloaded {percent}% ({step * 128} MiB)"
        loss = 2.6 * math.exp(-step / 40.0) + 0.35 + 0.015 * _noise(self.seed, step)
        throughput = 1800 + 60 * _noise(self.seed + "/t", step)
        return (f"[rank {self.rank}] step {step} loss={loss:.4f} lr={3e-4 * min(1.0, step / 100):.2e} "
                f"samples/s={throughput:.1f}")

    def lines(self, until: float) -> Iterator[Line]:
        """Yields, in order, every line written at or before `until` (nothing before the container started)."""
        run = self.run
        if run is None:
            return
        for offset, text in enumerate(self._banner()):
            at = run.started + offset * 0.001
            if at > until:
                return
            yield Line(at, text)
        # Steps are revealed a whole second late: the kubelet records finishedAt to the second, so a step shown
        # while the container ran is never after the finishedAt written later, and the output only ever grows.
        end = math.floor(until)
        if run.finished is not None:
            end = min(end, run.finished)
        step = 1
        while run.started + step * STEP_SECONDS < end:
            yield Line(run.started + step * STEP_SECONDS, self._step(step))
            step += 1
        if run.finished is not None and run.finished <= until:
            if run.exit_code == 0:
                summary = ("artifacts ready" if self.role.endswith("initializer")
                           else f"training finished after {step - 1} steps")
                yield Line(run.finished, f"[rank {self.rank}] {summary}")
                yield Line(run.finished, "Completed")
            else:
                yield Line(run.finished, f"[rank {self.rank}] RuntimeError: worker exited with code "
                                         f"{run.exit_code}")


def format_line(line: Line, timestamps: bool) -> bytes:
    """Returns the line as the kubelet streams it, with an RFC 3339 nanosecond timestamp prefix when asked."""
    if not timestamps:
        return line.text.encode() + b"\n"
    whole = int(line.time)
    nanos = round((line.time - whole) * 1e6) * 1000  # microseconds: what a float of an epoch time holds exactly
    stamp = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"
    return f"{stamp} {line.text}\n".encode()
