"""Helpers for gateway tests; the sandbox fixtures (``sandbox``, ``cluster``, ``gateway``) are in tests/conftest.py."""

from __future__ import annotations


def runtime(name: str, *, num_nodes: int = 1, image: str = "busybox") -> dict:
    """Return a small valid ClusterTrainingRuntime manifest."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}},
                            },
                        }
                    ]
                }
            },
        },
    }
