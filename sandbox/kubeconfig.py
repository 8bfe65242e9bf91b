"""Writes the kubeconfig that points clients at a running sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

CONTEXT = "sandbox"
TOKEN = "sandbox-token"


def kubeconfig(url: str) -> dict:
    """Returns a kubeconfig dict with cluster, user (dummy bearer token) and current context `sandbox`."""
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {"token": TOKEN}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: str | os.PathLike[str], url: str) -> Path:
    """Writes the kubeconfig atomically (0600) and returns its path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig(url), sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(target)
    return target
