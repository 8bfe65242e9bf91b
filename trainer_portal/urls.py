"""Top-level URL map: pages, the REST API under /api/v1/, the OpenAPI schema and docs."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from runtimes import cluster_urls as runtimes_cluster_urls
from trainer_portal.cluster import urls as cluster_urls

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("runtimes/", include("runtimes.urls")),
    path("preview/", include("runtimes.preview_urls")),
    # One "cluster" namespace: the cluster app's page plus the policy sync pages that still live under it.
    path("cluster/", include((cluster_urls.urlpatterns + runtimes_cluster_urls.urlpatterns, "cluster"))),
    path("api/v1/", include("trainer_portal.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]
