"""Who may call what, read from the role → capability table (``trainer_portal.roles``).

One mechanism per interface, each naming the capability a read (GET/HEAD/OPTIONS) and a write (any other method)
needs:

* ``CapabilityRequiredMixin`` — class-based pages (``capability = …``, optional ``write_capability = …``);
* ``capability_required(read, write=None)`` — function-based pages;
* ``HasCapability.of(read, write=None)`` — DRF permission classes.

Pages send anonymous users to the login page and answer 403 to signed-in users without the capability; the API
answers 401 (no credentials) or 403. Each view carries its capabilities (``view.capability`` and
``view.write_capability`` on function views, the class attributes on the others) so the route sweep test checks
every route against the table.
"""

from __future__ import annotations

import functools

from django.contrib.auth.mixins import AccessMixin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from trainer_portal import roles


def required_capability(method: str, read: str, write: str | None) -> str:
    """Return the capability a request with ``method`` needs: ``read`` for safe methods, else ``write`` (or
    ``read`` when no write capability is named)."""
    return read if method in SAFE_METHODS else (write or read)


class HasCapability(BasePermission):
    """DRF permission: the caller must hold ``read_capability`` (safe methods) or ``write_capability`` (others).

    Use a subclass made by ``HasCapability.of(read, write)``; the base class itself allows nobody."""

    read_capability: str | None = None
    write_capability: str | None = None
    message = "Your role may not do this."

    @classmethod
    def of(cls, read: str, write: str | None = None) -> type[HasCapability]:
        """Return a permission class requiring ``read`` for reads and ``write`` (default ``read``) for writes.
        Raises KeyError for a capability not in the table."""
        for capability in (read, write):
            if capability is not None and capability not in roles.CAPABILITIES:
                raise KeyError(f"unknown capability {capability!r}")
        name = f"Has_{read}_{write or read}".replace(".", "_")
        return type(name, (cls,), {"read_capability": read, "write_capability": write or read})

    def has_permission(self, request, view) -> bool:
        if self.read_capability is None:
            return False
        capability = required_capability(request.method, self.read_capability, self.write_capability)
        if roles.has_capability(request.user, capability):
            return True
        # The message is per instance: DRF makes one permission object per request.
        self.message = roles.DENIED[capability]
        return False


class CapabilityRequiredMixin(AccessMixin):
    """Class-based-view mixin: login required (else the login page), then the capability the method needs (else
    403 naming what is missing)."""

    capability: str = ""
    write_capability: str | None = None

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        needed = required_capability(request.method, self.capability, self.write_capability)
        if not roles.has_capability(request.user, needed):
            raise PermissionDenied(roles.DENIED[needed])
        return super().dispatch(request, *args, **kwargs)


def capability_required(read: str, write: str | None = None):
    """Return a decorator for function views: anonymous users go to the login page, signed-in users without the
    capability get 403. Raises KeyError for a capability not in the table."""
    for capability in (read, write):
        if capability is not None and capability not in roles.CAPABILITIES:
            raise KeyError(f"unknown capability {capability!r}")

    def decorator(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            needed = required_capability(request.method, read, write)
            if not roles.has_capability(request.user, needed):
                raise PermissionDenied(roles.DENIED[needed])
            return view(request, *args, **kwargs)

        wrapper.capability = read
        wrapper.write_capability = write
        return wrapper

    return decorator


# -- the first release's names, each one row of the table (new code names the capability) -------------------------

IsViewer = HasCapability.of(roles.POLICIES_VIEW)
IsPortalUser = HasCapability.of(roles.API_DOCS)
IsPlatformAdmin = HasCapability.of(roles.POLICIES_EDIT)
IsPlatformAdminOrReadOnly = HasCapability.of(roles.POLICIES_VIEW, roles.POLICIES_EDIT)


class ViewerRequiredMixin(CapabilityRequiredMixin):
    capability = roles.POLICIES_VIEW


class PlatformAdminRequiredMixin(CapabilityRequiredMixin):
    capability = roles.POLICIES_EDIT


class PlatformAdminForWritesMixin(CapabilityRequiredMixin):
    capability = roles.POLICIES_VIEW
    write_capability = roles.POLICIES_SYNC
