"""A TrainJob's detail: the ownership tree, bound counts, timeline, events, why it waits, the heat map, live."""

from __future__ import annotations

import datetime as dt
import html as html_lib
import json
import re

import pytest
from django.utils import timezone

from jobs.models import TrainJob, TrainJobTransition
from tests.jobs.factories import live_tracker, tracked_job

pytestmark = pytest.mark.django_db

POD_GROUPS = [
    {"name": "pg-node-x1", "policy": "gang", "minCount": 4, "bound": 3, "condition": "False",
     "reason": "Unschedulable", "message": "0/64 nodes are available: 1 node is cordoned", "topologyKey": "zone",
     "podCount": 4},
]
PODS = [
    {"name": f"big-node-0-{i}", "phase": "Running" if i < 3 else "Pending", "node": f"n{i}" if i < 3 else "",
     "podGroup": "pg-node-x1", "zone": "zone-a", "block": "block-1", "rack": f"rack-{i % 2}"}
    for i in range(4)
]
EVENTS = [{"type": "Warning", "reason": "FailedScheduling", "message": "gang needs 4, 3 fit", "count": 7,
           "lastTimestamp": "2026-12-01T12:00:00Z", "involvedObject": {"kind": "Pod", "name": "big-node-0-3"}}]


@pytest.fixture
def waiting_job():
    live_tracker()
    submitted = timezone.now() - dt.timedelta(minutes=40)
    workload = {"name": "big-wl-7f3a", "apiVersion": "scheduling.k8s.io/v1alpha2", "templates": []}
    job = tracked_job("team-a", "big", state="gang-pending", submitted=submitted, pods=PODS, events=EVENTS,
                      workload=workload, creator="dana")
    TrainJob.objects.filter(pk=job.pk).update(pod_groups=POD_GROUPS)
    TrainJobTransition.objects.create(job=job, from_state="gang-pending", to_state="unschedulable",
                                      reason="Unschedulable", at=submitted + dt.timedelta(minutes=2), seq=500)
    return job


def test_the_detail_shows_the_tree_with_bound_counts_condition_and_pod_placement(client, bob, waiting_job):
    client.force_login(bob)

    response = client.get("/jobs/team-a/big/")

    assert response.status_code == 200
    html = response.content.decode()
    tree = re.search(r'<ul class="jobs-tree">.*?</section>', html, re.S).group(0)
    assert "big-wl-7f3a" in tree and "scheduling.k8s.io/v1alpha2" in tree
    assert "pg-node-x1" in tree and "minCount 4" in tree
    assert "3 / 4 bound" in tree
    assert "Unschedulable" in tree and "1 node is cordoned" in tree
    assert tree.count("<tr><th scope=\"row\"><code>big-node-0-") == 4
    assert "<td>n1</td><td>zone-a</td><td>block-1</td><td>rack-1</td>" in tree


def test_the_detail_shows_the_timeline_and_events(client, bob, waiting_job):
    client.force_login(bob)

    html = client.get("/jobs/team-a/big/").content.decode()

    timeline = re.search(r'<ol class="jobs-timeline">.*?</ol>', html, re.S).group(0)
    assert "Submitted" in timeline and "Gang pending" in timeline and "Unschedulable" in timeline
    assert "+2m 00s" in timeline
    assert "not admitted yet" in html
    assert "FailedScheduling" in html and "×7" in html and "gang needs 4, 3 fit" in html


def test_time_to_admission_is_shown_once_admitted(client, bob):
    live_tracker()
    submitted = timezone.now() - dt.timedelta(hours=1)
    tracked_job("team-a", "quick", state="running", submitted=submitted,
                admitted=submitted + dt.timedelta(minutes=3, seconds=5), pods=PODS[:3])
    client.force_login(bob)

    html = client.get("/jobs/team-a/quick/").content.decode()

    assert re.search(r"admitted after <strong>3m 05s</strong>", html)


def test_an_admitted_job_shows_where_its_pods_landed(client, bob):
    live_tracker()
    tracked_job("team-a", "placed", state="running", pods=PODS)
    client.force_login(bob)

    html = client.get("/jobs/team-a/placed/").content.decode()

    heat = re.search(r'<div class="pv-heat".*?</section>', html, re.S).group(0)
    assert "zone-a" in heat and "block-1" in heat
    assert 'title="rack-0: 2 pods"' in heat and 'title="rack-1: 1 pods"' in heat
    assert "3 pods on nodes" in html


def _save_snapshot():
    """Save the live snapshot of the explanation tests: two zones of 4 nodes, a3 cordoned."""
    import time

    from tests.jobs.domain.test_explain import _cluster
    from trainer_portal.cluster.snapshots import save_live_snapshot
    from trainer_portal.placement.tracker import LiveSnapshot

    snapshot, _ = _cluster(busy=1)
    save_live_snapshot(LiveSnapshot(snapshot, time.time(), {}, "watch"))


@pytest.fixture
def gang_too_big_for_a_zone():
    live_tracker()
    _save_snapshot()
    gang = [{"name": "waiting-pg", "policy": "gang", "minCount": 3, "members": 3, "bound": 0,
             "topologyKey": "topology.kubernetes.io/zone", "condition": "False", "reason": "Unschedulable",
             "message": ""}]
    job = tracked_job("team-a", "waiting", state="unschedulable", num_nodes=3,
                      resources_per_node={"nvidia.com/gpu": "8"})
    TrainJob.objects.filter(pk=job.pk).update(pod_groups=gang)
    tracked_job("team-b", "holder", state="running", num_nodes=1, creator="grace-hopper",
                admitted=timezone.now() - dt.timedelta(hours=2),
                pods=[{"name": "holder-0", "node": "a0", "phase": "Running", "podGroup": ""}])
    return job


def test_why_it_waits_shows_the_capacity_math_what_would_fit_and_the_holders(client, bob, gang_too_big_for_a_zone):
    client.force_login(bob)

    html = client.get("/jobs/team-a/waiting/").content.decode()

    card = re.search(r'<section class="card jobs-reason-card.*?</section>', html, re.S).group(0)
    assert "Why it waits" in card
    assert "Needs 3 nodes × 8 GPUs in one zone; the best zone, " in card
    assert re.search(r"<strong>zone zone-[ab]</strong> fits 2 of 3 pods", card)
    assert "What would make it fit" in card
    assert 'href="/jobs/team-b/holder/"' in card and "grace-hopper" in card and "2h 00m" in card
    assert "Computed on the live cluster snapshot" in card


def test_holders_a_data_scientist_may_not_see_are_only_counted(client, dana, gang_too_big_for_a_zone):
    client.force_login(dana)

    html = client.get("/jobs/team-a/waiting/").content.decode()

    assert "team-b" not in html and "grace-hopper" not in html and "holder" not in html.replace("placeholder", "")
    assert "1 node of the best domain is held by TrainJobs in namespaces you cannot see" in html


def test_without_a_live_snapshot_the_page_says_why_it_cannot_explain(client, bob, waiting_job):
    client.force_login(bob)

    html = client.get("/jobs/team-a/big/").content.decode()

    assert "No live cluster snapshot yet" in html


def test_a_job_in_an_ungranted_namespace_is_a_404_like_a_missing_one(client, dana):
    live_tracker()
    tracked_job("team-b", "theirs")
    client.force_login(dana)

    assert client.get("/jobs/team-b/theirs/").status_code == 404
    assert client.get("/jobs/team-b/theirs/live/").status_code == 404
    assert client.get("/jobs/team-a/missing/").status_code == 404


def test_stale_tracking_dims_the_detail_state(client, bob, waiting_job):
    from jobs.models import TrackerStatus

    TrackerStatus.objects.filter(pk=1).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    client.force_login(bob)

    html = client.get("/jobs/team-a/big/").content.decode()

    assert "Tracking stale since" in html and "the tracker stopped reporting" in html
    assert "jobs-state--stale" in html


def _poller(html: str) -> tuple[str, str]:
    match = re.search(r'<div id="job-poll"[^>]*hx-get="([^"]+)"[^>]*hx-headers="([^"]+)"', html)
    return html_lib.unescape(match.group(1)), json.loads(html_lib.unescape(match.group(2)))["If-None-Match"]


def test_the_detail_live_partial_is_304_until_the_job_changes(client, bob, waiting_job):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/team-a/big/").content.decode())

    assert client.get(url, headers={"If-None-Match": etag}).status_code == 304
    TrainJob.objects.filter(pk=waiting_job.pk).update(state="admitted", change_seq=9000)
    response = client.get(url, headers={"If-None-Match": etag})

    assert response.status_code == 200
    html = response.content.decode()
    assert '<div id="job-body" class="jobs-detail" hx-swap-oob="true">' in html
    assert "Admitted" in html
    assert _poller(html)[1] != etag


def test_a_waiting_jobs_page_refreshes_when_another_job_changes(client, bob, waiting_job):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/team-a/big/").content.decode())
    other = tracked_job("team-b", "holder", state="running")
    assert client.get(url, headers={"If-None-Match": etag}).status_code == 200  # the holders may have changed

    url, etag = _poller(client.get("/jobs/team-a/big/").content.decode())
    TrainJob.objects.filter(pk=other.pk).update(state="succeeded", change_seq=99_999)

    assert client.get(url, headers={"If-None-Match": etag}).status_code == 200


def test_a_running_jobs_page_ignores_other_jobs(client, bob):
    live_tracker()
    tracked_job("team-a", "steady", state="running", pods=PODS[:3])
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/team-a/steady/").content.decode())
    tracked_job("team-b", "elsewhere", state="gang-pending")

    assert client.get(url, headers={"If-None-Match": etag}).status_code == 304


def test_with_a_live_snapshot_the_heat_map_shows_the_cluster_with_the_jobs_racks_outlined(client, bob):
    live_tracker()
    _save_snapshot()  # zone-a: a0..a3 in racks ra0, ra1; zone-b: b0..b3 in rb0, rb1
    pods = [{"name": f"p-{i}", "phase": "Running", "node": f"b{i}", "podGroup": ""} for i in (2, 3)]
    tracked_job("team-a", "on-b", state="running", pods=pods)
    client.force_login(bob)

    html = client.get("/jobs/team-a/on-b/").content.decode()

    heat = re.search(r'<div class="pv-heat".*?</section>', html, re.S).group(0)
    assert "zone-a" in heat and "zone-b" in heat  # the whole cluster, not only the job's racks
    assert re.search(r'<i class="h\d p" title="rb1: \d+/16 free, 2 pods of this job">', heat)
    assert re.search(r'<i class="h\d" title="ra0: \d+/16 free">', heat)
    assert "this job&#x27;s pods" in html or "this job's pods" in html


def test_a_running_gang_with_a_preemption_request_is_not_explained_as_waiting(client, bob):
    live_tracker()
    _save_snapshot()
    job = tracked_job("team-b", "b-sweep", state="running", admitted=timezone.now() - dt.timedelta(minutes=5))
    TrainJob.objects.filter(pk=job.pk).update(
        reason="Running", message="4 / 4 gang pods running; preemption requested (PodGroup pg: preempted by team-a)")
    client.force_login(bob)

    html = client.get("/jobs/team-b/b-sweep/").content.decode()

    assert "preemption requested" in html
    assert "Why it waits" not in html and "Preempted" not in html


def test_a_level_not_known_yet_is_a_dash(client, bob):
    live_tracker()
    tracked_job("team-a", "paused", state="suspended", level="unknown", pod_groups=[])
    client.force_login(bob)

    html = client.get("/jobs/team-a/paused/").content.decode()

    assert "level —" in html and "level Unknown" not in html


def test_identical_events_are_one_row_with_a_count_the_objects_and_a_relative_time(client, bob):
    live_tracker()
    now = timezone.now().replace(microsecond=0)
    message = "0/64 nodes are available: 64 Insufficient nvidia.com/gpu"
    events = [{"type": "Warning", "reason": "FailedScheduling", "message": message, "count": 1,
               "lastTimestamp": (now - dt.timedelta(seconds=10 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "involvedObject": {"kind": "Pod", "name": f"sweep-node-0-{i}"}} for i in range(20)]
    events.append({"type": "Normal", "reason": "Created", "message": "created PodGroup", "count": 1,
                   "lastTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "involvedObject": {"kind": "PodGroup", "name": "sweep-pg"}})
    tracked_job("team-a", "sweep", state="unschedulable", events=events)
    client.force_login(bob)

    html = client.get("/jobs/team-a/sweep/").content.decode()

    card = re.search(r'aria-labelledby="events-h".*?</section>', html, re.S).group(0)
    rows = re.findall(r"<tr><td>.*?</tr>", card, re.S)
    assert len(rows) == 2
    failed = next(row for row in rows if "FailedScheduling" in row)
    assert "×20 over 3m 10s" in failed
    assert "Pod sweep-node-0-0, Pod sweep-node-0-1" in failed and "and 15 more" in failed
    assert re.search(r'<time datetime="[^"]+" title="[^"]+">\d+s ago</time>', failed)
    assert failed.count(message) == 1


def test_a_job_sized_by_its_runtime_is_explained_with_the_gpus_its_pods_ask_for(client, bob):
    """The TrainJob names no resourcesPerNode: the tracker reads the size from its pods, and "why it waits" does the
    capacity math with it (best zone, its free nodes, what would fit, who holds the capacity)."""
    from jobs import services
    from jobs.domain.ownership import POD, PODGROUP, TRAINJOB, WORKLOAD, OwnershipIndex
    from jobs.domain.records import job_record
    from tests.jobs import objects as o

    live_tracker()
    _save_snapshot()
    job = o.trainjob("waiting", "uid-runtime-sized", num_nodes=3)
    del job["spec"]["trainer"]["resourcesPerNode"]
    wl = o.workload(job)
    group = o.pod_group(job, wl, topology_key="topology.kubernetes.io/zone",
                        conditions=[o.condition("PodGroupInitiallyScheduled", False, "Unschedulable")])
    pods = o.pods(job, 3, group=group)
    for pod in pods:
        pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    index = OwnershipIndex()
    for kind, obj in ((TRAINJOB, job), (WORKLOAD, wl), (PODGROUP, group), *((POD, pod) for pod in pods)):
        index.upsert(kind, obj)
    services.apply_records([job_record(index.tree("uid-runtime-sized"))])
    tracked_job("team-b", "holder", state="running", num_nodes=1, creator="grace-hopper",
                admitted=timezone.now() - dt.timedelta(hours=2),
                pods=[{"name": "holder-0", "node": "a0", "phase": "Running", "podGroup": ""}])
    client.force_login(bob)

    html = client.get("/jobs/team-a/waiting/").content.decode()

    card = re.search(r'<section class="card jobs-reason-card.*?</section>', html, re.S).group(0)
    assert "3 × 8 GPUs" in html
    assert "Needs 3 nodes × 8 GPUs in one zone; the best zone, " in card
    assert re.search(r"<strong>zone zone-[ab]</strong> fits 2 of 3 pods", card)
    assert "What would make it fit" in card and 'href="/jobs/team-b/holder/"' in card


def test_the_tree_shows_the_kueue_workload_and_its_conditions_without_other_namespaces_names(client, bob, dana):
    live_tracker()
    tracked_job("team-b", "rival", state="running")
    tracked_job("team-a", "queued-one", state="queued", kueue={"name": "trainjob-queued-one-3f2a1", "conditions": [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending",
         "message": "couldn't assign flavors to pod set node: insufficient quota, preempting TrainJob team-b/rival"},
        {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": ""},
        {"type": "Requeued", "status": "True", "reason": "Pending", "message": ""},
    ]})
    client.force_login(bob)
    html = client.get("/jobs/team-a/queued-one/").content.decode()
    assert "Kueue Workload" in html and "trainjob-queued-one-3f2a1" in html
    assert "QuotaReserved=False" in html and "Admitted=False" in html and "Requeued" not in html
    assert "team-b/rival" in html  # a viewer sees every namespace

    client.force_login(dana)
    html = client.get("/jobs/team-a/queued-one/").content.decode()
    assert "QuotaReserved=False" in html and "team-b/rival" not in html and "a job in another namespace" in html
