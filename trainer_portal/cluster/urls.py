"""Routes of the cluster app, mounted at /cluster/ (namespace "cluster"). A cluster is named with ``?cluster=`` (or
the form's ``cluster`` field): the names of per-policy sync routes under /cluster/ cannot clash with a cluster's."""

from django.urls import path

from . import views

app_name = "cluster"
urlpatterns = [
    path("", views.ClusterPageView.as_view(), name="page"),
    path("check/", views.ClusterCheckView.as_view(), name="check"),
]
