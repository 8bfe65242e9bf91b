"""The gateway's error hierarchy: mapping of every HTTP status, permanence, and no client types leaking."""

from __future__ import annotations

import inspect

import pytest

from trainer_portal import kube
from trainer_portal.kube import errors
from trainer_portal.kube.client import get_gateway


def _all_error_classes():
    return [obj for _, obj in inspect.getmembers(errors, inspect.isclass) if issubclass(obj, kube.KubeError)]


@pytest.mark.parametrize("cls", _all_error_classes(), ids=lambda cls: cls.__name__)
def test_it_has_no_client_library_base_class(cls):
    for base in cls.__mro__:
        assert not base.__module__.startswith(("kubernetes", "urllib3")), base


@pytest.mark.parametrize(
    ("status", "cls", "permanent"),
    [
        (400, kube.KubeInvalid, True),
        (401, kube.KubeForbidden, True),
        (403, kube.KubeForbidden, True),
        (404, kube.KubeNotFound, True),
        (405, kube.KubeError, True),
        (409, kube.KubeConflict, False),
        (410, kube.KubeExpired, False),
        (422, kube.KubeInvalid, True),
        (429, kube.KubeUnavailable, False),
        (500, kube.KubeUnavailable, False),
        (503, kube.KubeUnavailable, False),
        (504, kube.KubeUnavailable, False),
    ],
)
def test_it_maps_each_status(status, cls, permanent):
    error = errors.error_from_status(status, {"message": f"boom {status}", "reason": "X"})
    assert type(error) is cls
    assert error.permanent is permanent
    assert error.status == status
    assert error.message == f"boom {status}"


def test_it_names_the_other_manager_on_an_apply_conflict():
    body = {
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-edit" using trainer.kubeflow.org/v1alpha1: '
        ".spec.mlPolicy.numNodes",
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-edit" using trainer.kubeflow.org/v1alpha1',
                    "field": ".spec.mlPolicy.numNodes",
                }
            ]
        },
    }
    error = errors.error_from_status(409, body)
    assert isinstance(error, kube.KubeConflict)
    assert error.permanent is True
    assert error.managers == ("kubectl-edit",)
    assert error.as_dict()["managers"] == ["kubectl-edit"]


def test_it_keeps_field_causes_of_invalid_objects():
    body = {
        "message": "ClusterTrainingRuntime.trainer.kubeflow.org \"x\" is invalid",
        "reason": "Invalid",
        "details": {"causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": ".spec.mlPolicy.numNodes"}]},
    }
    error = errors.error_from_status(422, body)
    assert error.field_errors == [{"path": "spec.mlPolicy.numNodes", "message": "bad", "reason": "FieldValueInvalid"}]


def test_it_uses_the_fallback_text_when_the_body_is_not_a_status():
    error = errors.error_from_status(502, None, fallback="<html>Bad gateway</html>", retry_after=3)
    assert isinstance(error, kube.KubeUnavailable)
    assert error.message == "<html>Bad gateway</html>"
    assert error.retry_after == 3


def test_it_reports_a_missing_kubeconfig_as_not_configured(settings, tmp_path):
    settings.KUBE_CONFIG_PATH = str(tmp_path / "missing-kubeconfig")
    settings.KUBE_IN_CLUSTER = False
    with pytest.raises(kube.KubeNotConfigured) as caught:
        get_gateway()
    assert "missing-kubeconfig" in caught.value.message
    assert caught.value.permanent is True


def test_it_reports_an_unknown_context_as_not_configured(settings, tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:9'}\n"
        "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
        "current-context: a\n"
    )
    settings.KUBE_CONFIG_PATH = str(config)
    settings.KUBE_CONTEXT = "nope"
    with pytest.raises(kube.KubeNotConfigured):
        get_gateway()


def test_it_reports_an_unreachable_server_as_transient(settings, tmp_path):
    config = tmp_path / "kubeconfig"
    # Port 9 (discard) is closed on CI machines: the connection is refused at once.
    config.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:9'}\n"
        "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
        "current-context: a\n"
    )
    settings.KUBE_CONFIG_PATH = str(config)
    settings.KUBE_CONTEXT = ""
    with pytest.raises(kube.KubeUnavailable) as caught:
        get_gateway().server_version()
    assert caught.value.permanent is False
    assert caught.value.status is None
