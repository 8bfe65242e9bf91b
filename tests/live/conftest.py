"""A real ASGI server (uvicorn, in a thread of the test process, on a free port) serving the portal with live streams
on, and a small server-sent events reader."""

from __future__ import annotations

import contextlib
import http.client
import queue
import socket
import threading
import time
from dataclasses import dataclass

import pytest

STREAM = "/live/stream"


@dataclass
class AsgiServer:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@pytest.fixture
def asgi_server(settings, transactional_db):
    """Yield uvicorn serving ``trainer_portal.asgi`` (pages and streams), with TRAINER_PORTAL_LIVE_STREAM on and a
    short tick."""
    import uvicorn

    settings.TRAINER_PORTAL_LIVE_STREAM = STREAM
    settings.TRAINER_PORTAL_LIVE_TICK_SECONDS = 0.05
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    from trainer_portal.asgi import application

    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not (server.started and server.servers):
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield AsgiServer("127.0.0.1", port)
    server.should_exit = True
    thread.join(timeout=10)


class EventReader:
    """Reads one server-sent event stream in a thread: ``status``, then ``next_event(timeout)`` → (name, data)."""

    def __init__(self, server: AsgiServer, path: str, cookie: str) -> None:
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
        self.conn.request("GET", path, headers={"Cookie": cookie, "Accept": "text/event-stream"})
        self.sock = self.conn.sock
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.events: queue.Queue = queue.Queue()
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name, data = "message", []
        try:
            while True:
                raw = self.response.readline()
                if not raw:
                    return
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if data or name != "message":
                        self.events.put((name, "\n".join(data)))
                    name, data = "message", []
                elif line.startswith(("event: ", "data: ")):
                    field, _, value = line.partition(": ")
                    if field == "event":
                        name = value
                    else:
                        data.append(value)
        except (OSError, ValueError, http.client.HTTPException):
            return

    def next_event(self, timeout: float) -> tuple[str, str] | None:
        """Return the next named event (comments skipped), or None when none arrives within ``timeout``."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        # Shut the socket first: the reader thread holds the response's buffer until a byte or EOF arrives.
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()
