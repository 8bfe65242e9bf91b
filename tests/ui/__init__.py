"""HTML interface tests: pages per persona, the editor's form ⇄ YAML sync, import, history, escaping.

Shared helpers live here (there is no conftest): `make_policy` saves a policy through the real service.
"""

from __future__ import annotations

import copy

from runtimes.domain.manifest import new_runtime

L2_L3_MANIFEST = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "mpi-racks", "labels": {"trainer.kubeflow.org/framework": "deepspeed"}},
    "spec": {
        "mlPolicy": {"numNodes": 4, "mpi": {"numProcPerNode": 1, "runLauncherAsNode": True}},
        "scheduling": {
            "replicatedJobs": [
                {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"basic": {}}},
                {
                    "targetReplicatedJobs": ["node"],
                    "job": {
                        "schedulingPolicy": {"gang": {}},
                        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                    },
                },
            ]
        },
        "template": {
            "spec": {
                "network": {"publishNotReadyAddresses": True},
                "replicatedJobs": [
                    {
                        "name": "launcher",
                        "template": {
                            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "mpi:1"}]}}},
                        },
                    },
                    {
                        "name": "node",
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "node",
                                                "image": "mpi:1",
                                                "readinessProbe": {"tcpSocket": {"port": 2222}},
                                            }
                                        ]
                                    }
                                }
                            }
                        },
                    },
                ],
            }
        },
    },
}


def torch_manifest(name: str = "torch-demo", **labels: str) -> dict:
    """Return the domain's new-policy skeleton named `name` with extra labels."""
    manifest = new_runtime(name)
    manifest["metadata"].setdefault("labels", {}).update(labels)
    return manifest


def l2_l3_manifest(name: str = "mpi-racks") -> dict:
    """Return an MPI runtime with level-2 and level-3 scheduling and fields the form does not model."""
    manifest = copy.deepcopy(L2_L3_MANIFEST)
    manifest["metadata"]["name"] = name
    return manifest


def make_policy(manifest: dict, author, message: str = "first"):
    """Create and return a policy through the real service."""
    from runtimes.services.policies import policy_create

    return policy_create(manifest=manifest, author=author, message=message, source="yaml")


def editor_post_data(editor, **overrides) -> dict:
    """Return the POST data a browser would send for an unbound `PolicyEditor` as rendered (plus `overrides`)."""
    data: dict = {}
    forms = [editor.form, editor.rjobs.management_form, editor.level2.management_form]
    forms += list(editor.rjobs) + list(editor.level2)
    for form in forms:
        for bound in form:
            value = bound.value()
            if bound.widget_type == "checkbox":
                if value:
                    data[bound.html_name] = "on"
                continue
            data[bound.html_name] = "" if value is None else value
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}
