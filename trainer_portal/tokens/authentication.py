"""DRF authentication by ``Authorization: Token <key>`` against expiring, revocable API tokens."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from .services import token_authenticate


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's token header scheme (and its OpenAPI description), checked against our tokens: an unknown, revoked
    or expired token is a 401 naming why."""

    def authenticate_credentials(self, key):
        token, reason = token_authenticate(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed(reason)
        return token.user, token
