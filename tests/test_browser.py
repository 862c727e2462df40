"""Every notebook in a real browser: JupyterLab served here, driven in headless Chromium.

For each notebook: run all cells, check no "Error displaying widget", no error output, at
least one widget rendered; then move one widget control and check that its output changed.
The server and the browser are started here and always stopped. Screenshots of failures go
to test-artifacts/. Chromium comes from Debian's package (/usr/bin/chromium); Playwright's
own browser download is never used. Without Chromium the tests are skipped with a message.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from serving import fetch_when_up, free_port, stop_group

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts"
RUN_TIMEOUT_S = 300

pytestmark = [pytest.mark.browser, pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="Chromium is not installed (Debian: apt-get install chromium); browser tests skipped")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 (no token) over a copy of notebooks/, stopped afterwards."""
    root = tmp_path_factory.mktemp("lab")
    work = root / "notebooks"
    shutil.copytree(ROOT / "notebooks", work)
    settings = root / "settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "apputils-extension").mkdir(parents=True)
    # Render every cell (no virtual scrolling) so the page holds all outputs; no news pop-up.
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port = free_port()
    env = dict(os.environ, D2LMP_QUICK="1", JUPYTERLAB_SETTINGS_DIR=str(root / "settings"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
         "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={work}"]
        + (["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        fetch_when_up(f"http://127.0.0.1:{port}/api/status", 90, server)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_group(server)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            yield b
        finally:
            b.close()


STATE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const session = panel.sessionContext.session;
  return {
    kernel: session && session.kernel ? session.kernel.status : 'none',
    pending: cells.filter(c => c.model.executionCount === null || c.promptNode.textContent.includes('*')).length,
    errors: cells.flatMap(c => c.model.outputs.toJSON()).filter(o => o.output_type === 'error')
                 .map(o => o.ename + ': ' + o.evalue),
  };
}"""


def _run_all(page, name):
    """Clear the stored outputs, run every cell in the live kernel, wait until all have run."""
    page.wait_for_function("""(name) => {
        const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        return w && w.context && w.context.path === name && w.sessionContext && w.sessionContext.isReady
               && w.sessionContext.session && w.sessionContext.session.kernel
               && w.sessionContext.session.kernel.status === 'idle';
    }""", arg=name, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.wait_for_function("""() => window.jupyterapp.shell.currentWidget.content.widgets
        .filter(c => c.model.type === 'code').every(c => c.model.executionCount === null)""", timeout=30_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        state = page.evaluate(STATE_JS)
        # Run-all stops at the first error, so the cells after it never run: report it at once.
        if state and (state["errors"] or (state["pending"] == 0 and state["kernel"] == "idle")):
            return state
        time.sleep(1)
    raise TimeoutError(f"{name}: cells still running after {RUN_TIMEOUT_S} s: {page.evaluate(STATE_JS)}")


# Widget boxes, interactive ones (ipywidgets.interactive, which redraw on every change) first. Each gets a
# data attribute with its position, so Python and the page refer to the same element.
LABEL_BOXES_JS = """() => {
  const interact = [...document.querySelectorAll('.widget-interact')];
  const others = [...document.querySelectorAll('.jp-OutputArea-output .widget-vbox')]
      .filter(b => !b.closest('.widget-interact') && !b.querySelector('.widget-interact'));
  [...interact, ...others].forEach((b, i) => b.setAttribute('data-d2lmp-box', i));
  return interact.length + others.length;
}"""

SNAPSHOT_JS = """(i) => {
  const box = document.querySelector(`[data-d2lmp-box="${i}"]`);
  const out = box ? box.querySelector('.widget-output, .jp-OutputArea') : null;
  return out ? out.innerHTML : null;
}"""


# What the user would see as a failure inside a widget's output: a traceback or a widget that did not render.
BOX_ERRORS_JS = """(i) => {
  const box = document.querySelector(`[data-d2lmp-box="${i}"]`);
  const text = box ? box.innerText : '';
  return ['Traceback (most recent call last)', 'Error displaying widget'].filter(t => text.includes(t));
}"""


def _settled_snapshot(page, i, seconds=30):
    """The widget's output once it is non-empty and unchanged for a second (None if it never settles)."""
    deadline = time.monotonic() + seconds
    previous = page.evaluate(SNAPSHOT_JS, i)
    while time.monotonic() < deadline:
        time.sleep(1)
        now = page.evaluate(SNAPSHOT_JS, i)
        if now and now == previous:
            return now
        previous = now
    return None


def _boxes(page):
    count = page.evaluate(LABEL_BOXES_JS)
    return [page.locator(f'[data-d2lmp-box="{i}"]') for i in range(count)]


def _move_first_control(page):
    """Change one dropdown or slider in a widget (pressing its buttons too); return the widget's index."""
    for i, box in enumerate(_boxes(page)):
        if page.evaluate(SNAPSHOT_JS, i) is None:
            continue
        before = _settled_snapshot(page, i)
        if before is None:
            continue
        select = box.locator("select")
        handle = box.locator(".noUi-handle, .widget-slider [role='slider']")
        if select.count() and select.first.locator("option").count() > 1:
            options = select.first.locator("option")
            current = select.first.input_value()
            values = [options.nth(k).get_attribute("value") for k in range(options.count())]
            select.first.select_option(next(v for v in values if v != current))
        elif handle.count():
            handle.first.focus()
            handle.first.press("ArrowRight")
            handle.first.press("ArrowRight")
        else:
            continue
        buttons = box.locator("button.jupyter-button")
        for k in range(buttons.count()):
            buttons.nth(k).click()
        return i, before
    return None, None


def _shutdown_kernels(lab):
    with urllib.request.urlopen(f"{lab}/api/kernels", timeout=10) as response:
        kernels = json.loads(response.read())
    for kernel in kernels:
        request = urllib.request.Request(f"{lab}/api/kernels/{kernel['id']}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_its_widgets_respond(lab, browser, notebook):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # A fresh workspace per notebook, so earlier notebooks' tabs (and kernels) are not reopened.
        page.goto(f"{lab}/lab/workspaces/{notebook.stem}/tree/{notebook.name}?reset",
                  wait_until="domcontentloaded", timeout=120_000)
        state = _run_all(page, notebook.name)
        assert state["errors"] == [], f"error outputs: {state['errors']}"
        page.wait_for_selector(".jupyter-widgets", timeout=30_000)
        assert page.locator("text=Error displaying widget").count() == 0
        assert page.locator(".jupyter-widgets").count() > 0
        index, before = _move_first_control(page)
        assert index is not None, "no slider or dropdown with an output area found to move"
        page.wait_for_function(f"""([i, before]) => {{
            const now = ({SNAPSHOT_JS})(i);
            return now !== null && now !== before && now.length > 0;
        }}""", arg=[index, before], timeout=120_000)
        after = _settled_snapshot(page, index, seconds=120)
        assert after is not None, "the widget's output kept changing for 120 s after the control moved"
        assert page.evaluate(BOX_ERRORS_JS, index) == [], "the widget showed an error after its control moved"
        assert page.locator("text=Error displaying widget").count() == 0
        assert page.evaluate(STATE_JS)["errors"] == []
    except Exception as error:
        _keep_evidence(page, notebook, index if "index" in locals() else None, error)
        raise
    finally:
        page.close()
        _shutdown_kernels(lab)


def _keep_evidence(page, notebook, index, error):
    """Save a screenshot of the widget (or the window) and the page's HTML; name them in the error."""
    ARTIFACTS.mkdir(exist_ok=True)
    saved = []
    try:
        target = page.locator(f'[data-d2lmp-box="{index}"]') if index is not None else None
        shot = ARTIFACTS / f"{notebook.stem}.png"
        if target is not None and target.count():
            target.first.screenshot(path=str(shot))
        else:
            page.screenshot(path=str(shot))
        saved.append(shot)
        html = ARTIFACTS / f"{notebook.stem}.html"
        html.write_text(page.content())
        saved.append(html)
    except Exception as secondary:  # the evidence must never hide the real failure
        saved.append(f"(could not save all evidence: {secondary})")
    if hasattr(error, "add_note"):
        error.add_note("kept: " + ", ".join(map(str, saved)))

