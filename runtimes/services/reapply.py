"""What "Re-apply ours (force)" would do, shown before it is done: a dry run against the cluster, nothing written.

The forced re-apply (``sync.policy_drift_resolve(action="reapply")``) applies the policy's current revision with
``force`` and then removes the map fields other managers added. This module asks the cluster the same questions
with dry runs: a plain apply names the managers whose fields the apply would take over (the conflict the force
overrides), a forced apply returns the object the cluster would hold.
"""

from __future__ import annotations

from typing import Any

from runtimes.domain.diff import structural_diff, unified_diff
from runtimes.domain.drift import comparable, desired_object, foreign_fields
from runtimes.models import RuntimePolicy
from runtimes.services.clusters import action_gateway_for_cluster
from trainer_portal import kube
from trainer_portal.cluster.models import Cluster


def policy_force_reapply_preview(
    *, policy: RuntimePolicy, gateway: kube.Gateway | None = None, cluster: Cluster | None = None
) -> dict[str, Any]:
    """Return what a forced re-apply of ``policy``'s current revision would change on ``cluster`` (None: the
    default cluster).

    ``{revision, missing, changes: [{path, op, live, ours}], diff, managers, conflicts: [{manager, path}],
    removed: [{manager, path}], error}``: ``changes`` and ``diff`` go from the live object to the object the
    apply leaves (server defaults on both sides); ``managers`` are the other field managers whose fields it
    takes over or removes; ``conflicts`` are the fields a plain apply would refuse (what the force overrides);
    ``removed`` are fields other managers added that the re-apply deletes. ``error`` is the cluster's message
    when it could not answer (the rest is then empty). Never raises for cluster failures.
    """
    preview: dict[str, Any] = {
        "revision": policy.version,
        "missing": False,
        "changes": [],
        "diff": "",
        "managers": [],
        "conflicts": [],
        "removed": [],
        "error": "",
    }
    desired = desired_object(policy.manifest, revision=policy.version)
    try:
        gateway = gateway or action_gateway_for_cluster(cluster)
        resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        live = gateway.get(resource, name=policy.name)
        conflicts: list[dict[str, str]] = []
        conflict_managers: tuple[str, ...] = ()
        if live is not None:
            try:
                gateway.apply(resource, body=desired, dry_run=True)
            except kube.KubeConflict as exc:
                conflict_managers = exc.managers
                conflicts = [
                    {"manager": ", ".join(exc.managers) or "another manager", "path": cause.field or cause.message}
                    for cause in exc.causes
                ]
        after = gateway.apply(resource, body=desired, dry_run=True, force=True)
    except kube.KubeError as exc:
        preview["error"] = exc.message
        return preview
    field_manager = gateway.settings.field_manager
    before = comparable(live) if live is not None else {}
    removed = [
        {"manager": manager, "path": path}
        for manager, path in foreign_fields(
            ((live or {}).get("metadata") or {}).get("managedFields") or [], field_manager, desired
        )
    ]
    after_clean = comparable(after)
    changes = [
        {"path": change.path, "op": change.op, "live": change.old, "ours": change.new}
        for change in structural_diff(before, after_clean)
    ]
    for item in removed:
        if not any(change["path"] == item["path"] for change in changes):
            changes.append(
                {"path": item["path"], "op": "removed", "live": f"(owned by {item['manager']})", "ours": None}
            )
    # The plain apply's conflict names exactly the owners of fields we set; removed fields name their own.
    managers = set(conflict_managers) | {item["manager"] for item in removed}
    preview.update(
        missing=live is None,
        changes=changes,
        diff=unified_diff(
            before, after_clean, old_label="cluster (live)", new_label=f"after re-apply (revision {policy.version})"
        ),
        managers=sorted(managers),
        conflicts=conflicts,
        removed=removed,
    )
    return preview
