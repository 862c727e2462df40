"""Renumber the notebooks once a lettered one (``10b_slug.ipynb``) has been inserted, and every text that names them.

Usage: python -m tools.renumber [--dry-run]

The notebooks, sorted by number then letter, get consecutive numbers again: ``10b`` becomes 11, 11 becomes 12, and so
on. Every file git tracks is then rewritten where it names a renumbered notebook: file names and stems (links,
anchors, Colab badges, the book's calculators, tests), link texts ("11 · NCCL" and "[11](...)"), prose ("notebook 14",
"notebooks 12 to 14", "notebooks 10-16", "(12 to 14)", "experts (17)", "14[24]"), titles ("# 11 ·"), README table
rows, the tests' ``("14", 24)`` keys and ``{"11", "12"}`` sets, and the count of notebooks; the README's table of
each notebook's modules is regenerated. Files under ``docs/audit/`` are history: only their links are rewritten.

A link to a section of the notebook that was split goes to the new notebook when the section moved there. An unlinked
"notebook 10" goes to the new one when its sentence holds more words found only in the new notebook than words found
only in the old one; each such choice is printed for review. The script refuses to run when no lettered notebook is
present, so it runs once.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.notebooks import NOTEBOOK_DIR, ROOT, read

__all__ = ["Plan", "plan", "rewrite_text", "rewrite_notebook", "main"]

NAME = re.compile(r"^(\d\d)([a-z]?)_([a-z0-9_]+)\.ipynb$")
HISTORY = ("docs/audit/",)
TEXT_SUFFIXES = {".ipynb", ".md", ".py", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".rst", ".html", ".js", ".css",
                 ".sh", ""}


@dataclass(frozen=True)
class Plan:
    """Old number -> new number (``"10b" -> "11"``), old stem -> new stem, and what tells the split notebook's
    moved sections apart: ``base`` (the number it was split from), ``child`` (the lettered number), their
    section anchors and the words and code names only one of the two has."""

    numbers: dict[str, str]
    stems: dict[str, str]
    base: str
    child: str
    child_anchors: frozenset[str]
    base_anchors: frozenset[str]
    child_words: frozenset[str]
    base_words: frozenset[str]
    old_count: int
    new_count: int


def _anchors(path: Path) -> set[str]:
    heads = [line.lstrip("#").strip() for c in read(path).markdown() for line in c.source.splitlines()
             if line.startswith("#")]
    return {h.replace(" ", "-").lower() for h in heads}


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z][a-z0-9_]{2,}", text.lower()))


def _vocabulary(path: Path) -> set[str]:
    """The words and code names of a notebook's cells, its References and tables (a glossary names every
    notebook's terms) left out."""
    cells = [c.source for c in read(path).cells if not c.source.startswith("## References")]
    return _tokens("\n".join(line for text in cells for line in text.splitlines() if not line.startswith("|")))


def plan(directory: Path = NOTEBOOK_DIR) -> Plan:
    """The renaming the notebooks in ``directory`` call for; ValueError when none is lettered."""
    found = [(NAME.match(p.name), p) for p in sorted(directory.glob("*.ipynb"))]
    entries = sorted((int(m.group(1)), m.group(2), m.group(3), p) for m, p in found if m)
    lettered = [e for e in entries if e[1]]
    if not lettered:
        raise ValueError("no lettered notebook (such as 10b_slug.ipynb): nothing to renumber; it has run already")
    if len(lettered) > 1:
        raise ValueError(f"one lettered notebook at a time, found {[e[3].name for e in lettered]}")
    numbers, stems = {}, {}
    for new, (num, letter, slug, path) in enumerate(entries, start=entries[0][0]):
        old = f"{num:02d}{letter}"
        if old != f"{new:02d}":
            numbers[old] = f"{new:02d}"
            stems[path.stem] = f"{new:02d}_{slug}"
    num, letter, _, child_path = lettered[0]
    base_path = next(e[3] for e in entries if e[0] == num and not e[1])
    child, base = _vocabulary(child_path), _vocabulary(base_path)
    return Plan(numbers, stems, f"{num:02d}", f"{num:02d}{letter}", frozenset(_anchors(child_path)),
                frozenset(_anchors(base_path)), frozenset(child - base), frozenset(base - child), len(entries) - 1,
                len(entries))


NUM = r"\d\d[a-z]?"
LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]*?)(\d\d[a-z]?_[a-z0-9_]+)(\.ipynb|\.html)?(#[^)\s]*)?\)")
STEM = re.compile(r"(?<![A-Za-z0-9])(\d\d[a-z]?_[a-z0-9_]+)(?![a-z0-9_])")
PROSE = re.compile(rf"\b([Nn]otebooks?)(\s+)({NUM})((?:(?:,\s+|,?\s+and\s+|\s+or\s+|\s+to\s+|–|-)"
                   rf"{NUM}\b)*)(?![\d\[])")
CELL_REF = re.compile(rf"(?<=[\s(])({NUM})\[(\d+(?:[–-]\d+)?(?:,\s*\d+)*)\]")
BARE_RANGE = re.compile(rf"\(({NUM})(\s+to\s+|–|-)({NUM})\)")  # "(12 to 14)", after "data, pipeline and tensor"
# "experts (17), failures (18) and scale (19).": topics, each with its notebook
ALONE = re.compile(rf"(?<=[a-z] )\(({NUM})\)(?=,|\.|;| and\b| or\b)")
TITLE = re.compile(rf"(?:^|(?<=[\"']))(#+\s+)({NUM})( · )", re.M)  # a line, or a string that starts with one
KEY = re.compile(rf"\(\"({NUM})\",(\s*\d+)\)")
NUMBER_SET = re.compile(rf"\{{\s*\"{NUM}\"(?:,\s*\"{NUM}\")*\s*\}}")  # {"11", "12"}: a set of notebook numbers


class _Log:
    def __init__(self) -> None:
        self.review: list[str] = []


def _sentence(text: str, at: int) -> str:
    start = max(text.rfind(". ", 0, at), text.rfind("\n\n", 0, at), 0)
    ends = [i for i in (text.find(". ", at), text.find("\n\n", at)) if i >= 0]
    return text[start:min(ends) if ends else len(text)]


def _number(p: Plan, old: str, sentence: str, log: _Log, where: str) -> str:
    """The new number of a single "notebook NN"; the split one's goes where its sentence's words point."""
    if old == p.base and sentence:
        words = _tokens(sentence)
        child, base = sorted(words & p.child_words), sorted(words & p.base_words)
        goes = len(child) >= len(base) and bool(child)
        log.review.append(f"{where}: notebook {p.base} {'-> ' + p.numbers[p.child] if goes else 'kept'} "
                          f"(words of {p.child}: {child}, of {p.base}: {base}): {' '.join(sentence.split())[:140]!r}")
        return p.numbers[p.child] if goes else old
    return p.numbers.get(old, old)


def _link(p: Plan, m: re.Match[str]) -> str:
    text, prefix, stem, ext, anchor = m.group(1), m.group(2), m.group(3), m.group(4) or "", m.group(5) or ""
    old = stem.split("_", 1)[0]
    base_stem = next((s for s in (p.stems.get(stem, stem),) if s), stem)
    new_stem = base_stem
    if old == p.base and anchor:
        key = anchor[1:].lower()
        if key in p.child_anchors and key not in p.base_anchors:
            new_stem = next(new for o, new in p.stems.items() if o.startswith(p.child + "_"))
    new_num = new_stem.split("_", 1)[0]
    if new_num != old:
        text = re.sub(rf"(?<![\d.]){re.escape(old)}(?![\d\w])", new_num, text, count=1)
    return f"[{text}]({prefix}{new_stem}{ext}{anchor})"


def _prose(p: Plan, text: str, log: _Log, where: str) -> str:
    def many(m: re.Match[str]) -> str:
        ranged = m.group(4) or text.startswith((" onwards", " on "), m.end())  # a range starts where it starts
        sentence = "" if ranged else _sentence(text, m.start())
        first = _number(p, m.group(3), sentence, log, where)
        rest = re.sub(NUM + r"\b", lambda n: p.numbers.get(n.group(0), n.group(0)), m.group(4))
        return f"{m.group(1)}{m.group(2)}{first}{rest}"

    text = PROSE.sub(many, text)
    text = BARE_RANGE.sub(lambda m: m.group(0) if m.group(1) not in p.numbers else (
        f"({p.numbers[m.group(1)]}{m.group(2)}{p.numbers.get(m.group(3), m.group(3))})"), text)
    text = ALONE.sub(lambda m: f"({p.numbers.get(m.group(1), m.group(1))})", text)
    text = CELL_REF.sub(lambda m: f"{p.numbers.get(m.group(1), m.group(1))}[{m.group(2)}]", text)
    text = TITLE.sub(lambda m: f"{m.group(1)}{p.numbers.get(m.group(2), m.group(2))}{m.group(3)}", text)
    return text


def _table_rows(p: Plan, text: str) -> str:
    """A README-style row ``| 11 | [..](notebooks/11_x.ipynb) |``: the number cell follows the row's one link."""
    out = []
    for line in text.split("\n"):
        stems = set(re.findall(r"(\d\d[a-z]?)_[a-z0-9_]+\.ipynb", line))
        if line.startswith("|") and len(stems) == 1:
            old = stems.pop()
            line = re.sub(rf"^\|\s*{re.escape(old)}\s*\|", f"| {p.numbers.get(old, old)} |", line)
        out.append(line)
    return "\n".join(out)


def _count(p: Plan, text: str) -> str:
    """The series' size ("a teaching series, 19 notebooks"), not a past run's ("2,764 tests, 19 notebooks")."""
    return re.sub(rf"(?<!tests, )(?<!; )\b{p.old_count} notebooks\b", f"{p.new_count} notebooks", text)


def rewrite_text(p: Plan, text: str, where: str = "", history: bool = False,
                 log: _Log | None = None) -> str:
    """``text`` with every name of a renumbered notebook rewritten (links only when ``history``)."""
    log = log or _Log()
    if not history:
        text = _table_rows(p, text)
    pieces: list[str] = []
    last = 0
    for m in LINK.finditer(text):
        if m.group(3) in p.stems or m.group(3).split("_", 1)[0] == p.base:
            outside = text[last:m.start()]
            pieces.append(outside if history else _prose(p, outside, log, where))
            pieces.append(_link(p, m))
            last = m.end()
    tail = text[last:]
    pieces.append(tail if history else _prose(p, tail, log, where))
    text = "".join(pieces)
    text = STEM.sub(lambda m: p.stems.get(m.group(1), m.group(1)), text)
    if history:
        return text
    text = KEY.sub(lambda m: f"(\"{p.numbers.get(m.group(1), m.group(1))}\",{m.group(2)})", text)
    text = NUMBER_SET.sub(lambda m: re.sub(
        r"\"(\d\d[a-z]?)\"", lambda n: f"\"{p.numbers.get(n.group(1), n.group(1))}\"", m.group(0)), text)
    return _count(p, text)


def _lines(value: str | list[str], change: Callable[[str], str]) -> str | list[str]:
    if isinstance(value, str):
        return change(value)
    return change("".join(value)).splitlines(keepends=True)


def rewrite_notebook(p: Plan, text: str, where: str = "", history: bool = False, log: _Log | None = None) -> str:
    """A notebook file's JSON with ``rewrite_text`` applied to each cell's source and text outputs."""
    log = log or _Log()
    nb = json.loads(text)

    def change(value: str) -> str:
        return rewrite_text(p, value, where, history, log)

    for cell in nb["cells"]:
        cell["source"] = _lines(cell["source"], change)
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = _lines(out["text"], change)
            data: dict[str, Any] = out.get("data", {})
            for kind in ("text/plain", "text/markdown", "text/html"):
                if kind in data:
                    data[kind] = _lines(data[kind], change)
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    return new if new != json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n" else text


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = [ROOT / line for line in out.splitlines()]
    return [path for path in paths if path.suffix in TEXT_SUFFIXES and path.is_file() and not _about_renumbering(path)]


def _about_renumbering(path: Path) -> bool:
    """This script and its tests name notebooks only as examples."""
    if path.resolve() == Path(__file__).resolve():
        return True
    return path.suffix == ".py" and "from tools import renumber" in path.read_text(encoding="utf-8", errors="replace")


def _rename(p: Plan, dry: bool, say: Callable[[str], None]) -> None:
    for old, new in sorted(p.stems.items(), reverse=True):  # highest first: no name is taken while it is in use
        say(f"rename notebooks/{old}.ipynb -> notebooks/{new}.ipynb")
        if not dry:
            subprocess.run(["git", "mv", f"notebooks/{old}.ipynb", f"notebooks/{new}.ipynb"], cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    try:
        p = plan()
    except ValueError as err:
        print(f"renumber: {err}", file=sys.stderr)
        return 2
    print("numbers: " + ", ".join(f"{o} -> {n}" for o, n in p.numbers.items()))
    log = _Log()
    changed = 0
    for path in _tracked():
        rel = path.relative_to(ROOT).as_posix()
        try:
            before = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rewrite = rewrite_notebook if path.suffix == ".ipynb" else rewrite_text
        after = rewrite(p, before, rel, history=rel.startswith(HISTORY), log=log)
        if after != before:
            changed += 1
            lines = sum(a != b for a, b in zip(before.splitlines(), after.splitlines()))
            print(f"rewrote {rel} ({lines} lines)")
            if not args.dry_run:
                path.write_text(after, encoding="utf-8")
    _rename(p, args.dry_run, print)
    print(f"{changed} files rewritten, {len(p.stems)} notebooks renamed")
    if not args.dry_run:  # the README's table of the modules each notebook uses is generated from the file names
        from tools import notebook_modules

        notebook_modules.main([])
    if log.review:
        print(f"\nunlinked mentions of notebook {p.base}, decided by the words of their sentence (check by hand):")
        print("\n".join(f"  {line}" for line in log.review))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
