"""Deterministic object names: the Workload, PodGroups and PodGroupTemplates of a TrainJob.

The preview predicts these names; a real cluster is read by ownerReferences, never by predicted name.
"""

from __future__ import annotations

import hashlib

MAX_NAME = 63
HASH_CHARS = 8


def short_hash(text: str, chars: int = HASH_CHARS) -> str:
    """Return the first `chars` hex digits of sha1(`text`): the deterministic name suffix."""
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:chars]


def fit_name(prefix: str, suffix: str, limit: int = MAX_NAME) -> str:
    """Return `<prefix>-<suffix>` cut to `limit` characters by shortening the prefix."""
    room = limit - len(suffix) - 1
    return f"{prefix[:room].rstrip('-.')}-{suffix}"


def workload_name_for(namespace: str, trainjob_name: str) -> str:
    """Return the Workload name `<(truncated-if-needed)trainjob>-<hash>`, at most 63 characters.

    KEP-3015 (after the Deployment → ReplicaSet prior art): the TrainJob name is cut so that name, dash and hash
    fit in 63 characters; a 63-character TrainJob gives a 54-character prefix.
    """
    return fit_name(trainjob_name, short_hash(f"{namespace}/{trainjob_name}"))


def pod_group_name_for(namespace: str, workload: str, template: str, *, level_one: bool) -> str:
    """Return the PodGroup name: `<workload>-<hash>` for L1, else
    `<(truncated)workload>-<(truncated)template>-<hash>`, at most 63 characters.

    When both do not fit, each part keeps at least half of the room (the longer one is cut first), so the
    template part never disappears behind a long Workload name.
    """
    digest = short_hash(f"{namespace}/{workload}/{template}")
    if level_one:
        return fit_name(workload, digest)
    room = MAX_NAME - len(digest) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        keep_template = max(half, room - len(workload))
        template = template[:keep_template].rstrip("-.")
        workload = workload[:room - len(template)].rstrip("-.")
    return f"{workload}-{template}-{digest}"


def template_name_for(parts: list[str] | tuple[str, ...]) -> str:
    """Return a PodGroupTemplate name: the parts joined with '-', cut and hashed when over 63 chars."""
    name = "-".join(parts)
    if len(name) <= MAX_NAME:
        return name
    return fit_name(name, short_hash(name))
