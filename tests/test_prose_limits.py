"""The prose stays light: no markdown cell over ``CELL_WORD_LIMIT`` words, and notebooks 10 onwards average at most
``MEAN_SENTENCE_LIMIT`` words a sentence (tools/prose.py says what counts as a word and a sentence).

A cell may stay over the limit only when it is named in ``LONG_CELLS`` with the reason; the test also fails when a
named cell has come within the limit, so that the list only shrinks.
"""

from __future__ import annotations

import pytest

from tools.notebooks import paths
from tools.prose import CELL_WORD_LIMIT, MEAN_SENTENCE_LIMIT, notebook_prose, prose_text, sentences, words

# (notebook number, cell index): why the cell may run long.
LONG_CELLS: dict[tuple[str, int], str] = {
}

# Notebooks that may still average over the limit (only shrinks).
LONG_SENTENCES: set[str] = set()

NOTEBOOKS = paths()


def test_counting_rules():
    text = ("## A heading that is not counted\n\nGPUs have 1,024 lanes, e.g. on an H100 et al. report more. "
            "The ratio is $2(n-1)/n$ and `dist.all_reduce` sends it.\n\n| a | table |\n\n- a list item\n- another")
    # a formula counts its words ("2", "n-1", "n") and inline code its own ("dist.all", "reduce")
    assert [words(s) for s in sentences(text)] == [12, 11, 3, 1]


def test_a_formula_counts_its_words_not_its_commands():
    # layout commands (\text) vanish, braces keep their text, a symbol (\alpha) reads as a letter:
    # under the old rule each formula was one word
    assert words(prose_text(r"$\text{bytes} / (2\alpha)$")) == 2
    assert words(prose_text(r"$\alpha$ and $$\frac{\text{peak bytes}}{\mathrm{HBM}}$$")) == 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_markdown_cell_over_the_word_limit(path):
    prose = notebook_prose(path)
    number = path.name[:2]
    over = {i: n for i, n in prose.cells_over(CELL_WORD_LIMIT) if (number, i) not in LONG_CELLS}
    assert not over, f"{path.name}: markdown cells over {CELL_WORD_LIMIT} words (cell: words): {over}"
    within = [i for (nb, i) in LONG_CELLS if nb == number and dict(prose.cell_words).get(i, 0) <= CELL_WORD_LIMIT]
    assert not within, f"{path.name}: cells {within} are within the limit now: remove them from LONG_CELLS"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if int(p.name[:2]) >= 10],
                         ids=[p.stem for p in NOTEBOOKS if int(p.name[:2]) >= 10])
def test_mean_sentence_length(path):
    prose = notebook_prose(path)
    if path.name[:2] in LONG_SENTENCES:
        assert prose.mean_sentence > MEAN_SENTENCE_LIMIT, f"{path.name} is within the limit now: unlist it"
        return
    assert prose.mean_sentence <= MEAN_SENTENCE_LIMIT, (
        f"{path.name}: {prose.mean_sentence:.1f} words a sentence on average (limit {MEAN_SENTENCE_LIMIT})")
