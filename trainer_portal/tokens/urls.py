"""The API tokens page (namespace ``tokens``)."""

from django.urls import path

from . import views

app_name = "tokens"

urlpatterns = [
    path("", views.TokenListView.as_view(), name="list"),
    path("<int:token_id>/revoke/", views.TokenRevokeView.as_view(), name="revoke"),
]
