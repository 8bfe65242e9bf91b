"""Name formats of the Kubernetes API (RFC 1123 labels and subdomains, qualified names) and their error texts."""

from __future__ import annotations

import re

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

DNS_LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                     "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                         "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                         "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUALIFIED_NAME_MESSAGE = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                          "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                          "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                          "prefix and '/' (e.g. 'example.com/MyName')")


def is_dns_label(value: object) -> bool:
    """Returns whether value is an RFC 1123 label (at most 63 characters)."""
    return isinstance(value, str) and len(value) <= 63 and DNS_LABEL.match(value) is not None


def is_dns_subdomain(value: object) -> bool:
    """Returns whether value is an RFC 1123 subdomain (at most 253 characters)."""
    return isinstance(value, str) and len(value) <= 253 and DNS_SUBDOMAIN.match(value) is not None


def is_qualified_name(value: object) -> bool:
    """Returns whether value is a qualified name such as a label key (`[prefix/]name`)."""
    if not isinstance(value, str):
        return False
    prefix, _, name = value.rpartition("/")
    return (bool(name) and len(name) <= 63 and LABEL_NAME.match(name) is not None
            and (not prefix or is_dns_subdomain(prefix)))
