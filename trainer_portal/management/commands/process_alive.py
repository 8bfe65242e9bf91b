"""``manage.py process_alive NAME --max-age S``: a container liveness probe (exit 0 alive, 1 wedged or never seen)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from trainer_portal import liveness


class Command(BaseCommand):
    help = "Exit 0 when the named process (worker, beat, cluster-watch) showed progress within --max-age seconds."

    def add_arguments(self, parser):
        parser.add_argument("process", choices=liveness.PROCESSES)
        parser.add_argument("--max-age", type=float, default=60.0, help="seconds (default %(default)s)")

    def handle(self, *args, process: str, max_age: float, **options):
        age = liveness.age_seconds(process)
        if age is None:
            raise CommandError(f"{process}: no sign of life yet ({liveness.alive_path(process)} is missing)")
        if age > max_age:
            raise CommandError(f"{process}: last progress {age:.0f} s ago (more than {max_age:.0f} s): wedged")
        self.stdout.write(f"{process}: alive, last progress {age:.1f} s ago")
