"""``/api/v1/users/`` (platform admins): list and create local users; read and change one.

* ``GET /api/v1/users/`` — every user with role, groups and state; ``POST`` — create (``username``, ``password``,
  ``role``, ``groups``).
* ``GET /api/v1/users/{id}/``; ``PATCH`` — change any of ``role``, ``groups``, ``isActive``, ``password``.

Refusals are the API's error body: 400 naming the field, 404, 409 (taken username, the last platform admin).
"""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.parsers import BoundedJSONParser
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import USERS_MANAGE

from .errors import UserError
from .selectors import UserRow, user_row, user_rows
from .services import ROLE_CHOICES, user_create, user_set_password, user_update


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    superuser = serializers.BooleanField()
    groups = serializers.ListField(child=serializers.CharField(), help_text="The non-role groups.")
    isActive = serializers.BooleanField()
    lastLogin = serializers.DateTimeField(allow_null=True)


class UserCreateSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(write_only=True)
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    groups = serializers.ListField(child=serializers.CharField(), required=False)


class UserPatchSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLE_CHOICES, required=False)
    groups = serializers.ListField(child=serializers.CharField(), required=False)
    isActive = serializers.BooleanField(required=False)
    password = serializers.CharField(required=False, write_only=True)


def _data(row: UserRow) -> dict:
    user = row.user
    return {"id": user.pk, "username": user.username, "role": row.role, "superuser": user.is_superuser,
            "groups": list(row.groups), "isActive": user.is_active, "lastLogin": user.last_login}


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise UserError("body", "Send a JSON object.")
    return request.data


_ERRORS = {400: OpenApiResponse(description="A field is invalid (error.fields names it)."),
           403: OpenApiResponse(description="Not logged in, or not a platform admin."),
           409: OpenApiResponse(description="The username is taken, or the change leaves no active platform admin.")}


class UserListApi(APIView):
    """Every local user; create one."""

    permission_classes = [HasCapability.of(USERS_MANAGE)]
    parser_classes = [BoundedJSONParser]

    @extend_schema(operation_id="users_list", summary="List users", responses={200: UserSerializer(many=True)},
                   tags=["users"])
    def get(self, request):
        return Response([_data(row) for row in user_rows()])

    @extend_schema(operation_id="users_create", summary="Create a user", request=UserCreateSerializer,
                   responses={201: UserSerializer, **_ERRORS}, tags=["users"])
    def post(self, request):
        body = _body(request)
        groups = body.get("groups", [])
        if not isinstance(groups, list):
            raise UserError("groups", "A list of group names.")
        user = user_create(username=body.get("username"), password=body.get("password"), role=body.get("role"),
                           groups=groups)
        return Response(_data(user_row(user.pk)), status=status.HTTP_201_CREATED)


class UserDetailApi(APIView):
    """One local user: read, change role, groups, state or password."""

    permission_classes = [HasCapability.of(USERS_MANAGE)]
    parser_classes = [BoundedJSONParser]

    @extend_schema(operation_id="users_retrieve", summary="Get a user",
                   responses={200: UserSerializer, 404: OpenApiResponse(description="No such user.")}, tags=["users"])
    def get(self, request, user_id: int):
        row = user_row(user_id)
        if row is None:
            raise UserError("user", f"No user with id {user_id}.", 404)
        return Response(_data(row))

    @extend_schema(operation_id="users_partial_update", summary="Change a user", request=UserPatchSerializer,
                   responses={200: UserSerializer, 404: OpenApiResponse(description="No such user."), **_ERRORS},
                   tags=["users"])
    def patch(self, request, user_id: int):
        body = _body(request)
        unknown = sorted(set(body) - {"role", "groups", "isActive", "password"})
        if unknown:
            raise UserError(unknown[0], "Unknown field: send role, groups, isActive or password.")
        groups = body.get("groups")
        if groups is not None and not isinstance(groups, list):
            raise UserError("groups", "A list of group names.")
        with transaction.atomic():  # a refused password leaves the role change undone too
            user_update(user_id=user_id, role=body.get("role"), groups=groups, is_active=body.get("isActive"))
            if "password" in body:
                user_set_password(user_id=user_id, password=body["password"])
        return Response(_data(user_row(user_id)))
