"""The mixture-of-experts figures: load per expert and the dispatch between ranks, from computed data."""


import numpy as np
import torch

from d2lmp.moe import MoE, MoESpec
from d2lmp.parallel.expert_parallel import counts_per_rank, dispatch_counts
from d2lmp.views.experts import describe_load, plot_dispatch, plot_expert_load, plot_experts


def _run():
    spec = MoESpec(hidden=8, ffn=8, experts=4, top_k=2, capacity_factor=0.75, seed=0)
    routing = MoE(spec).run(torch.randn(12, 8, generator=torch.Generator().manual_seed(1))).routing
    return routing.load(), dispatch_counts(counts_per_rank(routing, [6, 6]), routing.capacity, 2)


def test_load_bars_stack_kept_and_dropped_up_to_the_routed_count():
    load, _ = _run()
    fig = plot_expert_load(load)
    kept, dropped = fig.axes[0].containers
    assert [b.get_height() for b in kept] == list(load.kept)
    assert [b.get_height() for b in dropped] == list(load.dropped)
    assert [b.get_y() for b in dropped] == list(load.kept)
    assert fig.axes[0].lines[0].get_ydata()[0] == load.capacity
    assert sum(load.dropped) > 0


def test_dispatch_grid_shows_every_count_and_the_drops():
    _, dispatch = _run()
    fig = plot_dispatch(dispatch)
    texts = [t.get_text() for t in fig.axes[0].texts]
    expected = [str(n) for src in range(2) for n in (*dispatch.sent[src], dispatch.dropped[src])]
    assert texts == expected
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_array_equal(np.asarray(image)[:, :2], np.array(dispatch.sent))
    moved = dispatch.sent[0][1] + dispatch.sent[1][0]
    assert f"{moved} tokens cross ranks" in fig.axes[0].get_title()
    assert len(plot_experts(*_run()).axes) == 2


def test_describe_load_states_the_capacity_rule_and_the_drops():
    load, _ = _run()
    line = describe_load(load, 12, 2, 0.75)
    assert line.startswith(f"capacity = ⌈0.75 × 2 × 12 tokens / 4 experts⌉ = {load.capacity};")
    assert load.capacity == 5 and f"{sum(load.dropped)} of 24 assignments dropped" in line
