"""Top-level URL map: pages, the REST API under /api/v1/, the OpenAPI schema and docs."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from . import views
from .api_docs import RedocDocsView, SwaggerDocsView

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", views.ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("account/tokens/", include("trainer_portal.tokens.urls")),
    # The policy app: /runtimes/…, /preview/… and the per-policy sync actions under /cluster/….
    path("", include("runtimes.urls")),
    path("jobs/", include("jobs.urls")),
    path("cluster/", include("trainer_portal.cluster.urls")),
    path("api/v1/", include("trainer_portal.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SwaggerDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", RedocDocsView.as_view(url_name="api-schema"), name="api-redoc"),
]
