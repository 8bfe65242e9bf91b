"""Clusters are data: every cluster the portal manages is one :class:`Cluster` row.

A row says how to reach the cluster (the process's own settings, a kubeconfig stored encrypted, a kubeconfig held in
a Kubernetes Secret, or the pod's in-cluster service account) and carries the per-cluster knobs (the node label of a
network block). Everything the portal knows about a cluster — TrainJobs, sync state, snapshots, facts, grants —
points at its row. Exactly one row is the default: URLs and API paths that name no cluster mean that one.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

# A DNS-1123 label: the name appears in URLs, Lease names and metric labels.
CLUSTER_NAME_RE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class ConnectionKind(models.TextChoices):
    SETTINGS = "settings", "From the portal's settings (TRAINER_PORTAL_KUBECONFIG / _IN_CLUSTER)"
    KUBECONFIG = "kubeconfig", "Kubeconfig stored encrypted in the portal"
    SECRET = "secret", "Kubeconfig in a Kubernetes Secret"
    IN_CLUSTER = "in_cluster", "In-cluster service account"


class Cluster(models.Model):
    """One managed Kubernetes cluster and how to reach it."""

    name = models.CharField(
        max_length=63, unique=True, validators=[RegexValidator(CLUSTER_NAME_RE)],
        help_text="DNS-1123 label; immutable (it names Leases, metric labels and URLs).",
    )
    display_name = models.CharField(max_length=100, blank=True)
    connection = models.CharField(max_length=16, choices=ConnectionKind.choices, default=ConnectionKind.SETTINGS)
    # The kubeconfig's text, encrypted (never stored or shown in clear); empty unless connection = kubeconfig.
    kubeconfig_encrypted = models.TextField(blank=True)
    kubeconfig_context = models.CharField(max_length=253, blank=True)
    # "namespace/name" or "namespace/name/key" of a Secret holding a kubeconfig; empty unless connection = secret.
    secret_ref = models.CharField(max_length=400, blank=True)
    # Node label of a network block on this cluster; empty = the portal's TRAINER_PORTAL_BLOCK_KEY.
    block_label_key = models.CharField(max_length=317, blank=True)
    is_default = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True, help_text="A disabled cluster is neither watched nor synced to.")
    version = models.PositiveIntegerField(default=1, help_text="Optimistic-concurrency counter (409 on mismatch).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-is_default", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="cluster_one_default",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name or self.name

    @property
    def label(self) -> str:
        """Return the display name, else the name (what pages show)."""
        return self.display_name or self.name


def default_cluster_id() -> int | None:
    """Return the primary key of the default cluster (None when there is none yet).

    The ``default`` of every row that belongs to a cluster (TrainJob, transitions, tracker status): code written
    before clusters were data — and tests — that create a row without naming its cluster put it on the default.
    Writers that serve one cluster pass it explicitly.
    """
    return Cluster.objects.filter(is_default=True).values_list("pk", flat=True).first()


class TopologySnapshot(models.Model):
    """The live topology snapshot of one cluster, as every web replica reads it (see ``cluster.snapshots``).

    ``blob`` is the snapshot in the portal's own versioned binary format (numpy arrays and JSON, never a pickle);
    ``version`` grows by one on every save that changed it, so a reader's per-process cache checks one integer.
    ``taken_at`` is when the writer last knew the snapshot current: a heartbeat moves it without a new version.
    """

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="topology_snapshot")
    version = models.PositiveBigIntegerField(default=0)
    taken_at = models.DateTimeField(help_text="When the writer last knew the snapshot current.")
    saved_at = models.DateTimeField(auto_now=True)
    nodes = models.PositiveIntegerField(default=0)
    pods = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=16, blank=True, help_text='"watch" or "list".')
    server = models.CharField(max_length=400, blank=True)
    format = models.PositiveSmallIntegerField(help_text="Version of the binary format of blob.")
    # Last: SQLite stores a row's columns in order, so reading the version never walks the blob's overflow pages.
    blob = models.BinaryField()

    def __str__(self) -> str:
        return f"topology of {self.cluster_id} v{self.version}"


class ClusterHealth(models.Model):
    """What the last background check of one cluster found: connection, versions, APIs, CRD schema, gates, RBAC
    (``status``, the plain data of ``status.probe_cluster``) and the scheduling facts validation follows
    (``facts``). Written only by the worker's check task; read by pages, the API and validation."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="health")
    reachable = models.BooleanField(default=False)
    status = models.JSONField(default=dict, blank=True)
    facts = models.JSONField(default=dict, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True, help_text="When the last check finished.")
    check_requested_at = models.DateTimeField(null=True, blank=True, help_text='Last "Check now".')

    def __str__(self) -> str:
        return f"health of {self.cluster_id}"


def cluster_filter(cluster: Cluster | str | None, *, prefix: str = "") -> dict[str, object]:
    """Return the queryset filter selecting ``cluster``: the default cluster for None, a row, or a name."""
    if cluster is None:
        return {f"{prefix}is_default": True}
    if isinstance(cluster, Cluster):
        return {f"{prefix}pk": cluster.pk}
    return {f"{prefix}name": str(cluster)}


def resolve_cluster(cluster: Cluster | str | None) -> Cluster:
    """Return the Cluster row for ``cluster`` (itself, by name, or the default for None).

    Raises Cluster.DoesNotExist when no such cluster (or no default) exists.
    """
    if isinstance(cluster, Cluster):
        return cluster
    return Cluster.objects.get(**cluster_filter(cluster))


class ClusterEvent(models.Model):
    """One change in a cluster's health as the background check saw it (append-only): it became unreachable or
    reachable again, its watcher went stale or fresh again. Notifications read it as an outbox source (the id is
    the sequence); the latest event of a pair is the state the next check compares with."""

    class Kind(models.TextChoices):
        UNREACHABLE = "cluster_unreachable", "Cluster unreachable"
        REACHABLE = "cluster_reachable", "Cluster reachable again"
        WATCHER_STALE = "watcher_stale", "Watcher stale"
        WATCHER_FRESH = "watcher_fresh", "Watcher fresh again"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=24, choices=Kind)
    message = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)
        indexes = [models.Index(fields=["cluster", "kind", "id"], name="cluster_event_kind")]

    def __str__(self) -> str:
        return f"{self.kind} {self.cluster_id}"
