"""The Users pages (namespace ``users``), mounted at /users/."""

from django.urls import path

from . import views

app_name = "users"

urlpatterns = [
    path("", views.user_list, name="list"),
    path("<int:user_id>/", views.user_detail, name="detail"),
    path("<int:user_id>/password/", views.user_password, name="password"),
]
