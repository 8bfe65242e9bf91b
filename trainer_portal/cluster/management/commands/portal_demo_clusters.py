"""``manage.py portal_demo_clusters``: register the embedded stack's sandbox clusters (``make run``).

Names the default cluster (the migrated single cluster keeps its row, so its TrainJobs and policies stay with it;
only a row still called "default" is renamed) and adds the other sandbox clusters as enabled rows that store their
kubeconfig encrypted (``--add NAME=PATH``), so the worker, the web tier and ``cluster_watch`` all reach them as they
would a real registered cluster. Idempotent (a changed kubeconfig is stored again); embedded mode only.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from trainer_portal.cluster.connections import decrypt_kubeconfig, encrypt_kubeconfig
from trainer_portal.cluster.models import Cluster, ConnectionKind

DISPLAY = {"gpu-east": "GPU East (sandbox, 64 nodes)", "gpu-west": "GPU West (sandbox, 24 nodes)"}


class Command(BaseCommand):
    help = "Register the embedded stack's sandbox clusters as Cluster rows (the default one named --default)."

    def add_arguments(self, parser):
        parser.add_argument("--default", required=True, help="name of the default cluster")
        parser.add_argument("--add", action="append", default=[], metavar="NAME[=KUBECONFIG]",
                            help="another cluster and the kubeconfig file to store for it (repeatable)")

    def handle(self, *args, default: str, add: list[str], **options):
        if not settings.EMBEDDED:
            raise CommandError("portal_demo_clusters only runs in embedded mode; add clusters on the Clusters page.")
        with transaction.atomic():
            row = Cluster.objects.select_for_update().filter(is_default=True).first()
            if row is None:
                row = Cluster.objects.create(name=default, is_default=True)
            elif row.name == "default" and not Cluster.objects.filter(name=default).exists():
                row.name = default
            if not row.display_name:
                row.display_name = DISPLAY.get(row.name, "")
            row.save()
            for entry in add:
                name, _, path = entry.partition("=")
                other, _ = Cluster.objects.get_or_create(name=name, defaults={"display_name": DISPLAY.get(name, ""),
                                                                              "enabled": True})
                if path:
                    _store_kubeconfig(other, path)
        names = ", ".join(Cluster.objects.values_list("name", flat=True))
        self.stdout.write(f"clusters: {names} (default {row.name})")


def _store_kubeconfig(cluster: Cluster, path: str) -> None:
    """Store the kubeconfig at ``path`` on ``cluster`` (encrypted), bumping its version when it changed.

    Raises CommandError when the file cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CommandError(f"cannot read the kubeconfig of {cluster.name}: {exc}") from None
    try:
        unchanged = (cluster.connection == ConnectionKind.KUBECONFIG
                     and decrypt_kubeconfig(cluster.kubeconfig_encrypted) == text)
    except Exception:
        unchanged = False
    if unchanged:
        return
    cluster.connection = ConnectionKind.KUBECONFIG
    cluster.kubeconfig_encrypted = encrypt_kubeconfig(text)
    cluster.version += 1
    cluster.save()
