"""TrainJob pages: the list, one job's detail, the admin overview, the policy page's job list and namespace grants.

Every page checks who is asking (login, then a role that may see TrainJobs; grants need platform admin) and reads
through ``jobs.selectors``, which filter by the user's namespaces: a job the user may not see answers 404 like a
missing one. Pages work without JavaScript; with htmx they poll a ``live`` partial every second, answered 304 when
the change token (ETag) is the one the page already shows, else only the parts that changed.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import itertools
import json
from collections import OrderedDict

from django.contrib import messages
from django.core.cache import cache
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from trainer_portal import roles
from trainer_portal.live.fragments import live_fragment
from trainer_portal.permissions import capability_required

from . import selectors, services
from .choices import AdmissionState
from .domain import states
from .domain.events import group_events
from .errors import InvalidGrant, InvalidQuery, TrainJobNotFound
from .forms import JobFilterForm, NamespaceGrantForm
from .templatetags.jobs_ui import LIVE_PARAMS

PAGE_SIZE = 50
# After a change every open page asks at once; the first answer per token is kept this long for the others.
LIVE_CACHE_SECONDS = 10


can_see_jobs = capability_required(roles.JOBS_VIEW)


def _etag(token: str) -> str:
    return f'W/"{token}"'


def _not_modified(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    return bool(header) and any(candidate.strip() == etag for candidate in header.split(","))


def _digest(*parts: object) -> str:
    return hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=8).hexdigest()


# -- list ----------------------------------------------------------------------------------------------------------


def _filter_params(request: HttpRequest) -> QueryDict:
    """Return the request's query without the live partial's bookkeeping (what the list shows depends on).

    Raises BadRequest (400) for a value with a NUL character: no Kubernetes name has one, and PostgreSQL refuses
    it in any query."""
    if any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
        raise BadRequest("A query parameter contains a NUL character.")
    params = request.GET.copy()
    for name in LIVE_PARAMS:
        params.pop(name, None)
    return params


def _given(params: QueryDict, name: str) -> list[str]:
    return [params[name]] if params.get(name) else []


def _list_context(request: HttpRequest, *, live: bool = False) -> tuple[dict, int]:
    """Return the list page's context and HTTP status (400 when a filter is invalid: the form names it).

    ``live``: the filter form is not shown, so its choices are not looked up; the selectors still restrict every
    value to what the user may see (a namespace filter outside the grants simply matches nothing)."""
    user = request.user
    visibility = selectors.visible_namespaces(user)
    params = _filter_params(request)
    if live:
        values = selectors.FilterValues(*(_given(params, name) for name in ("namespace", "runtime", "queue")))
        clusters = [(name, name) for name in _given(params, "cluster")]
    else:
        values = selectors.trainjob_filter_values(user=user)
        clusters = selectors.cluster_choices()
    form = JobFilterForm(params, namespaces=values.namespaces, runtimes=values.runtimes, queues=values.queues,
                         clusters=clusters)
    status = 200
    error = ""
    filters: dict[str, str] = {}
    sort = selectors.DEFAULT_SORT
    if form.is_valid():
        filters = form.filters()
        sort = form.cleaned_data.get("sort") or selectors.DEFAULT_SORT
    else:
        status = 400
        error = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
    tracking = selectors.tracking_status()
    page = None
    if status == 200:
        try:
            page = selectors.trainjob_list(user=user, namespace=filters.get("namespace"), state=filters.get("state"),
                                           runtime=filters.get("runtime"), level=filters.get("level"),
                                           queue=filters.get("queue"), search=filters.get("q"), sort=sort,
                                           cursor=params.get("cursor") or None, limit=PAGE_SIZE,
                                           cluster=filters.get("cluster"))
        except InvalidQuery as exc:
            status, error = 400, f"{exc.field}: {exc.message}"
    try:
        counts = selectors.trainjob_summary(user=user, namespace=filters.get("namespace"),
                                            cluster=filters.get("cluster"))
    except InvalidQuery as exc:  # a cluster deleted since the form was built
        status, error, counts = 400, f"{exc.field}: {exc.message}", {}
    items = page.items if page else []
    context = {
        "form": form, "filters": filters, "filtered": bool(filters), "sort": sort, "error": error,
        "items": items, "next_cursor": page.next_cursor if page else None, "paged": bool(params.get("cursor")),
        "counts": [(value, label, counts.get(value, 0)) for value, label in AdmissionState.choices],
        "total": sum(counts.values()), "current_state": filters.get("state", ""),
        "tracking": tracking, "no_grants": visibility.nothing, "everything": visibility.everything,
    }
    context.update(_live_state(request, params, filters, items, counts, tracking))
    return context, status


def _live_state(request: HttpRequest, params: QueryDict, filters: dict, items: list, counts: dict,
                tracking: selectors.TrackingStatus) -> dict:
    """Return what the live poller needs: its URL (with the shown rows' fingerprint) and ETag."""
    query = params.urlencode()
    token = selectors.trainjob_change_token(user=request.user, namespace=filters.get("namespace"), tracking=tracking,
                                            extra=f"list?{query}", cluster=filters.get("cluster"))
    members = _digest(tracking.stale, *(job.uid for job in items))
    seq = max((job.change_seq for job in items), default=0)
    live_params = params.copy()
    live_params.update({"_seq": str(seq), "_m": members, "_c": _digest(sorted(counts.items()))})
    return {"etag": _etag(token), "members": members,
            "live_url": f"{reverse('jobs:live')}?{live_params.urlencode()}",
            "live_headers": json.dumps({"If-None-Match": _etag(token)})}


@require_GET
@can_see_jobs
def job_list(request: HttpRequest) -> HttpResponse:
    """The TrainJobs the user may see, with filters, counts per state and live updates."""
    context, status = _list_context(request)
    return render(request, "jobs/list.html", context, status=status)


@live_fragment
@require_GET
@can_see_jobs
def job_list_live(request: HttpRequest) -> HttpResponse:
    """The list's live partial: 304 when nothing changed, else only the rows (and counts) that changed.

    When the set or order of the shown rows changed (a job appeared, left the filter, moved in the sort) or
    tracking went stale/live, the whole results table is sent instead."""
    params = _filter_params(request)
    tracking = selectors.tracking_status()
    namespace = params.get("namespace") or None
    token = selectors.trainjob_change_token(user=request.user, namespace=namespace, tracking=tracking,
                                            extra=f"list?{params.urlencode()}", cluster=params.get("cluster") or None)
    if _not_modified(request, _etag(token)):
        return HttpResponseNotModified(headers={"ETag": _etag(token)})
    # The answer depends only on the token (rows, visibility, tracking, filters) and on what the page already shows
    # (the query's bookkeeping): pages in the same state share it.
    cache_key = f"jobs-live:{_digest(token, request.GET.urlencode())}"
    cached = cache.get(cache_key)
    if cached is not None:
        return HttpResponse(cached, headers={"ETag": _etag(token)})
    context, status = _list_context(request, live=True)
    if status != 200:
        return render(request, "jobs/_list_live.html", {**context, "full": True}, status=status)
    try:
        seen_seq = int(request.GET.get("_seq", "0"))
    except ValueError:
        seen_seq = 0
    full = request.GET.get("_m") != context["members"]
    changed = [] if full else [job for job in context["items"] if job.change_seq > seen_seq]
    counts_changed = full or request.GET.get("_c") != _digest(sorted((v, n) for v, _, n in context["counts"]))
    response = render(request, "jobs/_list_live.html",
                      {**context, "full": full, "changed": changed, "counts_changed": counts_changed})
    response["ETag"] = context["etag"]
    if context["etag"] == _etag(token):
        cache.set(cache_key, response.content, LIVE_CACHE_SECONDS)
    return response


# -- detail --------------------------------------------------------------------------------------------------------


def _pod_tree(job) -> list[dict]:
    """Return the job's PodGroups, each with its member pods, plus a last group for pods in no known PodGroup."""
    pods_by_group: OrderedDict[str, list[dict]] = OrderedDict()
    for pod in job.pods or []:
        pods_by_group.setdefault(pod.get("podGroup") or "", []).append(pod)
    tree = []
    for group in job.pod_groups or []:
        tree.append({**group, "pods": pods_by_group.pop(group.get("name", ""), [])})
    loose = [pod for pods in pods_by_group.values() for pod in pods]
    if loose:
        tree.append({"name": "", "pods": loose, "loose": True})
    return tree


def _cluster_param(request: HttpRequest) -> str | None:
    """Return the ``?cluster=`` of a detail URL (None: the default cluster). Raises BadRequest for a NUL."""
    value = request.GET.get("cluster") or None
    if value is not None and "\x00" in value:
        raise BadRequest("The cluster parameter contains a NUL character.")
    return value


def _detail_context(request: HttpRequest, namespace: str, name: str) -> dict:
    try:
        detail = selectors.trainjob_detail(user=request.user, namespace=namespace, name=name,
                                           cluster=_cluster_param(request))
    except TrainJobNotFound as exc:
        raise Http404(exc.message) from None
    except InvalidQuery as exc:
        raise Http404(exc.message) from None
    job = detail.job
    tracking = detail.tracking
    token = selectors.trainjob_detail_token(job, tracking)
    placed = [pod for pod in job.pods or [] if pod.get("node")]
    heat = selectors.cluster_heat_summary() if placed else None
    return {
        "job": job, "detail": detail, "tracking": tracking,
        "explanation": detail.explanation,
        "tree": _pod_tree(job), "timeline": detail.timeline, "events": group_events(job.events or []),
        "waiting": job.state in states.WAITING_STATES, "holds_capacity": job.state in states.ADMITTED_STATES,
        "placed_pods": placed, "heat": heat, "etag": _etag(token),
        "live_url": reverse("jobs:detail-live", args=[job.namespace, job.name]) + _cluster_suffix(job),
        "live_headers": json.dumps({"If-None-Match": _etag(token)}),
    }


def _cluster_suffix(job) -> str:
    """Return ``?cluster=<name>`` for a job off the default cluster ("" on the default)."""
    return "" if job.cluster.is_default else "?" + QueryDict.fromkeys(["cluster"], job.cluster.name).urlencode()


@require_GET
@can_see_jobs
def job_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """One TrainJob: ownership tree, timeline, events, why it waits and where its pods landed."""
    return render(request, "jobs/detail.html", _detail_context(request, namespace, name))


@live_fragment
@require_GET
@can_see_jobs
def job_detail_live(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """The detail page's live partial: 304 when the job and tracking are unchanged, else the job's body."""
    try:
        job = selectors.trainjob_get(user=request.user, namespace=namespace, name=name,
                                     cluster=_cluster_param(request))
    except (TrainJobNotFound, InvalidQuery) as exc:
        raise Http404(exc.message) from None
    etag = _etag(selectors.trainjob_detail_token(job, selectors.tracking_status()))
    if _not_modified(request, etag):  # before the explanation: most polls end here
        return HttpResponseNotModified(headers={"ETag": etag})
    context = _detail_context(request, namespace, name)
    response = render(request, "jobs/_detail_live.html", context)
    response["ETag"] = context["etag"]
    return response


# -- overview and the policy page's list ---------------------------------------------------------------------------


@require_GET
@can_see_jobs
def overview(request: HttpRequest) -> HttpResponse:
    """Counts per state and namespace, the longest-waiting gangs and time to admission per runtime and level."""
    user = request.user
    if "\x00" in request.GET.get("cluster", ""):
        raise BadRequest("The cluster parameter contains a NUL character.")
    cluster = request.GET.get("cluster") or None
    try:
        selected = selectors.cluster_named(cluster)
    except InvalidQuery as exc:
        raise BadRequest(exc.message) from None
    by_namespace = selectors.trainjob_counts_by_namespace(user=user, cluster=cluster)
    totals = selectors.trainjob_summary(user=user, cluster=cluster)
    # Only the states some job is in: twelve mostly empty columns would hide the few that matter.
    shown_states = [(value, label) for value, label in AdmissionState.choices if totals.get(value)]
    return render(request, "jobs/overview.html", {
        "states": shown_states, "totals": totals, "total": sum(totals.values()),
        "rows": [(ns, [counts.get(value, 0) for value, _ in shown_states], sum(counts.values()))
                 for ns, counts in by_namespace],
        "waiting": selectors.longest_waiting(user=user, limit=10, cluster=cluster),
        "stats": selectors.admission_stats(user=user, hours=24, cluster=cluster),
        "tracking": selectors.tracking_status(cluster=selected),
        "selected_cluster_filter": selected,
        "no_grants": selectors.visible_namespaces(user).nothing,
    })


@require_GET
@can_see_jobs
def for_runtime(request: HttpRequest, name: str) -> HttpResponse:
    """The TrainJobs using runtime ``name`` (a partial for the policy page; a plain page without htmx)."""
    jobs = selectors.trainjobs_for_runtime(user=request.user, runtime=name, limit=50)
    template = "jobs/_for_runtime.html" if getattr(request, "htmx", False) else "jobs/for_runtime.html"
    return render(request, template, {"runtime": name, "jobs": jobs, "tracking": selectors.tracking_status()})


# -- namespace grants ----------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@capability_required(roles.GRANTS_MANAGE)
def grants(request: HttpRequest) -> HttpResponse:
    """Which groups see which namespaces; platform admins add grants here (POST) and remove them."""
    form = NamespaceGrantForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                grant = services.namespace_grant_create(group_name=form.cleaned_data["group"].name,
                                                        namespace=form.cleaned_data["namespace"],
                                                        cluster=form.cleaned_data.get("cluster") or None)
            except InvalidGrant as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                where = f" (on cluster {grant.cluster.name} only)" if grant.cluster_id else ""
                messages.success(request, f"Members of {grant.group.name} now see the TrainJobs of "
                                          f"{grant.namespace}.{where}")
                return redirect("jobs:grants")
        return render(request, "jobs/grants.html", {"form": form, "grants": selectors.namespace_grants()},
                      status=400)
    return render(request, "jobs/grants.html", {"form": form, "grants": selectors.namespace_grants()})


@require_POST
@capability_required(roles.GRANTS_MANAGE)
def grant_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Remove one grant; its group's members stop seeing the namespace at their next request."""
    grant = next((g for g in selectors.namespace_grants() if g.pk == pk), None)
    if grant is None:
        raise Http404("no such grant (removed already?)")
    services.namespace_grant_delete(group_name=grant.group.name, namespace=grant.namespace,
                                    cluster=grant.cluster.name if grant.cluster_id else None)
    messages.success(request, f"Members of {grant.group.name} no longer see the TrainJobs of {grant.namespace}.")
    return redirect("jobs:grants")


# -- CSV export ----------------------------------------------------------------------------------------------------

EXPORT_HEADER = ("cluster", "namespace", "name", "state", "reason", "runtime", "level", "queue", "nodes",
                 "gpus_per_node", "creator", "priority_class", "submitted_at", "admitted_at", "finished_at",
                 "in_state_since")
# A cell a spreadsheet would run as a formula (OWASP "CSV injection") is written with a leading apostrophe.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


@require_GET
@can_see_jobs
def job_export_csv(request: HttpRequest) -> HttpResponse:
    """The TrainJobs of the list with its current filters and sort (every page, not only the shown one) as CSV,
    streamed from the database in chunks; only what the user may see (namespace isolation), no message texts.
    400 names a bad filter."""
    user = request.user
    params = _filter_params(request)
    values = selectors.trainjob_filter_values(user=user)
    form = JobFilterForm(params, namespaces=values.namespaces, runtimes=values.runtimes, queues=values.queues,
                         clusters=selectors.cluster_choices())
    if not form.is_valid():
        error = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        return HttpResponse(f"Bad filter: {error}\n", status=400, content_type="text/plain; charset=utf-8")
    filters = form.filters()
    try:
        rows = selectors.trainjob_export_rows(
            user=user, sort=form.cleaned_data.get("sort") or None, namespace=filters.get("namespace"),
            state=filters.get("state"), runtime=filters.get("runtime"), level=filters.get("level"),
            queue=filters.get("queue"), search=filters.get("q"), cluster=filters.get("cluster"))
    except InvalidQuery as exc:
        return HttpResponse(f"{exc.field}: {exc.message}\n", status=400, content_type="text/plain; charset=utf-8")
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def lines():
        for row in itertools.chain([EXPORT_HEADER], rows):
            writer.writerow([_csv_cell(value) for value in row])
            line = buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
            yield line

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="trainjobs-{stamp}.csv"'
    response["Cache-Control"] = "private, no-store"
    return response
