"""Kubernetes RBAC authorization as kube-apiserver's RBAC authorizer decides it (a pure function of the objects).

Given the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings stored in the sandbox, :func:`authorize` says
whether a user (name + groups) may do a verb on a resource, following upstream's rules
(``plugin/pkg/auth/authorizer/rbac``): a RoleBinding grants its Role's or ClusterRole's rules in its own namespace only;
a ClusterRoleBinding grants a ClusterRole everywhere; ``*`` matches any verb, group or resource; ``*/sub`` matches a
subresource of any resource; ``resourceNames`` restricts to named objects; service accounts are the user
``system:serviceaccount:NS:NAME`` in the groups ``system:serviceaccounts`` and ``system:serviceaccounts:NS``; every
authenticated user is in ``system:authenticated``. ClusterRoles with an ``aggregationRule`` take the rules of every
ClusterRole whose labels match one of its selectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class Attributes:
    """One request to authorize: who, which verb, on what."""

    user: str
    groups: tuple[str, ...] = ()
    verb: str = "get"
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    non_resource_path: str = ""


@dataclass(frozen=True)
class Decision:
    """The answer: allowed or not, and why (the binding and role that allowed it, or "no RBAC rule matched")."""

    allowed: bool
    reason: str


@dataclass
class Policy:
    """The RBAC objects of a cluster, indexed for :func:`authorize`."""

    roles: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (namespace, name) -> Role
    cluster_roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    role_bindings: list[dict[str, Any]] = field(default_factory=list)
    cluster_role_bindings: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> Policy:
        """Return the policy made of ``objects`` (any mix of the four RBAC kinds; other kinds are ignored)."""
        policy = cls()
        for obj in objects:
            kind, meta = obj.get("kind"), obj.get("metadata") or {}
            if kind == "Role":
                policy.roles[(meta.get("namespace", ""), meta.get("name", ""))] = dict(obj)
            elif kind == "ClusterRole":
                policy.cluster_roles[meta.get("name", "")] = dict(obj)
            elif kind == "RoleBinding":
                policy.role_bindings.append(dict(obj))
            elif kind == "ClusterRoleBinding":
                policy.cluster_role_bindings.append(dict(obj))
        return policy

    def cluster_role_rules(self, name: str) -> list[dict[str, Any]]:
        """Return the rules of ClusterRole ``name``, aggregated ones included ([] when it does not exist)."""
        role = self.cluster_roles.get(name)
        if role is None:
            return []
        aggregation = role.get("aggregationRule") or {}
        selectors = aggregation.get("clusterRoleSelectors") or []
        if not selectors:
            return list(role.get("rules") or [])
        rules: list[dict[str, Any]] = []
        for other_name, other in sorted(self.cluster_roles.items()):
            if other_name == name:
                continue
            labels = (other.get("metadata") or {}).get("labels") or {}
            if any(_selector_matches(selector, labels) for selector in selectors):
                rules.extend(other.get("rules") or [])
        return rules


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if ((operator == "In" and labels.get(key) not in values)
                or (operator == "NotIn" and present and labels[key] in values)
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present)):
            return False
    return bool(selector.get("matchLabels") or selector.get("matchExpressions"))


def _subject_matches(subject: Mapping[str, Any], binding_namespace: str, user: str, groups: tuple[str, ...]) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user == f"system:serviceaccount:{namespace}:{name}"
    return False


def _resource_matches(rule_resources: list[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for rule_resource in rule_resources:
        if rule_resource in ("*", combined):
            return True
        if subresource and rule_resource == f"*/{subresource}":
            return True
    return False


def _non_resource_matches(rule_urls: list[str], path: str) -> bool:
    return any(url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])) for url in rule_urls)


def rule_allows(rule: Mapping[str, Any], attributes: Attributes) -> bool:
    """Return whether one PolicyRule allows ``attributes``."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attributes.verb not in verbs:
        return False
    if attributes.non_resource_path:
        return _non_resource_matches(rule.get("nonResourceURLs") or [], attributes.non_resource_path)
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attributes.group not in groups:
        return False
    if not _resource_matches(rule.get("resources") or [], attributes.resource, attributes.subresource):
        return False
    names = rule.get("resourceNames") or []
    return not names or attributes.name in names


def _with_implicit_groups(attributes: Attributes) -> tuple[str, ...]:
    groups = set(attributes.groups) | {AUTHENTICATED}
    if attributes.user.startswith("system:serviceaccount:"):
        namespace = attributes.user.split(":")[2]
        groups |= {"system:serviceaccounts", f"system:serviceaccounts:{namespace}"}
    return tuple(sorted(groups))


def authorize(policy: Policy, attributes: Attributes) -> Decision:
    """Return whether RBAC allows ``attributes`` under ``policy``, with the reason kube-apiserver would give."""
    groups = _with_implicit_groups(attributes)
    for binding in policy.cluster_role_bindings:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") != "ClusterRole":
            continue
        if not any(_subject_matches(s, "", attributes.user, groups) for s in binding.get("subjects") or []):
            continue
        if any(rule_allows(rule, attributes) for rule in policy.cluster_role_rules(ref.get("name", ""))):
            name = (binding.get("metadata") or {}).get("name", "")
            return Decision(True, f'RBAC: allowed by ClusterRoleBinding "{name}" of ClusterRole "{ref.get("name")}" '
                                  f'to {_who(attributes)}')
    if attributes.namespace and not attributes.non_resource_path:
        for binding in policy.role_bindings:
            meta = binding.get("metadata") or {}
            if meta.get("namespace", "") != attributes.namespace:
                continue
            if not any(_subject_matches(s, attributes.namespace, attributes.user, groups)
                       for s in binding.get("subjects") or []):
                continue
            ref = binding.get("roleRef") or {}
            if ref.get("kind") == "ClusterRole":
                rules = policy.cluster_role_rules(ref.get("name", ""))
            elif ref.get("kind") == "Role":
                rules = list((policy.roles.get((attributes.namespace, ref.get("name", ""))) or {}).get("rules") or [])
            else:
                rules = []
            if any(rule_allows(rule, attributes) for rule in rules):
                return Decision(True, f'RBAC: allowed by RoleBinding "{meta.get("name")}/{attributes.namespace}" of '
                                      f'{ref.get("kind")} "{ref.get("name")}" to {_who(attributes)}')
    return Decision(False, "")


def _who(attributes: Attributes) -> str:
    if attributes.user.startswith("system:serviceaccount:"):
        _, _, namespace, name = attributes.user.split(":", 3)
        return f'ServiceAccount "{name}/{namespace}"'
    return f'User "{attributes.user}"'
