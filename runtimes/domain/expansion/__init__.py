"""Expansion of a (Cluster)TrainingRuntime + numNodes into what the Kubeflow Trainer v2.4 controller would create.

Pure domain code: pod counts per ReplicatedJob (docs/reference/kubernetes-apis.md §1.5), and the scheduling
Workload with its PodGroups (KEP-3015 `spec.scheduling`, §2.3–2.5, levels of §4.5) for
`scheduling.k8s.io/v1beta1` (1.37), `v1alpha2` (1.36) and the `v1alpha3` CompositePodGroup form.

Decisions (documented in docs/placement.md):
- Names: Workload `<(truncated-if-needed)trainjob>-<h>` (≤ 63 characters, KEP-3015), h = first 8 hex chars of
  sha1("<namespace>/<trainjob>"). PodGroup `<(truncated)workload>-<(truncated)template>-<h>` (L1: `<workload>-<h>`),
  h = first 8 hex chars of sha1("<namespace>/<workload>/<template>"); when longer than 63 chars the longer part is
  cut first (the hash keeps names unique). Template names longer than 63 chars are cut the same way.
  The UID is not hashed, so a preview and the real objects agree.
- ReplicatedJobs not targeted by any `scheduling.replicatedJobs` entry get no PodGroup (the author's review
  reply: they use the default scheduling); `pod_group_for` returns None for them. No implicit level-0 group.
- L1 with sequenced startup (`dependsOn` or `startupPolicyOrder: InOrder`) falls back to one template per
  ReplicatedJob (KEP "Validation"), emitted as level-2 groups, with a warning.
- `composite=True` needs replicatedJobs entries; it emits a root CompositePodGroup (L1 fields, default gang),
  a child CompositePodGroup per entry that has `job` (L3 leaves under it), and a leaf PodGroup per entry
  without `job`. All objects then use `scheduling.k8s.io/v1alpha3` (CompositePodGroup exists only there).
- `resourceClaims` exist only on a level-3 `job` (Trainer v2.4, decision D17): each claim is copied into every
  per-Job PodGroup (and its PodGroupTemplate), and every pod of that group shares it (`Expansion.pod_claims`).
- `resourcesPerNode` is merged into the trainer ancestor's container named `node` as upstream does (#3602: limits and
  requests merge per resource name, resourcesPerNode wins, the container's other resources are kept); for MPI with
  `runLauncherAsNode` it also applies to ReplicatedJob `node`. A trainer without a `node` container keeps its
  resources (upstream ignores resourcesPerNode then) and the expansion warns.

Modules: `model` (the value types and names), `naming` (deterministic object names), `manifests` (rendering per
scheduling API version) and `plan` (reading the runtime and building the plan, `expand`). This package face
exports the public names of all four.
"""

from runtimes.domain.expansion.manifests import podgroup_manifests, workload_manifest
from runtimes.domain.expansion.model import (
    ANCESTOR_LABEL,
    API_VERSIONS,
    BASIC,
    COMPOSITE_POD_GROUP,
    GANG,
    MAX_TEMPLATES,
    MPI_LAUNCHER,
    MPI_NODE,
    POD_GROUP,
    TRAINER,
    TRAINJOB_API_GROUP,
    TRAINJOB_API_VERSION,
    V1ALPHA2,
    V1ALPHA3,
    V1BETA1,
    ExpansionError,
    PodGroupPlan,
    PodSet,
    ResourceClaim,
)
from runtimes.domain.expansion.naming import (
    HASH_CHARS,
    MAX_NAME,
    fit_name,
    pod_group_name_for,
    short_hash,
    template_name_for,
    workload_name_for,
)
from runtimes.domain.expansion.plan import Expansion, expand

__all__ = [
    "ANCESTOR_LABEL",
    "API_VERSIONS",
    "BASIC",
    "COMPOSITE_POD_GROUP",
    "GANG",
    "HASH_CHARS",
    "MAX_NAME",
    "MAX_TEMPLATES",
    "MPI_LAUNCHER",
    "MPI_NODE",
    "POD_GROUP",
    "TRAINER",
    "TRAINJOB_API_GROUP",
    "TRAINJOB_API_VERSION",
    "V1ALPHA2",
    "V1ALPHA3",
    "V1BETA1",
    "Expansion",
    "ExpansionError",
    "PodGroupPlan",
    "PodSet",
    "ResourceClaim",
    "expand",
    "fit_name",
    "pod_group_name_for",
    "podgroup_manifests",
    "short_hash",
    "template_name_for",
    "workload_manifest",
    "workload_name_for",
]
