"""One-line scheduling summaries of a runtime (`scheduling_summary`), for policy lists and the API."""

from __future__ import annotations

from dataclasses import dataclass

from .checker import GROUP_FIELDS, LEVEL1_FIELDS, _is_int, _policy_of, _topology_key


@dataclass(frozen=True)
class SchedulingSummary:
    """How a runtime is scheduled: `mode`, one-line `text` for lists, and the `levels` (1–3) in use."""

    mode: str
    text: str
    levels: tuple[int, ...] = ()


def _short_key(key: str) -> str:
    return key.rsplit("/", 1)[-1] if key else ""


def scheduling_summary(manifest: dict) -> SchedulingSummary:
    """Return a one-line summary of the runtime's scheduling, e.g. "L2 · 2 groups (basic, gang) · block"."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    scheduling = spec.get("scheduling")
    if isinstance(scheduling, dict):
        return _summarise_scheduling(scheduling)
    policy = spec.get("podGroupPolicy")
    if isinstance(policy, dict):
        cos = policy.get("coscheduling")
        if isinstance(cos, dict):
            timeout = cos.get("scheduleTimeoutSeconds")
            suffix = (" · default timeout" if timeout == 0 else f" · timeout {timeout}s") if _is_int(timeout) else ""
            return SchedulingSummary("coscheduling", f"Coscheduling (gang){suffix}")
        volcano = policy.get("volcano")
        if isinstance(volcano, dict):
            topology = volcano.get("networkTopology")
            parts = ["Volcano"]
            if isinstance(topology, dict):
                if isinstance(topology.get("mode"), str):
                    parts.append(topology["mode"])
                if _is_int(topology.get("highestTierAllowed")):
                    parts.append(f"tier ≤ {topology['highestTierAllowed']}")
            return SchedulingSummary("volcano", " · ".join(parts))
    return SchedulingSummary("none", "No gang scheduling")


def _summarise_scheduling(scheduling: dict) -> SchedulingSummary:
    entries = scheduling.get("replicatedJobs")
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    has_l1 = any(f in scheduling for f in LEVEL1_FIELDS) or not entries
    l2 = [e for e in entries if "job" not in e or any(f in e for f in GROUP_FIELDS)]
    l3 = [e for e in entries if isinstance(e.get("job"), dict)]
    levels = tuple(lvl for lvl, used in ((1, has_l1), (2, bool(l2)), (3, bool(l3))) if used)
    parts: list[str] = []
    if has_l1:
        key = _short_key(_topology_key(scheduling))
        parts.append(" · ".join(filter(None, ["L1", _policy_of(scheduling) or "?", key])))
    if l2:
        policies = ", ".join(_policy_of(e) or "?" for e in l2)
        keys = sorted({_short_key(_topology_key(e)) for e in l2} - {""})
        noun = "group" if len(l2) == 1 else "groups"
        parts.append(" · ".join(filter(None, [f"L2 · {len(l2)} {noun} ({policies})", ", ".join(keys)])))
    if l3:
        for entry in l3:
            targets = entry.get("targetReplicatedJobs")
            target = targets[0] if isinstance(targets, list) and targets and isinstance(targets[0], str) else "?"
            job = entry["job"]
            key = _short_key(_topology_key(job))
            parts.append(" · ".join(filter(None, [f"L3 · {target} ({_policy_of(job) or '?'})", key])))
    if (has_l1 and (l2 or l3)) or any(e in l2 for e in l3):
        mode = "composite"
        # Decision D6: composite groups are the KEP's Alpha 2; the label leads so list truncation never hides it.
        parts.insert(0, "Composite (Alpha 2)")
    elif l2 and l3:
        mode = "mixed"
    elif l3:
        mode = "level3"
    elif l2:
        mode = "level2"
    else:
        mode = "level1"
    return SchedulingSummary(mode, " | ".join(parts), levels)
