"""``manage.py cluster_watch``: the one long-running watcher process (run one or more next to the Celery worker).

Runs an informer hub with every registered handler (the live topology snapshot today; apps add theirs from
``AppConfig.ready()``): each resource kind is listed and watched once, with resume from resourceVersion, relist on
410 and bounded reconnect backoff. Handlers that need leadership are flushed only in the process holding the
Lease (``--no-leader-election`` runs without one). Stops cleanly on SIGTERM/SIGINT. ``--once`` lists nodes and
pods once, saves the topology snapshot and exits (what the beat task does).
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from trainer_portal.cluster import handlers, informers, leader, snapshots
from trainer_portal.kube.errors import KubeError


class Command(BaseCommand):
    help = "Watch the cluster once per resource kind and feed every registered handler (topology snapshot, …)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="list nodes and pods once, save, and exit")
        parser.add_argument("--save-interval", type=float, default=snapshots.SAVE_INTERVAL_SECONDS,
                            help="minimum seconds between topology snapshot saves (default %(default)s)")
        parser.add_argument("--watch-timeout", type=int, default=300,
                            help="server-side length of each watch request in seconds (default %(default)s)")
        parser.add_argument("--no-leader-election", action="store_true",
                            help="do not take part in Lease leader election (handlers that need it never flush)")

    def handle(self, *args, once: bool, save_interval: float, watch_timeout: int, no_leader_election: bool,
               **options):
        try:
            if once:
                live = handlers.topology_refresh()
                self.stdout.write(f"saved {live.snapshot.node_count} nodes, {live.snapshot.pod_count} pods "
                                  f"to {snapshots.describe_store()}")
                return
            stop = threading.Event()
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
            factories = [
                (lambda: handlers.TopologySnapshotHandler(save_interval=save_interval))
                if getattr(factory, "name", "") == handlers.TopologySnapshotHandler.name else factory
                for factory in informers.registered()
            ]
            elector = None if no_leader_election else leader.LeaseElector()
            hub = informers.InformerHub(factories=factories, elector=elector, timeout_seconds=watch_timeout,
                                        stop=stop)
        except KubeError as exc:
            raise CommandError(exc.message)
        names = ", ".join(handler.name for handler in hub.handlers) or "none"
        self.stdout.write(f"watching {hub.gateway.host} for handlers: {names}; snapshot: {snapshots.describe_store()}")
        self.stdout.flush()
        hub.run()
        self.stdout.write(f"stopped: {hub.stats()}")
