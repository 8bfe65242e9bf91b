"""TrainJobs, transitions, tracker status and namespace grants get a cluster (empty until 0007 fills it).

Three migrations, each in its own transaction: PostgreSQL refuses to ALTER a table with pending deferred
foreign-key checks, which filling the column and constraining it in one transaction would leave.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("cluster", "0001_initial"),
        ("jobs", "0005_live_order_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="trainjob",
            name="cluster",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="trainjobs",
                                    to="cluster.cluster"),
        ),
        migrations.AddField(
            model_name="trainjobtransition",
            name="cluster",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="cluster.cluster"),
        ),
        migrations.AddField(
            model_name="trackerstatus",
            name="cluster",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="cluster.cluster"),
        ),
        migrations.AddField(
            model_name="namespacegrant",
            name="cluster",
            field=models.ForeignKey(blank=True, help_text="Empty: the namespace on every cluster.", null=True,
                                    on_delete=django.db.models.deletion.CASCADE, related_name="namespace_grants",
                                    to="cluster.cluster"),
        ),
    ]
