"""The gateway: the only module that imports the ``kubernetes`` client.

It speaks plain JSON dicts in and out. Every call has a timeout; every failure leaves as a
:mod:`trainer_portal.kube.errors` exception (``ApiException`` and urllib3 errors never escape). Custom resources
are written with server-side apply only (never strategic merge, which custom resources do not support), always
under one stable field manager (``trainer-portal`` unless settings say otherwise). Versions are decided by
discovery (:meth:`Gateway.resolve`); the discovery answers are cached per gateway instance.

The typed API classes of the client are deliberately not used: their generated models round-trip custom
resources badly, and we need exact control of content types. We use the client's configuration loading
(kubeconfig, exec plugins, in-cluster tokens), its authentication and its connection pool.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import urllib3
import yaml
from django.core.signals import setting_changed
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException, OpenApiException
from kubernetes.config.config_exception import ConfigException

from .config import SECRET_KEYS_TRIED, ClusterConnection, ConnectionKind, KubeSettings, load_settings, settings_for
from .errors import KubeError, KubeExpired, KubeNotConfigured, KubeNotFound, KubeUnavailable, error_from_status
from .resources import SELF_SUBJECT_ACCESS_REVIEW, SUBJECT_ACCESS_REVIEW, Resource, ResourceKind

logger = logging.getLogger(__name__)

JSON = "application/json"
APPLY_PATCH = "application/apply-patch+yaml"  # JSON is valid YAML: the body is sent as JSON.
MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE_SIZE = 500
# Extra seconds the client waits beyond the server-side watch timeout before declaring the stream dead.
WATCH_READ_GRACE_SECONDS = 15


@dataclass
class ObjectList:
    """The result of a (fully paginated) list: ``items`` and the list's ``resource_version`` to watch from."""

    items: list[dict]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the decoded object."""

    type: str
    object: dict

    @property
    def resource_version(self) -> str:
        """Return the object's ``metadata.resourceVersion`` ('' when absent)."""
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True)
class AccessReview:
    """A SelfSubjectAccessReview answer for one verb on one resource."""

    verb: str
    resource: str  # plural.group as RBAC names it
    allowed: bool
    reason: str = ""
    error: str = ""  # set when the review itself failed (then ``allowed`` is False and unknown)


@dataclass
class Gateway:
    """A connection to one cluster. Build it with :func:`get_gateway`; methods are keyword-only after the resource.

    Attributes: ``settings`` (the :class:`KubeSettings` it was built from), ``host`` (API server URL).
    """

    api_client: Any = field(repr=False)
    settings: KubeSettings
    host: str
    _discovery: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- low level ---------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON body (None for an empty body).

        Raises a :class:`KubeError` subclass for any non-2xx answer, timeout or connection failure.
        """
        response = self._send(method, path, query=query, body=body, content_type=content_type, timeout=timeout)
        try:
            raw = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _transport_error(exc, method, path) from None
        finally:
            response.response.release_conn()
        status = response.status
        decoded = _decode(raw)
        if not 200 <= status <= 299:
            raise error_from_status(
                status, decoded, fallback=_text(raw) or str(response.reason or ""), retry_after=_retry_after(response)
            )
        return decoded

    def _send(self, method, path, *, query, body, content_type, timeout, stream_timeout=None):
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            serialized = self.api_client.param_serialize(
                method,
                path,
                query_params=[(k, v) for k, v in (query or []) if v is not None],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            return self.api_client.call_api(
                *serialized, _request_timeout=stream_timeout or timeout or self.settings.request_timeout
            )
        except ApiException as exc:  # raised by the client for TLS failures (status 0) and a few others
            if exc.status:
                raise error_from_status(int(exc.status), _decode(exc.body), fallback=str(exc.reason)) from None
            raise KubeUnavailable(f"{method} {path}: {exc.reason or exc}", status=None) from None
        except OpenApiException as exc:
            raise KubeError(f"{method} {path}: the client refused the request: {exc}", permanent=True) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _transport_error(exc, method, path) from None

    # --- discovery ---------------------------------------------------------------------------------------

    def server_version(self) -> dict:
        """Return the ``/version`` answer (``gitVersion``, ``major``, ``minor``, …)."""
        return self.request("GET", "/version") or {}

    def served_versions(self, group: str) -> list[str]:
        """Return the versions the cluster serves for API ``group`` (preferred first); [] if the group is absent."""
        if not group:
            return ["v1"]
        info = self._discover(f"/apis/{group}")
        if not info:
            return []
        versions = [v["version"] for v in info.get("versions") or [] if v.get("version")]
        preferred = (info.get("preferredVersion") or {}).get("version")
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        return versions

    def api_resources(self, group: str, version: str) -> list[dict]:
        """Return the ``resources`` list of ``/apis/{group}/{version}`` ([] when that group/version is not served)."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        info = self._discover(path)
        return list((info or {}).get("resources") or [])

    def resolve(self, kind: ResourceKind) -> Resource:
        """Return ``kind`` at the most preferred of its versions that the cluster serves, confirmed by discovery.

        Raises KubeNotFound naming the served versions when none of ours is served.
        """
        served = self.served_versions(kind.group)
        for version in kind.versions:
            if version not in served:
                continue
            for entry in self.api_resources(kind.group, version):
                if entry.get("name") == kind.plural:
                    return Resource(kind.group, version, kind.kind, kind.plural, bool(entry.get("namespaced")))
        where = ", ".join(f"{kind.group}/{v}" for v in served) or "nothing"
        raise KubeNotFound(
            f"The cluster does not serve {kind.kind} ({kind.label}) at {' or '.join(kind.versions)}; "
            f"group {kind.group or 'core'} serves {where}.",
            status=404,
            reason="NotFound",
        )

    def forget_discovery(self) -> None:
        """Drop cached discovery answers (after installing a CRD, say)."""
        with self._lock:
            self._discovery.clear()

    def _discover(self, path: str) -> dict | None:
        with self._lock:
            if path in self._discovery:
                return self._discovery[path]
        try:
            info = self.request("GET", path)
        except KubeNotFound:
            info = None
        with self._lock:
            self._discovery[path] = info
        return info

    # --- objects ---------------------------------------------------------------------------------------

    def get(self, resource: Resource, *, name: str, namespace: str | None = None) -> dict | None:
        """Return the live object, or None when it does not exist."""
        try:
            return self.request("GET", resource.path(namespace=namespace, name=name))
        except KubeNotFound:
            return None

    def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = LIST_PAGE_SIZE,
    ) -> ObjectList:
        """Return every object (following ``continue`` tokens) and the list's resourceVersion.

        Raises KubeExpired when the list snapshot expired between pages; the caller relists.
        """
        items: list[dict] = []
        token: str | None = None
        resource_version = ""
        path = resource.path(namespace=namespace)
        while True:
            page = self.request(
                "GET",
                path,
                query=[
                    ("labelSelector", label_selector),
                    ("fieldSelector", field_selector),
                    ("limit", page_size),
                    ("continue", token),
                ],
            ) or {}
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            resource_version = str(metadata.get("resourceVersion") or resource_version)
            token = metadata.get("continue") or None
            if not token:
                return ObjectList(items=items, resource_version=resource_version)

    def apply(self, resource: Resource, *, body: dict, force: bool = False, dry_run: bool = False) -> dict:
        """Server-side apply ``body`` (a full manifest with apiVersion/kind/metadata.name) and return the result.

        ``force`` takes ownership of fields another manager owns; ``dry_run`` validates and defaults without
        persisting. Raises KubeInvalid (field causes), KubeConflict (``managers`` set), KubeForbidden, ….
        """
        metadata = body.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            raise KubeError("Cannot apply an object without metadata.name.", permanent=True)
        query: list[tuple[str, Any]] = [("fieldManager", self.settings.field_manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        query.append(("fieldValidation", "Strict"))
        return self.request(
            "PATCH",
            resource.path(namespace=metadata.get("namespace"), name=name),
            query=query,
            body=body,
            content_type=APPLY_PATCH,
        )

    def merge_patch(
        self, resource: Resource, *, name: str, patch: dict, namespace: str | None = None, dry_run: bool = False
    ) -> dict:
        """Apply a JSON merge patch (RFC 7386; ``None`` deletes a key) and return the result.

        Used only to delete fields that server-side apply cannot remove (fields other managers own alone).
        """
        query: list[tuple[str, Any]] = [("fieldManager", self.settings.field_manager)]
        if dry_run:
            query.append(("dryRun", "All"))
        return self.request(
            "PATCH", resource.path(namespace=namespace, name=name), query=query, body=patch, content_type=MERGE_PATCH
        )

    def create(self, resource: Resource, *, body: dict, dry_run: bool = False) -> dict:
        """Create ``body`` and return the stored object. Raises KubeConflict (409 AlreadyExists), KubeInvalid, …."""
        namespace = (body.get("metadata") or {}).get("namespace")
        query: list[tuple[str, Any]] = [("fieldManager", self.settings.field_manager)]
        if dry_run:
            query.append(("dryRun", "All"))
        return self.request("POST", resource.path(namespace=namespace), query=query, body=body)

    def delete(
        self, resource: Resource, *, name: str, namespace: str | None = None, dry_run: bool = False
    ) -> dict | None:
        """Delete the object and return the server's answer, or None when it was already gone."""
        query = [("dryRun", "All")] if dry_run else []
        try:
            return self.request("DELETE", resource.path(namespace=namespace, name=name), query=query)
        except KubeNotFound:
            return None

    # --- authorization -----------------------------------------------------------------------------------

    def access_review(self, *, verb: str, kind: ResourceKind, namespace: str | None = None) -> AccessReview:
        """Return whether our credentials may ``verb`` the resource ``kind``, via a SelfSubjectAccessReview.

        Never raises for a failed review: the failure is returned in ``error``.
        """
        attributes = {"verb": verb, "group": kind.group, "resource": kind.plural}
        if namespace:
            attributes["namespace"] = namespace
        body = {
            "apiVersion": SELF_SUBJECT_ACCESS_REVIEW.api_version,
            "kind": SELF_SUBJECT_ACCESS_REVIEW.kind,
            "spec": {"resourceAttributes": attributes},
        }
        try:
            answer = self.request("POST", SELF_SUBJECT_ACCESS_REVIEW.path(), body=body) or {}
        except KubeError as exc:
            return AccessReview(verb, kind.label, False, error=exc.message)
        status = answer.get("status") or {}
        return AccessReview(
            verb,
            kind.label,
            bool(status.get("allowed")) and not status.get("denied"),
            reason=str(status.get("reason") or status.get("evaluationError") or ""),
        )

    def subject_access_review(self, *, user: str, groups: list[str], verb: str, kind: ResourceKind,
                              namespace: str | None = None) -> AccessReview:
        """Return whether ``user`` (with ``groups``) may ``verb`` the resource ``kind``, via a SubjectAccessReview
        (what the cluster's authorizers, RBAC included, decide for that identity).

        Raises KubeError when the review cannot be made (unreachable, forbidden): unlike `access_review`, a caller
        deciding what a person may see must not take a failed review for a "no".
        """
        attributes = {"verb": verb, "group": kind.group, "resource": kind.plural}
        if namespace:
            attributes["namespace"] = namespace
        body = {
            "apiVersion": SUBJECT_ACCESS_REVIEW.api_version,
            "kind": SUBJECT_ACCESS_REVIEW.kind,
            "spec": {"resourceAttributes": attributes, "user": user, "groups": list(groups)},
        }
        answer = self.request("POST", SUBJECT_ACCESS_REVIEW.path(), body=body) or {}
        status = answer.get("status") or {}
        return AccessReview(verb, kind.label, bool(status.get("allowed")) and not status.get("denied"),
                            reason=str(status.get("reason") or status.get("evaluationError") or ""))

    # --- watch -------------------------------------------------------------------------------------------

    def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> Iterator[WatchEvent]:
        """Yield watch events from ``resource_version`` until the server ends the stream (``timeout_seconds``).

        Raises KubeExpired when the server answers 410 (in the status line or as an ERROR event), KubeUnavailable
        when the stream is cut or stalls longer than ``read_timeout`` (default: ``timeout_seconds`` plus a grace
        period) without a byte.
        Use :class:`trainer_portal.kube.watch.Watcher` for list-then-watch with resume and relist.
        """
        path = resource.path(namespace=namespace)
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version or None),
            ("allowWatchBookmarks", "true" if allow_bookmarks else None),
            ("timeoutSeconds", int(timeout_seconds)),
            ("labelSelector", label_selector),
        ]
        connect, _ = self.settings.request_timeout
        response = self._send(
            "GET",
            path,
            query=query,
            body=None,
            content_type=JSON,
            timeout=None,
            stream_timeout=(connect, read_timeout or timeout_seconds + WATCH_READ_GRACE_SECONDS),
        )
        raw = response.response
        try:
            if not 200 <= response.status <= 299:
                data = raw.read()
                raise error_from_status(response.status, _decode(data), fallback=_text(data))
            for line in _iter_lines(raw, path):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    raise KubeUnavailable(f"watch {path}: undecodable event {line[:200]!r}") from None
                kind = str(event.get("type") or "")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 500)
                    raise error_from_status(code, obj)
                yield WatchEvent(kind, obj)
        finally:
            raw.release_conn() if raw.isclosed() else raw.close()


def _iter_lines(raw, path: str) -> Iterator[bytes]:
    """Yield newline-delimited lines from a streaming urllib3 response; transport errors become KubeUnavailable."""
    buffer = b""
    try:
        # Chunked streams yield one chunk per event batch; close-delimited ones are read as data arrives.
        chunks = raw.read_chunked(decode_content=True) if raw.chunked else iter(lambda: raw.read1(65536), b"")
        for chunk in chunks:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield line
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
        raise _transport_error(exc, "watch", path) from None
    if buffer.strip():
        yield buffer


def _transport_error(exc: BaseException, method: str, path: str) -> KubeUnavailable:
    if isinstance(exc, (urllib3.exceptions.TimeoutError, TimeoutError)):
        what = "timed out"
    elif isinstance(exc, (urllib3.exceptions.ProtocolError, ConnectionError)):
        what = "connection lost"
    else:
        what = "connection failed"
    return KubeUnavailable(f"{method} {path}: {what} ({type(exc).__name__}: {exc})", status=None)


def _decode(raw: bytes | str | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _text(raw: bytes | None) -> str:
    if not raw:
        return ""
    return raw[:500].decode("utf-8", "replace").strip()


def _retry_after(response) -> float | None:
    value = response.headers.get("Retry-After") if response.headers else None
    try:
        return float(value) if value else None
    except ValueError:
        return None


# --- building and caching the gateway ----------------------------------------------------------------------

_cache: dict[Any, Gateway] = {}
_cache_lock = threading.Lock()
# Returns the default cluster's connection (None: the settings connection). Registered by the cluster app, which
# reads its rows; the gateway itself never imports a model.
_default_resolver: Callable[[], ClusterConnection | None] | None = None


def build_gateway(settings: KubeSettings) -> Gateway:
    """Return a new :class:`Gateway` for ``settings``.

    Raises KubeNotConfigured when the kubeconfig/context/in-cluster environment cannot be loaded. The message names
    where the configuration came from, never a kubeconfig's content.
    """
    configuration = k8s_client.Configuration()
    try:
        if settings.in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)
        elif settings.config_text:
            k8s_config.load_kube_config_from_dict(
                config_dict=_parse_kubeconfig(settings.config_text, settings.describe()),
                context=settings.context or None,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            k8s_config.load_kube_config(
                config_file=settings.config_path or None,
                context=settings.context or None,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise KubeNotConfigured(f"Cannot load the cluster configuration ({settings.describe()}): {exc}") from None
    # No silent urllib3 retries: retrying is the caller's decision (Celery backoff), and fault tests need each
    # request to reach the server exactly once.
    configuration.retries = False
    api_client = k8s_client.ApiClient(configuration)
    api_client.user_agent = "trainer-portal"
    return Gateway(api_client=api_client, settings=settings, host=str(configuration.host))


def _parse_kubeconfig(text: str, where: str) -> dict:
    """Return the kubeconfig ``text`` as a dict. Raises KubeNotConfigured (without quoting the text: YAML errors
    show the lines around the fault, and those may hold a token)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        at = f" (line {line + 1})" if line is not None else ""
        raise KubeNotConfigured(f"Cannot load the cluster configuration ({where}): the kubeconfig is not valid "
                                f"YAML{at}") from None
    if not isinstance(document, dict) or not document.get("clusters"):
        raise KubeNotConfigured(f"Cannot load the cluster configuration ({where}): the kubeconfig has no clusters")
    return document


def set_default_connection_resolver(resolver: Callable[[], ClusterConnection | None] | None) -> None:
    """Make :func:`get_gateway` ask ``resolver`` which connection the default cluster uses (None: the settings)."""
    global _default_resolver
    _default_resolver = resolver
    reset_gateway()


def get_gateway() -> Gateway:
    """Return the gateway of the default cluster, building it on first use.

    The default cluster connects through the process's settings unless its row says otherwise (the resolver the
    cluster app registers); without a database at hand this is the settings connection. The cache is per process
    (a Celery prefork child never reuses its parent's sockets) and is dropped when a ``KUBE_*`` setting changes.
    Raises KubeNotConfigured (and KubeError when a Secret holding the kubeconfig cannot be read).
    """
    connection = _default_resolver() if _default_resolver is not None else None
    if connection is not None and connection.kind != ConnectionKind.SETTINGS:
        return gateway_for(connection)
    return _settings_gateway()


def _settings_gateway() -> Gateway:
    """Return the cached gateway of the process's KUBE_* settings."""
    settings = load_settings()
    key = ("settings", os.getpid(), repr(settings))
    with _cache_lock:
        gateway = _cache.get(key)
        if gateway is None:
            for old in [k for k in _cache if k[0] == "settings"]:
                del _cache[old]
            gateway = build_gateway(settings)
            _cache[key] = gateway
        return gateway


def gateway_for(connection: ClusterConnection) -> Gateway:
    """Return the gateway of one cluster, cached per process by (cluster name, version) and the KUBE_* settings.

    ``settings`` connections are the process's settings; ``kubeconfig`` ones load the decrypted text in memory
    (never written to disk by us); ``secret`` ones read the kubeconfig from a Kubernetes Secret through the settings
    connection (namespace-scoped ``get secrets``); ``in_cluster`` ones use the pod's service account. A new version
    of a cluster's row replaces its cached gateway.

    Raises KubeNotConfigured (missing or unusable configuration, a Secret or key that does not exist) and any
    KubeError of reading the Secret (KubeUnavailable when the settings connection's API server is unreachable).
    """
    if connection.kind == ConnectionKind.SETTINGS:
        return _settings_gateway()
    base = load_settings()
    key = ("cluster", os.getpid(), connection.cache_key(), repr(base))
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    text = _secret_kubeconfig(connection) if connection.kind == ConnectionKind.SECRET else ""
    try:
        settings = settings_for(connection, base, kubeconfig_text=text)
    except ValueError as exc:
        raise KubeNotConfigured(str(exc)) from None
    gateway = build_gateway(settings)
    with _cache_lock:
        for old in [k for k in _cache if k[0] == "cluster" and k[2][0] == connection.name]:
            del _cache[old]
        _cache[key] = gateway
    return gateway


def _secret_kubeconfig(connection: ClusterConnection) -> str:
    """Return the kubeconfig text held in the Secret of ``connection``, read through the settings connection.

    Raises KubeNotConfigured when the Secret or its key does not exist or is not text, KubeError otherwise.
    """
    where = f"Secret {connection.secret_namespace}/{connection.secret_name}"
    path = f"/api/v1/namespaces/{connection.secret_namespace}/secrets/{connection.secret_name}"
    try:
        secret = _settings_gateway().request("GET", path) or {}
    except KubeNotFound:
        raise KubeNotConfigured(f'cluster "{connection.name}": the {where} does not exist') from None
    data = secret.get("data") or {}
    keys = [connection.secret_key] if connection.secret_key else [k for k in SECRET_KEYS_TRIED if k in data]
    if not keys or keys[0] not in data:
        wanted = connection.secret_key or " or ".join(SECRET_KEYS_TRIED)
        raise KubeNotConfigured(f'cluster "{connection.name}": the {where} has no key {wanted}')
    try:
        return base64.b64decode(data[keys[0]], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise KubeNotConfigured(f'cluster "{connection.name}": key {keys[0]} of the {where} is not a kubeconfig '
                                "(not base64-encoded UTF-8 text)") from None


def reset_gateway() -> None:
    """Forget every cached gateway (and its discovery cache)."""
    with _cache_lock:
        _cache.clear()


def _on_setting_changed(*, setting: str, **kwargs) -> None:
    if setting.startswith("KUBE_"):
        reset_gateway()


setting_changed.connect(_on_setting_changed, dispatch_uid="trainer_portal.kube.reset_gateway")

__all__ = [
    "AccessReview",
    "Gateway",
    "KubeExpired",
    "ObjectList",
    "WatchEvent",
    "build_gateway",
    "gateway_for",
    "get_gateway",
    "reset_gateway",
    "set_default_connection_resolver",
]
