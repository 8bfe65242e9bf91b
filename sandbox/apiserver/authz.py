"""Who is asking and what they may do: the sandbox's authenticator and its authorizer.

The sandbox accepts any bearer token (its kubeconfig carries `sandbox-token`); every caller is the cluster admin
`sandbox`, member of `system:masters`, as a kind/minikube kubeconfig user is. `authorize` first applies the denials
tests register through `/sandbox/rbac`, then `RULES` (members of `system:masters` may do everything, as upstream,
where that group bypasses RBAC), then Kubernetes RBAC over the stored Roles, ClusterRoles and bindings
(`sandbox.apiserver.rbac`): a SubjectAccessReview for another user (the portal asking "may this person list
TrainJobs in team-a?") is decided by the RBAC objects alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sandbox.apiserver import rbac


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


def authorize(user: User, attributes: dict[str, Any], denied: set[tuple[str, str, str]],
              policy: rbac.Policy | None = None) -> tuple[bool, str]:
    """Returns (allowed, reason) for a review's `resourceAttributes` or `nonResourceAttributes`.

    `policy` is the cluster's RBAC objects; without it only the rule table decides.
    """
    verb = str(attributes.get("verb", ""))
    group = str(attributes.get("group", ""))
    resource = str(attributes.get("resource", "") or attributes.get("path", ""))
    if (verb, group, resource) in denied:
        qualified = f"{resource}.{group}" if group else resource
        return False, f"sandbox: {verb} on {qualified} denied by /sandbox/rbac"
    for rule in RULES:
        if rule.matches(user, verb, group, resource):
            return rule.allow, rule.reason
    if policy is not None:
        decision = rbac.authorize(policy, rbac.Attributes(
            user=user.name, groups=user.groups, verb=verb, group=group,
            resource=str(attributes.get("resource", "")), subresource=str(attributes.get("subresource", "")),
            namespace=str(attributes.get("namespace", "")), name=str(attributes.get("name", "")),
            non_resource_path=str(attributes.get("path", "")) if "path" in attributes else ""))
        if decision.allowed:
            return True, decision.reason
    return False, "no RBAC rule allows it"


def reviewed_user(spec: dict[str, Any]) -> User:
    """Returns the user a SubjectAccessReview asks about (`spec.user`, `spec.groups`, `spec.uid`).

    Raises ValueError when the spec names neither a user nor a group (kube-apiserver: "at least one of user or group
    must be specified").
    """
    name = spec.get("user") if isinstance(spec.get("user"), str) else ""
    groups = spec.get("groups") if isinstance(spec.get("groups"), list) else []
    groups = tuple(g for g in groups if isinstance(g, str))
    if not name and not groups:
        raise ValueError("at least one of user or group must be specified")
    uid = spec.get("uid") if isinstance(spec.get("uid"), str) else ""
    return User(name, uid, groups)
