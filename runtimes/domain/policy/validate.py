"""`validate_runtime`: the `_Checker` that combines every rule mixin, its entry point `run`, and the never-raising
public function."""

from __future__ import annotations

from .checker import _kind
from .groups import _GroupChecks
from .lint import _LintChecks
from .metadata import _MetadataChecks
from .ml_policy import _MLPolicyChecks
from .report import ValidationOptions, ValidationReport
from .scheduling import _SchedulingChecks
from .template import _TemplateChecks


class _Checker(_MetadataChecks, _TemplateChecks, _MLPolicyChecks, _SchedulingChecks, _GroupChecks, _LintChecks):
    """Every validation rule; `run` checks one manifest and collects the problems in `self.problems`."""

    # -- entry point

    def run(self) -> None:
        manifest = self.manifest
        if not isinstance(manifest, dict):
            self.error("", "manifest.type", f"the manifest must be a mapping, not {_kind(manifest)}")
            return
        self.check_type_meta(manifest)
        self.check_metadata(manifest)
        spec = self.mapping(manifest, "spec", "spec", required=True)
        if spec is None:
            return
        if not spec:
            self.error("spec", "spec.empty", "spec must not be empty; add spec.template with replicatedJobs")
            return
        self.check_template(spec)
        self.check_ml_policy(spec)
        self.check_ancestors()
        self.check_pod_group_policy(spec)
        self.check_scheduling(spec)


def validate_runtime(manifest: dict, options: ValidationOptions = ValidationOptions()) -> ValidationReport:  # noqa: B008 (frozen dataclass)
    """Return every problem found in a ClusterTrainingRuntime manifest; never raises, whatever the input."""
    checker = _Checker(manifest, options)
    try:
        checker.run()
    except RecursionError:  # pragma: no cover - manifests from load_documents are depth-limited
        checker.error("", "manifest.too_deep", "the manifest is nested too deeply to validate")
    return ValidationReport(tuple(checker.problems))
