r"""How long the notebooks' prose runs: words per markdown cell and words per sentence.

Usage: python -m tools.prose [NOTEBOOK ...]   (default: every notebook; prints each notebook's mean sentence length,
its share of sentences over 40 words, and every markdown cell over the word limit)

What counts as prose: a markdown cell's text without fenced code, HTML tags, link targets, headings and table rows
(a table is read as a figure, not as sentences). A formula and a piece of inline code count the words of their text:
in a formula each LaTeX command (a backslash and its letters) is dropped when it only lays out or joins (``\frac``,
``\text``, ``\mathrm``, ``\left``, ``\cdot``, ``\quad``: ``_LAYOUT``) and otherwise (``\alpha``, ``\sum``) becomes a
letter, while the text inside braces stays, so ``$\text{bytes} / (2\alpha)$`` counts ``bytes`` and ``2α``: two words.
A References cell is a list of sources, not prose, and is left out. A sentence ends at ``.``, ``!`` or ``?`` followed
by white space, or at the end of a paragraph or list item (a colon does not end one); abbreviations such as "e.g."
and "et al." do not end one. A word is a run of letters or digits (with inner hyphens, apostrophes, dots and commas, so
"1,024" and "1.5" are one word each). tests/test_prose_limits.py holds the limits.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from tools.notebooks import paths, read

CELL_WORD_LIMIT = 250
MEAN_SENTENCE_LIMIT = 25
LONG_SENTENCE = 40

_FENCED = re.compile(r"```.*?```", re.S)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_TAG = re.compile(r"<[^>\n]+>")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|et al|etc|vs|cf|Fig|Eq|Sec|Ch|No|approx|resp)\.", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_LAYOUT = frozenset("frac dfrac tfrac sqrt text textrm textit textbf mathrm mathbf mathit mathcal mathbb mathsf mathtt "
                    "operatorname boldsymbol displaystyle left right big Big bigl bigr Bigl Bigr cdot cdots ldots dots "
                    "times div pm quad qquad begin end".split())
_WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9'’]|[-.,](?=[A-Za-z0-9]))*")


def prose_text(markdown: str) -> str:
    """The cell's prose: fenced code, tags, link targets, headings and table rows removed; formulas and inline
    code kept as their words."""
    text = _FENCED.sub(" ", markdown)
    text = _MATH.sub(lambda m: f" {formula_text(m.group(0))} ", text)
    text = _INLINE_CODE.sub(lambda m: f" {m.group(0)[1:-1]} ", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("#", "|"))]
    return "\n".join(lines)


def formula_text(formula: str) -> str:
    """A formula as words: layout commands dropped, every other command (a symbol) read as one letter."""
    return _COMMAND.sub(lambda m: "" if m.group(1) in _LAYOUT else "x", formula.strip("$"))


def words(text: str) -> int:
    """Words in ``text`` (runs of letters or digits)."""
    return len(_WORD.findall(text))


def sentences(markdown: str) -> list[str]:
    """The cell's sentences: paragraphs and list items split at sentence ends, abbreviations kept whole."""
    units = re.split(r"\n\s*\n|\n\s*(?:[-*+]|\d+\.)\s+", "\n" + prose_text(markdown))
    found = []
    for unit in units:
        unit = _ABBREVIATIONS.sub(lambda m: m.group(0)[:-1], " ".join(unit.split()))
        found += [s for s in _SENTENCE_END.split(unit) if words(s)]
    return found


@dataclass(frozen=True)
class NotebookProse:
    """One notebook's prose lengths."""

    name: str
    cell_words: tuple[tuple[int, int], ...]  # (cell index, words) for every markdown cell
    sentence_words: tuple[int, ...]

    @property
    def mean_sentence(self) -> float:
        return sum(self.sentence_words) / max(1, len(self.sentence_words))

    @property
    def long_share(self) -> float:
        return sum(n > LONG_SENTENCE for n in self.sentence_words) / max(1, len(self.sentence_words))

    def cells_over(self, limit: int = CELL_WORD_LIMIT) -> list[tuple[int, int]]:
        return [(i, n) for i, n in self.cell_words if n > limit]


def notebook_prose(path: Path) -> NotebookProse:
    """Word counts of ``path``'s markdown cells and sentences."""
    cells = [(c.index, c.source) for c in read(path).cells
             if c.is_markdown and not c.source.lstrip().startswith("## References")]
    return NotebookProse(Path(path).name, tuple((i, words(prose_text(s))) for i, s in cells),
                         tuple(words(s) for _, src in cells for s in sentences(src)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks or paths():
        prose = notebook_prose(path)
        over = ", ".join(f"[{i}] {n}" for i, n in prose.cells_over())
        print(f"{prose.name:45s} mean {prose.mean_sentence:4.1f} words a sentence, "
              f"{100 * prose.long_share:3.0f} % over {LONG_SENTENCE}; cells over {CELL_WORD_LIMIT}: {over or 'none'}")


if __name__ == "__main__":
    main()
