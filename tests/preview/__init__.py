"""Tests of the placement preview (service, REST API, HTML panel).

`urlpatterns` below is the URL configuration the tests use (`@pytest.mark.urls("tests.preview")`): the project's
own routes plus the preview routes at the paths the lead wires them to (`/preview/`, `/api/v1/…`), added only
while the project does not route them itself yet, so the tests pass before and after the wiring.
"""

from __future__ import annotations

from django.urls import NoReverseMatch, include, path, reverse

from trainer_portal.urls import urlpatterns as _project_urlpatterns


def _routed(name: str) -> bool:
    try:
        reverse(name, urlconf="trainer_portal.urls")
    except NoReverseMatch:
        return False
    return True


def _preview_urlpatterns() -> list:
    patterns = list(_project_urlpatterns)
    if not _routed("preview:page"):
        patterns.append(path("preview/", include("runtimes.preview_urls")))
    if not _routed("api-preview"):
        patterns.append(path("api/v1/", include("runtimes.api.preview_urls")))
    return patterns


urlpatterns = _preview_urlpatterns()
