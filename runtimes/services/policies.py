"""Write operations on runtime policies: create, update, roll back, delete, import, validate.

Every write validates the manifest with the domain validator and refuses it when there are errors (warnings are
stored), and every write that changes the manifest adds a revision in the same transaction. Concurrent edits are
resolved by compare-and-set on `RuntimePolicy.version` (no row locks held across user think-time): an update
names the version it was based on and loses with `StaleVersion` if someone else saved first.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from runtimes.choices import ImportMode, RevisionSource
from runtimes.domain.constants import FRAMEWORK_LABEL, ML_POLICY_KINDS
from runtimes.domain.diff import semantically_equal, structural_diff
from runtimes.domain.labels import is_dns1123_subdomain
from runtimes.domain.manifest import MAX_DEPTH, ManifestError, load_runtimes, strip_server_fields
from runtimes.domain.patch import merge_patch
from runtimes.domain.policy import ValidationOptions, ValidationReport, scheduling_summary, validate_runtime
from runtimes.errors import (
    ImportInvalid,
    PolicyInvalid,
    PolicyNameTaken,
    PolicyNotFound,
    RevisionNotFound,
    StaleVersion,
)
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy
from runtimes.services.clusters import enabled_clusters
from trainer_portal.cluster import selectors as cluster_selectors

MAX_MESSAGE_LENGTH = 500
logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------------- results


@dataclass
class ImportDocument:
    """The outcome for one imported document: its index, name, start line, action and problems (warnings)."""

    document: int
    name: str
    line: int | None
    action: str  # "created" | "updated" | "unchanged"
    problems: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ImportResult:
    """What an import did: the names created, updated and left unchanged, and each document's warnings."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    documents: list[ImportDocument] = field(default_factory=list)

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Return every document's problems as one flat list, each tagged with `document` and `line`."""
        return [
            {**problem, "document": doc.document, "line": problem.get("line") or doc.line}
            for doc in self.documents
            for problem in doc.problems
        ]


# --------------------------------------------------------------------------------------------------- services


def validation_options() -> ValidationOptions:
    """Return the cluster facts validation depends on, from settings (read per call, never at import).

    `SCHEDULING_COMPOSITE_ENABLED` (default False: Trainer's composite PodGroup gates are alpha and off) and
    `SCHEDULING_MAX_LEVEL3_REPLICAS` (default 1, Trainer v2.4); see docs/decisions.md D6 and D7. The topology gate
    and the CRD's disruptionMode form come from the last cluster status check (D9, D11).
    """
    defaults = ValidationOptions()
    # What the last cluster status check learnt (decisions D9, D11): unknown until the cluster page has been read.
    facts = cluster_selectors.scheduling_facts()
    return ValidationOptions(
        composite_enabled=bool(getattr(settings, "SCHEDULING_COMPOSITE_ENABLED", defaults.composite_enabled)),
        max_level3_replicas=int(getattr(settings, "SCHEDULING_MAX_LEVEL3_REPLICAS", defaults.max_level3_replicas)),
        known_topology_keys=defaults.known_topology_keys,
        disruption_mode_form=facts["disruption_mode"],
        topology_gate=facts["topology_gate"],
        dra_claims_gate=facts.get("dra_claims_gate"),
    )


def policy_validate(*, manifest: Any) -> ValidationReport:
    """Return the domain validation report (errors and warnings) for `manifest`; nothing is saved. Never raises."""
    return validate_runtime(manifest, validation_options())


@transaction.atomic
def policy_create(*, manifest: Any, author: Any, message: str = "", source: str = RevisionSource.API) -> RuntimePolicy:
    """Create a policy from `manifest` with revision 1 and return it.

    Raises PolicyInvalid when the manifest has errors (for an adoption, errors other than the importable ones of
    Trainer v2.4.0, decision D18) and PolicyNameTaken when metadata.name is in use.
    """
    manifest = _clean_manifest(manifest)
    report = _validate_or_raise(manifest, source=source)
    return _create(manifest=manifest, report=report, author=author, message=message, source=source)


@transaction.atomic
def policy_update(
    *,
    name: str,
    manifest: Any,
    expected_version: int,
    author: Any,
    message: str = "",
    source: str = RevisionSource.API,
) -> RuntimePolicy:
    """Replace the manifest of policy `name`, based on `expected_version`, and return the updated policy.

    A manifest semantically equal to the current one changes nothing (no revision) and the policy is returned as
    is. Raises PolicyNotFound, PolicyInvalid (errors, or metadata.name differs from `name`), and StaleVersion when
    the policy is no longer at `expected_version`.
    """
    policy = _get_policy(name)
    manifest = _clean_manifest(manifest)
    _check_same_name(manifest, name)
    if semantically_equal(policy.manifest, manifest):
        # Nothing to save and nothing to conflict with: the stored state is already what the caller wants.
        return policy
    report = _validate_or_raise(manifest, source=source)
    return _update(
        policy=policy,
        manifest=manifest,
        report=report,
        expected_version=expected_version,
        author=author,
        message=message,
        source=source,
    )


@transaction.atomic
def policy_patch(
    *,
    name: str,
    patch: dict,
    expected_version: int,
    author: Any,
    message: str = "",
    source: str = RevisionSource.API,
) -> RuntimePolicy:
    """Apply JSON merge patch `patch` (RFC 7396) to policy `name`'s manifest at `expected_version`; return it.

    Raises PolicyNotFound, StaleVersion (checked before patching, since the patch is relative to what the caller
    saw) and PolicyInvalid, like `policy_update`.
    """
    policy = _get_policy(name)
    if policy.version != expected_version:
        raise _stale(policy, expected_version)
    if not isinstance(patch, dict):
        raise PolicyInvalid([_error("", "a merge patch must be a JSON object", "type")])
    return policy_update(
        name=name,
        manifest=merge_patch(policy.manifest, patch),
        expected_version=expected_version,
        author=author,
        message=message,
        source=source,
    )


@transaction.atomic
def policy_rollback(*, name: str, to_revision: int, expected_version: int, author: Any) -> RuntimePolicy:
    """Make a new revision of policy `name` whose manifest is revision `to_revision`'s; return the policy.

    Rolling back to a manifest equal to the current one changes nothing. Raises PolicyNotFound, RevisionNotFound,
    StaleVersion (the policy moved past `expected_version`) and PolicyInvalid (the old manifest fails today's rules).
    """
    # The row is locked: the "already equal" check and the write must see the same version, or a concurrent save
    # landing between them would make this answer success for a revision it did not write.
    policy = _get_policy_for_update(name)
    if policy is None:
        raise PolicyNotFound(name)
    if policy.version != expected_version:
        raise _stale(policy, expected_version)
    try:
        revision = PolicyRevision.objects.get(policy=policy, number=to_revision)
    except PolicyRevision.DoesNotExist:
        raise RevisionNotFound(name, to_revision)
    if semantically_equal(policy.manifest, revision.manifest):
        return policy
    report = _validate_or_raise(revision.manifest)
    return _update(
        policy=policy,
        manifest=revision.manifest,
        report=report,
        expected_version=expected_version,
        author=author,
        message=f"Roll back to revision {to_revision}",
        source=RevisionSource.ROLLBACK,
    )


@transaction.atomic
def policy_delete(*, name: str, expected_version: int | None = None, actor: Any) -> None:
    """Delete policy `name` and its history (not the cluster object; that is the sync work's job).

    With `expected_version`, delete only if the policy is still at that version. Returns None. Raises
    PolicyNotFound and StaleVersion.
    """
    with transaction.atomic():
        # The row is locked before its revisions are collected: an import or edit holding it finishes first, so a
        # revision it adds is deleted with the policy instead of pointing at a deleted row (an IntegrityError).
        policy = _get_policy_for_update(name)
        if policy is None:
            raise PolicyNotFound(name)
        if expected_version is not None and policy.version != expected_version:
            raise _stale(policy, expected_version)
        RuntimePolicy.objects.filter(pk=policy.pk).delete()
    logger.info("policy %s deleted at version %s by %s", name, policy.version, _username(actor))


def policies_import(
    *, text: str | bytes, author: Any, message: str = "", mode: str = ImportMode.CREATE_ONLY
) -> ImportResult:
    """Import every ClusterTrainingRuntime in `text` (YAML, multi-document, List, or JSON) and return what happened.

    All or nothing: when any document fails to parse or validate, has a duplicate name, or (mode "create-only")
    names an existing policy, nothing is saved and ImportInvalid lists each document's problems with its index
    and line. Mode "upsert" updates existing policies (no revision when unchanged). Raises ImportInvalid and
    ValueError for an unknown mode.
    """
    if mode not in ImportMode.values:
        raise ValueError(f"unknown import mode {mode!r}; use one of {', '.join(ImportMode.values)}")
    try:
        manifests = load_runtimes(text)
    except ManifestError as exc:
        where = str(exc) if exc.line is not None else exc.message
        raise ImportInvalid([_manifest_error_document(exc)], message=f"Nothing was imported: {where}")
    starts = _document_start_lines(text, len(manifests))

    checked: list[tuple[ImportDocument, dict, ValidationReport]] = []
    failures: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(manifests):
        storage_problem = _storage_problem(raw)
        if storage_problem is None or storage_problem["code"] == "bad_text":
            raw = _join_surrogate_pairs(raw)
            storage_problem = _storage_problem(raw)
        manifest = strip_server_fields(raw) if storage_problem is None else raw
        name = _manifest_name(manifest)
        report = validate_runtime(manifest, validation_options())
        # Decision D18: a runtime broken only by the Trainer v2.4.0 rules is stored with its errors shown.
        problems = [_problem_dict(p) for p in report.import_blocking_errors]
        if storage_problem is not None:
            problems.insert(0, storage_problem)
        if name and name in seen:
            problems.append(
                _error("metadata.name", f"'{name}' is also defined by document {seen[name] + 1}", "duplicate")
            )
        if name:
            seen.setdefault(name, index)
        doc = ImportDocument(document=index, name=name, line=starts[index], action="", problems=problems)
        checked.append((doc, manifest, report))
        if problems:
            failures.append(_document_dict(doc))

    with transaction.atomic():
        names = [doc.name for doc, _, _ in checked]
        # Locked so a concurrent edit cannot slip between our comparison and our compare-and-set update.
        existing = {p.name: p for p in RuntimePolicy.objects.select_for_update().filter(name__in=names)}
        if mode == ImportMode.CREATE_ONLY:
            for doc, _, _ in checked:
                if doc.name in existing and doc.name and not doc.problems:
                    doc.problems.append(
                        _error(
                            "metadata.name",
                            f"a policy named '{doc.name}' already exists; import with mode 'upsert' to update it",
                            "exists",
                        )
                    )
                    failures.append(_document_dict(doc))
        if failures:
            failures.sort(key=lambda d: d["document"])
            raise ImportInvalid(failures)

        result = ImportResult()
        for doc, manifest, report in checked:
            doc.problems = [_problem_dict(p) for p in [*report.errors, *report.warnings]]
            current = existing.get(doc.name)
            if current is None:
                _create(manifest=manifest, report=report, author=author, message=message, source=RevisionSource.IMPORT)
                doc.action = "created"
                result.created.append(doc.name)
            elif semantically_equal(current.manifest, manifest):
                doc.action = "unchanged"
                result.unchanged.append(doc.name)
            else:
                _update(
                    policy=current,
                    manifest=manifest,
                    report=report,
                    expected_version=current.version,
                    author=author,
                    message=message,
                    source=RevisionSource.IMPORT,
                )
                doc.action = "updated"
                result.updated.append(doc.name)
            result.documents.append(doc)
        return result


# --------------------------------------------------------------------------------------------------- helpers


def _get_policy_for_update(name: str) -> RuntimePolicy | None:
    if not is_dns1123_subdomain(name):
        return None
    return RuntimePolicy.objects.select_for_update().filter(name=name).first()


def _get_policy(name: str) -> RuntimePolicy:
    if not is_dns1123_subdomain(name):  # no policy has it, and PostgreSQL refuses a NUL in a query
        raise PolicyNotFound(name)
    try:
        return RuntimePolicy.objects.get(name=name)
    except RuntimePolicy.DoesNotExist:
        raise PolicyNotFound(name)


def _clean_manifest(manifest: Any) -> dict:
    if not isinstance(manifest, dict):
        kind = "list" if isinstance(manifest, list) else type(manifest).__name__
        raise PolicyInvalid(
            [_error("", f"the manifest must be a mapping (apiVersion, kind, metadata, spec), not a {kind}", "type")]
        )
    problem = _storage_problem(_join_surrogate_pairs(manifest))
    if problem is not None:
        raise PolicyInvalid([problem])
    return strip_server_fields(_join_surrogate_pairs(manifest))


def _storage_problem(manifest: dict) -> dict[str, Any] | None:
    """Return a problem when `manifest` cannot be stored or copied safely (too deep, NUL, lone surrogate, NaN).

    PostgreSQL's jsonb refuses NUL characters and the UTF-8 codec refuses lone surrogates (both reach us through
    JSON `\\u` escapes); deep nesting would exhaust the recursion limit while copying.
    """
    stack: list[tuple[Any, str, int]] = [(manifest, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            return _error(path, f"the manifest is nested deeper than {MAX_DEPTH} levels", "too_deep")
        if isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if _bad_text(key):
                    return _error(path, f"key {key!r} contains a NUL or an unpaired surrogate character", "bad_text")
                stack.append((item, child, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value))
        elif isinstance(value, str) and _bad_text(value):
            return _error(path, "contains a NUL or an unpaired surrogate character; remove it", "bad_text")
        elif isinstance(value, float) and not math.isfinite(value):
            return _error(path, f"{value} is not a finite number; JSON (and Kubernetes) cannot store it", "not_finite")
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _join_surrogate_pairs(value: Any, depth: int = 0) -> Any:
    """Return `value` with UTF-16 surrogate pairs in its strings joined into the characters they encode.

    YAML loaders decode `"\\ud83d\\ude00"` (how JSON tools escape 😀) into two lone surrogates; joined, they
    are the emoji the author meant. Unpaired surrogates are left for `_storage_problem` to report.
    """
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        try:
            return value.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            return value
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {_join_surrogate_pairs(k, depth + 1): _join_surrogate_pairs(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_join_surrogate_pairs(item, depth + 1) for item in value]
    return value


def _bad_text(text: str) -> bool:
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# Where a manifest comes from something that already exists (a file, a cluster), so the Trainer v2.4.0 rules may
# store it with their errors instead of losing it (decision D18).
STORED_WITH_PROBLEMS_SOURCES = frozenset({RevisionSource.IMPORT, RevisionSource.ADOPT})


def _validate_or_raise(manifest: dict, *, source: str = RevisionSource.API) -> ValidationReport:
    report = validate_runtime(manifest, validation_options())
    blocking = report.import_blocking_errors if source in STORED_WITH_PROBLEMS_SOURCES else report.errors
    if blocking:
        raise PolicyInvalid([_problem_dict(p) for p in [*report.errors, *report.warnings]], report=report)
    return report


def _check_same_name(manifest: dict, name: str) -> None:
    new_name = _manifest_name(manifest)
    if not new_name:
        raise PolicyInvalid([_error("metadata.name", f"metadata.name is required; set it to '{name}'", "required")])
    if new_name != name:
        raise PolicyInvalid(
            [
                _error(
                    "metadata.name",
                    f"a policy cannot be renamed (was '{name}', got '{new_name}'); set metadata.name back to "
                    f"'{name}', or create a new policy and delete this one",
                    "immutable",
                )
            ]
        )


# Names that collide with fixed URL segments under /runtimes/ and /api/v1/runtimes/ (import, validate, sync…):
# a policy with such a name could be stored but never reached at its own URL.
RESERVED_POLICY_NAMES = frozenset({"new", "import", "export", "validate", "sync"})


def _create(*, manifest: dict, report: ValidationReport, author: Any, message: str, source: str) -> RuntimePolicy:
    name = _manifest_name(manifest)
    if name in RESERVED_POLICY_NAMES:
        raise PolicyInvalid(
            [
                _error(
                    "metadata.name",
                    f"'{name}' is reserved by the portal's URLs ({', '.join(sorted(RESERVED_POLICY_NAMES))}); "
                    f"choose another name, e.g. '{name}-runtime'",
                    "reserved",
                )
            ]
        )
    if RuntimePolicy.objects.filter(name=name).exists():
        raise PolicyNameTaken(name)
    try:
        # A savepoint, so a concurrent insert of the same name surfaces as PolicyNameTaken, not a broken transaction.
        with transaction.atomic():
            policy = RuntimePolicy.objects.create(
                name=name,
                manifest=manifest,
                version=1,
                created_by=_user_or_none(author),
                updated_by=_user_or_none(author),
                **_derived_fields(manifest, report),
            )
    except IntegrityError:
        raise PolicyNameTaken(name)
    # A new policy is a draft on every enabled cluster (its targets until someone narrows them).
    PolicySync.objects.bulk_create(
        [PolicySync(policy=policy, cluster=cluster) for cluster in enabled_clusters()]
    )
    _add_revision(policy=policy, number=1, manifest=manifest, author=author, message=message, source=source)
    return policy


def _update(
    *,
    policy: RuntimePolicy,
    manifest: dict,
    report: ValidationReport,
    expected_version: int,
    author: Any,
    message: str,
    source: str,
) -> RuntimePolicy:
    new_version = expected_version + 1
    # Compare-and-set: the WHERE on version makes a concurrent writer that saved first win; under READ COMMITTED
    # the loser's UPDATE waits for the winner's commit, re-reads the row and matches nothing.
    rows = RuntimePolicy.objects.filter(pk=policy.pk, version=expected_version).update(
        manifest=manifest,
        version=new_version,
        updated_at=timezone.now(),
        updated_by=_user_or_none(author),
        **_derived_fields(manifest, report),
    )
    if rows != 1:
        current = RuntimePolicy.objects.filter(pk=policy.pk).first()
        if current is None:
            raise PolicyNotFound(policy.name)
        raise _stale(current, expected_version)
    _add_revision(policy=policy, number=new_version, manifest=manifest, author=author, message=message, source=source)
    policy.refresh_from_db()
    return policy


def _add_revision(
    *, policy: RuntimePolicy, number: int, manifest: dict, author: Any, message: str, source: str
) -> PolicyRevision:
    user = _user_or_none(author)
    logger.debug("policy %s: revision %s (%s) by %s", policy.name, number, source, _username(author))
    return PolicyRevision.objects.create(
        policy=policy,
        number=number,
        manifest=manifest,
        message=(message or "")[:MAX_MESSAGE_LENGTH],
        source=source,
        author=user,
        author_name=user.get_username()[:150] if user is not None else "",
    )


def _stale(current: RuntimePolicy, expected_version: int) -> StaleVersion:
    base = PolicyRevision.objects.filter(policy=current, number=expected_version).values_list("manifest", flat=True)
    base_manifest = next(iter(base), None)
    changes = structural_diff(base_manifest, current.manifest) if base_manifest is not None else []
    return StaleVersion(
        name=current.name, expected_version=expected_version, current_version=current.version, changes=changes
    )


def _derived_fields(manifest: dict, report: ValidationReport) -> dict[str, Any]:
    summary = scheduling_summary(manifest)
    return {
        "framework": _framework(manifest)[:63],
        "scheduling_mode": (summary.mode or "")[:32],
        "scheduling_summary": _truncate(summary.text or "", 200),
        # The problems of the current revision: warnings, plus the errors an import or adoption may store (D18).
        "warnings": [_problem_dict(p) for p in [*report.errors, *report.warnings]],
    }


def _framework(manifest: dict) -> str:
    metadata = manifest.get("metadata") or {}
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    if isinstance(labels, dict) and isinstance(labels.get(FRAMEWORK_LABEL), str):
        return labels[FRAMEWORK_LABEL]
    spec = manifest.get("spec") or {}
    ml_policy = spec.get("mlPolicy") if isinstance(spec, dict) else None
    if isinstance(ml_policy, dict):
        for kind in ML_POLICY_KINDS:
            if kind in ml_policy:
                return kind
    return ""


def _manifest_name(manifest: dict) -> str:
    metadata = manifest.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _user_or_none(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) and getattr(user, "pk", None) is not None else None


def _username(user: Any) -> str:
    user = _user_or_none(user)
    return user.get_username() if user is not None else "(system)"


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _problem_dict(problem: Any) -> dict[str, Any]:
    return {
        "path": problem.path,
        "message": problem.message,
        "severity": problem.severity,
        "code": problem.code,
    }


def _error(path: str, message: str, code: str) -> dict[str, Any]:
    return {"path": path, "message": message, "severity": "error", "code": code}


def _document_dict(doc: ImportDocument) -> dict[str, Any]:
    return {"document": doc.document, "name": doc.name, "line": doc.line, "problems": doc.problems}


def parse_problem(exc: ManifestError) -> dict[str, Any]:
    """Return the problem dict (``code`` "parse", with ``line`` and ``column``) that reports a manifest that could
    not be read."""
    return {
        "path": exc.path or "",
        "message": exc.message,
        "severity": "error",
        "code": "parse",
        "line": exc.line,
        "column": exc.column,
    }


def _manifest_error_document(exc: ManifestError) -> dict[str, Any]:
    return {"document": exc.document or 0, "name": "", "line": exc.line, "problems": [parse_problem(exc)]}


_SEPARATOR = re.compile(r"^---(\s|$)")


def _document_start_lines(text: str | bytes, count: int) -> list[int | None]:
    """Return the 1-based line where each non-empty YAML document starts, or Nones when that cannot be told.

    Lines are only reported when the non-empty `---` segments match the parsed runtimes one to one (not for JSON
    or `List` documents, whose items share one document).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig", errors="replace")
    starts: list[int] = []
    segment_start: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if _SEPARATOR.match(line):
            segment_start = None
            continue
        stripped = line.strip()
        if segment_start is None and stripped and not stripped.startswith("#"):
            segment_start = number
            starts.append(number)
    if len(starts) != count:
        return [None] * count
    return list(starts)
