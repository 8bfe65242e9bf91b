"""Every existing TrainJob, transition, tracker status and grant belongs to the default cluster (created by cluster
0001 from today's settings): the single TrackerStatus row becomes the default cluster's, and every existing grant a
grant on the default cluster — the only cluster it could have meant.
"""

from django.db import migrations


def to_default_cluster(apps, schema_editor):
    Cluster = apps.get_model("cluster", "Cluster")
    default = Cluster.objects.filter(is_default=True).first()
    if default is None:  # cluster 0001 always creates one; a database edited by hand may lack it
        default = Cluster.objects.create(name="default", connection="settings", is_default=True)
    for name in ("TrainJob", "TrainJobTransition", "TrackerStatus", "NamespaceGrant"):
        apps.get_model("jobs", name).objects.filter(cluster__isnull=True).update(cluster=default)


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0006_clusters"),
    ]

    operations = [
        migrations.RunPython(to_default_cluster, migrations.RunPython.noop),
    ]
