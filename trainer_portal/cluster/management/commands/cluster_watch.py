"""``manage.py cluster_watch``: the long-running watcher process (run one or more next to the Celery worker).

Serves every enabled cluster (or the shard ``--clusters a,b``): per cluster one informer hub with every registered
handler (the live topology snapshot, the admission tracker, drift), its own gateway and its own Lease (named
``<CLUSTER_WATCH_LEASE_NAME>-<cluster>``, in that cluster), so several processes split the clusters between them and
take over a cluster whose holder died. Each kind is listed and watched once per cluster, with resume from
resourceVersion, relist on 410 or a new store, a bounded check of silent streams and bounded reconnect backoff.
Handlers that need leadership are flushed only by the holder of their cluster's Lease (``--no-leader-election``
runs without one). Stops cleanly on SIGTERM/SIGINT. ``--once`` lists nodes and pods of the default cluster once,
saves the topology snapshot and exits (what the beat task does).
"""

from __future__ import annotations

import os
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from trainer_portal import liveness, watch_metrics
from trainer_portal.cluster import handlers, informers, leader, snapshots
from trainer_portal.cluster.models import Cluster
from trainer_portal.kube.errors import KubeError


def parse_kubeconfigs(values: list[str]) -> dict[str, str]:
    """Return ``{cluster: path}`` from ``NAME=PATH`` values. Raises CommandError naming the bad value."""
    result = {}
    for value in values or ():
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise CommandError(f"--kubeconfig {value!r}: write NAME=PATH, e.g. --kubeconfig gpu-west=/etc/kube/west")
        result[name.strip()] = path.strip()
    return result


def clusters_to_serve(names: str | None) -> list[Cluster]:
    """Return the enabled Cluster rows to serve (all, or those named in the comma-separated ``names``).

    Without a readable cluster table (a database not migrated yet) the default cluster of the settings is served
    as an unsaved row named "default". Raises CommandError for a name that is no enabled cluster.
    """
    try:
        rows = list(Cluster.objects.filter(enabled=True))
    except DatabaseError:
        rows = [Cluster(name="default", is_default=True)]
    if not names:
        return rows
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    known = {row.name: row for row in rows}
    missing = [name for name in wanted if name not in known]
    if missing:
        raise CommandError(f"--clusters: no enabled cluster named {', '.join(missing)} "
                           f"(known: {', '.join(sorted(known)) or 'none'})")
    return [known[name] for name in wanted]


def _env_port(name: str) -> int | None:
    """Return the port number in environment variable ``name`` (None when unset or empty). Raises CommandError for
    a value that is no port."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) > 65535:
        raise CommandError(f"{name}={raw!r}: write a port number from 0 to 65535 (0: a free port)")
    return int(raw)


class Command(BaseCommand):
    help = "Watch every cluster (or a shard) once per resource kind and feed every registered handler."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="list nodes and pods once, save, and exit")
        parser.add_argument("--clusters", default="",
                            help="comma-separated cluster names to serve (default: every enabled cluster)")
        parser.add_argument("--kubeconfig", action="append", default=[], metavar="NAME=PATH",
                            help="operator override: reach cluster NAME with the kubeconfig at PATH (repeatable)")
        parser.add_argument("--save-interval", type=float, default=snapshots.SAVE_INTERVAL_SECONDS,
                            help="minimum seconds between topology snapshot saves (default %(default)s)")
        parser.add_argument("--watch-timeout", type=int, default=300,
                            help="server-side length of each watch request in seconds (default %(default)s)")
        parser.add_argument("--idle-timeout", type=float, default=informers.IDLE_TIMEOUT_SECONDS,
                            help="seconds a watch may stay silent before the API server is checked "
                                 "(default %(default)s)")
        parser.add_argument("--no-leader-election", action="store_true",
                            help="do not take part in Lease leader election (handlers that need it never flush)")
        parser.add_argument("--metrics-port", type=int,
                            default=_env_port("TRAINER_PORTAL_WATCH_METRICS_PORT"),
                            help="serve this process's Prometheus metrics on this port (0: a free port, printed; "
                                 "default $TRAINER_PORTAL_WATCH_METRICS_PORT, else off)")
        parser.add_argument("--metrics-address", default=os.environ.get("TRAINER_PORTAL_WATCH_METRICS_ADDRESS",
                                                                        "0.0.0.0"),
                            help="address the metrics port listens on (default %(default)s)")

    def handle(self, *args, once: bool, clusters: str, kubeconfig: list[str], save_interval: float,
               watch_timeout: int, idle_timeout: float, no_leader_election: bool, metrics_port: int | None = None,
               metrics_address: str = "0.0.0.0", **options):
        if once:
            try:
                live = handlers.topology_refresh()
            except KubeError as exc:
                raise CommandError(exc.message)
            self.stdout.write(f"saved {live.snapshot.node_count} nodes, {live.snapshot.pod_count} pods "
                              f"to {snapshots.describe_store()}")
            return
        kubeconfigs = parse_kubeconfigs(kubeconfig)
        rows = clusters_to_serve(clusters)
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        factories = [
            (lambda: handlers.TopologySnapshotHandler(save_interval=save_interval))
            if getattr(factory, "name", "") == handlers.TopologySnapshotHandler.name else factory
            for factory in informers.registered()
        ]
        base_lease = getattr(settings, "CLUSTER_WATCH_LEASE_NAME", leader.DEFAULT_LEASE_NAME)
        hubs: list[informers.InformerHub] = []
        for row in rows:
            try:
                gateway = informers.gateway_factory(row, kubeconfigs=kubeconfigs)
                elector = None if no_leader_election else leader.LeaseElector(
                    gateway=gateway, name=leader.lease_name_for(base_lease, row.name))
                # Reconnects back off up to 10 s: a cluster back from an outage is relisted within seconds.
                hub = informers.InformerHub(gateway=gateway, factories=factories, elector=elector, cluster=row,
                                            timeout_seconds=watch_timeout, stop=stop, idle_timeout=idle_timeout,
                                            backoff_max=10.0)
            except KubeError as exc:
                # One unreachable cluster must not keep the others unwatched.
                self.stderr.write(f"cluster {row.name}: not watched: {exc.message}")
                continue
            names = ", ".join(handler.name for handler in hub.handlers) or "none"
            lease = f"; lease {elector.namespace}/{elector.name}" if elector is not None else ""
            self.stdout.write(f"cluster {row.name}: watching {gateway.host} for handlers: {names}{lease}; "
                              f"snapshot: {snapshots.describe_store()}")
            hubs.append(hub)
        if not hubs:
            raise CommandError("no cluster to watch")
        metrics_server = None
        if metrics_port is not None:
            try:
                metrics_server, port = watch_metrics.serve(lambda: hubs, port=metrics_port, address=metrics_address)
            except OSError as exc:
                raise CommandError(f"--metrics-port {metrics_port}: cannot listen on {metrics_address}: {exc}")
            self.stdout.write(f"metrics on http://{metrics_address}:{port}/metrics")
        self.stdout.flush()
        threads = [threading.Thread(target=hub.run, name=f"hub-{row.name}", daemon=True)
                   for hub, row in zip(hubs, [h.cluster for h in hubs], strict=True)]
        for thread in threads:
            thread.start()
        while not stop.wait(0.5):
            if not any(thread.is_alive() for thread in threads):
                break
            # Proof of life for the liveness probe (`process_alive cluster-watch`): every hub runs and none of its
            # watches is stuck. A cluster that is down does not stop it (its watches keep retrying).
            if all(thread.is_alive() for thread in threads) and not any(hub.wedged_watches() for hub in hubs):
                liveness.touch("cluster-watch")
        stop.set()
        for thread in threads:
            thread.join(30)
        if metrics_server is not None:
            metrics_server.shutdown()
        for hub in hubs:
            self.stdout.write(f"stopped: cluster {hub.cluster.name}: {hub.stats()}")
