"""ERRATA.md stays true: every correction's new text is in the notebook it names (markdown, code or printed output),
or in the exercise module named beside it (a solution is not on the page until the reader asks for it)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tools.notebooks import paths, read

ROOT = Path(__file__).resolve().parents[1]


def _entries() -> list[tuple[str, str]]:
    """(where, new text) for every "**Now:**" line: the notebook number of the "### NN · title" heading it follows,
    or the exercise module named in "**Now** (`d2lmp.exercises.x`):"."""
    entries, notebook = [], None
    for line in (ROOT / "ERRATA.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### (\d\d) · ", line)
        if heading:
            notebook = heading.group(1)
        now = re.match(r'- \*\*Now(?:\*\* \(`([\w.]+)`\):|:\*\*) "(.+)"$', line)
        if now:
            assert notebook, f"a correction before any notebook heading: {line}"
            entries.append((now.group(1) or notebook, now.group(2)))
    return entries


def _flat(text: str) -> str:
    return " ".join(text.split())


def _notebook_text(number: str) -> str:
    (path,) = [p for p in paths() if p.name.startswith(f"{number}_")]
    return _flat("\n".join(cell.source + "\n" + cell.stream_text() for cell in read(path).cells))


def _module_text(name: str) -> str:
    module = importlib.import_module(name)
    return _flat("\n".join(f"{e.question}\n{e.hint_text}\n{e.solution_text}" for e in module.EXERCISES))


def test_errata_has_entries():
    assert len(_entries()) >= 10


@pytest.mark.parametrize(("where", "new"), _entries())
def test_each_correction_is_in_its_notebook(where, new):
    text = _module_text(where) if where.startswith("d2lmp.") else _notebook_text(where)
    assert _flat(new) in text, f"ERRATA.md says {where} now reads {new!r}"
