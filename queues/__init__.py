"""Kueue's queues as the portal reads them: ClusterQueues, LocalQueues, cohorts, flavors and pending positions."""
