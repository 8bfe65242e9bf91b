"""The watcher's own metrics port: a real informer hub against the sandbox, scraped over HTTP."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.support import Recorder, create_pod, running, wait_until
from trainer_portal import kube, watch_metrics
from trainer_portal.cluster import informers


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Return {(sample name, sorted labels): value} from the metrics port."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_events_relists_lag_backlog_and_leadership_per_cluster_and_kind(cluster, gateway):
    recorder = Recorder("probe", (kube.POD,))
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: recorder], timeout_seconds=300)
    server, port = watch_metrics.serve(lambda: [hub], port=0, address="127.0.0.1")
    try:
        with running(hub):
            wait_until(lambda: recorder.events())
            for name in ("a", "b"):
                create_pod(gateway, name)
            wait_until(lambda: ("ADDED", "pods", "b") in recorder.events())
            samples = scrape(port)
    finally:
        server.shutdown()

    pods = (("cluster", "default"), ("kind", "pods"))
    assert samples[("trainer_portal_watcher_events_total", pods)] >= 2
    assert samples[("trainer_portal_watcher_relists_total", pods)] == 1
    assert samples[("trainer_portal_watcher_watch_errors_total", pods)] == 0
    assert 0 <= samples[("trainer_portal_watcher_lag_seconds", pods)] < 60
    assert samples[("trainer_portal_watcher_is_leader", (("cluster", "default"),))] == 1  # no elector: it writes
    assert samples[("trainer_portal_watcher_dispatch_backlog", (("cluster", "default"),))] >= 0
    assert ("process_resident_memory_bytes", ()) in samples
