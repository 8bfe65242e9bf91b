"""Sync state per (policy, cluster): the eleven sync fields of a policy move to one `PolicySync` row on the default
cluster, and policies gain their target clusters (none chosen = every enabled cluster)."""

from django.db import migrations, models
import django.db.models.deletion

SYNC_FIELDS = (
    "sync_state", "sync_requested_revision", "applied_revision", "applied_resource_version", "applied_generation",
    "last_synced_at", "last_sync_error", "sync_error_fields", "drift_diff", "cluster_state",
    "sync_startup_deadlock_confirmed",
)


def _default_cluster(apps):
    Cluster = apps.get_model("cluster", "Cluster")
    cluster = Cluster.objects.filter(is_default=True).first()
    if cluster is None:  # cluster/0001 creates it; a database edited by hand may lack it
        cluster = Cluster.objects.create(name="default", connection="settings", is_default=True)
    return cluster


def to_policy_sync(apps, schema_editor):
    RuntimePolicy = apps.get_model("runtimes", "RuntimePolicy")
    PolicySync = apps.get_model("runtimes", "PolicySync")
    cluster = _default_cluster(apps)
    rows = RuntimePolicy.objects.order_by("pk").values("pk", *SYNC_FIELDS)
    batch = [PolicySync(policy_id=row.pop("pk"), cluster_id=cluster.pk, **row) for row in rows.iterator()]
    PolicySync.objects.bulk_create(batch, batch_size=500)


def from_policy_sync(apps, schema_editor):
    RuntimePolicy = apps.get_model("runtimes", "RuntimePolicy")
    PolicySync = apps.get_model("runtimes", "PolicySync")
    cluster = _default_cluster(apps)
    for row in PolicySync.objects.filter(cluster=cluster).values("policy_id", *SYNC_FIELDS).iterator():
        RuntimePolicy.objects.filter(pk=row.pop("policy_id")).update(**row)


class Migration(migrations.Migration):

    dependencies = [
        ("cluster", "0001_initial"),
        ("runtimes", "0004_cluster_state"),
    ]

    operations = [
        migrations.CreateModel(
            name="PolicySync",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sync_state", models.CharField(choices=[("draft", "Draft"), ("queued", "Queued"), ("syncing", "Syncing"), ("synced", "Synced"), ("failed", "Failed"), ("drifted", "Drifted")], default="draft", max_length=16)),
                ("sync_requested_revision", models.PositiveIntegerField(blank=True, null=True)),
                ("applied_revision", models.PositiveIntegerField(blank=True, null=True)),
                ("applied_resource_version", models.CharField(blank=True, max_length=64)),
                ("applied_generation", models.BigIntegerField(blank=True, null=True)),
                ("last_synced_at", models.DateTimeField(blank=True, null=True)),
                ("last_sync_error", models.TextField(blank=True)),
                ("sync_error_fields", models.JSONField(blank=True, default=list)),
                ("drift_diff", models.TextField(blank=True)),
                ("cluster_state", models.CharField(choices=[("not_applied", "Not applied"), ("matches", "Matches"), ("drifted", "Drifted"), ("missing", "Missing on the cluster")], default="not_applied", help_text="What the cluster holds, as last seen by an apply or a drift check.", max_length=16)),
                ("sync_startup_deadlock_confirmed", models.BooleanField(default=False, help_text="The last apply request confirmed that a gang of this policy never reaches minCount (a dependsOn pair inside one gang).")),
                ("cluster", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="policy_syncs", to="cluster.cluster")),
                ("policy", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="syncs", to="runtimes.runtimepolicy")),
            ],
            options={
                "ordering": ["policy", "cluster"],
                "indexes": [models.Index(fields=["sync_state"], name="runtimes_policysync_state")],
                "constraints": [models.UniqueConstraint(fields=("policy", "cluster"), name="runtimes_policysync_unique")],
            },
        ),
        migrations.AddField(
            model_name="runtimepolicy",
            name="target_clusters",
            field=models.ManyToManyField(blank=True, help_text="The clusters this policy is synced to; empty = every enabled cluster.", related_name="targeted_policies", to="cluster.cluster"),
        ),
        migrations.RunPython(to_policy_sync, from_policy_sync),
        migrations.RemoveIndex(model_name="runtimepolicy", name="runtimes_policy_sync_state"),
        *[migrations.RemoveField(model_name="runtimepolicy", name=name) for name in SYNC_FIELDS],
    ]
