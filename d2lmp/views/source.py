"""The code on the page: show the real source of a function or class, highlighted, where a notebook teaches it.

The source comes from the one place the code lives (``inspect.getsource``), so what a student reads is
exactly what runs; a header names the file it comes from.
"""

from __future__ import annotations

import inspect
from pathlib import Path

__all__ = ["source_of", "show"]


def source_of(obj: object) -> str:
    """``obj``'s source text, after a comment naming the file it lives in (no line number: unrelated edits
    elsewhere in the file must not change what a notebook shows)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(f"show() takes functions and classes, got {type(obj).__name__}")
    lines, _ = inspect.getsourcelines(obj)
    path = Path(inspect.getsourcefile(obj)).resolve()  # type: ignore[arg-type]
    package_parent = Path(__file__).resolve().parents[2]  # the folder holding d2lmp/, wherever it is installed
    where = path.relative_to(package_parent).as_posix() if path.is_relative_to(package_parent) else path.name
    return f"# {where}\n" + "".join(lines)


def show(*objs: object) -> None:
    """Display each object's source with syntax highlighting (plain text where HTML cannot render)."""
    from IPython.display import Code, display

    if not objs:
        raise ValueError("show() needs at least one function or class")
    for obj in objs:
        display(Code(source_of(obj), language="python"))
