"""Top-level URL map: pages, the REST API under /api/v1/, the OpenAPI schema and docs."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from . import views

PAGE = ["get", "head"]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The policy app: /runtimes/…, /preview/… and the per-policy sync actions under /cluster/….
    path("", include("runtimes.urls")),
    path("jobs/", include("jobs.urls")),
    path("cluster/", include("trainer_portal.cluster.urls")),
    path("api/v1/", include("trainer_portal.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The doc pages are HTML templates only: OPTIONS (which would render DRF metadata into them) is not offered.
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema", http_method_names=PAGE), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema", http_method_names=PAGE), name="api-redoc"),
]
