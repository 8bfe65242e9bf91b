"""The clusters page (/cluster/clusters/): platform admins list, add, change and remove the portal's clusters.

Server-rendered like the other pages; a POST goes through ``registry_services`` (the API's rules), a refusal is
shown next to its field with status 400 (409 for a stale version). Nothing here reaches a cluster.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views import View

from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import CLUSTER_MANAGE

from . import registry, registry_services, selectors
from .forms import ClusterForm
from .models import Cluster


def _health(cluster: Cluster) -> dict:
    reader = getattr(selectors, "cluster_health", None) or registry.cluster_health
    return reader(cluster)


def _rows() -> list[dict]:
    return [{"cluster": cluster, "health": _health(cluster)} for cluster in registry.cluster_list()]


class ClusterListView(CapabilityRequiredMixin, View):
    """Every cluster with its connection and health, and the form to add one."""

    capability = CLUSTER_MANAGE

    def get(self, request):
        return render(request, "cluster/clusters.html", {"rows": _rows(), "form": ClusterForm(creating=True)})

    def post(self, request):
        form = ClusterForm(request.POST, creating=True)
        if form.is_valid():
            try:
                cluster = registry_services.cluster_create(form.api_data())
            except registry_services.ClusterError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Cluster {cluster.name} added. Its health shows once the background "
                                          "check has reached it.")
                return redirect("cluster:clusters")
        return render(request, "cluster/clusters.html", {"rows": _rows(), "form": form}, status=400)


class ClusterEditView(CapabilityRequiredMixin, View):
    """One cluster's settings (the kubeconfig is never shown) and its removal."""

    capability = CLUSTER_MANAGE

    def _cluster(self, name: str) -> Cluster:
        try:
            return registry.cluster_get(name)
        except registry.ClusterNotFound:
            raise Http404(f"There is no cluster {name!r}.") from None

    def _form(self, cluster: Cluster, data=None) -> ClusterForm:
        initial = {"name": cluster.name, "display_name": cluster.display_name, "connection": cluster.connection,
                   "context": cluster.kubeconfig_context, "secret_ref": cluster.secret_ref,
                   "block_label_key": cluster.block_label_key, "is_default": cluster.is_default,
                   "enabled": cluster.enabled, "version": cluster.version}
        return ClusterForm(data, initial=initial, creating=False)

    def _render(self, request, cluster: Cluster, form: ClusterForm, status: int = 200, error: str = ""):
        return render(request, "cluster/cluster_edit.html",
                      {"cluster": cluster, "form": form, "health": _health(cluster), "delete_error": error},
                      status=status)

    def get(self, request, name: str):
        cluster = self._cluster(name)
        return self._render(request, cluster, self._form(cluster))

    def post(self, request, name: str):
        cluster = self._cluster(name)
        if request.POST.get("action") == "delete":
            return self._delete(request, cluster)
        form = self._form(cluster, request.POST)
        if form.is_valid():
            try:
                cluster = registry_services.cluster_update(cluster.name, form.api_data(),
                                                           expected_version=form.cleaned_data["version"])
            except registry_services.ClusterError as exc:
                form.add_service_error(exc)
                return self._render(request, cluster, form, status=exc.status if exc.status == 409 else 400)
            messages.success(request, f"Cluster {cluster.name} saved (version {cluster.version}).")
            return redirect("cluster:cluster-edit", name=cluster.name)
        return self._render(request, cluster, form, status=400)

    def _delete(self, request, cluster: Cluster):
        try:
            version = int(request.POST.get("version", ""))
        except ValueError:
            version = None
        try:
            registry_services.cluster_delete(cluster.name, expected_version=version)
        except registry_services.ClusterError as exc:
            return self._render(request, cluster, self._form(cluster), status=exc.status, error=exc.message)
        messages.success(request, f"Cluster {cluster.name} removed, with everything tracked on it.")
        return redirect("cluster:clusters")
