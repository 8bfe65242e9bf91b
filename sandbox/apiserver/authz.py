"""Who is asking and what they may do: the sandbox's authenticator and a small table-driven authorizer.

The sandbox accepts any bearer token (its kubeconfig carries `sandbox-token`); every caller is the cluster admin
`sandbox`, member of `system:masters`, as a kind/minikube kubeconfig user is. `authorize` walks `RULES` (first
match wins) after the denials tests register through `/sandbox/rbac`. A fuller RBAC model replaces `RULES` with
rules read from Role/ClusterRole bindings; the review endpoints stay as they are.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class User:
    """An authenticated user as SelfSubjectReview reports it."""

    name: str
    uid: str
    groups: tuple[str, ...]

    def info(self) -> dict[str, Any]:
        """Returns the `userInfo` object of a SelfSubjectReview."""
        return {"username": self.name, "uid": self.uid, "groups": list(self.groups)}


@dataclass(frozen=True)
class Rule:
    """Allows (or denies) `verbs` on `resources` of `api_groups` to members of `subject_groups`; `*` matches all."""

    subject_groups: tuple[str, ...]
    verbs: tuple[str, ...] = ("*",)
    api_groups: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    allow: bool = True
    reason: str = ""

    def matches(self, user: User, verb: str, group: str, resource: str) -> bool:
        """Returns True when the rule applies to this user and request."""
        def has(values: tuple[str, ...], value: str) -> bool:
            return "*" in values or value in values

        return (any(g in self.subject_groups for g in user.groups) and has(self.verbs, verb)
                and has(self.api_groups, group) and has(self.resources, resource))


ADMIN = User("sandbox", "sandbox-admin", ("system:masters", "system:authenticated"))
RULES: tuple[Rule, ...] = (
    Rule(("system:masters",), reason="the sandbox user is a cluster admin (system:masters)"),
)


def authenticate(authorization: str | None) -> User:
    """Returns the user behind an `Authorization` header (every caller is the sandbox admin)."""
    token = (authorization or "").removeprefix("Bearer ").strip()
    if not token or token == "sandbox-token":
        return ADMIN
    # Any other token is accepted too; its user keeps a stable uid derived from the token.
    return User(ADMIN.name, "sandbox-" + hashlib.sha256(token.encode()).hexdigest()[:12], ADMIN.groups)


def authorize(user: User, attributes: dict[str, Any], denied: set[tuple[str, str, str]]) -> tuple[bool, str]:
    """Returns (allowed, reason) for a review's `resourceAttributes` or `nonResourceAttributes`."""
    verb = str(attributes.get("verb", ""))
    group = str(attributes.get("group", ""))
    resource = str(attributes.get("resource", "") or attributes.get("path", ""))
    if (verb, group, resource) in denied:
        qualified = f"{resource}.{group}" if group else resource
        return False, f"sandbox: {verb} on {qualified} denied by /sandbox/rbac"
    for rule in RULES:
        if rule.matches(user, verb, group, resource):
            return rule.allow, rule.reason
    return False, "no rule allows it"
