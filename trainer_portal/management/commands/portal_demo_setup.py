"""Create the embedded-mode demo accounts and print their credentials (refuses to run in production mode)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from trainer_portal.roles import PLATFORM_ADMIN, VIEWER


class Command(BaseCommand):
    help = "Create (or reset) the demo accounts 'admin' (platform admin) and 'viewer' and print their passwords."

    def handle(self, *args, **options) -> None:
        if not settings.EMBEDDED:
            raise CommandError("portal_demo_setup only runs in embedded mode; use createsuperuser in production.")
        credentials_file = settings.VAR_DIR / "demo-credentials.txt"
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        # Keep the passwords stable across restarts of the demo so open browser sessions stay valid.
        stored = {}
        if credentials_file.exists():
            for line in credentials_file.read_text().splitlines():
                name, _, password = line.partition(" ")
                stored[name] = password
        lines = []
        # Portal roles only: "admin" is a platform admin, not a Django superuser (no /admin/, no bypass of roles).
        for username, group_name in (("admin", PLATFORM_ADMIN), ("viewer", VIEWER)):
            password = stored.get(username) or secrets.token_urlsafe(12)
            user, _ = get_user_model().objects.get_or_create(username=username)
            user.is_superuser = False
            user.is_staff = False
            user.set_password(password)
            user.save()
            user.groups.add(Group.objects.get(name=group_name))
            lines.append(f"{username} {password}")
        credentials_file.write_text("\n".join(lines) + "\n")
        credentials_file.chmod(0o600)
        self.stdout.write("Demo accounts (embedded mode only):")
        for line in lines:
            username, password = line.split(" ")
            self.stdout.write(f"  user: {username:<7} password: {password}")
