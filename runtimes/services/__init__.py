"""Use cases of the policy app: the only code that writes rows or reaches the cluster."""
