"""What one tracker write stores: only the columns that changed, from the JSON text encoded once, on every
database the portal supports."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from jobs import services
from jobs.domain import states as st
from jobs.domain.records import JobRecord
from jobs.models import TrainJob, TrainJobTransition

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 12, 1, 8, tzinfo=dt.UTC)


def record(version: int = 1, **overrides) -> JobRecord:
    values = {"uid": "uid-1", "namespace": "team-a", "name": "llm", "runtime_kind": "ClusterTrainingRuntime",
              "runtime_name": "torch", "num_nodes": 2, "gpus_per_node": 8,
              "resources_per_node": {"nvidia.com/gpu": "8", "cpu": "32"}, "level": "zone", "queue_name": "",
              "creator": "ann", "priority_class": "", "state": st.GANG_PENDING, "reason": "GangPending",
              "message": "waiting for 2 nodes", "since": T0, "submitted_at": T0,
              "pod_groups": [{"name": "g", "minCount": 2, "bound": 0}],
              "pods": [{"name": f"p{i}", "phase": "Pending", "node": ""} for i in range(2)],
              "events": [{"reason": "Created", "message": "é ünïcode"}], "observed_version": str(version)}
    values.update(overrides)
    return JobRecord(**values)


def test_a_new_job_is_stored_with_every_column_and_its_first_transition():
    result = services.apply_records([record()], now=T0 + dt.timedelta(minutes=1))
    assert (result.created, result.transitions) == (1, 1)
    row = TrainJob.objects.get()
    assert (row.state, row.creator, row.num_nodes, row.resource_version) == (st.GANG_PENDING, "ann", 2, "1")
    assert row.resources_per_node == {"nvidia.com/gpu": "8", "cpu": "32"}
    assert row.events == [{"reason": "Created", "message": "é ünïcode"}]
    assert row.pods[1] == {"name": "p1", "phase": "Pending", "node": ""}
    assert row.since == T0 and row.gone_at is None and row.change_seq > 0
    transition = TrainJobTransition.objects.get()
    assert (transition.job_id, transition.from_state, transition.to_state, transition.seq) == \
        (row.id, "", st.GANG_PENDING, row.change_seq)


def test_only_the_columns_that_changed_are_written():
    services.apply_records([record()])
    # A column the next record leaves alone, changed behind the tracker's back: a write that rewrote every column
    # would put the record's value back.
    TrainJob.objects.update(events=[{"reason": "Drifted"}], creator="someone-else")
    pods = [{"name": f"p{i}", "phase": "Running", "node": f"n{i}"} for i in range(2)]
    result = services.apply_records([record(2, pods=pods)])
    assert (result.updated, result.transitions) == (1, 0)
    row = TrainJob.objects.get()
    assert row.pods == pods and row.resource_version == "2"
    assert row.events == [{"reason": "Drifted"}] and row.creator == "someone-else"


def test_a_state_change_writes_the_state_columns_and_a_transition():
    services.apply_records([record()], now=T0)
    later = T0 + dt.timedelta(minutes=5)
    result = services.apply_records([record(2, state=st.RUNNING, reason="Running", message="all pods running",
                                            since=later)], now=later + dt.timedelta(seconds=1))
    assert (result.updated, result.transitions) == (1, 1)
    row = TrainJob.objects.get()
    assert (row.state, row.reason, row.message, row.since, row.admitted_at) == \
        (st.RUNNING, "Running", "all pods running", later, later)
    assert list(TrainJobTransition.objects.values_list("from_state", "to_state")) == \
        [("", st.GANG_PENDING), (st.GANG_PENDING, st.RUNNING)]


def test_the_same_content_in_another_key_order_is_no_change():
    services.apply_records([record()])
    seq = TrainJob.objects.get().change_seq
    result = services.apply_records([record(2, resources_per_node={"cpu": "32", "nvidia.com/gpu": "8"})])
    assert (result.unchanged, result.updated) == (1, 0)
    assert TrainJob.objects.get().change_seq == seq


def test_a_job_marked_gone_and_seen_again_gets_its_state_back():
    services.apply_records([record()])
    assert services.mark_gone(["uid-1"]) == 1
    assert TrainJob.objects.get().state == st.UNKNOWN
    services.apply_records([record(2)])
    row = TrainJob.objects.get()
    assert (row.state, row.reason, row.message, row.gone_at) == \
        (st.GANG_PENDING, "GangPending", "waiting for 2 nodes", None)


def test_a_row_with_a_digest_of_the_earlier_form_is_rewritten_in_full():
    services.apply_records([record()])
    TrainJob.objects.update(digest="0" * 32, events=[], creator="stale")
    result = services.apply_records([record(2)])
    assert result.updated == 1
    row = TrainJob.objects.get()
    assert row.events == [{"reason": "Created", "message": "é ünïcode"}] and row.creator == "ann"
    assert len(row.digest) == services.DIGEST_LENGTH


def test_repaired_values_are_what_is_stored():
    dirty = record(creator="an\x00n", pods=[{"name": "p\x00", "phase": "half \ud800"}], kueue={"n": float("nan")})
    result = services.apply_records([dirty])
    assert result.sanitized == 1 and result.created == 1
    row = TrainJob.objects.get()
    assert row.creator == "ann"
    assert row.pods == [{"name": "p", "phase": "half \ufffd"}] and row.kueue == {"n": None}


def test_many_rows_with_different_changes_in_one_batch():
    now = timezone.now()
    services.apply_records([record(uid=f"uid-{i}", name=f"job-{i}") for i in range(30)], now=now)
    changed = []
    for i in range(30):
        if i % 3 == 0:
            changed.append(record(2, uid=f"uid-{i}", name=f"job-{i}", pods=[{"name": "only", "phase": "Running"}]))
        elif i % 3 == 1:
            changed.append(record(2, uid=f"uid-{i}", name=f"job-{i}", state=st.RUNNING, reason="Running"))
        else:
            changed.append(record(2, uid=f"uid-{i}", name=f"job-{i}"))  # nothing shown changes
    result = services.apply_records(changed, now=now)
    assert (result.updated, result.unchanged, result.transitions) == (20, 10, 10)
    rows = {row.name: row for row in TrainJob.objects.all()}
    assert rows["job-0"].pods == [{"name": "only", "phase": "Running"}] and rows["job-0"].state == st.GANG_PENDING
    assert rows["job-1"].state == st.RUNNING and rows["job-1"].pods == record().pods
    assert rows["job-2"].resource_version == "1"  # unchanged rows are not written at all
    seqs = [rows[f"job-{i}"].change_seq for i in range(30) if i % 3 != 2]
    assert len(set(seqs)) == len(seqs)
