"""The one API exception handler: portal errors, cluster errors and DRF errors all get the same body."""

from __future__ import annotations

import pytest
from rest_framework import exceptions

from trainer_portal.api.exceptions import exception_handler
from trainer_portal.errors import PortalError, field
from trainer_portal.kube.errors import KubeCause, KubeConflict, KubeForbidden, KubeInvalid, KubeUnavailable


def _body(exc):
    response = exception_handler(exc, {})
    return response.status_code, response.data["error"]


def test_a_portal_error_keeps_its_status_code_fields_and_extra_keys():
    error = PortalError("Send a version.", code="precondition_required", status=428,
                        fields=[field("version", "required", "required")], extra={"currentVersion": 3})
    status, body = _body(error)
    assert status == 428
    assert body == {
        "code": "precondition_required",
        "message": "Send a version.",
        "fields": [{"path": "version", "message": "required", "code": "required"}],
        "status": 428,
        "currentVersion": 3,
    }


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (KubeInvalid("bad", causes=(KubeCause(field=".spec.x", message="must be set", reason="FieldValueRequired"),)),
         502),
        (KubeForbidden("no"), 502),
        (KubeUnavailable("down"), 503),
        (KubeConflict("Apply failed with 1 conflict: conflict with \"kubectl-edit\"", permanent=True), 409),
        (KubeConflict("the object has been modified", permanent=False), 409),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_a_cluster_error_maps_by_kind_and_permanence(error, status):
    got, body = _body(error)
    assert got == status == body["status"]
    assert body["code"] == "cluster_error"
    assert body["cluster"]["type"] == type(error).__name__
    assert body["message"].startswith(error.message)


def test_a_cluster_error_names_the_object_fields_and_the_conflicting_managers():
    _, invalid = _body(KubeInvalid("bad", causes=(KubeCause(field=".spec.x", message="must be set",
                                                            reason="FieldValueRequired"),)))
    assert invalid["fields"] == [{"path": "spec.x", "message": "must be set", "code": "FieldValueRequired"}]
    _, conflict = _body(KubeConflict('Apply failed with 1 conflict: conflict with "kubectl-edit"', permanent=True))
    assert '"kubectl-edit"' in conflict["message"] and "Re-apply with force" in conflict["message"]


def test_drf_validation_errors_are_flattened_into_field_paths():
    status, body = _body(exceptions.ValidationError({"names": ["unknown"], "topology": {"zones": ["too many"]}}))
    assert status == 400
    assert body["code"] == "invalid"
    assert body["fields"] == [
        {"path": "names", "message": "unknown", "code": "invalid"},
        {"path": "topology.zones", "message": "too many", "code": "invalid"},
    ]


def test_anything_else_is_left_to_django():
    assert exception_handler(RuntimeError("bug"), {}) is None
