"""The gates count a job's pods column by column (``gates._tally_uniform``) when every pod has a cluster's shape,
else pod by pod through ``signals.pod_row``: both must count every pod shape alike, or an odd pod would change a
job's answer."""

from __future__ import annotations

import pytest

from jobs.domain import gates
from jobs.domain import signals as sig
from tests.jobs import objects as o

JOB = o.trainjob("llm", "uid-1")


def _pods() -> list[dict]:
    return [o.pod(JOB, 0, group="g", node="n0", phase="Running"),
            o.pod(JOB, 1, group="g", phase="Pending"),
            o.pod(JOB, 2, group="g", node="n2", phase="Failed", rjob="launcher", job_index=1)]


def _node_none(pods):
    pods[1]["spec"]["nodeName"] = None


def _node_empty(pods):
    pods[1]["spec"]["nodeName"] = ""


def _no_group(pods):
    del pods[0]["spec"]["schedulingGroup"]


def _label_int(pods):
    pods[0]["metadata"]["labels"][sig.JOB_INDEX_LABEL] = 3


def _label_unhashable(pods):
    pods[1]["metadata"]["labels"][sig.REPLICATED_JOB_LABEL] = ["node"]


def _node_int(pods):
    pods[0]["spec"]["nodeName"] = 7


def _label_missing(pods):
    del pods[2]["metadata"]["labels"][sig.REPLICATED_JOB_LABEL]


def _no_phase(pods):
    del pods[1]["status"]["phase"]


def _labels_list(pods):
    pods[0]["metadata"]["labels"] = ["x"]


def _not_a_dict(pods):
    pods.append("not a pod")


def _legacy_group(pods):
    del pods[1]["spec"]["schedulingGroup"]
    pods[1]["spec"]["workloadRef"] = {"podGroup": "g"}


SHAPES = {"cluster": lambda pods: None, "node-none": _node_none, "node-empty": _node_empty, "no-group": _no_group,
          "label-int": _label_int, "label-unhashable": _label_unhashable,
          "node-int": _node_int, "label-missing": _label_missing, "no-phase": _no_phase,
          "labels-list": _labels_list, "not-a-dict": _not_a_dict, "legacy-group": _legacy_group}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_tally_counts_every_pod_shape_as_pod_row_reads_it(shape):
    pods = _pods()
    SHAPES[shape](pods)
    expected: dict = {}
    for row in map(sig.pod_row, pods):
        key = (row.group, row.rjob, row.index, row.phase, bool(row.node))
        expected[key] = expected.get(key, 0) + 1
    assert gates.tally_pods(pods).counts == expected
    uniform = gates._tally_uniform(pods)
    assert uniform is None or uniform == expected
    assert (uniform is None) == (shape not in ("cluster", "node-none", "node-empty"))
