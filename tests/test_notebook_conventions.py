"""Every notebook in notebooks/ follows the series' conventions (see CONTRIBUTING.md and README.md)."""

import re

import pytest

from tools.notebooks import NOTEBOOK_DIR, ROOT, paths, read, source_text

NOTEBOOKS = paths()
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_file_name(path):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), "names are NN_slug.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_introduces_the_section(path):
    first = read(path).cells[0]
    assert first.is_markdown
    text = first.source
    lines = text.splitlines()
    assert lines[0].startswith("# "), "the first line is the title"
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    summary = paragraphs[1].strip().splitlines()
    assert len(summary) == 2, f"a two-line summary follows the title, got {summary}"
    goals = re.search(r"\*\*Learning goals\*\*\n((?:- .+\n?)+)", text)
    assert goals and len(goals.group(1).strip().splitlines()) >= 2, "at least two learning goals as a list"
    for label in ("Learn before", "Related", "Learn after"):
        assert f"**{label}:**" in text, f"missing '{label}'"
    for target in re.findall(r"\]\((?!https?://)([^)]+\.ipynb)\)", text):  # local links; the Colab badge is absolute
        assert (NOTEBOOK_DIR / target).exists(), f"link to {target} does not resolve"
        assert target != path.name, "a notebook does not link to itself"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_setup_cell_installs_only_in_colab(path):
    cell = read(path).cells[1]
    assert cell.is_code
    src = cell.source
    assert re.search(r'if "google\.colab" in sys\.modules:', src), "the install is guarded by a Colab check"
    guarded = src.split('if "google.colab" in sys.modules:', 1)[1]
    assert "pip" in guarded and "install" in guarded
    assert "pip" not in src.split('if "google.colab"', 1)[0], "nothing is installed outside Colab"
    # Outside the guarded block, only comments and `import sys` (which the guard needs): nothing runs elsewhere.
    outside = [line for line in src.splitlines() if line.strip() and not line.startswith((" ", "\t"))
               and not line.lstrip().startswith("#") and not line.startswith('if "google.colab" in sys.modules:')]
    assert outside == ["import sys"], f"the set-up cell does something outside Colab: {outside}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_widget_figure_summary_and_exercises(path):
    nb = read(path)
    outputs = list(nb.outputs())
    assert any(WIDGET_MIME in o.get("data", {}) for o in outputs), "at least one ipywidgets widget was displayed"
    assert any("image/png" in o.get("data", {}) for o in outputs), "at least one matplotlib figure"
    headings = [line.strip() for c in nb.markdown() for line in c.source.splitlines()]
    assert "## Summary" in headings and "## Exercises" in headings
    assert headings.index("## Summary") < headings.index("## Exercises")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_executed_in_order_without_errors(path):
    nb = read(path)
    code = nb.code()
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"cells must be run once, top to bottom: {counts}"
    for o in nb.outputs():
        assert o["output_type"] != "error", f"error output: {o.get('ename')}: {o.get('evalue')}"
        if o["output_type"] == "stream" and o["name"] == "stderr":
            assert "Traceback" not in source_text(o["text"])
    checked = [c for c in code if "# NBVAL_CHECK_OUTPUT" in c.source]
    assert checked, "mark the deterministic cells with # NBVAL_CHECK_OUTPUT"
    assert all(c.outputs for c in checked), "a checked cell must have output to compare"


def test_readme_has_a_colab_badge_per_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert re.search(r"colab\.research\.google\.com/github/[^)\s]+/notebooks/" + re.escape(path.name), readme), \
            f"README has no Colab link for {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_from_a_full_size_run(path):
    """Each notebook states its run mode; the committed outputs must come from a full-size run, not quick mode."""
    text = "\n".join(c.stream_text() for c in read(path).code())
    assert re.search(r"Quick mode: False|full-size run", text), "no output states the run mode"
    assert not re.search(r"Quick mode: True|\| quick mode", text), "committed from a quick-mode run"


# Lessons speak about the subject, not about this project's goals, its past runs or its working files.
PROJECT_HISTORY = [
    (re.compile(r"\bgoals?\b", re.I), "goal language (only the 'Learning goals' of the first cell)"),
    (re.compile(r"we have not recorded", re.I), "a remark about runs not yet recorded"),
    (re.compile(r"the code of the time", re.I), "a remark about how earlier code measured"),
    (re.compile(r"notebooks were committed from|met on this machine", re.I), "one machine's outcome stated as fact"),
    (re.compile(r"facts\.md|facts sheet|reference sheet|\.\./shared|/wor[k]/", re.I),
     "a working file outside the repository (cite d2lmp.bibliography instead)"),
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_speaks_about_the_subject_not_the_project(path):
    found = []
    for cell in read(path).markdown():
        text = cell.source.replace("**Learning goals**", "")
        found += [(cell.index, why, m.group()) for pattern, why in PROJECT_HISTORY for m in pattern.finditer(text)]
    assert not found, f"(cell, reason, text): {found}"


def _jupyter_anchors(path) -> set[str]:
    """The anchors JupyterLab gives a notebook's headings: the heading's text, spaces made hyphens."""
    anchors = set()
    for cell in read(path).markdown():
        for line in cell.source.splitlines():
            heading = re.match(r"#{1,6}\s+(.*\S)", line)
            if heading:
                anchors.add(re.sub(r"[`*]", "", heading[1]).replace(" ", "-"))
    return anchors


def test_every_link_to_a_section_names_a_heading_of_its_notebook_as_jupyter_spells_it():
    anchors = {path.name: _jupyter_anchors(path) for path in NOTEBOOKS}
    broken = []
    for path in NOTEBOOKS:
        for cell in read(path).markdown():
            for target, anchor in re.findall(r"\]\((\d\d_[a-z0-9_]+\.ipynb)?#((?!ref-)[^)\s]+)\)", cell.source):
                if anchor not in anchors.get(target or path.name, set()):
                    broken.append(f"{path.name}: {target}#{anchor}")
    assert not broken, f"links to no heading (JupyterLab's anchor keeps the heading's case): {broken}"
