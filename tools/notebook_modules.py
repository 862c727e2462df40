"""Which d2lmp modules each notebook imports, as the README's notebook -> modules table.

Usage: python -m tools.notebook_modules        prints the table (paste it into README.md)
tests/test_architecture.py checks that the README's table equals this one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tools.notebooks import ROOT, paths, read

COMMON = ("config", "hardware")  # every notebook uses these; the README says so once


def _imports(path: Path) -> set[str]:
    found = set()
    for cell in read(path).code():
        for node in ast.walk(cell.tree()):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("d2lmp"):
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    found.add(candidate if _is_module(candidate) else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("d2lmp")}
    return found


def _is_module(name: str) -> bool:
    path = ROOT / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def table() -> str:
    """The markdown table: notebook number, library modules, checks and benchmarks, views."""
    rows = ["| notebook | library | checks and benchmarks | views |", "|---|---|---|---|"]
    for path in paths():
        names = sorted(m.removeprefix("d2lmp.") for m in _imports(path))
        views = [m.removeprefix("views.") for m in names if m.startswith("views.")]
        checks = [m for m in names if m.startswith(("checks", "bench", "exercises"))]
        library = [m for m in names if m not in checks and not m.startswith("views") and m not in COMMON]
        rows.append(f"| {path.name[:2]} | " + " | ".join(", ".join(f"`{m}`" for m in group)
                                                        for group in (library, checks, views)) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
