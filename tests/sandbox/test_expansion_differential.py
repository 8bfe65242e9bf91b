"""Differential test: the portal's preview expansion and the sandbox's simulated Trainer controller must agree.

They are independent implementations on purpose: the portal's `runtimes.domain.expansion.expand` (what the preview
shows) and `sandbox.controllers.expansion.plan_for` (what the simulated v2.4 controller creates, written from the
upstream controller's rules). On random valid runtimes — torch with or without initializers, MPI with or without
`runLauncherAsNode`, replicas, numNodes, `dependsOn`, levels 1, 2 and 3 with gang or basic policies — both must
give the same pods per ReplicatedJob, the same number of PodGroups and, per group, the same policy, members and
minCount. Object names differ by design (the sandbox salts them with the TrainJob UID); what both must agree on
is the KEP's truncation: the Workload name is `<TrainJob name cut to 54>-<8-character hash>`, every name ≤ 63.

Also compared: `resourcesPerNode` merged into the trainer's `node` container (kubeflow/trainer #3602) — the requests
of every pod; level-3 `resourceClaims` copied to the PodGroups; and, through the sandbox API server's strategy,
that the claims survive exactly when `DRAWorkloadResourceClaims` is on while the portal's validator warns that they
will be dropped exactly when it is off.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtimes.domain.expansion import expand
from runtimes.domain.policy import ValidationOptions, validate_runtime
from sandbox.apiserver import workloads as sandbox_workloads
from sandbox.apiserver.resources import ResourceType
from sandbox.controllers.common import flavour_for
from sandbox.controllers.expansion import PlanError, plan_for

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _rjob(name: str, *, ancestor: str | None = None, parallelism: int | None = None, replicas: int | None = None,
          depends_on: list[str] | None = None, gpus: int = 8, resources: dict | None = None) -> dict:
    job_spec: dict = {"template": {"spec": {"containers": [{
        "name": ancestor if ancestor and ancestor != "trainer" else "node", "image": "busybox",
        "resources": resources if resources is not None else {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    item: dict = {"name": name, "template": {"spec": job_spec}}
    if ancestor:
        item["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if replicas is not None:
        item["replicas"] = replicas
    if depends_on:
        item["dependsOn"] = [{"name": d, "status": "Ready"} for d in depends_on]
    return item


QUANTITIES = {"cpu": ["2", "4", "500m"], "memory": ["16Gi", "64Gi"], "nvidia.com/gpu": ["1", "4", "8"]}


@st.composite
def requirements(draw) -> dict:
    """Return a random ResourceRequirements: some resources in requests, some in limits."""
    result: dict = {}
    for part in ("requests", "limits"):
        names = draw(st.sets(st.sampled_from(sorted(QUANTITIES)), max_size=3))
        if names:
            result[part] = {name: draw(st.sampled_from(QUANTITIES[name])) for name in sorted(names)}
    return result


@st.composite
def runtimes(draw):
    """Return (runtime, TrainJob numNodes or None): a random runtime that Trainer v2.4 accepts."""
    framework = draw(st.sampled_from(["torch", "torch+initializers", "mpi"]))
    ml_policy: dict = {}
    if draw(st.booleans()):
        # MPI only with the upstream runtimes' mlPolicy.numNodes of 1: beyond it the preview differs from upstream
        # (see test_mpi_pod_counts_follow_the_upstream_controller_where_the_preview_differs).
        ml_policy["numNodes"] = 1 if framework == "mpi" else draw(st.integers(1, 12))
    sequenced = draw(st.booleans())
    if framework == "mpi":
        launcher_as_node = draw(st.booleans())
        ml_policy["mpi"] = {"numProcPerNode": 1, "runLauncherAsNode": launcher_as_node}
        rjobs = [_rjob("launcher", ancestor="trainer", depends_on=["node"] if sequenced else None,
                       resources=draw(requirements())),
                 _rjob("node", resources=draw(requirements()))]
    else:
        ml_policy["torch"] = {}
        rjobs = []
        if framework == "torch+initializers":
            rjobs += [_rjob(name, ancestor=name, parallelism=draw(st.integers(1, 2)),
                            replicas=draw(st.sampled_from([None, 1, 2])), gpus=0)
                      for name in ("dataset-initializer", "model-initializer")]
        initializers = [r["name"] for r in rjobs]
        rjobs.append(_rjob("node", ancestor="trainer", depends_on=initializers if sequenced else None,
                           resources=draw(requirements())))
        if draw(st.booleans()):
            rjobs.append(_rjob("sidecar", parallelism=draw(st.integers(0, 3)), replicas=draw(st.integers(0, 3))))
    names = [r["name"] for r in rjobs]
    template: dict = {"replicatedJobs": rjobs}
    if draw(st.booleans()) and not sequenced:
        template["startupPolicy"] = {"startupPolicyOrder": draw(st.sampled_from(["InOrder", "AnyOrder"]))}
    spec: dict = {"mlPolicy": ml_policy, "template": {"spec": template}}
    level = draw(st.sampled_from([0, 1, 2, 3]))
    policy = st.sampled_from([None, {"gang": {}}, {"basic": {}}])
    if level == 1:
        scheduling: dict = {}
        chosen = draw(policy)
        if chosen is not None:
            scheduling["schedulingPolicy"] = chosen
        if draw(st.booleans()):
            scheduling["schedulingConstraints"] = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
        spec["scheduling"] = scheduling
    elif level in (2, 3):
        # A random partition of the ReplicatedJobs into entries; with level 3, single-target entries may use `job`.
        order = draw(st.permutations(names))
        cuts = sorted(draw(st.sets(st.integers(1, max(len(order) - 1, 1)), max_size=len(order) - 1)))
        parts = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True) if order[a:b]]
        entries = []
        for part in parts:
            entry: dict = {"targetReplicatedJobs": part}
            if level == 3 and len(part) == 1 and draw(st.booleans()):
                entry["job"] = {"schedulingPolicy": draw(policy) or {"gang": {}}}
                if draw(st.booleans()):
                    entry["job"]["resourceClaims"] = [
                        {"name": f"claim-{i}", "resourceClaimTemplateName": f"tpl-{i}"}
                        for i in range(draw(st.integers(1, 2)))]
            else:
                chosen = draw(policy)
                if chosen is not None:
                    entry["schedulingPolicy"] = chosen
            entries.append(entry)
        spec["scheduling"] = {"replicatedJobs": entries}
    num_nodes = draw(st.one_of(st.none(), st.integers(1, 16)))
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "random"}, "spec": spec}, num_nodes


@st.composite
def trainjob_inputs(draw) -> tuple[str, dict | None]:
    """Return (TrainJob name up to 63 characters, resourcesPerNode or None)."""
    length = draw(st.integers(3, 63))
    name = draw(st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=length, max_size=length))
    name = "j" + name[1:-1].strip("-") + "z" if length > 2 else name
    per_node = draw(st.one_of(st.none(), requirements()))
    return name, per_node or None


def _trainjob(num_nodes: int | None, name: str = "job", per_node: dict | None = None) -> dict:
    trainer: dict = {"numNodes": num_nodes} if num_nodes is not None else {}
    if per_node is not None:
        trainer["resourcesPerNode"] = per_node
    return {"metadata": {"name": name, "namespace": "default", "uid": "8a1c0e0e-uid"},
            "spec": {"runtimeRef": {"name": "random"}, "trainer": trainer}}


def _portal(runtime: dict, num_nodes: int | None, name: str = "job", per_node: dict | None = None):
    expansion = expand(runtime, trainjob_name=name, namespace="default", trainjob_uid="8a1c0e0e-uid",
                       num_nodes=num_nodes, resources_per_node=per_node)
    pods = {p.replicated_job: (p.replicas, p.pods_per_replica) for p in expansion.pod_sets}
    groups = sorted((g.policy, g.min_count, tuple(sorted(g.replicated_jobs)), g.job_index, g.pod_count,
                     tuple(c.name for c in g.resource_claims)) for g in expansion.leaf_groups)
    return pods, groups, expansion.workload_name is not None


def _sandbox(runtime: dict, num_nodes: int | None, name: str = "job", per_node: dict | None = None):
    plan = plan_for(runtime, _trainjob(num_nodes, name, per_node))
    pods = {r.name: (r.replicas, r.pods_per_job) for r in plan.replicated_jobs}
    groups = sorted((g.policy, g.min_count, tuple(sorted(g.replicated_jobs)), g.job_index, g.pods,
                     tuple(c["name"] for c in g.raw.get("resourceClaims") or ())) for g in plan.groups)
    return pods, groups, plan.workload_name is not None


@settings(max_examples=400, deadline=None)
@given(case=runtimes())
def test_the_portal_and_the_simulated_controller_expand_a_runtime_the_same_way(case):
    runtime, num_nodes = case
    sandbox = _sandbox(runtime, num_nodes)
    portal = _portal(runtime, num_nodes)
    assert portal[0] == sandbox[0], "pods per ReplicatedJob (replicas, pods per Job)"
    assert portal[2] == sandbox[2], "whether a Workload is created"
    assert len(portal[1]) == len(sandbox[1]), "number of PodGroups"
    assert portal[1] == sandbox[1], "per PodGroup: policy, minCount, members, Job index, pods, claims"


def _prefix(name: str) -> str:
    return name.rsplit("-", 1)[0]


@settings(max_examples=300, deadline=None)
@given(case=runtimes(), inputs=trainjob_inputs())
def test_both_merge_resources_per_node_and_truncate_names_the_same_way(case, inputs):
    runtime, num_nodes = case
    name, per_node = inputs
    expansion = expand(runtime, trainjob_name=name, namespace="default", num_nodes=num_nodes,
                       resources_per_node=per_node)
    plan = plan_for(runtime, _trainjob(num_nodes, name, per_node))
    portal = {p.replicated_job: p.resources_per_pod for p in expansion.pod_sets}
    sandbox = {r.name: r.resources for r in plan.replicated_jobs}
    assert portal == sandbox, "requests of every pod after merging resourcesPerNode (#3602)"
    if expansion.workload_name is not None:
        assert _prefix(expansion.workload_name) == _prefix(plan.workload_name) == name[:54].rstrip("-.")
        names = [expansion.workload_name, plan.workload_name, *(g.name for g in expansion.pod_groups),
                 *(g.name for g in plan.groups)]
        assert all(len(n) <= 63 for n in names), names


WORKLOAD_TYPE = ResourceType("scheduling.k8s.io", "v1beta1", "Workload", "workloads", namespaced=True)
PODGROUP_TYPE = ResourceType("scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups", namespaced=True)


@settings(max_examples=200, deadline=None)
@given(case=runtimes(), gate=st.booleans())
def test_claims_are_kept_exactly_when_the_gate_is_on_and_the_portal_warns_exactly_when_it_is_off(case, gate):
    runtime, num_nodes = case
    trainjob = _trainjob(num_nodes)
    plan = plan_for(runtime, trainjob)
    workload = plan.workload(trainjob, flavour_for("1.37"))
    if workload is None:
        return
    gates = {"DRAWorkloadResourceClaims": gate}
    sandbox_workloads.prepare(WORKLOAD_TYPE, workload, None, gates)
    kept = any(t.get("resourceClaims") for t in workload["spec"]["podGroupTemplates"])
    groups = plan.pod_groups(trainjob, flavour_for("1.37"), workload)
    for group in groups:
        sandbox_workloads.prepare(PODGROUP_TYPE, group, None, gates)
    kept_on_groups = any(g["spec"].get("resourceClaims") for g in groups)
    expansion = expand(runtime, trainjob_name="job", num_nodes=num_nodes)
    has_claims = any(g.resource_claims for g in expansion.pod_groups)
    warned = "scheduling.resource_claims.gate_off" in validate_runtime(
        runtime, ValidationOptions(dra_claims_gate=gate)).codes
    assert kept == kept_on_groups == (has_claims and gate)
    assert warned == (has_claims and not gate)


def test_the_comparison_can_fail_when_one_side_miscounts_the_mpi_launcher():
    """Guard against a vacuous comparison: a launcher-as-node MPI gang differs from one without it."""
    runtime = {"spec": {"mlPolicy": {"numNodes": 1, "mpi": {"runLauncherAsNode": True}},
                        "scheduling": {"schedulingPolicy": {"gang": {}}},
                        "template": {"spec": {"replicatedJobs": [_rjob("launcher", ancestor="trainer"),
                                                                 _rjob("node")]}}}}
    as_node = _sandbox(runtime, 4)
    runtime["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    separate = _sandbox(runtime, 4)
    assert as_node[0] == {"launcher": (1, 1), "node": (1, 3)} and separate[0]["node"] == (1, 4)
    assert as_node[1][0][1] == 4 and separate[1][0][1] == 5  # minCount: 1 launcher + 3 nodes vs 1 + 4
    assert _portal(runtime, 4) == separate


@pytest.mark.parametrize(("ml_nodes", "node_parallelism", "trainjob_nodes", "expected"), [
    # The runtime gives the trainer-ancestor ReplicatedJob (the launcher) mlPolicy.numNodes pods
    # (trainingruntime.go); the MPI plugin sets `node` only from the TrainJob's numNodes (mpi.go).
    (4, 1, None, {"launcher": (1, 4), "node": (1, 1)}),
    (4, 1, 6, {"launcher": (1, 4), "node": (1, 5)}),
    (1, 3, None, {"launcher": (1, 1), "node": (1, 3)}),
])
def test_mpi_pod_counts_follow_the_upstream_controller_where_the_preview_differs(ml_nodes, node_parallelism,
                                                                                trainjob_nodes, expected):
    runtime = {"spec": {"mlPolicy": {"numNodes": ml_nodes, "mpi": {"runLauncherAsNode": True}},
                        "template": {"spec": {"replicatedJobs": [
                            _rjob("launcher", ancestor="trainer"), _rjob("node", parallelism=node_parallelism)]}}}}
    # The preview gives the launcher 1 pod and `node` numNodes (or numNodes - 1) from mlPolicy.numNodes too.
    assert _sandbox(runtime, trainjob_nodes)[0] == expected


@pytest.mark.parametrize(("scheduling", "message"), [
    ({"schedulingPolicy": {"gang": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]},
     "mutually exclusive"),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}, "every ReplicatedJob must be targeted"),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["node", "dataset-initializer"]},
                         {"targetReplicatedJobs": ["dataset-initializer"]}]}, "more than one"),
    ({"schedulingPolicy": {"gang": {"minCount": 3}}}, "minCount is computed"),
])
def test_the_simulated_controller_rejects_what_trainer_v2_4_rejects(scheduling, message):
    runtime = {"spec": {"mlPolicy": {"torch": {}}, "scheduling": scheduling, "template": {"spec": {
        "replicatedJobs": [_rjob("dataset-initializer", ancestor="dataset-initializer"),
                           _rjob("node", ancestor="trainer")]}}}}
    with pytest.raises(PlanError, match=message):
        plan_for(runtime, _trainjob(2))
