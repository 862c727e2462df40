"""The code on the page: show the real source of a function or class, highlighted, where a notebook teaches it.

The source comes from the one place the code lives (``d2lmp.source_code.source_of``), so what a student reads
is exactly what runs; a header names the file it comes from.
"""

from __future__ import annotations

from d2lmp.source_code import source_of

__all__ = ["source_of", "show"]


def show(*objs: object) -> None:
    """Display each object's source with syntax highlighting (plain text where HTML cannot render)."""
    from IPython.display import Code, display

    if not objs:
        raise ValueError("show() needs at least one function or class")
    for obj in objs:
        display(Code(source_of(obj), language="python"))
