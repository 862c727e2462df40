"""Regenerate the References cell at the end of each notebook from the citations in its markdown.

Usage: python -m tools.update_references [NOTEBOOK ...]   (default: every notebook in notebooks/)

The References cell lists exactly the sources the notebook's prose cites (``#ref-KEY`` links), in the
bibliography's format (``d2lmp.bibliography.references_markdown``); tests/test_sources.py fails when a
cell is out of date. In-text links are relabelled from their key too ("NVIDIA, n.d.-b" becomes "NVIDIA, n.d.-d"
when a new source by the same author sorts before it; a link that gives the year alone keeps giving the year
alone). Only markdown cells change; nothing is executed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from d2lmp.bibliography import SOURCES, cite_text, cited_keys, references_markdown, year_text
from tools.notebooks import read, rewrite, update_each

LINK = re.compile(r"\[([^\]]*)\]\(#ref-([A-Za-z0-9_]+)\)")
YEAR_ONLY = re.compile(r"^(n\.d\.|\d{4})(-?[a-z])?$")
AUTHOR_YEAR = re.compile(r"^.+, (n\.d\.|\d{4})(-?[a-z])?$")


def relabel(text: str) -> str:
    """``text`` with each citation link's label recomputed from its key (labels of another shape are kept)."""

    def label(match: re.Match[str]) -> str:
        shown, key = match.group(1), match.group(2)
        if key in SOURCES and YEAR_ONLY.match(shown):
            shown = year_text(key)
        elif key in SOURCES and AUTHOR_YEAR.match(shown):
            shown = cite_text(key)
        return f"[{shown}](#ref-{key})"

    return LINK.sub(label, text)


def update(path: Path) -> bool:
    """Rewrite ``path``'s last cell as its References; return True when the file changed."""
    *cells, last = read(path).cells
    if not last.is_markdown or not last.source.startswith("## References"):
        raise ValueError(f"{path.name}: the last cell is not a '## References' markdown cell")
    prose = "\n".join(c.source for c in cells if c.is_markdown)

    def change(nb: dict[str, Any]) -> None:
        for cell in nb["cells"][:-1]:
            if cell["cell_type"] == "markdown":
                cell["source"] = relabel("".join(cell["source"])).splitlines(keepends=True)
        nb["cells"][-1]["source"] = references_markdown(cited_keys(prose)).splitlines(keepends=True)

    return rewrite(path, change)


if __name__ == "__main__":
    update_each(sys.argv[1:], update)
