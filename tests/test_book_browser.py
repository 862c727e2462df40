"""The web book as built and as a reader uses it: internal links, anchors, plots and alt text in the built files;
in headless Chromium, pages that load with no console error and rendered math, a search that finds a late
notebook, and calculators that run the model package in the page and show what the Python function returns for
the same inputs, changed from the keyboard.

The site is built once per session (tests/book_site.py; quick mode: the notebooks with a calculator, the front
page, the calculators page and the errata). Skipped, with the reason, only where npm (the vendored MathJax and
Pyodide) or, for the browser tests, Chromium is missing.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from book_site import LATE_NOTEBOOK, SITE, npm_or_cache
from browser_lab import available

from book.calculators import CALCULATORS, DEVICES
from d2lmp import config
from d2lmp.model import checkpoint_interval as CI
from d2lmp.model.alpha_beta import all_reduce_model
from d2lmp.model.cluster import Cluster, plan
from d2lmp.model.cluster.comm_roofline import strategy_point
from d2lmp.model.cluster.link_roof import link_roof
from d2lmp.model.cluster.presets import MODEL_PRESETS, model_preset
from d2lmp.model.memory_calculator import MemorySetting, compare
from d2lmp.model.pipeline_schedule import bubble_fraction, measured_bubble, micro_batch_count, simulate
from tools.notebooks import paths, read

pytestmark = [
    pytest.mark.slow, pytest.mark.xdist_group("book"),
    pytest.mark.skipif(not npm_or_cache(), reason="npm is not installed (Debian: apt-get install npm): the web "
                                                  "book vendors MathJax and Pyodide from npm; its tests skipped"),
]
_needs_chromium = pytest.mark.skipif(
    not available(), reason="Chromium is not installed (Debian: apt-get install chromium); browser tests skipped")


def in_chromium(test):
    """Marks a test that reads the site in Chromium."""
    return pytest.mark.browser(_needs_chromium(test))

SERIES_PATHS = {nb.stem: nb for nb in paths()}
SERIES = set(SERIES_PATHS)
CALCULATOR_WAIT_MS = 90_000  # Pyodide's first start on a busy 2-core machine


@pytest.fixture(scope="module", autouse=True)
def site():
    SITE.build()
    yield SITE
    SITE.close()


class _Page(HTMLParser):
    """A built page's links, ids and images (read from the file: every page, cheaply)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.images: list[dict[str, str | None]] = []
        self.icons: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img":
            self.images.append(a)
        if tag == "link" and "icon" in (a.get("rel") or "").split() and a.get("href"):
            self.icons.append(a["href"])


def _parsed(name):
    page = _Page()
    page.feed((SITE.root / name).read_text(encoding="utf-8"))
    return page


def _html_pages():
    return ["index.html", *(f"{p}.html" for p in SITE.pages)]


def test_every_page_names_an_icon_the_site_holds():
    """Without one, a browser asks each page's server for /favicon.ico: a 404 in every reader's console."""
    for name in _html_pages():
        icons = _parsed(name).icons
        assert icons and all((SITE.root / urlsplit(i).path).is_file() for i in icons), f"{name}: icons {icons}"


@in_chromium
def test_every_page_loads_with_no_console_error_and_math_rendered():
    bad = {}
    for name in _html_pages():
        page, problems = SITE.open(name)  # loaded; a calculator's own start is its test's (below)
        if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
            page.evaluate("() => MathJax.startup.promise")
            raw = page.evaluate("() => document.querySelectorAll('.math:not(:has(mjx-container))').length")
            if raw:
                problems.console.append(f"{raw} math element(s) not rendered by MathJax")
        if problems.all():
            bad[name] = problems.all()
            SITE.screenshot(page, name.removesuffix(".html"))
        page.close()
    assert not bad, f"pages with problems: {json.dumps(bad, indent=1)}"


def test_internal_links_and_anchors_resolve_and_images_have_alt_text():
    parsed = {name: _parsed(name) for name in _html_pages()}
    broken, no_alt = [], []
    for name, page in parsed.items():
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or href.startswith("//"):
                continue
            target = parts.path or name
            if target not in parsed and target.removesuffix(".html") in SERIES and config.quick_mode():
                continue  # a notebook the quick build leaves out
            if not (SITE.root / target).exists():
                broken.append(f"{name} -> {href}")
            elif parts.fragment and target.endswith(".html") and target in parsed \
                    and parts.fragment not in parsed[target].ids:
                broken.append(f"{name} -> {href} (no such anchor)")
        for image in page.images:
            alt, src = (image.get("alt") or "").strip(), image.get("src") or ""
            if not alt or alt.endswith((".png", ".svg")) or src.startswith("http"):
                no_alt.append(f"{name}: {src[:60]} alt={alt!r}")
    assert not broken, f"broken internal links: {broken}"
    assert not no_alt, f"images without alt text (or from outside the site): {no_alt}"
    references = sum(h.startswith("#ref-") for p in parsed.values() for h in p.links)
    assert references > 0, "no page links to its References"


def test_every_plot_of_a_built_notebook_is_shown():
    for stem in SERIES & set(SITE.pages):
        stored = sum("image/png" in o.get("data", {}) for o in read(SERIES_PATHS[stem]).outputs())
        shown = sum(img.get("src", "").startswith("_images/") for img in _parsed(f"{stem}.html").images)
        assert shown >= stored > 0, f"{stem}.html shows {shown} of the notebook's {stored} plots"


@in_chromium
def test_search_finds_a_term_of_a_late_notebook():
    term = "Daly"  # Daly's checkpoint interval, notebook 19
    assert term in (SITE.root / f"{LATE_NOTEBOOK}.html").read_text(encoding="utf-8")
    page, problems = SITE.open(f"search.html?q={term}")
    page.wait_for_selector(f"#search-results a[href*='{LATE_NOTEBOOK}']", timeout=30_000)
    assert not problems.all(), problems.all()
    page.close()


def _expected(name, v):
    """The model's numbers for control values ``v``, from the functions the calculator stands for."""
    if name == "memory":
        setting = MemorySetting(**{k: v[k] for k in ("tp", "pp", "dp", "zero", "sequence_parallel", "recompute",
                                                     "schedule", "micro_batch", "microbatches")})
        bars = compare(MODEL_PRESETS[v["model"]].model, setting, v["axis"], DEVICES[v["device"]])
        return {k: b.parts() for k, b in bars.items()}
    if name == "pipeline":
        events = simulate(v["kind"], v["stages"], v["micro_batches"], message=v["message"])
        return {"bubble": measured_bubble(events, v["stages"]),
                "formula": bubble_fraction(v["stages"], micro_batch_count(v["kind"], v["micro_batches"]))}
    if name == "alpha_beta":
        alpha, beta = v["alpha_us"] * 1e-6, 1 / (v["bandwidth"] * 1e9)
        return all_reduce_model(v["world"], 2 ** v["log2_bytes"], alpha, beta).times
    if name == "interval":
        s = CI.summarise(v["gpus"], v["per_1000_gpu_hours"] / 1000, v["save_s"], v["restart_s"])
        return {k: getattr(s, k) for k in s.__dataclass_fields__}
    if name == "comm_roofline":
        p = strategy_point(v["strategy"], model_preset(v["model"]).model, link_roof("A100-80GB", v["link"]),
                           v["ranks"], v["sequences"])
        return {"intensity": p.intensity, "ridge": p.ridge, "attainable_flops": p.attainable_flops,
                "fraction": p.fraction, "crossing": p.crossing, "flops": p.flops, "bytes": p.bytes}
    if name == "planner":
        report = plan(model_preset(v["model"]).model, Cluster(gpu=v["gpu"], gpus=v["gpus"]), v["global_batch"])
        return {"fit": len(report.ranked), "considered": report.considered,
                "top": [{"plan": c.plan.describe(), "step_s": c.prediction.step_s, "mfu": c.prediction.mfu,
                         "parts": c.prediction.parts.seconds} for c in report.top]}
    raise KeyError(name)


def _same(shown, expected):
    """``shown`` (the page's JSON) is ``expected`` to the last bits of a float: Pyodide's maths library may round
    a last bit differently from this machine's C library (the planner's step times differ by about 1e-16)."""
    if isinstance(expected, dict):
        return isinstance(shown, dict) and shown.keys() == expected.keys() and all(
            _same(shown[k], v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return isinstance(shown, list) and len(shown) == len(expected) and all(map(_same, shown, expected))
    if isinstance(expected, float) and not isinstance(shown, bool) and isinstance(shown, (int, float)):
        return math.isclose(shown, expected, rel_tol=1e-12, abs_tol=0.0)
    return shown == expected


def _shown(box):
    return json.loads(box.get_attribute("data-values")), json.loads(box.get_attribute("data-numbers"))


@pytest.fixture(scope="module")
def calculators():
    """calculators.html, loaded once with every calculator started (one Pyodide start for all of them)."""
    page, problems = SITE.open("calculators.html")
    try:
        started = f"() => document.querySelectorAll('.d2lmp-calc[data-state]').length === {len(CALCULATORS)}"
        page.wait_for_function(started, timeout=CALCULATOR_WAIT_MS)
    except BaseException:
        SITE.screenshot(page, "calculators")
        raise
    yield page, problems
    page.close()


def test_each_calculator_stands_beside_its_widget_in_its_notebook():
    for name, calc in CALCULATORS.items():
        assert calc.notebook in SITE.pages, f"{calc.notebook} not built"
        text = (SITE.root / f"{calc.notebook}.html").read_text(encoding="utf-8")
        assert f'data-calc="{name}"' in text, f"{calc.notebook}.html has no {name} calculator"


@in_chromium
@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_calculator_runs_the_model_and_answers_the_keyboard(calculators, name):
    page, problems = calculators
    calc = CALCULATORS[name]
    box = page.locator(f".d2lmp-calc[data-calc='{name}']")
    try:
        assert box.get_attribute("data-state") == "ready", box.inner_text()
        values, numbers = _shown(box)
        assert values == {c["name"]: c["value"] for c in calc.controls}
        assert _same(numbers, _expected(name, values)), numbers
        svg = box.locator("svg")
        assert svg.count() == 1 and svg.get_attribute("aria-label"), "the chart has no text alternative"
        before = box.get_attribute("data-values")
        box.evaluate("(b) => { b.shown = []; new MutationObserver(() => b.shown.push("
                     "b.querySelector('.d2lmp-calc-text').textContent)).observe(b.querySelector('.d2lmp-calc-text'),"
                     " {childList: true, characterData: true, subtree: true}); }")
        box.locator("input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("(v) => document.querySelector(`.d2lmp-calc[data-calc='${v[0]}']`).dataset.values"
                               " !== v[1]", arg=[name, before], timeout=30_000)
        if calc.slow:
            assert "computing…" in box.evaluate("(b) => b.shown"), "no word that the slow calculator is working"
        moved, numbers = _shown(box)
        assert moved != values
        assert _same(numbers, _expected(name, moved)), numbers
        assert box.locator(".d2lmp-calc-text").inner_text().strip(), "no text result shown"
        assert not problems.all(), problems.all()
    except BaseException:
        SITE.screenshot(page, f"calculator-{name}")
        raise
