"""Portal roles and what each may do: the one role → capability table.

Roles are Django groups (``platform-admin``, ``viewer``, ``data-scientist``); a user in none of them has the role
"none" and may do nothing. A user's capabilities are the union of the capabilities of the role groups they are in;
superusers hold every capability. Inactive and anonymous users hold none.

Everything that decides who may do what reads this table: the view mixin and decorator and the DRF permission class
(``trainer_portal.permissions``), the navigation and templates (``caps`` from ``trainer_portal.context_processors``),
and the job selectors (``JOBS_ALL_NAMESPACES``). ``tests/test_route_permissions.py`` checks every route against it.
"""

from __future__ import annotations

PLATFORM_ADMIN = "platform-admin"
VIEWER = "viewer"
DATA_SCIENTIST = "data-scientist"
NONE = "none"
# The role groups, strongest first (a user's role label is the strongest group they are in).
ROLE_GROUPS = (PLATFORM_ADMIN, VIEWER, DATA_SCIENTIST)
ALL_ROLES = ROLE_GROUPS  # kept for callers of the first release's name
ROLE_LABELS = {PLATFORM_ADMIN: "platform admin", VIEWER: "viewer", DATA_SCIENTIST: "data scientist", NONE: "none"}

# -- capabilities ---------------------------------------------------------------------------------------------------
POLICIES_VIEW = "policies.view"  # read policies, revisions, diffs, exports, sync status and drift
POLICIES_EDIT = "policies.edit"  # create, edit, import, roll back, delete policies
POLICIES_SYNC = "policies.sync"  # apply to / delete from clusters, adopt, re-apply, check drift
PREVIEW_RUN = "preview.run"  # run placement previews and validation (nothing is saved)
CLUSTER_VIEW = "cluster.view"  # the cluster page and its status API
CLUSTER_MANAGE = "cluster.manage"  # add, change and remove clusters
JOBS_VIEW = "jobs.view"  # TrainJob pages and API (only granted namespaces without JOBS_ALL_NAMESPACES)
JOBS_ALL_NAMESPACES = "jobs.all_namespaces"  # the TrainJobs of every namespace
GRANTS_MANAGE = "grants.manage"  # namespace grants
USERS_MANAGE = "users.manage"  # local users, their roles and groups
TOKENS_OWN = "tokens.own"  # list, mint and revoke one's own API tokens
API_DOCS = "api.docs"  # the OpenAPI schema and the API doc pages
NOTIFICATIONS_OWN = "notifications.own"  # one's own channels, subscriptions to jobs one may see, delivery logs
NOTIFICATIONS_PLATFORM = "notifications.platform"  # subscribe to sync failed, drift, watcher stale, unreachable

CAPABILITIES = (POLICIES_VIEW, POLICIES_EDIT, POLICIES_SYNC, PREVIEW_RUN, CLUSTER_VIEW, CLUSTER_MANAGE, JOBS_VIEW,
                JOBS_ALL_NAMESPACES, GRANTS_MANAGE, USERS_MANAGE, TOKENS_OWN, API_DOCS, NOTIFICATIONS_OWN,
                NOTIFICATIONS_PLATFORM)

_READER = frozenset({POLICIES_VIEW, PREVIEW_RUN, CLUSTER_VIEW, JOBS_VIEW, JOBS_ALL_NAMESPACES, TOKENS_OWN, API_DOCS,
                     NOTIFICATIONS_OWN})

# THE table. Change what a role may do here and nowhere else.
ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    PLATFORM_ADMIN: frozenset(CAPABILITIES),
    VIEWER: _READER,
    DATA_SCIENTIST: frozenset({JOBS_VIEW, TOKENS_OWN, API_DOCS, NOTIFICATIONS_OWN}),
    NONE: frozenset(),
}

# What a refusal says, per capability (the 403 page and the API's error message).
DENIED = {
    POLICIES_VIEW: "Your role may not see policies: reading them needs the viewer or platform-admin role.",
    POLICIES_EDIT: "Only platform admins may change policies; your role is read-only.",
    POLICIES_SYNC: "Only platform admins may change what is on the cluster.",
    PREVIEW_RUN: "Previews need the viewer or platform-admin role.",
    CLUSTER_VIEW: "The cluster pages need the viewer or platform-admin role.",
    CLUSTER_MANAGE: "Only platform admins may manage clusters.",
    JOBS_VIEW: "You need the viewer, platform-admin or data-scientist role to see TrainJobs.",
    JOBS_ALL_NAMESPACES: "Only viewers and platform admins see every namespace.",
    GRANTS_MANAGE: "Only platform admins may manage namespace grants.",
    USERS_MANAGE: "Only platform admins may manage users.",
    TOKENS_OWN: "API tokens need a portal role; ask a platform admin for one.",
    API_DOCS: "The API docs need a portal role; ask a platform admin for one.",
    NOTIFICATIONS_OWN: "Notifications need a portal role; ask a platform admin for one.",
    NOTIFICATIONS_PLATFORM: "Only platform admins may subscribe to sync, drift and cluster health events.",
}


def _group_names(user) -> frozenset[str]:
    # Cached on the user object: a page checks capabilities several times per request.
    cached = getattr(user, "_portal_group_names", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._portal_group_names = cached
    return cached


def capabilities(user) -> frozenset[str]:
    """Return the capabilities ``user`` holds now (empty for anonymous, inactive or role-less users; all of them
    for superusers)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return ROLE_CAPABILITIES[PLATFORM_ADMIN]
    cached = getattr(user, "_portal_capabilities", None)
    if cached is None:
        groups = _group_names(user)
        cached = frozenset().union(*(ROLE_CAPABILITIES[role] for role in ROLE_GROUPS if role in groups))
        user._portal_capabilities = cached
    return cached


def has_capability(user, capability: str) -> bool:
    """Return True when ``user`` holds ``capability``. Raises KeyError for a name that is not in the table (a typo
    must fail loudly, not deny silently)."""
    if capability not in CAPABILITIES:
        raise KeyError(f"unknown capability {capability!r}")
    return capability in capabilities(user)


def role_of(user) -> str:
    """Return the strongest role group ``user`` is in (``PLATFORM_ADMIN`` for superusers), or ``NONE``."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return NONE
    if user.is_superuser:
        return PLATFORM_ADMIN
    groups = _group_names(user)
    return next((role for role in ROLE_GROUPS if role in groups), NONE)


def role_name(user) -> str:
    """Return a human label for the strongest role of ``user`` ("superuser", "platform admin", "viewer",
    "data scientist", "none")."""
    if getattr(user, "is_superuser", False) and user.is_active:
        return "superuser"
    return ROLE_LABELS[role_of(user)]


# -- shorthands over the table (kept for callers; each is one capability) ------------------------------------------


def is_platform_admin(user) -> bool:
    """Return True when ``user`` may change policies (``POLICIES_EDIT``: superuser or ``platform-admin``)."""
    return has_capability(user, POLICIES_EDIT)


def is_viewer(user) -> bool:
    """Return True when ``user`` may read policies (``POLICIES_VIEW``: viewers, platform admins, superusers)."""
    return has_capability(user, POLICIES_VIEW)


def is_data_scientist(user) -> bool:
    """Return True when ``user`` is an active member of ``data-scientist``."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return DATA_SCIENTIST in _group_names(user)


def can_see_trainjobs(user) -> bool:
    """Return True when ``user`` may open TrainJob pages at all (``JOBS_VIEW``)."""
    return has_capability(user, JOBS_VIEW)
