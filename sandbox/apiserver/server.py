"""The HTTP front end: routing of Kubernetes REST paths, content negotiation, watches, admin endpoints, faults.

Built on `http.server.ThreadingHTTPServer` (one thread per connection, HTTP/1.1 keep-alive, chunked watch
streams). `make_server()` returns a ready, not yet serving, server; `serve_forever()` runs it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from sandbox.apiserver import authz, discovery, openapi, podlog, protobuf, rbac, tables, visibility
from sandbox.apiserver.errors import ApiError, bad_request
from sandbox.apiserver.options import PATCH_APPLY, WriteOptions, strip_chars
from sandbox.apiserver.registry import Registry
from sandbox.apiserver.resources import ResourceType
from sandbox.apiserver.store import Entry, Store, dumps
from sandbox.apiserver.watch import WatchRequest, parse_bool
from sandbox.container_logs import ContainerOutput, format_line
from sandbox.faults import STATUS_REASONS, Fault, Faults, FaultSpecError

log = logging.getLogger("sandbox")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HEALTH = {"/healthz", "/livez", "/readyz", "/healthz/ready"}


@dataclass
class ServerConfig:
    """Knobs of the HTTP layer."""

    kube_version: str = "1.37"
    watch_timeout: float = 1800.0
    bookmark_interval: float = 5.0
    verbose: bool = False


class SandboxServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that carries the registry, faults and config for its handlers."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], registry: Registry, config: ServerConfig) -> None:
        super().__init__(address, Handler)
        self.registry = registry
        self.faults = Faults()
        # The sandbox has no authorization; tests deny chosen (verb, group, resource) triples through
        # /sandbox/rbac so the portal's SelfSubjectAccessReview checks have something to find.
        self.denied_access: set[tuple[str, str, str]] = set()
        self.config = config
        self.stopping = threading.Event()
        self._discovery_cache: dict[str, bytes] = {}
        registry.on_types_changed.append(self._discovery_cache.clear)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def discovery_doc(self, path: str, build: Any) -> bytes:
        """Returns the cached serialized discovery document for a path (rebuilt when CRDs change)."""
        doc = self._discovery_cache.get(path)
        if doc is None:
            doc = dumps(build())
            self._discovery_cache[path] = doc
        return doc

    def shutdown_all(self) -> None:
        """Stops accepting requests and ends every watch stream."""
        self.stopping.set()
        self.registry.store.close_all_watches()
        self.shutdown()


class Handler(BaseHTTPRequestHandler):
    """One connection; dispatches each request to the registry."""

    protocol_version = "HTTP/1.1"
    server: SandboxServer
    server_version = "sandbox-apiserver"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # Two writes per response (headers, body): without TCP_NODELAY keep-alive clients wait on Nagle's delay.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._warnings: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.config.verbose:
            log.info("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing --------------------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for warning in self._warnings:
            self.send_header("Warning", warning)
        self._warnings = []
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, dumps(obj))

    def _send_error(self, exc: ApiError, headers: dict[str, str] | None = None) -> None:
        self._send(exc.code, dumps(exc.status()), headers=headers)

    def _parse_body(self, raw: bytes, content_type: str) -> Any:
        if not raw:
            return None
        if content_type == protobuf.CONTENT_TYPE:
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError as exc:
                raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format "
                                                            f"({content_type}): {exc}")
        if "protobuf" in content_type or "cbor" in content_type:
            raise ApiError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format ({content_type}) - the sandbox accepts "
                           "application/json, application/vnd.kubernetes.protobuf for "
                           f"{', '.join(kind for _, kind in protobuf.KINDS)} and, for apply, "
                           "application/apply-patch+yaml")
        try:
            return json.loads(raw)
        except ValueError:
            pass
        if "yaml" in content_type:
            try:
                return yaml.load(raw, Loader=_YAML_LOADER)  # noqa: S506 - CSafeLoader/SafeLoader only
            except yaml.YAMLError as exc:
                raise bad_request(f"error decoding YAML: {exc}")
        raise bad_request("the body of the request could not be decoded as JSON; send a JSON object "
                          "(or YAML with Content-Type application/apply-patch+yaml)")

    def _dispatch(self, method: str) -> None:
        started = time.monotonic()
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            raw = self._read_body()
        except (OSError, ValueError):
            self.close_connection = True
            return
        is_watch = parse_bool(params.get("watch")) is True or "/watch/" in path
        fault = self.server.faults.take(method, path, is_watch)
        try:
            if fault is not None and fault.action != "cut-watch":
                self._apply_fault(fault)
                return
            if path.startswith("/sandbox/") or path == "/sandbox":
                self._admin(method, path, raw)
            elif path in _HEALTH:
                self._send(200, b"ok", "text/plain; charset=utf-8")
            elif path == "/openapi/v2":
                self._openapi_v2()
            elif path == "/openapi/v3" or path.startswith("/openapi/v3/"):
                self._openapi_v3(path)
            elif path == "/version":
                self._send_json(200, discovery.version_info(self.server.config.kube_version))
            elif path == "/api" or path.startswith("/api/") or path == "/apis" or path.startswith("/apis/"):
                self._api(method, path, params, raw, fault)
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
        except ApiError as exc:
            self._warnings = []
            self._send_error(exc)
        except OSError:  # the client went away mid-response
            self.close_connection = True
        except Exception:
            log.exception("internal error on %s %s", method, self.path)
            self._warnings = []
            self._send_error(ApiError(500, "InternalError", f"internal error serving {method} {path}"))
        if self.server.config.verbose:
            log.info("%s %s %.1fms", method, self.path, (time.monotonic() - started) * 1000)

    def _openapi_v2(self) -> None:
        accept = self.headers.get("Accept", "")
        if accept and "json" not in accept and "*/*" not in accept:
            # client-go asks for the protobuf form only; 406 makes it fall back instead of misreading JSON.
            raise ApiError(406, "NotAcceptable", "only application/json is served for /openapi/v2 "
                                                 "(use /openapi/v3, which kubectl prefers)")
        types = list(self.server.registry.types.values())
        self._send(200, self.server.discovery_doc("/openapi/v2", lambda: openapi.v2_document(types)))

    def _openapi_v3(self, path: str) -> None:
        types = list(self.server.registry.types.values())
        if path == "/openapi/v3":
            self._send(200, self.server.discovery_doc(path, lambda: openapi.v3_root(types)))
            return
        parts = path[len("/openapi/v3/"):].split("/")
        if parts[0] == "api" and len(parts) == 2:
            group, version = "", parts[1]
        elif parts[0] == "apis" and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not any(rt.group == group and rt.version == version for rt in types):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self._send(200, self.server.discovery_doc(path, lambda: openapi.v3_document(group, version, types)))

    def _apply_fault(self, fault: Fault) -> None:
        if fault.action == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault.action == "hang":
            time.sleep(fault.seconds)
            self.close_connection = True
            self._send_error(ApiError(504, "Timeout", fault.message or "the server was unable to return a response "
                                                                       "in the time allotted (injected fault)"))
            return
        reason = STATUS_REASONS[fault.status]
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
        self._send_error(ApiError(fault.status, reason, fault.message or f"injected fault: {reason}"), headers)

    def _content_type(self) -> str:
        return (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()

    def _self_subject_access_review(self, raw: bytes) -> None:
        """Answer a SelfSubjectAccessReview from the authorizer's rules (and the /sandbox/rbac denials)."""
        review = self._parse_body(raw, self._content_type())
        if not isinstance(review, dict):
            raise bad_request("a SelfSubjectAccessReview object is required")
        spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
        attributes = spec.get("resourceAttributes") or spec.get("nonResourceAttributes")
        if not isinstance(attributes, dict):
            raise ApiError(422, "Invalid", "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                                           "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                                           "nonResourceAttributes or resourceAttributes must be specified")
        user = authz.authenticate(self.headers.get("Authorization"))
        allowed, reason = authz.authorize(user, attributes, self.server.denied_access, self._rbac_policy())
        status: dict[str, Any] = {"allowed": allowed, "reason": reason}
        if not allowed:
            status["denied"] = True
        review = {**review, "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "metadata": review.get("metadata") or {"creationTimestamp": None}, "status": status}
        self._send_json(201, review)

    def _subject_access_review(self, raw: bytes) -> None:
        """Answer a SubjectAccessReview: may `spec.user` (with `spec.groups`) do this? Decided by the stored RBAC
        objects as kube-apiserver decides it (the caller needs no more than the sandbox admin it always is)."""
        review = self._parse_body(raw, self._content_type())
        if not isinstance(review, dict):
            raise bad_request("a SubjectAccessReview object is required")
        spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
        resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if isinstance(resource, dict) == isinstance(non_resource, dict):
            raise ApiError(422, "Invalid", "SubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                                           "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                                           "nonResourceAttributes or resourceAttributes must be specified")
        try:
            user = authz.reviewed_user(spec)
        except ValueError as exc:
            raise ApiError(422, "Invalid", f"SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: "
                                           f"Invalid value: \"\": {exc}")
        attributes = resource if isinstance(resource, dict) else non_resource
        allowed, reason = authz.authorize(user, attributes, self.server.denied_access, self._rbac_policy())
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = reason
        else:
            status["denied"] = False  # RBAC never denies: "no opinion" lets other authorizers decide
        review = {**review, "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "metadata": review.get("metadata") or {"creationTimestamp": None}, "status": status}
        self._send_json(201, review)

    def _rbac_policy(self) -> rbac.Policy:
        """Return the RBAC objects stored now (Roles, ClusterRoles and their bindings)."""
        registry = self.server.registry
        objects: list[dict[str, Any]] = []
        for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
            rt = registry.resolve("rbac.authorization.k8s.io", "v1", plural)
            objects.extend(entry.obj for entry in registry.list(rt, None)[0])
        return rbac.Policy.of(objects)

    def _self_subject_review(self, raw: bytes) -> None:
        """Answer a SelfSubjectReview (`kubectl auth whoami`) with the caller's user."""
        self._parse_body(raw, self._content_type())
        user = authz.authenticate(self.headers.get("Authorization"))
        self._send_json(201, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                              "metadata": {"creationTimestamp": None}, "status": {"userInfo": user.info()}})

    def _visibility(self, method: str, rest: list[str], params: dict[str, str]) -> None:
        """Kueue's visibility API, served while Kueue's CRDs are installed (see `visibility`)."""
        registry = self.server.registry
        try:
            kinds = {plural: registry.resolve("kueue.x-k8s.io", visibility.VERSION, plural)
                     for plural in ("workloads", "localqueues", "clusterqueues")}
        except ApiError:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                                                    f"resource ({method})")
        if not rest:
            self._send_json(200, visibility.group_doc())
            return
        if rest[0] != visibility.VERSION:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(rest) == 1:
            self._send_json(200, visibility.discovery_resources())
            return
        objects = {plural: [e.obj for e in registry.list(rt, None)[0]] for plural, rt in kinds.items()}
        self._send_json(200, visibility.pending_workloads(
            objects["workloads"], objects["localqueues"], {c["metadata"]["name"] for c in objects["clusterqueues"]},
            rest[1:], params))

    def _pod_log(self, method: str, namespace: str, name: str, params: dict[str, str]) -> None:
        """`GET pods/{name}/log`: the container's output as text/plain; `follow` streams it (chunked) until the
        container ends, the pod goes or the client leaves."""
        if method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                                                    f"resource ({method})")
        registry = self.server.registry
        pods = registry.resolve("", "v1", "pods")
        request = podlog.LogRequest.parse(name, params, time.time())
        pod = registry.get(pods, namespace, name).obj
        container = request.container_for(pod)
        if container is None:
            self._send(200, b"", "text/plain")
            return
        now = time.time()
        output = ContainerOutput(pod, container)
        chosen = request.select(output, now)
        emitted = sum(1 for _ in output.lines(now))
        body = b"".join(format_line(line, request.timestamps) for line in chosen)
        if request.limit is not None:
            body = body[:request.limit]
        if not request.follow or output.run is None or output.run.finished is not None:
            self._send(200, body, "text/plain")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        budget = request.limit

        def write(data: bytes) -> bool:
            nonlocal budget
            if budget is not None:
                data, budget = data[:budget], budget - min(budget, len(data))
            if data:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            return budget != 0

        going = write(body)
        while going and not self.server.stopping.is_set() and not self._client_gone(0.5):
            try:
                pod = registry.get(pods, namespace, name).obj
            except ApiError:
                break  # the pod is gone: so is its log stream
            output = ContainerOutput(pod, container)
            lines = list(output.lines(time.time()))
            going = write(b"".join(format_line(line, request.timestamps) for line in lines[emitted:]))
            emitted = max(emitted, len(lines))
            if output.run is None or output.run.finished is not None:
                break
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")

    def _client_gone(self, wait: float) -> bool:
        """Returns True when the client closed the connection (waits up to `wait` seconds for it)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], wait)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    # -- admin -----------------------------------------------------------------------------------------------
    def _admin(self, method: str, path: str, raw: bytes) -> None:
        registry = self.server.registry
        if path == "/sandbox/reset" and method == "POST":
            self.server.denied_access = set()
            self._send_json(200, {"resourceVersion": str(registry.reset())})
        elif path == "/sandbox/compact" and method == "POST":
            self._send_json(200, {"resourceVersion": str(registry.store.compact())})
        elif path == "/sandbox/faults" and method == "POST":
            try:
                spec = json.loads(raw or b"{}")
                fault = self.server.faults.add(spec)
            except (ValueError, FaultSpecError) as exc:
                raise bad_request(f"invalid fault: {exc}")
            self._send_json(201, {"fault": fault.describe()})
        elif path == "/sandbox/faults" and method == "DELETE":
            self.server.faults.clear()
            self._send_json(200, {"faults": []})
        elif path == "/sandbox/faults" and method == "GET":
            self._send_json(200, {"faults": self.server.faults.list()})
        elif path == "/sandbox/rbac" and method == "POST":
            try:
                rules = json.loads(raw or b"{}").get("deny", [])
                denied = {(str(r["verb"]), str(r.get("group", "")), str(r["resource"])) for r in rules}
            except (ValueError, AttributeError, KeyError, TypeError) as exc:
                raise bad_request(f'invalid rbac body ({exc}); send {{"deny": [{{"verb", "group", "resource"}}]}}')
            self.server.denied_access = denied
            self._send_json(200, {"deny": [dict(zip(("verb", "group", "resource"), d, strict=True))
                                           for d in sorted(denied)]})
        elif path == "/sandbox/rbac" and method == "DELETE":
            self.server.denied_access = set()
            self._send_json(200, {"deny": []})
        elif path == "/sandbox/dump" and method == "GET":
            with registry.store.lock:
                self._send_json(200, {"resourceVersion": str(registry.store.rv), "objects": registry.store.dump()})
        elif path == "/sandbox/info" and method == "GET":
            self._send_json(200, {"kubeVersion": self.server.config.kube_version,
                                  "featureGates": dict(sorted(registry.gates.items())),
                                  "resourceVersion": str(registry.store.rv),
                                  "counts": {f"{k[1]}.{k[0]}".rstrip("."): registry.store.count(k)
                                             for k in registry.store.resource_keys()}})
        else:
            raise ApiError(404, "NotFound", f"no admin endpoint {method} {path}; see docs/sandbox.md")

    # -- Kubernetes API --------------------------------------------------------------------------------------
    def _api(self, method: str, path: str, params: dict[str, str], raw: bytes, fault: Fault | None) -> None:
        registry = self.server.registry
        review = _REVIEWS.get((method, path))
        if review is not None:
            review(self, raw)
            return
        parts = path.strip("/").split("/")
        if parts[0] == "api":
            group = ""
            if len(parts) == 1:
                self._send(200, self.server.discovery_doc(path, lambda: discovery.core_versions(
                    f"{self.server.server_address[0]}:{self.server.server_address[1]}")))
                return
            version, rest = parts[1], parts[2:]
        else:
            if len(parts) == 1:
                self._send(200, self.server.discovery_doc(path, lambda: visibility.with_group(
                    discovery.group_list(registry.types.values()), registry.types.values())))
                return
            group = parts[1]
            if group == visibility.GROUP:
                self._visibility(method, parts[2:], params)
                return
            versions = {rt.version for rt in registry.types.values() if rt.group == group}
            if not versions:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if len(parts) == 2:
                self._send(200, self.server.discovery_doc(path, lambda: discovery.group_doc(group, versions)))
                return
            version, rest = parts[2], parts[3:]
        types = [rt for rt in registry.types.values() if rt.group == group and rt.version == version]
        if not types:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            gv = f"{group}/{version}" if group else version
            self._send(200, self.server.discovery_doc(path, lambda: discovery.resource_list(gv, types)))
            return
        legacy_watch = rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        namespace: str | None = None
        if (rest and rest[0] == "namespaces" and len(rest) >= 3
                and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize"))):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        rt = registry.resolve(group, version, plural)
        registry.check_namespace_path(rt, namespace)
        if rt.namespaced and namespace is None and name is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        special = _SUBRESOURCES.get((rt.key, sub))
        if special is not None and name is not None:
            special(self, method, namespace or "", name, params)
            return
        if sub and not (sub == "status" and rt.has_status) and not (sub == "binding" and rt.key == ("", "pods")) \
                and not (sub == "finalize" and rt.key == ("", "namespaces")):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        content_type = self._content_type()
        body = self._parse_body(raw, content_type)
        watch = legacy_watch or parse_bool(params.get("watch")) is True
        if method == "GET":
            if watch:
                if name is not None:
                    selector = f"metadata.name={name}"
                    params["fieldSelector"] = ",".join(filter(None, [params.get("fieldSelector"), selector]))
                self._watch(rt, namespace, params, fault)
            elif name is None:
                self._list(rt, namespace, params)
            else:
                self._send_entry(200, registry.get(rt, namespace or "", name), rt=rt)
            return
        opts = self._write_options(params, rt)
        if method == "POST":
            if sub == "binding":
                self._send_json(201, registry.bind(namespace or "", name or "", body, opts))
            elif name is not None:
                raise ApiError(405, "MethodNotAllowed", f"POST is not supported on a named {rt.kind}")
            else:
                self._send_entry(*registry.create(rt, namespace, body, opts), rt=rt, opts=opts)
        elif method == "PUT" and name is not None:
            self._send_entry(*registry.replace(rt, namespace, name, body, "" if sub == "finalize" else sub, opts),
                             rt=rt, opts=opts)
        elif method == "PATCH" and name is not None:
            if content_type == PATCH_APPLY:
                opts.force = parse_bool(params.get("force")) is True
                opts.manager = params.get("fieldManager", "")
            self._send_entry(*registry.patch(rt, namespace, name, content_type, body, sub, opts), rt=rt, opts=opts)
        elif method == "DELETE":
            options = body if isinstance(body, dict) else {}
            propagation = params.get("propagationPolicy")
            if name is None:
                entries = registry.delete_collection(rt, namespace, params.get("labelSelector"),
                                                     params.get("fieldSelector"), opts.dry_run)
                self._send_list(rt, entries, registry.store.rv, None, None)
            else:
                if params.get("dryRun") == "All" or "All" in (options.get("dryRun") or []):
                    opts.dry_run = True
                self._send_entry(*registry.delete(rt, namespace, name, options, opts.dry_run, propagation), rt=rt)
        else:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                                                    f"resource ({method})")

    def _write_options(self, params: dict[str, str], rt: ResourceType) -> WriteOptions:
        dry = params.get("dryRun")
        if dry not in (None, "", "All"):
            raise bad_request(f'dryRun: Unsupported value: "{dry}": supported values: "All"')
        manager = params.get("fieldManager")
        if manager is None:
            agent = self.headers.get("User-Agent") or "unknown"
            manager = agent.split("/", 1)[0]
        validation = params.get("fieldValidation") or "Warn"
        if validation not in ("Strict", "Warn", "Ignore"):
            raise bad_request(f'fieldValidation: Unsupported value: "{validation}": supported values: "Ignore", '
                              f'"Strict", "Warn"')
        return WriteOptions(dry_run=dry == "All", manager=strip_chars(manager), field_validation=validation)

    def _entry_bytes(self, rt: ResourceType, entry: Entry) -> bytes:
        if entry.obj.get("apiVersion") == rt.api_version:
            return entry.raw
        return dumps({**entry.obj, "apiVersion": rt.api_version})

    def _send_entry(self, code: int, entry: Entry, rt: ResourceType, opts: WriteOptions | None = None) -> None:
        if opts is not None and opts.warnings:
            self._warnings = [f"299 - {json.dumps(w)}" for w in opts.warnings]
        if tables.wants_table(self.headers.get("Accept", "")):
            self._send_json(code, tables.table(rt, [entry.obj], {"resourceVersion": str(entry.rv)}))
            return
        self._send(code, self._entry_bytes(rt, entry))

    def _list(self, rt: ResourceType, namespace: str | None, params: dict[str, str]) -> None:
        try:
            limit = int(params.get("limit") or 0)
        except ValueError:
            raise bad_request(f"limit: invalid value {params.get('limit')!r}; expected an integer")
        entries, list_rv, token, remaining = self.server.registry.list(
            rt, namespace, params.get("labelSelector"), params.get("fieldSelector"), limit, params.get("continue"),
            params.get("resourceVersion"), params.get("resourceVersionMatch"))
        if tables.wants_table(self.headers.get("Accept", "")):
            meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
            if token:
                meta["continue"] = token
                meta["remainingItemCount"] = remaining
            self._send_json(200, tables.table(rt, [e.obj for e in entries], meta,
                                              params.get("includeObject", "Metadata")))
            return
        self._send_list(rt, entries, list_rv, token, remaining)

    def _send_list(self, rt: ResourceType, entries: list[Entry], list_rv: int, token: str | None,
                   remaining: int | None) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        head = (b'{"kind":"' + rt.list_kind.encode() + b'","apiVersion":"' + rt.api_version.encode() +
                b'","metadata":' + dumps(meta) + b',"items":[')
        body = head + b",".join(self._entry_bytes(rt, e) for e in entries) + b"]}"
        self._send(200, body)

    def _watch(self, rt: ResourceType, namespace: str | None, params: dict[str, str], fault: Fault | None) -> None:
        config = self.server.config
        try:
            timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else config.watch_timeout
        except ValueError:
            raise bad_request("timeoutSeconds: expected a number of seconds")
        render = None
        if tables.wants_table(self.headers.get("Accept", "")):
            include = params.get("includeObject", "Metadata")
            first = [True]

            def render(obj: dict[str, Any]) -> bytes:
                doc = tables.table(rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                                   include, with_headers=first[0])
                first[0] = False
                return dumps(doc)

        request = WatchRequest(
            self.server.registry, rt, namespace, resource_version=params.get("resourceVersion"),
            label_selector=params.get("labelSelector"), field_selector=params.get("fieldSelector"),
            allow_bookmarks=parse_bool(params.get("allowWatchBookmarks")) is True,
            send_initial_events=parse_bool(params.get("sendInitialEvents")),
            resource_version_match=params.get("resourceVersionMatch") or None,
            timeout=timeout, bookmark_interval=config.bookmark_interval,
            cut_after=fault.after_events if fault is not None and fault.action == "cut-watch" else None,
            render=render)
        request.open()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
        except OSError:
            request.close()  # the client left before the stream started: do not leak the subscription
            raise

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def gone() -> bool:
            # A watch client that went away without a word is noticed here (otherwise only at the next write).
            if self.server.stopping.is_set():
                return True
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        request.stream(write, gone)
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True


# Subresources served by a handler of their own: (storage key, subresource) -> handler.
_SUBRESOURCES = {
    (("", "pods"), "log"): Handler._pod_log,
}

# Create-only review endpoints outside the stored kinds: (method, path) -> handler.
_REVIEWS = {
    ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"): Handler._self_subject_access_review,
    ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"): Handler._subject_access_review,
    ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"): Handler._self_subject_review,
}


def make_server(host: str, port: int, registry: Registry, config: ServerConfig) -> SandboxServer:
    """Returns a bound SandboxServer (port 0 picks a free port)."""
    return SandboxServer((host, port), registry, config)


def build_registry(kube_version: str, nodes: list[dict[str, Any]] | None = None, history_limit: int = 20000,
                   crds: list[dict[str, Any]] | None = None, gates: dict[str, bool] | None = None) -> Registry:
    """Returns a registry with the start-up state (namespaces, CRDs, nodes) and GC running.

    `crds` defaults to the shipped CRDs with the v2.4 overlay; `gates` overrides feature gates of the API server
    (see `workloads.DEFAULT_GATES`).
    """
    if crds is None:
        from sandbox.bootstrap import load_crds

        crds = load_crds()
    registry = Registry(Store(history_limit=history_limit), kube_version, gates)
    registry.bootstrap(crds, nodes or [])
    registry.gc.start()
    return registry
