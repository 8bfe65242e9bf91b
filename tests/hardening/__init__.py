"""Hardening suites: a bad-input corpus, concurrent-write races and a schema-driven API fuzz run."""
