"""The API documentation pages, served from pinned, self-hosted assets (drf-spectacular-sidecar) under the CSP.

Swagger UI gets its start-up script from a separate URL (no inline script). Redoc renders with styled-components,
which inserts <style> elements, and parses the schema in a blob: worker; only its page relaxes the policy for that.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.decorators import method_decorator
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

REDOC_CSP = {
    **settings.SECURE_CSP,
    "style-src": [*settings.SECURE_CSP["style-src"], "'unsafe-inline'"],
    "worker-src": ["blob:"],
}


class SwaggerDocsView(SpectacularSwaggerSplitView):
    """``/api/docs/``: Swagger UI; its start-up script is ``/api/docs/?script=`` (same page, JavaScript)."""

    template_name = "api/swagger_ui.html"


@method_decorator(csp_override(REDOC_CSP), name="dispatch")
class RedocDocsView(SpectacularRedocView):
    """``/api/redoc/``: Redoc, without web fonts from elsewhere."""

    template_name = "api/redoc.html"
