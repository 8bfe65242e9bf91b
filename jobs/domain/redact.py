"""No names across namespaces: text shown to a user names another namespace's objects only as "a job in another
namespace".

Scheduler, Kueue and Trainer messages name objects as ``namespace/name`` ("Preempted by PodGroup team-a/a-urgent-…").
A data scientist of team-b, for whom team-a's job is a 404, must not read team-a's names in their own job's message,
PodGroups, events or timeline. UIDs may stay (they name nothing). The stored data keeps the full text; this is
applied where a view or the API serializes for one user.

Pure: no framework.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

OTHER = "a job in another namespace"
_KINDS = ("PodGroup", "Workload", "TrainJob", "JobSet", "Job", "Pod", "ClusterQueue", "LocalQueue")
# An optional kind word, then namespace/name. A namespace is a DNS label (no dots, so API groups such as
# "nvidia.com/gpu" or "scheduling.k8s.io/v1" never match); the name may end truncated ("…").
_REF = re.compile(
    r"(?:(?P<kind>\b(?:" + "|".join(_KINDS) + r"|" + "|".join(k.lower() for k in _KINDS) + r")s?)\s+)?"
    r"(?<![\w./-])(?P<ns>[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)/(?P<name>[a-z0-9][a-z0-9.\-]*…?)(?![\w/])"
)


def redact(text: str, allowed: Callable[[str], bool], known: Collection[str] = ()) -> str:
    """Return ``text`` with every ``namespace/name`` reference to a namespace ``allowed`` refuses replaced by
    "a job in another namespace" (a kind word before it goes too). A reference counts when a kind word precedes it
    or its namespace is in ``known`` (the cluster's namespaces), so "0/8 nodes" or "apps/v1" stay. Never raises."""
    if not text or "/" not in text:
        return text

    def replace(match: re.Match) -> str:
        namespace = match["ns"]
        if not any(c.isalpha() for c in namespace) or allowed(namespace):
            return match[0]
        if match["kind"] is None and namespace not in known:
            return match[0]
        return OTHER

    return _REF.sub(replace, text)
