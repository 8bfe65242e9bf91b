"""Sandbox API server throughput: simple GETs/s (keep-alive), 10 concurrent watchers, bulk load of nodes and
pods, list latency and server memory.

Baseline (same run): `GET /healthz` on the same server, i.e. the HTTP stack without any API logic; the ratio
shows what the Kubernetes semantics cost on top of it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from sandbox.testing import SandboxProcess

POD_TEMPLATE = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"labels": {"app": "bench", "jobset.sigs.k8s.io/jobset-name": "job"}},
    "spec": {"containers": [{"name": "node", "image": "pytorch", "resources": {"requests": {"nvidia.com/gpu": "8",
                                                                                             "cpu": "32"}}}],
             "schedulingGroup": {"podGroupName": "job-pg"}},
}


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i:05d}", "labels": {"topology.kubernetes.io/zone": f"z{i % 4}",
                                                              "kubernetes.io/hostname": f"node-{i:05d}"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


class Conn:
    """A keep-alive JSON client on one connection."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        return response.status, response.read()


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def timed(n: int, call: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def rss_mib(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def bench_gets(url: str, n: int) -> None:
    conn = Conn(url)
    code, _ = conn.request("POST", "/api/v1/namespaces/default/pods", {**POD_TEMPLATE, "metadata": {"name": "get-me"}})
    assert code == 201, code
    for path in ("/healthz", "/api/v1/namespaces/default/pods/get-me"):
        timed(200, lambda p=path: conn.request("GET", p))  # warm-up
    base = timed(n, lambda: conn.request("GET", "/healthz"))
    gets = timed(n, lambda: conn.request("GET", "/api/v1/namespaces/default/pods/get-me"))
    bp50, bp95 = percentiles(base)
    p50, p95 = percentiles(gets)
    print(f"{'GET /healthz (baseline)':40s} p50 {bp50 * 1e3:6.3f} ms  p95 {bp95 * 1e3:6.3f} ms  "
          f"{n / sum(base):8.0f} req/s")
    print(f"{'GET pod (1 keep-alive client)':40s} p50 {p50 * 1e3:6.3f} ms  p95 {p95 * 1e3:6.3f} ms  "
          f"{n / sum(gets):8.0f} req/s  ratio vs baseline p50 x{p50 / bp50:.2f}")
    # Two client threads: the 2-core machine is shared by client and server.
    done = []

    def worker() -> None:
        c = Conn(url)
        start = time.perf_counter()
        for _ in range(n // 2):
            c.request("GET", "/api/v1/namespaces/default/pods/get-me")
        done.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{'GET pod (2 keep-alive clients)':40s} {n / (time.perf_counter() - start):8.0f} req/s total")


def bench_watchers(url: str, events: int, watchers: int = 10) -> None:
    conn = Conn(url)
    _, body = conn.request("GET", "/api/v1/namespaces/default/pods?limit=1")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    parts = urlsplit(url)
    sent_at: dict[str, float] = {}
    lags: list[float] = []
    counts = [0] * watchers
    lock = threading.Lock()
    ready = threading.Barrier(watchers + 1)

    def watch(i: int) -> None:
        c = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        c.request("GET", f"/api/v1/namespaces/bench-watch/pods?watch=1&resourceVersion={rv}&timeoutSeconds=120")
        response = c.getresponse()
        ready.wait()
        while counts[i] < events:
            line = response.readline()
            if not line:
                break
            event = json.loads(line)
            name = event["object"]["metadata"]["name"]
            with lock:
                lags.append(time.perf_counter() - sent_at[name])
            counts[i] += 1
        c.close()

    conn.request("POST", "/api/v1/namespaces", {"metadata": {"name": "bench-watch"}})
    threads = [threading.Thread(target=watch, args=(i,)) for i in range(watchers)]
    for t in threads:
        t.start()
    ready.wait()
    start = time.perf_counter()
    for i in range(events):
        name = f"w-{i}"
        sent_at[name] = time.perf_counter()
        conn.request("POST", "/api/v1/namespaces/bench-watch/pods", {**POD_TEMPLATE, "metadata": {"name": name}})
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    p50, p95 = percentiles(lags)
    print(f"{f'{watchers} watchers x {events} events':40s} p50 {p50 * 1e3:6.3f} ms  p95 {p95 * 1e3:6.3f} ms  "
          f"delivered {sum(counts)}/{watchers * events} in {elapsed:.2f} s")


def load(url: str, kind: str, items: list[tuple[str, dict]], threads: int = 4) -> float:
    chunks = [items[i::threads] for i in range(threads)]
    errors: list[int] = []

    def worker(chunk: list[tuple[str, dict]]) -> None:
        c = Conn(url)
        for path, body in chunk:
            code, _ = c.request("POST", path, body)
            if code != 201:
                errors.append(code)

    workers = [threading.Thread(target=worker, args=(chunk,)) for chunk in chunks]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    assert not errors, errors[:5]
    print(f"{'load ' + kind:40s} {len(items):7d} objects in {elapsed:6.1f} s  {len(items) / elapsed:8.0f} objects/s")
    return elapsed


def bench_scale(proc: SandboxProcess, nodes: int, pods: int, namespaces: int = 10) -> None:
    url = proc.url
    conn = Conn(url)
    before = rss_mib(proc.pid)
    load(url, "nodes", [("/api/v1/nodes", node(i)) for i in range(nodes)])
    for ns in range(namespaces):
        conn.request("POST", "/api/v1/namespaces", {"metadata": {"name": f"team-{ns}"}})
    items = []
    for i in range(pods):
        body = {**POD_TEMPLATE, "metadata": {"name": f"pod-{i:06d}", "labels": {"app": "bench", "idx": str(i % 100)}}}
        items.append((f"/api/v1/namespaces/team-{i % namespaces}/pods", body))
    load(url, "pods", items)
    after = rss_mib(proc.pid)
    node_lists = timed(5, lambda: conn.request("GET", "/api/v1/nodes"))
    p50, p95 = percentiles(node_lists)
    print(f"{f'list {nodes} nodes':40s} p50 {p50 * 1e3:6.1f} ms  p95 {p95 * 1e3:6.1f} ms")
    pod_lists = timed(3, lambda: conn.request("GET", "/api/v1/pods"))
    p50, p95 = percentiles(pod_lists)
    print(f"{f'list {pods} pods (all namespaces)':40s} p50 {p50 * 1e3:6.1f} ms  p95 {p95 * 1e3:6.1f} ms")
    selected = timed(5, lambda: conn.request("GET", "/api/v1/namespaces/team-1/pods?labelSelector=idx%3D1"))
    p50, p95 = percentiles(selected)
    print(f"{'list pods by namespace + label':40s} p50 {p50 * 1e3:6.1f} ms  p95 {p95 * 1e3:6.1f} ms")
    gets = timed(500, lambda: conn.request("GET", "/api/v1/namespaces/team-3/pods/pod-000003"))
    p50, p95 = percentiles(gets)
    print(f"{'GET pod with store loaded':40s} p50 {p50 * 1e3:6.3f} ms  p95 {p95 * 1e3:6.3f} ms  "
          f"{len(gets) / sum(gets):8.0f} req/s")
    print(f"{'server RSS':40s} {before:7.0f} MiB before load, {after:7.0f} MiB after "
          f"({(after - before) * 1024 / max(1, nodes + pods):.1f} KiB/object)")


def main(argv: list[str] | None = None) -> int:
    """Runs the sandbox API benchmark; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sandbox_api")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000)
    args, _ = parser.parse_known_args(argv)
    gets, events = (1000, 50) if args.quick else (5000, 300)
    nodes, pods = (500, 2000) if args.quick else (args.nodes, args.pods)
    with SandboxProcess(topology="none", controllers=False, extra_args=["--history", "200000"]) as proc:
        bench_gets(proc.url, gets)
        bench_watchers(proc.url, events)
        bench_scale(proc, nodes, pods)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
