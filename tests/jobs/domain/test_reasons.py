"""The list's short reason fits its column and says the gist; the full message stays elsewhere."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from jobs.domain import states as st
from jobs.domain.reasons import MAX_SHORT, short_reason

LONG = ("Unschedulable PodGroup gang-4f2a-node-8c1e cannot be scheduled (0 / 64 bound): 0/1024 nodes are available: "
        "512 Insufficient nvidia.com/gpu, 256 node(s) had untolerated taint {nvidia.com/gpu: NoSchedule}")


@pytest.mark.parametrize(("state", "code", "message", "short"), [
    ("unschedulable", "Unschedulable", LONG, "doesn't fit: not enough GPUs"),
    ("unschedulable", "Unschedulable", "PodGroup g cannot be scheduled (0 / 4 bound)", "doesn't fit the cluster"),
    ("gang-pending", "GangPending", "PodGroup g: 3 / 64 bound; waiting for the scheduler", "3 of 64 pods placed"),
    ("waiting-for-startup", "WaitingForStartupOrder",
     "node waits for dataset-initializer and model-initializer to complete; 1 of 2 done",
     "node waits for startup order (1 of 2 done)"),
    ("queued", "ExceedsMaxQuota", "request > maximum capacity (24 > 16)", "exceeds the queue's quota"),
    ("queued", "Pending", "waiting for quota in LocalQueue lq", "waiting for quota"),
    ("running", "Running", "64 / 64 gang pods running", "running"),
    ("failed", "DeadlineExceeded", "deadline", "deadline exceeded"),
    ("unknown", "", "", "unknown"),
])
def test_the_short_reason_says_the_gist(state, code, message, short):
    assert short_reason(state, code, message) == short


@given(state=hs.sampled_from(st.ALL_STATES), code=hs.text(max_size=80), message=hs.text(max_size=400))
def test_the_short_reason_always_fits_its_column(state, code, message):
    text = short_reason(state, code, message)
    assert 0 < len(text) <= MAX_SHORT
