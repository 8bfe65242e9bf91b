"""Routes of the cluster app, mounted at /cluster/ (namespace "cluster")."""

from django.urls import path

from . import registry_views, views

app_name = "cluster"
urlpatterns = [
    path("", views.ClusterPageView.as_view(), name="page"),
    path("clusters/", registry_views.ClusterListView.as_view(), name="clusters"),
    path("clusters/<str:name>/", registry_views.ClusterEditView.as_view(), name="cluster-edit"),
]
