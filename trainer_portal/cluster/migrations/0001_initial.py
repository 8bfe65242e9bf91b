import os
import re

import django.core.validators
from django.db import migrations, models


def default_cluster_name() -> str:
    """Name the migrated single cluster from today's settings: its kubeconfig context, else ``default``."""
    context = os.environ.get("TRAINER_PORTAL_KUBE_CONTEXT", "").strip().lower()
    name = re.sub(r"[^a-z0-9-]+", "-", context).strip("-")[:63].strip("-")
    return name or "default"


def create_default_cluster(apps, schema_editor):
    Cluster = apps.get_model("cluster", "Cluster")
    if not Cluster.objects.exists():
        Cluster.objects.create(name=default_cluster_name(), display_name="", connection="settings", is_default=True)


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Cluster",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(help_text="DNS-1123 label; immutable (it names Leases, metric labels and URLs).", max_length=63, unique=True, validators=[django.core.validators.RegexValidator("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")])),
                ("display_name", models.CharField(blank=True, max_length=100)),
                ("connection", models.CharField(choices=[("settings", "From the portal's settings (TRAINER_PORTAL_KUBECONFIG / _IN_CLUSTER)"), ("kubeconfig", "Kubeconfig stored encrypted in the portal"), ("secret", "Kubeconfig in a Kubernetes Secret"), ("in_cluster", "In-cluster service account")], default="settings", max_length=16)),
                ("kubeconfig_encrypted", models.TextField(blank=True)),
                ("kubeconfig_context", models.CharField(blank=True, max_length=253)),
                ("secret_ref", models.CharField(blank=True, max_length=400)),
                ("block_label_key", models.CharField(blank=True, max_length=317)),
                ("is_default", models.BooleanField(default=False)),
                ("enabled", models.BooleanField(default=True, help_text="A disabled cluster is neither watched nor synced to.")),
                ("version", models.PositiveIntegerField(default=1, help_text="Optimistic-concurrency counter (409 on mismatch).")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["-is_default", "name"],
                "constraints": [models.UniqueConstraint(condition=models.Q(("is_default", True)), fields=("is_default",), name="cluster_one_default")],
            },
        ),
        migrations.RunPython(create_default_cluster, migrations.RunPython.noop),
    ]
