"""The series has an order a student can follow: no cycles, and every notebook reachable from the first.

Each notebook's first cell names "Learn before / Related / Learn after" links. Learn-before links point
only to earlier notebooks, Learn-after links only to later ones, link texts carry the target's own
number, and following Learn-after and Related links from notebook 01 reaches every notebook.
"""

import re
from pathlib import Path

import pytest

from tools.notebooks import NOTEBOOK_DIR, paths, read

NOTEBOOKS = paths()
LINK = re.compile(r"\[([^\]]*)\]\((?!https?://)([^)#]+\.ipynb)[^)]*\)")
LABELS = ("Learn before", "Related", "Learn after")


def _number(name: str) -> int:
    return int(name[:2])


def _links(path: Path) -> dict[str, list[tuple[str, str]]]:
    first = read(path).cells[0].source
    line = next(line for line in first.splitlines() if line.startswith("**Learn before:**"))
    parts = re.split(r"\*\*(Learn before|Related|Learn after):\*\*", line)
    found = dict(zip(parts[1::2], parts[2::2]))
    assert set(found) == set(LABELS), f"{path.name}: expected {LABELS}, found {sorted(found)}"
    return {label: LINK.findall(text) for label, text in found.items()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_before_points_back_and_after_points_forward(path):
    links = _links(path)
    me = _number(path.name)
    for _text, target in links["Learn before"]:
        assert _number(target) < me, f"{path.name}: 'Learn before' links to a later notebook, {target}"
    for _text, target in links["Learn after"]:
        assert _number(target) > me, f"{path.name}: 'Learn after' links to an earlier notebook, {target}"
    for label, pairs in links.items():
        for text, target in pairs:
            assert (NOTEBOOK_DIR / target).exists(), f"{path.name}: {label} link to missing {target}"
            assert text.startswith(target[:2] + " "), f"{path.name}: link text {text!r} does not carry {target[:2]}"


def test_every_notebook_is_reachable_from_the_first():
    graph = {p.name: [t for label in ("Learn after", "Related") for _, t in _links(p)[label]] for p in NOTEBOOKS}
    seen, todo = set(), [NOTEBOOKS[0].name]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph[name]
    assert seen == set(graph), f"not reachable from {NOTEBOOKS[0].name}: {sorted(set(graph) - seen)}"


def test_numbers_are_consecutive():
    assert [_number(p.name) for p in NOTEBOOKS] == list(range(1, len(NOTEBOOKS) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_title_carries_the_notebook_number(path):
    title = read(path).cells[0].source.splitlines()[0]
    assert title.startswith(f"# {path.name[:2]} · "), f"{path.name}: the title {title!r} should start with its number"
