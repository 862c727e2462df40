"""Regenerate each notebook's Exercises section from its exercise module, where each question is written once.

Usage: python -m tools.update_exercises [NOTEBOOK ...]   (default: every notebook in notebooks/)

notebooks/NN_slug.ipynb takes its exercises from ``d2lmp.exercises.<slug>``: the cells between ``## Exercises``
and ``## References`` become ``d2lmp.exercises.cells.section(slug, EXERCISES)`` (the shared introduction, the
import, each exercise's markdown and its check cell). Unchanged cells keep their outputs; a changed code
cell loses them, so run the notebook again afterwards. tests/test_exercises.py fails when a section is out of
date. Nothing is executed. Then run python -m tools.update_references: a question may cite a source.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import nbformat

from d2lmp.exercises.cells import update_section
from tools.notebooks import paths


def update(path: Path) -> bool:
    """Rewrite ``path``'s Exercises section from its module; return True when the file changed."""
    slug = path.stem.split("_", 1)[1]
    module = importlib.import_module(f"d2lmp.exercises.{slug}")
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    update_section(nb, slug, module.EXERCISES)
    nbformat.validate(nbformat.from_dict(nb))
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str]) -> None:
    targets = [Path(a) for a in argv] or paths()
    for path in targets:
        print(f"{path.name}: {'updated' if update(path) else 'up to date'}")


if __name__ == "__main__":
    main(sys.argv[1:])
