"""What a person may see in a cluster, as the cluster's own RBAC says (``TRAINER_PORTAL_VISIBILITY=rbac``).

For each (cluster, namespace) the portal tracks TrainJobs in, one SubjectAccessReview asks the cluster "may this
identity list trainjobs.trainer.kubeflow.org in namespace N?". The identity is the one the cluster's OIDC
authenticator would give the user: the username (or e-mail) and the groups the identity provider gave them, each
with the prefix the API server adds (``--oidc-username-prefix``, ``--oidc-groups-prefix``). Answers are cached
briefly per identity (``TRAINER_PORTAL_RBAC_CACHE_SECONDS``); the reviews of one request share a time budget, and a
cluster that cannot answer adds nothing (the portal's own grants still apply) — it never holds a page.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from trainer_portal.kube.errors import KubeError
from trainer_portal.kube.resources import TRAINJOB

from . import connections
from .models import Cluster

logger = logging.getLogger(__name__)

MODES = ("grants", "rbac", "grants+rbac")
MAX_REVIEWS = 500  # (cluster, namespace) pairs asked for one identity


@dataclass(frozen=True)
class Identity:
    """A user as the cluster's authenticator names them."""

    user: str
    groups: tuple[str, ...]

    def key(self) -> str:
        raw = self.user + "\x00" + "\x00".join(sorted(self.groups))
        return hashlib.blake2b(raw.encode("utf-8", "replace"), digest_size=12).hexdigest()


def visibility_mode() -> str:
    """Return ``grants`` (the portal's grants only), ``rbac`` (the cluster's RBAC only) or ``grants+rbac`` (both)."""
    mode = getattr(settings, "TRAINER_PORTAL_VISIBILITY", "grants")
    return mode if mode in MODES else "grants"


def identity_of(user, provider_groups: Iterable[str]) -> Identity:
    """Return the cluster identity of ``user``: ``RBAC_USERNAME_FROM`` (``username`` or ``email``) and the groups the
    identity provider gave (``provider_groups``), with the configured prefixes."""
    source = getattr(settings, "TRAINER_PORTAL_RBAC_USERNAME_FROM", "username")
    name = (user.email if source == "email" else user.get_username()) or user.get_username()
    user_prefix = getattr(settings, "TRAINER_PORTAL_RBAC_USER_PREFIX", "")
    group_prefix = getattr(settings, "TRAINER_PORTAL_RBAC_GROUP_PREFIX", "")
    return Identity(user_prefix + name, tuple(sorted(group_prefix + group for group in provider_groups)))


def rbac_visible(identity: Identity, pairs: Iterable[tuple[int, str]]) -> frozenset[tuple[int, str]]:
    """Return the (cluster id, namespace) pairs of ``pairs`` in which ``identity`` may list TrainJobs.

    Cached per identity for ``TRAINER_PORTAL_RBAC_CACHE_SECONDS``; at most ``MAX_REVIEWS`` reviews, within
    ``TRAINER_PORTAL_RBAC_BUDGET_SECONDS`` in all. A cluster that fails a review is skipped for this answer (logged,
    not cached), so its namespaces stay hidden unless a grant shows them.
    """
    wanted = sorted(set(pairs))[:MAX_REVIEWS]
    cache_key = f"rbac-visible:{identity.key()}"
    known: dict[str, bool] = cache.get(cache_key) or {}
    budget = float(getattr(settings, "TRAINER_PORTAL_RBAC_BUDGET_SECONDS", 3.0))
    deadline = time.monotonic() + budget
    clusters = {cluster.pk: cluster for cluster in Cluster.objects.filter(pk__in={c for c, _ in wanted},
                                                                          enabled=True)}
    failed: set[int] = set()
    fresh = False
    for cluster_id, namespace in wanted:
        entry = f"{cluster_id}/{namespace}"
        if entry in known or cluster_id in failed or cluster_id not in clusters:
            continue
        if time.monotonic() > deadline:
            logger.warning("RBAC visibility: time budget spent; %s and later unchecked", entry)
            break
        try:
            review = connections.action_gateway(clusters[cluster_id]).subject_access_review(
                user=identity.user, groups=list(identity.groups), verb="list", kind=TRAINJOB, namespace=namespace)
        except KubeError as exc:
            logger.warning("RBAC visibility: cluster %s cannot answer (%s)", clusters[cluster_id].name, exc.message)
            failed.add(cluster_id)
            continue
        known[entry] = review.allowed
        fresh = True
    if fresh:
        cache.set(cache_key, known, float(getattr(settings, "TRAINER_PORTAL_RBAC_CACHE_SECONDS", 60)))
    return frozenset((cluster_id, namespace) for cluster_id, namespace in wanted
                     if known.get(f"{cluster_id}/{namespace}"))
