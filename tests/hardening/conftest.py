"""Fixtures of the hardening suites: clients that report a server error as a response, and a stored-state digest."""

from __future__ import annotations

import hashlib
import json

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def admin_api(alice) -> APIClient:
    """An API client logged in as alice (platform admin); a server error comes back as a 500 response."""
    client = APIClient(raise_request_exception=False)
    client.force_login(alice)
    return client


@pytest.fixture
def anonymous_api() -> APIClient:
    return APIClient(raise_request_exception=False)


@pytest.fixture
def admin_html(alice):
    """A browser-like client logged in as alice; a server error comes back as a 500 response."""
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(alice)
    return client


def stored_digest() -> str:
    """Return a digest of everything a request could change: policies (sync fields too) and revisions."""
    from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy

    policies = list(RuntimePolicy.objects.order_by("name").values_list("name", "version", "manifest"))
    syncs = list(
        PolicySync.objects.order_by("policy__name", "cluster__name").values_list(
            "policy__name", "cluster__name", "sync_state", "applied_revision", "sync_requested_revision", "drift_diff"
        )
    )
    revisions = list(
        PolicyRevision.objects.order_by("policy__name", "number").values_list(
            "policy__name", "number", "message", "manifest"
        )
    )
    return hashlib.sha256(json.dumps([policies, syncs, revisions], default=str, sort_keys=True).encode()).hexdigest()
