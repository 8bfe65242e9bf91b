"""Thread-safe in-memory object store with one global monotonic resourceVersion and per-resource event history.

Objects are kept as (dict, pre-serialized JSON bytes); stored dicts are never mutated after `put` (writers build
a new dict), so readers can share them without copying. History per resource is bounded; events older than
the retained window are "compacted" and a watch from such a resourceVersion gets 410 Expired.
"""

from __future__ import annotations

import gc
import json
import queue
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

Key = tuple[str, str]  # (group, plural)
# Stored objects are acyclic and live long; moving them out of the cyclic GC's reach (gc.freeze) every so many
# writes keeps full collections from scanning 100k+ objects (seconds of pause otherwise). Refcounting still frees
# them when they are replaced or deleted.
FREEZE_EVERY = 5000


def dumps(obj: Any) -> bytes:
    """Returns compact JSON bytes for an object."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(slots=True)
class Entry:
    """A stored object and its serialized form."""

    obj: dict[str, Any]
    raw: bytes
    rv: int


@dataclass(slots=True)
class Event:
    """One change: `type` is ADDED, MODIFIED or DELETED; `prev` is the object before a MODIFIED/DELETED."""

    rv: int
    type: str
    key: Key
    namespace: str
    obj: dict[str, Any]
    raw: bytes
    prev: dict[str, Any] | None


class Subscription:
    """A watcher's inbox: the store pushes every event of one resource key into `queue`."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self.queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self.closed = False


class Store:
    """The object store. All mutating calls must run while holding `lock` (an RLock, so callers can compose)."""

    def __init__(self, history_limit: int = 20000) -> None:
        self.lock = threading.RLock()
        self.rv = 0
        self.history_limit = history_limit
        self._objects: dict[Key, dict[tuple[str, str], Entry]] = {}
        # Per-namespace buckets and cached sort orders make namespace lists and repeated big lists cheap.
        self._by_ns: dict[Key, dict[str, dict[str, Entry]]] = {}
        self._sorted: dict[tuple[Key, str | None], list[tuple[str, str]] | list[str]] = {}
        self._history: dict[Key, deque[Event]] = {}
        self._floor: dict[Key, int] = {}
        self._subs: dict[Key, set[Subscription]] = {}
        self.uids: dict[str, tuple[Key, str, str]] = {}
        self._writes = 0

    # -- reads -----------------------------------------------------------------------------------------------
    def get(self, key: Key, namespace: str, name: str) -> Entry | None:
        """Returns the entry or None."""
        return self._objects.get(key, {}).get((namespace, name))

    def list(self, key: Key, namespace: str | None = None) -> list[Entry]:
        """Returns entries of a resource (optionally one namespace), sorted by (namespace, name)."""
        with self.lock:
            if namespace is None:
                bucket = self._objects.get(key, {})
                order = self._sorted.get((key, None))
                if order is None:
                    order = self._sorted[(key, None)] = sorted(bucket)
                return [bucket[k] for k in order]
            ns_bucket = self._by_ns.get(key, {}).get(namespace, {})
            names = self._sorted.get((key, namespace))
            if names is None:
                names = self._sorted[(key, namespace)] = sorted(ns_bucket)
            return [ns_bucket[n] for n in names]

    def resource_keys(self) -> list[Key]:
        """Returns every resource key that holds objects."""
        return [k for k, v in self._objects.items() if v]

    def count(self, key: Key) -> int:
        return len(self._objects.get(key, {}))

    def by_uid(self, uid: str) -> Entry | None:
        """Returns the entry with this metadata.uid, or None."""
        where = self.uids.get(uid)
        return self.get(*where) if where else None

    # -- writes ----------------------------------------------------------------------------------------------
    def next_rv(self) -> int:
        """Returns a fresh resourceVersion (callers hold the lock)."""
        self.rv += 1
        return self.rv

    def put(self, key: Key, obj: dict[str, Any], event_type: str, prev: dict[str, Any] | None,
            record: bool = True) -> Entry:
        """Stores `obj` under a new resourceVersion (written into obj.metadata) and emits an event.

        Returns the new entry. The caller must not mutate `obj` afterwards.
        """
        meta = obj["metadata"]
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        raw = dumps(obj)
        entry = Entry(obj, raw, rv)
        ns = meta.get("namespace", "")
        bucket = self._objects.setdefault(key, {})
        if (ns, meta["name"]) not in bucket:
            self._sorted.pop((key, None), None)
            self._sorted.pop((key, ns), None)
        bucket[(ns, meta["name"])] = entry
        self._by_ns.setdefault(key, {}).setdefault(ns, {})[meta["name"]] = entry
        if meta.get("uid"):
            self.uids[meta["uid"]] = (key, ns, meta["name"])
        if record:
            self._record(Event(rv, event_type, key, ns, obj, raw, prev))
        self._writes += 1
        if self._writes % FREEZE_EVERY == 0:
            gc.freeze()
        return entry

    def remove(self, key: Key, obj: dict[str, Any]) -> Entry:
        """Deletes the object and emits DELETED carrying the deletion resourceVersion. Returns the final entry."""
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        prev = self._objects.get(key, {}).pop((ns, meta["name"]), None)
        self._by_ns.get(key, {}).get(ns, {}).pop(meta["name"], None)
        self._sorted.pop((key, None), None)
        self._sorted.pop((key, ns), None)
        self.uids.pop(meta.get("uid", ""), None)
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        raw = dumps(obj)
        self._record(Event(rv, "DELETED", key, ns, obj, raw, prev.obj if prev else None))
        return Entry(obj, raw, rv)

    def restore(self, key: Key, entry: Entry) -> None:
        """Puts an existing entry back unchanged (same resourceVersion, no event); used by reset."""
        meta = entry.obj["metadata"]
        ns = meta.get("namespace", "")
        self._objects.setdefault(key, {})[(ns, meta["name"])] = entry
        self._by_ns.setdefault(key, {}).setdefault(ns, {})[meta["name"]] = entry
        self._sorted.pop((key, None), None)
        self._sorted.pop((key, ns), None)
        if meta.get("uid"):
            self.uids[meta["uid"]] = (key, ns, meta["name"])

    def drop_all(self, key: Key) -> None:
        """Forgets every object of a resource without events (used by reset)."""
        for (_ns, _name), entry in self._objects.pop(key, {}).items():
            self.uids.pop(entry.obj["metadata"].get("uid", ""), None)
        self._by_ns.pop(key, None)
        for cached in [k for k in self._sorted if k[0] == key]:
            del self._sorted[cached]

    def _record(self, event: Event) -> None:
        hist = self._history.setdefault(event.key, deque())
        hist.append(event)
        if len(hist) > self.history_limit:
            dropped = hist.popleft()
            self._floor[event.key] = dropped.rv
        for sub in self._subs.get(event.key, ()):
            sub.queue.put(event)

    # -- history and watch -----------------------------------------------------------------------------------
    def compact(self) -> int:
        """Drops all history: a watch from any resourceVersion older than now gets 410. Returns the current RV."""
        with self.lock:
            for key in set(self._history) | set(self._objects):
                self._floor[key] = self.rv
                self._history[key] = deque()
            self._floor[("*", "*")] = self.rv
            return self.rv

    def floor(self, key: Key) -> int:
        """Returns the oldest resourceVersion a watch on this resource can start from."""
        return max(self._floor.get(key, 0), self._floor.get(("*", "*"), 0))

    def subscribe(self, key: Key, since: int | None) -> tuple[Subscription, list[Event] | None]:
        """Registers a watcher and returns it with the backlog of events after `since`.

        Returns (subscription, None) when `since` is older than the retained history (the caller answers 410).
        With `since=None` the backlog is empty. Registering and reading the backlog happen under the lock, so
        there is neither a gap nor a duplicate between the backlog and the live queue.
        """
        with self.lock:
            sub = Subscription(key)
            if since is not None and since < self.floor(key):
                return sub, None
            backlog: list[Event] = []
            if since is not None:
                backlog = [e for e in self._history.get(key, ()) if e.rv > since]
            self._subs.setdefault(key, set()).add(sub)
            return sub, backlog

    def unsubscribe(self, sub: Subscription) -> None:
        with self.lock:
            self._subs.get(sub.key, set()).discard(sub)
            sub.closed = True

    def close_all_watches(self) -> None:
        """Ends every open watch stream (each receives a None sentinel)."""
        with self.lock:
            for subs in self._subs.values():
                for sub in subs:
                    sub.queue.put(None)

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Returns every object grouped by `plural.group`."""
        with self.lock:
            return {f"{k[1]}.{k[0]}" if k[0] else k[1]: [e.obj for _, e in sorted(v.items())]
                    for k, v in self._objects.items() if v}
