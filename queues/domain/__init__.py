"""Pure code over Kueue objects (no Django, no kubernetes client): what a queue holds and where a workload waits."""
