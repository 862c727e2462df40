"""The web book's sources, without building it: each notebook's page copy, the errata page, the calculators'
place beside their widgets, and the zip of the model package the calculators run (standard library only)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from book.calculators import CALCULATORS
from book.calculators import run as run_calculator
from d2lmp.model.cluster import Cluster, model_preset, plan
from d2lmp.model.cluster.comm_roofline import describe_point, strategy_point
from d2lmp.model.cluster.link_roof import link_roof
from tools import book_pages, book_vendor
from tools.notebooks import paths, read

NOTEBOOKS = {nb.stem: nb for nb in paths()}


def _nb(stem):
    return json.loads(NOTEBOOKS[stem].read_text(encoding="utf-8"))


def test_page_links_point_to_pages_and_section_ids():
    text = ("[03](03_general_purpose_gpus.ipynb#Summary) <a href=\"04_gpu_memory.ipynb\">04</a> "
            "[below](#What-we-did-not-cover,-and-where-to-read-next) [ref](#ref-huang2019gpipe) "
            "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://example.org/x)")
    assert book_pages.page_links(text) == (
        "[03](03_general_purpose_gpus.html#summary) <a href=\"04_gpu_memory.html\">04</a> "
        "[below](#what-we-did-not-cover-and-where-to-read-next) [ref](#ref-huang2019gpipe) ")


def test_a_staged_notebook_has_its_links_solutions_calculator_and_kernel_notes():
    stem = CALCULATORS["memory"].notebook
    original = _nb(stem)
    before = json.dumps(original)
    staged = book_pages.stage(original, stem)
    assert json.dumps(original) == before, "staging changed the notebook it read"
    cells = staged["cells"]
    sources = ["".join(c["source"]) for c in cells]
    assert "colab.research.google.com/github/d2lmp/d2lmp/blob/main/notebooks/" in sources[1]
    assert f'href="notebooks/{stem}.ipynb" download' in sources[1]
    exercises = [s for s in sources if book_pages.EXERCISE.match(s)]
    assert exercises and all("<summary>Solution</summary>" in s for s in exercises)
    widget_cells = [i for i, c in enumerate(original["cells"]) if c["cell_type"] == "code" and any(
        book_pages.WIDGET in o.get("data", {}) for o in c.get("outputs", []))]
    assert sum('data-calc="memory"' in s for s in sources) == 1
    assert sum(s == book_pages.KERNEL_NOTE for s in sources) == len(widget_cells) - 1
    assert not any(book_pages.WIDGET in o.get("data", {}) for c in cells for o in c.get("outputs", []))
    assert "widgets" not in staged["metadata"]
    plots = [c for c in cells if any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]
    assert plots and all(c["metadata"]["mystnb"]["image"]["alt"].startswith("Plot drawn by") for c in plots)
    assert len({c.get("id") for c in cells}) == len(cells), "cell ids repeat"


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_each_calculator_stands_for_a_widget_of_its_notebook(name):
    calc = CALCULATORS[name]
    cells = [c for c in read(NOTEBOOKS[calc.notebook]).code() if calc.widget_call in c.source]
    assert len(cells) == 1, f"{calc.widget_call} is in {len(cells)} code cells of {calc.notebook}"
    assert any(book_pages.WIDGET in o.get("data", {}) for o in cells[0].outputs)


def test_a_relative_output_folder_gives_sphinx_absolute_paths_that_exist(tmp_path, monkeypatch):
    """`make book` passes build/book; Sphinx reads a relative path in its overrides from book/, where the vendored
    MathJax, Pyodide and the notebooks to download are not (the site then lacked all three)."""
    from tools import build as site

    given = {}

    class RecordingSphinx:
        def __init__(self, srcdir, confdir, outdir, doctreedir, builder, confoverrides, **options):
            given.update(paths=[srcdir, outdir, doctreedir], folders=[*confoverrides["html_static_path"],
                                                                      *confoverrides["html_extra_path"]])
            self.statuscode = 0

        def build(self):
            pass

    monkeypatch.setattr("sphinx.application.Sphinx", RecordingSphinx)
    monkeypatch.setattr(book_vendor, "vendor", lambda folder: folder.mkdir(parents=True))  # no copy of npm's files
    monkeypatch.setattr(book_vendor, "model_zip", lambda path: [])
    monkeypatch.chdir(tmp_path)
    site.build(Path("build/book"), ["01_gpus_in_deep_learning"])
    assert all(Path(p).is_absolute() for p in given["paths"] + given["folders"]), given
    assert all(Path(p).is_dir() for p in given["folders"]), given


def test_errata_reference_links_point_to_their_notebook():
    text = "### 14 · Network partitioning\n- **Now:** \"([Huang et al., 2019](#ref-huang2019gpipe), §2.3)\"\n"
    assert "(14_network_partitioning.html#ref-huang2019gpipe)" in book_pages.errata_page(text, list(NOTEBOOKS))


def test_calculators_page_names_every_calculator_and_its_notebook():
    page = book_pages.calculators_page({c.notebook: "T" for c in CALCULATORS.values()})
    for name, calc in CALCULATORS.items():
        assert f'data-calc="{name}"' in page and f"]({calc.notebook}.html)" in page


@pytest.mark.slow
def test_the_model_zip_runs_the_calculators_on_the_standard_library_alone(tmp_path):
    names = book_vendor.model_zip(tmp_path / "model.zip")
    assert "calculators.py" in names and "d2lmp/model/__init__.py" in names
    assert not any(n.startswith(("d2lmp/parallel", "d2lmp/views", "d2lmp/exercises")) for n in names)
    values = {name: {c["name"]: c["value"] for c in calc.controls} for name, calc in CALCULATORS.items()}
    # -I -S: no site-packages (no torch, no numpy) and not this checkout: only the zip and the standard library
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import calculators; "
              "print(json.dumps({n: json.loads(calculators.run(n, json.dumps(v))) "
              "for n, v in json.loads(sys.argv[2]).items()}))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script, str(tmp_path / "model.zip"), json.dumps(values)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {n: json.loads(run_calculator(n, json.dumps(v))) for n, v in values.items()}


def test_model_files_refuses_a_module_beyond_the_standard_library(tmp_path):
    bad = tmp_path / "calc.py"
    bad.write_text("import numpy\n")
    with pytest.raises(ValueError, match="numpy"):
        book_vendor.model_files(bad)


def _calculate(name, **values):
    return json.loads(run_calculator(name, json.dumps(values)))


@pytest.mark.parametrize("strategy, model, sequences, ranks, link", [
    ("tp", "175B", 1, 8, "nvlink"), ("dp", "1.7B", 64, 1024, "network"), ("zero3", "llama3-70b", 4, 64, "pcie")])
def test_the_roofline_calculator_places_the_models_point_under_its_roofs(strategy, model, sequences, ranks, link):
    shown = _calculate("comm_roofline", strategy=strategy, model=model, sequences=sequences, ranks=ranks, link=link)
    point = strategy_point(strategy, model_preset(model).model, link_roof("A100-80GB", link), ranks, sequences)
    assert shown["numbers"] == {"intensity": point.intensity, "ridge": point.ridge, "fraction": point.fraction,
                                "attainable_flops": point.attainable_flops, "crossing": point.crossing,
                                "flops": point.flops, "bytes": point.bytes}
    assert shown["text"] == describe_point(point)
    chart = shown["chart"]
    assert (chart["point"]["x"], chart["point"]["y"]) == (point.intensity, point.attainable_flops / 1e12)
    assert chart["lines"][chart["point"]["line"]]["points"][-1][0] == point.ridge  # coloured as its link's roof
    assert f"{point.label}: {point.bound}-bound" == chart["point"]["label"]
    sloped = [line for line in chart["lines"] if not line.get("flat")]
    assert len(sloped) == 3 and any(line["points"][-1][0] == point.ridge for line in sloped)
    for line in sloped:  # up the slope I·B to the ridge, where it meets the matrix rate
        (x0, y0), (x1, y1) = line["points"]
        assert y0 / x0 == pytest.approx(y1 / x1) and y1 == pytest.approx(point.roof.flops_per_s / 1e12)


@pytest.mark.parametrize("model, gpus, batch", [("3.6B", 8, 32), ("175B", 8, 1536)])
def test_the_planner_calculator_shows_the_planners_top_plans_by_part(model, gpus, batch):
    shown = _calculate("planner", model=model, gpus=gpus, gpu="A100-80GB", global_batch=batch)
    report = plan(model_preset(model).model, Cluster(gpu="A100-80GB", gpus=gpus), batch)
    top = shown["numbers"]["top"]
    assert [t["plan"] for t in top] == [c.plan.describe() for c in report.top]
    assert [t["step_s"] for t in top] == [c.prediction.step_s for c in report.top]
    assert shown["numbers"]["fit"] == len(report.ranked) and shown["numbers"]["considered"] == report.considered
    bars = shown["chart"]["bars"]
    assert [sum(b["parts"].values()) for b in bars] == pytest.approx([t["step_s"] for t in top])
    if not report.ranked:
        assert not bars and "no configuration fits in memory" in shown["text"]
    else:
        assert len(bars) == min(5, len(report.ranked)) and "matrix products" in bars[0]["parts"]
