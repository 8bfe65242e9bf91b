"""Tests of the placement preview (service, REST API, HTML panel)."""
