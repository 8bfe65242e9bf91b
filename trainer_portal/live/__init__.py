"""Live pages over server-sent events: one stream per open page, served by the ASGI server (``trainer_portal.asgi``).

A page that polls a *live fragment* (a view marked with :func:`trainer_portal.live.fragments.live_fragment`, e.g.
the TrainJobs list's and detail's ``live/`` partials) may instead open ``/live/stream?page=<fragment URL>&etag=…``.
The stream process watches one cheap *watermark* (``sources``: e.g. the highest ``change_seq`` and the trackers'
health); when it moves, the :class:`~trainer_portal.live.hub.Hub` asks the fragment again for every distinct
(session, fragment URL, ETag) among its open streams, through the full middleware chain with the page's own
cookie — so authentication, capabilities and namespace isolation are exactly those of a poll — and sends the
answer down the streams only when it differs from what the page shows. Without the ASGI server (``make run``),
or when the stream fails, the page keeps polling the fragment.
"""
