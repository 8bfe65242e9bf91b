"""Real receivers the notification tests send to: an HTTP server (webhooks, chat) and an SMTP server (aiosmtpd).

Both listen on a free port of 127.0.0.1 and can be told to fail: the HTTP receiver answers 500, or holds the
request past the sender's timeout, for the next N requests; the SMTP server refuses the next N messages with a
temporary 451. Only requests a receiver acknowledged (2xx / 250) count as received.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller


class HttpReceiver:
    """A threaded HTTP server recording the requests it acknowledged."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.seen = 0
        self.fail_next = 0
        self.hang_next = 0
        self.hang_seconds = 0.0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.seen += 1
                    if receiver.hang_next:
                        receiver.hang_next -= 1
                        hang = True
                    else:
                        hang = False
                    fail = not hang and receiver.fail_next > 0
                    if fail:
                        receiver.fail_next -= 1
                if hang:  # past the sender's timeout: it gives up, and we do not process the request
                    time.sleep(receiver.hang_seconds)
                    return
                if fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def documents(self) -> list[dict]:
        """Return the JSON bodies acknowledged so far."""
        with self.lock:
            return [json.loads(item["body"]) for item in self.received]

    def start(self) -> HttpReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.refuse_next = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            if self.refuse_next:
                self.refuse_next -= 1
                return "451 Try again later"
            self.messages.append({"to": list(envelope.rcpt_tos), "data": envelope.content.decode("utf-8", "replace")})
        return "250 OK"


class SmtpReceiver:
    """aiosmtpd on a free port, recording the messages it accepted."""

    def __init__(self) -> None:
        self.mailbox = _Mailbox()
        # aiosmtpd's start() connects to its own port to check it is up, so it needs a real one, not 0.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[dict]:
        with self.mailbox.lock:
            return list(self.mailbox.messages)

    def start(self) -> SmtpReceiver:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
