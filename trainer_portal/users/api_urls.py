"""API routes of the users app (included under /api/v1/)."""

from django.urls import path

from . import api

urlpatterns = [
    path("users/", api.UserListApi.as_view(), name="api-users"),
    path("users/<int:user_id>/", api.UserDetailApi.as_view(), name="api-user"),
]
