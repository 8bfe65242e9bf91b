"""API tokens die with their user's credentials: a password change, a disabled account or the last role removed
revokes every token of that user (an SSO user's role follows the identity provider's groups at each sign-in)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import m2m_changed, post_save, pre_save

from trainer_portal.roles import can_see_trainjobs

from .services import tokens_revoke_all

_CREDENTIAL_FIELDS = {"password", "is_active"}


def _remember_credential_change(sender, instance, update_fields=None, **kwargs) -> None:
    instance._revoke_tokens = False
    if instance.pk is None or (update_fields is not None and not _CREDENTIAL_FIELDS & set(update_fields)):
        return
    before = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    instance._revoke_tokens = (before["password"] != instance.password
                               or (before["is_active"] and not instance.is_active))


def _revoke_after_credential_change(sender, instance, created=False, **kwargs) -> None:
    if not created and getattr(instance, "_revoke_tokens", False):
        tokens_revoke_all(user=instance)
        instance._revoke_tokens = False


def _revoke_when_no_role_is_left(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action not in ("post_remove", "post_clear"):
        return
    if not reverse:  # user.groups.remove(...) / clear()
        user_ids = {instance.pk}
    elif pk_set:  # group.user_set.remove(users...)
        user_ids = set(pk_set)
    else:  # group.user_set.clear(): the members are not known any more
        return
    # Fresh rows: a role check caches group names on the instance it is given.
    for user in get_user_model().objects.filter(pk__in=user_ids):
        if not user.is_superuser and not can_see_trainjobs(user):
            tokens_revoke_all(user=user)


def connect() -> None:
    """Connect the handlers (from ``TokensConfig.ready``)."""
    user_model = get_user_model()
    pre_save.connect(_remember_credential_change, sender=user_model, dispatch_uid="tokens-credential-change")
    post_save.connect(_revoke_after_credential_change, sender=user_model, dispatch_uid="tokens-credential-revoke")
    m2m_changed.connect(_revoke_when_no_role_is_left, sender=user_model.groups.through,
                        dispatch_uid="tokens-role-revoke")
