"""The web book's sources: each notebook as a page, with what a reader without a kernel needs added.

``stage(notebook_dict, stem)`` returns the page's copy of a notebook: below the title, links to open it in
Colab and to download it; each exercise's model answer folded under its hint; beside a widget that the page
runs itself (book/calculators.py) the calculator's placeholder; beside every other widget a note that it needs
a kernel (its recorded plots stay). Widget state is dropped, so no page asks a CDN for a widget manager.
Nothing is executed.
"""

from __future__ import annotations

import copy
import importlib
import re
from typing import Any

from book.calculators import CALCULATORS
from d2lmp.source_code import source_of

REPOSITORY = "d2lmp/d2lmp"
WIDGET = "application/vnd.jupyter.widget-view+json"
EXERCISE = re.compile(r"^\*\*Exercise (\d+)\.")
NOTEBOOK_LINK = re.compile(r'(\]\(|href=")(\d\d_[a-z0-9_]+)\.ipynb(#[^)"]*)?')
BADGE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")
HEADING_LINK = re.compile(r"\]\(#(?!ref-)([^)]+)\)")
KERNEL_NOTE = ("*This widget needs a Python kernel: open the notebook in Colab or JupyterLab (links at the top) "
               "to move its controls.*")


def colab_url(stem: str) -> str:
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{stem}.ipynb"


def links_cell(stem: str) -> dict[str, Any]:
    html = (f'<p class="d2lmp-links"><a href="{colab_url(stem)}">Open in Colab</a> · '
            f'<a href="notebooks/{stem}.ipynb" download>Download the notebook</a></p>')
    return _markdown(html, "book-links")


def calculator_cell(name: str) -> dict[str, Any]:
    html = (f'<div class="d2lmp-calc" data-calc="{name}"><p class="d2lmp-calc-status">The calculator below runs '
            f'the model package in this page (Pyodide); it is loading.</p></div>')
    return _markdown(html)


def errata_page(errata: str, stems: list[str]) -> str:
    """ERRATA.md for the book: a reference link (#ref-...) quoted from a notebook points to that notebook's
    References (the notebook is the one whose "### NN · title" heading the entry is under)."""
    by_number = {stem[:2]: stem for stem in stems}
    lines, stem = [], None
    for line in errata.splitlines():
        if m := re.match(r"### (\d\d) ", line):
            stem = by_number.get(m.group(1))
        lines.append(line.replace("](#ref-", f"]({stem}.html#ref-") if stem else line)
    return "\n".join(lines) + "\n"


def calculators_page(titles: dict[str, str]) -> str:
    """The page with every calculator, each under its title and a link to the notebook it belongs to
    (``titles``: notebook stem -> title; notebooks not in the book are named without a link)."""
    parts = ["# Calculators", "",
             "Each calculator runs the series' model package in this page (Python compiled to WebAssembly, "
             "by Pyodide): the same functions the notebooks call, with nothing on a server. Each also stands "
             "in its notebook, beside the widget it stands for.", ""]
    for name, calc in CALCULATORS.items():
        where = f"[{titles[calc.notebook]}]({calc.notebook}.html)" if calc.notebook in titles else calc.notebook
        parts += [f"## {calc.title}", "", f"From {where}.", "", _text(calculator_cell(name)["source"]), ""]
    return "\n".join(parts)


def _markdown(text: str, cell_id: str = "") -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def _text(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


def section_id(anchor: str) -> str:
    """The book page's section id for a Jupyter heading anchor: ``What-we-did-not-cover,-and-where`` is
    ``what-we-did-not-cover-and-where`` (lower case, every run of other characters one hyphen)."""
    return re.sub(r"[^a-z0-9]+", "-", anchor.lower()).strip("-")


def page_links(markdown: str) -> str:
    """Links to notebooks made links to their pages; a Jupyter heading anchor (#Title-With-Dashes), on this page or
    another, made the page's section id (#title-with-dashes). Links are otherwise left as written (book/conf.py)."""
    markdown = BADGE.sub("", markdown)  # an image from Colab's site; the page's own link replaces it
    markdown = NOTEBOOK_LINK.sub(
        lambda m: f"{m[1]}{m[2]}.html" + (f"#{section_id(m[3][1:])}" if m[3] else ""), markdown)
    return HEADING_LINK.sub(lambda m: f"](#{section_id(m[1])})", markdown)


def image_alt(code: str) -> str:
    """Alt text of a plot a code cell drew: the call that drew it (the page's prose around it explains it)."""
    lines = [line.strip() for line in code.splitlines() if line.strip() and not line.strip().startswith("#")]
    drawing = [line for line in lines if any(word in line for word in ("plot", "show", "draw"))]
    call = (drawing or lines or [""])[0]
    call = call if len(call) <= 100 else call[:99] + "…"
    return f"Plot drawn by the code above: {call}" if call else "Plot drawn by the code above"


def solutions(stem: str) -> dict[int, str]:
    """The model answer of each exercise of the notebook, as markdown folded in <details>, by number."""
    module = importlib.import_module(f"d2lmp.exercises.{stem.split('_', 1)[1]}")
    folded = {}
    for exercise in module.EXERCISES:
        body = exercise.solution_text.strip()
        if callable(exercise.reference):
            body += f"\n\n```python\n{source_of(exercise.reference).rstrip()}\n```"
        folded[exercise.number] = f"<details><summary>Solution</summary>\n\n{body}\n\n</details>"
    return folded


def stage(notebook: dict[str, Any], stem: str) -> dict[str, Any]:
    """The page's copy of ``notebook`` (its JSON), which is left unchanged."""
    nb = copy.deepcopy(notebook)
    nb["metadata"].pop("widgets", None)
    answers = solutions(stem)
    calculators = {c.widget_call: name for name, c in CALCULATORS.items() if c.notebook == stem}
    cells: list[dict[str, Any]] = []
    for index, cell in enumerate(nb["cells"]):
        cells.append(cell)
        source = _text(cell["source"])
        if index == 0:
            cells.append(links_cell(stem))
        if cell["cell_type"] == "markdown":
            cell["source"] = page_links(source)
            if (m := EXERCISE.match(source)) and int(m.group(1)) in answers:
                cell["source"] = cell["source"].rstrip() + "\n\n" + answers[int(m.group(1))]
        if cell["cell_type"] == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            cell["metadata"].setdefault("mystnb", {})["image"] = {"alt": image_alt(source)}
        if cell["cell_type"] != "code" or not any(WIDGET in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        cell["outputs"] = [o for o in cell["outputs"] if WIDGET not in o.get("data", {})]
        name = next((n for call, n in calculators.items() if call in source), None)
        added = calculator_cell(name) if name else _markdown(KERNEL_NOTE)
        added["id"] = f"book-after-{index}"
        cells.append(added)
    nb["cells"] = cells
    return nb
