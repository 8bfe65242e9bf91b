"""Builders shared by the policy tests: upstream runtimes and a tiny path-based mutator."""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

from runtimes.domain.manifest import load_runtime
from tests.fixture_paths import REFERENCE_RUNTIMES

REFERENCE = REFERENCE_RUNTIMES
FILES = {"torch": "torch_distributed.yaml", "deepspeed": "deepspeed_distributed.yaml", "qwen": "qwen2_5_1.5B.yaml"}
RJOBS = "spec.template.spec.replicatedJobs"
_TOKEN = re.compile(r'([^.\[\]"]+)|\[(\d+)\]|\["([^"]+)"\]')


@cache
def _upstream(name: str) -> dict:
    return load_runtime((REFERENCE / FILES[name]).read_text())


def upstream(name: str) -> dict:
    """Return a fresh deep copy of an upstream runtime: 'torch', 'deepspeed' or 'qwen'."""
    return copy.deepcopy(_upstream(name))


def _tokens(path: str) -> list[str | int]:
    result: list[str | int] = []
    for name, index, quoted in _TOKEN.findall(path):
        result.append(int(index) if index else quoted or name)
    return result


def put(manifest: dict, path: str, value: Any) -> dict:
    """Set the value at a dotted path (`a.b[0]["x/y"]`), creating mappings on the way; return the manifest."""
    tokens = _tokens(path)
    node: Any = manifest
    for token in tokens[:-1]:
        if isinstance(token, str) and token not in node:
            node[token] = {}
        node = node[token]
    node[tokens[-1]] = value
    return manifest


def drop(manifest: dict, path: str) -> dict:
    """Delete the key at a dotted path; return the manifest."""
    tokens = _tokens(path)
    node: Any = manifest
    for token in tokens[:-1]:
        node = node[token]
    del node[tokens[-1]]
    return manifest


def rjob(name: str, *, replicas: int | None = None, step: str | None = None, container: str | None = None) -> dict:
    """Return a minimal ReplicatedJob."""
    item: dict[str, Any] = {"name": name}
    if replicas is not None:
        item["replicas"] = replicas
    template: dict[str, Any] = {}
    if step is not None:
        template["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": step}}
    template["spec"] = {"template": {"spec": {"containers": [{"name": container or name, "image": "busybox"}]}}}
    item["template"] = template
    return item


def with_scheduling(base: str, scheduling: dict, **sets: Any) -> dict:
    """Return an upstream runtime with spec.scheduling set (and extra dotted-path sets)."""
    manifest = upstream(base)
    manifest["spec"]["scheduling"] = scheduling
    for path, value in sets.items():
        put(manifest, path.replace("__", "."), value)
    return manifest


def test_put_and_drop_follow_dotted_paths():
    manifest = upstream("torch")
    put(manifest, f'{RJOBS}[0].template.metadata.labels["a/b"]', "c")
    assert manifest["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"]["a/b"] == "c"
    drop(manifest, "spec.mlPolicy.torch")
    assert manifest["spec"]["mlPolicy"] == {"numNodes": 1}
    assert upstream("torch")["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}  # copies are independent
