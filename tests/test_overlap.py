"""The overlap assumption is one named number: free by default, and a share of the hidden seconds when raised."""

from dataclasses import replace

import pytest

from d2lmp.model.cluster import Cluster, Plan, model_preset, overlap, predict
from d2lmp.model.cluster.overlap import exposed


def test_exposed_charges_what_hides_at_the_stated_share():
    assert exposed(3.0, 2.0) == 1.0 and exposed(1.0, 2.0) == 0.0 and exposed(1.0, 2.0, floor=0.25) == 0.25
    assert exposed(3.0, 2.0, hidden_cost=0.5) == pytest.approx(1.0 + 0.5 * 2.0)
    assert exposed(1.0, 2.0, hidden_cost=1.0) == pytest.approx(1.0)  # nothing hides: the whole message is paid
    with pytest.raises(ValueError, match="hidden_cost"):
        exposed(1.0, 2.0, hidden_cost=1.5)


def test_raising_the_cost_slows_an_overlapped_step(monkeypatch):
    model, cluster = model_preset("175B").model, Cluster("A100-80GB", 1024)
    plan = Plan(tp=8, pp=1, dp=128, global_batch=1536, micro_batch=1, zero=3, recompute="full")
    free = predict(model, cluster, plan)
    monkeypatch.setattr(overlap, "HIDDEN_COST", 0.5)
    paid = predict(model, cluster, replace(plan))
    assert paid.parts["zero"] > free.parts["zero"] and paid.step_s > free.step_s
