"""``/metrics``: the web side's figures in the Prometheus text format, computed from the database at scrape time.

Every figure is read from the database when Prometheus asks (the Healthchecks way), so any gunicorn worker of any
replica gives the same answer and nothing is kept in process memory: no multiprocess counters, no lost increments
on a restart. A scrape runs a handful of aggregate queries (``benchmarks/metrics.py`` measures it at 30,000 jobs).
The watcher process serves its own figures on its own port (``trainer_portal.watch_metrics``).

Names and labels follow Kueue's metrics (``kueue_admission_wait_time_seconds{cluster_queue}`` →
``trainer_portal_admission_wait_time_seconds{queue}``) so both sit on one dashboard. Cardinality is bounded: no
label names a job; namespaces, runtimes and queues (free text on a TrainJob) keep their name only for the most
populous ``TRAINER_PORTAL_METRICS_MAX_*`` values, the rest are reported as ``other``. docs/monitoring.md lists every
metric with its labels.

This module composes the apps' models the way the URL map composes their views: it only reads.
"""

from __future__ import annotations

import datetime as dt
import hmac
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, F, FloatField, Func, Min, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from jobs.domain import states
from jobs.models import TrackerStatus, TrainJob, TrainJobTransition
from runtimes.choices import ClusterState, SyncState
from runtimes.models import PolicySync
from trainer_portal.cluster.models import Cluster

logger = logging.getLogger(__name__)

PREFIX = "trainer_portal_"
OTHER = "other"
# Upper bounds of the time-to-admission buckets in seconds (1 s … 1 day; +Inf is added): fine where people wait
# for interactive jobs, coarse where a gang waits for hours. Fixed, so every scrape and replica agree.
ADMISSION_BUCKETS: tuple[float, ...] = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200,
                                        86400)
# The seconds without a heartbeat after which a watcher counts as stale (the pages' banner uses the same number).
DEFAULT_STALE_SECONDS = 15.0
CACHE_KEY = "trainer_portal:metrics:exposition"


class SecondsBetween(Func):
    """``later - earlier`` in seconds (a float) computed by the database itself: on SQLite with ``julianday`` (Django's
    own datetime arithmetic there is a Python function called per row and per use), on PostgreSQL with ``EXTRACT(EPOCH
    FROM …)``."""

    arity = 2
    output_field = FloatField()
    template = "EXTRACT(EPOCH FROM (%(expressions)s))"
    arg_joiner = " - "

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s)) * 86400.0)",
                           arg_joiner=") - julianday(", **extra)


def _setting(name: str, default):
    return getattr(settings, name, default)


def capped(counts: Counter, limit: int) -> dict[str, str]:
    """Return ``{value: label}`` keeping the ``limit`` values with the largest counts (ties by name) and mapping
    every other value to ``"other"``; an empty value is reported as ``"none"``."""
    keep = {value for value, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:max(limit, 0)]}
    return {value: (value or "none") if value in keep else OTHER for value in counts}


class PortalCollector:
    """Computes every web-side metric from the database on each ``collect()`` (registered on a private registry)."""

    def __init__(self, *, now: dt.datetime | None = None) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        """Yield the metric families; a failing group is logged and reported by ``…_metrics_errors``, the others are
        still served."""
        now = self.now or timezone.now()
        started = time.perf_counter()
        errors = 0
        for group in (self._jobs, self._admission, self._policies, self._watchers, self._broker):
            try:
                yield from group(now)
            except Exception:  # one broken figure must not hide all others from the alerts
                errors += 1
                logger.exception("metrics: %s failed", group.__name__)
        failed = GaugeMetricFamily(PREFIX + "metrics_errors", "Metric groups that failed in this scrape.")
        failed.add_metric([], errors)
        yield failed
        took = GaugeMetricFamily(PREFIX + "metrics_collect_seconds", "Time this scrape spent computing the figures.")
        took.add_metric([], time.perf_counter() - started)
        yield took

    # -- TrainJobs ------------------------------------------------------------------------------------------------

    def _jobs(self, now: dt.datetime) -> Iterable[Metric]:
        # Grouped by the cluster's key, named afterwards: no join over every TrainJob row.
        names = dict(Cluster.objects.values_list("id", "name"))
        rows = [(names.get(cluster_id, str(cluster_id)), namespace, state, n) for cluster_id, namespace, state, n in
                TrainJob.objects.filter(gone_at__isnull=True).order_by()
                .values_list("cluster_id", "namespace", "state").annotate(n=Count("id"))]
        namespaces = capped(_sum_by(rows, 1), _setting("TRAINER_PORTAL_METRICS_MAX_NAMESPACES", 50))
        by_state: Counter = Counter()
        for cluster, namespace, state, n in rows:
            by_state[(cluster, namespaces[namespace], state)] += n
        family = GaugeMetricFamily(PREFIX + "trainjobs", "TrainJobs tracked now, by admission state.",
                                   labels=["cluster", "namespace", "state"])
        for labels, n in sorted(by_state.items()):
            family.add_metric(list(labels), n)
        yield family

        waiting = [(names.get(row[0], str(row[0])), *row[1:]) for row in
                   TrainJob.objects.filter(gone_at__isnull=True, state__in=sorted(states.WAITING_STATES))
                   .order_by().values_list("cluster_id", "queue_name", "runtime_name")
                   .annotate(n=Count("id"), gpus=Sum(F("num_nodes") * F("gpus_per_node")), oldest=Min("since"))]
        queues = capped(_sum_by([(r[1], r[3]) for r in waiting], 0), _setting("TRAINER_PORTAL_METRICS_MAX_QUEUES", 50))
        runtimes = capped(_sum_by([(r[2], r[3]) for r in waiting], 0),
                          _setting("TRAINER_PORTAL_METRICS_MAX_RUNTIMES", 30))
        gangs: Counter = Counter()
        gpus: Counter = Counter()
        oldest: dict[tuple[str, str], float] = {}
        for cluster, queue, runtime, n, gpu_sum, since in waiting:
            key = (cluster, queues[queue], runtimes[runtime])
            gangs[key] += n
            gpus[key] += gpu_sum or 0
            age = max(0.0, (now - since).total_seconds())
            oldest[key[:2]] = max(oldest.get(key[:2], 0.0), age)
        labels = ["cluster", "queue", "runtime"]
        gang_family = GaugeMetricFamily(PREFIX + "pending_gangs", "TrainJobs waiting for admission (each a gang).",
                                        labels=labels)
        gpu_family = GaugeMetricFamily(PREFIX + "pending_gpus", "GPUs asked for by the TrainJobs waiting for "
                                       "admission (nodes × GPUs per node).", labels=labels)
        for key in sorted(gangs):
            gang_family.add_metric(list(key), gangs[key])
            gpu_family.add_metric(list(key), gpus[key])
        yield gang_family
        yield gpu_family
        oldest_family = GaugeMetricFamily(PREFIX + "oldest_pending_gang_age_seconds", "How long the longest-waiting "
                                          "TrainJob has waited in its current state.", labels=["cluster", "queue"])
        for key in sorted(oldest):
            oldest_family.add_metric(list(key), oldest[key])
        yield oldest_family

        # A gang that holds some of its pods placed while it waits for the rest is "gang pending" (the scheduler
        # placed part of it); unschedulable and preempted gangs hold nothing.
        held: Counter = Counter()
        partial: Counter = Counter()
        for cluster_id, groups, per_node in (TrainJob.objects.filter(gone_at__isnull=True, state=states.GANG_PENDING)
                                             .order_by().values_list("cluster_id", "pod_groups", "gpus_per_node")
                                             .iterator(chunk_size=5000)):
            bound = sum(int(group.get("bound") or 0) for group in groups or () if isinstance(group, dict))
            if bound > 0:
                cluster = names.get(cluster_id, str(cluster_id))
                partial[cluster] += 1
                held[cluster] += bound * (per_node or 0)
        clusters = sorted({row[0] for row in rows} | set(held))
        partial_family = GaugeMetricFamily(PREFIX + "partially_bound_gangs", "Waiting TrainJobs with some but not "
                                           "all of their pods bound to nodes.", labels=["cluster"])
        held_family = GaugeMetricFamily(PREFIX + "partially_bound_gang_gpus", "GPUs held by the bound pods of "
                                        "waiting gangs (capacity nobody uses).", labels=["cluster"])
        for cluster in clusters:
            partial_family.add_metric([cluster], partial[cluster])
            held_family.add_metric([cluster], held[cluster])
        yield partial_family
        yield held_family

    def _admission(self, now: dt.datetime) -> Iterable[Metric]:
        window = max(60, int(_setting("TRAINER_PORTAL_METRICS_WINDOW_SECONDS", 3600)))
        wait = SecondsBetween(F("at"), F("job__submitted_at"))
        # The first admission of each job (the one its admitted_at records), admitted within the window.
        transitions = (TrainJobTransition.objects
                       .filter(to_state__in=sorted(states.ADMITTED_STATES), at__gt=now - dt.timedelta(seconds=window),
                               at__lte=now, at=F("job__admitted_at"))
                       .order_by().annotate(wait=wait))
        buckets = {f"le{i}": Count("id", filter=Q(wait__lte=float(bound)))
                   for i, bound in enumerate(ADMISSION_BUCKETS)}
        rows = list(transitions.values_list("job__cluster__name", "job__namespace", "job__runtime_name",
                                            "job__level", "job__queue_name")
                    .annotate(n=Count("id"), total=Sum("wait"), **buckets))
        namespaces = capped(_sum_by([(r[1], r[5]) for r in rows], 0),
                            _setting("TRAINER_PORTAL_METRICS_MAX_NAMESPACES", 50))
        runtimes = capped(_sum_by([(r[2], r[5]) for r in rows], 0), _setting("TRAINER_PORTAL_METRICS_MAX_RUNTIMES", 30))
        queues = capped(_sum_by([(r[4], r[5]) for r in rows], 0), _setting("TRAINER_PORTAL_METRICS_MAX_QUEUES", 50))
        folded: dict[tuple, list[float]] = defaultdict(lambda: [0.0] * (len(ADMISSION_BUCKETS) + 2))
        for row in rows:
            cluster, namespace, runtime, level, queue, n, total = row[:7]
            key = (cluster, namespaces[namespace], runtimes[runtime], level, queues[queue])
            sums = folded[key]
            for i, count in enumerate(row[7:]):
                sums[i] += count
            sums[-2] += n
            sums[-1] += _seconds(total)
        limit = max(int(_setting("TRAINER_PORTAL_METRICS_MAX_HISTOGRAMS", 200)), 1)
        if len(folded) > limit:
            # Keep the busiest label sets; the rest become one "other" set per cluster and level.
            ranked = sorted(folded, key=lambda key: (-folded[key][-2], key))
            for key in ranked[limit - 1:]:
                sums = folded.pop(key)
                target = folded[(key[0], OTHER, OTHER, key[3], OTHER)]
                for i, count in enumerate(sums):
                    target[i] += count
        family = GaugeHistogramMetricFamily(
            PREFIX + "admission_wait_time_seconds",
            f"Time from submission to first admission of the TrainJobs admitted in the last {window} s (a gauge "
            "histogram over that window: query it without rate()).",
            labels=["cluster", "namespace", "runtime", "level", "queue"])
        for key in sorted(folded):
            sums = folded[key]
            cumulative = [(_le(bound), sums[i]) for i, bound in enumerate(ADMISSION_BUCKETS)]
            cumulative.append(("+Inf", sums[-2]))
            family.add_metric(list(key), cumulative, gsum_value=sums[-1])
        yield family
        window_family = GaugeMetricFamily(PREFIX + "admission_window_seconds", "The trailing window "
                                          "admission_wait_time_seconds covers.")
        window_family.add_metric([], window)
        yield window_family

    # -- policies -------------------------------------------------------------------------------------------------

    def _policies(self, now: dt.datetime) -> Iterable[Metric]:
        rows = list(PolicySync.objects.order_by("policy__name", "cluster__name")
                    .values_list("policy__name", "cluster__name", "sync_state", "cluster_state", "last_synced_at"))
        state_family = GaugeMetricFamily(PREFIX + "policy_sync_state", "1 for the sync state each runtime policy is in "
                                         "on each cluster, 0 for the others.", labels=["policy", "cluster", "state"])
        drift_family = GaugeMetricFamily(PREFIX + "policy_drifted", "1 when the cluster's runtime differs from the "
                                         "revision the portal applied (or is missing).", labels=["policy", "cluster"])
        synced_family = GaugeMetricFamily(PREFIX + "policy_last_sync_timestamp_seconds", "When the policy was last "
                                          "applied to the cluster (Unix time).", labels=["policy", "cluster"])
        totals: Counter = Counter()
        for policy, cluster, sync_state, cluster_state, synced_at in rows:
            for value in SyncState.values:
                state_family.add_metric([policy, cluster, value], 1 if value == sync_state else 0)
            drifted = sync_state == SyncState.DRIFTED or cluster_state in (ClusterState.DRIFTED, ClusterState.MISSING)
            drift_family.add_metric([policy, cluster], 1 if drifted else 0)
            if synced_at is not None:
                synced_family.add_metric([policy, cluster], synced_at.timestamp())
            totals[(cluster, sync_state)] += 1
        yield state_family
        yield drift_family
        yield synced_family
        count_family = GaugeMetricFamily(PREFIX + "policy_syncs", "Runtime policies per cluster and sync state.",
                                         labels=["cluster", "state"])
        for (cluster, state), n in sorted(totals.items()):
            count_family.add_metric([cluster, state], n)
        yield count_family

    # -- watchers -------------------------------------------------------------------------------------------------

    def _watchers(self, now: dt.datetime) -> Iterable[Metric]:
        stale_after = float(_setting("TRAINER_PORTAL_TRACKING_STALE_SECONDS", DEFAULT_STALE_SECONDS))
        rows = list(TrackerStatus.objects.select_related("cluster").order_by("cluster__name"))
        labels = ["cluster"]
        heartbeat = GaugeMetricFamily(PREFIX + "watcher_heartbeat_age_seconds", "Seconds since the cluster's "
                                      "tracker last wrote its heartbeat.", labels=labels)
        event = GaugeMetricFamily(PREFIX + "watcher_last_event_age_seconds", "Seconds since the tracker last saw an "
                                  "event from the cluster.", labels=labels)
        stale = GaugeMetricFamily(PREFIX + "watcher_stale", "1 when the pages say tracking is stale (no heartbeat "
                                  f"for {stale_after:g} s, cluster unreachable, or first sync unfinished).",
                                  labels=labels)
        connected = GaugeMetricFamily(PREFIX + "watcher_connected", "1 while the tracker reaches the cluster.",
                                      labels=labels)
        synced = GaugeMetricFamily(PREFIX + "watcher_synced", "1 once every watched kind has been listed.",
                                   labels=labels)
        leader = GaugeMetricFamily(PREFIX + "watcher_leader", "1 for the process that holds the cluster's Lease and "
                                   "writes (its identity in holder).", labels=["cluster", "holder"])
        tracked = GaugeMetricFamily(PREFIX + "watcher_tracked_trainjobs", "TrainJobs the tracker holds in memory.",
                                    labels=labels)
        for row in rows:
            name = [row.cluster.name]
            age = (now - row.heartbeat_at).total_seconds() if row.heartbeat_at else float("inf")
            heartbeat.add_metric(name, max(age, 0.0))
            if row.last_event_at is not None:
                event.add_metric(name, max((now - row.last_event_at).total_seconds(), 0.0))
            stale.add_metric(name, 1 if (age > stale_after or not row.connected or not row.synced) else 0)
            connected.add_metric(name, 1 if row.connected else 0)
            synced.add_metric(name, 1 if row.synced else 0)
            if row.holder:
                leader.add_metric([row.cluster.name, row.holder], 1)
            tracked.add_metric(name, row.tracked)
        yield from (heartbeat, event, stale, connected, synced, leader, tracked)

    # -- broker ---------------------------------------------------------------------------------------------------

    def _broker(self, now: dt.datetime) -> Iterable[Metric]:
        queue = _setting("CELERY_TASK_DEFAULT_QUEUE", "celery")
        depth = broker_queue_depth(_setting("CELERY_BROKER_URL", ""), queue,
                                   _setting("CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {})
        family = GaugeMetricFamily(PREFIX + "broker_queue_depth", "Celery tasks waiting in the broker's queue.",
                                   labels=["queue"])
        if depth is not None:
            family.add_metric([queue], depth)
        yield family


def broker_queue_depth(url: str, queue: str, options: dict) -> int | None:
    """Return the number of messages waiting in Celery queue ``queue`` on the broker at ``url`` (Redis: LLEN of the
    queue's lists, every priority step; the embedded filesystem broker: its message files), or None for a broker
    this cannot read. Raises the client's error when the broker does not answer (the scrape reports it)."""
    if url.startswith(("redis://", "rediss://", "unix://")):
        import redis  # only a Redis broker needs the client

        client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        try:
            # kombu keeps priority steps in separate lists: "queue", "queue\x06\x163", "queue\x06\x166", …
            names = [queue] + [f"{queue}\x06\x16{step}" for step in options.get("priority_steps", (3, 6, 9))]
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.llen(name)
            return int(sum(pipe.execute()))
        finally:
            client.close()
    if url.startswith(("atomicfs", "filesystem")) and options.get("data_folder_in"):
        from trainer_portal.broker import queue_size

        return queue_size(options["data_folder_in"], queue)
    return None


def _sum_by(rows: Iterable[tuple], index: int) -> Counter:
    """Return a Counter of the last element of each row, keyed by the row's element at ``index``."""
    counts: Counter = Counter()
    for row in rows:
        counts[row[index]] += row[-1]
    return counts


def _seconds(value) -> float:
    return max(float(value or 0.0), 0.0)


def _le(bound: float) -> str:
    return f"{float(bound):g}" if bound != int(bound) else f"{int(bound)}.0"


def render_metrics(*, now: dt.datetime | None = None) -> bytes:
    """Return the current figures in the Prometheus text format (0.0.4: every Prometheus since 2.0 reads it)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector(now=now))
    return generate_latest(registry)


def _authorized(request: HttpRequest) -> tuple[bool, int, str]:
    token = getattr(settings, "TRAINER_PORTAL_METRICS_TOKEN", "")
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True, 200, ""
        return False, 401, "Send the metrics token: Authorization: Bearer <TRAINER_PORTAL_METRICS_TOKEN>.\n"
    if getattr(settings, "TRAINER_PORTAL_METRICS_OPEN", False):
        return True, 200, ""
    return False, 403, ("/metrics is closed: set TRAINER_PORTAL_METRICS_TOKEN (and send it as a bearer token), or "
                        "TRAINER_PORTAL_METRICS_OPEN=1 when a network policy guards it.\n")


@never_cache
@require_http_methods(["GET", "HEAD"])
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Return the figures (200, text/plain; version=0.0.4); 401 without the configured bearer token, 403 when
    /metrics is neither given a token nor opened."""
    ok, status, why = _authorized(request)
    if not ok:
        response = HttpResponse(why, status=status, content_type="text/plain; charset=utf-8")
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    seconds = float(getattr(settings, "TRAINER_PORTAL_METRICS_CACHE_SECONDS", 0) or 0)
    if seconds > 0:
        # Several Prometheus servers scraping several replicas at once share one computation (shared cache).
        body = cache.get_or_set(CACHE_KEY, render_metrics, timeout=seconds)
    else:
        body = render_metrics()
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
