"""Coordinates of the API resources the portal uses, and how a served version is chosen.

A :class:`ResourceKind` names a resource by group, kind and plural, plus the versions we understand in order of
preference. Which of them the cluster serves is decided by discovery (``Gateway.resolve``), never by guessing
URLs; the result is a concrete :class:`Resource` that can build request paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
SCHEDULING_GROUP = "scheduling.k8s.io"
# Newest first: a 1.37 cluster serves v1beta1 (+ v1alpha3), 1.36 v1alpha2, 1.35 v1alpha1
# (docs/reference/kubernetes-apis.md §4.4).
SCHEDULING_VERSIONS = ("v1beta1", "v1alpha3", "v1alpha2", "v1alpha1")


@dataclass(frozen=True)
class ResourceKind:
    """A resource we know how to use, independent of what a given cluster serves."""

    group: str  # "" for the core group
    kind: str
    plural: str
    namespaced: bool
    versions: tuple[str, ...]

    @property
    def label(self) -> str:
        """Return ``plural.group`` (``pods`` for core), as kubectl and RBAC name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass(frozen=True)
class Resource:
    """A served resource at one version: enough to build URLs."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """Return ``group/version`` (just ``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """Return the request path, e.g. ``/apis/g/v/namespaces/ns/plural/name``.

        Raises ValueError when a namespaced resource is asked for a single object without a namespace.
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        elif self.namespaced and name:
            raise ValueError(f"{self.kind} is namespaced: pass namespace= to address {name!r}")
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
        return base


CLUSTER_TRAINING_RUNTIME = ResourceKind(
    TRAINER_GROUP, "ClusterTrainingRuntime", "clustertrainingruntimes", False, (TRAINER_VERSION,)
)
TRAINING_RUNTIME = ResourceKind(TRAINER_GROUP, "TrainingRuntime", "trainingruntimes", True, (TRAINER_VERSION,))
TRAINJOB = ResourceKind(TRAINER_GROUP, "TrainJob", "trainjobs", True, (TRAINER_VERSION,))
WORKLOAD = ResourceKind(SCHEDULING_GROUP, "Workload", "workloads", True, SCHEDULING_VERSIONS)
PODGROUP = ResourceKind(SCHEDULING_GROUP, "PodGroup", "podgroups", True, ("v1beta1", "v1alpha3", "v1alpha2"))
NODE = ResourceKind("", "Node", "nodes", False, ("v1",))
POD = ResourceKind("", "Pod", "pods", True, ("v1",))
NAMESPACE = ResourceKind("", "Namespace", "namespaces", False, ("v1",))
# Admission tracking reads these too. JobSet and Kueue are optional: discovery says whether a cluster serves them.
JOBSET = ResourceKind("jobset.x-k8s.io", "JobSet", "jobsets", True, ("v1alpha2",))
KUEUE_WORKLOAD = ResourceKind("kueue.x-k8s.io", "Workload", "workloads", True, ("v1beta2", "v1beta1"))
# Kueue's queues (the queues app's read model); optional like the Workloads.
KUEUE_RESOURCE_FLAVOR = ResourceKind("kueue.x-k8s.io", "ResourceFlavor", "resourceflavors", False,
                                     ("v1beta2", "v1beta1"))
KUEUE_CLUSTER_QUEUE = ResourceKind("kueue.x-k8s.io", "ClusterQueue", "clusterqueues", False, ("v1beta2", "v1beta1"))
KUEUE_LOCAL_QUEUE = ResourceKind("kueue.x-k8s.io", "LocalQueue", "localqueues", True, ("v1beta2", "v1beta1"))
KUEUE_COHORT = ResourceKind("kueue.x-k8s.io", "Cohort", "cohorts", False, ("v1beta2", "v1beta1"))
# Kueue's visibility API (an aggregated API served by Kueue's own pod): pending workloads with their positions.
KUEUE_VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
KUEUE_VISIBILITY_VERSION = "v1beta2"
EVENT = ResourceKind("", "Event", "events", True, ("v1",))
LEASE = ResourceKind("coordination.k8s.io", "Lease", "leases", True, ("v1",))
SECRET = ResourceKind("", "Secret", "secrets", True, ("v1",))
SUBJECT_ACCESS_REVIEW_KIND = ResourceKind("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews",
                                          False, ("v1",))
CRD = ResourceKind("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", False, ("v1",))

# Core resources are always served at v1; no discovery round-trip is needed for them.
CORE_NODE = Resource("", "v1", "Node", "nodes", False)
CORE_POD = Resource("", "v1", "Pod", "pods", True)
CORE_NAMESPACE = Resource("", "v1", "Namespace", "namespaces", False)
CORE_EVENT = Resource("", "v1", "Event", "events", True)
COORDINATION_LEASE = Resource("coordination.k8s.io", "v1", "Lease", "leases", True)
SELF_SUBJECT_ACCESS_REVIEW = Resource(
    "authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False
)
SUBJECT_ACCESS_REVIEW = Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False)

# What the sync worker needs, as (verb, ResourceKind). The cluster page checks each with a SelfSubjectAccessReview
# and docs/operations.md turns the same list into a ClusterRole.
WORKER_PERMISSIONS: tuple[tuple[str, ResourceKind], ...] = (
    ("get", CLUSTER_TRAINING_RUNTIME),
    ("list", CLUSTER_TRAINING_RUNTIME),
    ("watch", CLUSTER_TRAINING_RUNTIME),
    ("create", CLUSTER_TRAINING_RUNTIME),
    ("patch", CLUSTER_TRAINING_RUNTIME),
    ("delete", CLUSTER_TRAINING_RUNTIME),
    ("list", TRAINJOB),
    ("watch", TRAINJOB),
    ("list", NODE),
    ("watch", NODE),
    ("list", POD),
    ("watch", POD),
    ("list", WORKLOAD),
    ("list", PODGROUP),
    # TrainJob admission tracking (cluster_watch): every object around a TrainJob, and their Events.
    ("watch", WORKLOAD),
    ("watch", PODGROUP),
    ("list", EVENT),
    ("watch", EVENT),
    ("list", JOBSET),
    ("watch", JOBSET),
    ("list", KUEUE_WORKLOAD),
    ("watch", KUEUE_WORKLOAD),
    # The queues read model: Kueue's queues and flavors (the visibility API's pendingworkloads are a "get" on
    # clusterqueues/pendingworkloads of visibility.kueue.x-k8s.io, granted by Kueue's own ClusterRoles).
    ("list", KUEUE_RESOURCE_FLAVOR),
    ("watch", KUEUE_RESOURCE_FLAVOR),
    ("list", KUEUE_CLUSTER_QUEUE),
    ("watch", KUEUE_CLUSTER_QUEUE),
    ("list", KUEUE_LOCAL_QUEUE),
    ("watch", KUEUE_LOCAL_QUEUE),
    ("list", KUEUE_COHORT),
    ("watch", KUEUE_COHORT),
)

# The cluster page's probes: dry-run creates (nothing is stored) of a PodGroup (is the topology gate on?) and a
# ClusterTrainingRuntime (does the CRD keep spec.scheduling? — covered by "create" above), and the CRD's schema.
PROBE_PERMISSIONS: tuple[tuple[str, ResourceKind], ...] = (
    ("create", PODGROUP),
    ("get", CRD),
    # Visibility from the cluster's RBAC (TRAINER_PORTAL_VISIBILITY=rbac): "may this user list TrainJobs there?"
    ("create", SUBJECT_ACCESS_REVIEW_KIND),
)

# Granted by a Role in the portal's own namespace only: leader election of ``cluster_watch`` (one Lease per cluster),
# and the kubeconfigs of clusters registered "from a Secret" (never Secrets cluster-wide).
NAMESPACE_PERMISSIONS: tuple[tuple[str, ResourceKind], ...] = (
    ("get", LEASE),
    ("create", LEASE),
    ("update", LEASE),
    ("get", SECRET),
)
