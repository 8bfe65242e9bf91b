"""Top-level URL map: pages, the REST API under /api/v1/, the OpenAPI schema and docs."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from . import metrics, views
from .api_docs import RedocDocsView, SwaggerDocsView
from .permissions import HasCapability
from .roles import API_DOCS
from .sso.views import PortalLogoutView

# Every portal role may use the API, so every one may read its schema and docs.
_DOCS = {"permission_classes": [HasCapability.of(API_DOCS)]}


class _FaviconRedirect(RedirectView):
    """Browsers ask for /favicon.ico whatever a page links: send them to the SVG icon (resolved per request, so a
    hashed static name is read from the manifest only when it exists; temporary, as the hash changes)."""

    permanent = False
    http_method_names = ["get", "head"]

    def get_redirect_url(self, *args, **kwargs) -> str:
        return static("favicon.svg")


PAGE = ["get", "head"]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("favicon.ico", _FaviconRedirect.as_view(), name="favicon"),
    path("login/", views.ThrottledLoginView.as_view(), name="login"),
    path("logout/", PortalLogoutView.as_view(), name="logout"),
    path("oidc/", include("trainer_portal.sso.urls")),
    path("admin/", admin.site.urls),
    path("account/tokens/", include("trainer_portal.tokens.urls")),
    path("users/", include("trainer_portal.users.urls")),
    # The policy app: /runtimes/…, /preview/… and the per-policy sync actions under /cluster/….
    path("", include("runtimes.urls")),
    path("jobs/", include("jobs.urls")),
    path("forecast/", include("forecast.urls")),
    path("queues/", include("queues.urls")),
    path("cluster/", include("trainer_portal.cluster.urls")),
    path("live/", include("trainer_portal.live.urls")),
    path("notifications/", include("notifications.urls")),
    path("api/v1/", include("trainer_portal.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(**_DOCS), name="api-schema"),
    # The doc pages are HTML templates only: OPTIONS (which would render DRF metadata into them) is not offered.
    path("api/docs/", SwaggerDocsView.as_view(url_name="api-schema", http_method_names=PAGE, **_DOCS), name="api-docs"),
    path("api/redoc/", RedocDocsView.as_view(url_name="api-schema", http_method_names=PAGE, **_DOCS), name="api-redoc"),
]
