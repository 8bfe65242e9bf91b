"""Drop DRF's token table where an earlier release left it: its keys were stored in clear (0002 moved them)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("tokens", "0003_minted_by")]

    operations = [
        migrations.RunSQL('DROP TABLE IF EXISTS "authtoken_token"', migrations.RunSQL.noop),
    ]
