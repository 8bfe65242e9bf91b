"""API semantics on top of the store: create/get/list/update/patch/apply/delete, status split, generation,
finalizers, CRD registration and pods/binding.

Validation lives in `validation.py`, ownerReference garbage collection in `gc.py`. Every public method raises
`ApiError` for the HTTP layer to render; successful writes return `(code, Entry)`. Writes run under `store.lock`,
so each read-modify-write is atomic.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import uuid
from collections.abc import Callable
from typing import Any

from sandbox.apiserver import cluster_objects, defaults, workloads
from sandbox.apiserver.apply import ApplyConflict, now, server_side_apply, track_update
from sandbox.apiserver.decode import POD_OUTLINE, decode
from sandbox.apiserver.errors import ApiError, already_exists, bad_request, conflict, expired, invalid, not_found
from sandbox.apiserver.gc import GarbageCollector
from sandbox.apiserver.options import PATCH_APPLY, PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC, WriteOptions
from sandbox.apiserver.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from sandbox.apiserver.resources import ResourceType, builtin_types, types_from_crd
from sandbox.apiserver.selectors import SelectorError, parse_field_selector, parse_label_selector
from sandbox.apiserver.store import Entry, Store, dumps
from sandbox.apiserver.validation import validate_write

_STRIP_ON_WRITE = ("creationTimestamp", "uid", "generation", "deletionTimestamp", "deletionGracePeriodSeconds",
                   "selfLink")
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", cluster_objects.TRAINER_NAMESPACE)


def _rand_suffix(n: int = 5) -> str:
    return "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=n))


def _copy(entry: Entry) -> dict[str, Any]:
    # json round trip of the cached bytes is a faster deep copy than copy.deepcopy
    return json.loads(entry.raw)


def _without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _meta_for_compare(meta: dict[str, Any]) -> dict[str, Any]:
    out = _without(meta, "resourceVersion", "managedFields")
    out["managedFields"] = [_without(m, "time") for m in meta.get("managedFields") or ()]
    return out


class Registry:
    """All served resource types and the operations on them."""

    def __init__(self, store: Store, kube_version: str = "1.37", gates: dict[str, bool] | None = None) -> None:
        self.store = store
        self.kube_version = kube_version
        self.gates = {**workloads.DEFAULT_GATES, **(gates or {})}
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self._initial: list[tuple[tuple[str, str], Entry]] = []
        self.gc = GarbageCollector(self)
        self.on_types_changed: list[Callable[[], None]] = []
        for rt in builtin_types(kube_version):
            self._add_type(rt)

    # -- types -----------------------------------------------------------------------------------------------
    def _add_type(self, rt: ResourceType) -> None:
        # Copy-on-write: request threads iterate `types` without the lock.
        self.types = {**self.types, (rt.group, rt.version, rt.plural): rt}

    def resolve(self, group: str, version: str, plural: str) -> ResourceType:
        """Returns the served type or raises 404 NotFound (the apiserver's answer for an unknown resource)."""
        rt = self.types.get((group, version, plural))
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {"group": group, "kind": plural})
        return rt

    def types_for_key(self, key: tuple[str, str]) -> list[ResourceType]:
        return [rt for rt in self.types.values() if rt.key == key]

    def _register_crd(self, crd: dict[str, Any]) -> None:
        for rt in types_from_crd(crd):
            self._add_type(rt)
        for hook in self.on_types_changed:
            hook()

    def _unregister_crd(self, crd: dict[str, Any]) -> None:
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        self.types = {k: rt for k, rt in self.types.items() if not (rt.key == (group, plural) and not rt.builtin)}
        for hook in self.on_types_changed:
            hook()

    # -- bootstrap and reset ---------------------------------------------------------------------------------
    def bootstrap(self, crds: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
        """Creates the start-up state (namespaces, CRDs, preset nodes) and remembers it for `reset`."""
        with self.store.lock:
            for name in DEFAULT_NAMESPACES:
                self._insert(self.resolve("", "v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                                    "metadata": {"name": name}})
            crd_type = self.resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            for crd in crds:
                self._insert(crd_type, crd)
            priority_type = self.resolve("scheduling.k8s.io", "v1", "priorityclasses")
            for priority_class in defaults.system_priority_classes():
                self._insert(priority_type, priority_class)
            node_type = self.resolve("", "v1", "nodes")
            for node in nodes:
                self._insert(node_type, node)
            self._insert(self.resolve("", "v1", "services"), cluster_objects.kubernetes_service())
            self._insert(self.resolve("", "v1", "configmaps"), cluster_objects.trainer_public_configmap(crds))
            self._initial = [(key, e) for key in self.store.resource_keys() for e in self.store.list(key)]

    def _insert(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        self._initialize_metadata(rt, obj)
        self._prepare_create(rt, obj)
        track_update(None, obj, "sandbox", rt.api_version, rt.list_type)
        entry = self.store.put(rt.key, obj, "ADDED", None)
        self._after_put(rt, None, obj)
        return entry

    def reset(self) -> int:
        """Returns to the start-up state (resourceVersion keeps increasing); closes all watches. Returns the RV."""
        with self.store.lock:
            for key in list(self.store.resource_keys()):
                self.store.drop_all(key)
            self.gc.clear()
            self.types = {k: rt for k, rt in self.types.items() if rt.builtin}
            # The start-up entries are immutable, so they are put back as they were (same resourceVersions, which
            # are older than every later one); only the global counter moves on.
            for key, entry in self._initial:
                self.store.restore(key, entry)
                rt = self.type_for_key(key)
                if rt is not None:
                    self._after_put(rt, None, entry.obj, queue_checks=False)
                if key == ("apiextensions.k8s.io", "customresourcedefinitions"):
                    for crd_type in types_from_crd(entry.obj):
                        self._add_type(crd_type)
            self.store.next_rv()
            self.store.compact()
            self.store.close_all_watches()
            for hook in self.on_types_changed:
                hook()
            return self.store.rv

    # -- reads -----------------------------------------------------------------------------------------------
    def check_namespace_path(self, rt: ResourceType, namespace: str | None) -> None:
        """Raises 404 for a cluster-scoped kind addressed under /namespaces/{ns}/ (like kube-apiserver)."""
        if namespace is not None and not rt.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        """Returns the entry or raises 404 NotFound."""
        entry = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if entry is None:
            raise not_found(rt.plural, name, rt.group)
        return entry

    def list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None,
             field_selector: str | None = None, limit: int = 0, continue_token: str | None = None,
             resource_version: str | None = None, resource_version_match: str | None = None,
             ) -> tuple[list[Entry], int, str | None, int | None]:
        """Returns (entries, listRV, continue token or None, remainingItemCount or None).

        Raises 400 for bad selectors and 410 Expired for a continue token or an Exact resourceVersion older
        than the retained history.
        """
        match = self.matcher(rt, label_selector, field_selector)
        start: tuple[str, str] | None = None
        with self.store.lock:
            list_rv = self.store.rv
            if continue_token:
                try:
                    token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                    token_rv, start = int(token["rv"]), (token["start"][0], token["start"][1])
                except (ValueError, KeyError, TypeError, IndexError):
                    raise bad_request("continue key is not valid: the token is malformed")
                if token_rv < self.store.floor(rt.key):
                    raise expired("The provided continue parameter is too old to display a consistent list result."
                                  " You can start a new list without the continue parameter, or use the continue "
                                  "token in this response to retrieve the remainder of the results. Continuing with "
                                  "the provided token results in an inconsistent list - objects that were created, "
                                  "modified, or deleted between the time the first chunk was returned and now may "
                                  "show up in the list.")
                list_rv = token_rv
            elif (resource_version_match == "Exact" and resource_version not in (None, "", "0")
                  and int(resource_version) < self.store.floor(rt.key)):
                    raise expired(f"too old resource version: {resource_version} ({self.store.floor(rt.key)})")
            entries = self.store.list(rt.key, namespace if rt.namespaced else None)
        if start is not None:
            entries = [e for e in entries
                       if (e.obj["metadata"].get("namespace", ""), e.obj["metadata"]["name"]) > start]
        if match is not None:
            entries = [e for e in entries if match(e.obj)]
        if limit and len(entries) > limit:
            last = entries[limit - 1].obj["metadata"]
            token = base64.urlsafe_b64encode(dumps({"rv": list_rv, "start": [last.get("namespace", ""),
                                                                                last["name"]]})).decode()
            return entries[:limit], list_rv, token, len(entries) - limit
        return entries, list_rv, None, None

    def matcher(self, rt: ResourceType, label_selector: str | None,
                field_selector: str | None) -> Callable[[dict[str, Any]], bool] | None:
        """Returns a combined selector predicate, None for "everything"; raises 400 BadRequest on bad syntax."""
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector, rt.field_selectors)
        except SelectorError as exc:
            raise bad_request(str(exc))
        if labels and fields:
            return lambda obj: labels(obj) and fields(obj)
        return labels or fields

    # -- create ----------------------------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str | None, body: Any, opts: WriteOptions) -> tuple[int, Entry]:
        """Creates an object; returns (201, entry). Raises 409 AlreadyExists, 404 for a missing namespace,
        400 for a body of the wrong kind and 422 Invalid."""
        obj = self._check_body(rt, body, namespace)
        self._decode(rt, obj, opts)
        meta = obj["metadata"]
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + _rand_suffix()
            else:
                raise invalid(rt.kind, rt.group, "", [{"reason": "FieldValueRequired", "field": "metadata.name",
                                                        "message": "Required value: name or generateName is required"}])
        with self.store.lock:
            ns = meta.get("namespace", "")
            if self.store.get(rt.key, ns, meta["name"]) is not None:
                raise already_exists(rt.plural, meta["name"], rt.group)
            self._check_namespace_exists(rt, ns)
            for key in _STRIP_ON_WRITE:
                meta.pop(key, None)
            meta.pop("resourceVersion", None)
            self._initialize_metadata(rt, obj)
            self._prepare_create(rt, obj)
            validate_write(rt, obj, None, "", opts)
            track_update(None, obj, opts.manager, rt.api_version, rt.list_type)
            return 201, self._commit_new(rt, obj, opts)

    def _commit_new(self, rt: ResourceType, obj: dict[str, Any], opts: WriteOptions) -> Entry:
        if opts.dry_run:
            return Entry(obj, dumps(obj), self.store.rv)
        entry = self.store.put(rt.key, obj, "ADDED", None)
        self._after_put(rt, None, obj)
        return entry

    def _check_body(self, rt: ResourceType, body: Any, namespace: str | None) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format - accepted media types include: "
                              "application/json, application/yaml")
        obj = copy.deepcopy(body)
        kind = obj.get("kind")
        if kind and kind != rt.kind:
            raise bad_request(f"the API version in the data ({obj.get('apiVersion')}) does not match the expected "
                              f"API version ({rt.api_version})" if obj.get("apiVersion") != rt.api_version else
                              f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        api_version = obj.get("apiVersion")
        if api_version and api_version != rt.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version "
                              f"({rt.api_version})")
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                                  "request")
            meta["namespace"] = namespace or body_ns or "default"
        else:
            meta.pop("namespace", None)
        return obj

    def _check_namespace_exists(self, rt: ResourceType, ns: str) -> None:
        if not rt.namespaced:
            return
        entry = self.store.get(("", "namespaces"), "", ns)
        if entry is None:
            raise not_found("namespaces", ns)
        if entry.obj["metadata"].get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f'{rt.plural}{"." + rt.group if rt.group else ""} is forbidden: '
                                             f"unable to create new content in namespace {ns} because it is being "
                                             f"terminated", {"kind": rt.plural})

    @staticmethod
    def _decode(rt: ResourceType, obj: dict[str, Any], opts: WriteOptions) -> None:
        """The typed decoding: ObjectMeta of every kind, the whole body of Workloads and PodGroups (wrong JSON types
        → 400, unknown fields per fieldValidation)."""
        shape = workloads.shape(rt) if rt.key in workloads.KEYS else POD_OUTLINE if rt.key == ("", "pods") else None
        decode(rt, obj, shape, opts)

    def _initialize_metadata(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)

    def _prepare_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Applies per-kind create rules: server defaults, status reset, namespace phase, pod defaults, CRD status."""
        defaults.apply(rt, obj)
        if rt.key == ("", "namespaces"):
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif rt.key == ("", "pods"):
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj["spec"])}
        elif rt.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            names = obj.get("spec", {}).get("names", {})
            obj["status"] = {
                "acceptedNames": names, "storedVersions": [v["name"] for v in obj.get("spec", {}).get("versions", [])
                                                           if v.get("storage")],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found", "lastTransitionTime": now()},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted", "lastTransitionTime": now()}]}
        elif rt.has_status and rt.key != ("", "nodes"):
            obj.pop("status", None)
        if rt.key in workloads.KEYS:
            workloads.prepare(rt, obj, None, self.gates)

    # -- update / patch / apply ------------------------------------------------------------------------------
    def replace(self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str,
                opts: WriteOptions) -> tuple[int, Entry]:
        """PUT: returns (200, entry). Raises 404, 409 Conflict on a stale resourceVersion, 400 on a name
        mismatch, 422 Invalid (also for a custom resource or CRD sent without metadata.resourceVersion)."""
        obj = self._check_body(rt, body, namespace)
        if obj["metadata"].get("name") not in (None, name):
            raise bad_request(f'the name of the object ({obj["metadata"].get("name")}) does not match the name on '
                              f"the URL ({name})")
        obj["metadata"]["name"] = name
        with self.store.lock:
            old = self.get(rt, namespace or "", name)
            if not obj["metadata"].get("resourceVersion") and not rt.unconditional_update:
                raise invalid(rt.kind, rt.group, name, [{
                    "reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                    "message": "Invalid value: 0x0: must be specified for an update"}])
            return self.update(rt, old, obj, subresource, opts, precondition_rv=obj["metadata"].get("resourceVersion"))

    def patch(self, rt: ResourceType, namespace: str | None, name: str, content_type: str, body: Any,
              subresource: str, opts: WriteOptions) -> tuple[int, Entry]:
        """PATCH (merge, json, strategic, apply). Returns (200 or 201 for an apply that creates, entry).

        Raises 415 for strategic merge on custom resources and unknown patch types, 422 for a failed JSON patch
        or apply without fieldManager, 409 for apply conflicts.
        """
        if content_type == PATCH_APPLY:
            return self._apply(rt, namespace, name, body, subresource, opts)
        if content_type == PATCH_STRATEGIC and not rt.builtin:
            raise ApiError(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format - accepted media types include: '
                           f'{PATCH_JSON}, {PATCH_MERGE}, {PATCH_APPLY}')
        if content_type not in (PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC):
            raise ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                                                        f'accepted media types include: {PATCH_JSON}, {PATCH_MERGE}, '
                                                        f'{PATCH_APPLY}' + ("" if not rt.builtin else
                                                                            f", {PATCH_STRATEGIC}"))
        with self.store.lock:
            old = self.get(rt, namespace or "", name)
            current = _copy(old)
            try:
                if content_type == PATCH_JSON:
                    patched = json_patch(current, body)
                elif content_type == PATCH_MERGE:
                    if not isinstance(body, dict):
                        raise PatchError("a merge patch must be a JSON object", 400)
                    patched = merge_patch(current, body)
                else:
                    if not isinstance(body, dict):
                        raise PatchError("a strategic merge patch must be a JSON object", 400)
                    patched = strategic_merge_patch(current, body, rt.list_type)
            except PatchError as exc:
                if exc.code == 400:
                    raise bad_request(str(exc))
                raise ApiError(422, "Invalid", str(exc))
            if not isinstance(patched, dict):
                raise bad_request("the patch did not produce an object")
            precondition = None
            patch_meta = body.get("metadata") if isinstance(body, dict) else None
            if isinstance(patch_meta, dict) and patch_meta.get("resourceVersion"):
                precondition = patch_meta["resourceVersion"]
            if content_type == PATCH_JSON:
                new_rv = (patched.get("metadata") or {}).get("resourceVersion")
                if new_rv and new_rv != old.obj["metadata"]["resourceVersion"]:
                    precondition = new_rv
            obj = self._check_body(rt, patched, namespace)
            obj["metadata"]["name"] = name
            return self.update(rt, old, obj, subresource, opts, precondition_rv=precondition)

    def _apply(self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str,
               opts: WriteOptions) -> tuple[int, Entry]:
        if not opts.manager:
            raise invalid(rt.kind, rt.group, name, [{
                "reason": "FieldValueRequired", "field": "metadata.managedFields.fieldManager",
                "message": "Required value: is required for apply patch"}])
        if not isinstance(body, dict) or not body.get("apiVersion") or not body.get("kind"):
            raise bad_request("apply patches must have apiVersion and kind: the applied configuration must name "
                              "both (e.g. apiVersion: v1, kind: Pod)")
        config = self._check_body(rt, body, namespace)
        if config["metadata"].get("name") not in (None, name):
            raise bad_request(f'the name of the object ({config["metadata"].get("name")}) does not match the name '
                              f"on the URL ({name})")
        config["metadata"]["name"] = name
        self._decode(rt, config, opts)
        with self.store.lock:
            ns = config["metadata"].get("namespace", "")
            old = self.store.get(rt.key, ns, name)
            if old is None:
                if subresource:
                    raise not_found(rt.plural, name, rt.group)
                self._check_namespace_exists(rt, ns)
                obj = self._server_side_apply(rt, None, config, opts)
                obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
                meta = obj["metadata"]
                for key in _STRIP_ON_WRITE:
                    meta.pop(key, None)
                meta.pop("resourceVersion", None)
                self._initialize_metadata(rt, obj)
                self._prepare_create(rt, obj)
                validate_write(rt, obj, None, "", opts)
                return 201, self._commit_new(rt, obj, opts)
            precondition = config["metadata"].get("resourceVersion")
            live = _copy(old)
            try:
                obj = self._server_side_apply(rt, live, config, opts, subresource)
            except ApplyConflict as exc:
                details = {"name": name, "kind": rt.plural, "causes": exc.causes()}
                if rt.group:
                    details["group"] = rt.group
                raise ApiError(409, "Conflict", exc.message(), details)
            return self.update(rt, old, obj, subresource, opts, precondition_rv=precondition, track=False)

    @staticmethod
    def _server_side_apply(rt: ResourceType, live: dict[str, Any] | None, config: dict[str, Any],
                           opts: WriteOptions, subresource: str = "") -> dict[str, Any]:
        """Returns the applied object. Raises ApplyConflict, and 400 BadRequest when the configuration's shape does
        not fit the live object's (a list where the schema has an object, an item that is not an object, …)."""
        try:
            return server_side_apply(live, config, opts.manager, rt.api_version, rt.list_type, opts.force,
                                     subresource)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:
            raise bad_request(f"failed to create typed patch object ({rt.api_version}, Kind={rt.kind}): the applied "
                              f"configuration does not match the object's structure ({type(exc).__name__}: {exc})")

    def update(self, rt: ResourceType, old: Entry, obj: dict[str, Any], subresource: str, opts: WriteOptions,
               precondition_rv: str | None, track: bool = True) -> tuple[int, Entry]:
        """Writes `obj` over the stored `old` (caller holds the store lock): the shared tail of PUT/PATCH/apply and
        of the garbage collector's writes. Preconditions, status split, validation, generation, no-op detection,
        finalizer completion and the store write. Returns (200, entry); raises 409 Conflict on a stale
        `precondition_rv` and 422 Invalid."""
        old_obj = old.obj
        name = old_obj["metadata"]["name"]
        if precondition_rv and precondition_rv != old_obj["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, name, rt.group, "the object has been modified; please apply your changes to "
                                                      "the latest version and try again")
        new_meta = obj["metadata"]
        old_meta = old_obj["metadata"]
        if rt.has_status:
            if subresource == "status":
                status = obj.get("status")
                obj = {k: copy.deepcopy(v) for k, v in old_obj.items() if k != "status"}
                if status is not None:
                    obj["status"] = status
                # Only managedFields travel with a status write.
                obj["metadata"]["managedFields"] = new_meta.get("managedFields", old_meta.get("managedFields"))
                new_meta = obj["metadata"]
            else:
                obj.pop("status", None)
                if "status" in old_obj:
                    obj["status"] = copy.deepcopy(old_obj["status"])
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in old_meta:
                new_meta[key] = old_meta[key]
            else:
                new_meta.pop(key, None)
        if rt.key == ("", "namespaces") and subresource != "status":
            obj["status"] = copy.deepcopy(old_obj.get("status", {}))
        self._decode(rt, obj, opts)
        defaults.apply(rt, obj)
        if rt.key in workloads.KEYS and subresource != "status":
            workloads.prepare(rt, obj, old_obj, self.gates)
        validate_write(rt, obj, old_obj, subresource, opts)
        if track:
            track_update(old_obj, obj, opts.manager, rt.api_version, rt.list_type, subresource)
        if rt.generation and self._spec_changed(rt, old_obj, obj):
            new_meta["generation"] = old_meta.get("generation", 1) + 1
        if old_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            if opts.dry_run:
                return 200, Entry(obj, dumps(obj), old.rv)
            return 200, self.remove(rt, obj)
        if self._same(old_obj, obj):
            return 200, old
        if opts.dry_run:
            obj["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
            return 200, Entry(obj, dumps(obj), old.rv)
        entry = self.store.put(rt.key, obj, "MODIFIED", old_obj)
        self._after_put(rt, old_obj, obj)
        return 200, entry

    @staticmethod
    def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        if _without(a, "metadata") != _without(b, "metadata"):
            return False
        return _meta_for_compare(a["metadata"]) == _meta_for_compare(b["metadata"])

    @staticmethod
    def _spec_changed(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> bool:
        ignored = ("metadata", "status") if rt.has_status else ("metadata",)
        return _without(old, *ignored) != _without(new, *ignored)

    # -- delete ----------------------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: dict[str, Any] | None,
               dry_run: bool, propagation: str | None = None) -> tuple[int, Entry]:
        """Deletes (or marks for deletion when finalizers remain). Returns (200, entry).

        Raises 404 and 409 Conflict for failed preconditions.
        """
        options = options or {}
        policy = propagation or options.get("propagationPolicy") or "Background"
        if options.get("orphanDependents") is True:
            policy = "Orphan"
        with self.store.lock:
            old = self.get(rt, namespace or "", name)
            pre = options.get("preconditions") or {}
            meta = old.obj["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise conflict(rt.plural, name, rt.group, f"Precondition failed: UID in precondition: {pre['uid']}, "
                                                          f"UID in object meta: {meta.get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise conflict(rt.plural, name, rt.group, "Precondition failed: ResourceVersion in precondition: "
                                                          f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                                          f"{meta['resourceVersion']}")
            obj = _copy(old)
            finalizers = list(obj["metadata"].get("finalizers") or [])
            if rt.key == ("", "namespaces") and name in ("default", "kube-system", "kube-public"):
                raise ApiError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be '
                                                 f"deleted", {"name": name, "kind": "namespaces"})
            if rt.key == ("", "namespaces"):
                if not obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["deletionTimestamp"] = now()
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0
                    obj["status"] = {"phase": "Terminating"}
                    if dry_run:
                        return 200, Entry(obj, dumps(obj), old.rv)
                    entry = self.store.put(rt.key, obj, "MODIFIED", old.obj)
                    self.gc.namespace_terminating(name)
                    return 200, entry
                return 200, old
            if policy == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            elif policy == "Orphan" and "orphan" not in finalizers:
                finalizers.append("orphan")
            if not finalizers:
                if dry_run:
                    return 200, old
                return 200, self.remove(rt, obj)
            if obj["metadata"].get("deletionTimestamp") and finalizers == obj["metadata"].get("finalizers"):
                return 200, old
            obj["metadata"]["finalizers"] = finalizers
            obj["metadata"].setdefault("deletionTimestamp", now())
            obj["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            if dry_run:
                return 200, Entry(obj, dumps(obj), old.rv)
            entry = self.store.put(rt.key, obj, "MODIFIED", old.obj)
            if "foregroundDeletion" in finalizers or "orphan" in finalizers:
                self.gc.finalize_later(meta["uid"])
            return 200, entry

    def delete_collection(self, rt: ResourceType, namespace: str | None, label_selector: str | None,
                          field_selector: str | None, dry_run: bool) -> list[Entry]:
        """Deletes every matching object; returns the entries as they were deleted/marked."""
        entries, _, _, _ = self.list(rt, namespace, label_selector, field_selector)
        out = []
        for e in entries:
            meta = e.obj["metadata"]
            try:
                out.append(self.delete(rt, meta.get("namespace"), meta["name"], None, dry_run)[1])
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return out

    def remove(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        """Removes an object for good (caller holds the store lock); returns its last entry. Queues its dependents
        for garbage collection; removing a CRD removes its custom resources and stops serving them."""
        entry = self.store.remove(rt.key, obj)
        uid = obj["metadata"].get("uid")
        self.gc.unindex(rt, obj)
        if uid:
            self.gc.owner_removed(uid)
        if rt.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            group, plural = obj["spec"]["group"], obj["spec"]["names"]["plural"]
            for e in self.store.list((group, plural)):
                self.store.remove((group, plural), _copy(e))
            self._unregister_crd(obj)
        return entry

    # -- bookkeeping after writes ----------------------------------------------------------------------------
    def _after_put(self, rt: ResourceType, old: dict[str, Any] | None, new: dict[str, Any],
                   queue_checks: bool = True) -> None:
        self.gc.index(rt, old, new, queue_checks)
        if rt.key == ("apiextensions.k8s.io", "customresourcedefinitions") and queue_checks:
            self._register_crd(new)

    def type_for_key(self, key: tuple[str, str]) -> ResourceType | None:
        """Returns one served type for a storage key (its first version), or None."""
        return next((rt for rt in self.types.values() if rt.key == key), None)

    # -- pods/binding ----------------------------------------------------------------------------------------
    def bind(self, namespace: str, name: str, body: Any, opts: WriteOptions) -> dict[str, Any]:
        """POST pods/{name}/binding: sets spec.nodeName and PodScheduled=True. Returns a Success Status.

        Raises 404 for a missing pod, 409 Conflict when the pod is already bound, 400 for a body without a target.
        """
        target = (body or {}).get("target") or {}
        if not target.get("name"):
            raise bad_request("a Binding needs target.name (the node name)")
        rt = self.resolve("", "v1", "pods")
        with self.store.lock:
            old = self.get(rt, namespace, name)
            if old.obj.get("spec", {}).get("nodeName"):
                raise conflict("pods", name, "", f"pod {name} is already assigned to node "
                                                 f"\"{old.obj['spec']['nodeName']}\"")
            obj = _copy(old)
            obj["spec"]["nodeName"] = target["name"]
            conditions = [c for c in obj.get("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now()})
            obj.setdefault("status", {})["conditions"] = conditions
            if not opts.dry_run:
                self.store.put(rt.key, obj, "MODIFIED", old.obj)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def qos_class(spec: dict[str, Any]) -> str:
    """Returns the Pod QoS class (BestEffort, Guaranteed, Burstable) the apiserver sets on create."""
    containers = spec.get("containers") or []
    resources = [c.get("resources") or {} for c in containers if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    if all(r.get("limits") and (not r.get("requests") or r.get("requests") == r.get("limits")) and
           {"cpu", "memory"} <= set(r["limits"]) for r in resources):
        return "Guaranteed"
    return "Burstable"
