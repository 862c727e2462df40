"""The GPT's figures draw the numbers they are given: shares that add up, one bar pair per comparison."""


import pytest

from d2lmp.gpt import preset
from d2lmp.gpt_accounting import Comparison
from d2lmp.gpt_train import LMHistory
from d2lmp.model.transformer_accounting import BLOCK_PARTS, Transformer, block_anatomy
from d2lmp.views import gpt as V


def test_anatomy_shares_add_up_and_follow_the_numbers():
    anatomy = block_anatomy(preset("small").shape(), 8)
    shares = V.anatomy_shares(anatomy)
    for field in ("parameters", "flops", "activation_bytes"):
        assert sum(shares[field]) == pytest.approx(1.0)
    core = BLOCK_PARTS.index("attention core")
    assert shares["parameters"][core] == 0  # the core has no weights, yet
    # at GPT-3's sequence length the scores make most of the saved bytes
    big = V.anatomy_shares(block_anatomy(Transformer(layers=96, hidden=12288, heads=96, seq=2048, vocab=51200)))
    assert big["activation_bytes"][core] > 0.5 > shares["activation_bytes"][core]


def test_the_figures_draw_one_bar_per_part_and_per_comparison():
    anatomy = block_anatomy(preset("tiny").shape(), 2)
    fig = V.plot_block_anatomy(anatomy)
    assert len(fig.axes[0].patches) == 3 * len(BLOCK_PARTS)
    rows = [Comparison("a", "bytes", 10, 12), Comparison("b", "bytes", 5, 5)]
    fig = V.plot_comparisons(rows)
    assert len(fig.axes[0].patches) == 4 and "+2 bytes" in [t.get_text() for t in fig.axes[0].texts]
    with pytest.raises(ValueError, match="no comparisons"):
        V.plot_comparisons([])
    history = LMHistory((0, 10), (4.5, 3.0), (4.4, 2.9), (0.0, 1.0), "cpu", 256)
    fig = V.plot_loss(history, baseline=3.2)
    assert len(fig.axes[0].lines) == 3
