"""Worker and beat health: heartbeats written by the Celery processes, read by the cluster page and API."""
