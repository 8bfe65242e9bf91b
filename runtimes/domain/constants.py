"""Names and limits of the Kubeflow Trainer ClusterTrainingRuntime API that the portal relies on.

Sources: the upstream Trainer CRDs (vendored in tests/fixtures/reference/crds/), their CEL rules and webhook, and the
v2.4 `spec.scheduling` API as recorded in docs/decisions.md.
"""

from __future__ import annotations

API_GROUP = "trainer.kubeflow.org"
API_VERSION = f"{API_GROUP}/v1alpha1"
KIND = "ClusterTrainingRuntime"

# The Kubernetes scheduling API (KEP-3015 Workload / PodGroup) per server version: 1.37 serves v1beta1 and the
# CompositePodGroup in v1alpha3; 1.36 serves v1alpha2 (different field names).
SCHEDULING_GROUP = "scheduling.k8s.io"
SCHEDULING_V1BETA1 = f"{SCHEDULING_GROUP}/v1beta1"
SCHEDULING_V1ALPHA2 = f"{SCHEDULING_GROUP}/v1alpha2"
SCHEDULING_V1ALPHA3 = f"{SCHEDULING_GROUP}/v1alpha3"

FRAMEWORK_LABEL = f"{API_GROUP}/framework"
ANCESTOR_LABEL = f"{API_GROUP}/trainjob-ancestor-step"
# Set by the Trainer controller on every object it creates for a TrainJob.
TRAINJOB_NAME_LABEL = f"{API_GROUP}/trainjob-name"

ANCESTOR_TRAINER = "trainer"
ANCESTOR_DATASET_INITIALIZER = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER = "model-initializer"
ANCESTOR_STEPS: tuple[str, ...] = (ANCESTOR_TRAINER, ANCESTOR_DATASET_INITIALIZER, ANCESTOR_MODEL_INITIALIZER)
# The validating webhook requires a container with this name in an rJob labelled with the ancestor step.
ANCESTOR_CONTAINER: dict[str, str] = {
    ANCESTOR_TRAINER: "node",
    ANCESTOR_DATASET_INITIALIZER: "dataset-initializer",
    ANCESTOR_MODEL_INITIALIZER: "model-initializer",
}

ML_POLICY_KINDS: tuple[str, ...] = ("torch", "mpi", "jax", "xgboost", "flux")
MPI_IMPLEMENTATIONS: tuple[str, ...] = ("OpenMPI", "")
MPI_LAUNCHER_JOB = "launcher"
MPI_NODE_JOB = "node"

# Well-known / conventional topology keys offered by the form (a network-block key is configured per site).
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
TOPOLOGY_RACK = "topology.kubernetes.io/rack"
DEFAULT_TOPOLOGY_KEYS: tuple[str, ...] = (TOPOLOGY_ZONE, TOPOLOGY_RACK)

DEPENDS_ON_STATUSES: tuple[str, ...] = ("Ready", "Complete")
SUCCESS_POLICY_OPERATORS: tuple[str, ...] = ("All", "Any")
STARTUP_POLICY_ORDERS: tuple[str, ...] = ("AnyOrder", "InOrder")
VOLCANO_MODES: tuple[str, ...] = ("hard", "soft")

# Largest TrainJob (trainer.numNodes) the portal expands, previews or assesses the impact for.
MAX_NUM_NODES = 100_000
# trainer.numNodes the sync impact expands for when neither the request nor the manifest sets it.
IMPACT_DEFAULT_NUM_NODES = 4

# CRD / KEP limits.
MAX_ENV_INJECTION_TARGETS = 16
MAX_ENV_INJECTION_CONTAINERS = 8
MAX_DEPENDS_ON = 5
MAX_VOLUME_CLAIM_POLICIES = 50
MAX_SSH_AUTH_MOUNT_PATH = 4096
MAX_SCHEDULING_ENTRIES = 8
MAX_TARGETS_PER_ENTRY = 8
MAX_POD_GROUP_TEMPLATES = 8
MAX_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_NAME_LENGTH = 253
MAX_LABEL_LENGTH = 63
# Level-3 targets may have at most this many replicas in Trainer v2.4 (until Kubernetes 1.38).
V24_MAX_LEVEL3_REPLICAS = 1
# A level-3 (per-Job) gang with at least this many pods is flagged: every pod must fit one topology domain (a rack
# of 8-GPU servers typically holds 4–8 of them). Decision D7 in docs/decisions.md.
LARGE_LEVEL3_GANG = 8
# Trainer v2.4.0 limits ReplicatedJob names in runtimes to 20 characters (kubeflow/trainer#4394): the controller
# builds PodGroupTemplate and PodGroup names from them within the 63-character limit.
MAX_REPLICATED_JOB_NAME_LENGTH = 20
TRAINER_RJOB_NAME_CHANGE = "kubeflow/trainer#4394"

# Kubernetes feature gates the v2.4 scheduling API depends on.
GATE_TOPOLOGY = "TopologyAwareWorkloadScheduling"
GATE_DRA_CLAIMS = "DRAWorkloadResourceClaims"
GATE_TRAINER_SCHEDULING = "TrainJobWorkloadAwareScheduling"
GATE_TRAINER_COMPOSITE = "TrainJobCompositePodGroup"
# Composite (gang-of-gangs) PodGroups are planned for the KEP's "Alpha 2", after Trainer v2.4.0.
COMPOSITE_RELEASE_LABEL = "Alpha 2, not in Trainer v2.4.0"

# How the installed ClusterTrainingRuntime CRD embeds the Kubernetes scheduling types (`disruptionMode`):
# the v1alpha2 (1.36) string enum, or the 1.37 (v1beta1 / v1alpha3) union {single: {}} | {all: {}}.
DISRUPTION_MODE_UNION = "union"
DISRUPTION_MODE_STRING = "string"
DISRUPTION_MODE_UNKNOWN = ""
