"""Timing of the heartbeats, shared by the writers (Celery hooks, before Django is set up) and the readers."""

from datetime import timedelta

# The worker writes its heartbeat this often, and beat publishes its pulse this often.
HEARTBEAT_SECONDS = 10.0
# Three missed heartbeats and a process counts as gone.
ALIVE_WITHIN = timedelta(seconds=3 * HEARTBEAT_SECONDS)
# A sync queued longer than this while no worker is alive is reported as stuck.
QUEUED_TOO_LONG = timedelta(seconds=60)
