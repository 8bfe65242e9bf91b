"""Single sign-on with OpenID Connect (mozilla-django-oidc): PKCE, RP-initiated logout, IdP groups → portal roles."""
