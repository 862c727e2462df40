"""The first stage's activations per recomputation mode are Korthikanti's closed forms, and draw as three bars."""

import pytest

from d2lmp.model.cluster.presets import model_preset
from d2lmp.model.transformer_stage_memory import korthikanti_first_stage_bytes
from d2lmp.views.activation_memory import first_stage_bytes_by_recompute, plot_activation_memory


def test_each_mode_is_the_closed_form_and_recomputation_keeps_less():
    m = model_preset("175B").model
    got = first_stage_bytes_by_recompute(m, 1, 8, 8, 1)
    assert list(got) == ["none", "selective", "full"]
    for mode, value in got.items():
        assert value == pytest.approx(korthikanti_first_stage_bytes(m.seq, 1, m.hidden, m.heads, m.vocab, m.layers,
                                                                    8, 8, 1, mode))
    assert got["full"] < got["selective"] < got["none"]


def test_the_figure_has_a_bar_per_mode_and_the_memory_line():
    fig = plot_activation_memory({"none": 3e10, "selective": 1e10, "full": 2e9}, 8e10)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and [round(p.get_height()) for p in ax.patches] == [30, 10, 2]
    assert any(line.get_linestyle() == "--" for line in ax.lines)
