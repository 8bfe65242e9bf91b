"""Create the data-scientist role (a Django group): sees the TrainJobs of namespaces granted to its groups."""

from django.db import migrations

ROLE = "data-scientist"


def create_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=ROLE)


def delete_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=ROLE).delete()


class Migration(migrations.Migration):
    dependencies = [("jobs", "0001_trainjobs"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_role, delete_role)]
