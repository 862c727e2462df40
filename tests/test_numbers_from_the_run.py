"""Prose never types a number measured on some machine: a figure with a unit is printed by the notebook, cited, or
one of the notebook's own inputs.

A markdown cell's number followed by a unit of time, rate, size, power, frequency or ratio (``12.3 ms``, ``74 GB/s``,
``1.68×``, ``97 %``) passes when the notebook prints it (it appears in an output), when its cell cites a source
(a ``](#ref-...)`` link), or when the notebook's own code names it (an input the notebook chose, such as a buffer
size). Anything else was typed from some run and goes stale the next time the notebook runs: print it from the run,
cite it, or phrase the point without it. ``REVIEWED`` lists, per notebook, the few numbers a reviewer accepted and why.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

UNITS = (r"ms|µs|us|ns|s|min|h|GB/s|GiB/s|MB/s|MiB/s|TB/s|KB/s|Gb/s|GT/s|MT/s|GFLOP/s|TFLOP/s|PFLOP/s|GFLOPS|TFLOPS|"
         r"TOPS|MiB|GiB|KiB|MB|GB|TB|W|kW|GHz|MHz|%|×")
NUMBER = re.compile(r"(?<![\w.#/$-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(" + UNITS + r")(?![\w/])(?!\s?[\d(])")

# (notebook number, the number as written) -> why a reviewer accepted it without a print or a citation
REVIEWED: dict[tuple[str, str], str] = {
    ("02", "3.5"): "exercise 6's given: the clock of a hypothetical laptop CPU whose peak the student computes",
}


def _texts(cell: dict) -> list[str]:
    out = []
    for o in cell.get("outputs", []):
        if "text" in o:
            out.append("".join(o["text"]))
        for kind, value in o.get("data", {}).items():
            if kind.startswith("text/"):
                out.append("".join(value) if isinstance(value, list) else value)
    return out


def _prose(src: str) -> str:
    """Markdown without code spans, fenced code and LaTeX, where numbers are definitions, not measurements."""
    src = re.sub(r"```.*?```", " ", src, flags=re.S)
    src = re.sub(r"`[^`]*`", " ", src)
    return re.sub(r"\$[^$]*\$", " ", src)


def typed_numbers(path: Path) -> list[str]:
    """'cell N: <number with unit>: <its line>' for every number the notebook neither prints, cites nor names."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    printed = " ".join(t for c in cells for t in _texts(c))
    code = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    found = []
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or src.startswith("## References"):
            continue
        if "](#ref-" in src:  # a cell that cites its source (a section of the lesson, an exercise)
            continue
        for paragraph in re.split(r"\n\s*\n", _prose(src)):
            for m in NUMBER.finditer(paragraph):
                number = m.group(1) + (m.group(2) or "")
                plain = number.replace(",", "")
                if number in printed or plain in printed or (path.name[:2], number) in REVIEWED:
                    continue
                if re.search(r"(?<![\d.])" + re.escape(plain) + r"(?![\d])", code):
                    continue
                line = next(ln for ln in paragraph.splitlines() if m.group(0) in ln)
                found.append(f"cell {i}: {m.group(0)}: {line.strip()[:120]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_prose_types_no_number_from_some_run(path):
    found = typed_numbers(path)
    assert not found, ("numbers in the prose that the notebook neither prints nor cites (print them from the run, "
                       "cite them, or phrase the point without them):\n" + "\n".join(found))


def test_the_check_sees_a_typed_number_and_lets_printed_and_cited_ones_pass(tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "source": "The step took 10.75 ms here, against 8.2 ms there.", "metadata": {}},
        {"cell_type": "markdown", "source": "A100s reach 312 TFLOPS.\n\nSee [NVIDIA, 2020](#ref-nvidia_a100).",
         "metadata": {}},
        {"cell_type": "code", "source": "print('step 8.2 ms')", "metadata": {}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "step 8.2 ms\n"}]},
        {"cell_type": "markdown", "source": "A `buffer of 64 MiB` and $2^{30}$ bytes: definitions.", "metadata": {}},
    ]}
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps(nb))
    assert typed_numbers(path) == ["cell 0: 10.75 ms: The step took 10.75 ms here, against 8.2 ms there."]
