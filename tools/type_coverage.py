"""Count, with `ast`, how much of a package is type-annotated and how many functions return bare dicts.

A function (a method, a nested function) is *fully annotated* when every argument has an annotation,
the first argument of a method (``self``, ``cls``) excepted, and so has the return. A function *returns
a dict* when its return annotation is ``dict``/``Dict``/``Mapping`` (parameterised or not, ``| None`` and
``Optional`` stripped), or when it has no return annotation and some ``return`` in its own body gives a
dict literal, a dict comprehension or a ``dict(...)`` call. Of those, a *record dict* is one whose type
says nothing about its values: unannotated, bare ``dict``/``Dict``, or ``dict[str, Any]`` /
``dict[str, object]``; a ``dict[str, float]`` mapping is data, not a record. The script imports nothing
from the package it reads, so it runs on any commit: ``python -m tools.type_coverage [d2lmp] [--list]``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.notebooks import ROOT

__all__ = ["Function", "Coverage", "functions", "coverage", "main"]

DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping"}
VAGUE_VALUES = {"Any", "object"}


@dataclass(frozen=True)
class Function:
    """One function as the counter sees it."""

    module: str  # dotted module name, e.g. "d2lmp.parallel.zero"
    qualname: str  # "Class.method", "outer.inner", "function"
    line: int
    fully_annotated: bool
    returns_dict: bool  # annotated as a dict, or unannotated and returning a dict
    record_dict: bool  # returns a dict whose type does not say what its values are

    @property
    def public(self) -> bool:
        """Public: no part of the module path or qualified name starts with an underscore."""
        parts = self.module.split(".") + self.qualname.split(".")
        return not any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)


@dataclass(frozen=True)
class Coverage:
    """The counts over a package."""

    functions: tuple[Function, ...]

    @property
    def total(self) -> int:
        return len(self.functions)

    @property
    def fully_annotated(self) -> int:
        return sum(f.fully_annotated for f in self.functions)

    @property
    def returns_dict(self) -> int:
        return sum(f.returns_dict for f in self.functions)

    @property
    def record_dict(self) -> int:
        return sum(f.record_dict for f in self.functions)


def _name(node: ast.expr) -> str:
    """The last dotted name of an annotation node: `typing.Dict` -> "Dict"."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _strip_optional(node: ast.expr) -> ast.expr:
    """`X | None`, `Optional[X]` -> X (other unions are left alone)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = node.left, node.right
        if isinstance(right, ast.Constant) and right.value is None:
            return _strip_optional(left)
        if isinstance(left, ast.Constant) and left.value is None:
            return _strip_optional(right)
    if isinstance(node, ast.Subscript) and _name(node.value) == "Optional":
        return _strip_optional(node.slice)
    return node


def _dict_annotation(node: ast.expr) -> tuple[bool, bool]:
    """(names a dict type, names a dict whose values are untyped) for a return annotation; a dict inside
    a container counts (`list[dict]`, `tuple[dict[str, int], int]`)."""
    node = _strip_optional(node)
    if _name(node) in DICT_NAMES:  # bare `dict`
        return True, True
    if not isinstance(node, (ast.Subscript, ast.BinOp, ast.Tuple, ast.List)):
        return False, False
    if isinstance(node, ast.Subscript) and _name(node.value) in DICT_NAMES:
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        value = _strip_optional(args[-1]) if len(args) == 2 else None
        inner = _dict_annotation(value) if value is not None else (False, False)
        return True, value is None or _name(value) in VAGUE_VALUES or inner[1]
    children = ([node.left, node.right] if isinstance(node, ast.BinOp) else node.elts
                if isinstance(node, (ast.Tuple, ast.List)) else [node.slice])
    found = [_dict_annotation(c) for c in children]
    return any(f[0] for f in found), any(f[1] for f in found)


def _own_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Return]:
    """The `return` statements of `fn` itself, not of functions or classes nested in it."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_dict_value(node: ast.expr | None) -> bool:
    """A dict literal, a dict comprehension, `dict(...)`, or a list of such (a table of dict rows)."""
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(node, ast.ListComp):
        return _is_dict_value(node.elt)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_dict_value(e) for e in node.elts)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"


def _function(module: str, qualname: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> Function:
    args = fn.args
    positional = args.posonlyargs + args.args
    if method and positional and not any(isinstance(d, ast.Name) and d.id == "staticmethod"
                                         for d in fn.decorator_list):
        positional = positional[1:]  # self / cls
    every = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a is not None]
    annotated = fn.returns is not None and all(a.annotation is not None for a in every)
    if fn.returns is not None:
        returns_dict, record = _dict_annotation(fn.returns)
    else:
        returns_dict = record = any(_is_dict_value(r.value) for r in _own_returns(fn))
    return Function(module, qualname, fn.lineno, annotated, returns_dict, record)


def _walk(module: str, body: list[ast.stmt], prefix: str, in_class: bool) -> Iterator[Function]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + node.name
            yield _function(module, qualname, node, in_class)
            yield from _walk(module, node.body, qualname + ".", False)
        elif isinstance(node, ast.ClassDef):
            yield from _walk(module, node.body, prefix + node.name + ".", True)
        else:  # functions defined under `if`, `try`, `with` at this level
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], (ast.stmt, ast.excepthandler)):
                    stmts = [s for h in inner for s in h.body] if field == "handlers" else inner
                    yield from _walk(module, stmts, prefix, in_class)


def functions(package: Path) -> Iterator[Function]:
    """Every function and method of every `.py` file under `package`."""
    root = package.resolve().parent
    for path in sorted(package.resolve().rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        yield from _walk(module, tree.body, "", False)


def coverage(package: Path) -> Coverage:
    return Coverage(tuple(functions(package)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", nargs="?", default=ROOT / "d2lmp", type=Path)
    parser.add_argument("--list", action="store_true", help="list the functions not fully annotated and "
                        "those returning dicts")
    opts = parser.parse_args(argv)
    cov = coverage(opts.package)
    if opts.list:
        for f in cov.functions:
            marks = ("" if f.fully_annotated else " unannotated") + (" record-dict" if f.record_dict else
                                                                      " dict" if f.returns_dict else "")
            if marks:
                print(f"{f.module}:{f.line} {f.qualname}:{marks}")
    print(f"functions: {cov.total}")
    print(f"fully annotated: {cov.fully_annotated} ({100 * cov.fully_annotated / max(cov.total, 1):.1f} %)")
    print(f"returning a dict: {cov.returns_dict}")
    print(f"  of which records (bare dict, dict[str, Any], or unannotated): {cov.record_dict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
