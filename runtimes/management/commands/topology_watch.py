"""``manage.py topology_watch``: keep the live topology snapshot current (run it next to the Celery worker).

Lists nodes and pods once, then follows their watches (resume from resourceVersion, relist on 410, bounded
reconnect backoff) and saves the snapshot under ``VAR_DIR/topology/`` every couple of seconds when it changed.
Stops cleanly on SIGTERM/SIGINT. ``--once`` does a single full list and exits (what the beat task does).
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from runtimes import topology
from trainer_portal import kube


class Command(BaseCommand):
    help = "Keep the live topology snapshot (nodes + pods) current from cluster watches."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="list once, save, and exit")
        parser.add_argument("--save-interval", type=float, default=topology.SAVE_INTERVAL_SECONDS,
                            help="minimum seconds between snapshot saves (default %(default)s)")
        parser.add_argument("--watch-timeout", type=int, default=300,
                            help="server-side length of each watch request in seconds (default %(default)s)")

    def handle(self, *args, once: bool, save_interval: float, watch_timeout: int, **options):
        try:
            if once:
                live = topology.topology_refresh()
                self.stdout.write(f"saved {live.snapshot.node_count} nodes, {live.snapshot.pod_count} pods "
                                  f"to {topology.snapshot_path()}")
                return
            stop = threading.Event()
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
            watch = topology.TopologyWatch(save_interval=save_interval, timeout_seconds=watch_timeout, stop=stop)
        except kube.KubeError as exc:
            raise CommandError(exc.message)
        self.stdout.write(f"watching nodes and pods on {watch.gateway.host}; snapshot: {topology.snapshot_path()}")
        watch.run()
        self.stdout.write(f"stopped after {watch.saves} saves: {watch.stats()}")
