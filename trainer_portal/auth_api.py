"""API token endpoint (kept apart from ``api.py``, which DRF settings import while DRF itself loads)."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response

from .roles import is_viewer


class ObtainTokenApi(ObtainAuthToken):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password``: returns ``{"token": "..."}``.

    Use it as ``Authorization: Token <token>``. Only users holding a portal role get a token.
    """

    permission_classes = ()

    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        if not is_viewer(user):
            raise exceptions.PermissionDenied("This account has no portal role; ask an admin for viewer access.")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})
