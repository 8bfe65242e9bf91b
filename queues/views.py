"""The queue pages: overview, ClusterQueue, LocalQueue. Server-rendered from the database, live by htmx polling
(the page's live region asks for the page again every second and swaps itself), complete without JavaScript."""

from __future__ import annotations

import hashlib
import json

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.shortcuts import render
from django.views.decorators.http import require_GET

from trainer_portal import roles
from trainer_portal.permissions import capability_required

from . import selectors
from .errors import InvalidQuery, QueueNotFound

can_see_queues = capability_required(roles.JOBS_VIEW)


def _cluster(request: HttpRequest):
    name = request.GET.get("cluster", "")
    if len(name) > 253:
        raise InvalidQuery("cluster: a cluster name has at most 253 characters", field="cluster")
    return selectors.cluster_for(name or None)


def _etag(request: HttpRequest, cluster) -> str:
    """Return the ETag of this page for this user: it changes with the queue data, the watcher's heartbeat, the
    freshness, the user's visibility and the query."""
    token = selectors.change_token(request.user, cluster)
    query = hashlib.blake2b(request.get_full_path().encode(), digest_size=6).hexdigest()
    return f'W/"q-{token}-{query}"'


def _live(request: HttpRequest, cluster, template: str, context: dict) -> HttpResponse:
    """Render ``template``; a poll of the live region (htmx) whose If-None-Match is current gets a 304."""
    etag = _etag(request, cluster)
    if request.headers.get("HX-Request") and request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified(headers={"ETag": etag})
    context["live_headers"] = json.dumps({"If-None-Match": etag})
    response = render(request, template, context)
    response["ETag"] = etag
    return response


def _members(cluster_queues) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    for queue in cluster_queues:
        if queue.cohort:
            members.setdefault(queue.cohort, []).append(queue.name)
    return members


def _error(request: HttpRequest, error: InvalidQuery) -> HttpResponse:
    return render(request, "queues/overview.html", {"error": error.message, "cluster_queues": [],
                                                     "local_queues": [], "cohorts": []}, status=400)


@require_GET
@can_see_queues
def overview(request: HttpRequest) -> HttpResponse:
    """Every ClusterQueue and cohort of a cluster, and the LocalQueues the user may see (others as a count)."""
    try:
        cluster = _cluster(request)
    except InvalidQuery as error:
        return _error(request, error)
    except QueueNotFound as error:
        raise Http404(error.message) from None
    context = selectors.overview(request.user, cluster)
    members = _members(context["cluster_queues"])
    context["cohort_rows"] = [{"name": c.name, "members": sorted(members.get(c.name, []))}
                              for c in context["cohorts"]]
    return _live(request, cluster, "queues/overview.html", context)


@require_GET
@can_see_queues
def cluster_queue(request: HttpRequest, name: str) -> HttpResponse:
    """One ClusterQueue: usage per flavor and resource, its LocalQueues and its pending list in Kueue's order."""
    try:
        cluster = _cluster(request)
        detail = selectors.cluster_queue_detail(request.user, cluster, name)
    except InvalidQuery as error:
        return _error(request, error)
    except QueueNotFound as error:
        raise Http404(error.message) from None
    return _live(request, cluster, "queues/clusterqueue.html", {"detail": detail, "cluster": cluster,
                                                               "freshness": detail.freshness,
                                                               "queue": detail.cluster_queue})


@require_GET
@can_see_queues
def local_queue(request: HttpRequest, namespace: str, local_queue: str) -> HttpResponse:
    """One LocalQueue the user may see: its ClusterQueue's usage and its own pending list."""
    try:
        cluster = _cluster(request)
        detail = selectors.local_queue_detail(request.user, cluster, namespace, local_queue)
    except InvalidQuery as error:
        return _error(request, error)
    except QueueNotFound as error:
        raise Http404(error.message) from None
    return _live(request, cluster, "queues/localqueue.html", {"detail": detail, "cluster": cluster,
                                                             "freshness": detail.freshness,
                                                             "queue": detail.local_queue})
