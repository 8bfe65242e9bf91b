"""Routes of the cluster app, mounted at /cluster/ (namespace "cluster"). A cluster is named with ``?cluster=`` (or
the form's ``cluster`` field): the names of per-policy sync routes under /cluster/ cannot clash with a cluster's."""

from django.urls import path

from . import registry_views, views

app_name = "cluster"
urlpatterns = [
    path("", views.ClusterPageView.as_view(), name="page"),
    path("clusters/", registry_views.ClusterListView.as_view(), name="clusters"),
    path("clusters/<str:name>/", registry_views.ClusterEditView.as_view(), name="cluster-edit"),
    path("check/", views.ClusterCheckView.as_view(), name="check"),
]
