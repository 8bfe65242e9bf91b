"""Events as the job's page lists them: identical ones grouped, the way ``kubectl describe`` shows "x20 over 3m"."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from . import signals as sig

MAX_OBJECTS_NAMED = 5


def group_events(events: Iterable[dict]) -> list[dict]:
    """Return the stored event views grouped by (type, reason, message), newest group first.

    Each group is ``{type, reason, message, count, objects, moreObjects, firstSeen, lastSeen}``: ``count`` sums
    the events' own counts, ``objects`` names up to five involved objects ("Pod big-node-0-3"), ``moreObjects``
    counts the rest, ``firstSeen``/``lastSeen`` are the oldest and newest ``lastTimestamp`` as datetimes (None when
    unparseable). Never raises on malformed entries (they group under empty strings).
    """
    groups: dict[tuple[str, str, str], dict] = {}
    for raw in events:
        event = sig.as_dict(raw)
        key = (sig.as_str(event.get("type")), sig.as_str(event.get("reason")), sig.as_str(event.get("message")))
        involved = sig.as_dict(event.get("involvedObject"))
        name = " ".join(part for part in (sig.as_str(involved.get("kind")), sig.as_str(involved.get("name")))
                        if part)
        seen = sig.parse_time(event.get("lastTimestamp"))
        group = groups.setdefault(key, {"type": key[0], "reason": key[1], "message": key[2], "count": 0,
                                        "names": [], "firstSeen": seen, "lastSeen": seen})
        group["count"] += sig.as_int(event.get("count"), 1) or 1
        if name and name not in group["names"]:
            group["names"].append(name)
        if seen is not None:
            group["firstSeen"] = min(filter(None, (group["firstSeen"], seen)))
            group["lastSeen"] = max(filter(None, (group["lastSeen"], seen)))
    result = []
    for group in groups.values():
        names = group.pop("names")
        group["objects"] = names[:MAX_OBJECTS_NAMED]
        group["moreObjects"] = max(len(names) - MAX_OBJECTS_NAMED, 0)
        result.append(group)
    oldest = dt.datetime.min.replace(tzinfo=dt.UTC)
    result.sort(key=lambda g: g["lastSeen"] or oldest, reverse=True)
    return result
