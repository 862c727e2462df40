"""Regenerate the References cell at the end of each notebook from the citations in its markdown.

Usage: python -m tools.update_references [NOTEBOOK ...]   (default: every notebook in notebooks/)

The References cell lists exactly the sources the notebook's prose cites (``#ref-KEY`` links), in the
bibliography's format (``d2lmp.bibliography.references_markdown``); tests/test_sources.py fails when a
cell is out of date. Only that cell's source changes; nothing is executed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from d2lmp.bibliography import cited_keys, references_markdown
from tools.notebooks import read, rewrite, update_each


def update(path: Path) -> bool:
    """Rewrite ``path``'s last cell as its References; return True when the file changed."""
    *cells, last = read(path).cells
    if not last.is_markdown or not last.source.startswith("## References"):
        raise ValueError(f"{path.name}: the last cell is not a '## References' markdown cell")
    prose = "\n".join(c.source for c in cells if c.is_markdown)

    def change(nb: dict[str, Any]) -> None:
        nb["cells"][-1]["source"] = references_markdown(cited_keys(prose)).splitlines(keepends=True)

    return rewrite(path, change)


if __name__ == "__main__":
    update_each(sys.argv[1:], update)
