"""The real-watcher fixtures (a demo sandbox, a migrated SQLite file, watcher processes) for every module here."""

from .test_tracker_process import cluster, database, demo_cluster, watchers  # noqa: F401
