"""Topology-aware gang placement: cluster snapshot, Kueue-TAS-style placement engine and explanations."""
