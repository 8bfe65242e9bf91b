"""The answer joined to Kueue's queues: quota and position in one sentence while quota holds the job, the stored
answer (startup order, placement) once it is reserved, Kueue's own words when no provider knows the queue."""

from __future__ import annotations

import pytest

from jobs.domain import states as st
from jobs.domain.answer import amount, answer_of, binding_line, queue_place
from jobs.domain.reasons import MAX_SHORT
from trainer_portal.jobfacts import QueueFacts, QuotaLine

GPU = "nvidia.com/gpu"
KUEUE_TEXT = "couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in flavor h100"


def _facts(requested=32, nominal=64, used=48, borrowable=8, position=3, pending=7, where="LocalQueue", extra=()):
    return QueueFacts("lq-a", "cq-research", position, where, pending, "visibility-api" if position else "unknown",
                      (QuotaLine(GPU, "h100", requested, nominal, used, borrowable), *extra))


def test_waiting_for_quota_says_the_queue_the_numbers_and_the_place_in_line():
    answer = answer_of(st.QUEUED, "WaitingForQuota", KUEUE_TEXT, _facts(), namespace="team-a")

    assert answer.message == ("Waiting for quota in cq-research: needs 32 GPUs, 16 free of 64 (48 in use, 8 "
                              "borrowable from the cohort); position 3 of 7 in team-a's queue. Kueue: " + KUEUE_TEXT)
    assert answer.reason == "waiting for quota · #3 of 7"
    assert answer.queue_line == "position 3 of 7 in team-a's queue"


def test_over_the_maximum_is_inadmissible_with_what_the_queue_can_ever_hold():
    answer = answer_of(st.INADMISSIBLE, "ExceedsMaxQuota", "request > maximum capacity (24 > 16)",
                       _facts(requested=24, nominal=16, used=0, borrowable=0, position=None, pending=None))

    assert answer.message.startswith("Cannot be admitted in cq-research as configured: needs 24 GPUs, the queue "
                                     "holds at most 16 (16 nominal, nothing borrowable from the cohort)")
    assert answer.message.endswith("Kueue: request > maximum capacity (24 > 16)")
    assert answer.reason == "exceeds the queue's quota"


def test_without_a_provider_kueue_s_own_words_stand():
    answer = answer_of(st.QUEUED, "WaitingForQuota", KUEUE_TEXT, None)

    assert (answer.message, answer.reason, answer.queue_line) == (KUEUE_TEXT, "waiting for quota", "")


def test_a_refused_visibility_api_is_position_unknown_never_an_error():
    answer = answer_of(st.QUEUED, "WaitingForQuota", KUEUE_TEXT, _facts(position=None, pending=None), namespace="t")

    assert "position unknown" in answer.message and answer.reason == "waiting for quota"
    assert queue_place("lq-a", _facts(position=None))["positionSource"] == "unknown"


@pytest.mark.parametrize("state", [st.WAITING_FOR_STARTUP, st.GANG_PENDING, st.UNSCHEDULABLE, st.RUNNING])
def test_once_quota_is_reserved_the_stored_answer_stands(state):
    answer = answer_of(state, "X", "node waits for dataset-initializer to complete; 0 of 1 done", _facts(),
                       namespace="team-a")

    assert answer.message == "node waits for dataset-initializer to complete; 0 of 1 done"
    assert answer.queue_line == ("position 3 of 7 in team-a's queue" if state in st.WAITING_STATES else "")


def test_the_line_that_holds_the_job_leads_and_the_cluster_queue_position_names_the_cluster_queue():
    memory = QuotaLine("memory", "h100", 2 * 1024 ** 4, 4 * 1024 ** 4, 3 * 1024 ** 4, 0)
    facts = _facts(requested=8, nominal=64, used=0, where="ClusterQueue", extra=(memory,))

    assert binding_line(facts.quota) is memory
    answer = answer_of(st.QUEUED, "WaitingForQuota", KUEUE_TEXT, facts)
    assert "needs 2,048 GiB, 1,024 free of 4,096 (3,072 in use" in answer.message
    assert "position 3 of 7 in cq-research" in answer.message


def test_no_label_and_no_facts_is_not_kueue_managed():
    assert queue_place("", None) is None
    assert queue_place("lq-a", None) == {"localQueue": "lq-a", "clusterQueue": None, "position": None,
                                         "positionIn": None, "pendingInQueue": None, "positionSource": "unknown"}


def test_amounts_read_in_their_unit():
    assert [amount(GPU, 1), amount("cpu", 2.5), amount("example.com/foo", 3)] == ["1 GPU", "2.5 CPUs",
                                                                                "3 example.com/foo"]


def test_a_long_position_never_overflows_the_column():
    answer = answer_of(st.QUEUED, "SomeVeryLongKueueReasonCodeThatFillsTheColumn", "", _facts(position=12345,
                                                                                              pending=99999))
    assert len(answer.reason) <= MAX_SHORT
