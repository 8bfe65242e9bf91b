"""The kinds the sandbox serves: a table of built-in resource types plus types made from CRD objects.

A `ResourceType` is one (group, version, plural) the server answers for. Objects are stored per
`ResourceType.key` = (group, plural), so every served version of a CRD shares one collection (no conversion:
the sandbox only rewrites `apiVersion`, like a CRD with `conversion.strategy: None`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# List semantics of built-in kinds, keyed by a dotted path with `[]` for "each item of the list".
# Value: ("map", keys) | ("set", ()) | ("atomic", ()). Used by server-side apply (field ownership) and, for the
# "map" entries, by strategic merge patch (patchMergeKey). Lists not named here are atomic, as in upstream.
_COMMON_LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "metadata.ownerReferences": ("map", ("uid",)),
    "metadata.finalizers": ("set", ()),
    "status.conditions": ("map", ("type",)),
}
_POD_LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    **_COMMON_LISTS,
    "spec.containers": ("map", ("name",)),
    "spec.initContainers": ("map", ("name",)),
    "spec.ephemeralContainers": ("map", ("name",)),
    "spec.volumes": ("map", ("name",)),
    "spec.imagePullSecrets": ("map", ("name",)),
    "spec.containers[].env": ("map", ("name",)),
    "spec.containers[].ports": ("map", ("containerPort", "protocol")),
    "spec.containers[].volumeMounts": ("map", ("mountPath",)),
    "spec.initContainers[].env": ("map", ("name",)),
    "spec.initContainers[].volumeMounts": ("map", ("mountPath",)),
    "spec.schedulingGates": ("map", ("name",)),
    "status.containerStatuses": ("atomic", ()),
}
_NODE_LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    **_COMMON_LISTS,
    "status.addresses": ("map", ("type",)),
}
_SCHEDULING_LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    **_COMMON_LISTS,
    "spec.podGroupTemplates": ("map", ("name",)),
    "spec.compositePodGroupTemplates": ("map", ("name",)),
    "spec.resourceClaims": ("map", ("name",)),
    "status.resourceClaimStatuses": ("map", ("name",)),
}


@dataclass
class ResourceType:
    """One served (group, version, resource). `schema` is the openAPIV3Schema for custom resources."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = True
    builtin: bool = True
    schema: dict[str, Any] | None = None
    list_types: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=lambda: dict(_COMMON_LISTS))
    printer_columns: list[dict[str, Any]] = field(default_factory=list)
    field_selectors: tuple[str, ...] = ("metadata.name", "metadata.namespace")
    # Whether the kind's strategy keeps metadata.generation (kinds without a spec/status split have none).
    generation: bool = True
    # Whether PUT without metadata.resourceVersion is allowed (custom resources and CRDs require it).
    unconditional_update: bool = True

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()

    @property
    def key(self) -> tuple[str, str]:
        """Returns the storage key shared by all versions of this resource."""
        return (self.group, self.plural)

    @property
    def api_version(self) -> str:
        """Returns `group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_kind(self) -> str:
        """Returns `plural.group` as used in error messages, e.g. `trainjobs.trainer.kubeflow.org`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def list_type(self, path: str) -> tuple[str, tuple[str, ...]]:
        """Returns the list semantics ("map"|"set"|"atomic", keys) of the list at `path` (dotted, `[]` per item)."""
        return self.list_types.get(path, ("atomic", ()))


def builtin_types(kube_version: str) -> list[ResourceType]:
    """Returns the built-in resource types for a 1.37 (v1beta1 scheduling) or 1.36 (v1alpha2) cluster."""
    scheduling_version = "v1alpha2" if kube_version == "1.36" else "v1beta1"
    return [
        ResourceType("", "v1", "Namespace", "namespaces", namespaced=False, short_names=("ns",),
                     field_selectors=("metadata.name", "status.phase"), generation=False),
        ResourceType("", "v1", "Node", "nodes", namespaced=False, short_names=("no",), list_types=_NODE_LISTS,
                     field_selectors=("metadata.name", "spec.unschedulable"), generation=False),
        ResourceType("", "v1", "Pod", "pods", namespaced=True, short_names=("po",), categories=("all",),
                     list_types=_POD_LISTS,
                     field_selectors=("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase",
                                      "spec.schedulerName", "spec.serviceAccountName", "status.podIP")),
        ResourceType("", "v1", "Event", "events", namespaced=True, short_names=("ev",), has_status=False,
                     field_selectors=("metadata.name", "metadata.namespace", "involvedObject.kind",
                                      "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
                                      "involvedObject.apiVersion", "involvedObject.resourceVersion",
                                      "involvedObject.fieldPath", "reason", "reportingComponent", "type",
                                      "source"), generation=False),
        # What kubectl's generators and the Kubeflow SDK touch (`create configmap/secret`, `cluster-info`, the
        # Trainer's public ConfigMap); the sandbox stores them without further semantics.
        ResourceType("", "v1", "ConfigMap", "configmaps", namespaced=True, short_names=("cm",), has_status=False,
                     generation=False),
        ResourceType("", "v1", "Secret", "secrets", namespaced=True, has_status=False, generation=False,
                     field_selectors=("metadata.name", "metadata.namespace", "type")),
        ResourceType("", "v1", "Service", "services", namespaced=True, short_names=("svc",), categories=("all",),
                     generation=False),
        ResourceType("scheduling.k8s.io", scheduling_version, "Workload", "workloads", namespaced=True,
                     list_types=_SCHEDULING_LISTS, has_status=False),
        ResourceType("scheduling.k8s.io", scheduling_version, "PodGroup", "podgroups", namespaced=True,
                     list_types=_SCHEDULING_LISTS),
        # RBAC (rbac.authorization.k8s.io/v1): stored as sent; SubjectAccessReviews are decided from them as
        # kube-apiserver's RBAC authorizer decides (sandbox/apiserver/rbac.py).
        ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", namespaced=True, has_status=False,
                     generation=False),
        ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False,
                     has_status=False, generation=False),
        ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", namespaced=True,
                     has_status=False, generation=False),
        ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
                     namespaced=False, has_status=False, generation=False),
        # Leader election of the portal's cluster watcher (coordination.k8s.io Lease, as kube-controller-manager uses).
        ResourceType("coordination.k8s.io", "v1", "Lease", "leases", namespaced=True, has_status=False,
                     field_selectors=("metadata.name", "metadata.namespace"), generation=False),
        # Pod priority for the gang scheduler's preemption (scheduling.k8s.io/v1 beside the v1beta1 Workload API).
        ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False,
                     short_names=("pc",), has_status=False, generation=False),
        ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                     namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
                     list_types={**_COMMON_LISTS, "spec.versions": ("map", ("name",))}, unconditional_update=False),
    ]


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """Returns one ResourceType per served version of a CustomResourceDefinition object.

    Raises KeyError/TypeError on a malformed CRD (the caller validates CRDs before calling this).
    """
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")
                  or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
        rt = ResourceType(
            group=spec["group"], version=version["name"], kind=names["kind"], plural=names["plural"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced", singular=names.get("singular", ""),
            short_names=tuple(names.get("shortNames", ())), categories=tuple(names.get("categories", ())),
            has_status="status" in (version.get("subresources") or {}), builtin=False, schema=schema,
            unconditional_update=False,
            printer_columns=list(version.get("additionalPrinterColumns", ())),
            field_selectors=("metadata.name", "metadata.namespace",
                             *(f["jsonPath"].lstrip(".") for f in version.get("selectableFields", ()))),
        )
        rt.list_types = {**_COMMON_LISTS, **schema_list_types(schema)}
        out.append(rt)
    return out


def schema_list_types(schema: dict[str, Any], prefix: str = "") -> dict[str, tuple[str, tuple[str, ...]]]:
    """Returns the `x-kubernetes-list-type` of every list in an openAPIV3Schema, keyed by dotted path."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    stack = [(schema, prefix)]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "array":
            kind = node.get("x-kubernetes-list-type", "atomic")
            out[path] = (kind, tuple(node.get("x-kubernetes-list-map-keys", ())))
            stack.append((node.get("items", {}), path + "[]"))
        for name, sub in (node.get("properties") or {}).items():
            stack.append((sub, f"{path}.{name}" if path else name))
        if isinstance(node.get("additionalProperties"), dict):
            stack.append((node["additionalProperties"], path + ".*"))
    return out
