"""Cluster-owned rows always have a cluster (the default one when code names none); TrainJob UIDs are unique per
cluster; grants are unique per group, namespace and cluster (one all-clusters grant per group and namespace)."""

import django.db.models.deletion
from django.db import migrations, models

import trainer_portal.cluster.models


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0007_to_default_cluster"),
    ]

    operations = [
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
