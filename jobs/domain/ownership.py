"""An in-memory index of the objects around TrainJobs, linked the way the controllers link them.

Links, never predicted names (the controllers salt names with the TrainJob UID):
- Workload → TrainJob: ownerReferences (TrainJob uid), else ``spec.controllerRef`` (kind TrainJob, name) resolved
  to the TrainJob object that currently has that name.
- PodGroup → TrainJob: ownerReferences (TrainJob uid, or the owning Workload's uid), else its ``workloadRef``
  Workload's owner.
- Pod → PodGroup: ``spec.schedulingGroup.podGroupName``; Pod → TrainJob: its PodGroup's owner, its own TrainJob
  ownerReference, or its JobSet (ownerReference or JobSet name label) owned by the TrainJob.
- Kueue Workload → TrainJob: ownerReferences, else the ``kueue.x-k8s.io/job-uid`` label.
- Event → object: ``involvedObject.uid``.

Objects are stored slimmed to the fields the admission state needs (:func:`slim`): 100,000 pods fit in tens of MiB.
Pure: no Django, no kubernetes client; not thread-safe (one consumer thread).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter

from . import signals as sig
from . import startup

TRAINJOB = "TrainJob"
WORKLOAD = "Workload"
PODGROUP = "PodGroup"
POD = "Pod"
JOBSET = "JobSet"
KUEUE_WORKLOAD = "KueueWorkload"
EVENT = "Event"
KINDS = (TRAINJOB, WORKLOAD, PODGROUP, POD, JOBSET, KUEUE_WORKLOAD, EVENT)
EVENTS_PER_OBJECT = 5
EVENTS_PER_JOB = 20
_NAMED_KINDS = (TRAINJOB, WORKLOAD, PODGROUP, JOBSET)
_POD_LABELS = (sig.JOBSET_NAME_LABEL, sig.REPLICATED_JOB_LABEL, sig.JOB_INDEX_LABEL)


def _slim_meta(obj: dict, *, labels: tuple[str, ...] | None = None, annotations: bool = False,
               share_owners: bool = False) -> dict:
    meta = sig.metadata(obj)
    slim = {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                                       "deletionTimestamp") if key in meta}
    if "ownerReferences" in meta:
        slim["ownerReferences"] = _shared(meta["ownerReferences"]) if share_owners else meta["ownerReferences"]
    all_labels = sig.labels_of(obj)
    kept = all_labels if labels is None else {k: all_labels[k] for k in labels if k in all_labels}
    if kept:  # an empty dict costs 64 bytes per object; ``signals.labels_of`` reads a missing one as empty
        slim["labels"] = kept
    if annotations:
        keys = set(sig.creator_keys())
        wanted = {k: v for k, v in sig.annotations_of(obj).items() if k in keys}
        if wanted:
            slim["annotations"] = wanted
        # Who created it, when no label/annotation says: the creating field manager (never the fields it owns).
        manager = sig.creating_manager(obj)
        if manager:
            slim["managedFields"] = _shared([{"manager": manager, "operation": "Update"}])
    return slim


_json_key = json.JSONEncoder(separators=(",", ":"), check_circular=False, allow_nan=True).encode
_SHARED: dict[int, object] = {}
_SHARED_LIMIT = 200_000


def _shared(value: object) -> object:
    """Return one shared instance of a JSON value equal to ``value`` (the PodGroups of a job name the same owners,
    most gangs the same scheduling policy): stored objects are never mutated, so equal parts are kept once. Keyed
    by hash only (a key per distinct value would cost what sharing saves); a colliding unequal value, or one that
    cannot be hashed, is returned as it is."""
    if not isinstance(value, (dict, list)):
        return value
    try:
        # The JSON text as the key's source: written in C, a tenth of the cost of freezing the value in Python
        # (this runs for several parts of every object listed). Equal values in another key order only miss a
        # share; the equality check below guards a colliding hash.
        key = hash(_json_key(value))
    except (TypeError, ValueError):
        return value
    found = _SHARED.get(key)
    if found is not None:
        return found if found == value else value
    if len(_SHARED) > _SHARED_LIMIT:
        _SHARED.clear()
    _SHARED[key] = value
    return value


_OWNERS: dict[tuple, tuple] = {}


def _shared_owners(owners: tuple) -> tuple:
    """Return one shared copy of an owner tuple (the pods of a job all name the same owners)."""
    if len(_OWNERS) > 200_000:
        _OWNERS.clear()
    return _OWNERS.setdefault(owners, owners)


_POD_TRAINJOB_OWNERS: dict[tuple, tuple[str, ...]] = {}


def _pod_trainjob_owners(owners: tuple) -> tuple[str, ...]:
    """Return the TrainJob UIDs among a pod record's (shared) owner tuples, the controller first: computed once per
    distinct owner tuple (every pod of a job has the same), since every recompute of a job asks it for each pod."""
    found = _POD_TRAINJOB_OWNERS.get(owners)
    if found is None:
        if len(_POD_TRAINJOB_OWNERS) > 200_000:
            _POD_TRAINJOB_OWNERS.clear()
        refs = sorted((r for r in owners if r[1] == sig.TRAINJOB_KIND and
                       (r[0].split("/", 1)[0] if "/" in r[0] else "") in ("", sig.TRAINER_API_GROUP)),
                      key=lambda r: not r[4])
        found = _POD_TRAINJOB_OWNERS[owners] = tuple(r[3] for r in refs)
    return found


class PodRecord:
    """A pod reduced to what admission reads, in one small object (a pod dict costs ~2.6 KB; this ~0.4 KB, which is
    what keeps 100,000 pods in tens of MiB). ``as_object()`` gives the dict shape ``signals`` reads."""

    __slots__ = ("group", "job_index", "jobset", "name", "namespace", "node", "owners", "phase", "requests", "rjob",
                 "scheduled", "uid", "version", "workload_ref")

    def __init__(self, obj: dict) -> None:
        # Reads each part of the pod once (this runs for every pod of every list and event); the same tolerant
        # reads as ``signals`` (a field of the wrong type counts as missing).
        meta, pod_spec, pod_status = sig.metadata(obj), sig.spec(obj), sig.status(obj)
        text = sig.as_str
        labels = sig.as_dict(meta.get("labels"))
        self.name = text(meta.get("name"))
        self.namespace = sys.intern(text(meta.get("namespace")))
        self.uid = text(meta.get("uid"))
        version = meta.get("resourceVersion")
        self.version = str(version) if isinstance(version, str | int) and not isinstance(version, bool) else ""
        self.node = sys.intern(text(pod_spec.get("nodeName")))
        self.phase = sys.intern(text(pod_status.get("phase")) or "Pending")
        self.group = sys.intern(text(sig.as_dict(pod_spec.get("schedulingGroup")).get("podGroupName")))
        workload_ref = pod_spec.get("workloadRef")  # 1.35 only: most pods have none
        self.workload_ref = _shared(workload_ref) if workload_ref and isinstance(workload_ref, dict) else None
        self.rjob = sys.intern(text(labels.get(sig.REPLICATED_JOB_LABEL)))
        self.job_index = sys.intern(text(labels.get(sig.JOB_INDEX_LABEL)))
        self.jobset = sys.intern(text(labels.get(sig.JOBSET_NAME_LABEL)))
        owners = []
        for raw in sig.as_list(meta.get("ownerReferences")):
            entry = sig.as_dict(raw)
            uid = text(entry.get("uid"))
            if uid:
                owners.append((text(entry.get("apiVersion")), text(entry.get("kind")), text(entry.get("name")), uid,
                               entry.get("controller") is True))
        self.owners = _shared_owners(tuple(owners))
        # Shared like the owners: every pod of a job asks for the same resources.
        self.requests = _shared_owners(tuple(sorted(sig.pod_requests(obj).items())))
        scheduled = None
        for condition in sig.as_list(pod_status.get("conditions")):
            if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
                scheduled = condition
                break
        # Shared too: the pods of a gang wait for the same reason.
        self.scheduled = _shared_owners((text(scheduled.get("status")), text(scheduled.get("reason")),
                                         text(scheduled.get("message"))[:500])) if scheduled else None

    @property
    def group_name(self) -> str:
        """Return the PodGroup the pod belongs to, as :func:`signals.pod_group_name_of` reads it ("" for none)."""
        return self.group or sig.as_str((self.workload_ref or {}).get("podGroup"))

    def as_object(self) -> dict:
        """Return the pod as a (minimal) Kubernetes object dict."""
        labels = {key: value for key, value in ((sig.REPLICATED_JOB_LABEL, self.rjob),
                                                (sig.JOB_INDEX_LABEL, self.job_index),
                                                (sig.JOBSET_NAME_LABEL, self.jobset)) if value}
        metadata = {"name": self.name, "namespace": self.namespace, "uid": self.uid, "resourceVersion": self.version,
                    "labels": labels, "ownerReferences": [
                        {"apiVersion": a, "kind": k, "name": n, "uid": u, "controller": c}
                        for a, k, n, u, c in self.owners]}
        spec: dict = {}
        if self.requests:
            spec["containers"] = [{"name": "requests", "resources": {"requests": dict(self.requests)}}]
        if self.node:
            spec["nodeName"] = self.node
        if self.group:
            spec["schedulingGroup"] = {"podGroupName": self.group}
        if self.workload_ref:
            spec["workloadRef"] = self.workload_ref
        status: dict = {"phase": self.phase}
        if self.scheduled:
            state, reason, message = self.scheduled
            status["conditions"] = [{"type": "PodScheduled", "status": state, "reason": reason, "message": message}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


_record_name = attrgetter("name")


def _pick(source: dict, keys: tuple[str, ...]) -> dict:
    return {key: source[key] for key in keys if key in source}


_TRAINJOB_SPEC = ("runtimeRef", "suspend", "priorityClassName", "managedBy")
_TRAINER_SPEC = ("numNodes", "resourcesPerNode")
_PODGROUP_SPEC = ("schedulingPolicy", "workloadRef", "podGroupTemplateRef", "schedulingConstraints")
_WORKLOAD_SPEC = ("controllerRef", "podGroupTemplates", "podGroups")


def slim(kind: str, obj: dict) -> dict | PodRecord:
    """Return the part of ``obj`` the tracker reads: a PodRecord for pods, otherwise a dict of the same shape as the
    object (so ``signals`` reads both)."""
    obj = sig.as_dict(obj)
    if kind == POD:
        return PodRecord(obj)
    head = {"apiVersion": sig.as_str(obj.get("apiVersion")), "kind": sig.as_str(obj.get("kind"))}
    if kind == EVENT:
        return {key: obj.get(key) for key in ("type", "reason", "message", "count", "lastTimestamp",
                                              "eventTime", "involvedObject", "regarding", "note")
                if key in obj} | {"metadata": _slim_meta(obj, labels=())}
    if kind == TRAINJOB:
        # Jobs of one runtime name the same runtime and mostly ask the same shape: those parts are kept once.
        spec = {key: _shared(value) for key, value in _pick(sig.spec(obj), _TRAINJOB_SPEC).items()}
        trainer = sig.as_dict(sig.spec(obj).get("trainer"))
        if trainer:
            spec["trainer"] = _shared(_pick(trainer, _TRAINER_SPEC))
        return {**head, "metadata": _slim_meta(obj, annotations=True), "spec": spec,
                "status": _pick(sig.status(obj), ("conditions", "jobsStatus"))}
    if kind == JOBSET:
        # The startup plan (ReplicatedJobs, dependsOn) and progress; never the pod templates.
        return {**head, "metadata": _slim_meta(obj, labels=()), "spec": startup.slim_jobset_spec(obj),
                "status": _pick(sig.status(obj), ("replicatedJobsStatus",))}
    if kind == PODGROUP:
        spec = _pick(sig.spec(obj), _PODGROUP_SPEC)
        if "schedulingPolicy" in spec:
            spec["schedulingPolicy"] = _shared(spec["schedulingPolicy"])
        return {**head, "metadata": _slim_meta(obj, labels=(), share_owners=True), "spec": spec,
                "status": {key: _shared(value) for key, value in _pick(sig.status(obj), ("conditions",)).items()}}
    if kind == WORKLOAD:
        spec = _pick(sig.spec(obj), _WORKLOAD_SPEC)
        if "podGroupTemplates" in spec:  # the same templates for every job of a runtime
            spec["podGroupTemplates"] = _shared(spec["podGroupTemplates"])
        return {**head, "metadata": _slim_meta(obj, labels=()), "spec": spec}
    return {**head, "metadata": _slim_meta(obj), "spec": sig.spec(obj), "status": sig.status(obj)}


def _same(old: dict | PodRecord, new: dict | PodRecord) -> bool:
    """Return True when two stored forms of an object differ at most in their resourceVersion."""
    if isinstance(old, PodRecord) or isinstance(new, PodRecord):
        return isinstance(old, PodRecord) and isinstance(new, PodRecord) and all(
            getattr(old, name) == getattr(new, name) for name in PodRecord.__slots__ if name != "version")
    if old.keys() != new.keys():
        return False
    for key in old:
        if key == "metadata":
            left, right = old[key], new[key]
            if {k: v for k, v in left.items() if k != "resourceVersion"} != \
                    {k: v for k, v in right.items() if k != "resourceVersion"}:
                return False
        elif old[key] != new[key]:
            return False
    return True


_POD_LINK_FIELDS = ("namespace", "owners", "group", "workload_ref", "jobset")


def _same_links(old: PodRecord, new: PodRecord) -> bool:
    """Return True when two records of one pod are filed under the same keys and resolve to the same owners (the
    fields :meth:`OwnershipIndex._link_keys` and ``_pod_owners`` read are equal)."""
    return all(getattr(old, name) == getattr(new, name) for name in _POD_LINK_FIELDS)


def event_involved(event: dict) -> dict:
    """Return an Event's involved object {kind, name, namespace, uid} (core/v1 ``involvedObject`` or
    events.k8s.io ``regarding``)."""
    return sig.as_dict(event.get("involvedObject") or event.get("regarding"))


@dataclass
class JobTree:
    """Everything linked to one TrainJob, plus what looked wrong while linking (``problems``: code, message).
    ``pods`` are the index's :class:`PodRecord`s (dicts where a caller built the tree by hand); both are read by
    the gates and :func:`records.job_record`."""

    trainjob: dict
    workloads: list[dict] = field(default_factory=list)
    pod_groups: list[dict] = field(default_factory=list)
    pods: list[PodRecord | dict] = field(default_factory=list)
    jobsets: list[dict] = field(default_factory=list)
    kueue_workloads: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    missing_pod_groups: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


_SMALL = 32


class _Links(dict):
    """A reverse table: key → the uids filed under it, stored as compactly as they come (most keys file one uid:
    a bare str costs nothing beyond the uid itself, a tuple 8 bytes a member, a set at least 216 bytes). A key with
    more than ``_SMALL`` uids gets a set, so adding stays O(1) for a 10,000-pod PodGroup; up to it a tuple (a
    job owns a dozen or two objects: a tuple of 14 costs 168 bytes, a set of 14 about 730)."""

    __slots__ = ()

    def add(self, key: object, uid: str) -> None:
        """File ``uid`` under ``key``."""
        current = self.get(key)
        if current is None:
            self[key] = uid
        elif isinstance(current, str):
            if current != uid:
                self[key] = (current, uid)
        elif isinstance(current, tuple):
            if uid not in current:
                self[key] = (*current, uid) if len(current) < _SMALL else {*current, uid}
        else:
            current.add(uid)

    def discard(self, key: object, uid: str) -> None:
        """Remove ``uid`` from ``key`` (the key goes when nothing is left under it)."""
        current = self.get(key)
        if current is None:
            return
        if isinstance(current, str):
            if current == uid:
                del self[key]
            return
        if isinstance(current, set):
            current.discard(uid)
            left = current
        else:
            left = tuple(member for member in current if member != uid)
        if not left:
            del self[key]
        elif len(left) == 1:
            self[key] = next(iter(left))
        elif isinstance(left, tuple):
            self[key] = left

    def members(self, key: object) -> tuple[str, ...] | set[str]:
        """Return the uids filed under ``key`` (an empty tuple when none); never mutate the result."""
        current = self.get(key)
        if current is None:
            return ()
        return (current,) if isinstance(current, str) else current


class OwnershipIndex:
    """Objects by kind and UID, with the reverse links needed to find a TrainJob's tree and the TrainJobs an object
    change affects. ``upsert``/``delete``/``replace`` return the UIDs of the TrainJobs whose state may have changed."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict]] = {kind: {} for kind in KINDS}
        self._named: dict[str, _Links] = {kind: _Links() for kind in _NAMED_KINDS}
        self._owned = _Links()  # owner uid → uids of the objects it owns
        self._workloads_by_controller = _Links()  # (namespace, TrainJob name) → Workload uids
        self._pod_groups_by_workload = _Links()  # (namespace, Workload name) → PodGroup uids
        self._pods_by_pod_group = _Links()  # (namespace, PodGroup name) → pod uids
        self._pods_by_jobset = _Links()  # (namespace, JobSet name) → pod uids
        self._kueue_by_job = _Links()  # TrainJob uid → Kueue Workload uids
        self._events_by_object: dict[str, dict[str, dict]] = defaultdict(dict)
        self._kind_of_uid: dict[str, str] = {}
        # TrainJob owner UIDs per object, parsed once when the object arrives (read on every recompute).
        self._trainjob_owners: dict[str, tuple[str, ...]] = {}

    # -- counts -------------------------------------------------------------------------------------------------

    def count(self, kind: str) -> int:
        """Return how many objects of ``kind`` are known."""
        return len(self.objects[kind])

    def trainjob_uids(self) -> list[str]:
        """Return the UIDs of every known TrainJob."""
        return list(self.objects[TRAINJOB])

    def trainjob(self, uid: str) -> dict | None:
        """Return the (slimmed) TrainJob with ``uid``, or None."""
        return self.objects[TRAINJOB].get(uid)

    # -- changes ------------------------------------------------------------------------------------------------

    def upsert(self, kind: str, obj: dict) -> set[str]:
        """Add or replace one object; return the affected TrainJob UIDs (before and after the change)."""
        uid = self._key(kind, sig.as_dict(obj))
        if not uid:
            return set()
        obj = slim(kind, obj)
        previous = self.objects[kind].get(uid)
        if previous is not None and _same(previous, obj):
            # Only the resourceVersion (or a field the tracker does not keep) changed: nothing to recompute.
            self.objects[kind][uid] = obj
            return set()
        if isinstance(previous, PodRecord) and isinstance(obj, PodRecord) and _same_links(previous, obj):
            # A pod changed phase, node or condition (most events): it is filed under the same keys and belongs
            # to the same jobs, so the links stay and its owners are resolved once.
            self.objects[kind][uid] = obj
            return self._pod_owners(uid, obj, 0)
        affected = self.owners(kind, uid) if previous is not None else set()
        self._remove(kind, uid)
        self._add(kind, uid, obj)
        return affected | self.owners(kind, uid)

    def delete(self, kind: str, obj: dict) -> set[str]:
        """Forget one object; return the affected TrainJob UIDs."""
        uid = self._key(kind, sig.as_dict(obj))
        if not uid or uid not in self.objects[kind]:
            return {uid} if kind == TRAINJOB and uid else set()
        affected = self.owners(kind, uid)
        self._remove(kind, uid)
        return affected

    def replace(self, kind: str, items: list[dict], *, affected: bool = True) -> set[str]:
        """Replace every object of ``kind`` by ``items`` (a relist); return the affected TrainJob UIDs.

        Objects whose resourceVersion did not change are left alone and affect nothing. With ``affected=False``
        (the caller recomputes every job anyway) the affected jobs are not resolved and the empty set is returned:
        resolving them is most of a first list's cost.
        """
        result: set[str] = set()
        seen: set[str] = set()
        current = self.objects[kind]
        for obj in items:
            uid = self._key(kind, sig.as_dict(obj))
            if not uid:
                continue
            seen.add(uid)
            old = current.get(uid)
            version = sig.resource_version_of(obj)
            if old is not None and version and version == (old.version if isinstance(old, PodRecord) else
                                                           sig.resource_version_of(old)):
                continue
            if affected:
                result |= self.upsert(kind, obj)
            else:
                stored = slim(kind, obj)
                if old is not None:
                    self._remove(kind, uid)
                self._add(kind, uid, stored)
        for uid in [u for u in current if u not in seen]:
            if affected:
                result |= self.owners(kind, uid)
            self._remove(kind, uid)
        return result

    # -- resolution ---------------------------------------------------------------------------------------------

    def owners(self, kind: str, uid: str, _depth: int = 0) -> set[str]:
        """Return the UIDs of the TrainJobs the object ``kind``/``uid`` currently belongs to."""
        if kind == TRAINJOB:
            return {uid}
        stored = self.objects[kind].get(uid)
        if isinstance(stored, PodRecord):
            return self._pod_owners(uid, stored, _depth)
        obj = stored
        if obj is None or _depth > 4:
            return set()
        result = set(self._owners_of(uid, obj))
        namespace = sig.namespace_of(obj)
        if kind == WORKLOAD:
            name = sig.controller_ref_trainjob(obj)
            owner = self._by_name(TRAINJOB, namespace, name) if name else None
            if owner:
                result.add(owner)
        elif kind == PODGROUP:
            for ref in sig.owner_refs(obj):
                if ref.kind == sig.WORKLOAD_KIND and ref.uid in self.objects[WORKLOAD]:
                    result |= self.owners(WORKLOAD, ref.uid, _depth + 1)
            workload_name, _ = sig.pod_group_workload(obj)
            workload_uid = self._by_name(WORKLOAD, namespace, workload_name) if workload_name else None
            if workload_uid:
                result |= self.owners(WORKLOAD, workload_uid, _depth + 1)
        elif kind == KUEUE_WORKLOAD:
            job_uid = sig.labels_of(obj).get(sig.KUEUE_JOB_UID_LABEL)
            if job_uid:
                result.add(job_uid)
        elif kind == EVENT:
            involved = event_involved(obj)
            target = sig.as_str(involved.get("uid"))
            target_kind = self._kind_of_uid.get(target)
            if target_kind and target_kind != EVENT:
                result |= self.owners(target_kind, target, _depth + 1)
            elif sig.as_str(involved.get("kind")) == sig.TRAINJOB_KIND and target:
                result.add(target)
        return result

    def tree(self, job_uid: str) -> JobTree | None:
        """Return everything linked to TrainJob ``job_uid`` (None when the TrainJob is unknown)."""
        trainjob = self.objects[TRAINJOB].get(job_uid)
        if trainjob is None:
            return None
        namespace, name = sig.namespace_of(trainjob), sig.name_of(trainjob)
        tree = JobTree(trainjob)
        owned = self._typed(self._owned.members(job_uid))

        workload_uids = {uid for kind, uid in owned if kind == WORKLOAD} | \
            set(self._workloads_by_controller.members((namespace, name)))
        # An object owned by another TrainJob (its controlling owner) is left out and reported.
        trainjob_owners = self._trainjob_owners
        for uid in sorted(workload_uids):
            workload = self.objects[WORKLOAD].get(uid)
            if workload is None:
                continue
            owners = trainjob_owners.get(uid, ())
            if owners and job_uid not in owners:
                tree.problems.append(("ForeignOwner", f"Workload {sig.name_of(workload)} names this TrainJob in its "
                                      "controllerRef but is owned by another TrainJob"))
                continue
            tree.workloads.append(workload)

        group_uids = {uid for kind, uid in owned if kind == PODGROUP}
        for workload in tree.workloads:
            workload_uid = sig.uid_of(workload)
            group_uids |= {uid for kind, uid in self._typed(self._owned.members(workload_uid)) if kind == PODGROUP}
            group_uids.update(self._pod_groups_by_workload.members((namespace, sig.name_of(workload))))
        for uid in sorted(group_uids):
            group = self.objects[PODGROUP].get(uid)
            if group is None:
                continue
            owners = trainjob_owners.get(uid, ())
            if owners and job_uid not in owners:
                tree.problems.append(("ForeignOwner", f"PodGroup {sig.name_of(group)} belongs to this TrainJob's "
                                      "Workload but is owned by another TrainJob"))
                continue
            tree.pod_groups.append(group)
        tree.pod_groups.sort(key=sig.name_of)

        tree.jobsets = [self.objects[JOBSET][uid] for kind, uid in sorted(owned) if kind == JOBSET
                        and uid in self.objects[JOBSET]]
        pod_uids = {uid for kind, uid in owned if kind == POD}
        for group in tree.pod_groups:
            pod_uids.update(self._pods_by_pod_group.members((namespace, sig.name_of(group))))
        for jobset in tree.jobsets:
            pod_uids |= {uid for kind, uid in self._typed(self._owned.members(sig.uid_of(jobset))) if kind == POD}
            pod_uids.update(self._pods_by_jobset.members((namespace, sig.name_of(jobset))))
        group_names = {sig.name_of(g) for g in tree.pod_groups}
        missing: set[str] = set()
        records = []
        stored_pods = self.objects[POD]
        for uid in pod_uids:
            record = stored_pods.get(uid)
            if record is None:
                continue
            owners = _pod_trainjob_owners(record.owners)  # what ``_owners_of`` answers for a pod
            if owners and job_uid not in owners:
                continue  # owned by another TrainJob
            records.append(record)
            group = record.group or record.group_name
            if group and group not in group_names and not self._by_name(PODGROUP, namespace, group):
                missing.add(group)
        records.sort(key=_record_name)
        # The records themselves, not dicts: the gates count them column by column and the stored row reads four
        # attributes; a pod is inflated (``as_object``) only where a gate reads a single pod.
        tree.pods = records
        tree.missing_pod_groups = sorted(missing)

        kueue_uids = {uid for kind, uid in owned if kind == KUEUE_WORKLOAD} | set(self._kueue_by_job.members(job_uid))
        tree.kueue_workloads = [self.objects[KUEUE_WORKLOAD][u] for u in sorted(kueue_uids)
                                if u in self.objects[KUEUE_WORKLOAD]]

        related = [job_uid, *(sig.uid_of(o) for o in (*tree.workloads, *tree.pod_groups, *tree.kueue_workloads)),
                   *(record.uid for record in records)]
        events = [event for uid in related for event in self._events_by_object.get(uid, {}).values()]
        events.sort(key=lambda e: (sig.as_str(e.get("lastTimestamp") or e.get("eventTime")),
                                   sig.resource_version_of(e)), reverse=True)
        tree.events = events[:EVENTS_PER_JOB]
        return tree

    # -- internals ----------------------------------------------------------------------------------------------

    @staticmethod
    def _key(kind: str, obj: dict) -> str:
        uid = sig.uid_of(obj)
        if uid:
            return uid
        # Objects without a uid (hand-made, or a malformed DELETED) are keyed by namespace/name.
        name = sig.name_of(obj)
        return f"{kind}:{sig.namespace_of(obj)}/{name}" if name else ""

    def _owners_of(self, uid: str, obj: dict | None) -> tuple[str, ...]:
        """Return the TrainJob owner UIDs of a stored object (controller first)."""
        stored = self.objects.get(self._kind_of_uid.get(uid, ""), {}).get(uid)
        if isinstance(stored, PodRecord):
            return _pod_trainjob_owners(stored.owners)
        return self._trainjob_owners.get(uid, ())

    def _typed(self, uids) -> list[tuple[str, str]]:
        """Return (kind, uid) for the known ``uids``."""
        kinds = self._kind_of_uid
        return [(kinds[uid], uid) for uid in uids if uid in kinds]

    def _pod_owners(self, uid: str, pod: PodRecord, depth: int) -> set[str]:
        """Pods (the most frequent events) are resolved from their record, without inflating it."""
        result = set(self._owners_of(uid, None))
        if depth > 4:
            return result
        group = pod.group or sig.as_str((pod.workload_ref or {}).get("podGroup"))
        group_uid = self._by_name(PODGROUP, pod.namespace, group) if group else None
        if group_uid:
            result |= self.owners(PODGROUP, group_uid, depth + 1)
        jobsets = {owner[3] for owner in pod.owners if owner[1] == sig.JOBSET_KIND and owner[3] in self.objects[JOBSET]}
        if pod.jobset:
            jobset_uid = self._by_name(JOBSET, pod.namespace, pod.jobset)
            if jobset_uid:
                jobsets.add(jobset_uid)
        for jobset_uid in jobsets:
            result |= self.owners(JOBSET, jobset_uid, depth + 1)
        return result

    def _by_name(self, kind: str, namespace: str, name: str) -> str | None:
        """Return the UID of the ``kind`` object named ``namespace/name``: with several (a re-created object whose
        predecessor is still being deleted), the one not being deleted, then the newest."""
        uids = self._named[kind].get((namespace, name))
        if not uids:
            return None
        if isinstance(uids, str):
            return uids
        objects = self.objects[kind]
        return max(uids, key=lambda u: (not sig.metadata(objects[u]).get("deletionTimestamp"),
                                        sig.as_str(sig.metadata(objects[u]).get("creationTimestamp")), u))

    def _link_keys(self, kind: str, obj: dict | PodRecord) -> list[tuple[_Links, object]]:
        """Return the (reverse table, key) pairs object ``obj`` of ``kind`` is filed under (recomputed on removal,
        so no per-object bookkeeping is kept)."""
        if isinstance(obj, PodRecord):
            keys: list[tuple[_Links, object]] = [(self._owned, owner[3]) for owner in obj.owners]
            group = obj.group or sig.as_str((obj.workload_ref or {}).get("podGroup"))
            if group:
                keys.append((self._pods_by_pod_group, (obj.namespace, group)))
            if obj.jobset:
                keys.append((self._pods_by_jobset, (obj.namespace, obj.jobset)))
            return keys
        namespace, name = sig.namespace_of(obj), sig.name_of(obj)
        keys: list[tuple[_Links, object]] = []
        if kind in self._named and name:
            keys.append((self._named[kind], (namespace, name)))
        keys += [(self._owned, ref.uid) for ref in sig.owner_refs(obj)]
        if kind == WORKLOAD:
            trainjob = sig.controller_ref_trainjob(obj)
            if trainjob:
                keys.append((self._workloads_by_controller, (namespace, trainjob)))
        elif kind == PODGROUP:
            workload, _ = sig.pod_group_workload(obj)
            if workload:
                keys.append((self._pod_groups_by_workload, (namespace, workload)))
        elif kind == POD:
            group = sig.pod_group_name_of(obj)
            if group:
                keys.append((self._pods_by_pod_group, (namespace, group)))
            jobset = sig.labels_of(obj).get(sig.JOBSET_NAME_LABEL)
            if jobset:
                keys.append((self._pods_by_jobset, (namespace, jobset)))
        elif kind == KUEUE_WORKLOAD:
            job_uid = sig.labels_of(obj).get(sig.KUEUE_JOB_UID_LABEL)
            if job_uid:
                keys.append((self._kueue_by_job, job_uid))
        return keys

    def _add(self, kind: str, uid: str, stored: dict | PodRecord) -> None:
        self.objects[kind][uid] = stored
        self._kind_of_uid[uid] = kind
        if isinstance(stored, PodRecord):  # pod records carry their owners themselves
            for table, key in self._link_keys(kind, stored):
                table.add(key, uid)
            return
        obj = stored
        if kind == EVENT:
            self._add_event(uid, obj)
            return
        if kind != POD:  # pod records carry their owners themselves
            owners = tuple(sig.trainjob_owner_uids(obj))
            if owners:
                self._trainjob_owners[uid] = owners
        for table, key in self._link_keys(kind, obj):
            table.add(key, uid)

    def _add_event(self, uid: str, event: dict) -> None:
        target = sig.as_str(event_involved(event).get("uid"))
        if not target:
            return
        bucket = self._events_by_object[target]
        bucket[uid] = event
        if len(bucket) > EVENTS_PER_OBJECT:
            oldest = min(bucket, key=lambda k: sig.as_str(bucket[k].get("lastTimestamp") or
                                                          bucket[k].get("eventTime")))
            del bucket[oldest]
            self.objects[EVENT].pop(oldest, None)
            self._kind_of_uid.pop(oldest, None)

    def _remove(self, kind: str, uid: str) -> None:
        stored = self.objects[kind].pop(uid, None)
        if stored is None:
            return
        self._kind_of_uid.pop(uid, None)
        self._trainjob_owners.pop(uid, None)
        obj = stored
        if kind == EVENT:
            target = sig.as_str(event_involved(obj).get("uid"))
            bucket = self._events_by_object.get(target)
            if bucket is not None:
                bucket.pop(uid, None)
                if not bucket:
                    del self._events_by_object[target]
            return
        for table, key in self._link_keys(kind, obj):
            table.discard(key, uid)
