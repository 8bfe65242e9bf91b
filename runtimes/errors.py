"""Exceptions raised by `runtimes.services` and `runtimes.selectors`.

They carry plain data (no HTTP or form types) so every interface — HTML views, REST API, commands, tasks — can
map them to its own way of reporting. `PolicyError` is the common base.
"""

from __future__ import annotations

from typing import Any


class PolicyError(Exception):
    """Base class: a policy operation was refused. `message` is a sentence fit to show to the user."""

    code = "policy_error"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class PolicyInvalid(PolicyError):
    """The manifest has blocking problems and nothing was saved.

    `problems` is a list of dicts `{path, message, severity, code}` (plus `document` and `line` for imports);
    `report` is the domain ValidationReport when validation produced the problems (None for parse errors).
    """

    code = "invalid"

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


class PolicyNameTaken(PolicyError):
    """A policy with this name already exists."""

    code = "name_taken"

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"A policy named '{name}' already exists; choose another metadata.name or edit that one.")


class PolicyNotFound(PolicyError):
    """No policy has this name."""

    code = "not_found"

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"No policy named '{name}'.")


class RevisionNotFound(PolicyError):
    """The policy has no revision with this number."""

    code = "revision_not_found"

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

    def __init__(self, *, name: str, expected_version: int, current_version: int, changes: list[Any]) -> None:
        self.name = name
        self.expected_version = expected_version
        self.current_version = current_version
        self.changes = changes
        super().__init__(
            f"Policy '{name}' changed since you loaded it (you edited version {expected_version}, it is now at "
            f"version {current_version}); reload, re-apply your change and save again."
        )


CONFIRM_STARTUP_DEADLOCK = "confirmStartupDeadlock"


class NotApplicable(PolicyError):
    """The policy cannot be applied as stored: it keeps errors from an import or adoption (decision D18).

    `problems` are the errors, each `{path, message, severity, code}`.
    """

    code = "not_applicable"

    def __init__(self, name: str, problems: list[dict[str, Any]]) -> None:
        self.name = name
        self.problems = problems
        first = problems[0]
        super().__init__(
            f"'{name}' keeps {len(problems)} error(s) from its import or adoption that a Trainer v2.4 cluster rejects "
            f"(first: {first['path']}: {first['message']}); fix them in the editor and save, then apply."
        )


class StartupDeadlockUnconfirmed(PolicyError):
    """Applying would install a policy whose gang can never reach minCount (dependsOn inside one gang), and the
    caller did not confirm it. `names` are the policies concerned; `problems` the deadlock warnings."""

    code = "startup_deadlock_unconfirmed"

    def __init__(self, names: list[str], problems: list[dict[str, Any]]) -> None:
        self.names = names
        self.problems = problems
        which = ", ".join(names)
        super().__init__(
            f"{which}: a gang never schedules on a real cluster (startup order: a ReplicatedJob waits for another in "
            f"its own gang, so minCount is never reached). Send {CONFIRM_STARTUP_DEADLOCK}: true (or tick the "
            "confirmation) to apply anyway, or give the dependent ReplicatedJobs separate entries."
        )
