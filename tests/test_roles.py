"""The role → capability table: what docs/operations.md promises is what the table grants, and who holds what."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainer_portal import roles
from trainer_portal.permissions import HasCapability, capability_required

OPERATIONS = Path(__file__).resolve().parent.parent / "docs" / "operations.md"
COLUMNS = (roles.PLATFORM_ADMIN, roles.VIEWER, roles.DATA_SCIENTIST, roles.NONE)


def _documented() -> dict[str, set[str]]:
    granted: dict[str, set[str]] = {role: set() for role in COLUMNS}
    for line in OPERATIONS.read_text().splitlines():
        match = re.match(r"\| `([a-z_]+\.[a-z_.]+)` \|[^|]*\|(.*)\|\s*$", line)  # capabilities have a dot
        if not match:
            continue
        cells = [cell.strip() for cell in match.group(2).split("|")]
        assert len(cells) == len(COLUMNS), line
        for role, cell in zip(COLUMNS, cells, strict=True):
            if cell:
                granted[role].add(match.group(1))
    return granted


def test_the_operations_guide_documents_the_table():
    documented = _documented()

    assert set().union(*documented.values()) <= set(roles.CAPABILITIES)
    assert {role: set(caps) for role, caps in roles.ROLE_CAPABILITIES.items()} == documented


@pytest.mark.django_db
def test_capabilities_are_the_union_of_the_role_groups(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("both")
    user.groups.add(Group.objects.get(name=roles.DATA_SCIENTIST), Group.objects.get(name=roles.VIEWER))

    assert roles.capabilities(user) == roles.ROLE_CAPABILITIES[roles.VIEWER] | roles.ROLE_CAPABILITIES[
        roles.DATA_SCIENTIST]
    assert roles.role_of(user) == roles.VIEWER


@pytest.mark.django_db
def test_inactive_users_and_superusers(django_user_model):
    root = django_user_model.objects.create_superuser("root", password="x")
    gone = django_user_model.objects.create_superuser("gone", password="x", is_active=False)

    assert roles.capabilities(root) == frozenset(roles.CAPABILITIES)
    assert roles.capabilities(gone) == frozenset() and roles.role_name(gone) == "none"


def test_a_misspelt_capability_fails_loudly():
    with pytest.raises(KeyError):
        HasCapability.of("policies.veiw")
    with pytest.raises(KeyError):
        capability_required("jobs.veiw")
    with pytest.raises(KeyError):
        roles.has_capability(None, "users.mange")
