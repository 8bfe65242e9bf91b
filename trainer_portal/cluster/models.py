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
