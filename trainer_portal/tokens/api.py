"""API tokens over the API: exchange a password for a token, list, create and revoke your own tokens.

* ``POST /api/v1/auth/token/`` — username + password → a new token (``settings.API_TOKEN_LIFETIME_DAYS``).
* ``GET|POST /api/v1/auth/tokens/`` — the caller's tokens; create one (``name``, ``days``).
* ``DELETE /api/v1/auth/tokens/<id>/`` — revoke one of the caller's tokens.

All of them are throttled per client address (``AuthRateThrottle``: 429 with Retry-After).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.parsers import BoundedJSONParser
from trainer_portal.api.schema import ErrorSerializer
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import TOKENS_OWN, has_capability
from trainer_portal.throttling import AuthRateThrottle

from .errors import TokenNotFound, TokenOutlivesItsMinter
from .forms import NAME_MAX
from .models import ApiToken
from .selectors import token_list
from .services import token_issue, token_revoke

_ERROR = ErrorSerializer
_THROTTLED = OpenApiResponse(_ERROR, description="Too many attempts from this address; see Retry-After.")


class TokenSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk", read_only=True)
    name = serializers.CharField(read_only=True)
    prefix = serializers.CharField(read_only=True, help_text="The key's first characters, to tell tokens apart.")
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    expiresAt = serializers.DateTimeField(source="expires_at", read_only=True)
    expired = serializers.SerializerMethodField()

    def get_expired(self, token) -> bool:
        return token.expires_at <= timezone.now()


class IssuedTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The key: shown once. Send `Authorization: Token <key>`.")
    username = serializers.CharField(read_only=True)


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX)
    days = serializers.IntegerField(min_value=1, required=False, help_text="Lifetime in days (default: the "
                                    "deployment's API_TOKEN_LIFETIME_DAYS, at most API_TOKEN_MAX_DAYS).")

    def validate_days(self, value: int) -> int:
        if value > settings.API_TOKEN_MAX_DAYS:
            raise serializers.ValidationError(f"at most {settings.API_TOKEN_MAX_DAYS} days")
        return value


def _issued(issued, user) -> dict:
    data = dict(IssuedTokenSerializer(issued.token).data)
    data.update(token=issued.key, username=user.get_username())
    return data


class ObtainTokenApi(APIView):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password``: a new token for accounts with a role."""

    authentication_classes = ()
    permission_classes = ()
    throttle_classes = (AuthRateThrottle,)
    # JSON (bounded, like every API body) or a urlencoded form post (`curl -d username=… -d password=…`).
    parser_classes = (BoundedJSONParser, FormParser)

    @extend_schema(
        operation_id="auth_token_create",
        summary="Get an API token",
        description="Exchange a username and password for a new API token that expires after the deployment's "
        "token lifetime. Send it as `Authorization: Token <token>`. Only accounts holding a portal role get one; "
        "list and revoke tokens at `/api/v1/auth/tokens/` or on the API tokens page. A urlencoded form post "
        "(`curl -d username=… -d password=…`) is accepted as well.",
        # JSON only in the schema, though a urlencoded form works too (see the description): openapi-python-client
        # generates code that cannot be imported for an operation with two usable body media types.
        request={"application/json": AuthTokenSerializer},
        responses={
            200: IssuedTokenSerializer,
            400: OpenApiResponse(_ERROR, description="Missing fields, or wrong username or password."),
            403: OpenApiResponse(_ERROR, description="The account has no portal role."),
            415: OpenApiResponse(_ERROR, description="The body is neither JSON nor a urlencoded form."),
            429: _THROTTLED,
        },
        auth=[],
        tags=["auth"],
    )
    def post(self, request, *args, **kwargs):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        if not has_capability(user, TOKENS_OWN):  # any portal role, the data scientist's included
            raise exceptions.PermissionDenied("This account has no portal role; ask an admin for a role.")
        return Response(_issued(token_issue(user=user, name="Password exchange"), user))


class TokenListCreateApi(APIView):
    """The caller's API tokens (any portal role: ``tokens.own``)."""

    permission_classes = [HasCapability.of(TOKENS_OWN)]

    throttle_classes = (AuthRateThrottle,)

    def get_throttles(self):
        # Listing is a read: only creating a token counts against the password-door limit.
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(operation_id="auth_tokens_list", summary="List your API tokens",
                   responses={200: TokenSerializer(many=True)}, tags=["auth"])
    def get(self, request):
        return Response(TokenSerializer(token_list(user=request.user), many=True).data)

    @extend_schema(operation_id="auth_tokens_create", summary="Create an API token",
                   request=TokenCreateSerializer,
                   responses={201: IssuedTokenSerializer, 400: OpenApiResponse(_ERROR), 429: _THROTTLED},
                   tags=["auth"])
    def post(self, request):
        serializer = TokenCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        days = serializer.validated_data.get("days")
        minted_by = request.auth if isinstance(request.auth, ApiToken) else None
        try:
            issued = token_issue(user=request.user, name=serializer.validated_data["name"],
                                 lifetime=timedelta(days=days) if days else None, minted_by=minted_by)
        except TokenOutlivesItsMinter as exc:
            raise exceptions.ValidationError({"days": [f"{exc}; ask for fewer days, or sign in with a password"]})
        return Response(_issued(issued, request.user), status=status.HTTP_201_CREATED)


class TokenDetailApi(APIView):
    """One of the caller's API tokens."""

    permission_classes = [HasCapability.of(TOKENS_OWN)]

    @extend_schema(operation_id="auth_tokens_destroy", summary="Revoke an API token",
                   responses={204: None, 401: OpenApiResponse(_ERROR, description="Missing, expired or revoked token."),
                              404: OpenApiResponse(_ERROR, description="Not one of your tokens.")},
                   tags=["auth"])
    def delete(self, request, token_id: int):
        try:
            token_revoke(user=request.user, token_id=token_id)
        except TokenNotFound:
            raise exceptions.NotFound("You have no token with this id.")
        return Response(status=status.HTTP_204_NO_CONTENT)
