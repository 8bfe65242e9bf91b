from django.urls import path

from . import views

urlpatterns = [
    path("authenticate/", views.SsoLoginView.as_view(), name="oidc_authentication_init"),
    path("callback/", views.SsoCallbackView.as_view(), name="oidc_authentication_callback"),
]
