"""The short human reason a list column shows ("3 of 64 pods placed", "not enough GPUs", "waiting for quota"); the
full message stays on the detail page and in the API's ``message``.

Pure: no framework.
"""

from __future__ import annotations

import re

MAX_SHORT = 48

# Reason code → short text, when the code alone says it.
_BY_CODE = {
    "Running": "running",
    "GangScheduled": "placed, starting",
    "PodsBound": "pods placed, starting",
    "WaitingForMembers": "pods being created",
    "PodsPending": "pods waiting for nodes",
    "NoSchedulingObjects": "scheduling objects not created yet",
    "PodGroupsNotCreated": "PodGroups not created yet",
    "PodGroupMissing": "a PodGroup is missing",
    "TrainerPodsNotCreated": "trainer pods not created yet",
    "TrainingRuntimeNotFound": "runtime does not exist",
    "TrainJobResourcesCreationFailed": "controller could not create it",
    "AdmittedByKueue": "admitted by Kueue, resuming",
    "QuotaReserved": "quota reserved, checks pending",
    "UnsatisfiedAdmissionChecks": "quota reserved, checks pending",
    "WaitingForKueue": "waiting for Kueue",
    "Pending": "waiting for quota",
    "TopologyPlacementFailed": "waiting for quota (topology)",
    "WaitingForQuota": "waiting for quota",
    "ExceedsMaxQuota": "exceeds the queue's quota",
    "Inadmissible": "cannot be admitted as configured",
    "NoMatchingFlavor": "no matching resource flavor",
    "Misconfigured": "queue misconfigured",
    "PreemptionByScheduler": "preempted",
    "DisruptionTarget": "preempted",
    "InClusterQueue": "preempted by Kueue",
    "InCohortReclamation": "preempted by Kueue (reclaim)",
    "InCohortFairSharing": "preempted by Kueue (fair sharing)",
    "Suspended": "suspended",
    "Deleted": "deleted",
    "Malformed": "unreadable objects",
}
_INADMISSIBLE_CODES = frozenset({"ExceedsMaxQuota", "NoMatchingFlavor", "Misconfigured", "Inadmissible"})
# Unschedulable causes in scheduler messages, most telling first.
_CAUSES = (
    ("insufficient nvidia.com/gpu", "not enough GPUs"),
    ("insufficient gpu", "not enough GPUs"),
    ("insufficient cpu", "not enough CPU"),
    ("insufficient memory", "not enough memory"),
    ("topology", "no topology domain fits"),
    ("untolerated taint", "nodes tainted"),
    ("node affinity", "no node matches its selector"),
    ("didn't match pod's node", "no node matches its selector"),
    ("unschedulable", "nodes cordoned"),
)
_BOUND = re.compile(r"([\d,]+) / ([\d,]+) (?:gang pods |member pods |pods )?bound")
_DONE = re.compile(r"(\d+) of (\d+) done")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHORT else text[: MAX_SHORT - 1].rstrip() + "…"


def short_reason(state: str, code: str, message: str) -> str:
    """Return a short human reason (≤ MAX_SHORT characters) for a job in ``state`` with reason ``code`` and the full
    ``message``; never raises, never empty when ``code`` or ``state`` is set."""
    message = message or ""
    lowered = message.lower()
    if code == "WaitingForStartupOrder":
        done = _DONE.search(message)
        waiting = message.split(" waits for ", 1)[0] if " waits for " in message else "a step"
        return _cut(f"{waiting} waits for startup order" + (f" ({done[1]} of {done[2]} done)" if done else ""))
    if state == "inadmissible":
        if code in _INADMISSIBLE_CODES:
            return _BY_CODE[code]
        return "exceeds the queue's quota" if "maximum capacity" in lowered else "cannot be admitted as configured"
    if state == "unschedulable" or code in ("Unschedulable", "SchedulerError"):
        cause = next((text for needle, text in _CAUSES if needle in lowered), "")
        if code == "SchedulerError":
            return "scheduler error"
        return _cut(f"doesn't fit: {cause}" if cause else "doesn't fit the cluster")
    if code == "GangPending":
        bound = _BOUND.search(message)
        return _cut(f"{bound[1]} of {bound[2]} pods placed" if bound else "waiting to be placed")
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code:
        return _cut(_CAMEL.sub(" ", code).lower())
    return _cut(state.replace("-", " "))
