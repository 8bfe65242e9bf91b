"""Writes of the cluster registry: add, change and remove clusters (platform admins, through the API or the page).

Every input is checked here, whatever the interface; a refusal is a :class:`ClusterError` naming the field by its
API name (``kubeconfig``, ``secretRef``, …) and the fix. Rules:

- ``name`` is a DNS-1123 label and never changes (it names Leases, metric labels and URLs).
- A cluster connects one way: ``kubeconfig`` (the file's text, stored encrypted, never returned), ``inCluster``
  (the pod's service account), ``secretRef`` (``namespace/name[/key]`` of a Secret holding a kubeconfig, read
  through the default connection) or ``settings`` (the process's TRAINER_PORTAL_KUBECONFIG / _IN_CLUSTER).
- Every change bumps ``version``; a write naming another version is refused with 409 (someone changed it first).
- Exactly one cluster is the default: making one the default moves the flag; the default cannot be disabled,
  un-defaulted or deleted (409), so the last cluster never goes either.
- Deleting a cluster forgets what the portal tracked on it (its TrainJobs, transitions, tracker status, grants).

Nothing here reaches a cluster: connection health is probed in the background.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from django.db import IntegrityError, transaction
from django.db.models import F, ProtectedError, RestrictedError

from trainer_portal.errors import PortalError, field

from .connections import encrypt_kubeconfig, parse_secret_ref
from .models import CLUSTER_NAME_RE, Cluster, ConnectionKind

MAX_KUBECONFIG_BYTES = 256 * 1024
_NAME = re.compile(CLUSTER_NAME_RE)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# API name → model field, for the fields a PATCH may change.
WRITABLE = ("displayName", "connection", "inCluster", "kubeconfig", "context", "secretRef", "blockLabelKey",
            "isDefault", "enabled")
KNOWN = ("name", "version", *WRITABLE)


class ClusterError(PortalError):
    """A refused change of the cluster registry (400 unless a subclass says otherwise)."""

    code = "invalid"
    status = 400


class ClusterNotFoundError(ClusterError):
    code = "not_found"
    status = 404

    def __init__(self, name: str) -> None:
        super().__init__(f"There is no cluster {name!r}: GET /api/v1/clusters/ lists them.")


class ClusterConflict(ClusterError):
    code = "conflict"
    status = 409


def _invalid(path: str, message: str) -> ClusterError:
    return ClusterError(message, fields=[field(path, message)])


def _text(data: dict, key: str, *, limit: int, required: bool = False, multiline: bool = False) -> str | None:
    """Return the string ``data[key]`` stripped (None when absent; a ``multiline`` text keeps its lines and is not
    stripped). Raises ClusterError for a non-string, a control character or more than ``limit`` characters."""
    if key not in data or data[key] is None:
        if required:
            raise _invalid(key, f"{key} is required")
        return None
    value = data[key]
    if not isinstance(value, str):
        raise _invalid(key, f"{key} must be a string, not {type(value).__name__}")
    if multiline:
        if "\x00" in value or _CONTROL.search(value.replace("\n", "").replace("\r", "").replace("\t", "")):
            raise _invalid(key, f"{key} must not contain control characters other than line breaks and tabs")
        if len(value) > limit:
            raise _invalid(key, f"{key} is longer than {limit} characters")
        return value
    value = value.strip()
    if _CONTROL.search(value):
        raise _invalid(key, f"{key} must not contain control characters")
    if len(value) > limit:
        raise _invalid(key, f"{key} is longer than {limit} characters")
    return value


def _bool(data: dict, key: str) -> bool | None:
    if key not in data or data[key] is None:
        return None
    if not isinstance(data[key], bool):
        raise _invalid(key, f"{key} must be true or false, not {data[key]!r}"[:200])
    return data[key]


def check_kubeconfig(text: str, context: str) -> None:
    """Check that ``text`` is a kubeconfig with clusters, users and contexts, and that ``context`` (or its
    current-context, or its only context) exists. Raises ClusterError (field ``kubeconfig`` or ``context``); the
    message never quotes the text."""
    if "\x00" in text:
        raise _invalid("kubeconfig", "kubeconfig must not contain NUL characters")
    if len(text.encode("utf-8")) > MAX_KUBECONFIG_BYTES:
        raise _invalid("kubeconfig", f"kubeconfig is larger than {MAX_KUBECONFIG_BYTES // 1024} KiB")
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise _invalid("kubeconfig", f"kubeconfig is not valid YAML{where}: paste the whole file") from None
    if not isinstance(document, dict):
        raise _invalid("kubeconfig", "kubeconfig must be a YAML mapping (apiVersion: v1, kind: Config, …)")
    for section in ("clusters", "users", "contexts"):
        entries = document.get(section)
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            raise _invalid("kubeconfig", f"kubeconfig has no {section}: a kubeconfig lists clusters, users and "
                                         "contexts")
    names = [entry.get("name") for entry in document["contexts"]]
    if context:
        if context not in names:
            raise _invalid("context", f"context {context!r} is not in the kubeconfig; it has "
                                      f"{', '.join(str(n) for n in names)[:500]}")
    elif document.get("current-context") not in names and len(names) != 1:
        raise _invalid("context", "the kubeconfig has no current-context and several contexts: name one in context")


def _check_secret_ref(ref: str) -> str:
    try:
        namespace, name, key = parse_secret_ref(ref)
    except ValueError:
        raise _invalid("secretRef", "secretRef must be namespace/name or namespace/name/key of a Secret holding a "
                                    "kubeconfig") from None
    if not _NAME.match(namespace):
        raise _invalid("secretRef", f"secretRef: {namespace!r} is not a namespace name (a DNS label)")
    if not _DNS_SUBDOMAIN.match(name):
        raise _invalid("secretRef", f"secretRef: {name!r} is not a Secret name (a DNS subdomain)")
    if key and not _SECRET_KEY.match(key):
        raise _invalid("secretRef", f"secretRef: {key!r} is not a Secret key (letters, digits, '-', '_', '.')")
    return "/".join(part for part in (namespace, name, key) if part)


def _check_label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not _LABEL_NAME.match(name) or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))):
        raise _invalid("blockLabelKey", f"blockLabelKey {key!r} is not a node label key (optional DNS prefix, '/', "
                                        "then up to 63 letters, digits, '-', '_', '.')")
    return key


def _refuse_unknown(data: dict, allowed: tuple[str, ...]) -> None:
    for key in data:
        if key not in allowed:
            raise _invalid(str(key)[:100], f"unknown field {str(key)[:100]!r}; the fields are "
                                           f"{', '.join(allowed)}")


def _connection_of(data: dict, current: Cluster | None) -> tuple[str | None, dict[str, Any]]:
    """Return the connection kind the input asks for (None: unchanged) and the model fields it sets."""
    kubeconfig = _text(data, "kubeconfig", limit=MAX_KUBECONFIG_BYTES, multiline=True)
    in_cluster = _bool(data, "inCluster")
    secret_ref = _text(data, "secretRef", limit=400)
    kind = _text(data, "connection", limit=16)
    if kind is not None and kind not in ConnectionKind.values:
        raise _invalid("connection", f"connection must be one of {', '.join(ConnectionKind.values)}")
    given = [name for name, value in (("kubeconfig", kubeconfig), ("inCluster", in_cluster or None),
                                      ("secretRef", secret_ref)) if value]
    if len(given) > 1:
        raise _invalid(given[1], f"give one way to connect, not {' and '.join(given)}")
    implied = {"kubeconfig": ConnectionKind.KUBECONFIG, "inCluster": ConnectionKind.IN_CLUSTER,
               "secretRef": ConnectionKind.SECRET}.get(given[0]) if given else None
    if kind is not None and implied is not None and kind != implied:
        raise _invalid("connection", f"connection {kind!r} contradicts {given[0]}")
    kind = implied or kind
    if in_cluster is False and kind is None and current is not None and current.connection == ConnectionKind.IN_CLUSTER:
        raise _invalid("inCluster", "to stop using the service account, give kubeconfig or secretRef instead")
    if kind is None:
        if current is None:
            raise _invalid("kubeconfig", "say how to connect: kubeconfig (the file's text), inCluster: true, or "
                                         "secretRef (namespace/name of a Secret holding a kubeconfig)")
        return None, {}
    changes: dict[str, Any] = {"connection": kind}
    if kind == ConnectionKind.KUBECONFIG:
        if not kubeconfig and not (current is not None and current.connection == kind):
            raise _invalid("kubeconfig", "connection kubeconfig needs kubeconfig (the file's text)")
        changes["secret_ref"] = ""
        if kubeconfig:
            changes["kubeconfig_encrypted"] = encrypt_kubeconfig(kubeconfig)
            changes["_kubeconfig_text"] = kubeconfig
    elif kind == ConnectionKind.SECRET:
        if not secret_ref and not (current is not None and current.connection == kind):
            raise _invalid("secretRef", "connection secret needs secretRef (namespace/name[/key])")
        changes["kubeconfig_encrypted"] = ""
        if secret_ref:
            changes["secret_ref"] = _check_secret_ref(secret_ref)
    else:  # settings, in_cluster: nothing stored
        changes.update(kubeconfig_encrypted="", secret_ref="", kubeconfig_context="")
    return kind, changes


def _apply(cluster: Cluster, data: dict, *, creating: bool) -> Cluster:
    """Validate ``data`` against ``cluster`` (unsaved when ``creating``) and set its fields; return it."""
    display_name = _text(data, "displayName", limit=100)
    context = _text(data, "context", limit=253)
    block_label_key = _text(data, "blockLabelKey", limit=317)
    is_default = _bool(data, "isDefault")
    enabled = _bool(data, "enabled")
    kind, changes = _connection_of(data, None if creating else cluster)
    kubeconfig_text = changes.pop("_kubeconfig_text", None)
    for name, value in changes.items():
        setattr(cluster, name, value)
    if context is not None:
        if context and cluster.connection not in (ConnectionKind.KUBECONFIG, ConnectionKind.SECRET):
            raise _invalid("context", "context applies to a kubeconfig or secretRef connection only")
        cluster.kubeconfig_context = context
    if kubeconfig_text is not None:
        check_kubeconfig(kubeconfig_text, cluster.kubeconfig_context)
    elif context and cluster.connection == ConnectionKind.KUBECONFIG and kind is None and not creating:
        from .connections import decrypt_kubeconfig

        check_kubeconfig(decrypt_kubeconfig(cluster.kubeconfig_encrypted), context)
    if display_name is not None:
        cluster.display_name = display_name
    if block_label_key is not None:
        cluster.block_label_key = _check_label_key(block_label_key) if block_label_key else ""
    if enabled is not None:
        if not enabled and (cluster.is_default or is_default):
            raise _invalid("enabled", "the default cluster cannot be disabled: make another cluster the default "
                                      "first")
        cluster.enabled = enabled
    if is_default and not cluster.enabled:
        raise _invalid("isDefault", "a disabled cluster cannot be the default: enable it too (enabled: true)")
    if kind in (ConnectionKind.SETTINGS, ConnectionKind.IN_CLUSTER):
        twin = Cluster.objects.filter(connection=kind).exclude(pk=cluster.pk).first()
        if twin is not None:
            path = "inCluster" if kind == ConnectionKind.IN_CLUSTER else "connection"
            raise _invalid(path, f"cluster {twin.name!r} already connects this way ({kind}): the same cluster "
                                 "registered twice would be tracked twice")
    if is_default is False and cluster.is_default:
        raise _invalid("isDefault", "a cluster stops being the default only when another becomes it: set isDefault "
                                    "on that one")
    return cluster if is_default is None else _with_default_flag(cluster, is_default)


def _with_default_flag(cluster: Cluster, is_default: bool) -> Cluster:
    cluster._make_default = is_default and not cluster.is_default
    return cluster


def _save(cluster: Cluster, *, creating: bool) -> Cluster:
    make_default = getattr(cluster, "_make_default", False)
    with transaction.atomic():
        if make_default:
            # One default at a time (a partial unique index): clear the old flag first, in the same transaction.
            Cluster.objects.filter(is_default=True).exclude(pk=cluster.pk).update(is_default=False,
                                                                                  version=F("version") + 1)
            cluster.is_default = True
        if not creating:
            cluster.version += 1
        try:
            cluster.save()
        except IntegrityError:
            if creating:
                raise ClusterConflict(f"a cluster named {cluster.name!r} exists already",
                                      fields=[field("name", "this name is taken", "unique")]) from None
            raise
    return cluster


def cluster_create(data: dict) -> Cluster:
    """Add a cluster from API-shaped ``data`` (``name`` and one way to connect; see the module rules); return it.

    Raises ClusterError (400, naming the field) or ClusterConflict (409: the name is taken).
    """
    if not isinstance(data, dict):
        raise ClusterError("the body must be a JSON object")
    _refuse_unknown(data, tuple(k for k in KNOWN if k != "version"))
    name = _text(data, "name", limit=63, required=True)
    if not _NAME.match(name):
        raise _invalid("name", f"name {name[:63]!r} is not a DNS label: up to 63 lowercase letters, digits and '-', "
                               "starting and ending with a letter or digit")
    if Cluster.objects.filter(name=name).exists():
        raise ClusterConflict(f"a cluster named {name!r} exists already",
                              fields=[field("name", "this name is taken", "unique")])
    cluster = _apply(Cluster(name=name), data, creating=True)
    return _save(cluster, creating=True)


def cluster_update(name: str, data: dict, *, expected_version: int | None) -> Cluster:
    """Change cluster ``name`` from API-shaped ``data`` (only the fields given); return it with its new version.

    ``expected_version`` is the version the caller read (body ``version`` or If-Match). Raises ClusterNotFoundError
    (404), ClusterError (400: a bad field, a missing version, a renaming) or ClusterConflict (409: stale version).
    """
    if not isinstance(data, dict):
        raise ClusterError("the body must be a JSON object")
    _refuse_unknown(data, KNOWN)
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(name=name).first()
        if cluster is None:
            raise ClusterNotFoundError(name)
        if "name" in data and data["name"] != cluster.name:
            raise _invalid("name", "a cluster's name never changes (it names Leases, metrics and URLs): add a new "
                                   "cluster instead")
        _check_version(cluster, expected_version)
        _apply(cluster, data, creating=False)
        return _save(cluster, creating=False)


def _check_version(cluster: Cluster, expected_version: int | None) -> None:
    if expected_version is None:
        raise _invalid("version", f"send the version you read (version in the body or If-Match); it is "
                                  f"{cluster.version} now")
    if expected_version != cluster.version:
        raise ClusterConflict(f"cluster {cluster.name!r} changed since you read it (version {expected_version}, now "
                              f"{cluster.version}): read it again", extra={"currentVersion": cluster.version})


def cluster_delete(name: str, *, expected_version: int | None = None) -> None:
    """Remove cluster ``name`` and everything the portal tracked on it.

    Raises ClusterNotFoundError (404) and ClusterConflict (409: the default — hence also the last — cluster, a
    stale ``expected_version``, or rows elsewhere that must go first).
    """
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(name=name).first()
        if cluster is None:
            raise ClusterNotFoundError(name)
        if expected_version is not None:
            _check_version(cluster, expected_version)
        if cluster.is_default or Cluster.objects.count() <= 1:
            raise ClusterConflict(f"cluster {name!r} is the default cluster: make another cluster the default "
                                  "first (the portal always has one)")
        try:
            cluster.delete()
        except (ProtectedError, RestrictedError) as exc:
            kinds = sorted({obj._meta.verbose_name_plural for obj in exc.protected_objects}
                           if isinstance(exc, ProtectedError) else {"rows"})
            raise ClusterConflict(f"cluster {name!r} still has {', '.join(map(str, kinds))}: remove them first, or "
                                  "disable the cluster instead") from None


def default_cluster_name() -> str:
    """Return the name of a cluster made from today's settings: its kubeconfig context, else ``default``."""
    import os

    context = os.environ.get("TRAINER_PORTAL_KUBE_CONTEXT", "").strip().lower()
    name = re.sub(r"[^a-z0-9-]+", "-", context).strip("-")[:63].strip("-")
    return name or "default"


def ensure_default_cluster(*, using: str = "default", apps=None) -> bool:
    """Create the settings-connected default cluster when there is no cluster at all; return True if it did.

    Runs after every ``migrate`` (and the flush of a test database): the portal always has a default cluster, which
    ``cluster/0001`` creates and nothing may remove (the default cannot be deleted).
    """
    model = apps.get_model("cluster", "Cluster") if apps is not None else Cluster
    if model.objects.using(using).exists():
        return False
    model.objects.using(using).create(name=default_cluster_name(), connection=ConnectionKind.SETTINGS,
                                      is_default=True)
    return True
