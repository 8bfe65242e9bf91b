"""Validation of ClusterTrainingRuntime manifests and one-line scheduling summaries.

`validate_runtime` is the one implementation the form, the REST API and import share. It never raises: every
access is type-checked, and a malformed part yields a Problem instead. Each Problem names the field path
(e.g. `spec.template.spec.replicatedJobs[1].dependsOn[0].name`) and says what is wrong and how to fix it.

Rules come from the upstream CRDs (schema, CEL, webhook), the Trainer v2.4.0 release and the latest KEP-3015 revision
of `spec.scheduling`, and the decisions recorded in docs/decisions.md.

The package splits the rules by concern: `report` (Problem, ValidationReport, ValidationOptions, RULES), `checker`
(shared helpers and the checker base), `metadata`, `template` (replicatedJobs, dependsOn, JobSet fields, ancestor
steps), `ml_policy`, `scheduling` (podGroupPolicy and spec.scheduling levels), `groups` (per-group scheduling
fields), `lint` (deadlock and capacity warnings), `validate` (validate_runtime), `summary`, `fixes` (one-click fixes)
and `disruption` (disruptionMode in the form the installed CRD embeds).
"""

from .checker import (
    GROUP_FIELDS,
    LEGACY_DISRUPTION_MODES,
    LEVEL1_FIELDS,
    MAX_ANNOTATIONS_BYTES,
    SCHEDULING_TYPOS,
    TOPOLOGY_TYPOS,
)
from .disruption import convert_disruption_modes
from .fixes import add_basic_entry, untargeted_replicated_jobs
from .report import IMPORTABLE_ERRORS, RULES, STARTUP_DEADLOCKS, Problem, Severity, ValidationOptions, ValidationReport
from .summary import SchedulingSummary, scheduling_summary
from .validate import validate_runtime

__all__ = [
    "GROUP_FIELDS",
    "IMPORTABLE_ERRORS",
    "LEGACY_DISRUPTION_MODES",
    "LEVEL1_FIELDS",
    "MAX_ANNOTATIONS_BYTES",
    "RULES",
    "SCHEDULING_TYPOS",
    "STARTUP_DEADLOCKS",
    "TOPOLOGY_TYPOS",
    "Problem",
    "SchedulingSummary",
    "Severity",
    "ValidationOptions",
    "ValidationReport",
    "add_basic_entry",
    "convert_disruption_modes",
    "scheduling_summary",
    "untargeted_replicated_jobs",
    "validate_runtime",
]
