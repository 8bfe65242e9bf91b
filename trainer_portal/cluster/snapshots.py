"""The live topology snapshot store: a pickle of a `LiveSnapshot` under ``settings.VAR_DIR/topology/``.

Writer: the topology handler of ``manage.py cluster_watch`` (or the beat refresh). Readers (web processes):
:func:`live_snapshot` returns the last saved snapshot, re-reading the file only when it changed. The file is written
atomically (temp file + rename), so readers never see half a snapshot. It is a pickle written only by our own
watcher; it is never read from anywhere a user can write to. A file written by an older release that no longer
unpickles is reported as "no snapshot yet" until the next save replaces it.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from trainer_portal.placement.snapshot import TopologyKeys
from trainer_portal.placement.tracker import LiveSnapshot

logger = logging.getLogger(__name__)

SNAPSHOT_FILENAME = "live-snapshot.pickle"
SAVE_INTERVAL_SECONDS = 2.0
# Save at least this often even when nothing changed, so a quiet cluster's snapshot does not look stale.
HEARTBEAT_SECONDS = 30.0


def topology_keys() -> TopologyKeys:
    """Return the topology label keys, with the site's network-block key from settings."""
    return TopologyKeys(block=getattr(settings, "TOPOLOGY_BLOCK_KEY", TopologyKeys.block))


def snapshot_path() -> Path:
    """Return the file the live snapshot is stored in."""
    return Path(settings.VAR_DIR) / "topology" / SNAPSHOT_FILENAME


def save_live_snapshot(live: LiveSnapshot, path: Path | None = None) -> Path:
    """Write ``live`` atomically to ``path`` (default :func:`snapshot_path`) and return the path. Raises OSError."""
    path = path or snapshot_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".snapshot-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(live, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_read_cache: dict[str, Any] = {}
_read_lock = threading.Lock()


def live_snapshot(path: Path | None = None) -> LiveSnapshot | None:
    """Return the last saved live snapshot, or None when none was saved yet (or it cannot be read).

    The returned object is shared between callers of this process: copy ``.snapshot`` before changing it.
    """
    path = path or snapshot_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    stamp = (str(path), stat.st_mtime_ns, stat.st_size)
    with _read_lock:
        if _read_cache.get("stamp") == stamp:
            return _read_cache["live"]
    try:
        with path.open("rb") as fh:
            live = pickle.load(fh)  # noqa: S301 - written only by our own watcher under VAR_DIR (see module doc)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        logger.warning("cannot read the live topology snapshot %s: %s", path, exc)
        return None
    with _read_lock:
        _read_cache.update(stamp=stamp, live=live)
    return live


def snapshot_age_seconds(path: Path | None = None) -> float | None:
    """Return the age of the saved snapshot in seconds (None when there is none), without loading it."""
    path = path or snapshot_path()
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None


def live_source_available() -> bool:
    """Return True when a live snapshot has been saved (the preview may offer "live cluster")."""
    return snapshot_path().exists()
