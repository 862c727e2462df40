"""A notebook's Exercises section, generated from its exercise module: each question and hint is written once.

``section(slug, exercises)`` is the list of (cell type, source) the section must hold: the heading with
the one introduction every notebook shares, the cell that imports ``d2lmp.exercises.<slug> as ex``, and
for each exercise its markdown (``**Exercise N. Title.**``, the question, a note for an open question,
the hint folded in ``<details>``) and, for a checked one, the cell that checks it: ``ex.<key>.check(...)``
for an answer, a stub to fill in for a function, or the buggy function given for a find-the-bug exercise.
``update_section(notebook, slug, exercises)`` rewrites the cells between ``## Exercises`` and ``##
References`` of a notebook (its JSON, as a dict) to that list, keeping each unchanged cell as it is,
outputs included; ``python -m tools.update_exercises`` runs it and ``tests/test_exercises.py`` compares. A
maintenance tool, not part of the installed package.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Sequence
from typing import Any

from d2lmp.exercises.core import Exercise

__all__ = ["INTRO", "HEADING", "question_markdown", "check_code", "section", "section_bounds", "update_section"]

HEADING = "## Exercises"
INTRO = ("Each exercise has a hint to unfold. A checked exercise has a cell below it: put your answer in place of "
         "`...`, write your function in place of `raise NotImplementedError`, or fix the function given, then run "
         "the cell; it says whether your answer is right and, if not, why. An open question has no check. "
         "`ex.<name>.solution()` shows the model answer of any exercise, once you have tried.")


def question_markdown(exercise: Exercise) -> str:
    """The exercise's markdown cell: its number and title, the question, and the hint to unfold."""
    title = exercise.title.strip()
    if title and title[-1] not in ".?!":
        title += "."
    head = f"**Exercise {exercise.number}. {title}**" if title else f"**Exercise {exercise.number}.**"
    parts = [f"{head} {exercise.question}"]
    if exercise.checker is None:
        parts.append(f"*An open question: compare your answer with `ex.{exercise.key}.solution()`.*")
    parts.append(f"<details><summary>Hint</summary>\n\n{exercise.hint_text}\n\n</details>")
    return "\n\n".join(parts)


def _given_source(exercise: Exercise) -> str:
    assert exercise.given is not None
    lines = textwrap.dedent(inspect.getsource(exercise.given)).rstrip().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("def "))
    end = next(i for i in range(first, len(lines)) if lines[i].rstrip().endswith(":"))
    return "\n".join([f"def {exercise.function}:", *lines[end + 1:]])


def check_code(exercise: Exercise) -> str | None:
    """The code cell under a checked exercise (None for an open question)."""
    if exercise.checker is None:
        return None
    if not exercise.function:
        return f"ex.{exercise.key}.check(...)  # replace ... with your answer"
    name = exercise.function.split("(", 1)[0].strip()
    if exercise.given is not None:
        body = _given_source(exercise)
    else:
        body = f"def {exercise.function}:\n    raise NotImplementedError  # your code here"
    code = f"{body}\n\n\nex.{exercise.key}.check({name})"
    return f"{exercise.imports}\n\n\n{code}" if exercise.imports else code


def _slots(slug: str, exercises: Sequence[Exercise]) -> list[tuple[str, str, str]]:
    """(slot, cell type, source) of every cell of the section: "heading", "import", "N" and "N-check"."""
    cells = [("heading", "markdown", f"{HEADING}\n\n{INTRO}"),
             ("import", "code", f"from d2lmp.exercises import {slug} as ex")]
    for exercise in exercises:
        cells.append((str(exercise.number), "markdown", question_markdown(exercise)))
        code = check_code(exercise)
        if code is not None:
            cells.append((f"{exercise.number}-check", "code", code))
    return cells


def section(slug: str, exercises: Sequence[Exercise]) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of the Exercises section, in order."""
    return [(kind, source) for _, kind, source in _slots(slug, exercises)]


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else str(source)


def section_bounds(cells: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(index of the ``## Exercises`` cell, index of the ``## References`` cell) of a notebook's cells."""
    def find(heading: str) -> int:
        found = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _source(c).startswith(heading)]
        if len(found) != 1:
            raise ValueError(f"expected one markdown cell starting with {heading!r}, found {len(found)}")
        return found[0]

    start, end = find(HEADING), find("## References")
    if end < start:
        raise ValueError("the Exercises section must come before the References")
    return start, end


def _old_slots(cells: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The cells of a section as it stands, by slot: an exercise's markdown by its number (either style of
    "**Exercise N.**" or "N. **Title.**"), a code cell by the markdown above it."""
    found: dict[str, dict[str, Any]] = {}
    above = "heading"
    for cell in cells:
        source = _source(cell)
        if cell["cell_type"] != "markdown":
            found.setdefault("import" if above == "heading" else f"{above}-check", cell)
            continue
        number = source.removeprefix("**Exercise ").split(".", 1)[0]
        above = "heading" if source.startswith(HEADING) else number if number.isdigit() else above
        found.setdefault(above, cell)
    return found


def update_section(notebook: dict[str, Any], slug: str, exercises: Sequence[Exercise]) -> bool:
    """Rewrite ``notebook``'s Exercises section (in place) to ``section(slug, exercises)``; True if it changed.

    A cell whose type and source stay the same is kept whole (id, metadata, outputs); a changed cell keeps
    the id of the cell in its place, and a changed code cell loses its outputs (run the notebook again).
    """
    cells = notebook["cells"]
    start, end = section_bounds(cells)
    old = _old_slots(cells[start:end])
    new: list[dict[str, Any]] = []
    for slot, kind, source in _slots(slug, exercises):
        previous = old.get(slot)
        if previous is not None and previous["cell_type"] == kind and _source(previous) == source:
            new.append(previous)
            continue
        cell_id = previous["id"] if previous is not None and "id" in previous else f"ex-{slug}-{slot}"
        cell: dict[str, Any] = {"cell_type": kind, "id": cell_id[:64].replace("_", "-"), "metadata": {},
                                "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        new.append(dict(sorted(cell.items())))
    changed = [id(c) for c in cells[start:end]] != [id(c) for c in new]
    cells[start:end] = new
    return changed
