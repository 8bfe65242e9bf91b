"""The simulated container output (pure): deterministic, only ever growing while a container runs and when it
ends, so a follow stream that resumes by line count never repeats or skips a line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sandbox.container_logs import ContainerOutput, format_line

START = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(state: dict, env: list | None = None, index: str = "3") -> dict:
    return {"metadata": {"name": "job-node-0-3-abcde", "uid": "u-1",
                         "labels": {"batch.kubernetes.io/job-completion-index": index,
                                    "jobset.sigs.k8s.io/jobset-name": "job",
                                    "jobset.sigs.k8s.io/replicatedjob-name": "node",
                                    "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "node", "image": "img", "env": env or []}]},
            "status": {"containerStatuses": [{"name": "node", "state": state}]}}


def _running() -> dict:
    return _pod({"running": {"startedAt": _stamp(START)}})


def _finished(after: float, exit_code: int = 0) -> dict:
    return _pod({"terminated": {"startedAt": _stamp(START), "finishedAt": _stamp(START + after),
                                "exitCode": exit_code}})


@pytest.mark.parametrize("finish_after", [5, 5.9, 6.0, 12])
def test_output_only_grows_from_running_to_finished(finish_after):
    # The kubelet writes finishedAt to the second, after some of the run's lines were already streamed.
    finished_at = START + int(finish_after)
    seen: list[str] = []
    for poll in (0.5, 1.2, 2.9, 3.0, 4.99, finish_after - 0.01):
        if START + poll > finished_at + 0.999:
            break
        now = [line.text for line in ContainerOutput(_running(), "node").lines(START + poll)]
        assert now[:len(seen)] == seen
        seen = now
    final = [line.text for line in ContainerOutput(_finished(int(finish_after)), "node").lines(START + 100)]
    assert final[:len(seen)] == seen
    assert final[-1] == "Completed"


def test_rank_comes_from_env_then_the_completion_index_and_loss_falls():
    lines = [line.text for line in ContainerOutput(_finished(120), "node").lines(START + 200)]
    assert lines[0].startswith("[rank 3] starting node for TrainJob job")
    losses = [float(text.split("loss=")[1].split()[0]) for text in lines if " step " in text]
    assert len(losses) == 119 and losses[-1] < losses[0] - 1.5
    env = _finished(3)
    env["spec"]["containers"][0]["env"] = [{"name": "PET_NODE_RANK", "value": "7"}, {"name": "PET_NNODES",
                                                                                  "value": "8"}]
    banner = [line.text for line in ContainerOutput(env, "node").lines(START + 9)][1]
    assert banner.startswith("[rank 7] node rank 7 of 8,")


def test_failed_container_ends_with_an_error_and_no_completed():
    lines = [line.text for line in ContainerOutput(_finished(3, exit_code=1), "node").lines(START + 9)]
    assert "exited with code 1" in lines[-1] and "Completed" not in lines


def test_not_started_container_has_no_output_and_timestamps_are_rfc3339_nano():
    pending = _pod({"waiting": {"reason": "ContainerCreating"}})
    assert list(ContainerOutput(pending, "node").lines(START + 9)) == []
    first = next(iter(ContainerOutput(_running(), "node").lines(START + 9)))
    assert format_line(first, True) == b"2026-12-01T12:00:00.000000000Z " + first.text.encode() + b"\n"
    assert format_line(first, False) == first.text.encode() + b"\n"
