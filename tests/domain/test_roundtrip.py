"""Golden round-trip: import → form → export changes nothing, for upstream and richer valid runtimes."""

from __future__ import annotations

import pytest

from runtimes.domain.diff import semantically_equal, structural_diff
from runtimes.domain.editing import apply_fields, fields_from_manifest
from runtimes.domain.manifest import dump_many, dump_yaml, load_runtime, load_runtimes, new_runtime
from runtimes.domain.policy import validate_runtime
from tests.fixture_paths import REFERENCE_RUNTIMES

from .test_policy_cases import upstream, with_scheduling

RUNTIMES = sorted(REFERENCE_RUNTIMES.glob("*.yaml"))

RICH = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: rich
  labels:
    trainer.kubeflow.org/framework: torch
    team: ml-infra
    replicas: "3"
  annotations:
    description: "A runtime with <b>many</b> fields the form does not model"
    empty: ""
spec:
  mlPolicy:
    numNodes: 4
    torch:
      envInjection:
        targets:
          - jobName: node
            containerNames: [sidecar]
  scheduling:
    replicatedJobs:
      - targetReplicatedJobs: [node]
        job:
          schedulingPolicy: {gang: {}}
          schedulingConstraints:
            topology:
              - key: topology.kubernetes.io/rack
          disruptionMode: {all: {}}
          resourceClaims:
            - name: tpu-slice
              resourceClaimTemplateName: tpu-slice-template
      - targetReplicatedJobs: [aux]
        schedulingPolicy:
          basic: {}
  template:
    metadata:
      labels:
        owner: platform
    spec:
      failurePolicy:
        maxRestarts: 3
      network:
        enableDNSHostnames: true
        subdomain: rich
      ttlSecondsAfterFinished: 0
      suspend: false
      replicatedJobs:
        - name: node
          groupName: default
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
              annotations:
                note: keep
            spec:
              backoffLimit: 0
              template:
                metadata:
                  labels:
                    app: rich
                spec:
                  nodeSelector:
                    cloud.example.com/accelerator: tpu
                  tolerations:
                    - key: google.com/tpu
                      operator: Exists
                      effect: NoSchedule
                  volumes:
                    - name: shm
                      emptyDir: {medium: Memory, sizeLimit: 8Gi}
                  initContainers:
                    - name: init
                      image: busybox
                      command: [sh, -c, "echo ready"]
                  containers:
                    - name: sidecar
                      image: sidecar:1
                    - name: node
                      image: trainer:1
                      command:
                        - bash
                        - -c
                        - |
                          set -e
                          torchrun train.py
                      env:
                        - name: NCCL_DEBUG
                          value: INFO
                        - name: PORTS
                          value: "8080:80"
                      ports:
                        - containerPort: 29500
                      resources:
                        requests:
                          cpu: "8"
                          memory: 64Gi
                        limits:
                          nvidia.com/gpu: 8
                          memory: 64Gi
                      readinessProbe:
                        tcpSocket: {port: 29500}
                        periodSeconds: 10
                      securityContext:
                        runAsNonRoot: true
                        capabilities: {add: [IPC_LOCK]}
                      volumeMounts:
                        - {name: shm, mountPath: /dev/shm}
        - name: aux
          replicas: 1
          template:
            spec:
              parallelism: 2
              template:
                spec:
                  containers:
                    - name: aux
                      image: aux:1
                      resources:
                        requests: {cpu: 500m}
"""

VARIANTS = {
    "rich": lambda: load_runtime(RICH),
    "level1": lambda: with_scheduling(
        "torch",
        {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
            "disruptionMode": "PodGroup",
        },
    ),
    "level1-default": lambda: with_scheduling("torch", {}),
    "level2": lambda: with_scheduling(
        "qwen",
        {
            "replicatedJobs": [
                {
                    "targetReplicatedJobs": ["dataset-initializer", "model-initializer"],
                    "schedulingPolicy": {"basic": {}},
                },
                {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}, "unknownFuture": {"x": 1}},
            ]
        },
    ),
    "composite": lambda: with_scheduling(
        "torch",
        {
            "schedulingPolicy": {"gang": {}},
            "replicatedJobs": [{"targetReplicatedJobs": ["node"], "disruptionMode": {"single": {}}, "job": {}}],
        },
    ),
    "coscheduling": lambda: _with(
        upstream("qwen"), "podGroupPolicy", {"coscheduling": {"scheduleTimeoutSeconds": 120}}
    ),
    "coscheduling-default": lambda: _with(upstream("torch"), "podGroupPolicy", {"coscheduling": {}}),
    "volcano": lambda: _with(
        upstream("torch"), "podGroupPolicy", {"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}}
    ),
    "flux": lambda: _with_ml(upstream("torch"), {"numNodes": 2, "flux": {"numProcPerNode": 4}}),
    "jax-no-num-nodes": lambda: _with_ml(upstream("torch"), {"jax": {}}),
    "no-ml-policy": lambda: _without(upstream("torch"), "mlPolicy"),
    "new-runtime": lambda: new_runtime("fresh"),
}


def _with(manifest: dict, key: str, value: object) -> dict:
    manifest["spec"][key] = value
    return manifest


def _with_ml(manifest: dict, ml: dict) -> dict:
    manifest["spec"]["mlPolicy"] = ml
    return manifest


def _without(manifest: dict, key: str) -> dict:
    del manifest["spec"][key]
    return manifest


def _round_trip(original: dict) -> dict:
    fields = fields_from_manifest(original)
    exported = dump_yaml(apply_fields(original, fields))
    return load_runtime(exported)


@pytest.mark.parametrize("path", RUNTIMES, ids=lambda p: p.name)
def test_upstream_runtime_round_trips_through_the_form_unchanged(path):
    original = load_runtime(path.read_text())
    again = _round_trip(original)
    assert structural_diff(original, again) == []
    assert semantically_equal(original, again)
    assert again == original
    assert dump_yaml(again) == dump_yaml(original)  # same key order, same text


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_richer_runtime_round_trips_through_the_form_unchanged(name):
    original = VARIANTS[name]()
    again = _round_trip(original)
    assert structural_diff(original, again) == []
    assert dump_yaml(again) == dump_yaml(original)


def test_rich_variant_is_a_valid_runtime():
    report = validate_runtime(load_runtime(RICH))
    assert report.errors == ()


def test_import_of_many_documents_exports_back_identically():
    originals = [load_runtime(p.read_text()) for p in RUNTIMES]
    exported = dump_many([apply_fields(m, fields_from_manifest(m)) for m in originals])
    assert load_runtimes(exported) == originals


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_form_built_from_scratch_reads_back_the_same_fields(name):
    fields = fields_from_manifest(VARIANTS[name]())
    built = apply_fields(None, fields)
    again = fields_from_manifest(built)
    for rjob in fields.replicated_jobs:
        rjob.original_name = rjob.name
    assert again == fields
