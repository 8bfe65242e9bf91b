"""The cluster picker's context for every page: ``clusters`` (every cluster, default first) and
``selected_cluster`` (the one ``?cluster=<name>`` names, else the default). Both are lazy: a page that shows no
picker asks the database nothing. Include ``components/cluster_picker.html`` to show the picker.
"""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from . import registry


def cluster_picker(request) -> dict:
    """Return ``{clusters, selected_cluster}`` (lazy) for the templates."""
    name = request.GET.get("cluster", "") if hasattr(request, "GET") else ""
    name = name if isinstance(name, str) and "\x00" not in name else ""
    return {
        "clusters": SimpleLazyObject(registry.cluster_list),
        "selected_cluster": SimpleLazyObject(lambda: registry.selected_cluster(name)),
    }
