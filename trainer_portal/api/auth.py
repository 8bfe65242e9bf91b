"""The API token endpoint: `POST /api/v1/auth/token/`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from trainer_portal.accounts import api_token_for
from trainer_portal.api.parsers import BoundedJSONParser
from trainer_portal.roles import is_viewer

_TOKEN = inline_serializer(
    name="ApiToken",
    fields={
        "token": serializers.CharField(help_text="Send it as `Authorization: Token <token>`."),
        "username": serializers.CharField(),
    },
)
_ERROR = inline_serializer(
    name="TokenError",
    fields={
        "error": inline_serializer(
            name="TokenErrorBody",
            fields={
                "code": serializers.CharField(),
                "message": serializers.CharField(),
                "status": serializers.IntegerField(),
                "fields": serializers.ListField(child=serializers.DictField(), help_text="[{path, message, code}]"),
            },
        )
    },
)


class ObtainTokenApi(ObtainAuthToken):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password``: returns ``{"token": "...", "username"}``.

    Use it as ``Authorization: Token <token>``. Only users holding a portal role get a token.
    """

    permission_classes = ()
    # Bounded like every API body; forms stay accepted (bounded by DATA_UPLOAD_MAX_MEMORY_SIZE) for curl -d users.
    parser_classes = (BoundedJSONParser, FormParser)

    @extend_schema(
        operation_id="auth_token_create",
        summary="Get an API token",
        description="Exchange a username and password for the account's API token (the same token every time). "
        "Send it as `Authorization: Token <token>`. Only accounts holding a portal role get one.",
        request=AuthTokenSerializer,
        responses={
            200: _TOKEN,
            400: OpenApiResponse(_ERROR, description="Missing fields, or wrong username or password."),
            403: OpenApiResponse(_ERROR, description="The account has no portal role."),
        },
        auth=[],
        tags=["auth"],
    )
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        if not is_viewer(user):
            raise exceptions.PermissionDenied("This account has no portal role; ask an admin for viewer access.")
        return Response({"token": api_token_for(user=user), "username": user.get_username()})
