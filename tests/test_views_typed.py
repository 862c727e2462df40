"""The views keep ``views/figure.py``'s convention in their signatures, read from the source with ``ast``.

No public function of ``d2lmp.views`` is annotated to return ``Any``; every ``plot_*`` function returns ``Figure``;
every ``*_widget`` function returns an ipywidgets class; a ``plot_*`` function's ``ax`` argument is ``Axes | None``.
"""

from __future__ import annotations

import ast
from pathlib import Path

VIEWS = Path(__file__).resolve().parents[1] / "d2lmp" / "views"


def _public_functions() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in sorted(VIEWS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(f"{path.stem}.{node.name}", node) for node in tree.body
                  if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")]
    return found


FUNCTIONS = _public_functions()


def _mentions_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and n.value == "Any") for n in ast.walk(annotation))


def test_the_views_have_public_functions_to_check():
    names = {name for name, _ in FUNCTIONS}
    assert {"planner.plot_step_parts", "comm_roofline.comm_roofline_widget", "trace.plot_trace"} <= names


def _returns(node: ast.FunctionDef) -> str:
    return ast.unparse(node.returns) if node.returns else "nothing"


def test_no_view_returns_any():
    wrong = [f"{name} -> {_returns(node)}" for name, node in FUNCTIONS
             if node.returns is None or _mentions_any(node.returns)]
    assert not wrong, "annotate these views' returns (Figure, an ipywidgets class, ...), not Any:\n" + "\n".join(wrong)


def test_plots_return_figures_and_widgets_return_widgets():
    wrong = [f"{name} -> {_returns(node)}" for name, node in FUNCTIONS
             if (node.name.startswith("plot_") and _returns(node) != "Figure")
             or (node.name.endswith("_widget") and not _returns(node).startswith("ipywidgets."))]
    assert not wrong, "plot_* returns Figure, *_widget an ipywidgets class:\n" + "\n".join(wrong)


def test_ax_is_axes_or_none():
    wrong = [f"{name}(ax: {ast.unparse(arg.annotation) if arg.annotation else 'unannotated'})"
             for name, node in FUNCTIONS if node.name.startswith("plot_")
             for arg in node.args.args + node.args.kwonlyargs
             if arg.arg == "ax" and (arg.annotation is None or ast.unparse(arg.annotation) != "Axes | None")]
    assert not wrong, "a plot's ax argument is Axes | None:\n" + "\n".join(wrong)
