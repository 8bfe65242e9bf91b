from django.db import migrations, models


class Migration(migrations.Migration):
    """The row digest holds one hash per column group (the writer updates only the columns that changed). Rows keep
    their old digest until their next write, which then rewrites every column once."""

    dependencies = [
        ('jobs', '0012_drop_redundant_trainjob_indexes'),
    ]

    operations = [
        migrations.AlterField(
            model_name='trainjob',
            name='digest',
            field=models.CharField(blank=True, max_length=128),
        ),
    ]
