"""Live stream URLs under /live/ (routed to the ASGI server by the proxy and the Ingress)."""

from django.urls import path

from . import views

app_name = "live"

urlpatterns = [
    path("stream", views.stream, name="stream"),
]
