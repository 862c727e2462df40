"""Regenerate the References cell at the end of each notebook from the citations in its markdown.

Usage: python book/update_references.py [NOTEBOOK ...]   (default: every notebook in notebooks/)

The References cell lists exactly the sources the notebook's prose cites (``#ref-KEY`` links), in the
bibliography's format (``d2lmp.bibliography.references_markdown``); tests/test_sources.py fails when a
cell is out of date. Only that cell's source changes; nothing is executed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from d2lmp.bibliography import cited_keys, references_markdown

ROOT = Path(__file__).resolve().parents[1]


def update(path: Path) -> bool:
    """Rewrite ``path``'s last cell as its References; return True when the file changed."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    *cells, last = nb["cells"]
    if last["cell_type"] != "markdown" or not "".join(last["source"]).startswith("## References"):
        raise ValueError(f"{path.name}: the last cell is not a '## References' markdown cell")
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    last["source"] = references_markdown(cited_keys(prose)).splitlines(keepends=True)
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"{path.name}: {'updated' if update(path) else 'up to date'}")


if __name__ == "__main__":
    main(sys.argv[1:])
