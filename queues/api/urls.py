"""REST routes for Kueue's queues under /api/v1/queues/."""

from django.urls import path

from . import views

urlpatterns = [
    path("queues/", views.QueuesOverviewApi.as_view(), name="api-queues"),
    path("queues/clusterqueues/<str:cluster_queue>/", views.ClusterQueueApi.as_view(), name="api-clusterqueue"),
    path("queues/localqueues/<str:namespace>/<str:local_queue>/", views.LocalQueueApi.as_view(),
         name="api-localqueue"),
]
