"""The tracker keeps slim objects (pods as ``PodRecord``s, the other kinds cut to the fields it reads): the record
computed from them must be the one the full objects give, on what a real cluster (the sandbox with its controllers)
serves — so a field the admission answer starts reading cannot silently be projected away."""

from __future__ import annotations

import pytest

from trainer_portal import kube
from trainer_portal.kube.client import get_gateway

from .test_tracker_process import fresh_states, submit, wait_until

pytestmark = [pytest.mark.slow]


def test_records_from_slim_objects_equal_records_from_the_full_objects(cluster):
    from jobs.domain import ownership
    from jobs.domain.records import job_record
    from jobs.handlers import KIND_NAMES

    gateway = get_gateway()
    submit(gateway, "fits", nodes=4)
    submit(gateway, "too-big", nodes=40)
    submit(gateway, "paused", nodes=2, suspend=True)
    wait_until(lambda: {state for state, _ in fresh_states(gateway).values()} >= {"running", "unschedulable"})

    index = ownership.OwnershipIndex()
    full: dict[str, dict] = {}
    for kind, name in KIND_NAMES.items():
        try:
            listed = gateway.list(gateway.resolve(kind))
        except kube.KubeNotFound:
            continue
        index.replace(name, listed.items)
        full.update({item["metadata"]["uid"]: item for item in listed.items})

    def unslim(obj) -> dict:
        uid = obj.uid if isinstance(obj, ownership.PodRecord) else obj["metadata"]["uid"]
        return full[uid]

    compared = 0
    for uid in index.trainjob_uids():
        slim_tree = index.tree(uid)
        full_tree = ownership.JobTree(
            trainjob=unslim(slim_tree.trainjob), workloads=[unslim(o) for o in slim_tree.workloads],
            pod_groups=[unslim(o) for o in slim_tree.pod_groups], pods=[unslim(o) for o in slim_tree.pods],
            jobsets=[unslim(o) for o in slim_tree.jobsets],
            kueue_workloads=[unslim(o) for o in slim_tree.kueue_workloads],
            events=[unslim(o) for o in slim_tree.events], missing_pod_groups=slim_tree.missing_pod_groups,
            problems=slim_tree.problems)
        from_slim, from_full = job_record(slim_tree), job_record(full_tree)
        assert from_slim.comparable() == from_full.comparable(), from_full.name
        assert (from_slim.since, from_slim.submitted_at, from_slim.observed_version) == \
            (from_full.since, from_full.submitted_at, from_full.observed_version)
        compared += bool(full_tree.pods)
    assert compared >= 1  # at least one job with pods (the running one) was compared
