"""`convert_disruption_modes`: write every `spec.scheduling` disruptionMode of a manifest in the form the cluster's
ClusterTrainingRuntime CRD embeds (decision D9) — the v1alpha2 string `Pod | PodGroup` or the 1.37 union
`{single: {}} | {all: {}}` — for export and apply."""

from __future__ import annotations

import copy
from typing import Any

from .. import constants as c
from .checker import LEGACY_DISRUPTION_MODES

_UNION_TO_STRING = {v: k for k, v in LEGACY_DISRUPTION_MODES.items()}


def _groups(scheduling: dict) -> list[dict]:
    groups = [scheduling]
    for entry in scheduling.get("replicatedJobs") or []:
        if isinstance(entry, dict):
            groups.append(entry)
            if isinstance(entry.get("job"), dict):
                groups.append(entry["job"])
    return groups


def convert_disruption_modes(manifest: Any, form: str) -> Any:
    """Return a copy of `manifest` with every `spec.scheduling` disruptionMode written in `form` (union or string).

    Values that are not one of the two modes are left as they are (validation reports them); an unknown `form`
    returns an unchanged copy. Never raises.
    """
    result = copy.deepcopy(manifest)
    spec = result.get("spec") if isinstance(result, dict) else None
    scheduling = spec.get("scheduling") if isinstance(spec, dict) else None
    if not isinstance(scheduling, dict) or form not in (c.DISRUPTION_MODE_UNION, c.DISRUPTION_MODE_STRING):
        return result
    for group in _groups(scheduling):
        mode = group.get("disruptionMode")
        if form == c.DISRUPTION_MODE_UNION and isinstance(mode, str) and mode in LEGACY_DISRUPTION_MODES:
            group["disruptionMode"] = {LEGACY_DISRUPTION_MODES[mode]: {}}
        elif form == c.DISRUPTION_MODE_STRING and isinstance(mode, dict) and len(mode) == 1:
            member = next(iter(mode))
            if member in _UNION_TO_STRING:
                group["disruptionMode"] = _UNION_TO_STRING[member]
    return result
