"""TrainJob admission-tracking benchmark: initial sync, steady event rate, no-op events, list API, "why it waits".

Scenarios (sizes: full / --quick)
- sync: 30,000 TrainJobs + 30,000 Workloads + 90,000 PodGroups + 300,000 Pods (1,000 / 1,000 / 3,000 / 10,000;
  ``--jobs N`` for another size) handed to the tracker as the hub's first lists, then flushed until every job is
  tracked in the database (target ≤ 30 s). Memory retained, measured with tracemalloc (started before the objects
  are generated): what is still allocated after the sync once the benchmark dropped its own references — the
  listed objects the tracker keeps, its index and everything the sync left behind (target ≤ 400 MiB). The RSS
  growth during the sync is printed too (RSS never shrinks, so an RSS delta across the generator would count freed
  input). tracemalloc slows allocation, so ``--memory`` runs the sync twice: timed without it, measured with it.
  Baseline, same run: a bare bulk INSERT of the same number of TrainJob rows (the least any tracker must write)
  → ratio.
- events: 2,000 events/s for 10 s (2 s) of pod phase changes on random pods of every job (the worst case: no two
  events of a flush share a job), dispatched and flushed as the hub's loop does; lag from each event's arrival to
  the commit of the row it changed, p50/p95 (target p95 ≤ 1 s).
- no-op: 10,000 (1,000) MODIFIED events that change nothing the tracker shows; row writes counted (must be 0).
- list: GET /api/v1/trainjobs/ over the 10,000 tracked jobs as a viewer, server time p50/p95 and the query count
  (constant); baseline: the same page as a bare ORM slice → ratio.
- why: "why it waits" for one gang bigger than any zone on a 50,000-node (5,000) synthetic snapshot with 500
  admitted 64-pod gangs to attribute, cold caches (a fresh snapshot copy per round, as after every save of the live
  snapshot), p50/p95 (target p95 ≤ 50 ms); baseline: the engine's bare `place` (with details) of the same request,
  cold → ratio.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.sync import _drop_database, _pct, _setup_django

TARGET_SYNC_SECONDS = 30.0
TARGET_RSS_MIB = 400.0
TARGET_LAG_P95_SECONDS = 1.0
TARGET_LIST_P95_MS = 100.0
TARGET_WHY_P95_MS = 50.0
TARGET_BYTES_PER_NODE = 200.0


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _spin() -> None:
    while True:
        pass


def _busy(count: int) -> list:
    """Start ``count`` busy-loop processes (daemons: they end with the benchmark); return them."""
    processes = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for process in processes:
        process.start()
    return processes


def _setup_in_place(tmp: Path) -> str:
    """Point Django at DATABASE_URL itself (migrated, tracking rows cleared); return it.

    Raises SystemExit when DATABASE_URL is not set: clearing the tracking rows of whatever database the settings
    default to (the development one) is never what ``--in-place`` means.
    """
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("--in-place needs DATABASE_URL naming the database to use (its tracking rows are cleared)")
    os.environ["TRAINER_PORTAL_VAR_DIR"] = str(tmp / "var")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainer_portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    _clear_tracking_rows()
    return os.environ.get("DATABASE_URL", "")


def _clear_tracking_rows() -> None:
    from django.contrib.auth.models import User

    from jobs.models import TrackerStatus, TrainJob, TrainJobTransition

    TrainJobTransition.objects.all().delete()
    TrainJob.objects.all().delete()
    TrackerStatus.objects.all().delete()
    User.objects.filter(username="bench-viewer").delete()


def _objects(jobs: int, rng: random.Random) -> dict[str, list[dict]]:
    """Objects as a cluster holds them: per job 1 Workload, 3 PodGroups (launcher basic + 2 gangs), ~10 pods."""
    from tests.jobs import objects as o

    out: dict[str, list[dict]] = {"trainjobs": [], "workloads": [], "podgroups": [], "pods": []}
    for i in range(jobs):
        ns = f"team-{i % 20}"
        job = o.trainjob(f"job-{i:05d}", f"uid-{i:05d}-{rng.getrandbits(32):08x}", namespace=ns, num_nodes=8,
                         runtime=f"runtime-{i % 7}")
        wl = o.workload(job)
        scheduled = i % 3 != 0
        condition = [o.condition("PodGroupInitiallyScheduled", True)] if scheduled else []
        groups = [o.pod_group(job, wl, template="launcher", min_count=1, policy="basic", conditions=condition),
                  o.pod_group(job, wl, template="node", suffix="a", min_count=5, conditions=condition),
                  o.pod_group(job, wl, template="node", suffix="b", min_count=4, conditions=condition)]
        pods = [o.pod(job, 0, group=groups[0], rjob="launcher", node="n0" if scheduled else "")]
        pods += [o.pod(job, k, group=groups[1], node=f"n{k}" if scheduled else "") for k in range(5)]
        pods += [o.pod(job, 5 + k, group=groups[2], node=f"n{k}" if scheduled else "") for k in range(4)]
        out["trainjobs"].append(job)
        out["workloads"].append(wl)
        out["podgroups"] += groups
        out["pods"] += pods
    return out


def bench_retained(jobs: int) -> float:
    """Return the MiB still allocated (tracemalloc) after a sync of ``jobs`` once the benchmark let go of its input."""
    import tracemalloc

    from django.db import reset_queries

    from jobs.handlers import AdmissionHandler
    from jobs.models import TrainJob
    from trainer_portal.kube import resources as kinds

    gc.collect()
    tracemalloc.start()
    objects = _objects(jobs, random.Random(7))
    handler = AdmissionHandler(identity="bench-memory")
    for kind, name in ((kinds.TRAINJOB, "trainjobs"), (kinds.WORKLOAD, "workloads"), (kinds.PODGROUP, "podgroups"),
                       (kinds.POD, "pods")):
        handler.relisted(kind, objects[name], "1000000")
    for kind in (kinds.JOBSET, kinds.KUEUE_WORKLOAD, kinds.EVENT):
        handler.relisted(kind, [], "1000000")
    handler.flush(leader=True)
    objects.clear()
    del objects
    reset_queries()  # DEBUG's log of the last 9,000 queries is not the tracker's (production runs without it)
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    del handler
    TrainJob.objects.all().delete()
    gc.collect()
    return retained


def bench_watcher_memory(clusters: int, nodes: int) -> dict:
    """Return what the topology trackers of ``clusters`` clusters × ``nodes`` nodes (one 8-GPU pod on every other
    node) keep once their lists are applied and the input dropped: tracemalloc bytes retained per node, and the
    RSS growth."""
    import tracemalloc

    from trainer_portal.cluster import snapshots
    from trainer_portal.placement.synthetic import synthetic_nodes
    from trainer_portal.placement.tracker import TopologyTracker

    gc.collect()
    rss_before = _rss_mib()
    tracemalloc.start()
    trackers = []
    for index in range(clusters):
        items = synthetic_nodes(zones=3, blocks_per_zone=8, racks=max(nodes // 16, 1), nodes_per_rack=16,
                                variant_h=True, seed=7 + index)
        pods = [{"metadata": {"name": f"p{i}", "namespace": f"team-{i % 20}", "uid": f"c{index}-p{i}"},
                 "spec": {"nodeName": node["metadata"]["name"], "containers": [
                     {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "32"}}}]},
                 "status": {"phase": "Running"}} for i, node in enumerate(items[::2])]
        tracker = TopologyTracker(snapshots.topology_keys())
        tracker.relist_nodes(items, "1")
        tracker.relist_pods(pods, "2")
        trackers.append(tracker)
        del items, pods
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    total = sum(t.snapshot.node_count for t in trackers)
    rss = _rss_mib() - rss_before
    del trackers
    gc.collect()
    return {"clusters": clusters, "nodes": total, "bytes_per_node": retained / max(total, 1),
            "retained_mib": retained / 2**20, "rss_growth_mib": rss}


def bench_sync(jobs: int) -> tuple[dict, object, dict]:
    from jobs.handlers import AdmissionHandler
    from jobs.models import TrainJob
    from trainer_portal.kube import resources as kinds

    rng = random.Random(7)
    gc.collect()
    rss_base = _rss_mib()  # Django, numpy and the app loaded: what a watcher process costs before any object
    objects = _objects(jobs, rng)
    gc.collect()
    rss_before = _rss_mib()
    handler = AdmissionHandler(identity="bench")
    started = time.perf_counter()
    cpu_started = time.process_time()
    handler.relisted(kinds.TRAINJOB, objects["trainjobs"], "1000000")
    handler.relisted(kinds.WORKLOAD, objects["workloads"], "1000000")
    handler.relisted(kinds.PODGROUP, objects["podgroups"], "1000000")
    handler.relisted(kinds.POD, objects["pods"], "1000000")
    for kind in (kinds.JOBSET, kinds.KUEUE_WORKLOAD, kinds.EVENT):
        handler.relisted(kind, [], "1000000")
    handler.flush(leader=True)
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    tracked = TrainJob.objects.count()
    rss_after = _rss_mib()

    from django.utils import timezone

    baseline_rows = [TrainJob(uid=f"base-{i}", namespace="b", name=f"b-{i}", since=timezone.now(),
                              submitted_at=timezone.now()) for i in range(jobs)]
    started = time.perf_counter()
    TrainJob.objects.bulk_create(baseline_rows, batch_size=500)
    baseline = time.perf_counter() - started
    TrainJob.objects.filter(uid__startswith="base-").delete()
    counts = {k: len(v) for k, v in objects.items()}
    objects.clear()
    del objects
    gc.collect()
    # The event scenarios need the objects again: the same generator with the same seed gives the same ones.
    kept = _objects(jobs, random.Random(7))
    return ({"seconds": total, "cpu_seconds": cpu,
             "tracked": tracked, "baseline": baseline, "rss_mib": rss_base + rss_after - rss_before,
             "rss_growth_mib": rss_after - rss_before, "rss_base_mib": rss_base,
             **counts}, handler, kept)


def bench_events(handler, objects: dict, rate: int, seconds: float) -> dict:
    from jobs.models import TrainJob
    from trainer_portal.kube import resources as kinds

    rng = random.Random(11)
    pods = list(objects["pods"])
    total = int(rate * seconds)
    lags: list[float] = []
    pending: list[float] = []
    started = time.perf_counter()
    sent = 0
    rv = 2_000_000
    writes_before = handler.writes
    # Where the lag goes: the wall time of the row writes (waiting for the database included), timed around the
    # service the handler calls.
    from jobs import services

    apply_records = services.apply_records
    in_writes = [0.0]

    def timed(*args, **kwargs):
        begun = time.perf_counter()
        try:
            return apply_records(*args, **kwargs)
        finally:
            in_writes[0] += time.perf_counter() - begun

    services.apply_records = timed
    cpu_started = time.process_time()
    # The hub's loop (``informers.InformerHub``): wait up to one flush interval (0.2 s) for the first event,
    # dispatch every event that has arrived meanwhile, flush, repeat. Event i arrives at ``started + i / rate``
    # whether or not the tracker is busy, and its lag is counted from that arrival (the time it queued while a
    # flush ran included) to the commit of the flush that wrote it.
    while sent < total:
        now = time.perf_counter()
        arrived = min(total, int((now - started) * rate) + 1)
        if arrived <= sent:
            time.sleep(min(started + sent / rate - now, 0.01))
            continue
        while sent < arrived:
            position = rng.randrange(len(pods))
            pod = pods[position]
            rv += 1
            flipped = {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(rv)},
                       "status": {"phase": "Running" if pod["status"].get("phase") != "Running" else "Pending"}}
            pods[position] = flipped
            handler.changed(kinds.POD, "MODIFIED", flipped)
            pending.append(started + sent / rate)
            sent += 1
        if pending:
            handler.flush(leader=True)
            done = time.perf_counter()
            lags += [done - t for t in pending]
            pending = []
    handler.flush(leader=True)
    done = time.perf_counter()
    services.apply_records = apply_records
    lags += [done - t for t in pending]
    elapsed = done - started
    return {"events": total, "seconds": elapsed, "rate": total / elapsed, "write_seconds": in_writes[0],
            "cpu_seconds": time.process_time() - cpu_started, "lag_p50": _pct(lags, 0.5),
            "lag_p95": _pct(lags, 0.95), "writes": handler.writes - writes_before,
            "rows": TrainJob.objects.count()}


def bench_noop(handler, objects: dict, count: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from trainer_portal.kube import resources as kinds

    jobs = objects["trainjobs"]
    writes_before = handler.writes
    with CaptureQueriesContext(connection) as captured:
        for i in range(count):
            job = jobs[i % len(jobs)]
            # A new resourceVersion and a managedFields-style change the tracker does not show.
            handler.changed(kinds.TRAINJOB, "MODIFIED", {**job, "metadata": {
                **job["metadata"], "resourceVersion": str(3_000_000 + i), "managedFields": [{"time": str(i)}]}})
            if i % 200 == 199:
                handler.flush(leader=True)
        handler.flush(leader=True)
    row_writes = [q for q in captured.captured_queries if q["sql"].split()[0].upper() in ("INSERT", "UPDATE")
                  and "jobs_trainjob" in q["sql"].split("SET")[0]]
    return {"events": count, "row_writes": len(row_writes), "handler_writes": handler.writes - writes_before}


def bench_list(rounds: int) -> dict:
    from django.contrib.auth.models import Group, User
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from jobs.models import TrainJob

    user = User.objects.create_user("bench-viewer", password="x")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    times, query_counts = [], set()
    for _ in range(rounds):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get("/api/v1/trainjobs/", {"limit": 50})
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content[:200]
        query_counts.add(len(captured.captured_queries))
    reset_queries()
    baseline = []
    for _ in range(rounds):
        started = time.perf_counter()
        list(TrainJob.objects.order_by("-submitted_at", "-id")[:51])
        baseline.append(time.perf_counter() - started)
    deep = client.get("/api/v1/trainjobs/", {"limit": 50, "sort": "name"}).json()
    for _ in range(5):
        if not deep["next"]:
            break
        deep = client.get(deep["next"]).json()
    return {"rows": TrainJob.objects.count(), "p50_ms": _pct(times, 0.5) * 1000, "p95_ms": _pct(times, 0.95) * 1000,
            "queries": sorted(query_counts), "baseline_p50_ms": _pct(baseline, 0.5) * 1000}


def bench_why(nodes: int, rounds: int) -> dict | None:
    try:
        from jobs.domain import explain
        from trainer_portal.placement import PlacementRequest, place, racks_for, synthetic_cluster
    except ImportError:
        return None
    snapshot = synthetic_cluster(racks=racks_for(nodes), fragmentation="F1")
    rng = random.Random(5)
    names = list(snapshot.names)
    # 500 admitted gangs of 64 pods: who holds the best zone is computed over all of them.
    occupants = [explain.Occupant(f"team-{i % 20}", f"run-{i}", 64, 8, tuple(rng.sample(names, 64)))
                 for i in range(500)]
    # Bigger than any zone: the worst case, with the full explanation and advice.
    size = nodes // 3 + 1
    gang = explain.JobShape(namespace="team-a", name="big", num_nodes=size, resources_per_node={"nvidia.com/gpu": "8"},
                            pod_groups=[{"name": "big", "policy": "gang", "minCount": size, "members": size,
                                         "topologyKey": snapshot.keys.zone}])
    # Cold caches every round (a fresh copy has a new version stamp), as after each save of the live snapshot.
    times, answer = [], None
    for _ in range(rounds):
        cold = snapshot.copy()
        started = time.perf_counter()
        answer = explain.explain_wait(gang, cold, occupants=occupants)
        times.append(time.perf_counter() - started)
    request = [PlacementRequest("big", size, {"nvidia.com/gpu": "8"}, min_count=size, topology_key=snapshot.keys.zone)]
    baseline = []
    for _ in range(rounds):
        cold = snapshot.copy()
        started = time.perf_counter()
        place(request, cold)
        baseline.append(time.perf_counter() - started)
    return {"nodes": snapshot.node_count, "size": size, "p50_ms": _pct(times, 0.5) * 1000,
            "p95_ms": _pct(times, 0.95) * 1000, "baseline_p50_ms": _pct(baseline, 0.5) * 1000,
            "message": answer.message if answer else "", "holders": len(answer.holders) if answer else 0}


def main(argv: list[str] | None = None) -> int:
    """Run the tracking benchmarks and print the numbers; return 0 when the targets are met."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tracking")
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, 2 s of events, 5,000-node snapshot")
    parser.add_argument("--jobs", type=int, default=0, help="TrainJobs to sync (10 pods each); default 30,000")
    parser.add_argument("--rate", type=int, default=2_000, help="events per second (default %(default)s)")
    parser.add_argument("--memory", action="store_true",
                        help="also measure the retained memory with tracemalloc (a second, slower sync)")
    parser.add_argument("--only", choices=("sync-events", "all"), default="all",
                        help="sync-events: only the tracking scenarios (sync, events, no-op)")
    parser.add_argument("--busy", type=int, default=0,
                        help="start this many busy-loop processes for the run (a busy machine; default none: a shared "
                             "machine is busy enough, the load average is printed with the numbers)")
    parser.add_argument("--in-place", action="store_true",
                        help="use the PostgreSQL database DATABASE_URL names as it is (migrated, its tracking rows "
                             "cleared before and after) instead of creating a throwaway one")
    args, _ = parser.parse_known_args(argv)
    jobs, seconds, noop, nodes, rounds = (1_000, 2.0, 1_000, 5_000, 20) if args.quick else \
        (30_000, 10.0, 10_000, 50_000, 50)
    jobs = args.jobs or jobs
    ok = True
    busy: list = []
    tmp_dir = tempfile.TemporaryDirectory(prefix="tp-bench-tracking-")
    url = _setup_in_place(Path(tmp_dir.name)) if args.in_place else _setup_django(Path(tmp_dir.name))
    try:
        print(f"machine   {os.cpu_count()} CPUs, load average {'/'.join(f'{v:.1f}' for v in os.getloadavg())} "
              f"(1/5/15 min) before the run; {args.busy} busy-loop processes added", flush=True)
        busy = _busy(args.busy)
        retained = bench_retained(jobs) if args.memory else None
        sync, handler, objects = bench_sync(jobs)
        print(f"sync      {sync['trainjobs']:,} TrainJobs + {sync['workloads']:,} Workloads + {sync['podgroups']:,} "
              f"PodGroups + {sync['pods']:,} Pods → {sync['tracked']:,} tracked in {sync['seconds']:.1f} s "
              f"(target ≤ {TARGET_SYNC_SECONDS:.0f} s; {sync['cpu_seconds']:.1f} s of this process's CPU, the rest "
              f"waiting for the database or a core); tracker RSS {sync['rss_mib']:.0f} MiB = process "
              f"{sync['rss_base_mib']:.0f} MiB + growth during the sync {sync['rss_growth_mib']:.0f} MiB")
        if retained is not None:
            print(f"          retained (tracemalloc, input dropped): {retained:.0f} MiB = "
                  f"{retained * 1024 / max(jobs, 1):.1f} KiB per job (target ≤ {TARGET_RSS_MIB:.0f} MiB)")
        print(f"          baseline (bare bulk INSERT of {jobs:,} rows): {sync['baseline']:.2f} s → ratio "
              f"{sync['seconds'] / max(sync['baseline'], 1e-9):.1f}×")
        ok &= sync["tracked"] == jobs and (args.quick or (sync["seconds"] <= TARGET_SYNC_SECONDS and
                                                          (retained or 0) <= TARGET_RSS_MIB))
        events = bench_events(handler, objects, args.rate, seconds)
        print(f"events    {events['events']:,} pod events at {events['rate']:.0f}/s: event → DB lag p50 "
              f"{events['lag_p50'] * 1000:.0f} ms, p95 {events['lag_p95'] * 1000:.0f} ms (target ≤ "
              f"{TARGET_LAG_P95_SECONDS * 1000:.0f} ms); {events['writes']:,} row writes; "
              f"{events['cpu_seconds']:.1f} s of this process's CPU in {events['seconds']:.1f} s, "
              f"{events['write_seconds']:.1f} s in the row writes")
        ok &= events["lag_p95"] <= TARGET_LAG_P95_SECONDS
        quiet = bench_noop(handler, objects, noop)
        print(f"no-op     {quiet['events']:,} events that change nothing shown: {quiet['row_writes']} row writes "
              f"(must be 0)")
        ok &= quiet["row_writes"] == 0 and quiet["handler_writes"] == 0
        del objects, handler
        # Last of the tracking scenarios: its RSS would otherwise count in the tracker's process base.
        watcher = bench_watcher_memory(3, 1_000 if args.quick else 10_000)
        print(f"watcher   topology of {watcher['clusters']} clusters × {watcher['nodes'] // watcher['clusters']:,} "
              f"nodes (a pod on every other node), input dropped: {watcher['bytes_per_node']:.0f} bytes/node "
              f"retained (tracemalloc; target ≤ {TARGET_BYTES_PER_NODE:.0f}), {watcher['retained_mib']:.1f} MiB; "
              f"RSS growth {watcher['rss_growth_mib']:.0f} MiB", flush=True)
        ok &= args.quick or watcher["bytes_per_node"] <= TARGET_BYTES_PER_NODE
        if args.only == "sync-events":
            return 0 if ok else 1
        listing = bench_list(rounds)
        print(f"list API  {listing['rows']:,} jobs, page of 50: p50 {listing['p50_ms']:.1f} ms, p95 "
              f"{listing['p95_ms']:.1f} ms (target ≤ {TARGET_LIST_P95_MS:.0f} ms); queries per request "
              f"{listing['queries']} (constant); baseline bare ORM page p50 {listing['baseline_p50_ms']:.1f} ms → "
              f"ratio {listing['p50_ms'] / max(listing['baseline_p50_ms'], 1e-9):.1f}×")
        ok &= len(listing["queries"]) == 1 and listing["p95_ms"] <= TARGET_LIST_P95_MS
        why = bench_why(nodes, rounds)
        if why is None:
            print("why       skipped: the shared placement package is not available in this build")
        else:
            print(f"why       one {why['size']:,} × 8-GPU zone gang (fits no zone) on {why['nodes']:,} nodes, 500 "
                  f"admitted gangs, cold: p50 {why['p50_ms']:.1f} ms, p95 "
                  f"{why['p95_ms']:.1f} ms (target ≤ {TARGET_WHY_P95_MS:.0f} ms); baseline bare place (cold) p50 "
                  f"{why['baseline_p50_ms']:.1f} ms → ratio {why['p50_ms'] / max(why['baseline_p50_ms'], 1e-9):.1f}×")
            print(f"          “{why['message']}”; {why['holders']} holders named")
            ok &= why["p95_ms"] <= TARGET_WHY_P95_MS
        print(f"machine   load average {'/'.join(f'{v:.1f}' for v in os.getloadavg())} after the run")
    finally:
        for process in busy:
            process.terminate()
        if args.in_place:
            _clear_tracking_rows()
        else:
            _drop_database(url)
        tmp_dir.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
