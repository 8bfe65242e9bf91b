"""One-click fixes for validation errors, as pure manifest transformations the form and the API share.

`untargeted_replicated_jobs` lists the ReplicatedJobs a level-2 policy leaves untargeted (an error since Trainer
v2.4.0, rule `scheduling.untargeted_replicated_job`); `add_basic_entry` returns the manifest with the fix applied:
one `{targetReplicatedJobs: [...], schedulingPolicy: {basic: {}}}` entry per at most eight of them (basic groups
impose nothing on scheduling, so putting them together costs one PodGroupTemplate instead of one each).
"""

from __future__ import annotations

import copy
from typing import Any

from .. import constants as c


def _scheduling_entries(manifest: Any) -> list | None:
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    scheduling = spec.get("scheduling") if isinstance(spec, dict) else None
    entries = scheduling.get("replicatedJobs") if isinstance(scheduling, dict) else None
    return entries if isinstance(entries, list) and entries else None


def _replicated_job_names(manifest: dict) -> list[str]:
    template = manifest["spec"].get("template")
    jobset = template.get("spec") if isinstance(template, dict) else None
    rjobs = jobset.get("replicatedJobs") if isinstance(jobset, dict) else None
    names = [r.get("name") for r in rjobs if isinstance(r, dict)] if isinstance(rjobs, list) else []
    return [n for n in names if isinstance(n, str) and n]


def untargeted_replicated_jobs(manifest: Any) -> tuple[str, ...]:
    """Return the names of the ReplicatedJobs no `spec.scheduling.replicatedJobs` entry targets, in template order.

    Returns () when the runtime has no (non-empty) `replicatedJobs` list, where coverage is not required. Never
    raises, whatever the input.
    """
    entries = _scheduling_entries(manifest)
    if entries is None:
        return ()
    targeted: set[str] = set()
    for entry in entries:
        targets = entry.get("targetReplicatedJobs") if isinstance(entry, dict) else None
        if isinstance(targets, list):
            targeted.update(t for t in targets if isinstance(t, str))
    return tuple(dict.fromkeys(n for n in _replicated_job_names(manifest) if n not in targeted))


def add_basic_entry(manifest: dict, names: tuple[str, ...] | list[str] | None = None) -> dict:
    """Return a NEW manifest whose `spec.scheduling.replicatedJobs` also targets `names` (default: every untargeted
    ReplicatedJob) with `schedulingPolicy: {basic: {}}`, eight names per entry at most.

    Raises ValueError when there is nothing to add (no replicatedJobs list, or every name is already targeted) or
    when a name is not a ReplicatedJob of the runtime.
    """
    untargeted = untargeted_replicated_jobs(manifest)
    wanted = tuple(dict.fromkeys(names)) if names is not None else untargeted
    if not wanted:
        raise ValueError("every ReplicatedJob is already targeted by a spec.scheduling.replicatedJobs entry")
    unknown = [n for n in wanted if n not in untargeted]
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)} is not an untargeted ReplicatedJob of this runtime; untargeted: "
            f"{', '.join(untargeted) or '(none)'}"
        )
    result = copy.deepcopy(manifest)
    entries = result["spec"]["scheduling"]["replicatedJobs"]
    step = c.MAX_TARGETS_PER_ENTRY
    for start in range(0, len(wanted), step):
        entries.append({"targetReplicatedJobs": list(wanted[start : start + step]), "schedulingPolicy": {"basic": {}}})
    return result
