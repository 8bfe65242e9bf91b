"""Linking by ownerReferences / controllerRef / podGroupName (never by predicted names), and which TrainJobs a
change affects."""

from __future__ import annotations

from jobs.domain.ownership import EVENT, POD, PODGROUP, TRAINJOB, WORKLOAD, OwnershipIndex, slim
from tests.jobs import objects as o


def _index(*pairs):
    index = OwnershipIndex()
    for kind, obj in pairs:
        index.upsert(kind, obj)
    return index


def test_a_tree_is_found_through_owner_references_with_salted_names():
    job = o.trainjob(name="llm", uid="u-123456")
    wl = o.workload(job)
    group = o.pod_group(job, wl)
    pods = o.pods(job, 4, group=group)
    index = _index((TRAINJOB, job), (WORKLOAD, wl), (PODGROUP, group), *((POD, p) for p in pods))

    tree = index.tree("u-123456")

    assert "123456" in wl["metadata"]["name"] and wl["metadata"]["name"] != "llm"
    assert [w["metadata"]["name"] for w in tree.workloads] == [wl["metadata"]["name"]]
    assert [g["metadata"]["name"] for g in tree.pod_groups] == [group["metadata"]["name"]]
    assert len(tree.pods) == 4 and not tree.missing_pod_groups and not tree.problems


def test_children_without_owner_references_are_linked_by_controller_ref_and_pod_group_name():
    job = o.trainjob(uid="u-2")
    wl = o.workload(job, owner=False)
    group = o.pod_group(job, wl)
    group["metadata"]["ownerReferences"] = []
    member = o.pod(job, 0, group=group, owner=False)
    index = _index((WORKLOAD, wl), (PODGROUP, group), (POD, member), (TRAINJOB, job))  # parents last

    tree = index.tree("u-2")

    assert len(tree.workloads) == 1 and len(tree.pod_groups) == 1 and len(tree.pods) == 1
    assert index.owners(POD, member["metadata"]["uid"]) == {"u-2"}


def test_two_jobs_with_the_same_name_in_time_do_not_share_children():
    old = o.trainjob(name="llm", uid="u-old")
    new = o.trainjob(name="llm", uid="u-new")
    old_group = o.pod_group(old, o.workload(old))
    index = _index((TRAINJOB, old), (PODGROUP, old_group))
    index.delete(TRAINJOB, old)
    index.upsert(TRAINJOB, new)

    assert index.tree("u-new").pod_groups == []


def test_a_change_reports_the_affected_jobs_before_and_after():
    job = o.trainjob(uid="u-3")
    wl = o.workload(job)
    group = o.pod_group(job, wl)
    index = _index((TRAINJOB, job), (WORKLOAD, wl), (PODGROUP, group))
    member = o.pod(job, 0, group=group, owner=False)

    assert index.upsert(POD, member) == {"u-3"}
    assert index.delete(POD, member) == {"u-3"}
    assert index.delete(POD, member) == set()


def test_a_relist_replaces_the_kind_and_reports_removed_and_changed_objects_only():
    a, b = o.trainjob(uid="u-a"), o.trainjob(name="other", uid="u-b")
    group_a, group_b = o.pod_group(a, o.workload(a)), o.pod_group(b, o.workload(b))
    index = _index((TRAINJOB, a), (TRAINJOB, b), (PODGROUP, group_a), (PODGROUP, group_b))

    affected = index.replace(PODGROUP, [group_a])

    assert affected == {"u-b"}
    assert index.count(PODGROUP) == 1


def test_events_attach_to_their_object_and_are_bounded():
    job = o.trainjob(uid="u-4")
    wl = o.workload(job)
    group = o.pod_group(job, wl)
    index = _index((TRAINJOB, job), (WORKLOAD, wl), (PODGROUP, group))
    for minute in range(10):
        affected = index.upsert(EVENT, o.event(group, "FailedScheduling", f"try {minute}",
                                               at=f"2026-12-01T12:{minute:02d}:00Z"))
        assert affected == {"u-4"}

    events = index.tree("u-4").events

    assert len(events) == 5
    assert events[0]["message"] == "try 9"


def test_pods_are_stored_slim():
    member = o.pod(o.trainjob(), 0, group="g", node="n1", phase="Running")
    member["spec"]["containers"][0]["env"] = [{"name": "X", "value": "y" * 1000}]

    kept = slim(POD, member).as_object()

    assert "containers" not in kept["spec"]
    assert kept["spec"]["nodeName"] == "n1" and kept["status"]["phase"] == "Running"
    assert kept["spec"]["schedulingGroup"] == {"podGroupName": "g"}
    assert kept["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"


def test_a_change_of_nothing_the_tracker_keeps_affects_no_job():
    job = o.trainjob(uid="u-5")
    group = o.pod_group(job, o.workload(job))
    member = o.pod(job, 0, group=group, node="n1", phase="Running")
    index = _index((TRAINJOB, job), (PODGROUP, group), (POD, member))
    probed = {**member, "metadata": {**member["metadata"], "resourceVersion": "99999"},
              "status": {**member["status"], "containerStatuses": [{"name": "c", "ready": True}]}}

    assert index.upsert(POD, probed) == set()
    assert index.upsert(POD, {**probed, "status": {"phase": "Succeeded"}}) == {"u-5"}
    assert index.upsert(TRAINJOB, {**job, "metadata": {**job["metadata"], "resourceVersion": "99999"}}) == set()


def test_reverse_links_keep_every_member_through_their_compact_forms():
    from jobs.domain.ownership import _SMALL, _Links

    links = _Links()
    uids = [f"u{i}" for i in range(_SMALL + 4)]  # one (a str), a few (a tuple), many (a set)
    for count, uid in enumerate(uids, start=1):
        links.add("k", uid)
        links.add("k", uid)  # twice: still once
        assert sorted(links.members("k")) == sorted(uids[:count])
    assert isinstance(links["k"], set)
    for count, uid in enumerate(reversed(uids), start=1):
        links.discard("k", uid)
        links.discard("k", "never-added")
        assert sorted(links.members("k")) == sorted(uids[:len(uids) - count])
    assert "k" not in links and links.members("k") == ()


def test_equal_parts_of_pod_groups_are_stored_once_and_unequal_ones_apart():
    job = o.trainjob("j", "u1")
    wl = o.workload(job)
    a = o.pod_group(job, wl, template="node", suffix="a", min_count=5)
    b = o.pod_group(job, wl, template="node", suffix="b", min_count=5)
    c = o.pod_group(job, wl, template="node", suffix="c", min_count=4)
    other = o.pod_group(o.trainjob("k", "u2"), wl, template="node", suffix="a", min_count=5)
    sa, sb, sc, so = (slim(PODGROUP, g) for g in (a, b, c, other))
    assert sa["metadata"]["ownerReferences"] is sb["metadata"]["ownerReferences"]
    assert sa["spec"]["schedulingPolicy"] is sb["spec"]["schedulingPolicy"]
    assert sc["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert so["metadata"]["ownerReferences"] == other["metadata"]["ownerReferences"]
    assert so["metadata"]["ownerReferences"][0]["uid"] == "u2"
