"""The admission state table: every row of the signal table and the v2.4 lifecycle, through the ownership index
(objects linked by ownerReferences / controllerRef / podGroupName with salted names, as a cluster holds them)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from jobs.domain import states as st
from jobs.domain.admission import admission_of, admission_of_tree
from jobs.domain.ownership import KUEUE_WORKLOAD, POD, PODGROUP, TRAINJOB, WORKLOAD, OwnershipIndex
from tests.jobs import objects as o

SCHEDULED_137 = "PodGroupInitiallyScheduled"
SCHEDULED_136 = "PodGroupScheduled"


def _tree(job, wl=None, groups=(), pods=(), kueue=None):
    index = OwnershipIndex()
    index.upsert(TRAINJOB, job)
    if wl is not None:
        index.upsert(WORKLOAD, wl)
    for group in groups:
        index.upsert(PODGROUP, group)
    for pod in pods:
        index.upsert(POD, pod)
    if kueue is not None:
        index.upsert(KUEUE_WORKLOAD, kueue)
    return admission_of_tree(index.tree(job["metadata"]["uid"]))


def _gang(scheduled=None, *, bound=0, running=0, created=4, min_count=4, version="v1beta1", name=SCHEDULED_137,
          extra_conditions=(), job_kwargs=None):
    job = o.trainjob(num_nodes=min_count, **(job_kwargs or {}))
    wl = o.workload(job, version=version if version != "v1alpha2" else "v1alpha2")
    conditions = list(extra_conditions)
    if scheduled is not None:
        conditions.append(scheduled if isinstance(scheduled, dict) else o.condition(name, scheduled))
    group = o.pod_group(job, wl, conditions=conditions, version=version, min_count=min_count)
    pods = [o.pod(job, i, group=group, node=f"node-{i}" if i < bound else "",
                  phase="Running" if i < running else "Pending") for i in range(created)]
    return job, wl, [group], pods


def _row(state, reason, *args, **kwargs):
    return (state, reason, args, kwargs)


# Each row: expected state, expected reason code, the objects. Rows follow the signal table (kubernetes-apis §5).
def _rows():
    rows = {}
    job = o.trainjob(suspend=True, queue="lq", conditions=[o.condition("Suspended", True, "Suspended")])
    rows["kueue queued: suspended, QuotaReserved false"] = (st.QUEUED, "WaitingForQuota", {
        "job": job, "kueue": o.kueue_workload(job, [o.condition("QuotaReserved", False, "WaitingForQuota",
                                                          "insufficient quota")])})
    rows["kueue queued: label set, Kueue Workload not yet created"] = (st.QUEUED, "WaitingForKueue", {"job": job})
    rows["kueue quota reserved, admission checks pending"] = (st.QUOTA_RESERVED, "UnsatisfiedAdmissionChecks", {
        "job": job, "kueue": o.kueue_workload(job, [o.condition("QuotaReserved", True, "QuotaReserved"),
                                              o.condition("Admitted", False, "UnsatisfiedAdmissionChecks",
                                                          "waiting for checks")])})
    rows["kueue admitted, TrainJob not resumed yet"] = (st.WAITING_FOR_OBJECTS, "AdmittedByKueue", {
        "job": job, "kueue": o.kueue_workload(job, [o.condition("QuotaReserved", True),
                                                    o.condition("Admitted", True)])})
    resumed = o.trainjob(queue="lq", conditions=[o.condition("Suspended", False, "Resumed")])
    rows["kueue admitted and resumed: no scheduling objects yet"] = (st.WAITING_FOR_OBJECTS, "NoSchedulingObjects",
                                                                     {"job": resumed, "kueue": o.kueue_workload(
                                                                         resumed, [o.condition("Admitted", True)])})
    plain = o.trainjob()
    rows["no Workload, no PodGroups"] = (st.WAITING_FOR_OBJECTS, "NoSchedulingObjects", {"job": plain})
    rows["Workload without its PodGroups yet"] = (st.WAITING_FOR_OBJECTS, "PodGroupsNotCreated", {
        "job": plain, "wl": o.workload(plain)})
    rows["pods name a PodGroup that does not exist yet"] = (st.WAITING_FOR_OBJECTS, "PodGroupMissing", {
        "job": plain, "pods": o.pods(plain, 4, group="llm-not-there-yet")})
    for version, name in (("v1beta1", SCHEDULED_137), ("v1alpha2", SCHEDULED_136)):
        job, wl, groups, pods = _gang(None, created=2, version=version, name=name)
        rows[f"{version}: gang pending, members still being created"] = (st.GANG_PENDING, "WaitingForMembers",
                                                                          {"job": job, "wl": wl, "groups": groups,
                                                                               "pods": pods})
        job, wl, groups, pods = _gang(None, bound=0, version=version, name=name)
        rows[f"{version}: gang pending, no condition yet, pods unbound"] = (st.GANG_PENDING, "GangPending", {
            "job": job, "wl": wl, "groups": groups, "pods": pods})
        job, wl, groups, pods = _gang(o.condition(name, False, "Unschedulable", "0/8 nodes: insufficient gpu"),
                                      version=version, name=name)
        rows[f"{version}: unschedulable"] = (st.UNSCHEDULABLE, "Unschedulable", {"job": job, "wl": wl, "groups": groups,
                                                                                      "pods": pods})
        job, wl, groups, pods = _gang(o.condition(name, False, "SchedulerError", "plugin failed"), version=version,
                                      name=name)
        rows[f"{version}: scheduler error"] = (st.UNSCHEDULABLE, "SchedulerError", {
            "job": job, "wl": wl, "groups": groups, "pods": pods})
        job, wl, groups, pods = _gang(True, bound=4, version=version, name=name)
        rows[f"{version}: gang admitted (condition True, all bound)"] = (st.ADMITTED, "GangScheduled", {
            "job": job, "wl": wl, "groups": groups, "pods": pods})
        job, wl, groups, pods = _gang(True, bound=4, running=4, version=version, name=name)
        rows[f"{version}: running"] = (st.RUNNING, "Running", {"job": job, "wl": wl, "groups": groups, "pods": pods})
        job, wl, groups, pods = _gang(True, bound=4, running=4, version=version, name=name, extra_conditions=[
            o.condition("DisruptionTarget", True, "PreemptionByScheduler", "preempted by team-b/big")])
        rows[f"{version}: preemption requested, gang still running"] = (st.RUNNING, "Running", {
            "job": job, "wl": wl, "groups": groups, "pods": pods})
        job, wl, groups, pods = _gang(True, bound=0, created=0, version=version, name=name, extra_conditions=[
            o.condition("DisruptionTarget", True, "PreemptionByScheduler", "preempted by team-b/big")])
        rows[f"{version}: preempted, members gone"] = (st.PREEMPTED, "PreemptionByScheduler", {
            "job": job, "wl": wl, "groups": groups, "pods": pods})
    job, wl, groups, pods = _gang(None, bound=4)
    rows["all members bound before the condition is written"] = (st.ADMITTED, "GangScheduled", {
        "job": job, "wl": wl, "groups": groups, "pods": pods})
    job, wl, groups, pods = _gang(True, bound=2)
    rows["1.37 condition is terminal: evicted members make it pending again"] = (st.GANG_PENDING, "GangPending", {
        "job": job, "wl": wl, "groups": groups, "pods": pods})
    evicted = o.trainjob(suspend=True, queue="lq")
    rows["kueue evicted (preempted in the ClusterQueue)"] = (st.PREEMPTED, "InClusterQueue", {
        "job": evicted, "kueue": o.kueue_workload(evicted, [o.condition("Evicted", True, "Preempted"),
                                                      o.condition("Preempted", True, "InClusterQueue"),
                                                      o.condition("QuotaReserved", False)])})
    done = o.trainjob(conditions=[o.condition("Complete", True, "AllJobsCompleted", "jobset completed")])
    rows["complete"] = (st.SUCCEEDED, "AllJobsCompleted", {"job": done})
    failed = o.trainjob(conditions=[o.condition("Failed", True, "DeadlineExceeded", "deadline")])
    rows["failed"] = (st.FAILED, "DeadlineExceeded", {"job": failed})
    job, wl, groups, pods = _gang(True, bound=4, running=4, job_kwargs={
        "conditions": [o.condition("Failed", True, "FailedJobs"), o.condition("Complete", True)]})
    rows["failed outranks complete and running"] = (st.FAILED, "FailedJobs", {"job": job, "wl": wl, "groups": groups,
                                                                                  "pods": pods})
    paused = o.trainjob(suspend=True, conditions=[o.condition("Suspended", True, "Suspended")])
    rows["suspended, no Kueue"] = (st.SUSPENDED, "Suspended", {"job": paused})
    return rows


ROWS = _rows()


@pytest.mark.parametrize("case", ROWS, ids=list(ROWS))
def test_the_state_table(case):
    state, reason, parts = ROWS[case]

    admission = _tree(**parts)

    assert (admission.state, admission.reason) == (state, reason), admission.message
    assert admission.message


def test_v24_lifecycle_from_submit_to_finish():
    """A Kueue-managed TrainJob in v2.4: suspended without Workload/PodGroups until Kueue admits it, then created,
    scheduled, running, suspended again (objects deleted), resumed, completed."""
    job = o.trainjob(suspend=True, queue="lq", num_nodes=2, conditions=[o.condition("Suspended", True)])
    kq = o.kueue_workload(job, [o.condition("QuotaReserved", False, "Pending")])
    seen = [_tree(job, kueue=kq).state]
    kq = o.kueue_workload(job, [o.condition("QuotaReserved", True), o.condition("Admitted", True)])
    seen.append(_tree(job, kueue=kq).state)
    job = o.trainjob(queue="lq", num_nodes=2, conditions=[o.condition("Suspended", False, "Resumed")])
    seen.append(_tree(job, kueue=kq).state)
    wl = o.workload(job)
    seen.append(_tree(job, wl, kueue=kq).state)
    group = o.pod_group(job, wl)
    seen.append(_tree(job, wl, [group], kueue=kq).state)
    seen.append(_tree(job, wl, [group], o.pods(job, 2, group=group), kueue=kq).state)
    group = o.pod_group(job, wl, conditions=[o.condition(SCHEDULED_137, True)])
    seen.append(_tree(job, wl, [group], o.pods(job, 2, group=group, node="n1"), kueue=kq).state)
    seen.append(_tree(job, wl, [group], o.pods(job, 2, group=group, node="n1", phase="Running"), kueue=kq).state)
    suspended = o.trainjob(suspend=True, queue="lq", num_nodes=2, conditions=[o.condition("Suspended", True)])
    seen.append(_tree(suspended, kueue=o.kueue_workload(job, [o.condition("QuotaReserved", False)])).state)
    done = o.trainjob(queue="lq", num_nodes=2, conditions=[o.condition("Complete", True, "AllJobsCompleted")])
    seen.append(_tree(done, kueue=kq).state)

    assert seen == [st.QUEUED, st.WAITING_FOR_OBJECTS, st.WAITING_FOR_OBJECTS, st.WAITING_FOR_OBJECTS,
                    st.GANG_PENDING, st.GANG_PENDING, st.ADMITTED, st.RUNNING, st.QUEUED, st.SUCCEEDED]


def test_a_suspended_job_whose_controller_keeps_its_podgroups_is_still_suspended():
    job, wl, groups, pods = _gang(True, bound=0, created=0, job_kwargs={"suspend": True})

    assert _tree(job, wl, groups, pods).state == st.SUSPENDED


def test_level_is_read_from_the_groups_and_their_members():
    job, wl, groups, pods = _gang(True, bound=4)
    per_job = o.pod_group(job, wl, template="node-0", min_count=4)

    assert _tree(job, wl, groups, pods).level == st.LEVEL_TRAINJOB
    assert _tree(job, wl, [per_job], o.pods(job, 4, group=per_job)).level == st.LEVEL_JOB
    launcher = o.pod_group(job, wl, template="launcher", min_count=1, policy="basic")
    nodes = o.pod_group(job, wl, template="node", min_count=4)
    members = [o.pod(job, 0, group=launcher, rjob="launcher"), *o.pods(job, 4, group=nodes)]
    assert _tree(job, wl, [launcher, nodes], members).level == st.LEVEL_REPLICATEDJOB
    assert _tree(o.trainjob(), pods=o.pods(o.trainjob(), 2)).level == st.LEVEL_NONE


def test_each_podgroup_reports_bound_members_against_min_count():
    job, wl, groups, pods = _gang(o.condition(SCHEDULED_137, False, "Unschedulable", "no zone fits"), bound=3,
                                  created=4)

    admission = _tree(job, wl, groups, pods)

    (group,) = admission.pod_groups
    assert (group.bound, group.needed, group.members) == (3, 4, 4)
    assert group.to_dict()["condition"] == "PodGroupInitiallyScheduled=False"
    assert "3 / 4 bound" in admission.message and "no zone fits" in admission.message


# -- never a crash: odd objects are "unknown" with a reason ---------------------------------------------------------


def test_unknown_condition_types_are_unknown_not_pending():
    job, wl, groups, pods = _gang(o.condition("PodGroupSomethingNew", True))

    admission = _tree(job, wl, groups, pods)

    assert (admission.state, admission.reason) == (st.UNKNOWN, "UnknownCondition")
    assert "PodGroupSomethingNew" in admission.message


def test_podgroups_whose_workload_does_not_exist_are_unknown():
    job = o.trainjob()
    group = o.pod_group(job, None, workload_name="llm-gone-123")

    admission = _tree(job, None, [group], o.pods(job, 4, group=group))

    assert (admission.state, admission.reason) == (st.UNKNOWN, "PodGroupWithoutWorkload")


def test_pods_naming_a_missing_podgroup_beside_existing_ones_are_unknown():
    job, wl, groups, pods = _gang(None)
    strays = o.pods(job, 2, group="llm-missing", rjob="launcher")

    admission = _tree(job, wl, groups, pods + strays)

    assert (admission.state, admission.reason) == (st.UNKNOWN, "PodGroupMissing")


def test_a_workload_owned_by_another_trainjob_is_unknown():
    job = o.trainjob()
    wl = o.workload(job)
    wl["metadata"]["ownerReferences"][0]["uid"] = "someone-else"

    admission = _tree(job, wl)

    assert (admission.state, admission.reason) == (st.UNKNOWN, "ForeignOwner")


def test_a_policy_that_is_neither_gang_nor_basic_is_unknown():
    job = o.trainjob()
    wl = o.workload(job)
    group = o.pod_group(job, wl, policy="weird")

    assert _tree(job, wl, [group]).reason == "UnknownPolicy"


def test_a_trainjob_without_uid_is_unknown():
    assert admission_of({"metadata": {"name": "x"}}).reason == "Malformed"


_junk = hs.recursive(hs.none() | hs.booleans() | hs.integers() | hs.text(max_size=5),
                     lambda children: hs.lists(children, max_size=3) |
                     hs.dictionaries(hs.sampled_from(["metadata", "spec", "status", "conditions", "type", "status",
                                                      "uid", "name", "schedulingPolicy", "gang", "minCount",
                                                      "nodeName", "schedulingGroup", "podGroupName", "phase",
                                                      "ownerReferences", "suspend", "trainer", "numNodes"]),
                                     children, max_size=4), max_leaves=20)


@given(job=_junk, group=_junk, pod=_junk, kueue=_junk)
def test_malformed_objects_never_raise(job, group, pod, kueue):
    index = OwnershipIndex()
    for kind, obj in ((TRAINJOB, job), (PODGROUP, group), (POD, pod), (KUEUE_WORKLOAD, kueue)):
        if isinstance(obj, dict):
            index.upsert(kind, obj)
    admission = admission_of(job if isinstance(job, dict) else {}, None, [group] if isinstance(group, dict) else [],
                             [pod] if isinstance(pod, dict) else [], kueue if isinstance(kueue, dict) else None)

    assert admission.state in st.ALL_STATES
    for uid in index.trainjob_uids():
        assert admission_of_tree(index.tree(uid)).state in st.ALL_STATES


def test_a_preemption_request_on_a_running_gang_is_a_note_until_its_members_are_evicted():
    """1.37 never sets the scheduled condition back to False: pods decide whether a disrupted gang still runs."""
    disruption = o.condition("DisruptionTarget", True, "PreemptionByScheduler", "preempted by team-a/big")
    job, wl, groups, pods = _gang(True, bound=4, running=4, extra_conditions=[disruption])

    running = _tree(job, wl, groups, pods)
    evicted = [{**p, "status": {"phase": "Failed", "reason": "Evicted"}} for p in pods]
    preempted = _tree(job, wl, groups, evicted)

    assert running.state == st.RUNNING
    assert "preemption requested" in running.message and "team-a/big" in running.message
    assert (preempted.state, preempted.reason) == (st.PREEMPTED, "PreemptionByScheduler")


# -- the Trainer controller's failed reconcile (upstream's TrainJobResourcesCreationFailed Warning Event) ----------
def _tree_with_events(job, *events):
    from jobs.domain.ownership import EVENT

    index = OwnershipIndex()
    index.upsert(TRAINJOB, job)
    for item in events:
        index.upsert(EVENT, item)
    return admission_of_tree(index.tree(job["metadata"]["uid"]))


@pytest.mark.parametrize("event_reason, message", [
    ("TrainJobResourcesCreationFailed", "TrainJob resources reconciliation failed: not found ClusterTrainingRuntime "
                                        "specified in TrainJob: clustertrainingruntimes.trainer.kubeflow.org "
                                        "\"torch-distributed\" not found"),
    ("TrainingRuntimeNotFound", "ClusterTrainingRuntime 'torch-distributed' not found"),
], ids=["upstream-event", "older-sandbox-event"])
def test_a_missing_runtime_is_the_jobs_reason_and_names_the_runtime(event_reason, message):
    job = o.trainjob()
    admission = _tree_with_events(job, o.event(job, event_reason, message, kind="Warning"))
    assert admission.state == st.WAITING_FOR_OBJECTS
    assert admission.reason == "TrainingRuntimeNotFound"
    assert "ClusterTrainingRuntime 'torch-distributed' does not exist" in admission.message


def test_a_refused_workload_is_the_jobs_reason_with_the_api_servers_message():
    job = o.trainjob()
    text = ('TrainJob resources reconciliation failed: Workload.scheduling.k8s.io "llm-x" is invalid: spec: '
            'Invalid value: null: detected multiple priority configurations')
    admission = _tree_with_events(job, o.event(job, "TrainJobResourcesCreationFailed", text, kind="Warning"))
    assert (admission.state, admission.reason) == (st.WAITING_FOR_OBJECTS, "TrainJobResourcesCreationFailed")
    assert "detected multiple priority configurations" in admission.message


def test_without_such_an_event_the_job_just_waits_for_its_objects():
    job = o.trainjob()
    admission = _tree_with_events(job, o.event(job, "Created", "nothing wrong"))
    assert admission.reason == "NoSchedulingObjects"
