"""Route of the cluster status page (namespace "cluster")."""

from django.urls import path

from runtimes import cluster_views

app_name = "cluster"
urlpatterns = [
    path("", cluster_views.ClusterPageView.as_view(), name="page"),
]
