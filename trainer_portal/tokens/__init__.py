"""API tokens: issued with an expiry, listed and revoked by their owner; only a hash of each key is stored."""
