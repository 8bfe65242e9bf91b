from django.urls import path

from . import views

app_name = "runtimes"
urlpatterns = [
    path("", views.runtime_list, name="list"),
]
