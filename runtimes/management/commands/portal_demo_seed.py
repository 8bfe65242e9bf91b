"""Embedded-mode onboarding: adopt the ClusterTrainingRuntimes already on the (sandbox) cluster as policies."""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from runtimes.services import sync
from trainer_portal import kube


class Command(BaseCommand):
    help = "Adopt every ClusterTrainingRuntime on the configured cluster (waits up to --wait seconds for some)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--wait", type=float, default=15.0, help="seconds to wait for runtimes to appear")

    def handle(self, *args, wait: float, **options) -> None:
        if not settings.EMBEDDED:
            raise CommandError("portal_demo_seed only runs in embedded mode; use Adopt on the Cluster page instead.")
        actor = get_user_model().objects.filter(username="admin").first()
        deadline = time.monotonic() + wait
        while True:
            # The sandbox's generator creates the demo runtimes a moment after the API server is ready.
            try:
                result = sync.policies_adopt(actor=actor)
            except kube.KubeError as exc:
                result, error = None, exc
            else:
                error = None
                if result.created or result.unchanged or result.differing or time.monotonic() > deadline:
                    break
            if time.monotonic() > deadline:
                raise CommandError(f"could not adopt runtimes from the cluster: {error}")
            time.sleep(0.5)
        self.stdout.write(
            f"Adopted {len(result.created)} runtime(s) from the cluster "
            f"({len(result.unchanged)} already present, {len(result.failed)} invalid)."
        )
