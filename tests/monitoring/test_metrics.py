"""``/metrics``: who may scrape it, and that each figure is what the database holds (parsed as Prometheus would)."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from jobs.models import TrackerStatus, TrainJobTransition
from runtimes.choices import ClusterState, SyncState
from runtimes.domain.manifest import new_runtime
from runtimes.models import PolicySync
from runtimes.services.policies import policy_create
from tests.jobs.factories import tracked_job
from trainer_portal import metrics

pytestmark = pytest.mark.django_db
TOKEN = "s3cret-scrape-token"


def scrape(now: dt.datetime | None = None) -> dict[str, list]:
    """Return {sample name: [(labels, value)]} of one scrape."""
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(metrics.render_metrics(now=now).decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: dict, name: str, **labels) -> float | None:
    """Return the value of the one sample of ``name`` whose labels include ``labels`` (None when there is none)."""
    found = [v for sample_labels, v in samples.get(name, []) if labels.items() <= sample_labels.items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


@pytest.mark.parametrize(("token", "open_", "header", "status"), [
    ("", False, "", 403),
    ("", True, "", 200),
    (TOKEN, False, "", 401),
    (TOKEN, False, "Bearer wrong", 401),
    (TOKEN, True, "Basic " + TOKEN, 401),
    (TOKEN, False, "Bearer " + TOKEN, 200),
], ids=["closed", "open", "token-missing", "token-wrong", "token-not-bearer", "token-right"])
def test_who_may_scrape(client, settings, token, open_, header, status):
    settings.TRAINER_PORTAL_METRICS_TOKEN = token
    settings.TRAINER_PORTAL_METRICS_OPEN = open_
    settings.ALLOWED_HOSTS = ["portal.example.com"]

    # Prometheus scrapes the pod's address, which is no allowed host.
    response = client.get("/metrics", HTTP_AUTHORIZATION=header, HTTP_HOST="10.1.2.3:8000")

    assert response.status_code == status
    if status == 200:
        assert response["Content-Type"].startswith("text/plain; version=0.0.4")
        assert b"trainer_portal_trainjobs" in response.content
    if status == 401:
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_post_is_refused(client, settings):
    settings.TRAINER_PORTAL_METRICS_OPEN = True
    assert client.post("/metrics").status_code == 405


def test_trainjobs_by_state_with_namespaces_capped(settings):
    settings.TRAINER_PORTAL_METRICS_MAX_NAMESPACES = 2
    for namespace, n in (("team-a", 3), ("team-b", 2), ("team-c", 1), ("team-d", 1)):
        for _ in range(n):
            tracked_job(namespace, state="running")
    tracked_job("team-a", state="queued")
    tracked_job("team-a", state="running", gone_at=timezone.now())

    samples = scrape()

    assert value(samples, "trainer_portal_trainjobs", namespace="team-a", state="running") == 3
    assert value(samples, "trainer_portal_trainjobs", namespace="team-a", state="queued") == 1
    assert value(samples, "trainer_portal_trainjobs", namespace="team-b", state="running") == 2
    assert value(samples, "trainer_portal_trainjobs", namespace="other", state="running") == 2
    assert {labels["namespace"] for labels, _ in samples["trainer_portal_trainjobs"]} == {"team-a", "team-b", "other"}
    assert {labels["cluster"] for labels, _ in samples["trainer_portal_trainjobs"]} == {"default"}


def test_pending_gangs_gpus_and_partially_bound_gangs():
    now = timezone.now()
    tracked_job(state="queued", queue="team-a-queue", num_nodes=4, submitted=now - dt.timedelta(minutes=30))
    tracked_job(state="gang-pending", queue="team-a-queue", num_nodes=2, submitted=now - dt.timedelta(minutes=5),
                pod_groups=[{"name": "pg", "minCount": 2, "bound": 1}])
    tracked_job(state="running", queue="team-a-queue", num_nodes=8, submitted=now - dt.timedelta(hours=5),
                pod_groups=[{"name": "pg", "minCount": 8, "bound": 8}])

    samples = scrape(now)

    assert value(samples, "trainer_portal_pending_gangs", queue="team-a-queue") == 2
    assert value(samples, "trainer_portal_pending_gpus", queue="team-a-queue") == (4 + 2) * 8
    assert value(samples, "trainer_portal_partially_bound_gangs", cluster="default") == 1
    assert value(samples, "trainer_portal_partially_bound_gang_gpus", cluster="default") == 8
    age = value(samples, "trainer_portal_oldest_pending_gang_age_seconds", queue="team-a-queue")
    assert 30 * 60 <= age < 31 * 60


def admitted(wait_seconds: float, *, at: dt.datetime, runtime: str = "torch", state: str = "admitted", **fields):
    """A job admitted ``wait_seconds`` after submission, at ``at``, with its admission transition."""
    submitted = at - dt.timedelta(seconds=wait_seconds)
    job = tracked_job(state=state, runtime=runtime, submitted=submitted, admitted=at, **fields)
    TrainJobTransition.objects.create(job=job, from_state="queued", to_state=state, at=at, seq=job.change_seq + 1000)
    return job


def test_time_to_admission_histogram_over_the_window(settings):
    settings.TRAINER_PORTAL_METRICS_WINDOW_SECONDS = 3600
    now = timezone.now()
    admitted(10, at=now - dt.timedelta(minutes=5), queue="q1")
    admitted(100, at=now - dt.timedelta(minutes=10), queue="q1", state="running")
    admitted(5000, at=now - dt.timedelta(minutes=20), queue="q1")
    admitted(7, at=now - dt.timedelta(hours=2), queue="q1")  # outside the window
    readmitted = admitted(50, at=now - dt.timedelta(minutes=30), queue="q1")
    # A second admission (after a preemption) is not a time to admission: only the first counts.
    TrainJobTransition.objects.create(job=readmitted, from_state="preempted", to_state="admitted",
                                      at=now - dt.timedelta(minutes=1), seq=99999)

    samples = scrape(now)
    bucket = "trainer_portal_admission_wait_time_seconds_bucket"
    labels = {"cluster": "default", "namespace": "team-a", "runtime": "torch", "level": "trainjob", "queue": "q1"}

    assert value(samples, bucket, le="5.0", **labels) == 0
    assert value(samples, bucket, le="15.0", **labels) == 1
    assert value(samples, bucket, le="60.0", **labels) == 2
    assert value(samples, bucket, le="120.0", **labels) == 3
    assert value(samples, bucket, le="3600.0", **labels) == 3
    assert value(samples, bucket, le="7200.0", **labels) == 4
    assert value(samples, bucket, le="+Inf", **labels) == 4
    assert value(samples, "trainer_portal_admission_wait_time_seconds_gcount", **labels) == 4
    assert value(samples, "trainer_portal_admission_wait_time_seconds_gsum", **labels) == pytest.approx(5160, abs=1)


def test_policy_sync_state_and_drift(alice):
    policy_create(manifest=new_runtime("torch-gang"), author=alice, message="first")
    PolicySync.objects.update(sync_state=SyncState.DRIFTED, cluster_state=ClusterState.DRIFTED,
                              last_synced_at=timezone.now())

    samples = scrape()

    assert value(samples, "trainer_portal_policy_sync_state", policy="torch-gang", state="drifted") == 1
    assert value(samples, "trainer_portal_policy_sync_state", policy="torch-gang", state="synced") == 0
    assert value(samples, "trainer_portal_policy_drifted", policy="torch-gang", cluster="default") == 1
    assert value(samples, "trainer_portal_policy_syncs", cluster="default", state="drifted") == 1


@pytest.mark.parametrize(("heartbeat_age", "connected", "stale"), [(1, True, 0), (60, True, 1), (1, False, 1)],
                         ids=["live", "silent", "disconnected"])
def test_watcher_staleness_and_leader(heartbeat_age, connected, stale):
    now = timezone.now()
    TrackerStatus.objects.create(holder="watch-0", heartbeat_at=now - dt.timedelta(seconds=heartbeat_age),
                                 connected=connected, synced=True, tracked=12)

    samples = scrape(now)

    assert value(samples, "trainer_portal_watcher_stale", cluster="default") == stale
    assert value(samples, "trainer_portal_watcher_heartbeat_age_seconds", cluster="default") == pytest.approx(
        heartbeat_age, abs=0.5)
    assert value(samples, "trainer_portal_watcher_leader", cluster="default", holder="watch-0") == 1
    assert value(samples, "trainer_portal_watcher_tracked_trainjobs", cluster="default") == 12


def test_broker_queue_depth_on_redis(settings):
    url = "redis://127.0.0.1:6379/4"
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    queue = "metrics-test-queue"
    client.delete(queue, f"{queue}\x06\x163")
    client.rpush(queue, "a", "b")
    client.rpush(f"{queue}\x06\x163", "c")
    settings.CELERY_BROKER_URL = url
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    try:
        samples = scrape()
    finally:
        client.delete(queue, f"{queue}\x06\x163")

    assert value(samples, "trainer_portal_broker_queue_depth", queue=queue) == 3
    assert value(samples, "trainer_portal_metrics_errors") == 0


def test_an_unreachable_broker_is_an_error_not_a_failed_scrape(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    tracked_job(state="running")

    samples = scrape()

    assert value(samples, "trainer_portal_metrics_errors") == 1
    assert value(samples, "trainer_portal_trainjobs", state="running") == 1


def test_histogram_label_sets_beyond_the_cap_fold_into_other(settings):
    settings.TRAINER_PORTAL_METRICS_MAX_HISTOGRAMS = 2
    now = timezone.now()
    for runtime, n in (("torch-a", 3), ("torch-b", 2), ("torch-c", 1), ("torch-d", 1)):
        for _ in range(n):
            admitted(10, at=now - dt.timedelta(minutes=5), runtime=runtime)

    samples = scrape(now)
    count = "trainer_portal_admission_wait_time_seconds_gcount"

    assert {labels["runtime"]: v for labels, v in samples[count]} == {"torch-a": 3, "other": 4}
    (other,) = [labels for labels, _ in samples[count] if labels["runtime"] == "other"]
    assert other["namespace"] == "other" and other["queue"] == "other" and other["level"] == "trainjob"


def test_scrapes_within_the_cache_time_share_one_computation(client, settings):
    settings.TRAINER_PORTAL_METRICS_OPEN = True
    settings.TRAINER_PORTAL_METRICS_CACHE_SECONDS = 60
    tracked_job(state="running")
    first = client.get("/metrics").content
    tracked_job(state="running")

    assert client.get("/metrics").content == first  # the second job shows after the cache time
    settings.TRAINER_PORTAL_METRICS_CACHE_SECONDS = 0
    assert value(scrape(), "trainer_portal_trainjobs", state="running") == 2
