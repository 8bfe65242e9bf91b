"""The demo workload generator: its demo runtimes, its TrainJobs, and a generated cluster that completes jobs."""

from __future__ import annotations

import random

import pytest

from sandbox.controllers.expansion import plan_for
from sandbox.controllers.generator import GeneratorConfig, demo_runtimes, make_trainjob, shrink_to_fit
from sandbox.topology import preset_nodes
from tests.sandbox.controllers_support import Cluster, is_true, simulated_cluster

GENERATED = "sandbox.trainer-portal.io/generated"


def test_it_ships_the_upstream_examples_and_one_runtime_per_scheduling_level():
    runtimes = {r["metadata"]["name"]: r for r in demo_runtimes()}
    assert {"torch-distributed", "deepspeed-distributed", "torchtune-qwen2.5-1.5b"} <= set(runtimes)
    levels = set()
    for runtime in runtimes.values():
        probe = {"metadata": {"name": "probe", "uid": "u"}, "spec": {"trainer": {"numNodes": 2}}}
        levels |= {group.level for group in plan_for(runtime, probe).groups}
    assert levels == {1, 2, 3}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_generates_valid_deterministic_trainjobs(seed):
    config = GeneratorConfig(seed=seed, min_seconds=10, max_seconds=20, failure_ratio=0.5)
    runtimes = demo_runtimes()
    first = [make_trainjob(runtimes[i % len(runtimes)], i, random.Random(seed), config) for i in range(20)]
    again = [make_trainjob(runtimes[i % len(runtimes)], i, random.Random(seed), config) for i in range(20)]
    assert first == again
    for job in first:
        annotations = job["metadata"]["annotations"]
        assert 10 <= int(annotations["sandbox.trainer-portal.io/duration-seconds"]) <= 20
        if "sandbox.trainer-portal.io/fail-after-seconds" in annotations:
            assert int(annotations["sandbox.trainer-portal.io/fail-after-seconds"]) < 20
        assert job["metadata"]["labels"][GENERATED] == "true"
        assert len(job["metadata"]["name"]) <= 63 and job["spec"]["trainer"]["numNodes"] >= 1


def _runtime(name: str) -> dict:
    return next(r for r in demo_runtimes() if r["metadata"]["name"] == name)


@pytest.mark.parametrize(("runtime", "asked", "expected"), [("torch-gang-rack", 32, 4), ("torch-gang-rack", 3, 3),
                                                            ("torch-gang-zone", 32, 32), ("torch-gang-zone", 40, 20),
                                                            ("torch-distributed", 64, 64)])
def test_it_shrinks_generated_jobs_until_they_fit_the_empty_cluster(runtime, asked, expected):
    job = make_trainjob(_runtime(runtime), 1, random.Random(1), GeneratorConfig())
    job["spec"]["trainer"]["numNodes"] = asked
    job["spec"]["trainer"].pop("resourcesPerNode", None)
    if runtime == "torch-distributed":
        job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"nvidia.com/gpu": "8"}}
    # demo: a rack holds four 8-GPU pods, the clean zone 32; pods without a PodGroup only need a node each
    # (the rest of a too-big job waits for the first pods to finish).
    assert shrink_to_fit(job, _runtime(runtime), preset_nodes("demo"))["spec"]["trainer"]["numNodes"] == expected


def test_it_gives_up_on_a_job_whose_single_pod_fits_no_node():
    job = make_trainjob(_runtime("torch-distributed"), 1, random.Random(1), GeneratorConfig())
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"nvidia.com/gpu": "16"}}
    assert shrink_to_fit(job, _runtime("torch-distributed"), preset_nodes("demo")) is None


def test_it_rejects_a_non_numeric_rate(monkeypatch):
    monkeypatch.setenv("SANDBOX_GENERATOR_RATE", "fast")
    with pytest.raises(ValueError, match="SANDBOX_GENERATOR_RATE"):
        GeneratorConfig.from_env()


def test_it_fills_a_demo_cluster_with_jobs_that_run_and_complete():
    env = {"SANDBOX_GENERATOR": "1", "SANDBOX_GENERATOR_RATE": "600", "SANDBOX_GENERATOR_MAX_ACTIVE": "4",
           "SANDBOX_GENERATOR_MIN_SECONDS": "1", "SANDBOX_GENERATOR_MAX_SECONDS": "2",
           "SANDBOX_GENERATOR_FAILURE_RATIO": "0", "SANDBOX_GENERATOR_STORY": "0"}
    with simulated_cluster(**env) as process:
        cluster = Cluster(process)
        expected = {r["metadata"]["name"] for r in demo_runtimes()}
        cluster.wait(lambda: {r["metadata"]["name"] for r in cluster.client.list(
            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes")["items"]} == expected)

        def generated():
            return [j for j in cluster.client.list("/apis/trainer.kubeflow.org/v1alpha1/trainjobs")[
                "items"] if j["metadata"].get("labels", {}).get(GENERATED) == "true"]

        cluster.wait(lambda: sum(is_true(j, "Complete") for j in generated()) >= 3, timeout=60)
        jobs = generated()
        assert len(jobs) >= 4 and {j["metadata"]["namespace"] for j in jobs} == {"team-a", "team-b"}
        assert all(j["spec"]["runtimeRef"]["name"] != "torch-gang-zone-urgent" for j in jobs)
        creators = {j["metadata"]["namespace"]: set() for j in jobs}
        for job in jobs:
            creators[job["metadata"]["namespace"]].add(job["metadata"]["managedFields"][0]["manager"])
        assert creators["team-a"] <= {"alice", "amir"} and creators["team-b"] <= {"bea", "bruno"}
