"""DRF permission classes and view mixins mapping portal roles onto requests."""

from __future__ import annotations

from django.contrib.auth.mixins import AccessMixin
from rest_framework.permissions import SAFE_METHODS, BasePermission

from trainer_portal.roles import is_platform_admin, is_viewer


class IsViewer(BasePermission):
    """Allow any request from a user holding a portal role (read access)."""

    message = "You need the viewer or platform-admin role to use this endpoint."

    def has_permission(self, request, view) -> bool:
        return is_viewer(request.user)


class IsPlatformAdminOrReadOnly(BasePermission):
    """Allow reads to viewers and writes to platform admins only."""

    message = "Only platform admins may change policies; your role is read-only."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return is_viewer(request.user)
        return is_platform_admin(request.user)


class IsPlatformAdmin(BasePermission):
    """Allow platform admins only, whatever the method."""

    message = "Only platform admins may do this."

    def has_permission(self, request, view) -> bool:
        return is_platform_admin(request.user)


class ViewerRequiredMixin(AccessMixin):
    """Class-based-view mixin: login required, then any portal role; 403 otherwise."""

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not is_viewer(request.user):
            self.raise_exception = True
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)


class PlatformAdminRequiredMixin(AccessMixin):
    """Class-based-view mixin: login required, then the platform-admin role; 403 otherwise."""

    permission_denied_message = "Only platform admins may change policies."

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not is_platform_admin(request.user):
            self.raise_exception = True
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)


class PlatformAdminForWritesMixin(AccessMixin):
    """Class-based-view mixin: login required; any portal role may read (GET/HEAD), only platform admins write."""

    permission_denied_message = "Only platform admins may change what is on the cluster."

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        allowed = is_viewer if request.method in SAFE_METHODS else is_platform_admin
        if not allowed(request.user):
            self.raise_exception = True
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)
