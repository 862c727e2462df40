"""The SM and memory-hierarchy figure draws what the sourced SMLayout says, and the levels grow outwards."""

import dataclasses

import matplotlib.pyplot as plt
import pytest

from d2lmp.gpu_specs import SM_LAYOUTS, find_gpu_spec
from d2lmp.views.gpu_architecture import plot_sm_hierarchy


def test_layout_agrees_with_the_gpu_table_and_levels_grow_outwards():
    h100 = SM_LAYOUTS[0]
    spec = find_gpu_spec(h100.gpu)
    assert spec is not None and spec.memory_gb == h100.memory_gb and spec.memory_type == h100.memory_type
    assert h100.sms * h100.fp32_lanes_per_sm == 16896  # the H100 SXM5's FP32 lanes, as notebook 02's table has them
    sizes = [level.total_bytes for level in h100.levels()]
    assert sizes == sorted(sizes) and sizes[0] == h100.sms * h100.register_file_kb_per_sm * 1024


@pytest.mark.parametrize("layout", SM_LAYOUTS, ids=lambda s: s.gpu)
def test_figure_draws_each_block_with_its_lanes_and_every_level(layout):
    fig = plot_sm_hierarchy(layout)
    sm_ax, levels_ax = fig.axes
    texts = [t.get_text() for t in sm_ax.texts]
    per_block = layout.fp32_lanes_per_sm // layout.partitions
    assert texts.count(f"{per_block} FP32 lanes") == layout.partitions
    assert texts.count("warp scheduler") == layout.partitions
    assert f"{layout.sms} of them" in sm_ax.get_title()
    assert len(levels_ax.patches) == len(layout.levels())
    assert [t.get_text() for t in levels_ax.get_yticklabels()][-1].startswith("device memory")
    plt.close(fig)


def test_figure_follows_the_layout_it_is_given():
    eight = dataclasses.replace(SM_LAYOUTS[0], partitions=2, fp32_lanes_per_sm=64)
    fig = plot_sm_hierarchy(eight)
    assert [t.get_text() for t in fig.axes[0].texts].count("32 FP32 lanes") == 2
    plt.close(fig)
