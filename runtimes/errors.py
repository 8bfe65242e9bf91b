"""Exceptions raised by `runtimes.services` and `runtimes.selectors`: the policy app's `PortalError`s.

They carry plain data (no HTTP or form types) so every interface — HTML views, REST API, commands, tasks — can
map them to its own way of reporting; the API maps them all through `trainer_portal.api.exceptions`, driven by
``status``, ``code`` and ``fields``. `PolicyError` is the common base.
"""

from __future__ import annotations

from typing import Any

from trainer_portal.errors import PortalError, field

MANIFEST_PREFIX = "manifest"


class PolicyError(PortalError):
    """Base class: a policy operation was refused. `message` is a sentence fit to show to the user."""

    code = "policy_error"
    status = 400


def _prefixed(problems: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """Return `problems` with `prefix` put in front of each path (the API reports manifest paths under it).

    Every problem also gets ``manifestPath``, its path inside the manifest: `path` names the place in the request
    body, `manifestPath` the place in the manifest, on every endpoint that reports manifest problems.
    """
    result = []
    for problem in problems:
        path = problem.get("path") or ""
        prefixed = f"{prefix}.{path}" if path and prefix else (path or prefix)
        result.append({**problem, "path": prefixed, "manifestPath": problem.get("manifestPath", path)})
    return result


def body_problems(problems: list[dict[str, Any]], *, wrapped: bool) -> list[dict[str, Any]]:
    """Return manifest `problems` with request-body paths: under ``manifest.`` when the body carried the manifest
    in its ``manifest`` field (`wrapped`), as they are when the manifest was the body. ``manifestPath`` is added."""
    return _prefixed(problems, MANIFEST_PREFIX if wrapped else "")


class PolicyInvalid(PolicyError):
    """The manifest has blocking problems and nothing was saved.

    `problems` is a list of dicts `{path, message, severity, code}` (plus `document` and `line` for imports);
    `report` is the domain ValidationReport when validation produced the problems (None for parse errors).
    """

    code = "invalid"
    status = 400

    def __init__(self, problems: list[dict[str, Any]], *, report: Any = None, message: str | None = None) -> None:
        self.problems = problems
        self.report = report
        errors = [p for p in problems if p.get("severity", "error") == "error"]
        if message is None:
            if len(errors) == 1:
                first = errors[0]
                message = f"{first['path']}: {first['message']}" if first.get("path") else first["message"]
            else:
                message = f"The manifest has {len(errors)} errors; fix them and save again."
        super().__init__(message)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Return the blocking problems only."""
        return [p for p in self.problems if p.get("severity", "error") == "error"]

    @property
    def fields(self) -> list[dict[str, Any]]:
        """Return every problem, its path under ``manifest.`` (the body field that carried the manifest)."""
        return _prefixed(self.problems, MANIFEST_PREFIX)


class ImportInvalid(PolicyInvalid):
    """An import was refused as a whole (nothing saved). `documents` lists each document's problems.

    Each entry of `documents` is `{document, name, line, problems}` with a 0-based document index and the 1-based
    line where the document starts (None when unknown, e.g. JSON input).
    """

    def __init__(self, documents: list[dict[str, Any]], *, message: str | None = None) -> None:
        self.documents = documents
        problems = [
            {**problem, "document": doc["document"], "line": problem.get("line") or doc.get("line")}
            for doc in documents
            for problem in doc["problems"]
        ]
        failing = sum(1 for doc in documents if any(p.get("severity", "error") == "error" for p in doc["problems"]))
        if message is None:
            message = f"Nothing was imported: {failing} document(s) have errors."
        super().__init__(problems, message=message)

    @property
    def fields(self) -> list[dict[str, Any]]:
        """Return every problem as is: each names its ``document`` and ``line`` in the imported text."""
        return self.problems


class TargetClustersChanged(PolicyError):
    """Someone changed a policy's target clusters since the caller read them (an edit would silently undo theirs)."""

    code = "conflict"
    status = 409

    def __init__(self, current: list[str]) -> None:
        self.current = current
        shown = ", ".join(current) if current else "every enabled cluster"
        super().__init__(f"The target clusters were changed meanwhile (now: {shown}); review them and choose again.",
                         fields=[field("expectedTargetClusters", "does not match the stored target clusters")])


class PolicyNameTaken(PolicyError):
    """A policy with this name already exists."""

    code = "name_taken"
    status = 409

    def __init__(self, name: str) -> None:
        self.name = name
        message = f"A policy named '{name}' already exists; choose another metadata.name or edit that one."
        super().__init__(message, fields=[field(f"{MANIFEST_PREFIX}.metadata.name", message, self.code)])


class PolicyNotFound(PolicyError):
    """No policy has this name."""

    code = "not_found"
    status = 404

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"No policy named '{name}'.")


class RevisionNotFound(PolicyError):
    """The policy has no revision with this number."""

    code = "not_found"
    status = 404

    def __init__(self, name: str, number: int) -> None:
        self.name = name
        self.number = number
        super().__init__(f"Policy '{name}' has no revision {number}.")


class StaleVersion(PolicyError):
    """The policy changed since the caller read it (optimistic-concurrency conflict); nothing was saved.

    `current_version` is the version to reload; `changes` is the list of domain `Change`s between the caller's base
    revision and the current manifest (empty when the base revision is unknown).
    """

    code = "conflict"
    status = 409

    def __init__(self, *, name: str, expected_version: int, current_version: int, changes: list[Any]) -> None:
        self.name = name
        self.expected_version = expected_version
        self.current_version = current_version
        self.changes = changes
        super().__init__(
            f"Policy '{name}' changed since you loaded it (you edited version {expected_version}, it is now at "
            f"version {current_version}); reload, re-apply your change and save again.",
            extra={
                "code": "conflict",
                "currentVersion": current_version,
                "expectedVersion": expected_version,
                "changes": [change.as_dict() for change in changes],
            },
        )


class SyncRefused(PolicyError):
    """The policy's sync state does not allow this action now (not drifted, not live, vanished, racing)."""

    code = "conflict"
    status = 409


class SyncNotQueued(PolicyError):
    """The sync was recorded but the task broker refused its message; the rows are marked failed, retry later."""

    code = "unavailable"
    status = 503


class UnknownPolicies(PolicyError):
    """A bulk action named policies that do not exist; nothing was queued."""

    code = "invalid"
    status = 400

    def __init__(self, names: list[str]) -> None:
        self.names = names
        message = f"Unknown policies: {', '.join(names)}."
        super().__init__(message, fields=[field("names", message)])


class SyncBatchNotFound(PolicyError):
    """No bulk sync batch has this id."""

    code = "not_found"
    status = 404

    def __init__(self, batch_id: str) -> None:
        self.batch_id = batch_id
        super().__init__(f"No sync batch '{batch_id}'.")


CONFIRM_STARTUP_DEADLOCK = "confirmStartupDeadlock"


def _problem_fields(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [field(p.get("path", ""), p.get("message", ""), p.get("code", "invalid")) for p in problems]


class NotApplicable(SyncRefused):
    """The policy cannot be applied as stored: it has errors, kept from an import or adoption (decision D18) or found
    against the last cluster check (e.g. the CRD's disruptionMode form, D9).

    `problems` are the errors, each `{path, message, severity, code}`; they are also the API's `fields`.
    """

    code = "not_applicable"
    status = 409

    def __init__(self, name: str, problems: list[dict[str, Any]]) -> None:
        self.name = name
        self.problems = problems
        first = problems[0]
        super().__init__(
            f"'{name}' has {len(problems)} error(s) this cluster would reject (kept from an import or adoption, or "
            f"found by the last cluster check; first: {first['path']}: {first['message']}); fix them in the editor "
            "and save, then apply.",
            fields=_problem_fields(problems),
        )


class StartupDeadlockUnconfirmed(SyncRefused):
    """Applying would install a policy whose gang can never reach minCount (dependsOn inside one gang), and the
    caller did not confirm it. `names` are the policies concerned; `problems` the deadlock warnings. The API's
    `fields` name `confirmStartupDeadlock` first, then the gangs."""

    code = "startup_deadlock_unconfirmed"
    status = 409

    def __init__(self, names: list[str], problems: list[dict[str, Any]]) -> None:
        self.names = names
        self.problems = problems
        which = ", ".join(names)
        confirm = field(
            CONFIRM_STARTUP_DEADLOCK,
            "set to true to apply a policy whose gang never reaches minCount (startup order)",
            "required",
        )
        super().__init__(
            f"{which}: a gang never schedules on a real cluster (startup order: a ReplicatedJob waits for another in "
            f"its own gang, so minCount is never reached). Send {CONFIRM_STARTUP_DEADLOCK}: true (or tick the "
            "confirmation) to apply anyway, or give the dependent ReplicatedJobs separate entries.",
            fields=[confirm, *_problem_fields(problems)],
        )
