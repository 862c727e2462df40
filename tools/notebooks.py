"""The series' notebooks, in order, and what their cells hold: the one place that lists and reads them.

``paths()`` lists ``notebooks/*.ipynb`` sorted by name (``NN_slug.ipynb``, so in chapter order); ``read(path)``
parses one into a ``Notebook`` whose ``cells`` are ``Cell`` records (kind, source text, outputs, execution count).
The maintenance scripts in ``tools/`` and the tests use it, so all of them see the same notebooks the same way.
Reading never changes a file; ``rewrite`` is how the scripts that regenerate cells write one back, and
``update_each`` runs such a script over the notebooks named on its command line (all of them by default).
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "NOTEBOOK_DIR", "Cell", "Notebook", "paths", "read", "notebooks", "source_text", "rewrite",
           "update_each"]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"


def source_text(source: str | list[str]) -> str:
    """A cell's or an output's text, which the file stores as one string or as a list of lines."""
    return source if isinstance(source, str) else "".join(source)


@dataclass(frozen=True)
class Cell:
    """One cell: its position in the notebook, kind ("markdown", "code", "raw"), source and, for code, outputs."""

    index: int
    kind: str
    source: str
    outputs: tuple[dict[str, Any], ...]
    execution_count: int | None
    metadata: dict[str, Any]

    @property
    def is_code(self) -> bool:
        return self.kind == "code"

    @property
    def is_markdown(self) -> bool:
        return self.kind == "markdown"

    def stream_text(self, name: str | None = None) -> str:
        """The text the cell printed (``name``: "stdout" or "stderr" only; None: both)."""
        return "".join(source_text(o.get("text", "")) for o in self.outputs
                       if o.get("output_type") == "stream" and name in (None, o.get("name")))

    def python(self) -> str:
        """The source as plain Python: IPython magics and shell lines (``%pip ...``, ``!ls``) become ``pass``."""
        lines = [line[:len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                 for line in self.source.split("\n")]
        return "\n".join(lines)

    def tree(self) -> ast.Module:
        """The syntax tree of ``python()``."""
        return ast.parse(self.python())


@dataclass(frozen=True)
class Notebook:
    """A notebook file: its path, notebook-level metadata and its cells in order."""

    path: Path
    metadata: dict[str, Any]
    cells: tuple[Cell, ...]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def number(self) -> str:
        """The two digits of ``NN_slug.ipynb``."""
        return self.path.name[:2]

    @property
    def slug(self) -> str:
        """The part after ``NN_``: it stays when chapters are renumbered."""
        return self.path.stem.split("_", 1)[1]

    @property
    def title(self) -> str:
        """The first line of the first cell, without the leading ``# ``."""
        return self.cells[0].source.splitlines()[0].lstrip("# ").strip()

    def code(self) -> list[Cell]:
        return [c for c in self.cells if c.is_code]

    def markdown(self) -> list[Cell]:
        return [c for c in self.cells if c.is_markdown]

    def outputs(self) -> Iterator[dict[str, Any]]:
        """Every output of every code cell, in order."""
        for cell in self.code():
            yield from cell.outputs


def paths() -> list[Path]:
    """Every notebook in ``notebooks/``, sorted by file name (the names start with the chapter number)."""
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def read(path: Path | str) -> Notebook:
    """The notebook at ``path``, parsed (cached while the file is unchanged)."""
    path = Path(path).resolve()
    stat = path.stat()
    return _read(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _read(path: Path, _mtime_ns: int, _size: int) -> Notebook:
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = tuple(Cell(index=i, kind=c["cell_type"], source=source_text(c.get("source", "")),
                       outputs=tuple(c.get("outputs", ())), execution_count=c.get("execution_count"),
                       metadata=c.get("metadata", {}))
                  for i, c in enumerate(data["cells"]))
    return Notebook(path=path, metadata=data.get("metadata", {}), cells=cells)


def notebooks() -> list[Notebook]:
    """``read`` of every path in ``paths()``."""
    return [read(p) for p in paths()]


def rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> bool:
    """Apply ``change`` to the notebook's JSON and write it back (nbformat's layout) when it differs; True if so."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    change(nb)
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def update_each(argv: list[str], update: Callable[[Path], bool]) -> None:
    """``update`` each notebook named in ``argv`` (every notebook when none is), printing which ones changed."""
    for path in [Path(a) for a in argv] or paths():
        print(f"{path.name}: {'updated' if update(path) else 'up to date'}")
