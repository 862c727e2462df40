"""The ring-attention pictures lay out the schedule ring_attention runs: holdings rotate, every block appears once."""


import matplotlib.pyplot as plt
import pytest

from d2lmp.model.context_layout import chunks_of, workload
from d2lmp.views import context_parallel as V


@pytest.mark.parametrize("layout", ["plain", "balanced"])
def test_holdings_rotate_one_rank_per_step(layout):
    table = V.holdings(4, layout)
    assert table[0] == [chunks_of(r, 4, layout) for r in range(4)]  # step 0: its own
    for step in range(1, 4):
        assert table[step] == [table[step - 1][(r - 1) % 4] for r in range(4)]  # what the left neighbour held


def test_block_map_marks_the_causal_triangle_and_who_computes_it():
    plain = V.block_map(3)
    assert [[kind for _, _, kind in row] for row in plain] == [["diagonal", "skipped", "skipped"],
                                                               ["full", "diagonal", "skipped"],
                                                               ["full", "full", "diagonal"]]
    assert all(rank == q for q, row in enumerate(plain) for _, rank, _ in row)  # a query chunk's owner computes it
    balanced = V.block_map(2, "balanced")
    assert [rank for _, rank, _ in balanced[3]] == [0, 0, 0, 0]  # chunk 3 belongs to rank 0 (chunks 0 and 3)
    assert balanced[3][1][0] == 1  # rank 1's K/V (chunks 1, 2) reach rank 0 at step 1
    assert all(kind != "skipped" for row in V.block_map(2, "balanced", causal=False) for _, _, kind in row)


def test_plots_return_figures():
    for fig in (V.plot_ring_schedule(3), V.plot_ring_schedule(2, causal=False), V.plot_work_per_rank(3, 60)):
        assert len(fig.axes) >= 1
        plt.close(fig)
    fig = V.plot_work_per_rank(4, 64)
    heights = [p.get_height() * 1e6 for p in fig.axes[0].patches]
    assert heights == pytest.approx(list(workload(4, 64).computed) + list(workload(4, 64, "balanced").computed))
    plt.close(fig)


def test_describe_workload_names_the_busiest_rank_and_its_share():
    plain, balanced = workload(4, 64), workload(4, 64, "balanced")
    line = V.describe_workload(plain)
    assert "rank 3 computes 40.0% of them (even: 25.0%)" in line and f"= {plain.imbalance:.2f}" in line
    assert "busiest / mean = 1.00" in V.describe_workload(balanced)
    assert "= 1.00" in V.describe_workload(workload(4, 64, causal=False))
