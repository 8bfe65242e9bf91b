"""core/v1 Events as client-go's event recorder writes them: one object per (object, reason, message), repeats
counted on it (`count`, `lastTimestamp`) instead of new objects, written by a background thread (as client-go's
broadcaster does) so that recording never slows the controller down."""

from __future__ import annotations

import logging
import queue
import threading
import time

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import meta, now

log = logging.getLogger("sandbox.controllers.events")

NORMAL = "Normal"
WARNING = "Warning"


def reference(obj: dict) -> dict:
    """Return the involvedObject reference of `obj` (apiVersion, kind, namespace, name, uid, resourceVersion)."""
    ref = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", ""), "name": meta(obj).get("name", ""),
           "uid": meta(obj).get("uid", "")}
    if meta(obj).get("namespace"):
        ref["namespace"] = meta(obj)["namespace"]
    if meta(obj).get("resourceVersion"):
        ref["resourceVersion"] = meta(obj)["resourceVersion"]
    return ref


class EventRecorder:
    """Records Events for one component (e.g. "default-scheduler"); thread-safe, never raises.

    `client` is used by the recorder's own writer thread only (give it a Client of its own).
    """

    def __init__(self, client: Client, component: str, *, repeat_after: float = 10.0):
        self.client = client
        self.component = component
        self.repeat_after = repeat_after
        self._lock = threading.Lock()
        # (involved uid, reason, message) -> [event name, namespace, count, last write (monotonic)]
        self._seen: dict[tuple[str, str, str], list] = {}
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._drain, name=f"events-{component}", daemon=True).start()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            try:
                self._write(*item)
            except Exception:  # the writer must outlive any one bad write
                log.exception("event write failed")

    def record(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        """Record one occurrence (written soon, in the background); repeats within `repeat_after` seconds are only
        counted, and written with the next write of that Event."""
        ref = reference(obj)
        namespace = ref.get("namespace") or "default"
        key = (ref["uid"] or ref["name"], reason, message)
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None:
                seen[2] += 1
                if time.monotonic() - seen[3] < self.repeat_after:
                    return
                seen[3] = time.monotonic()
                name, count = seen[0], seen[2]
            else:
                name = f"{ref['name']}.{time.time_ns():x}"[:253]
                self._seen[key] = [name, namespace, 1, time.monotonic()]
                count = 1
        self._queue.put((key, ref, namespace, name, count, event_type, reason, message, now()))

    def _write(self, key: tuple, ref: dict, namespace: str, name: str, count: int, event_type: str, reason: str,
               message: str, stamp: str) -> None:
        try:
            if count == 1:
                self.client.create(f"/api/v1/namespaces/{namespace}/events", {
                    "apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": name, "namespace": namespace},
                    "involvedObject": ref, "reason": reason, "message": message, "type": event_type,
                    "source": {"component": self.component}, "reportingComponent": self.component,
                    "reportingInstance": f"{self.component}-sandbox", "firstTimestamp": stamp,
                    "lastTimestamp": stamp, "count": 1,
                })
            else:
                self.client.merge_patch(f"/api/v1/namespaces/{namespace}/events/{name}",
                                        {"count": count, "lastTimestamp": stamp})
        except (ApiError, OSError) as error:
            log.info("event %s %s on %s not recorded: %s", reason, event_type, ref["name"], error)
            if count == 1:
                with self._lock:
                    self._seen.pop(key, None)

    def forget(self, uid: str) -> None:
        """Drop what is remembered about an object that is gone."""
        with self._lock:
            for key in [k for k in self._seen if k[0] == uid]:
                del self._seen[key]
