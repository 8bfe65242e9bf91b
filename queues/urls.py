"""Page routes of the queues app under /queues/."""

from django.urls import path

from . import views

app_name = "queues"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("clusterqueues/<str:name>/", views.cluster_queue, name="clusterqueue"),
    path("localqueues/<str:namespace>/<str:local_queue>/", views.local_queue, name="localqueue"),
]
