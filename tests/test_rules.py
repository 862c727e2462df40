"""The rules of thumb give the books' own numbers and the layouts the Playbook's step 1 names."""

import pytest

from d2lmp.model.cluster import Cluster, model_preset
from d2lmp.model.cluster.rules import fsdp_tokens, playbook_plan, tp_limit


def test_the_scaling_books_crossings():
    # gpus.md, Data Parallelism: 990e12 / 400e9 = 2475 tokens a GPU across H100 nodes
    assert fsdp_tokens(Cluster("H100-SXM", 64)) == pytest.approx(2475, rel=0.01)
    # Tensor Parallelism: F·W/C far above 8 for GPT-3's MLP, so the node caps it
    assert tp_limit(model_preset("175B").model, Cluster("A100-80GB", 64)) == 8


def test_the_playbooks_step_one():
    small = playbook_plan(model_preset("1.7B").model, Cluster("A100-80GB", 32), 512)
    assert small is not None and (small.tp, small.pp, small.zero, small.dp) == (1, 1, 3, 32)
    large = playbook_plan(model_preset("175B").model, Cluster("A100-80GB", 1024), 1536)
    assert large is not None and (large.tp, large.zero) == (8, 2) and large.gpus == 1024
