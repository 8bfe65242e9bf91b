"""`make run`'s Kueue: the storyline's labelled jobs on per-team ClusterQueues of one cohort, played ten times
faster, read through the queue watcher: queueing, borrowing and a reclaim that preempts the borrower."""

from __future__ import annotations

import pytest

from queues.handlers import QueueHandler
from queues.models import ClusterQueue, QueuedWorkload
from tests.sandbox.controllers_support import simulated_cluster
from trainer_portal.cluster import informers

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ENV = {"SANDBOX_GENERATOR": "1", "SANDBOX_GENERATOR_RATE": "0", "SANDBOX_GENERATOR_STORY_SPEED": "10",
       "SANDBOX_KUEUE": "1", "SANDBOX_KUEUE_GPU_QUOTA": "team-a=16,team-b=16", "SANDBOX_KUEUE_COHORT": "demo"}


def test_the_demo_shows_queueing_borrowing_and_a_reclaim():
    from trainer_portal.kube.client import build_gateway
    from trainer_portal.kube.config import KubeSettings

    with simulated_cluster(**ENV) as process:
        gateway = build_gateway(KubeSettings(config_path=process.kubeconfig))
        handler = QueueHandler(gateway=gateway, debounce=0.0, max_delay=0.0)
        seen: set[str] = set()
        admitted: set[str] = set()

        def observe() -> bool:
            informers.list_once(handler, gateway=gateway)
            handler.flush(leader=True)
            rows = {w.job_name: w for w in QueuedWorkload.objects.filter(namespace__in=("team-a", "team-b"))}
            team_a = ClusterQueue.objects.filter(name="cq-team-a").first()
            gpu = next((u for u in team_a.usage if u["resource"] == "nvidia.com/gpu"), {}) if team_a else {}
            if gpu.get("borrowed", 0) > 0:
                seen.add("borrowing")
            if any(w.state == "pending" and w.position_in_local_queue is not None and w.reason == "WaitingForQuota"
                   for w in rows.values()):
                seen.add("queueing")
            for name, w in rows.items():
                if w.state == "admitted":
                    admitted.add(name)
                elif name in admitted and rows.get("b-q-train") and rows["b-q-train"].state == "admitted":
                    seen.add("reclaim")  # team-b took back what team-a borrowed: a team-a job queues again
            return {"borrowing", "queueing", "reclaim"} <= seen

        try:
            process.wait_until(observe, timeout=60, interval=0.3)
        except TimeoutError:
            rows = [(w.namespace, w.job_name, w.state, w.reason, w.position_in_local_queue)
                    for w in QueuedWorkload.objects.all()]
            pytest.fail(f"only {sorted(seen)} seen; workloads {rows}; {handler.status()}")
        assert ClusterQueue.objects.get(name="cq-team-a").cohort == "demo"
