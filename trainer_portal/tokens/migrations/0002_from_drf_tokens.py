"""Carry the earlier non-expiring DRF tokens over: they keep working until the default lifetime from now.

DRF's token app is no longer installed (its ``drf_create_token`` made tokens the portal refuses): on a database
that never had it there is nothing to carry over, and 0004 drops its table where it is left.
"""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone


def forward(apps, schema_editor):
    try:
        Token = apps.get_model("authtoken", "Token")
    except LookupError:
        return
    ApiToken = apps.get_model("tokens", "ApiToken")
    expires = timezone.now() + timedelta(days=settings.API_TOKEN_LIFETIME_DAYS)
    ApiToken.objects.bulk_create(
        ApiToken(user_id=old.user_id, name="Earlier API token", key_hash=hashlib.sha256(old.key.encode()).hexdigest(),
                 prefix=old.key[:10], expires_at=expires)
        for old in Token.objects.all()
    )
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("tokens", "0001_initial")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
