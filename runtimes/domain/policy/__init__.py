"""Validation of ClusterTrainingRuntime manifests and one-line scheduling summaries.

`validate_runtime` is the one implementation the form, the REST API and import share. It never raises: every
access is type-checked, and a malformed part yields a Problem instead. Each Problem names the field path
(e.g. `spec.template.spec.replicatedJobs[1].dependsOn[0].name`) and says what is wrong and how to fix it.

Rules come from kubernetes-apis.md: §1.2–1.4 (CRD schema, CEL, webhook), §2.3–2.4 (v2.4 `spec.scheduling`) and the
decisions on its §6 open questions recorded in docs/decisions.md.

The package splits the rules by concern: `report` (Problem, ValidationReport, ValidationOptions, RULES), `checker`
(shared helpers and the checker base), `metadata`, `template` (replicatedJobs, dependsOn, JobSet fields, ancestor
steps), `ml_policy`, `scheduling` (podGroupPolicy and spec.scheduling levels), `groups` (per-group scheduling
fields), `lint` (deadlock and capacity warnings), `validate` (validate_runtime) and `summary`.
"""

from .checker import (
    GROUP_FIELDS,
    LEGACY_DISRUPTION_MODES,
    LEVEL1_FIELDS,
    MAX_ANNOTATIONS_BYTES,
    SCHEDULING_TYPOS,
    TOPOLOGY_TYPOS,
)
from .report import RULES, Problem, Severity, ValidationOptions, ValidationReport
from .summary import SchedulingSummary, scheduling_summary
from .validate import validate_runtime

__all__ = [
    "GROUP_FIELDS",
    "LEGACY_DISRUPTION_MODES",
    "LEVEL1_FIELDS",
    "MAX_ANNOTATIONS_BYTES",
    "RULES",
    "SCHEDULING_TYPOS",
    "TOPOLOGY_TYPOS",
    "Problem",
    "SchedulingSummary",
    "Severity",
    "ValidationOptions",
    "ValidationReport",
    "scheduling_summary",
    "validate_runtime",
]
