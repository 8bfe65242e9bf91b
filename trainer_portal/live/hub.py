"""The stream hub of one ASGI process: its open streams, one watermark ticker, and the fragment requests it makes on
the streams' behalf.

Cost model (why it holds a team's load): an idle stream costs nothing but its socket; once per tick the process
reads the watermark (one cheap query per source, whatever the number of streams); only when it moved is the live
fragment asked again, once per distinct (session, fragment URL, ETag, what the page shows) — two hundred tabs of
one list share one request — and a page is sent HTML only when the fragment's content differs from what it shows.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import io
import logging
import re
import sys
import weakref
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings

from . import sources

logger = logging.getLogger(__name__)

# The poller element a fragment starts with carries only the next URL and ETag: not something the page "shows".
_POLLER = re.compile(r'<div\b[^>]*\bclass="jobs-poller"[^>]*>\s*</div>')
_NEXT_URL = re.compile(r'<div\b[^>]*\bclass="jobs-poller"[^>]*\bhx-get="([^"]*)"')
# Request headers of the stream that the fragment request repeats (who is asking, through which proxy).
_FORWARDED = ("HTTP_COOKIE", "HTTP_HOST", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_HOST",
              "HTTP_USER_AGENT", "HTTP_ACCEPT_LANGUAGE")


# A <time>'s text renders its datetime attribute relative to now ("3m 05s"): the attribute is what it shows.
_TIME_TEXT = re.compile(r"(<time\b[^>]*>)[^<]*(</time>)")


def fingerprint(body: str) -> str:
    """Return a digest of what a fragment shows (its HTML without the poller, times by their attributes); "" when it
    shows nothing."""
    shown = _TIME_TEXT.sub(r"\1\2", _POLLER.sub("", body)).strip()
    return hashlib.blake2b(shown.encode(), digest_size=12).hexdigest() if shown else ""


@dataclass(frozen=True)
class Asker:
    """Who asks, as the stream request showed it: the headers and socket facts repeated on fragment requests."""

    headers: tuple[tuple[str, str], ...]
    scheme: str
    server: tuple[str, str]
    remote_addr: str

    @classmethod
    def of(cls, request) -> Asker:
        """Return the asker of a Django request."""
        meta = request.META
        return cls(headers=tuple((k, meta[k]) for k in _FORWARDED if k in meta), scheme=request.scheme or "http",
                   server=(str(meta.get("SERVER_NAME", "localhost")), str(meta.get("SERVER_PORT", "80"))),
                   remote_addr=str(meta.get("REMOTE_ADDR", "")))


@dataclass(frozen=True)
class Answer:
    """A fragment's answer: HTTP status, body, ETag and the next fragment URL (its poller's ``hx-get``)."""

    status: int
    body: str = ""
    etag: str = ""
    next_url: str = ""


@dataclass(eq=False)
class Stream:
    """One open page: where it polls, the ETag it holds, the fingerprint of what it shows, and its outbox."""

    asker: Asker
    url: str
    etag: str
    shown: str | None = None
    outbox: asyncio.Queue = field(default_factory=asyncio.Queue)
    closed: bool = False

    def key(self) -> tuple:
        return (self.asker, self.url, self.etag, self.shown)


class Hub:
    """The open streams of one process and the ticker that follows the watermark for them."""

    def __init__(self, *, tick: float | None = None, threads: int | None = None) -> None:
        self.tick = tick if tick is not None else settings.TRAINER_PORTAL_LIVE_TICK_SECONDS
        self.streams: set[Stream] = set()
        self._executor = ThreadPoolExecutor(max_workers=threads or settings.TRAINER_PORTAL_LIVE_THREADS,
                                            thread_name_prefix="live")
        self._handler = None
        self._watermark: tuple | None = None
        self._memo: dict[tuple, Answer] = {}  # answers for the current watermark: tabs that open together share them
        self._ticker: asyncio.Task | None = None
        self.fragment_requests = 0  # counted for tests and the benchmark

    # -- streams -----------------------------------------------------------------------------------------------

    def full(self) -> bool:
        """Return whether this process holds its maximum of streams (TRAINER_PORTAL_LIVE_MAX_STREAMS)."""
        return len(self.streams) >= settings.TRAINER_PORTAL_LIVE_MAX_STREAMS

    async def open(self, stream: Stream) -> int:
        """Check ``stream`` against its fragment and register it; return 200, or the fragment's refusal (302, 403,
        404, …; 503 when the database cannot be read: the stream is then not opened). A page found behind is sent
        the fragment at once."""
        try:
            if self._watermark is None:
                self._watermark = await self._run(sources.watermark)
            answer = await self._ask(stream.asker, stream.url, stream.etag)
            # A current page: learn what it shows (same request without the ETag), so that a later change which
            # leaves it as it is sends nothing.
            baseline = await self._ask(stream.asker, stream.url, "") if answer.status == 304 else None
        except Exception:  # the database is away: the page polls (and shows why) until it can stream again
            logger.warning("live: opening a stream failed", exc_info=True)
            return 503
        if baseline is not None:
            if baseline.status != 200:
                return baseline.status
            stream.shown = fingerprint(baseline.body)
        elif answer.status == 200:
            self._deliver([stream], answer)
        else:
            return answer.status
        self.streams.add(stream)
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.get_running_loop().create_task(self._follow(), name="live-ticker")
        return 200

    def close(self, stream: Stream) -> None:
        """Forget ``stream`` (its page went away)."""
        stream.closed = True
        self.streams.discard(stream)

    # -- the ticker --------------------------------------------------------------------------------------------

    async def _follow(self) -> None:
        """Read the watermark every tick while streams are open; when it moved, bring every stream up to date."""
        while self.streams:
            await asyncio.sleep(self.tick)
            try:
                current = await self._run(sources.watermark)
            except Exception:  # the database is away: keep the streams, try again next tick
                logger.warning("live: reading the watermark failed", exc_info=True)
                continue
            if current != self._watermark:
                self._watermark = current
                self._memo.clear()
                await self.refresh()

    async def refresh(self) -> None:
        """Ask the fragment once per distinct stream state and deliver the answers (what a watermark move does)."""
        groups: dict[tuple, list[Stream]] = defaultdict(list)
        for stream in list(self.streams):
            groups[stream.key()].append(stream)
        if not groups:
            return
        answers = await asyncio.gather(*(self._ask(members[0].asker, members[0].url, members[0].etag)
                                         for members in groups.values()), return_exceptions=True)
        for members, answer in zip(groups.values(), answers, strict=True):
            if isinstance(answer, BaseException):
                logger.warning("live: fragment request failed", exc_info=answer)
                continue
            self._deliver(members, answer)

    def _deliver(self, members: list[Stream], answer: Answer) -> None:
        """Apply ``answer`` to streams sharing one state: 304 nothing; 200 new state, HTML only when what the page
        shows changed; anything else ends the streams (signed out, access removed, job gone)."""
        if answer.status == 304:
            return
        if answer.status != 200:
            for stream in members:
                stream.outbox.put_nowait(("end", str(answer.status)))
                self.close(stream)
            return
        shown = fingerprint(answer.body)
        for stream in members:
            stream.url = answer.next_url or stream.url
            stream.etag = answer.etag or stream.etag
            if shown and shown != stream.shown:
                stream.outbox.put_nowait(("swap", answer.body))
            stream.shown = shown if shown else stream.shown

    # -- fragment requests -------------------------------------------------------------------------------------

    async def _run(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    async def _ask(self, asker: Asker, url: str, etag: str) -> Answer:
        memo_key = (asker, url, etag)
        answer = self._memo.get(memo_key)
        if answer is None:
            answer = await self._run(self._request, asker, url, etag)
            self._memo[memo_key] = answer
            if len(self._memo) > 10_000:
                self._memo.clear()
        return answer

    def _request(self, asker: Asker, url: str, etag: str) -> Answer:
        """GET the fragment ``url`` as ``asker`` through the whole middleware chain (sessions, authentication,
        capabilities: exactly what a poll from that page would meet); return its answer."""
        if self._handler is None:
            from django.core.handlers.wsgi import WSGIHandler

            self._handler = WSGIHandler()
        path, _, query = url.partition("?")
        environ = {
            "REQUEST_METHOD": "GET", "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
            "SERVER_NAME": asker.server[0], "SERVER_PORT": asker.server[1], "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": asker.remote_addr, "wsgi.version": (1, 0), "wsgi.url_scheme": asker.scheme,
            "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
            "wsgi.multiprocess": True, "wsgi.run_once": False, "HTTP_HX_REQUEST": "true",
            **dict(asker.headers),
        }
        if etag:
            environ["HTTP_IF_NONE_MATCH"] = etag
        started: dict = {}

        def start_response(status: str, headers: list, exc_info=None) -> None:
            started["status"], started["headers"] = int(status.split()[0]), dict(headers)

        self.fragment_requests += 1
        response = self._handler(environ, start_response)
        try:
            body = b"".join(response).decode()
        finally:
            response.close()
        headers = started["headers"]
        # The next URL is the one the answer's poller would poll (cached answers carry it only there).
        found = _NEXT_URL.search(body)
        next_url = html.unescape(found.group(1)) if found else headers.get("X-Live-URL", "")
        return Answer(started["status"], body, headers.get("ETag", ""), next_url)


_HUBS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub:
    """Return this event loop's hub (one per process under uvicorn; tests may run several loops)."""
    loop = asyncio.get_running_loop()
    hub = _HUBS.get(loop)
    if hub is None:
        hub = _HUBS[loop] = Hub()
    return hub

