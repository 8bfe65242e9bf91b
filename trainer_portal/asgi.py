"""ASGI entry point: the live stream server (``uvicorn trainer_portal.asgi:application``, docs/operations.md).

It serves the whole portal, but the proxy sends it only ``/live/``: pages stay on the WSGI server (gunicorn)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainer_portal.settings")

application = get_asgi_application()
