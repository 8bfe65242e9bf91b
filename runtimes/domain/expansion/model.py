"""The plan's value types: pod sets, PodGroup plans, the expansion error and the names of policies and kinds."""

from __future__ import annotations

from dataclasses import dataclass

from runtimes.domain import constants as c

# Names the plan uses, bound to the one definition in `runtimes.domain.constants`.
ANCESTOR_LABEL = c.ANCESTOR_LABEL
TRAINER = c.ANCESTOR_TRAINER
MPI_NODE = c.MPI_NODE_JOB
MPI_LAUNCHER = c.MPI_LAUNCHER_JOB
TRAINJOB_API_VERSION = c.API_VERSION
TRAINJOB_API_GROUP = c.API_GROUP
V1BETA1 = c.SCHEDULING_V1BETA1
V1ALPHA2 = c.SCHEDULING_V1ALPHA2
V1ALPHA3 = c.SCHEDULING_V1ALPHA3
API_VERSIONS = (V1BETA1, V1ALPHA2, V1ALPHA3)
MAX_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates upstream; the KEP rejects rather than splits
GANG = "gang"
BASIC = "basic"
POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"


class ExpansionError(ValueError):
    """The runtime (or the TrainJob inputs) cannot be expanded. `.path` names the field, `.message` the fix."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True)
class PodSet:
    """The pods of one ReplicatedJob: `replicas` Jobs of `pods_per_replica` pods each."""

    replicated_job: str
    replicas: int
    pods_per_replica: int
    ancestor: str | None
    resources_per_pod: dict[str, str]
    depends_on: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Return the number of pods of this ReplicatedJob."""
        return self.replicas * self.pods_per_replica


@dataclass(frozen=True)
class ResourceClaim:
    """A DRA claim of a PodGroup: `name` plus exactly one source (an existing claim, or a template)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None

    def to_dict(self) -> dict:
        """Return the claim as it appears in `resourceClaims` of a PodGroup(Template)."""
        if self.resource_claim_name is not None:
            return {"name": self.name, "resourceClaimName": self.resource_claim_name}
        return {"name": self.name, "resourceClaimTemplateName": self.resource_claim_template_name}


@dataclass(frozen=True)
class PodGroupPlan:
    """One PodGroup (or, with kind CompositePodGroup, one CompositePodGroup) the controller would create.

    level: 1 TrainJob, 2 ReplicatedJob group, 3 one Job (replica). min_count is None for basic groups and for
    CompositePodGroups (those carry min_group_count instead).
    """

    template_name: str
    name: str
    level: int
    policy: str
    min_count: int | None
    topology_key: str | None
    replicated_jobs: tuple[str, ...]
    job_index: int | None
    pod_count: int
    disruption_mode: str | None
    parent: str | None
    kind: str = POD_GROUP
    min_group_count: int | None = None
    resource_claims: tuple[ResourceClaim, ...] = ()
