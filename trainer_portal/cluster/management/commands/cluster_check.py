"""``manage.py cluster_check [--cluster NAME]``: probe clusters now and store what was found (what the worker's
``cluster_check_task`` does every minute)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from trainer_portal.cluster import status
from trainer_portal.cluster.models import Cluster


class Command(BaseCommand):
    help = "Probe every enabled cluster (or one) and store its connection status and scheduling facts."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", default="", help="only this cluster (default: every enabled cluster)")

    def handle(self, *args, cluster: str, **options):
        clusters = Cluster.objects.filter(enabled=True)
        if cluster:
            clusters = clusters.filter(name=cluster)
            if not clusters.exists():
                raise CommandError(f"no enabled cluster named {cluster!r}")
        for row in clusters:
            found = status.check_cluster(row)
            state = "reachable" if found["reachable"] else f"unreachable: {found['error']}"
            self.stdout.write(f"{row.name}: {state} ({found['elapsed_ms']} ms)")
