"""Garbage collection, as kube-controller-manager's garbage collector and namespace controller do it.

`GarbageCollector` keeps an index owner UID → dependents, and a background thread that
- deletes a dependent whose owners are all gone (background cascade) or drops references to vanished owners,
- completes the `orphan` and `foregroundDeletion` finalizers,
- empties a terminating namespace and then removes it.

The registry tells it about every write (`index`, `unindex`, `owner_removed`, `finalize_later`,
`namespace_terminating`); the collector writes back through the registry's public operations, under the store lock.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from typing import TYPE_CHECKING, Any

from sandbox.apiserver.options import WriteOptions
from sandbox.apiserver.resources import ResourceType

if TYPE_CHECKING:
    from sandbox.apiserver.registry import Registry

log = logging.getLogger("sandbox")

GC_MANAGER = "generic-garbage-collector"
_RETRY_SECONDS = 0.05

Where = tuple[tuple[str, str], str, str]  # (storage key, namespace, name)


class GarbageCollector:
    """The ownerReference index and the collector thread of one registry."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._owner_index: dict[str, set[Where]] = {}
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Starts the collector thread (background cascade, foreground/orphan finalizers, namespaces)."""
        self._thread = threading.Thread(target=self._loop, name="sandbox-gc", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Asks the collector thread to finish after the queued work."""
        self._queue.put(None)

    def clear(self) -> None:
        """Forgets every ownerReference (the store was emptied)."""
        self._owner_index.clear()

    # -- notifications from the registry (called under the store lock) ---------------------------------------
    def index(self, rt: ResourceType, old: dict[str, Any] | None, new: dict[str, Any], queue_checks: bool) -> None:
        """Records the ownerReferences of a written object; queues a check when they changed (owners may be gone)."""
        if old is not None:
            self.unindex(rt, old)
        meta = new["metadata"]
        refs = meta.get("ownerReferences") or ()
        where = (rt.key, meta.get("namespace", ""), meta["name"])
        for ref in refs:
            self._owner_index.setdefault(ref.get("uid", ""), set()).add(where)
        old_refs = (old or {}).get("metadata", {}).get("ownerReferences")
        if refs and queue_checks and (old is None or old_refs != refs):
            self._queue.put("check:" + meta["uid"])

    def unindex(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Forgets the ownerReferences of an object that is rewritten or removed."""
        meta = obj["metadata"]
        where = (rt.key, meta.get("namespace", ""), meta["name"])
        for ref in meta.get("ownerReferences") or ():
            deps = self._owner_index.get(ref.get("uid", ""))
            if deps:
                deps.discard(where)
                if not deps:
                    del self._owner_index[ref.get("uid", "")]

    def owner_removed(self, uid: str) -> None:
        """Queues the dependents of a removed object for collection."""
        self._queue.put("uid:" + uid)

    def finalize_later(self, uid: str) -> None:
        """Queues the completion of an object's `orphan`/`foregroundDeletion` finalizer."""
        self._queue.put("fin:" + uid)

    def namespace_terminating(self, name: str) -> None:
        """Queues the emptying and removal of a namespace marked for deletion."""
        self._queue.put("ns:" + name)

    # -- the collector thread --------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                with self.registry.store.lock:
                    self._handle(item)
            except Exception:  # the collector must survive one bad object
                log.exception("garbage collection of %s failed", item)

    def _later(self, item: str) -> None:
        threading.Timer(_RETRY_SECONDS, self._queue.put, args=(item,)).start()

    def _handle(self, item: str) -> None:
        kind, _, ident = item.partition(":")
        if kind == "uid":
            for where in sorted(self._owner_index.get(ident, set())):
                self._collect_dependent(where)
            self._owner_index.pop(ident, None)
        elif kind == "check":
            where = self.registry.store.uids.get(ident)
            if where:
                self._collect_dependent(where)
        elif kind == "fin":
            self._finalize(ident)
        elif kind == "ns":
            self._empty_namespace(ident)

    def _lookup(self, where: Where) -> tuple[ResourceType, Any] | None:
        entry = self.registry.store.get(*where)
        rt = self.registry.type_for_key(where[0])
        if entry is None or rt is None:
            return None
        return rt, entry

    def _collect_dependent(self, where: Where) -> None:
        """Deletes a dependent whose owners are all gone, or drops its references to vanished owners."""
        found = self._lookup(where)
        if found is None:
            return
        rt, entry = found
        store = self.registry.store
        refs = entry.obj["metadata"].get("ownerReferences") or []
        alive = [r for r in refs if store.by_uid(r.get("uid", "")) is not None]
        if len(alive) == len(refs):
            return
        if not alive:
            self.registry.delete(rt, where[1] or None, where[2], None, False, propagation="Background")
            return
        obj = json.loads(entry.raw)
        obj["metadata"]["ownerReferences"] = alive
        self.registry.update(rt, entry, obj, "", WriteOptions(manager=GC_MANAGER), None)

    def _finalize(self, uid: str) -> None:
        where = self.registry.store.uids.get(uid)
        found = self._lookup(where) if where else None
        if found is None:
            return
        rt, entry = found
        finalizers = entry.obj["metadata"].get("finalizers") or []
        dependents = sorted(self._owner_index.get(uid, set()))
        if "orphan" in finalizers:
            for dep in dependents:
                dep_found = self._lookup(dep)
                if dep_found is None:
                    continue
                dep_rt, dep_entry = dep_found
                obj = json.loads(dep_entry.raw)
                obj["metadata"]["ownerReferences"] = [r for r in obj["metadata"].get("ownerReferences") or []
                                                      if r.get("uid") != uid]
                if not obj["metadata"]["ownerReferences"]:
                    del obj["metadata"]["ownerReferences"]
                self.registry.update(dep_rt, dep_entry, obj, "", WriteOptions(manager=GC_MANAGER), None)
            finalizers = [f for f in finalizers if f != "orphan"]
        elif "foregroundDeletion" in finalizers:
            pending = False
            for dep in dependents:
                dep_found = self._lookup(dep)
                if dep_found is None:
                    continue
                dep_rt, dep_entry = dep_found
                pending = True
                if not dep_entry.obj["metadata"].get("deletionTimestamp"):
                    self.registry.delete(dep_rt, dep[1] or None, dep[2], None, False, propagation="Foreground")
            if pending and any(self.registry.store.get(*d) is not None for d in dependents):
                self._later("fin:" + uid)
                return
            finalizers = [f for f in finalizers if f != "foregroundDeletion"]
        else:
            return
        obj = json.loads(entry.raw)
        obj["metadata"]["finalizers"] = finalizers
        self.registry.update(rt, entry, obj, "", WriteOptions(manager=GC_MANAGER), None)

    def _empty_namespace(self, name: str) -> None:
        registry = self.registry
        store = registry.store
        ns_entry = store.get(("", "namespaces"), "", name)
        if ns_entry is None:
            return
        remaining = False
        for key in list(store.resource_keys()):
            rt = registry.type_for_key(key)
            if rt is None or not rt.namespaced:
                continue
            for e in store.list(key, name):
                remaining = True
                if not e.obj["metadata"].get("deletionTimestamp"):
                    registry.delete(rt, name, e.obj["metadata"]["name"], None, False)
        if remaining and any(store.list(k, name) for k in store.resource_keys()
                             if (t := registry.type_for_key(k)) is not None and t.namespaced):
            self._later("ns:" + name)
            return
        registry.remove(registry.resolve("", "v1", "namespaces"), json.loads(ns_entry.raw))
