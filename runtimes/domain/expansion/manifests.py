"""Rendering of an expansion into the scheduling objects the controller creates, per scheduling API version.

Workload, PodGroup and CompositePodGroup manifests for `scheduling.k8s.io/v1beta1` (1.37), `v1alpha2` (1.36,
whose field names differ) and `v1alpha3` (CompositePodGroup). Functions read the plan through `Plan`, so this
module does not depend on how the plan is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from runtimes.domain.expansion.model import (
    BASIC,
    COMPOSITE_POD_GROUP,
    POD_GROUP,
    TRAINJOB_API_GROUP,
    TRAINJOB_API_VERSION,
    V1ALPHA2,
    PodGroupPlan,
)


class Plan(Protocol):
    """What rendering needs of an expansion (`runtimes.domain.expansion.plan.Expansion` is one)."""

    trainjob_name: str
    namespace: str
    trainjob_uid: str
    api_version: str
    workload_name: str | None
    pod_groups: tuple[PodGroupPlan, ...]
    composite: bool
    template_order: tuple[str, ...]



def _owner_trainjob(plan: Plan) -> dict:
    return {
        "apiVersion": TRAINJOB_API_VERSION,
        "kind": "TrainJob",
        "name": plan.trainjob_name,
        "uid": plan.trainjob_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }

def _metadata(plan: Plan, name: str, owners: list[dict]) -> dict:
    # No labels: KEP-3015 adds none to the Workload and PodGroups; they are found by ownerReferences and
    # `spec.controllerRef` only, so the preview shows exactly what the controller writes.
    return {
        "name": name,
        "namespace": plan.namespace,
        "ownerReferences": owners,
    }

def _policy(plan: Plan, group: PodGroupPlan) -> dict:
    if group.kind == COMPOSITE_POD_GROUP:
        if group.policy == BASIC:
            return {"basic": {}}
        return {"gang": {"minGroupCount": group.min_group_count}}
    if group.policy == BASIC:
        return {"basic": {}}
    return {"gang": {"minCount": group.min_count}}

def _disruption(plan: Plan, mode: str | None) -> object:
    if plan.api_version == V1ALPHA2:
        return {"single": "Pod", "all": "PodGroup"}[mode]
    return {mode: {}}

def _template_body(plan: Plan, group: PodGroupPlan) -> dict:
    body: dict = {"name": group.template_name, "schedulingPolicy": _policy(plan, group)}
    if group.topology_key:
        body["schedulingConstraints"] = {"topology": [{"key": group.topology_key}]}
    if group.disruption_mode:
        body["disruptionMode"] = _disruption(plan, group.disruption_mode)
    if group.resource_claims:
        body["resourceClaims"] = [claim.to_dict() for claim in group.resource_claims]
    return body

def workload_manifest(plan: Plan) -> dict | None:
    """Return the scheduling Workload object, or None when the runtime has no `spec.scheduling`."""
    if plan.workload_name is None:
        return None
    spec: dict = {
        "controllerRef": {"apiGroup": TRAINJOB_API_GROUP, "kind": "TrainJob", "name": plan.trainjob_name}
    }
    by_template = {group.template_name: group for group in plan.pod_groups}
    if plan.composite:
        roots = [group for group in plan.pod_groups if group.parent is None]
        spec["compositePodGroupTemplates"] = [_composite_template(plan, root, by_template) for root in roots]
    else:
        spec["podGroupTemplates"] = [_template_body(plan, by_template[name]) for name in plan.template_order]
    return {
        "apiVersion": plan.api_version,
        "kind": "Workload",
        "metadata": _metadata(plan, plan.workload_name, [_owner_trainjob(plan)]),
        "spec": spec,
    }

def _composite_template(plan: Plan, group: PodGroupPlan, by_template: Mapping[str, PodGroupPlan]) -> dict:
    body = _template_body(plan, group)
    children = [child for child in plan.pod_groups if child.parent == group.name]
    leaves = [_template_body(plan, child) for child in children if child.kind == POD_GROUP]
    composites = [_composite_template(plan, c, by_template) for c in children if c.kind == COMPOSITE_POD_GROUP]
    if leaves:
        body["podGroupTemplates"] = leaves
    if composites:
        body["compositePodGroupTemplates"] = composites
    return body

def podgroup_manifests(plan: Plan) -> list[dict]:
    """Return the CompositePodGroup objects (parents first) followed by the PodGroup objects.

    The Workload ownerReference carries `uid: ""` because the Workload's UID is only known after creation.
    """
    if plan.workload_name is None:
        return []
    owners = [
        _owner_trainjob(plan),
        {"apiVersion": plan.api_version, "kind": "Workload", "name": plan.workload_name, "uid": ""},
    ]
    composites = [g for g in plan.pod_groups if g.kind == COMPOSITE_POD_GROUP]
    leaves = [g for g in plan.pod_groups if g.kind == POD_GROUP]
    return [_group_manifest(plan, group, owners) for group in [*composites, *leaves]]

def _group_manifest(plan: Plan, group: PodGroupPlan, owners: list[dict]) -> dict:
    spec: dict = {}
    if plan.api_version == V1ALPHA2:
        spec["podGroupTemplateRef"] = {
            "workload": {"workloadName": plan.workload_name, "podGroupTemplateName": group.template_name}
        }
    else:
        spec["workloadRef"] = {"workloadName": plan.workload_name, "templateName": group.template_name}
    body = _template_body(plan, group)
    del body["name"]
    spec.update(body)
    if group.parent is not None:
        spec["parentCompositePodGroupName"] = group.parent
    return {
        "apiVersion": plan.api_version,
        "kind": group.kind,
        "metadata": _metadata(plan, group.name, [dict(owner) for owner in owners]),
        "spec": spec,
    }
