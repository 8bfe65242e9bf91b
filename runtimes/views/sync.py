"""HTML pages of cluster sync: the per-policy sync panel, impact, drift, delete-from-cluster, bulk sync and adopt.

Thin views: every read and write is one call of `runtimes.services.sync` (which enqueues its own Celery tasks on
commit) or `runtimes.services.sync_batches`. Every page needs a portal role; every action needs platform-admin.
Pages work without JavaScript; with htmx the sync panel and the bulk progress poll.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View

from runtimes import selectors
from runtimes.domain.constants import MAX_NUM_NODES
from runtimes.errors import PolicyError, SyncBatchNotFound
from runtimes.services import clusters as cluster_services
from runtimes.services import reapply, sync, sync_batches
from runtimes.views.policies import policy_or_404
from trainer_portal.kube.errors import KubeError
from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import POLICIES_SYNC, POLICIES_VIEW

TRUE_VALUES = ("1", "true", "on")


class BulkSyncView(CapabilityRequiredMixin, View):
    """GET: confirm which policies "Apply all" applies; POST: queue them (the ``names`` posted, else every policy).

    The confirmation lists every policy with what applying it changes, calls out drafts and deadlock warnings,
    and posts the ticked names with ``confirmed=1`` (then an empty choice is refused rather than read as "all").
    """

    capability = POLICIES_SYNC

    def get(self, request):
        plan = selectors.policies_bulk_apply_plan()
        context = {
            "plan": plan,
            "drafts": sum(1 for item in plan if item["draft"]),
            "deadlocks": sum(1 for item in plan if item["deadlocks"]),
        }
        return render(request, "cluster/bulk_confirm.html", context)

    def post(self, request):
        names = request.POST.getlist("names") or None
        if names is None and request.POST.get("confirmed") in TRUE_VALUES:
            messages.error(request, "No policy was ticked: choose at least one policy to apply.")
            return redirect("runtimes:bulk-sync")
        confirm = request.POST.get("confirm_startup_deadlock") in TRUE_VALUES
        try:
            batch = sync.policies_sync_request(names=names, actor=request.user, confirm_startup_deadlock=confirm)
        except PolicyError as exc:
            messages.error(request, exc.message)
            return redirect("cluster:page")
        return redirect("runtimes:sync-batch", batch_id=batch.id.hex)


class SyncBatchView(CapabilityRequiredMixin, View):
    """Bulk sync progress (n of m, failures listed); the htmx partial polls itself until finished."""

    capability = POLICIES_VIEW

    def get(self, request, batch_id: str):
        try:
            progress = sync_batches.sync_batch_progress(batch_id=batch_id)
        except SyncBatchNotFound as exc:
            raise Http404(exc.message)
        template = "runtimes/_sync_progress.html" if request.htmx else "cluster/batch.html"
        return render(request, template, {"progress": progress})


class AdoptView(CapabilityRequiredMixin, View):
    """POST: adopt every ClusterTrainingRuntime on the posted ``cluster`` (the default one when none) as a policy
    (idempotent); an unknown or disabled cluster is a 404."""

    capability = POLICIES_SYNC

    def post(self, request):
        cluster = cluster_or_404(request)
        back = reverse("cluster:page") + (f"?cluster={cluster.name}" if cluster is not None else "")
        try:
            result = sync.policies_adopt(actor=request.user, cluster=cluster)
        except KubeError as exc:
            messages.error(request, f"Adoption failed: {exc.message}")
            return redirect(back)
        return render(request, "cluster/adopt_result.html", {"result": result, "cluster": cluster, "back": back})


class SyncPanelView(CapabilityRequiredMixin, View):
    """The sync panel of one policy (partial; included in the policy page and polled while queued/syncing)."""

    capability = POLICIES_VIEW

    def get(self, request, name: str):
        context = {"policy": policy_or_404(name), "on_impact_page": request.GET.get("on") == "impact"}
        return render(request, "runtimes/_sync_panel.html", context)


class SyncImpactView(CapabilityRequiredMixin, View):
    """GET: the impact of applying the current revision (``numNodes`` optional; a bad value is reported)."""

    capability = POLICIES_VIEW

    def get(self, request, name: str):
        policy = policy_or_404(name)
        error = ""
        try:
            num_nodes = sync.impact_num_nodes(request.GET.get("numNodes"))
        except PolicyError as exc:
            num_nodes, error = None, exc.message
        impact = sync.policy_sync_impact(policy=policy, num_nodes=num_nodes)
        context = {
            "policy": policy,
            "impact": impact,
            "error": error,
            "max_num_nodes": MAX_NUM_NODES,
            "startup_deadlocks": sync.startup_deadlocks(policy),
        }
        return render(request, "cluster/impact.html", context)


def batch_id_in(request) -> str:
    """Return the sync batch whose progress the cluster page shows: ``?batch=`` (``?job=`` in the first release),
    or "" when the value cannot name a batch in a URL (a "/" or a control character would break the page)."""
    value = request.GET.get("batch") or request.GET.get("job", "")
    return value if value.isprintable() and "/" not in value else ""


def safe_next(request) -> str:
    """Return the posted ``next`` when it is a path on this portal (checked as the login view does), else "".

    Anything else (another host, ``//host``, a scheme such as ``javascript:``, a view name, control characters) would
    be an open redirect or an unresolvable one.
    """
    target = request.POST.get("next") or ""
    if not target.startswith("/") or not target.isprintable():
        return ""
    allowed = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if allowed else ""


class SyncRequestView(CapabilityRequiredMixin, View):
    """POST: queue the policy's current revision for syncing (``force=1`` takes over conflicting fields)."""

    capability = POLICIES_SYNC

    def post(self, request, name: str):
        policy = policy_or_404(name)
        force = request.POST.get("force") in TRUE_VALUES
        confirm = request.POST.get("confirm_startup_deadlock") in TRUE_VALUES
        try:
            revision = sync.policy_sync_request(policy=policy, force=force, confirm_startup_deadlock=confirm)
        except PolicyError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Revision {revision} of {policy.name} is queued for the cluster.")
        if request.htmx:
            policy.refresh_from_db()
            context = {"policy": policy, "on_impact_page": request.POST.get("on") == "impact"}
            return render(request, "runtimes/_sync_panel.html", context)
        return redirect(safe_next(request) or reverse("runtimes:drift", args=[policy.name]))


def cluster_or_404(request):
    """Return the enabled cluster named by ``?cluster=`` (or the posted ``cluster``), None when none is named;
    raise Http404 for a name no enabled cluster has."""
    name = (request.POST.get("cluster") if request.method == "POST" else None) or request.GET.get("cluster")
    if not name:
        return None
    try:
        return cluster_services.clusters_named([name])[0]
    except PolicyError:
        raise Http404("No enabled cluster with this name.") from None


class DriftView(CapabilityRequiredMixin, View):
    """GET: side-by-side ours vs live with the changes; POST (admin): ``action=check|reapply|adopt``."""

    capability = POLICIES_VIEW
    write_capability = POLICIES_SYNC

    def get(self, request, name: str):
        # Shows what the last apply or check recorded; reading the live object is the only cluster call.
        policy = policy_or_404(name)
        cluster = cluster_or_404(request)
        data = sync.policy_drift_view_data(policy=policy, cluster=cluster)
        context = {"policy": policy, **data, **_cluster_param(policy, cluster, data)}
        return render(request, "cluster/drift.html", context)

    def post(self, request, name: str):
        policy = policy_or_404(name)
        cluster = cluster_or_404(request)
        action = request.POST.get("action", "")
        try:
            if action == "check":
                return self._check(request, policy, cluster)
            names = [cluster.name] if cluster else None
            if sync.policy_drift_resolve(policy=policy, action=action, actor=request.user, clusters=names) is not None:
                messages.success(request, "Re-applying the portal's revision with force.")
            else:
                messages.success(request, "The live object was adopted as a new revision.")
        except (PolicyError, KubeError) as exc:
            messages.error(request, exc.message)
        return redirect(_drift_url(policy, cluster))

    def _check(self, request, policy, cluster):
        """Run a drift check (on the cluster named, else on every target cluster) and show its result for the
        named cluster, else the first drifted one: the change list and the diff come from the same check."""
        found = sync.policy_drift_check_clusters(policy=policy, clusters=[cluster.name] if cluster else None)
        checked = [(c, result) for c, result in found if result is not None]
        if not checked:
            messages.info(request, "Only applied policies can be checked; apply it first.")
            return redirect(_drift_url(policy, cluster))
        shown, result = next(((c, r) for c, r in checked if r.drifted), checked[0])
        policy = policy_or_404(policy.name)
        data = sync.policy_drift_view_data(policy=policy, cluster=shown)
        context = {"policy": policy, **data, "result": result, **_cluster_param(policy, cluster, data)}
        return render(request, "cluster/drift.html", context)


def _cluster_param(policy, named, data) -> dict:
    """Return ``{cluster_param}``: the cluster the page's links and forms name — the one asked for, else the one
    shown when the policy has several target clusters (None keeps single-cluster URLs as they were)."""
    if named is not None:
        return {"cluster_param": named}
    return {"cluster_param": data["cluster"] if len(policy.cluster_rows) > 1 else None}


def _drift_url(policy, cluster) -> str:
    url = reverse("runtimes:drift", args=[policy.name])
    return f"{url}?cluster={cluster.name}" if cluster else url


class DriftReapplyView(CapabilityRequiredMixin, View):
    """GET: confirm "Re-apply ours (force)": the diff it imposes and the field managers it overrides (dry run).

    The confirmation posts ``action=reapply`` to the drift page, which does it.
    """

    capability = POLICIES_SYNC

    def get(self, request, name: str):
        policy = policy_or_404(name)
        cluster = cluster_or_404(request)
        preview = reapply.policy_force_reapply_preview(policy=policy, cluster=cluster)
        context = {"policy": policy, "preview": preview, "cluster": cluster}
        return render(request, "cluster/reapply_confirm.html", context)


class TargetClustersView(CapabilityRequiredMixin, View):
    """GET: the clusters a policy syncs to, as checkboxes (none ticked: every enabled cluster); POST: choose them.

    The form carries the choice it was drawn from (``expected``), so a choice changed meanwhile by someone else is
    reported (409) instead of silently undone. Nothing is applied here: applying is the sync panel's action.
    """

    capability = POLICIES_SYNC

    def get(self, request, name: str):
        return self._render(request, policy_or_404(name))

    def post(self, request, name: str):
        policy = policy_or_404(name)
        names = request.POST.getlist("clusters")
        if request.POST.get("scope") == "all":
            names = []
        elif not names:
            return self._render(request, policy, error="Tick at least one cluster, or choose every enabled cluster.",
                                chosen=[], status=400)
        expected = [value for value in request.POST.get("expected", "").split(",") if value]
        try:
            cluster_services.policy_targets_set(policy=policy, names=names, expected=expected)
        except PolicyError as exc:
            return self._render(request, policy, error=exc.message, chosen=names, status=exc.status)
        chosen = cluster_services.target_names(policy)
        messages.success(request, f"{policy.name} now syncs to " + (", ".join(chosen) if chosen else
                                                                   "every enabled cluster") + ". Apply it to sync.")
        return redirect("runtimes:detail", name=policy.name)

    def _render(self, request, policy, *, error: str = "", chosen: list[str] | None = None, status: int = 200):
        stored = cluster_services.target_names(policy)
        context = {
            "policy": policy,
            "clusters": cluster_services.enabled_clusters(),
            "chosen": set(stored if chosen is None else chosen),
            "expected": ",".join(stored),
            "error": error,
        }
        return render(request, "cluster/targets.html", context, status=status)


class ClusterDeleteView(CapabilityRequiredMixin, View):
    """GET: confirm deleting the policy's runtime from the cluster (warns about TrainJobs); POST: delete it."""

    capability = POLICIES_SYNC

    def get(self, request, name: str):
        policy = policy_or_404(name)
        trainjobs, error = [], ""
        try:
            trainjobs = sync.runtime_referencing_trainjobs(name=policy.name)
        except KubeError as exc:
            error = exc.message
        return render(request, "cluster/delete.html", {"policy": policy, "trainjobs": trainjobs, "error": error})

    def post(self, request, name: str):
        policy = policy_or_404(name)
        try:
            deleted = sync.policy_cluster_delete(policy=policy)
        except KubeError as exc:
            messages.error(request, "The cluster refused the removal: " + exc.message)
            return redirect("runtimes:cluster-delete", name=policy.name)
        messages.success(
            request, f"Deleted {policy.name} from the cluster." if deleted else f"{policy.name} was not on the cluster."
        )
        return redirect("cluster:page")
