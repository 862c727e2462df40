"""The small GPT on screen: where one block's parameters, FLOPs and saved bytes are, formula against
measurement, and a training run's loss.

The numbers come from ``transformer_accounting.block_anatomy``, ``gpt_accounting``'s comparisons and
``gpt_train``'s history; this module only draws them. ``anatomy_shares`` is pure (numbers in, shares out);
every plot takes computed data and an optional ``ax`` and returns its Figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from d2lmp.gpt_accounting import Comparison
from d2lmp.gpt_train import LMHistory
from d2lmp.model.transformer_accounting import BlockAnatomy
from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PART_COLOURS", "anatomy_shares", "plot_block_anatomy", "plot_comparisons", "plot_loss"]

PART_COLOURS = ("#8c8c8c", "#4c72b0", "#dd8452", "#55a868", "#c44e52")  # one per BLOCK_PARTS entry
ROWS = (("parameters", "parameters", ""), ("flops", "forward FLOPs", "FLOP"),
        ("activation_bytes", "saved activations", "B"))


def anatomy_shares(anatomy: BlockAnatomy) -> dict[str, tuple[float, ...]]:
    """Each part's share (0 to 1) of the block's parameters, forward FLOPs and saved bytes."""
    out = {}
    for field, _, _ in ROWS:
        values = getattr(anatomy, field)
        total = sum(values)
        out[field] = tuple(v / total if total else 0.0 for v in values)
    return out


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g} {prefix}{unit}".rstrip()
    return f"{value:.3g} {unit}".rstrip()


def plot_block_anatomy(anatomy: BlockAnatomy, title: str = "Where one transformer block's numbers are",
                       ax: Axes | None = None) -> Figure:
    """Three stacked bars, parameters, forward FLOPs and saved activation bytes, split by part of the block.

    Each bar is 100 % of its own total (written at its right end); a part's colour is the same in all three.
    """
    fig, ax = fig_ax(ax, figsize=(8.5, 3.2))
    shares = anatomy_shares(anatomy)
    for y, (field, _, unit) in enumerate(reversed(ROWS)):
        left = 0.0
        for part, share, colour in zip(anatomy.parts, shares[field], PART_COLOURS):
            ax.barh(y, share, left=left, color=colour, edgecolor="white", height=0.6,
                    label=part if y == 0 else None)
            if share >= 0.08:
                ax.text(left + share / 2, y, f"{share:.0%}", ha="center", va="center", color="white", fontsize=9)
            left += share
        ax.text(1.02, y, _si(sum(getattr(anatomy, field)), unit), va="center", fontsize=9)
    ax.set_yticks(range(len(ROWS)), [label for _, label, _ in reversed(ROWS)])
    ax.set_xlim(0, 1.18)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0", "25%", "50%", "75%", "100%"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.45, -0.15), ncol=len(anatomy.parts), frameon=False)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_comparisons(rows: list[Comparison], title: str = "Formula against the running model",
                     ax: Axes | None = None) -> Figure:
    """Formula and measured value side by side for each comparison, the difference written beside them."""
    if not rows:
        raise ValueError("no comparisons to draw")
    fig, ax = fig_ax(ax, figsize=(8.5, 0.42 * len(rows) + 1.2))
    ys = range(len(rows))[::-1]
    ax.barh([y + 0.2 for y in ys], [r.formula for r in rows], height=0.38, color="#4c72b0", label="formula")
    ax.barh([y - 0.2 for y in ys], [r.measured for r in rows], height=0.38, color="#dd8452", label="measured")
    top = max(max(r.formula, r.measured) for r in rows)
    for y, r in zip(ys, rows):
        ax.text(max(r.formula, r.measured) + 0.01 * top, y, f"{r.difference:+,} {r.unit}", va="center", fontsize=8)
    ax.set_yticks(list(ys), [r.name.strip() for r in rows], fontsize=8)
    ax.set_xlim(0, 1.3 * top)
    ax.set_xlabel(rows[0].unit)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_loss(history: LMHistory, baseline: float | None = None, ax: Axes | None = None) -> Figure:
    """Training and validation loss (nats per token) against the step; ``baseline`` drawn as a dashed line
    (the unigram cross-entropy: what a model that ignores the context achieves)."""
    fig, ax = fig_ax(ax)
    ax.plot(history.steps, history.train_loss, "o-", ms=3, label="training split")
    ax.plot(history.steps, history.val_loss, "o-", ms=3, label="validation split")
    if baseline is not None:
        ax.axhline(baseline, ls="--", color="grey", lw=1, label=f"unigram baseline ({baseline:.2f})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.legend(fontsize=8)
    ax.set_title(f"Training on {history.device}, {history.tokens_per_step:,} tokens per step")
    return fig
