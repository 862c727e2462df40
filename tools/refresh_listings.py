"""Refresh the stored listings of notebooks' ``show()`` cells without re-executing the notebooks.

A listing cell holds only imports and ``show(...)`` calls (``d2lmp.views.source``), so its output is the
source of library code and nothing else: when that code changes, the stored listing goes stale while every
measurement in the notebook stays right. ``python -m tools.refresh_listings NOTEBOOK...`` runs, for each
listing cell, the notebook's import lines and then the cell in an IPython shell started for the notebook
(the display machinery a kernel uses, in this process), and replaces that cell's outputs with what it
displayed. Every other cell, and the listing cells' execution counts and metadata, stay byte for byte.
``shown_objects`` is what a notebook shows, resolved to the objects; the tests read it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

from tools.notebooks import Cell, Notebook, read, rewrite, update_each

__all__ = ["is_listing_cell", "import_lines", "shown_expressions", "shown_objects", "listing_outputs",
           "show_statements", "refresh", "main"]


def _is_show_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "show" and bool(node.value.args))


def is_listing_cell(cell: Cell) -> bool:
    """True for a code cell that only imports and calls ``show(...)``, at least once."""
    if not cell.is_code:
        return False
    body = cell.tree().body
    return (any(_is_show_call(n) for n in body)
            and all(_is_show_call(n) or isinstance(n, (ast.Import, ast.ImportFrom)) for n in body))


def show_statements(cell: Cell) -> str:
    """The top-level ``show(...)`` statements of a code cell, as source text (empty when it has none)."""
    text = cell.python()
    return "\n".join(ast.get_source_segment(text, n) or "" for n in cell.tree().body if _is_show_call(n))


def _is_listing(output: dict[str, Any]) -> bool:
    return output.get("output_type") == "display_data" and "highlight" in "".join(
        output.get("data", {}).get("text/html", ""))


def import_lines(nb: Notebook) -> str:
    """Every top-level import statement of the notebook's code cells, in order, as source text."""
    lines = []
    for cell in nb.code():
        text = cell.python()
        lines += [ast.get_source_segment(text, n) or "" for n in cell.tree().body
                  if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(lines)


def shown_expressions(nb: Notebook) -> list[tuple[int, str]]:
    """(cell index, argument text) of every argument of a ``show(...)`` call, in order: the calls in code cells
    and those the text asks the reader to run (`` `show(ex.pass_along)` `` in an exercise's question)."""
    found = []
    for cell in nb.cells:
        text = cell.python() if cell.is_code else "\n".join(re.findall(r"`(show\([^`]*\))`", cell.source))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "show":
                found += [(cell.index, ast.get_source_segment(text, a) or "") for a in node.args]
    return found


def shown_objects(nb: Notebook) -> list[tuple[int, str, object]]:
    """(cell index, argument text, object) of every ``show(...)`` argument, evaluated after the notebook's imports."""
    namespace: dict[str, Any] = {}
    exec(import_lines(nb), namespace)  # noqa: S102 - the notebook's own import lines
    return [(index, expr, eval(expr, namespace)) for index, expr in shown_expressions(nb)]  # noqa: S307


def _stored(data: dict[str, Any]) -> dict[str, Any]:
    """A display's mime bundle as nbformat stores it: keys sorted, text split into lines (JSON kept whole)."""
    return {key: value.splitlines(keepends=True) if isinstance(value, str) and not key.endswith("json") else value
            for key, value in sorted(data.items())}


def listing_outputs(imports: str, source: str) -> list[dict[str, Any]]:
    """The outputs a kernel stores for ``source`` run after ``imports``: one ``display_data`` per listing."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.reset()  # a fresh namespace: only the notebook's imports and this cell
    with capture_output() as captured:
        for code in (imports, source):
            result = shell.run_cell(code, store_history=False, silent=True)
            result.raise_error()
    if captured.stdout or captured.stderr:
        raise RuntimeError(f"a listing cell printed text, which only a full run may store:\n{captured.stdout}"
                           f"{captured.stderr}")
    return [{"data": _stored(out.data), "metadata": out.metadata or {}, "output_type": "display_data"}
            for out in captured.outputs]


def refresh(path: Path) -> bool:
    """Replace the outputs of every listing cell of the notebook at ``path``, and the listings a cell shows beside
    what it prints or draws (its other outputs, which only a full run may store, stay); True if the file changed."""
    nb = read(path)
    imports = import_lines(nb)
    fresh = {cell.index: listing_outputs(imports, cell.source) for cell in nb.code() if is_listing_cell(cell)}
    mixed = {cell.index: listing_outputs(imports, show_statements(cell)) for cell in nb.code()
             if not is_listing_cell(cell) and show_statements(cell)}

    def change(data: dict[str, Any]) -> None:
        for index, outputs in fresh.items():
            data["cells"][index]["outputs"] = outputs
        for index, listings in mixed.items():
            stored = data["cells"][index]["outputs"]
            places = [i for i, out in enumerate(stored) if _is_listing(out)]
            if len(places) != len(listings):
                raise ValueError(f"{path.name} cell {index}: {len(places)} stored listings, {len(listings)} shown; "
                                 "re-execute it")
            for place, listing in zip(places, listings):
                stored[place] = listing

    return rewrite(path, change)


def main(argv: list[str]) -> None:
    """Refresh the listings of the notebooks named in ``argv`` (every notebook when none is)."""
    update_each(argv, refresh)


if __name__ == "__main__":
    main(sys.argv[1:])
