"""The package stays typed: every function annotated, records as frozen dataclasses, mypy strict and clean.

The counts come from the project's own ``tools.type_coverage`` (read with ``ast``, nothing imported); the type
check itself is mypy with the configuration in ``pyproject.toml`` (``make lint`` and ``make test`` run it too;
here it reuses their warm cache and takes a few seconds).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import type_coverage

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "d2lmp"

# function -> why it may lack annotations. Keep it short: annotate instead.
UNANNOTATED_ALLOWED = {
    "d2lmp.parallel.data_parallel.recording_hook": "DDP's register_comm_hook compares a hook's annotations with "
                                                   "its own types, and annotations here are strings",
}
# function -> why it may return a dict whose values are untyped. Only documents in someone else's format: JSON
# (the selfcheck report and its entries, a Chrome trace, a notebook's cells) and the state dicts that PyTorch's
# distributed checkpoint saves and loads in place.
RECORD_DICT_ALLOWED = {
    "d2lmp.checks.run_selfcheck": "the selfcheck report, a JSON document",
    "d2lmp.checks.result.CheckResult.entry": "one entry of the JSON report",
    "d2lmp.recorded.load_json": "a recorded JSON document",
    "d2lmp.recorded.selfcheck_section": "one entry of a recorded JSON document",
    "d2lmp.recorded._Record.as_dict": "a recorded record as its JSON entry, to compare with the file",
    "d2lmp.parallel.trace_events.load_trace": "a Chrome trace, a JSON document",
    "d2lmp.parallel.checkpoint.training_state": "a state dict, the mapping DCP saves and fills in place",
    "d2lmp.parallel.resilient.checkpoint_state": "a state dict, the mapping DCP saves and fills in place",
    "d2lmp.parallel.checkpoint_marker.as_config": "a run's configuration as the marker's JSON holds it, compared key "
                                                  "by key with the saved one",
    "d2lmp.parallel.resilient.RunSpec.config": "the resilient run's settings as a checkpoint marker's JSON holds them",
}


@pytest.fixture(scope="module")
def functions():
    return type_coverage.coverage(PACKAGE).functions


def _name(f) -> str:
    return f"{f.module}.{f.qualname}"


def test_every_function_is_fully_annotated(functions):
    missing = sorted(_name(f) for f in functions if not f.fully_annotated and _name(f) not in UNANNOTATED_ALLOWED)
    assert not missing, "annotate every argument and the return of:\n" + "\n".join(missing)
    stale = set(UNANNOTATED_ALLOWED) - {_name(f) for f in functions if not f.fully_annotated}
    assert not stale, f"no longer unannotated, drop from UNANNOTATED_ALLOWED: {sorted(stale)}"


def test_no_function_returns_a_record_as_a_dict(functions):
    """A dict whose values are untyped (bare ``dict``, ``dict[str, Any]``, a literal without an annotation) is a
    record in disguise: return a frozen dataclass. A mapping of names to values of one type stays a dict."""
    records = sorted(_name(f) for f in functions if f.record_dict and _name(f) not in RECORD_DICT_ALLOWED)
    assert not records, "return a frozen dataclass (or a precisely typed mapping) from:\n" + "\n".join(records)
    stale = set(RECORD_DICT_ALLOWED) - {_name(f) for f in functions if f.record_dict}
    assert not stale, f"no longer returning a JSON dict, drop from RECORD_DICT_ALLOWED: {sorted(stale)}"


def test_the_counter_sees_what_it_counts(tmp_path):
    """The counter on a small package of known functions: annotated or not, dict records or typed mappings."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "m.py").write_text(
        "from typing import Any\n"
        "def typed(x: int) -> int: ...\n"
        "def untyped(x): ...\n"
        "def no_return(x: int): ...\n"
        "def record() -> dict: ...\n"
        "def vague() -> dict[str, Any] | None: ...\n"
        "def rows() -> list[dict]: ...\n"
        "def mapping() -> dict[str, float]: ...\n"
        "def literal():\n    return {'a': 1}\n"
        "def nested() -> int:\n    def inner(y):\n        return dict(y=y)\n    return 0\n"
        "class C:\n    def method(self, a: int) -> None: ...\n    @staticmethod\n    def static(a) -> None: ...\n")
    found = {f.qualname: f for f in type_coverage.coverage(package).functions}
    annotated = {q for q, f in found.items() if f.fully_annotated}
    assert annotated == {"typed", "record", "vague", "rows", "mapping", "nested", "C.method"}
    assert {q for q, f in found.items() if f.record_dict} == {"record", "vague", "rows", "literal", "nested.inner"}
    assert {q for q, f in found.items() if f.returns_dict} == {"record", "vague", "rows", "mapping", "literal",
                                                               "nested.inner"}


def _returns_any(annotation: ast.expr | None) -> bool:
    """Whether a return annotation is ``Any`` (bare, ``typing.Any`` or the string ``"Any"``)."""
    return annotation is not None and (
        (isinstance(annotation, ast.Name) and annotation.id == "Any")
        or (isinstance(annotation, ast.Attribute) and annotation.attr == "Any")
        or (isinstance(annotation, ast.Constant) and annotation.value == "Any"))


def _functions_returning_any(package: Path) -> list[str]:
    """'module.py: name' for every function without a leading ``_`` (at any depth: module, class or nested, as the
    callbacks torch receives are) annotated ``-> Any``."""
    return [f"{path.relative_to(package).as_posix()}: {node.name}" for path in sorted(package.rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_")
            and _returns_any(node.returns)]


def test_no_public_function_returns_any():
    """A public function says what it returns (torch's ``Work``, a ``Future`` of what, ``object`` for a student's
    result): ``Any`` would switch mypy off for every caller. Underscored helpers and dunders may still take torch's
    untyped values through."""
    wrong = _functions_returning_any(PACKAGE)
    assert not wrong, "give these a precise return type instead of Any:\n" + "\n".join(wrong)


def test_the_any_finder_sees_what_it_finds(tmp_path):
    (tmp_path / "m.py").write_text(
        "import typing\nfrom typing import Any\n"
        "def bare() -> Any: ...\n"
        "def dotted() -> typing.Any: ...\n"
        "def quoted() -> 'Any': ...\n"
        "def _private() -> Any: ...\n"
        "def fine() -> list[Any]: ...\n"
        "class C:\n    def method(self) -> Any: ...\n    def __call__(self) -> Any: ...\n"
        "def outer() -> None:\n    def inner() -> Any: ...\n")
    assert sorted(_functions_returning_any(tmp_path)) == [f"m.py: {name}" for name in
                                                          ("bare", "dotted", "inner", "method", "quoted")]


def test_mypy_is_strict_on_the_whole_package():
    """The configuration checks all of d2lmp strictly, and no override turns a check off for some module."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["d2lmp"] and config["strict"] is True
    allowed = {"module", "ignore_missing_imports", "implicit_reexport"}  # third-party modules only
    for override in config.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not any(m == "d2lmp" or m.startswith("d2lmp.") for m in modules), override
        assert set(override) <= allowed, f"an override may only describe third-party modules: {override}"


def pinned_torch() -> str:
    """The torch version CI pins (requirements-ci.txt), the one the package is type-checked against."""
    pins = re.findall(r"^torch==(\S+)", (ROOT / "requirements-ci.txt").read_text(), flags=re.M)
    assert len(pins) == 1, f"requirements-ci.txt should pin torch once: {pins}"
    return pins[0]


def installed_torch() -> str:
    """The installed torch's version, without a local build tag (2.13.0+cpu is 2.13.0)."""
    return importlib.metadata.version("torch").split("+")[0]


def test_the_pin_is_read():
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned_torch()), pinned_torch()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mypy") is None and importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_passes():
    """mypy against the pinned torch only: torch's own annotations change between releases (other versions give
    errors that are torch's, not ours), and every torch in the supported range runs the tests."""
    if installed_torch() != pinned_torch():
        pytest.skip(f"mypy checks against torch {pinned_torch()} (requirements-ci.txt); torch {installed_torch()} "
                    "is installed, whose annotations differ")
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
