"""Kueue's visibility API (`visibility.kueue.x-k8s.io/v1beta2`), which a real cluster serves from Kueue's own pod
through an APIService: the pending Workloads of a ClusterQueue or a LocalQueue, in Kueue's queue order, with their
0-based positions in both.

Served once Kueue's CRDs are installed (404 otherwise, as with a missing APIService). It reads the Workloads and
LocalQueues from the store; the order is the simulated Kueue's (`sandbox/controllers/kueue.py`, `pending_order`):
higher priority first, then the earlier queue time (the last eviction, else creation), then namespace/name. The
API server imports nothing of the controllers, so the ordering key is repeated here.

Routes: `GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads` and
`GET …/namespaces/{ns}/localqueues/{lq}/pendingworkloads`, parameters `offset` (default 0) and `limit` (default
1000), answering a `PendingWorkloadsSummary` as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sandbox.apiserver.errors import ApiError

GROUP = "visibility.kueue.x-k8s.io"
VERSION = "v1beta2"
PREFIX = f"/apis/{GROUP}"
DEFAULT_LIMIT = 1000


def _condition_true(obj: dict[str, Any], condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def _queue_time(workload: dict[str, Any]) -> str:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Evicted" and c.get("status") == "True":
            return c.get("lastTransitionTime") or ""
    return workload["metadata"].get("creationTimestamp") or ""


def _priority(workload: dict[str, Any]) -> int:
    value = (workload.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _non_negative(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise ApiError(400, "BadRequest", f"{name}: invalid value {raw!r}: must be a non-negative integer")
    return int(raw)


def discovery_resources() -> dict[str, Any]:
    """Return the APIResourceList of visibility.kueue.x-k8s.io/v1beta2."""
    def resource(name: str, kind: str, namespaced: bool) -> dict[str, Any]:
        return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["get"]}

    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
            "resources": [resource("clusterqueues", "ClusterQueue", False),
                          resource("clusterqueues/pendingworkloads", "PendingWorkloadsSummary", False),
                          resource("localqueues", "LocalQueue", True),
                          resource("localqueues/pendingworkloads", "PendingWorkloadsSummary", True)]}


def group_doc() -> dict[str, Any]:
    """Return the APIGroup of visibility.kueue.x-k8s.io."""
    version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [version],
            "preferredVersion": version}


def with_group(group_list: dict[str, Any], types: Iterable[Any]) -> dict[str, Any]:
    """Return the /apis APIGroupList with this group added while Kueue's Workloads are served (as its APIService
    would add it)."""
    if any(rt.group == "kueue.x-k8s.io" and rt.plural == "workloads" for rt in types):
        entry = group_doc()
        entry.pop("kind")
        entry.pop("apiVersion")
        group_list = {**group_list, "groups": sorted([*group_list["groups"], entry], key=lambda g: g["name"])}
    return group_list


def pending_workloads(workloads: list[dict[str, Any]], local_queues: list[dict[str, Any]], cluster_queues: set[str],
                      path_parts: list[str], params: dict[str, str]) -> dict[str, Any]:
    """Return the PendingWorkloadsSummary for `path_parts` (after `/apis/<group>/<version>/`).

    Raises ApiError 404 for another path or an unknown queue, 400 for a bad `offset`/`limit`.
    """
    offset = _non_negative(params, "offset", 0)
    limit = _non_negative(params, "limit", DEFAULT_LIMIT)
    cq_of = {(lq["metadata"].get("namespace"), lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
             for lq in local_queues}
    if len(path_parts) == 3 and path_parts[0] == "clusterqueues" and path_parts[2] == "pendingworkloads":
        cluster_queue, wanted = path_parts[1], None
        if cluster_queue not in cluster_queues:
            raise ApiError(404, "NotFound", f'clusterqueues.{GROUP} "{cluster_queue}" not found')
    elif (len(path_parts) == 5 and path_parts[0] == "namespaces" and path_parts[2] == "localqueues"
          and path_parts[4] == "pendingworkloads"):
        wanted = (path_parts[1], path_parts[3])
        if wanted not in cq_of:
            raise ApiError(404, "NotFound", f'localqueues.{GROUP} "{path_parts[3]}" not found')
        cluster_queue = cq_of[wanted]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    pending = [w for w in workloads
               if cq_of.get((w["metadata"].get("namespace"), (w.get("spec") or {}).get("queueName"))) == cluster_queue
               and (w.get("spec") or {}).get("active", True) is not False
               and not _condition_true(w, "QuotaReserved") and not _condition_true(w, "Finished")]
    pending.sort(key=lambda w: (-_priority(w), _queue_time(w), w["metadata"].get("namespace") or "",
                                w["metadata"]["name"]))
    items, in_local = [], {}
    for position, workload in enumerate(pending):
        key = (workload["metadata"].get("namespace"), (workload.get("spec") or {}).get("queueName"))
        local_position = in_local.get(key, 0)
        in_local[key] = local_position + 1
        if wanted is not None and key != wanted:
            continue
        meta = workload["metadata"]
        items.append({"metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                                   "creationTimestamp": meta.get("creationTimestamp"),
                                   **({"ownerReferences": meta["ownerReferences"]}
                                      if meta.get("ownerReferences") else {})},
                      "priority": _priority(workload), "localQueueName": key[1],
                      "positionInClusterQueue": position, "positionInLocalQueue": local_position})
    return {"kind": "PendingWorkloadsSummary", "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {"creationTimestamp": None}, "items": items[offset:offset + limit]}
