"""Synthetic clusters accept every size the preview API documents, GPU-less nodes included."""

import pytest

from trainer_portal.placement.synthetic import FRAGMENTATIONS, synthetic_cluster


@pytest.mark.parametrize("fragmentation", FRAGMENTATIONS)
def test_a_cluster_without_gpus_has_none_in_use(fragmentation):
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=2, gpus_per_node=0, fragmentation=fragmentation, seed=3)

    assert snapshot.size > 0
    assert int(snapshot.alloc_gpu[: snapshot.size].sum()) == 0
    assert int(snapshot.used_gpu[: snapshot.size].sum()) == 0
