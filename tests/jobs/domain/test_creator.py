"""Creator: from the configured labels/annotations (TRAINER_PORTAL_CREATOR_KEYS), else from the TrainJob's creating
field manager ("created with kubectl") — through the ownership index as the tracker stores it."""

from __future__ import annotations

import pytest

from jobs.domain import signals as sig
from jobs.domain.ownership import TRAINJOB, OwnershipIndex
from jobs.domain.records import job_record
from tests.jobs import objects as o


def _creator(job) -> str:
    index = OwnershipIndex()
    index.upsert(TRAINJOB, job)
    return job_record(index.tree(job["metadata"]["uid"])).creator


def _managed(job, *entries):
    job["metadata"]["managedFields"] = [
        {"manager": manager, "operation": op, "apiVersion": "trainer.kubeflow.org/v1alpha1", "time": at,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}, **({"subresource": sub} if sub else {})}
        for manager, op, at, sub in entries]
    return job


@pytest.fixture(autouse=True)
def _default_keys():
    yield
    sig.configure_creator_keys([])


@pytest.mark.parametrize(("manager", "shown"), [
    ("kubectl-client-side-apply", "created with kubectl"),
    ("kubectl-create", "created with kubectl"),
    ("kubectl", "created with kubectl"),
    ("OpenAPI-Generator", "created with the Kubernetes Python client"),
    ("argo-workflows", "created with argo-workflows"),
])
def test_without_a_creator_label_the_creating_field_manager_says_how_it_was_created(manager, shown):
    job = _managed(o.trainjob(), ("trainer-controller-manager", "Update", "2026-12-01T11:00:05Z", "status"),
                   (manager, "Update", "2026-12-01T11:00:00Z", ""),
                   ("kueue-manager", "Update", "2026-12-01T11:00:02Z", ""))

    assert _creator(job) == shown


def test_a_creator_annotation_wins_over_the_field_manager():
    job = _managed(o.trainjob(creator="grace"), ("kubectl-create", "Update", "2026-12-01T11:00:00Z", ""))

    assert _creator(job) == "grace"


def test_the_configured_keys_are_read_first_match_wins(settings):
    job = _managed(o.trainjob(creator="grace"), ("kubectl-create", "Update", "2026-12-01T11:00:00Z", ""))
    job["metadata"]["labels"]["team.example.com/owner"] = "heidi"

    settings.TRAINER_PORTAL_CREATOR_KEYS = ["team.example.com/owner"]
    assert _creator(job) == "heidi"

    settings.TRAINER_PORTAL_CREATOR_KEYS = ["example.com/missing"]
    assert _creator(job) == "created with kubectl"  # the default keys no longer apply: grace is not read


def test_no_label_and_no_managed_fields_is_empty():
    assert _creator(o.trainjob()) == ""


def test_the_tracker_keeps_only_the_creating_manager_not_the_fields():
    from jobs.domain.ownership import slim

    job = _managed(o.trainjob(), ("kubectl-create", "Update", "2026-12-01T11:00:00Z", ""))

    assert slim(TRAINJOB, job)["metadata"]["managedFields"] == [{"manager": "kubectl-create", "operation": "Update"}]
