"""Kubernetes name syntax: DNS-1123 labels and subdomains, label keys and label values.

Each checker returns a list of human-readable problems (empty when valid), mirroring apimachinery's
`validation.IsDNS1123Subdomain`, `IsQualifiedName` and `IsValidLabelValue`.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def dns1123_label_problems(value: str) -> list[str]:
    """Return what is wrong with `value` as a DNS-1123 label (RFC 1123: ≤ 63 chars, [a-z0-9-], alnum ends)."""
    problems = []
    if len(value) > DNS1123_LABEL_MAX:
        problems.append(f"must be no more than {DNS1123_LABEL_MAX} characters (has {len(value)})")
    if not _DNS1123_LABEL.fullmatch(value):
        problems.append(
            "must consist of lower case alphanumeric characters or '-', and start and end with an alphanumeric "
            "character (e.g. 'my-name')"
        )
    return problems


def dns1123_subdomain_problems(value: str) -> list[str]:
    """Return what is wrong with `value` as a DNS-1123 subdomain (≤ 253 chars, dot-separated labels)."""
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        problems.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters (has {len(value)})")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        problems.append(
            "must consist of lower case alphanumeric characters, '-' or '.', and start and end with an "
            "alphanumeric character (e.g. 'example.com')"
        )
    return problems


def is_dns1123_subdomain(value: object) -> bool:
    """Return True when `value` is a string that is a valid DNS-1123 subdomain."""
    return isinstance(value, str) and not dns1123_subdomain_problems(value)


def label_key_problems(key: str) -> list[str]:
    """Return what is wrong with `key` as a label/annotation key (`[prefix/]name`, apimachinery IsQualifiedName)."""
    if not key:
        return ["must not be empty"]
    parts = key.split("/")
    if len(parts) > 2:
        return ["must be a name optionally prefixed by a DNS subdomain and a single '/' (e.g. 'example.com/my-key')"]
    problems = []
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must not be empty")
        else:
            problems.extend(f"prefix part {p}" for p in dns1123_subdomain_problems(prefix))
    else:
        name = parts[0]
    if not name:
        problems.append("name part must not be empty")
    else:
        if len(name) > QUALIFIED_NAME_MAX:
            problems.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters (has {len(name)})")
        if not _QUALIFIED_NAME.fullmatch(name):
            problems.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and start and end with an "
                "alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')"
            )
    return problems


def label_value_problems(value: str) -> list[str]:
    """Return what is wrong with `value` as a label value (≤ 63 chars, may be empty, alnum ends, [-_.A-Za-z0-9])."""
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(f"must be no more than {LABEL_VALUE_MAX} characters (has {len(value)})")
    if value and not _QUALIFIED_NAME.fullmatch(value):
        problems.append(
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', and start and end with an "
            "alphanumeric character (e.g. 'MyValue', 'my_value' or '12345')"
        )
    return problems
