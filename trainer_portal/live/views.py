"""The stream endpoint: ``GET /live/stream?page=<live fragment URL>&etag=<ETag the page holds>``.

Answers ``text/event-stream``: ``swap`` events carry the fragment's HTML (the page swaps it as a poll's answer),
``end`` says the fragment refused (signed out, access removed: the page falls back to polling, which shows why),
``bye`` closes a stream after TRAINER_PORTAL_LIVE_STREAM_SECONDS so the page reopens it (authentication is checked
again at every opening and on every delivery). Only the ASGI server streams; under WSGI the endpoint answers 503.
"""

from __future__ import annotations

import asyncio
import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from trainer_portal import roles

from .fragments import fragment_capability, is_live_fragment
from .hub import Asker, Hub, Stream, get_hub

HEARTBEAT_SECONDS = 15.0
MAX_URL = 4096


def _bad(field: str, message: str) -> HttpResponse:
    return HttpResponse(f"{field}: {message}\n", status=400, content_type="text/plain; charset=utf-8")


@require_GET
async def stream(request: HttpRequest) -> HttpResponse:
    """Open a live stream for one page; return the event stream, or: 302 to the login page when not signed in;
    403 when the user lacks the fragment's capability (or the fragment refuses the user); 404 when streams are
    off; 400 naming a bad ``page`` or ``etag``; 503 (Retry-After) under WSGI or when this process holds its
    maximum of streams."""
    user = await request.auser()
    if not user.is_authenticated:  # like every page; an EventSource treats the login page as a failed stream
        return redirect_to_login(request.get_full_path())
    if not await sync_to_async(roles.has_capability)(user, roles.JOBS_VIEW):
        return HttpResponse(f"{roles.DENIED[roles.JOBS_VIEW]}\n", status=403, content_type="text/plain; charset=utf-8")
    if not settings.TRAINER_PORTAL_LIVE_STREAM:
        return HttpResponse("Live streams are off (TRAINER_PORTAL_LIVE_STREAM); pages poll.\n", status=404,
                            content_type="text/plain; charset=utf-8")
    if not isinstance(request, ASGIRequest):
        return HttpResponse("Streams are served by the ASGI server (docs/operations.md); pages poll meanwhile.\n",
                            status=503, headers={"Retry-After": "60"}, content_type="text/plain; charset=utf-8")
    page, etag = request.GET.get("page", ""), request.GET.get("etag", "")
    path = page.partition("?")[0]
    if (not page.startswith("/") or page.startswith("//") or len(page) > MAX_URL or "\x00" in page
            or not is_live_fragment(path)):
        return _bad("page", "give the live fragment URL the page polls (its poller's hx-get), e.g. /jobs/live/")
    if len(etag) > 200 or not etag.isprintable():
        return _bad("etag", "give the ETag the page holds (its poller's data-etag), at most 200 characters")
    needed = fragment_capability(path)
    if needed and needed != roles.JOBS_VIEW and not await sync_to_async(roles.has_capability)(user, needed):
        return HttpResponse(f"{roles.DENIED[needed]}\n", status=403, content_type="text/plain; charset=utf-8")
    hub = get_hub()
    if hub.full():
        return HttpResponse("Too many open streams on this server; the page polls meanwhile.\n", status=503,
                            headers={"Retry-After": "30"}, content_type="text/plain; charset=utf-8")
    opened = Stream(asker=Asker.of(request), url=page, etag=etag)
    status = await hub.open(opened)
    if status != 200:
        return HttpResponse(status=403 if status in (301, 302) else status)
    return StreamingHttpResponse(_events(hub, opened), content_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


# What the route table declares: the fragments streams follow today are the TrainJobs pages'. The stream checks the
# followed fragment's own capability when it opens, and the fragment checks it again on every delivery.
stream.capability = roles.JOBS_VIEW


async def _events(hub: Hub, opened: Stream):
    """Yield the stream's events until it ends, its lifetime is over or the page goes away."""
    deadline = time.monotonic() + settings.TRAINER_PORTAL_LIVE_STREAM_SECONDS
    try:
        yield "retry: 3000\n: open\n\n"  # the first bytes send the headers: the page knows the stream is up
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                yield "event: bye\ndata: reopen\n\n"
                return
            try:
                kind, payload = await asyncio.wait_for(opened.outbox.get(), min(HEARTBEAT_SECONDS, left))
            except TimeoutError:
                yield ": ping\n\n"
                continue
            data = "".join(f"data: {line}\n" for line in payload.split("\n"))
            yield f"event: {kind}\n{data}\n"
            if kind == "end":
                return
    finally:
        hub.close(opened)
