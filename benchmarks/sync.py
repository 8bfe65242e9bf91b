"""Cluster sync benchmark (issue 5): bulk apply through a real Celery worker, no-op resync, live snapshot build.

Scenarios
- apply: N policies (500; --quick 50) queued at once and applied by a real worker process with its default
  concurrency (one prefork child per CPU) against a sandbox cluster over HTTP; end to end = from the bulk request
  until every row is ``synced``. Per-policy completion times give p50/p95. Baseline, same run: the same N objects
  applied serially in-process with the bare gateway (no DB, no broker, no state machine) → ratio.
- resync: the same N requested again; every one must be recognised as already live: zero writes, checked by the
  sandbox's global resourceVersion (nothing else writes: no controllers, no nodes).
- snapshot: the live topology snapshot built from 10,000 nodes + 100,000 pods (--quick: 1,000 + 10,000) as the
  watcher does after a list; time, memory (tracemalloc peak and the snapshot's own breakdown), pickle size and
  load time (what the web process reads), and the per-event cost of 20,000 mixed node/pod watch events (p50/p95)
  against the baseline of rebuilding from a full list.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
Broker: CELERY_BROKER_URL when set (Redis), else the embedded atomic filesystem broker in a temp folder.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import random
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

TARGET_APPLY_SECONDS = 30.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _setup_django(tmp: Path) -> str:
    """Point Django at a throwaway database and migrate it; return its DATABASE_URL."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        import psycopg

        base, _, _ = url.rpartition("/")
        name = f"tp_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        bench_url = f"{base}/{name}"
    else:
        bench_url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["DATABASE_URL"] = bench_url
    os.environ["TRAINER_PORTAL_VAR_DIR"] = str(tmp / "var")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainer_portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return bench_url


def _drop_database(url: str) -> None:
    if not url.startswith("postgres"):
        return
    import psycopg
    from django.db import connections

    connections.close_all()
    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manifest(name: str, nodes: int = 2) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": nodes, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "busybox:1.37"}]}}},
                },
            }]}},
        },
    }


def _wait_all_synced(count: int, started: float, timeout: float) -> list[float]:
    from runtimes.choices import SyncState
    from runtimes.models import PolicySync

    deadline = started + timeout
    while True:
        rows = list(PolicySync.objects.filter(sync_state=SyncState.SYNCED).values_list("last_synced_at", flat=True))
        if len(rows) >= count:
            return sorted(ts.timestamp() - started for ts in rows)
        stuck = PolicySync.objects.filter(sync_state=SyncState.FAILED).count()
        if stuck or time.time() > deadline:
            raise RuntimeError(f"{len(rows)}/{count} synced, {stuck} failed after {time.time() - started:.1f}s")
        time.sleep(0.05)


def bench_apply(count: int, tmp: Path) -> dict:
    """Run the apply + no-op resync scenarios; return the measurements."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from runtimes.services import sync
    from runtimes.services.policies import policy_create
    from sandbox.testing import SandboxProcess
    from tests.sync.worker import WorkerProcess
    from trainer_portal import kube
    from trainer_portal.celery import app as portal_app
    from trainer_portal.kube.client import get_gateway, reset_gateway

    results: dict = {}
    with SandboxProcess(topology="none", controllers=False) as sandbox:
        os.environ["TRAINER_PORTAL_KUBECONFIG"] = sandbox.kubeconfig
        from django.conf import settings

        settings.KUBE_CONFIG_PATH = sandbox.kubeconfig
        reset_gateway()
        gateway = get_gateway()
        ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)

        # Baseline: the same objects applied serially with the bare gateway, then removed again.
        started = time.perf_counter()
        for index in range(count):
            gateway.apply(ctr, body=_manifest(f"baseline-{index:04d}"))
        results["baseline_serial_s"] = time.perf_counter() - started
        sandbox.reset()

        for index in range(count):
            policy_create(manifest=_manifest(f"bench-{index:04d}"), author=None, message="bench")
        from django.db import connection

        worker = WorkerProcess(kubeconfig=sandbox.kubeconfig, var_dir=tmp / "var", db_url=os.environ["DATABASE_URL"],
                               concurrency=os.cpu_count() or 1, timeout=10.0)
        connection.close()
        worker.start()
        # The bulk sync service enqueues its own task on commit: publish it to this worker, as a web process would.
        worker.publisher().set_current()
        try:
            started = time.time()
            sync.policies_sync_request()
            done = _wait_all_synced(count, started, timeout=600)
            results["apply_total_s"] = time.time() - started
            results["apply_p50_s"] = _pct(done, 0.5)
            results["apply_p95_s"] = _pct(done, 0.95)
            results["apply_per_s"] = count / results["apply_total_s"]
            results["worker_concurrency"] = worker.concurrency
            results["live_objects"] = len(gateway.list(ctr).items)

            rv_before = sandbox._call("GET", "/sandbox/info")["resourceVersion"]
            started = time.time()
            sync.policies_sync_request()
            time.sleep(0.2)
            _wait_all_synced(count, started, timeout=600)
            results["resync_total_s"] = time.time() - started
            rv_after = sandbox._call("GET", "/sandbox/info")["resourceVersion"]
            results["resync_writes"] = int(rv_after) - int(rv_before)
        finally:
            portal_app.set_current()
            worker.stop()
    return results


def _pods_for(nodes: list[dict], count: int, rng: random.Random) -> list[dict]:
    pods = []
    for index in range(count):
        node = nodes[rng.randrange(len(nodes))]["metadata"]["name"]
        pods.append({
            "metadata": {"name": f"pod-{index}", "namespace": f"ns-{index % 50}", "resourceVersion": str(index)},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
                "requests": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "8Gi"}}}]},
            "status": {"phase": "Running"},
        })
    return pods


def bench_snapshot(node_count: int, pod_count: int, events: int) -> dict:
    """Build the live snapshot from a list and apply watch events; return the measurements."""
    from trainer_portal.placement.snapshot import TopologyKeys
    from trainer_portal.placement.synthetic import synthetic_nodes
    from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker

    rng = random.Random(5)
    nodes = synthetic_nodes(racks=max(1, node_count // 16), nodes_per_rack=16)[:node_count]
    pods = _pods_for(nodes, pod_count, rng)
    results: dict = {"nodes": len(nodes), "pods": len(pods)}

    gc.collect()
    started = time.perf_counter()
    tracker = TopologyTracker(TopologyKeys())
    tracker.relist_nodes(nodes, "1")
    tracker.relist_pods(pods, "2")
    results["build_s"] = time.perf_counter() - started
    # Memory in a second pass: tracemalloc slows allocation down too much to time the first one with it.
    gc.collect()
    tracemalloc.start()
    shadow = TopologyTracker(TopologyKeys())
    shadow.relist_nodes(nodes, "1")
    shadow.relist_pods(pods, "2")
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del shadow
    results["build_peak_mb"] = peak / 2**20
    results["retained_mb"] = retained / 2**20
    breakdown = tracker.snapshot.memory_breakdown()
    results["snapshot_mb"] = sum(breakdown.values()) / 2**20
    results["bytes_per_node"] = tracker.snapshot.nbytes_per_node()

    live = tracker.to_live(source="list")
    started = time.perf_counter()
    blob = pickle.dumps(live, protocol=pickle.HIGHEST_PROTOCOL)
    results["pickle_s"] = time.perf_counter() - started
    results["pickle_mb"] = len(blob) / 2**20
    started = time.perf_counter()
    loaded = pickle.loads(blob)
    results["unpickle_s"] = time.perf_counter() - started
    assert isinstance(loaded, LiveSnapshot)

    costs = []
    names = [node["metadata"]["name"] for node in nodes]
    for index in range(events):
        kind = rng.random()
        started = time.perf_counter()
        if kind < 0.45:
            tracker.apply_pod("ADDED", _pods_for(nodes, 1, rng)[0] | {"metadata": {"name": f"new-{index}",
                                                                                   "namespace": "bench"}})
        elif kind < 0.9:
            victim = pods[rng.randrange(len(pods))]
            tracker.apply_pod("DELETED", victim)
        else:
            node = nodes[rng.randrange(len(nodes))]
            tracker.apply_node("MODIFIED", node)
        costs.append(time.perf_counter() - started)
    results["event_p50_us"] = _pct(costs, 0.5) * 1e6
    results["event_p95_us"] = _pct(costs, 0.95) * 1e6
    results["events"] = events
    results["rebuild_vs_event_ratio"] = results["build_s"] / max(_pct(costs, 0.5), 1e-9)
    assert len(names) == len(nodes)
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the sync benchmarks and print the numbers; return 0 when the targets are met."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sync")
    parser.add_argument("--quick", action="store_true", help="50 policies, 1,000 nodes + 10,000 pods")
    parser.add_argument("--policies", type=int, default=None)
    parser.add_argument("--skip-apply", action="store_true", help="only the snapshot scenario (no worker)")
    args, _ = parser.parse_known_args(argv)
    count = args.policies or (50 if args.quick else 500)
    nodes, pods, events = (1_000, 10_000, 5_000) if args.quick else (10_000, 100_000, 20_000)
    ok = True

    tmp_dir = tempfile.TemporaryDirectory(prefix="tp-bench-sync-")
    tmp = Path(tmp_dir.name)
    url = "" if args.skip_apply else _setup_django(tmp)  # before anything reads Django settings
    snap = bench_snapshot(nodes, pods, events)
    print(f"snapshot  {snap['nodes']:,} nodes + {snap['pods']:,} pods: build {snap['build_s']:.2f} s, "
          f"peak {snap['build_peak_mb']:.0f} MiB during build, {snap['retained_mb']:.0f} MiB retained "
          f"(tracker incl. node labels), snapshot {snap['snapshot_mb']:.1f} MiB "
          f"({snap['bytes_per_node']:.0f} B/node without pods)")
    print(f"          pickle {snap['pickle_mb']:.1f} MiB in {snap['pickle_s'] * 1000:.0f} ms, load "
          f"{snap['unpickle_s'] * 1000:.0f} ms")
    print(f"          per event ({snap['events']:,} mixed node/pod): p50 {snap['event_p50_us']:.1f} µs, "
          f"p95 {snap['event_p95_us']:.1f} µs; a full rebuild costs {snap['rebuild_vs_event_ratio']:,.0f}× "
          "one event")

    if args.skip_apply:
        tmp_dir.cleanup()
        return 0
    try:
        res = bench_apply(count, tmp)
    finally:
        _drop_database(url)
        tmp_dir.cleanup()
    print(f"apply     {count} policies, worker concurrency {res['worker_concurrency']}: end to end "
          f"{res['apply_total_s']:.1f} s ({res['apply_per_s']:.0f}/s), completion p50 {res['apply_p50_s']:.1f} s, "
          f"p95 {res['apply_p95_s']:.1f} s; target ≤ {TARGET_APPLY_SECONDS:.0f} s for 500")
    print(f"          baseline (bare serial applies, no DB/broker): {res['baseline_serial_s']:.1f} s → ratio "
          f"{res['apply_total_s'] / max(res['baseline_serial_s'], 1e-9):.1f}×")
    print(f"resync    {count} unchanged policies: {res['resync_total_s']:.1f} s, writes to the cluster: "
          f"{res['resync_writes']} (must be 0)")
    if res["resync_writes"] != 0 or res["live_objects"] != count:
        ok = False
    if count >= 500 and res["apply_total_s"] > TARGET_APPLY_SECONDS * count / 500:
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
