"""Legacy (non-aggregated) discovery documents: /version, /api, /api/v1, /apis, /apis/{g}, /apis/{g}/{v}.

Responses are plain `application/json`, so kubectl and DynamicClient fall back from aggregated discovery.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from sandbox.apiserver.resources import ALL_VERBS, ResourceType

# Subresources per storage key: name -> verbs.
_SUBRESOURCES: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("", "pods"): {"binding": ("create",), "log": ("get",)},
    ("", "namespaces"): {"finalize": ("update",)},
}


_SUBRESOURCE_KINDS = {"binding": "Binding", "log": "Pod"}


def version_info(kube_version: str) -> dict[str, str]:
    """Returns the /version document for a `1.MINOR` Kubernetes version."""
    major, minor = kube_version.split(".", 1)
    return {"major": major, "minor": minor, "gitVersion": f"v{kube_version}.0-sandbox", "gitCommit": "sandbox",
            "gitTreeState": "clean", "buildDate": "2026-08-01T00:00:00Z", "goVersion": "go1.25.0",
            "compiler": "gc", "platform": "linux/amd64"}


def _hash(rt: ResourceType) -> str:
    return hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()[:8].hex()


def resource_list(group_version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the APIResourceList of one group/version, with subresources as `plural/sub` entries."""
    resources: list[dict[str, Any]] = []
    for rt in sorted(types, key=lambda t: t.plural):
        item: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                                "kind": rt.kind, "verbs": list(ALL_VERBS), "storageVersionHash": _hash(rt)}
        if rt.short_names:
            item["shortNames"] = list(rt.short_names)
        if rt.categories:
            item["categories"] = list(rt.categories)
        resources.append(item)
        subs = dict(_SUBRESOURCES.get(rt.key, {}))
        if rt.has_status:
            subs["status"] = ("get", "patch", "update")
        for sub, verbs in sorted(subs.items()):
            resources.append({"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                              "kind": _SUBRESOURCE_KINDS.get(sub, rt.kind), "verbs": list(verbs)})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _version_key(version: str) -> tuple[int, int, int]:
    """Returns a sort key that ranks GA > beta > alpha, then by number (Kubernetes version priority)."""
    import re

    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (-1, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (stage, int(m.group(1)), int(m.group(3) or 0))


def group_doc(group: str, versions: Iterable[str]) -> dict[str, Any]:
    """Returns the APIGroup document with the preferred (highest priority) version first."""
    ordered = sorted(set(versions), key=_version_key, reverse=True)
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
            "preferredVersion": entries[0]}


def group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the APIGroupList of all non-core groups."""
    by_group: dict[str, set[str]] = {}
    for rt in types:
        if rt.group:
            by_group.setdefault(rt.group, set()).add(rt.version)
    groups = [group_doc(g, v) for g, v in sorted(by_group.items())]
    for g in groups:
        g.pop("kind")
        g.pop("apiVersion")
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def core_versions(server_address: str) -> dict[str, Any]:
    """Returns the /api APIVersions document."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}
