"""The live topology snapshot store: one `TopologySnapshot` row per cluster, in the database every process shares.

Writers: the topology handler of ``manage.py cluster_watch`` and the beat refresh task (`save_live_snapshot`, and
`touch_live_snapshot` for a heartbeat that changed nothing). Readers (every web replica: preview, validation,
jobs explain, the cluster page): `live_snapshot` returns the stored snapshot through a per-process cache keyed by
(cluster, version). A cached read costs at most one indexed query for the version (none at all within
``TRAINER_PORTAL_SNAPSHOT_RECHECK_MS`` of the last check) and a version is decoded once per process.

The stored form is the portal's own versioned binary format (`encode_live` / `decode_live`): a JSON header (the
format version, the small tables, where each array lies) followed by the raw bytes of the node arrays and the
interned string tables, read back as zero-copy numpy views. Nothing is unpickled, so the database never holds code
to run. It carries the node inventory and what every pod holds
(folded into the used-resource arrays); the per-pod index the watcher needs to apply further events is not stored
(a reader never applies events), only the number of pods.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from trainer_portal.placement.snapshot import DOMAIN_LEVELS, ClusterSnapshot, TopologyKeys
from trainer_portal.placement.tracker import LiveSnapshot

from .models import Cluster, TopologySnapshot, cluster_filter, resolve_cluster

logger = logging.getLogger(__name__)

SAVE_INTERVAL_SECONDS = 2.0
# Save at least this often even when nothing changed, so a quiet cluster's snapshot does not look stale.
HEARTBEAT_SECONDS = 30.0
FORMAT = 1
_MAGIC_LINE = b"trainer-portal topology snapshot\n"
_ARRAYS = ("alloc_gpu", "alloc_cpu", "alloc_mem", "alloc_pods", "used_gpu", "used_cpu", "used_mem", "used_pods",
           "flags", "missing", "taint_code")
_SEP = "\n"  # Kubernetes names and label values never contain a newline; a string that does is stored in JSON


class SnapshotFormatError(ValueError):
    """A stored snapshot is not in a format this release reads (or is damaged)."""


def topology_keys(cluster: Cluster | None = None) -> TopologyKeys:
    """Return the topology label keys: the cluster's network-block key, else the site's from settings."""
    block = (cluster.block_label_key if cluster is not None else "") or getattr(
        settings, "TOPOLOGY_BLOCK_KEY", TopologyKeys.block)
    return TopologyKeys(block=block)


# -- the binary format ---------------------------------------------------------------------------------------


def _pack_strings(values: list[str]) -> tuple[np.ndarray, list[str] | None]:
    """Return the strings joined as UTF-8 bytes (uint8), or an empty array and the list when one has a newline."""
    if any(_SEP in value for value in values):
        return np.zeros(0, np.uint8), list(values)
    return np.frombuffer(_SEP.join(values).encode(), dtype=np.uint8), None


def _unpack_strings(packed: np.ndarray, fallback: list[str] | None, count: int) -> list[str]:
    if fallback is not None:
        return list(fallback)
    if count == 0:
        return []
    values = packed.tobytes().decode().split(_SEP)
    if len(values) != count:
        raise SnapshotFormatError(f"expected {count} strings, found {len(values)}")
    return values


def _pack(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    """Return the container: magic line, 8-byte header length, JSON header (meta + where each array lies), then
    every array's bytes (C order, 8-byte aligned)."""
    layout, chunks, offset = {}, [], 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        layout[name] = [array.dtype.str, list(array.shape), offset, len(data)]
        padding = -len(data) % 8
        chunks.append(data + b"\0" * padding)
        offset += len(data) + padding
    header = json.dumps({**meta, "arrays": layout}, separators=(",", ":")).encode()
    return _MAGIC_LINE + len(header).to_bytes(8, "little") + header + b"".join(chunks)


def _unpack(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Return (arrays, meta) of a container; the arrays are read-only views of ``blob`` (no copy)."""
    view = memoryview(blob)
    if bytes(view[: len(_MAGIC_LINE)]) != _MAGIC_LINE:
        raise SnapshotFormatError("not a topology snapshot (or a format this release does not read)")
    start = len(_MAGIC_LINE) + 8
    size = int.from_bytes(view[len(_MAGIC_LINE):start], "little")
    meta = json.loads(bytes(view[start:start + size]))
    base = start + size
    arrays = {}
    for name, (dtype, shape, offset, nbytes) in meta.pop("arrays").items():
        if base + offset + nbytes > len(view):
            raise SnapshotFormatError(f"truncated topology snapshot (array {name})")
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise SnapshotFormatError(f"array {name} holds objects")
        arrays[name] = np.frombuffer(view, dtype=dtype, count=nbytes // max(dtype.itemsize, 1),
                                     offset=base + offset).reshape(shape)
    return arrays, meta


def encode_live(live: LiveSnapshot) -> bytes:
    """Return ``live`` in the stored binary format (format `FORMAT`). Raises nothing for a well-formed snapshot."""
    snapshot = live.snapshot
    n = snapshot.size
    arrays: dict[str, np.ndarray] = {name: getattr(snapshot, name)[:n] for name in _ARRAYS}
    arrays["domain"] = snapshot.domain[:, :n]
    arrays["names"], names_fallback = _pack_strings(snapshot.names)
    arrays["node_rank"] = np.asarray(snapshot.node_rank(), dtype=np.int64)
    value_fallbacks = []
    for level in range(DOMAIN_LEVELS):
        arrays[f"parent{level}"] = np.asarray(snapshot.domain_parent[level], dtype=np.int32)
        arrays[f"values{level}"], fallback = _pack_strings(snapshot.domain_value[level])
        value_fallbacks.append(fallback)
    meta = {
        "format": FORMAT, "size": n, "keys": list(snapshot.keys.levels()),
        "names_fallback": names_fallback, "value_fallbacks": value_fallbacks,
        "value_counts": [len(values) for values in snapshot.domain_value],
        "taint_sets": [sorted(list(t) for t in taints) for taints in snapshot.taint_sets],
        "nodes_resource_version": snapshot.nodes_resource_version,
        "pods_resource_version": snapshot.pods_resource_version,
        "pod_count": snapshot.pod_count,
        "taken_at": live.taken_at, "label_counts": live.label_counts, "source": live.source, "server": live.server,
        "stats": live.stats, "label_totals": {key: list(value) for key, value in live.label_totals.items()},
    }
    return _pack(arrays, meta)


def decode_live(blob: bytes) -> LiveSnapshot:
    """Return the `LiveSnapshot` stored in ``blob``; raises SnapshotFormatError for another format or damage.

    The node arrays are read-only views of ``blob`` (a reader copies the snapshot before changing it anyway); the
    snapshot's pod index is empty (see the module doc) and ``stats["pods"]`` says how many pods its used-resource
    arrays count.
    """
    try:
        arrays, meta = _unpack(blob)
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotFormatError(f"unreadable topology snapshot: {exc}") from None
    if meta.get("format") != FORMAT:
        raise SnapshotFormatError(f"unknown topology snapshot format {meta.get('format')}; this release reads {FORMAT}")
    try:
        return _decode(arrays, meta)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise SnapshotFormatError(f"damaged topology snapshot: {exc}") from None


class StoredClusterSnapshot(ClusterSnapshot):
    """A snapshot decoded from the store. Its node-name list, name index and domain index are built on first use:
    most reads (the heat map, a preview's counts) never need them, and at 50,000 nodes they are most of a decode's
    cost. `copy` returns a plain, fully built `ClusterSnapshot`."""

    _LAZY = ("names", "row_of", "_domain_ids")

    def _lazy(self, name: str) -> Any:
        state = self.__dict__
        value = state.get(f"_lazy_{name}")
        if value is None:
            if name == "names":
                value = _unpack_strings(state["_packed_names"], state["_names_fallback"], self.size)
            elif name == "row_of":
                value = dict(zip(self.names, range(self.size), strict=True))
            else:
                value = [{key: index for index, key in enumerate(zip(parents, values, strict=True))}
                         for parents, values in zip(self.domain_parent, self.domain_value, strict=True)]
            state[f"_lazy_{name}"] = value
        return value

    def _set(name: str):
        def setter(self, value: Any) -> None:
            self.__dict__[f"_lazy_{name}"] = value
        return setter

    names = property(lambda self: self._lazy("names"), _set("names"))
    row_of = property(lambda self: self._lazy("row_of"), _set("row_of"))
    _domain_ids = property(lambda self: self._lazy("_domain_ids"), _set("_domain_ids"))
    del _set

    def copy(self) -> ClusterSnapshot:
        """Return an independent, plain `ClusterSnapshot` (every lazy table built)."""
        plain = ClusterSnapshot.__new__(ClusterSnapshot)
        plain.__dict__.update({key: value for key, value in self.__dict__.items()
                               if not key.startswith(("_lazy_", "_packed_names", "_names_fallback"))})
        for name in self._LAZY:
            plain.__dict__[name] = self._lazy(name)
        return plain.copy()


def _decode(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> LiveSnapshot:
    n = int(meta["size"])
    snapshot = StoredClusterSnapshot(TopologyKeys(*meta["keys"]), capacity=max(n, 1))
    if n:
        for name in _ARRAYS:
            setattr(snapshot, name, arrays[name])
        snapshot.domain = arrays["domain"]
    snapshot.size = n
    snapshot._capacity = max(n, 1)
    state = snapshot.__dict__
    for name in StoredClusterSnapshot._LAZY:
        state.pop(f"_lazy_{name}", None)
    state["_packed_names"], state["_names_fallback"] = arrays["names"], meta["names_fallback"]
    for level in range(DOMAIN_LEVELS):
        snapshot.domain_parent[level] = arrays[f"parent{level}"].tolist()
        snapshot.domain_value[level] = _unpack_strings(arrays[f"values{level}"], meta["value_fallbacks"][level],
                                                       int(meta["value_counts"][level]))
    if "node_rank" in arrays and len(arrays["node_rank"]) == n:
        snapshot._derived["names"] = arrays["node_rank"]  # the name order, without building the names
    snapshot.taint_sets = [frozenset(tuple(t) for t in taints) for taints in meta["taint_sets"]]
    snapshot._taint_codes = {taints: code for code, taints in enumerate(snapshot.taint_sets)}
    snapshot.nodes_resource_version = meta["nodes_resource_version"]
    snapshot.pods_resource_version = meta["pods_resource_version"]
    stats = dict(meta["stats"] or {})
    stats.setdefault("pods", meta["pod_count"])
    return LiveSnapshot(snapshot, float(meta["taken_at"]), meta["label_counts"], meta["source"], meta["server"],
                        stats, {key: tuple(value) for key, value in meta["label_totals"].items()})


# -- writing -----------------------------------------------------------------------------------------------


def _stamp(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def save_live_snapshot(live: LiveSnapshot, cluster: Cluster | str | None = None) -> int:
    """Store ``live`` as the cluster's snapshot (default cluster when None) and return its new version.

    Raises Cluster.DoesNotExist for an unknown cluster name, and the database's errors.
    """
    cluster = resolve_cluster(cluster)
    blob = encode_live(live)
    fields = {"blob": blob, "format": FORMAT, "taken_at": _stamp(live.taken_at), "saved_at": timezone.now(),
              "nodes": live.snapshot.node_count, "pods": int(live.stats.get("pods", live.snapshot.pod_count)),
              "source": live.source[:16], "server": (live.server or "")[:400]}
    clear_cache()  # a writer reads its own write at once, whatever the recheck interval
    for _ in range(2):
        with transaction.atomic():
            if TopologySnapshot.objects.filter(cluster=cluster).update(version=F("version") + 1, **fields):
                return TopologySnapshot.objects.filter(cluster=cluster).values_list("version", flat=True).get()
            try:
                with transaction.atomic():
                    TopologySnapshot.objects.create(cluster=cluster, version=1, **fields)
                return 1
            except IntegrityError:  # another writer created the row first: update it on the second pass
                continue
    raise IntegrityError(f"could not store the topology snapshot of cluster {cluster.name}")


def touch_live_snapshot(cluster: Cluster | str | None = None, taken_at: float | None = None) -> bool:
    """Mark the stored snapshot current as of ``taken_at`` (now) without a new version; return False when there
    is none. Raises Cluster.DoesNotExist."""
    cluster = resolve_cluster(cluster)
    when = _stamp(taken_at if taken_at is not None else time.time())
    return bool(TopologySnapshot.objects.filter(cluster=cluster).update(taken_at=when, saved_at=timezone.now()))


# -- reading -----------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    version: tuple[int, int]  # (cluster id, row version): a re-created cluster restarts at version 1
    live: LiveSnapshot | None
    checked: float


_cache: dict[Any, _Entry] = {}
_cache_lock = threading.Lock()
_decode_lock = threading.Lock()
stats = {"decodes": 0, "version_checks": 0}


def _recheck_seconds() -> float:
    return float(getattr(settings, "SNAPSHOT_RECHECK_MS", 250)) / 1000.0


def _cache_key(cluster: Cluster | str | None) -> Any:
    if cluster is None:
        return ("default",)
    if isinstance(cluster, Cluster):
        return ("id", cluster.pk)
    return ("name", str(cluster))


def live_snapshot(cluster: Cluster | str | None = None) -> LiveSnapshot | None:
    """Return the cluster's stored live snapshot (default cluster when None), or None when none was stored yet, the
    cluster is unknown, or the stored one is in a format this release cannot read.

    The returned object is shared by every caller in this process: copy ``.snapshot`` before changing it.
    """
    key = _cache_key(cluster)
    now = time.monotonic()
    entry = _cache.get(key)
    if entry is not None and now - entry.checked < _recheck_seconds():
        return entry.live
    stats["version_checks"] += 1
    head = _head(cluster)
    if head is None:
        with _cache_lock:
            _cache[key] = _Entry((0, 0), None, now)
        return None
    cluster_id, row_version, taken_at = head
    version = (cluster_id, row_version)
    if entry is not None and entry.version == version:
        if entry.live is not None:
            entry.live.taken_at = taken_at.timestamp()
        entry.checked = now
        return entry.live
    with _decode_lock:  # one decode per version, however many threads ask at once
        entry = _cache.get(key)
        if entry is not None and entry.version == version:
            return entry.live
        rows = TopologySnapshot.objects.filter(**cluster_filter(cluster, prefix="cluster__")).order_by()
        found = list(rows.values_list("cluster_id", "version", "taken_at", "blob")[:1])
        if not found:
            return None
        cluster_id, row_version, taken_at, blob = found[0]
        version = (cluster_id, row_version)
        try:
            live = decode_live(blob)
            live.taken_at = taken_at.timestamp()
        except SnapshotFormatError as exc:
            logger.warning("cannot read the live topology snapshot of %s: %s", key, exc)
            live = None
        stats["decodes"] += 1
        with _cache_lock:
            _cache[key] = _Entry(version, live, time.monotonic())
    return live


def _head(cluster: Cluster | str | None) -> tuple[int, int, datetime] | None:
    """Return (cluster id, version, taken_at) of the cluster's stored snapshot, or None: one indexed query.

    Plain SQL on purpose: this runs on every cached read, and the ORM's query building costs more than the query.
    """
    # Only identifiers from the models' meta are formatted in; every value is a bound parameter.
    quote = connection.ops.quote_name
    head = f"SELECT s.cluster_id, s.version, s.taken_at FROM {quote(TopologySnapshot._meta.db_table)} s"  # noqa: S608
    if isinstance(cluster, Cluster):
        sql, params = head + " WHERE s.cluster_id = %s", [cluster.pk]
    else:
        column, value = ("is_default", True) if cluster is None else ("name", str(cluster))
        sql = head + f" JOIN {quote(Cluster._meta.db_table)} c ON c.id = s.cluster_id WHERE c.{quote(column)} = %s"
        params = [value]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    cluster_id, version, taken_at = row
    if isinstance(taken_at, str):  # SQLite hands back text
        taken_at = datetime.fromisoformat(taken_at)
    if taken_at.tzinfo is None:
        taken_at = taken_at.replace(tzinfo=UTC)
    return int(cluster_id), int(version), taken_at


def snapshot_version(cluster: Cluster | str | None = None) -> int | None:
    """Return the stored snapshot's version (None when there is none), without loading it."""
    return TopologySnapshot.objects.filter(**cluster_filter(cluster, prefix="cluster__")).values_list(
        "version", flat=True).first()


def snapshot_age_seconds(cluster: Cluster | str | None = None) -> float | None:
    """Return seconds since the stored snapshot was last known current (None when there is none), without
    loading it."""
    taken = TopologySnapshot.objects.filter(**cluster_filter(cluster, prefix="cluster__")).values_list(
        "taken_at", flat=True).first()
    return None if taken is None else max(0.0, time.time() - taken.timestamp())


def live_source_available(cluster: Cluster | str | None = None) -> bool:
    """Return True when a live snapshot of the cluster is stored (the preview may offer "live cluster")."""
    return TopologySnapshot.objects.filter(**cluster_filter(cluster, prefix="cluster__")).exists()


def clear_cache() -> None:
    """Forget every cached snapshot of this process (tests; a reader never needs it)."""
    with _cache_lock:
        _cache.clear()


def describe_store(cluster: Cluster | str | None = None) -> str:
    """Return where the cluster's snapshot is stored, for log lines ("database, cluster NAME")."""
    try:
        return f"database, cluster {resolve_cluster(cluster).name}"
    except Cluster.DoesNotExist:
        return "database, no such cluster"
