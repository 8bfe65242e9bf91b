"""The Trainer runtime CRDs the sandbox installs (`--trainer-crd`) and the v2.4.0 rules of its overlay.

- `v2.4-v1beta1` (default): `spec.scheduling` with the 1.37 building blocks (`disruptionMode: {single: {}}`).
- `v2.4-v1alpha2`: the 1.36 embedded types (`disruptionMode: Pod|PodGroup`, `gang.minCount` required).
- `v2.3`: no `spec.scheduling` at all.

v2.4.0 rules: ReplicatedJob names in runtimes ≤ 20 characters; with `scheduling.replicatedJobs` and no level-1
field every ReplicatedJob is targeted by exactly one entry; `resourceClaims` exist only under `job` (level 3).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sandbox.testing import SandboxProcess
from tests.sandbox.api_support import TRAINER, raw, runtime

CTR = f"/apis/{TRAINER}/v1alpha1/clustertrainingruntimes"
TR = f"/apis/{TRAINER}/v1alpha1/namespaces/default/trainingruntimes"
CRD_NAME = "clustertrainingruntimes.trainer.kubeflow.org"


def _with_rjobs(body: dict, *names: str) -> dict:
    """Returns the runtime with one ReplicatedJob per name (copies of the first)."""
    body = copy.deepcopy(body)
    jobs = body["spec"]["template"]["spec"]["replicatedJobs"]
    first = jobs[0]
    body["spec"]["template"]["spec"]["replicatedJobs"] = [{**copy.deepcopy(first), "name": n} for n in names]
    return body


def _post(url: str, path: str, body: dict, params: str = "") -> tuple[int, dict, list[str]]:
    request = urllib.request.Request(url + path + params, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers.get_all("Warning") or []
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), []


def _causes(code: int, body: dict) -> dict[str, dict]:
    assert (code, body.get("reason")) == (422, "Invalid"), body
    return {c["field"]: c for c in body["details"]["causes"]}


def _spec_schema(sandbox: SandboxProcess) -> dict:
    """Returns the openAPIV3Schema of the ClusterTrainingRuntime `spec`, read through the official client."""
    api_client = k8s_config.new_client_from_config(config_file=sandbox.kubeconfig)
    try:
        crd = k8s.ApiextensionsV1Api(api_client).read_custom_resource_definition(CRD_NAME)
        schema = api_client.sanitize_for_serialization(crd.spec.versions[0].schema.open_apiv3_schema)
    finally:
        api_client.close()
    return schema["properties"]["spec"]


@pytest.fixture(scope="module")
def alpha2() -> Iterator[SandboxProcess]:
    with SandboxProcess(topology="none", controllers=False, trainer_crd="v2.4-v1alpha2") as proc:
        yield proc


@pytest.fixture(scope="module")
def v23() -> Iterator[SandboxProcess]:
    with SandboxProcess(topology="none", controllers=False, trainer_crd="v2.3") as proc:
        yield proc


# -- 20-character ReplicatedJob names ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", [CTR, TR], ids=["ClusterTrainingRuntime", "TrainingRuntime"])
def test_replicated_job_names_longer_than_20_characters_are_rejected(cluster, path):
    ok = _with_rjobs(runtime("ok"), "n" * 20)
    if path == TR:
        ok["kind"] = "TrainingRuntime"
    assert _post(cluster.url, path, ok)[0] == 201
    long_name = "dataset-initializer-x"  # 21 characters
    bad = _with_rjobs(runtime("bad"), "node", long_name)
    if path == TR:
        bad["kind"] = "TrainingRuntime"
    code, body, _ = _post(cluster.url, path, bad)
    cause = _causes(code, body)["spec.template.spec.replicatedJobs[1].name"]
    assert cause["message"] == (f'Invalid value: "object": ReplicatedJob name {long_name} is 21 characters; '
                                f"ReplicatedJob names in runtimes must be at most 20 characters")


def test_the_typed_client_gets_the_name_limit_error(custom):
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                            _with_rjobs(runtime("typed"), "a-very-long-launcher-name"))
    assert err.value.status == 422
    assert "ReplicatedJob names in runtimes must be at most 20 characters" in json.loads(err.value.body)["message"]


# -- every ReplicatedJob targeted ---------------------------------------------------------------------------------
def _level2(*entries: list[str], **level1) -> dict:
    return {"replicatedJobs": [{"targetReplicatedJobs": t, "schedulingPolicy": {"gang": {}}} for t in entries],
            **level1}


@pytest.mark.parametrize(
    ("scheduling", "untargeted"),
    [
        (_level2(["node"]), "dataset-initializer"),
        (_level2(["node"], ["ghost"]), "dataset-initializer"),
        (_level2(["node", "dataset-initializer"], ["dataset-initializer"]), "dataset-initializer"),
    ],
    ids=["one-left-out", "target-of-a-missing-rjob", "targeted-twice"],
)
def test_every_replicated_job_must_be_targeted_exactly_once(cluster, scheduling, untargeted):
    body = _with_rjobs(runtime("cover", scheduling), "dataset-initializer", "node")
    code, answer, _ = _post(cluster.url, CTR, body)
    cause = _causes(code, answer)["spec.scheduling.replicatedJobs"]
    assert cause["message"] == (
        'Invalid value: "object": when replicatedJobs is set and no level 1 field is set, every ReplicatedJob in '
        f"the runtime template must be targeted by exactly one entry; not targeted exactly once: {untargeted}")


@pytest.mark.parametrize(
    "scheduling",
    [_level2(["node"], ["dataset-initializer"]), _level2(["node", "dataset-initializer"]),
     _level2(["node"], schedulingPolicy={"gang": {}})],
    ids=["one-entry-each", "one-entry-both", "level-1-set"],
)
def test_fully_targeted_or_level_1_runtimes_are_accepted(cluster, scheduling):
    body = _with_rjobs(runtime("cover", scheduling), "dataset-initializer", "node")
    code, answer, _ = _post(cluster.url, CTR, body)
    assert code == 201, answer


# -- resourceClaims only under job ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scheduling", "unknown"),
    [
        ({"schedulingPolicy": {"gang": {}}, "resourceClaims": [{"name": "tpu", "resourceClaimName": "t"}]},
         "spec.scheduling.resourceClaims"),
        ({"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}},
                              "resourceClaims": [{"name": "tpu", "resourceClaimName": "t"}]}]},
         "spec.scheduling.replicatedJobs[0].resourceClaims"),
    ],
    ids=["level-1", "level-2"],
)
def test_resource_claims_outside_job_are_unknown_fields(cluster, scheduling, unknown):
    code, body, warnings = _post(cluster.url, CTR, runtime("claims", scheduling))
    assert code == 201
    assert warnings == [f'299 - "unknown field \\"{unknown}\\""']
    assert "resourceClaims" not in json.dumps(body["spec"]["scheduling"])
    code, body, _ = _post(cluster.url, CTR, runtime("strict", scheduling), "?fieldValidation=Strict")
    assert code == 400 and f'unknown field "{unknown}"' in body["message"]


def test_resource_claims_under_job_are_kept_up_to_four(cluster):
    claims = [{"name": f"c{i}", "resourceClaimTemplateName": "t"} for i in range(4)]
    scheduling = {"replicatedJobs": [{"targetReplicatedJobs": ["node"],
                                      "job": {"schedulingPolicy": {"gang": {}}, "resourceClaims": claims}}]}
    code, body, warnings = _post(cluster.url, CTR, runtime("four", scheduling))
    assert code == 201 and warnings == []
    assert body["spec"]["scheduling"]["replicatedJobs"][0]["job"]["resourceClaims"] == claims


# -- the variants -------------------------------------------------------------------------------------------------
def test_default_variant_has_the_v1beta1_union_disruption_mode(cluster):
    scheduling = _spec_schema(cluster)["properties"]["scheduling"]
    mode = scheduling["properties"]["disruptionMode"]
    assert mode["type"] == "object" and set(mode["properties"]) == {"single", "all"}
    gang = scheduling["properties"]["schedulingPolicy"]["properties"]["gang"]
    assert "minCount" in gang["properties"] and "required" not in gang
    entry = scheduling["properties"]["replicatedJobs"]["items"]
    job = entry["properties"]["job"]
    assert job["properties"]["resourceClaims"]["maxItems"] == 4
    assert "resourceClaims" not in scheduling["properties"] and "resourceClaims" not in entry["properties"]


def test_v1alpha2_variant_has_the_string_disruption_mode_and_a_required_min_count(alpha2):
    alpha2.reset()
    scheduling = _spec_schema(alpha2)["properties"]["scheduling"]
    entry = scheduling["properties"]["replicatedJobs"]["items"]
    for holder in (scheduling, entry, entry["properties"]["job"]):
        assert holder["properties"]["disruptionMode"]["type"] == "string"
        assert holder["properties"]["disruptionMode"]["enum"] == ["Pod", "PodGroup"]
        assert holder["properties"]["schedulingPolicy"]["properties"]["gang"]["required"] == ["minCount"]
    ok = runtime("a2", {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": "PodGroup"})
    assert _post(alpha2.url, CTR, ok)[0] == 201
    code, body, _ = _post(alpha2.url, CTR, runtime("u", {"schedulingPolicy": {"gang": {}},
                                                         "disruptionMode": {"single": {}}}))
    causes = _causes(code, body)
    assert causes["spec.scheduling.disruptionMode"]["reason"] == "FieldValueTypeInvalid"
    assert causes["spec.scheduling.schedulingPolicy.gang.minCount"]["reason"] == "FieldValueRequired"
    code, body, _ = _post(alpha2.url, CTR, _with_rjobs(runtime("long"), "n" * 21))
    assert "spec.template.spec.replicatedJobs[0].name" in _causes(code, body)


def test_v23_variant_has_no_scheduling_and_no_v24_rules(v23):
    v23.reset()
    assert "scheduling" not in _spec_schema(v23)["properties"]
    code, body, warnings = _post(v23.url, CTR, runtime("old", {"schedulingPolicy": {"gang": {}}}))
    assert code == 201 and "scheduling" not in body["spec"]
    assert warnings == ['299 - "unknown field \\"spec.scheduling\\""']
    assert _post(v23.url, CTR, _with_rjobs(runtime("long"), "n" * 21))[0] == 201
    assert raw(v23.url, "GET", "/sandbox/info")[0] == 200


def test_an_unknown_variant_is_refused_at_start(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sandbox", "--kubeconfig", str(tmp_path / "kc"), "--topology",
                           "none", "--no-controllers", "--trainer-crd", "v9"], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2 and "--trainer-crd: invalid choice: 'v9'" in done.stderr
