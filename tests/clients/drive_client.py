"""Drive a running portal through the main flows with the client openapi-python-client generated from its schema.

Run by tests/clients/test_generated_client.py with the generator's own virtualenv (the generated package on
PYTHONPATH): ``python drive_client.py BASE_URL USERNAME PASSWORD MANIFESTS_YAML``. Prints one JSON report:
``{"steps": [{"step", "status", "type"}], "untyped": ["step: Model.path: keys"], "problems": [...]}``, where
``untyped`` lists every response object that carried keys its generated model does not declare (they land in
the model's ``additional_properties`` catch-all, untyped). Models that declare no field at all are maps (the
Kubernetes manifests) and may hold any key.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import attrs
from trainer_portal_api_client import AuthenticatedClient, Client
from trainer_portal_api_client.api.auth import auth_token_create
from trainer_portal_api_client.api.cluster_sync import (
    cluster_status,
    policy_sync,
    policy_sync_impact,
    runtime_sync_status,
    runtimes_sync_bulk,
    sync_batch_progress,
)
from trainer_portal_api_client.api.preview import preview_unsaved, runtimes_preview
from trainer_portal_api_client.api.runtimes import (
    runtimes_diff,
    runtimes_export_bulk,
    runtimes_import,
    runtimes_list,
    runtimes_retrieve,
    runtimes_revisions_list,
    runtimes_revisions_retrieve,
    runtimes_rollback,
    runtimes_update,
    runtimes_validate,
)
from trainer_portal_api_client.api.trainjobs import trainjobs_list, trainjobs_retrieve, trainjobs_summary
from trainer_portal_api_client.models import (
    AuthTokenRequest,
    BulkSyncInputRequest,
    ImportRequestRequest,
    PolicyUpdateRequest,
    PolicyUpdateRequestManifest,
    PreviewRequestRequest,
    PreviewTopologyRequest,
    RollbackRequest,
    UnsavedPreviewRequestRequest,
    ValidateRequestRequest,
    ValidateRequestRequestManifest,
)

report: dict[str, list] = {"steps": [], "untyped": [], "problems": []}


def untyped(value: Any, where: str) -> None:
    """Record every generated model under `value` whose catch-all holds keys while the model declares fields."""
    if attrs.has(type(value)):
        declared = [f.name for f in attrs.fields(type(value)) if f.name != "additional_properties"]
        extra = getattr(value, "additional_properties", {})
        if declared and extra:
            report["untyped"].append(f"{where}: {type(value).__name__} has untyped {sorted(extra)}")
        for name in declared:
            untyped(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            untyped(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            untyped(item, f"{where}.{key}")


def step(name: str, response, expected: int, model: str) -> Any:
    """Record a call: its status and parsed type; check both, and the parsed value's typing."""
    parsed = response.parsed
    kind = type(parsed).__name__
    report["steps"].append({"step": name, "status": int(response.status_code), "type": kind})
    if int(response.status_code) != expected or kind != model:
        report["problems"].append(f"{name}: {int(response.status_code)} {kind}, expected {expected} {model}: "
                                  f"{response.content[:300]!r}")
    untyped(parsed, name)
    return parsed


def main(base_url: str, username: str, password: str, manifests_yaml: str) -> None:
    anonymous = Client(base_url=base_url, raise_on_unexpected_status=True)
    issued = step("token", auth_token_create.sync_detailed(
        client=anonymous, body=AuthTokenRequest(username=username, password=password)), 200, "IssuedToken")
    api = AuthenticatedClient(base_url=base_url, token=issued.token, prefix="Token", raise_on_unexpected_status=True)

    result = step("import", runtimes_import.sync_detailed(
        client=api, body=ImportRequestRequest(text=manifests_yaml)), 201, "ImportResult")
    name = result.created[0]
    page = step("list", runtimes_list.sync_detailed(client=api), 200, "PaginatedPolicyOutputList")
    policy = step("retrieve", runtimes_retrieve.sync_detailed(name, client=api), 200, "PolicyOutput")
    manifest = policy.manifest.to_dict()
    step("validate", runtimes_validate.sync_detailed(
        client=api, body=ValidateRequestRequest(manifest=ValidateRequestRequestManifest.from_dict(manifest))),
        200, "ValidateResponse")
    topology = PreviewTopologyRequest(zones=2, blocks_per_zone=2, racks_per_block=2, nodes_per_rack=4,
                                      gpus_per_node=8)
    preview = step("preview", runtimes_preview.sync_detailed(
        name, client=api, body=PreviewRequestRequest(num_nodes=4, topology=topology)), 200, "PreviewResult")
    if preview is not None and not preview.pod_groups[0].placement.fits:
        report["problems"].append("preview: the first PodGroup's placement did not come through typed")
    step("preview unsaved", preview_unsaved.sync_detailed(
        client=api, body=UnsavedPreviewRequestRequest(num_nodes=4, topology=topology, manifest=manifest)),
        200, "PreviewResult")
    step("preview refused", runtimes_preview.sync_detailed(
        name, client=api, body=PreviewRequestRequest(num_nodes=0)), 400, "Error")

    manifest["spec"]["mlPolicy"]["numNodes"] = 3
    step("update", runtimes_update.sync_detailed(
        name, client=api, body=PolicyUpdateRequest(manifest=PolicyUpdateRequestManifest.from_dict(manifest),
                                                   version=policy.version)), 200, "PolicyOutput")
    step("stale update", runtimes_update.sync_detailed(
        name, client=api, body=PolicyUpdateRequest(manifest=PolicyUpdateRequestManifest.from_dict(
            {**manifest, "spec": {**manifest["spec"], "mlPolicy": {**manifest["spec"]["mlPolicy"], "numNodes": 5}}}),
            version=policy.version)), 409, "Error")
    step("revisions", runtimes_revisions_list.sync_detailed(name, client=api), 200,
         "PaginatedRevisionOutputList")
    step("revision", runtimes_revisions_retrieve.sync_detailed(name, 1, client=api), 200, "RevisionDetail")
    step("diff", runtimes_diff.sync_detailed(name, client=api, from_=1, to=2), 200, "DiffOutput")
    step("rollback", runtimes_rollback.sync_detailed(
        name, client=api, body=RollbackRequest(revision=1, version=2)), 200, "PolicyOutput")
    step("missing", runtimes_retrieve.sync_detailed("no-such-policy", client=api), 404, "Error")

    from trainer_portal_api_client.models import RuntimesExportBulkFormat

    exported = step("export json", runtimes_export_bulk.sync_detailed(
        client=api, format_=RuntimesExportBulkFormat.JSON), 200, "PolicyExportList")
    if exported is not None and len(exported.items) != page.count:
        report["problems"].append(f"export: {len(exported.items)} items for {page.count} policies")

    from trainer_portal_api_client.models import (
        ClusterStatusDialect,
        PolicySyncImpactDialect,
        SyncBatchProgressDialect,
    )

    step("sync", policy_sync.sync_detailed(name, client=api), 202, "SyncAccepted")
    step("sync status", runtime_sync_status.sync_detailed(name, client=api), 200, "SyncStatus")
    step("sync impact", policy_sync_impact.sync_detailed(
        name, client=api, num_nodes=4, dialect=PolicySyncImpactDialect.CAMEL), 200, "SyncImpact")
    accepted = step("bulk sync", runtimes_sync_bulk.sync_detailed(
        client=api, body=BulkSyncInputRequest(names=[name])), 202, "BulkSyncAccepted")
    step("bulk progress", sync_batch_progress.sync_detailed(
        accepted.batch, client=api, dialect=SyncBatchProgressDialect.CAMEL), 200, "SyncBatchProgress")
    step("cluster", cluster_status.sync_detailed(client=api, dialect=ClusterStatusDialect.CAMEL), 200,
         "ClusterStatus")

    jobs = step("trainjobs", trainjobs_list.sync_detailed(client=api), 200, "TrainJobPage")
    step("trainjob summary", trainjobs_summary.sync_detailed(client=api), 200, "Summary")
    first = jobs.items[0]
    step("trainjob", trainjobs_retrieve.sync_detailed(first.namespace, first.name, client=api), 200,
         "TrainJobDetail")


if __name__ == "__main__":
    try:
        main(*sys.argv[1:5])
    except Exception as exc:  # report it: the test shows the report, not a traceback from another interpreter
        import traceback

        where = traceback.format_exception(exc)[-4:]
        report["problems"].append(f"{type(exc).__name__}: {exc} at {''.join(where)}"[:3000])
    print(json.dumps(report))
