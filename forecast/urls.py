"""Forecast pages under /forecast/."""

from django.urls import path

from . import views

app_name = "forecast"

urlpatterns = [
    path("", views.index, name="index"),
    path("whatif/", views.whatif, name="whatif"),
    path("whatif/<int:pk>/", views.whatif_detail, name="whatif-detail"),
    path("whatif/<int:pk>/cancel/", views.whatif_cancel, name="whatif-cancel"),
]
