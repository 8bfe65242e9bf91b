"""The ranked answer as a table: every Kueue step (each 0.19 QuotaReserved=False reason, reservation, admission,
eviction) × every v2.4 lifecycle step of the trainer's gang × startup order (none, initializers running,
initializers done) × both PodGroup condition names (1.36 ``PodGroupScheduled``, 1.37 ``PodGroupInitiallyScheduled``).

The expectation is written independently of the gates: quota first (while Kueue holds the job, the later steps do
not matter), then startup order, then objects, then placement, then running. Pure functions only: fast.
"""

from __future__ import annotations

import itertools

import pytest

from jobs.domain import states as st
from jobs.domain.admission import admission_of
from jobs.domain.reasons import MAX_SHORT, short_reason
from tests.jobs import objects as o

NODES = 4
CONDITIONS = {"1.36": "PodGroupScheduled", "1.37": "PodGroupInitiallyScheduled"}
INIT = ("dataset-initializer", "model-initializer")

# Kueue step → (suspended, [Kueue Workload conditions] or None for no Kueue Workload, queue label, expected state
# while it holds the job or None when Kueue lets the job through, expected reason code)
KUEUE = {
    "no-kueue": (False, None, "", None, None),
    "admitted": (False, [o.condition("QuotaReserved", True, "QuotaReserved"),
                         o.condition("Admitted", True, "Admitted")], "lq", None, None),
    "WaitingForQuota": (True, [o.condition("QuotaReserved", False, "WaitingForQuota",
                                           "couldn't assign flavors to pod set node: insufficient unused quota")],
                        "lq", st.QUEUED, "WaitingForQuota"),
    "Pending": (True, [o.condition("QuotaReserved", False, "Pending", "insufficient unused quota for nvidia.com/gpu")],
                "lq", st.QUEUED, "Pending"),
    "TopologyPlacementFailed": (True, [o.condition("QuotaReserved", False, "TopologyPlacementFailed", "no domain")],
                                "lq", st.QUEUED, "TopologyPlacementFailed"),
    "ExceedsMaxQuota": (True, [o.condition("QuotaReserved", False, "ExceedsMaxQuota",
                                           "request > maximum capacity (32 > 16)")], "lq", st.INADMISSIBLE,
                        "ExceedsMaxQuota"),
    "NoMatchingFlavor": (True, [o.condition("QuotaReserved", False, "NoMatchingFlavor", "flavor h100 not found")],
                         "lq", st.INADMISSIBLE, "NoMatchingFlavor"),
    "Misconfigured": (True, [o.condition("QuotaReserved", False, "Misconfigured", "ClusterQueue cq is inactive")],
                      "lq", st.INADMISSIBLE, "Misconfigured"),
    "Pending-over-maximum": (True, [o.condition("QuotaReserved", False, "Pending",
                                                "insufficient quota for nvidia.com/gpu in flavor default, request > "
                                                "maximum capacity (24 > 16)")], "lq", st.INADMISSIBLE, "Pending"),
    "label-without-workload": (True, None, "lq", st.QUEUED, "WaitingForKueue"),
    "checks-pending": (True, [o.condition("QuotaReserved", True, "QuotaReserved"),
                              o.condition("Admitted", False, "UnsatisfiedAdmissionChecks", "provisioning")],
                       "lq", st.QUOTA_RESERVED, "UnsatisfiedAdmissionChecks"),
    "admitted-still-suspended": (True, [o.condition("QuotaReserved", True, "QuotaReserved"),
                                        o.condition("Admitted", True, "Admitted")], "lq", st.WAITING_FOR_OBJECTS,
                                 "AdmittedByKueue"),
    "evicted-InClusterQueue": (True, [o.condition("QuotaReserved", False, "Pending"),
                                      o.condition("Evicted", True, "InClusterQueue", "preempted by a-urgent")],
                               "lq", st.PREEMPTED, "InClusterQueue"),
    "preempted-InCohortReclamation": (True, [o.condition("Preempted", True, "InCohortReclamation", "reclaimed")],
                                      "lq", st.PREEMPTED, "InCohortReclamation"),
}
LIFECYCLE = ("no-objects", "workload", "podgroups", "members-pending", "unschedulable", "bound", "running",
             "evicted", "complete")
STARTUP = ("none", "initializers-running", "initializers-done")

# (lifecycle, startup) → (state, reason) once nothing ahead of them holds the job.
_AFTER_QUOTA = {
    "no-objects": (st.WAITING_FOR_OBJECTS, "NoSchedulingObjects"),
    "workload": (st.WAITING_FOR_OBJECTS, "PodGroupsNotCreated"),
    "podgroups": (st.GANG_PENDING, "WaitingForMembers"),
    "members-pending": (st.GANG_PENDING, "GangPending"),
    "unschedulable": (st.UNSCHEDULABLE, "Unschedulable"),
    "bound": (st.ADMITTED, "GangScheduled"),
    "running": (st.RUNNING, "Running"),
    "evicted": (st.PREEMPTED, "PreemptionByScheduler"),
    "complete": (st.SUCCEEDED, "AllJobsCompleted"),
}


def expected(kueue: str, lifecycle: str, startup: str) -> tuple[str, str]:
    """Return the (state, reason) the ranked answer must give, from the order alone."""
    if lifecycle == "complete":
        return _AFTER_QUOTA["complete"]
    if lifecycle == "evicted":  # the scheduler evicted the gang: preempted whatever Kueue says
        return _AFTER_QUOTA["evicted"]
    held = KUEUE[kueue][3]
    if held is not None:
        return held, KUEUE[kueue][4]
    if startup == "initializers-running" and lifecycle not in ("no-objects", "workload"):
        return st.WAITING_FOR_STARTUP, "WaitingForStartupOrder"
    return _AFTER_QUOTA[lifecycle]


def build(kueue: str, lifecycle: str, startup: str, condition_name: str) -> dict:
    """Return admission_of's keyword arguments for one row of the table."""
    suspended, kueue_conditions, queue, _, _ = KUEUE[kueue]
    job_conditions = [o.condition("Suspended", True, "Suspended")] if suspended else []
    if lifecycle == "complete":
        job_conditions.append(o.condition("Complete", True, "AllJobsCompleted", "done"))
    jobs_status = None
    if startup == "initializers-done":
        jobs_status = [{"name": name, "succeeded": 1} for name in INIT]
    job = o.trainjob(num_nodes=NODES, suspend=suspended, queue=queue, conditions=job_conditions,
                     jobs_status=jobs_status)
    node = o.replicated_job("node", parallelism=NODES, ancestor="trainer",
                            depends_on=[(name, "Complete") for name in INIT] if startup != "none" else [])
    steps = ([o.replicated_job(name, ancestor=name) for name in INIT] if startup != "none" else []) + [node]
    jobset = o.jobset(job, steps)
    kwargs: dict = {"jobsets": [jobset], "kueue_workload": (o.kueue_workload(job, kueue_conditions)
                                                             if kueue_conditions is not None else None)}
    if lifecycle == "no-objects":
        return {"trainjob": job, **kwargs}
    templates = [{"name": "node", "schedulingPolicy": {"gang": {"minCount": NODES}}}]
    if startup != "none":
        templates = [{"name": name, "schedulingPolicy": {"gang": {"minCount": 1}}} for name in INIT] + templates
    wl = o.workload(job, templates=templates)
    if lifecycle == "workload":
        return {"trainjob": job, "workload": wl, **kwargs}
    scheduled = {"unschedulable": [o.condition(condition_name, False, "Unschedulable",
                                               "0/64 nodes are available: 64 Insufficient nvidia.com/gpu")],
                 "bound": [o.condition(condition_name, True, "Scheduled")],
                 "running": [o.condition(condition_name, True, "Scheduled")],
                 "evicted": [o.condition(condition_name, True, "Scheduled"),
                             o.condition("DisruptionTarget", True, "PreemptionByScheduler", "preempted")]}
    groups, pods = [], []
    node_group = o.pod_group(job, wl, template="node", min_count=NODES, conditions=scheduled.get(lifecycle, []))
    groups.append(node_group)
    if startup != "none":
        phase = "Running" if startup == "initializers-running" else "Succeeded"
        for i, name in enumerate(INIT):
            group = o.pod_group(job, wl, template=name, min_count=1,
                                conditions=[o.condition(condition_name, True, "Scheduled")])
            groups.append(group)
            pods.append(o.pod(job, 0, rjob=name, group=group, node=f"cpu-{i}", phase=phase))
    node_pods_exist = startup != "initializers-running" and lifecycle not in ("podgroups", "evicted")
    if node_pods_exist:
        bound = lifecycle in ("bound", "running")
        pods += [o.pod(job, i, rjob="node", group=node_group, node=f"gpu-{i}" if bound else "",
                       phase="Running" if lifecycle == "running" else "Pending") for i in range(NODES)]
    return {"trainjob": job, "workload": wl, "pod_groups": groups, "pods": pods, **kwargs}


ROWS = [pytest.param(k, lc, s, id=f"{k}-{lc}-{s}") for k, lc, s in itertools.product(KUEUE, LIFECYCLE, STARTUP)]


@pytest.mark.parametrize(("kueue", "lifecycle", "startup"), ROWS)
def test_the_first_gate_that_holds_the_job_answers(kueue, lifecycle, startup):
    for version, name in CONDITIONS.items():  # 1.36 and 1.37 spell the scheduled condition differently
        admission = admission_of(**build(kueue, lifecycle, startup, name))

        assert (admission.state, admission.reason) == expected(kueue, lifecycle, startup), (version,
                                                                                            admission.message)
    assert 0 < len(short_reason(admission.state, admission.reason, admission.message)) <= MAX_SHORT
    # Only the gates about placement answer with a placement state: "fits now" can never follow a quota, startup
    # order or objects answer.
    if admission.state in st.PLACEMENT_STATES:
        assert admission.gate in ("disruption", "kueue-preemption", "gang")
    if admission.state == st.WAITING_FOR_STARTUP:
        assert admission.message.startswith("node waits for dataset-initializer and model-initializer to "
                                            "complete; 0 of 2 done")


def test_an_initializer_that_cannot_be_placed_is_what_holds_the_job_not_the_startup_order():
    kwargs = build("no-kueue", "podgroups", "initializers-running", CONDITIONS["1.37"])
    stuck = kwargs["pod_groups"][1]
    stuck["status"]["conditions"] = [o.condition("PodGroupInitiallyScheduled", False, "Unschedulable",
                                                 "0/8 nodes are available: 8 Insufficient cpu")]
    kwargs["pods"] = [dict(p, spec={k: v for k, v in p["spec"].items() if k != "nodeName"}, status={"phase": "Pending"})
                      for p in kwargs["pods"]]

    admission = admission_of(**kwargs)

    assert admission.state == st.UNSCHEDULABLE and admission.gate == "gang"
