"""The embedded-mode Celery broker: kombu's filesystem transport made atomic (URL ``atomicfs://``).

kombu's own ``filesystem://`` transport creates a message file under its final name and only then writes the
body, and it rewrites exchange tables in place. A consumer listing the folder in between reads an empty or partial
file, fails to decode it, and the whole worker exits ("Unrecoverable error: JSONDecodeError"). Here:

* a message is written under a staging name and ``os.rename``-d into the queue folder, so a visible message file is
  always complete (rename is atomic within one filesystem; staging is a subfolder of the queue folder for that);
* a consumer claims a message by renaming it into its claim folder before reading it, so two consumers never read
  the same file and nothing is read from another filesystem (kombu moves it to ``/tmp``, a copy on many hosts);
* a message that still cannot be decoded (written by something else) is moved to the ``rejected`` folder and logged,
  never raised into the consumer loop;
* exchange tables are replaced the same way, under a lock file, so a reader never sees a half-written table and two
  binders never lose each other's queue;
* file names start with a zero-padded wall-clock timestamp, so the folder order is the publish order across
  processes and restarts (kombu uses a per-boot monotonic clock, unpadded).

No fsync: a message survives a crash of any process, not a power cut — enough for a one-machine demo stack.
Production uses Redis. Importing this module registers the ``atomicfs`` alias with kombu.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
import uuid
from pathlib import Path
from queue import Empty

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

ALIAS = "atomicfs"
STAGING = ".staging"
CLAIMED = ".claimed"
REJECTED = ".rejected"


def _atomic_write(path: Path, data: bytes, staging: Path) -> None:
    """Write ``data`` to ``path`` so that readers see either no file or the whole of it.

    Raises OSError when the folders are missing or not writable.
    """
    temporary = staging / f"{path.name}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "xb") as handle:
        handle.write(data)
    os.rename(temporary, path)


def message_name(queue: str) -> str:
    """Return a new message file name for ``queue``: sortable by publish time, unique, ending ``.<queue>.msg``."""
    return f"{time.time_ns():020d}_{uuid.uuid4().hex}.{queue}.msg"


def queue_of(filename: str) -> str | None:
    """Return the queue a message file name belongs to, or None for anything that is not a message file."""
    stem, dot, rest = filename.partition(".")
    if not dot or not rest.endswith(".msg") or stem.startswith("."):
        return None
    return rest[: -len(".msg")]


def queue_size(folder: str | os.PathLike, queue: str) -> int:
    """Return the number of messages waiting for ``queue`` in queue folder ``folder`` (0 if it does not exist)."""
    try:
        return sum(1 for name in os.listdir(folder) if queue_of(name) == queue)
    except FileNotFoundError:
        return 0


class Channel(filesystem.Channel):
    """A filesystem channel whose writes are atomic renames and whose reads claim a file before opening it."""

    def _folder(self, name: str, parent: str | Path) -> Path:
        # The configured folder itself must exist (a missing one is a misconfiguration to report, not to paper
        # over by writing where no worker reads); only our own subfolders are created on demand.
        folder = Path(parent) / name
        folder.mkdir(exist_ok=True)
        return folder

    # --- messages ---------------------------------------------------------------------------------------
    def _put(self, queue, payload, **kwargs):
        """Publish ``payload`` to ``queue``. Raises ChannelError when the queue folder cannot be written."""
        folder = Path(self.data_folder_out)
        path = folder / message_name(queue)
        try:
            _atomic_write(path, str_to_bytes(dumps(payload)), self._folder(STAGING, folder))
        except OSError as exc:
            raise ChannelError(f"Cannot add a message to {str(folder)!r}: {exc}") from exc

    def _get(self, queue):
        """Return the oldest decodable message of ``queue``. Raises Empty when there is none."""
        folder = Path(self.data_folder_in)
        try:
            names = sorted(name for name in os.listdir(folder) if queue_of(name) == queue)
        except OSError as exc:
            raise ChannelError(f"Cannot list the queue folder {str(folder)!r}: {exc}") from exc
        if not names:
            raise Empty()
        claimed = self._folder(CLAIMED, folder)
        for name in names:
            mine = claimed / name
            try:
                os.rename(folder / name, mine)
            except FileNotFoundError:
                continue  # another consumer claimed it first
            try:
                payload = mine.read_bytes()
            except OSError as exc:
                raise ChannelError(f"Cannot read the claimed message {str(mine)!r}: {exc}") from exc
            try:
                message = loads(bytes_to_str(payload))
            except ValueError as exc:
                self._reject(mine, folder, exc)
                continue
            self._done(mine)
            return message
        raise Empty()

    def _done(self, claimed: Path) -> None:
        if self.store_processed:
            os.replace(claimed, self._folder("", self.processed_folder) / claimed.name)
        else:
            claimed.unlink(missing_ok=True)

    def _reject(self, claimed: Path, folder: Path, exc: Exception) -> None:
        # A broken file must not stop the consumer: keep it for inspection and go on with the next message.
        target = self._folder(REJECTED, folder) / claimed.name
        os.replace(claimed, target)
        logger.error("Broker: moved an undecodable message to %s (%s)", target, exc)

    def _size(self, queue):
        return queue_size(self.data_folder_in, queue)

    def _purge(self, queue):
        folder = Path(self.data_folder_in)
        count = 0
        for name in os.listdir(folder):
            if queue_of(name) == queue:
                try:
                    (folder / name).unlink()
                    count += 1
                except FileNotFoundError:
                    pass
        return count

    # --- exchange tables ----------------------------------------------------------------------------------
    def get_table(self, exchange):
        file = self._exchange_file(exchange)
        try:
            table = loads(bytes_to_str(file.read_bytes()))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        return [filesystem.exchange_queue_t(*row) for row in table]

    def _update_table(self, exchange, change) -> None:
        """Apply ``change(rows) -> rows`` to the exchange's table under its lock file, replacing it atomically."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        staging = self._folder(STAGING, self.control_folder)
        try:
            with open(file.with_name(file.name + ".lock"), "a") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                rows = self.get_table(exchange)
                updated = change(list(rows))
                if updated != rows:
                    _atomic_write(file, str_to_bytes(dumps(updated)), staging)
        except OSError as exc:
            raise ChannelError(f"Cannot update {file}") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        row = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._update_table(exchange, lambda rows: rows if row in rows else [row, *rows])

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        # Skip the filesystem parent (it rewrites the table in place); the virtual base forgets the queue.
        super(filesystem.Channel, self)._delete(queue, exchange, routing_key, pattern, *args, **kwargs)
        row = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._update_table(exchange, lambda rows: [r for r in rows if r != row])


class Transport(filesystem.Transport):
    """The atomic filesystem transport (``atomicfs://``)."""

    Channel = Channel
    global_state = filesystem.virtual.BrokerState()
    driver_type = ALIAS
    driver_name = ALIAS


TRANSPORT_ALIASES.setdefault(ALIAS, f"{__name__}:Transport")
