"""The source text of a function or class, as it runs, for the code a notebook or an exercise's solution shows.

The text comes from the one place the code lives (``inspect.getsource``), so what a student reads is exactly
what runs; a first comment names the file it comes from. Torch-free: the views highlight it
(``views.source.show``) and the exercises print it (``Exercise.solution``).
"""

from __future__ import annotations

import inspect
from pathlib import Path

__all__ = ["source_of"]


def source_of(obj: object) -> str:
    """``obj``'s source text, after a comment naming the file it lives in (no line number: unrelated edits
    elsewhere in the file must not change what a notebook shows)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(f"show() takes functions and classes, got {type(obj).__name__}")
    lines, _ = inspect.getsourcelines(obj)
    path = Path(inspect.getsourcefile(obj)).resolve()  # type: ignore[arg-type]
    package_parent = Path(__file__).resolve().parents[1]  # the folder holding d2lmp/, wherever it is installed
    where = path.relative_to(package_parent).as_posix() if path.is_relative_to(package_parent) else path.name
    return f"# {where}\n" + "".join(lines)
