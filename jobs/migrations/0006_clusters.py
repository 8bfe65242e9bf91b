"""TrainJobs, transitions, tracker status and namespace grants belong to a cluster.

Every existing row moves to the default cluster (created by cluster 0001 from today's settings): TrainJob UIDs
become unique per cluster, the single TrackerStatus row becomes the default cluster's, and every existing grant
becomes a grant on the default cluster (the only cluster it could have meant).
"""

import django.db.models.deletion
from django.db import migrations, models

import trainer_portal.cluster.models


def to_default_cluster(apps, schema_editor):
    Cluster = apps.get_model("cluster", "Cluster")
    default = Cluster.objects.filter(is_default=True).first()
    if default is None:  # cluster 0001 always creates one; a database edited by hand may lack it
        default = Cluster.objects.create(name="default", connection="settings", is_default=True)
    for name in ("TrainJob", "TrainJobTransition", "TrackerStatus", "NamespaceGrant"):
        apps.get_model("jobs", name).objects.filter(cluster__isnull=True).update(cluster=default)


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
        migrations.RunPython(to_default_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="trainjob",
            name="cluster",
            field=models.ForeignKey(default=trainer_portal.cluster.models.default_cluster_id,
                                    on_delete=django.db.models.deletion.CASCADE, related_name="trainjobs",
                                    to="cluster.cluster"),
        ),
        migrations.AlterField(
            model_name="trainjobtransition",
            name="cluster",
            field=models.ForeignKey(default=trainer_portal.cluster.models.default_cluster_id,
                                    on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="cluster.cluster"),
        ),
        migrations.AlterField(
            model_name="trackerstatus",
            name="cluster",
            field=models.OneToOneField(default=trainer_portal.cluster.models.default_cluster_id,
                                       on_delete=django.db.models.deletion.CASCADE, related_name="tracker_status",
                                       to="cluster.cluster"),
        ),
        migrations.AlterField(
            model_name="trainjob",
            name="uid",
            field=models.CharField(max_length=64),
        ),
        migrations.AddConstraint(
            model_name="trainjob",
            constraint=models.UniqueConstraint(fields=("cluster", "uid"), name="jobs_tj_cluster_uid"),
        ),
        migrations.AddIndex(
            model_name="trainjob",
            index=models.Index(fields=["cluster", "namespace", "name"], name="jobs_tj_cl_ns_name"),
        ),
        migrations.AddIndex(
            model_name="trainjobtransition",
            index=models.Index(fields=["cluster", "to_state", "at"], name="jobs_tr_cl_state_at"),
        ),
        migrations.RemoveConstraint(
            model_name="namespacegrant",
            name="jobs_grant_unique",
        ),
        migrations.AddConstraint(
            model_name="namespacegrant",
            constraint=models.UniqueConstraint(fields=("group", "namespace", "cluster"),
                                               name="jobs_grant_unique_cluster"),
        ),
        migrations.AddConstraint(
            model_name="namespacegrant",
            constraint=models.UniqueConstraint(condition=models.Q(("cluster__isnull", True)),
                                               fields=("group", "namespace"), name="jobs_grant_unique_all_clusters"),
        ),
    ]
