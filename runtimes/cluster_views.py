"""HTML pages for the cluster: connection status, sync/drift/adopt actions, bulk apply progress.

Thin views: reads go through ``runtimes.sync``, writes through the
sync services, Celery tasks are enqueued with ``transaction.on_commit``. Every page needs a portal role; every
action needs platform-admin. Pages work without JavaScript; with htmx the sync panel and the bulk progress poll.
"""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from trainer_portal import kube
from trainer_portal.permissions import PlatformAdminRequiredMixin, ViewerRequiredMixin

from . import sync
from .choices import SyncState
from .errors import PolicyError
from .models import RuntimePolicy


def _policy_or_404(name: str) -> RuntimePolicy:
    policy = RuntimePolicy.objects.filter(name=name).first()
    if policy is None:
        raise Http404(f"No policy named '{name}'.")
    return policy


def _enqueue_sync(policy: RuntimePolicy, revision: int, *, force: bool = False) -> None:
    sync.enqueue_sync_on_commit(policy_id=policy.pk, revision=revision, force=force)


class BulkSyncView(PlatformAdminRequiredMixin, View):
    """POST: queue every policy (or the ``names`` posted) and show the bulk job's progress page."""

    def post(self, request):
        names = request.POST.getlist("names") or None
        confirm = request.POST.get("confirm_startup_deadlock") in ("1", "true", "on")
        try:
            with transaction.atomic():
                items = sync.runtimes_sync_request(names=names, confirm_startup_deadlock=confirm)
                job = sync.sync_job_create(items=items, actor=request.user)
                sync.enqueue_bulk_on_commit(items=items)
        except PolicyError as exc:
            messages.error(request, exc.message)
            return redirect("cluster:page")
        return redirect("cluster:job", job_id=job["id"])


class SyncJobView(ViewerRequiredMixin, View):
    """Bulk apply progress (n of m, failures listed); the htmx partial polls itself until finished."""

    def get(self, request, job_id: str):
        progress = sync.sync_job_progress(job_id=job_id)
        if progress is None:
            raise Http404("No such sync job (jobs are kept for a day).")
        template = "cluster/job.html"
        if request.htmx:
            template = "runtimes/_sync_progress.html"
        return render(request, template, {"progress": progress})


class AdoptView(PlatformAdminRequiredMixin, View):
    """POST: adopt every ClusterTrainingRuntime on the cluster as a policy (idempotent)."""

    def post(self, request):
        try:
            result = sync.runtimes_adopt(actor=request.user)
        except kube.KubeError as exc:
            messages.error(request, f"Adoption failed: {exc.message}")
            return redirect("cluster:page")
        return render(request, "cluster/adopt_result.html", {"result": result})


class SyncPanelView(ViewerRequiredMixin, View):
    """The sync panel of one policy (partial; included in the policy page and polled while queued/syncing)."""

    def get(self, request, name: str):
        policy = _policy_or_404(name)
        return render(request, "runtimes/_sync_panel.html", {"policy": policy})


class SyncImpactView(ViewerRequiredMixin, View):
    """GET: the impact of applying the current revision; POST (admin): apply it."""

    def get(self, request, name: str):
        policy = _policy_or_404(name)
        num_nodes = request.GET.get("numNodes")
        try:
            num_nodes = int(num_nodes) if num_nodes else None
        except ValueError:
            num_nodes = None
        impact = sync.runtime_sync_impact(policy=policy, num_nodes=num_nodes)
        context = {"policy": policy, "impact": impact, "startup_deadlocks": sync.startup_deadlocks(policy)}
        return render(request, "cluster/impact.html", context)


class SyncRequestView(PlatformAdminRequiredMixin, View):
    """POST: queue the policy's current revision for syncing (``force=1`` takes over conflicting fields)."""

    def post(self, request, name: str):
        policy = _policy_or_404(name)
        force = request.POST.get("force") in ("1", "true", "on")
        confirm = request.POST.get("confirm_startup_deadlock") in ("1", "true", "on")
        try:
            with transaction.atomic():
                revision = sync.runtime_sync_request(policy=policy, confirm_startup_deadlock=confirm)
                _enqueue_sync(policy, revision, force=force)
        except PolicyError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Revision {revision} of {policy.name} is queued for the cluster.")
        if request.htmx:
            policy.refresh_from_db()
            return render(request, "runtimes/_sync_panel.html", {"policy": policy})
        return redirect(request.POST.get("next") or reverse("cluster:drift", args=[policy.name]))


class DriftView(ViewerRequiredMixin, View):
    """GET: side-by-side ours vs live with the changes; POST (admin): ``action=check|reapply|adopt``."""

    def get(self, request, name: str):
        policy = _policy_or_404(name)
        context = {"policy": policy, "error": "", "ours": "", "live": "", "result": None}
        try:
            context["result"] = sync.runtime_drift_check(policy_id=policy.pk)
            gateway = kube.get_gateway()
            resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
            live = gateway.get(resource, name=policy.name)
            context["live"] = sync.live_yaml(live)
            if policy.applied_revision:
                manifest = policy.revisions.get(number=policy.applied_revision).manifest
                context["ours"] = sync.live_yaml(sync.desired_object(manifest, revision=policy.applied_revision))
        except kube.KubeError as exc:
            context["error"] = exc.message
        policy.refresh_from_db()
        return render(request, "cluster/drift.html", context)

    def post(self, request, name: str):
        if not request.user.is_authenticated:
            return redirect("login")
        from trainer_portal.roles import is_platform_admin

        if not is_platform_admin(request.user):
            return render(request, "cluster/forbidden.html", status=403)
        policy = _policy_or_404(name)
        action = request.POST.get("action", "")
        try:
            with transaction.atomic():
                if action == "check":
                    result = sync.runtime_drift_check(policy_id=policy.pk)
                    if result is None:
                        messages.info(request, "Only synced or drifted policies can be checked.")
                    else:
                        messages.info(request, "Drift found." if result.drifted else "No drift: the cluster matches.")
                else:
                    revision = sync.runtime_drift_resolve(policy=policy, action=action, actor=request.user)
                    if revision is not None:
                        _enqueue_sync(policy, revision, force=True)
                        messages.success(request, "Re-applying the portal's revision with force.")
                    else:
                        messages.success(request, "The live object was adopted as a new revision.")
        except (PolicyError, kube.KubeError) as exc:
            messages.error(request, exc.message)
        return redirect("cluster:drift", name=policy.name)


class ClusterDeleteView(PlatformAdminRequiredMixin, View):
    """GET: confirm deleting the policy's runtime from the cluster (warns about TrainJobs); POST: delete it."""

    def get(self, request, name: str):
        policy = _policy_or_404(name)
        trainjobs, error = [], ""
        try:
            trainjobs = sync.runtime_referencing_trainjobs(name=policy.name)
        except kube.KubeError as exc:
            error = exc.message
        return render(request, "cluster/delete.html", {"policy": policy, "trainjobs": trainjobs, "error": error})

    def post(self, request, name: str):
        policy = _policy_or_404(name)
        try:
            deleted = sync.runtime_cluster_delete(policy=policy)
        except kube.KubeError as exc:
            messages.error(request, "The cluster refused the removal: " + exc.message)
            return redirect("cluster:delete", name=policy.name)
        RuntimePolicy.objects.filter(pk=policy.pk).update(
            sync_state=SyncState.DRAFT, applied_revision=None, applied_resource_version="", applied_generation=None,
            drift_diff="",
        )
        messages.success(
            request, f"Deleted {policy.name} from the cluster." if deleted else f"{policy.name} was not on the cluster."
        )
        return redirect("cluster:page")
