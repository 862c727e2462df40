"""Regenerate each notebook's Exercises section from its exercise module, where each question is written once.

Usage: python -m tools.update_exercises [NOTEBOOK ...]   (default: every notebook in notebooks/)

notebooks/NN_slug.ipynb takes its exercises from ``d2lmp.exercises.<slug>``: the cells between ``## Exercises``
and ``## References`` become ``tools.exercise_cells.section(slug, EXERCISES)`` (the shared introduction, the
import, each exercise's markdown and its check cell). Unchanged cells keep their outputs; a changed code
cell loses them, so run the notebook again afterwards. tests/test_exercises.py fails when a section is out of
date. Nothing is executed. Then run python -m tools.update_references: a question may cite a source.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import nbformat

from tools.exercise_cells import update_section
from tools.notebooks import rewrite, update_each


def update(path: Path) -> bool:
    """Rewrite ``path``'s Exercises section from its module; return True when the file changed."""
    slug = path.stem.split("_", 1)[1]
    module = importlib.import_module(f"d2lmp.exercises.{slug}")

    def change(nb: dict[str, Any]) -> None:
        update_section(nb, slug, module.EXERCISES)
        nbformat.validate(nbformat.from_dict(nb))

    return rewrite(path, change)


if __name__ == "__main__":
    update_each(sys.argv[1:], update)
