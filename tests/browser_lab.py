"""Every notebook in a real browser: JupyterLab served here, driven in headless Chromium, each notebook run once.

``LAB.run(path)`` opens the notebook in JupyterLab, clears its stored outputs, runs every cell in a fresh kernel,
saves the executed copy, then moves one widget control and watches its output change; what happened is kept as a
``BrowserRun`` (one per notebook and test process). tests/test_browser.py asserts on it, and in the same pytest run
nbval's cells of that notebook are checked against the saved copy (tests/notebook_runs.py) instead of being run a
second time. The server and Chromium start on first use and stop at the end of the session (``LAB.close()``); so does
the one JupyterLab page: each notebook opens in it once the previous one's tab is closed and its kernel ended
(booting JupyterLab in a fresh page cost about 6 CPU-seconds a notebook), and a page a failed run leaves behind is
closed, so the next notebook boots a fresh one.
Each kernel is forked from a process that has imported ipykernel, torch and matplotlib once (tests/kernel_zygote.py):
a fresh namespace that runs every cell, without each kernel's seconds of imports.
Chromium comes from Debian's package (/usr/bin/chromium); Playwright's own browser download is never used.
Screenshots of failures go to test-artifacts/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import kernel_zygote
import nbformat
from serving import fetch_when_up, free_port, stop_group

from tools.notebooks import NOTEBOOK_DIR, ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
RUN_TIMEOUT_S = 300
POLL_S = 0.25


_PLAYWRIGHT = None


def shared_playwright():
    """This process's one Playwright (the sync API allows one per thread: a second refuses to start while the
    first runs), started on first use and stopped when the process exits; every browser of the tests launches
    from it."""
    global _PLAYWRIGHT
    if _PLAYWRIGHT is None:
        import atexit

        from playwright.sync_api import sync_playwright

        _PLAYWRIGHT = sync_playwright().start()
        atexit.register(_PLAYWRIGHT.stop)
    return _PLAYWRIGHT


def available() -> bool:
    """True when Debian's Chromium is installed (the browser tests run, and run the notebooks)."""
    return Path(CHROMIUM).exists()


# Polled every POLL_S while the cells run: errors are read from the output models' types, so that no output (a
# plot is a long base64 string) is serialised on each poll.
STATE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const session = panel.sessionContext.session;
  const errors = [];
  for (const cell of cells) {
    const outputs = cell.model.outputs;
    for (let i = 0; i < outputs.length; i++) {
      const output = outputs.get(i);
      if (output.type === 'error') {
        const json = output.toJSON();
        errors.push(json.ename + ': ' + json.evalue);
      }
    }
  }
  return {
    kernel: session && session.kernel ? session.kernel.status : 'none',
    pending: cells.filter(c => c.model.executionCount === null || c.promptNode.textContent.includes('*')).length,
    errors: errors,
  };
}"""

READY_JS = """(name) => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return w && w.context && w.context.path === name && w.sessionContext && w.sessionContext.isReady
           && w.sessionContext.session && w.sessionContext.session.kernel
           && w.sessionContext.session.kernel.status === 'idle';
}"""

# Open a notebook in the running JupyterLab (the previous one's tab is closed by then).
OPEN_JS = """(name) => { window.jupyterapp.commands.execute('docmanager:open', {path: name}); }"""

# Close every notebook tab without asking (a tab whose widgets moved may count as changed: it was saved before).
CLOSE_ALL_JS = """() => {
  for (const w of [...window.jupyterapp.shell.widgets('main')]) w.dispose();
}"""

SAVE_JS = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.save();
  return !panel.context.model.dirty;
}"""

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


@dataclass
class BrowserRun:
    """What one notebook did in the browser. Fields after a failed step keep their defaults."""

    name: str
    ran_all: bool = False  # every cell ran (or run-all stopped at an error cell)
    errors: list[str] = field(default_factory=list)  # error outputs after run-all ("Name: value")
    executed: nbformat.NotebookNode | None = None  # the saved notebook, outputs as the browser showed them
    widgets: int = 0  # rendered .jupyter-widgets elements
    widget_display_errors: int = 0  # "Error displaying widget" texts on the page
    moved: int | None = None  # index of the widget box whose control was moved
    changed: bool = False  # its output changed after the move
    settled: bool = False  # and then stopped changing
    errors_after_move: list[str] = field(default_factory=list)
    problem: str | None = None  # a step that could not complete (timeout, no widget found, ...)
    evidence: list[str] = field(default_factory=list)  # screenshot and page saved for a failure

    @property
    def passed(self) -> bool:
        return (self.problem is None and self.ran_all and not self.errors and self.widgets > 0
                and not self.widget_display_errors and self.moved is not None and self.changed and self.settled
                and not self.errors_after_move)

    def code_cell(self, number: int) -> nbformat.NotebookNode | None:
        """The ``number``-th code cell (from 0) of the executed copy, or None if it was not saved."""
        if self.executed is None:
            return None
        code = [c for c in self.executed.cells if c.cell_type == "code"]
        return code[number] if number < len(code) else None


class BrowserLab:
    """A JupyterLab server over a copy of notebooks/ and a headless Chromium, started on first use."""

    def __init__(self):
        self._server = self._browser = self._lab_page = self._zygote = None
        self._env: dict[str, str] = {}
        self._root: Path | None = None
        self.url = ""
        self.runs: dict[str, BrowserRun] = {}

    def run(self, path: Path) -> BrowserRun:
        """The notebook's ``BrowserRun``, running it now if this process has not yet."""
        name = Path(path).name
        if name not in self.runs:
            self._start()
            self.runs[name] = self._run(name)
        return self.runs[name]

    def close(self) -> None:
        """Stop the browser and the server (a no-op if they never started)."""
        if self._browser is not None:
            self._browser.close()
            self._browser = self._lab_page = None
        if self._server is not None:
            stop_group(self._server)
            self._server = None
        if self._zygote is not None:
            stop_group(self._zygote)
            self._zygote = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    # --- the server and the browser

    def _start(self) -> None:
        if self._browser is not None:
            return
        self._root = Path(tempfile.mkdtemp(prefix="d2lmp-lab-"))
        work = self._root / "notebooks"
        shutil.copytree(NOTEBOOK_DIR, work)
        for copy in work.glob("*.ipynb"):  # the runs clear the outputs anyway; the page need not draw them first
            notebook = nbformat.read(copy, as_version=4)
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            nbformat.write(notebook, copy)
        settings = self._root / "settings" / "@jupyterlab"
        (settings / "notebook-extension").mkdir(parents=True)
        (settings / "apputils-extension").mkdir(parents=True)
        # Every cell in the page, so the page holds all outputs, with JupyterLab's default "contentVisibility" (the
        # browser skips drawing cells out of view), as readers see it; no news pop-up.
        (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "contentVisibility"}))
        (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ, D2LMP_QUICK="1", JUPYTERLAB_SETTINGS_DIR=str(self._root / "settings"))
        env.update(kernel_zygote.kernel_spec_env(self._root))
        self._env = env
        try:
            self._zygote = kernel_zygote.start(env)
            self._start_server(env, work)
            self._browser = shared_playwright().chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
        except BaseException:
            self.close()
            raise

    def _start_server(self, env: dict, work: Path, attempts: int = 3) -> None:
        """JupyterLab on a free port. Another process (a rank's store, say) can take the port between our choosing it
        and the server binding it: the server is told not to move to another port (it would answer where we do not
        look, and the other process where we do) but to exit, and is started again on a new port."""
        for attempt in range(attempts):
            port = free_port()
            self._server = subprocess.Popen(
                [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                 "--ServerApp.port_retries=0", "--ServerApp.token=", "--ServerApp.password=",
                 "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
                 f"--ServerApp.root_dir={work}"] + (["--allow-root"] if os.geteuid() == 0 else []),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self.url = f"http://127.0.0.1:{port}"
            try:
                fetch_when_up(f"{self.url}/api/status", 90, self._server)
                return
            except AssertionError:  # it exited before answering: the port was taken
                stop_group(self._server)
                self._server = None
                if attempt == attempts - 1:
                    raise

    # --- one notebook

    def _page(self, name: str):
        """The lab's one page with ``name`` opened in it: JupyterLab boots once per session (its scripts cost about
        as much CPU as a light notebook's cells), then each notebook opens in the same page after the last one's
        tab is closed and its kernel shut down."""
        if self._lab_page is None or self._lab_page.is_closed():
            self._lab_page = self._browser.new_page(viewport={"width": 1400, "height": 1000})
            self._lab_page.goto(f"{self.url}/lab/workspaces/d2lmp-tests/tree/{name}?reset",
                                wait_until="domcontentloaded", timeout=120_000)
        else:
            self._lab_page.evaluate(OPEN_JS, name)
        return self._lab_page

    def _run(self, name: str) -> BrowserRun:
        run, page = BrowserRun(name), None
        try:
            page = self._page(name)
            state = _run_all(page, name)
            run.ran_all, run.errors = True, state["errors"]
            if not page.evaluate(SAVE_JS):
                raise RuntimeError("JupyterLab did not save the executed notebook")
            run.executed = nbformat.read(self._root / "notebooks" / name, as_version=4)
            if run.errors:
                return run
            page.wait_for_selector(".jupyter-widgets", timeout=30_000)
            run.widgets = page.locator(".jupyter-widgets").count()
            run.widget_display_errors = page.locator("text=Error displaying widget").count()
            run.moved, before = _move_first_control(page)
            if run.moved is None:
                return run
            page.wait_for_function(f"""([i, before]) => {{
                const now = ({SNAPSHOT_JS})(i);
                return now !== null && now !== before && now.length > 0;
            }}""", arg=[run.moved, before], timeout=120_000)
            run.changed = True
            run.settled = _settled_snapshot(page, run.moved, seconds=120) is not None
            run.errors_after_move = page.evaluate(BOX_ERRORS_JS, run.moved) + page.evaluate(STATE_JS)["errors"]
            run.widget_display_errors += page.locator("text=Error displaying widget").count()
        except Exception as error:  # a step that could not finish: the test reports it
            run.problem = f"{type(error).__name__}: {error}"
            zygote = kernel_zygote.died(self._zygote, self._env) if self._zygote is not None else None
            if zygote:  # no kernel could start: say why, not only that the cells never ran
                run.problem += f" ({zygote})"
        finally:
            if page is not None:
                if not run.passed:
                    run.evidence = _keep_evidence(page, name, run.moved)
                self._close_notebook(page, keep_page=run.passed)
        return run

    def _close_notebook(self, page, keep_page: bool) -> None:
        """Close every tab and end every session (and its kernel). After a failure (or where the tabs will not close)
        the page is closed too, so that whatever state it was left in cannot touch the next notebook."""
        try:
            if keep_page:
                page.evaluate(CLOSE_ALL_JS)
        except Exception:
            keep_page = False
        if not keep_page:
            page.close()
        with urllib.request.urlopen(f"{self.url}/api/sessions", timeout=10) as response:
            sessions = json.loads(response.read())
        for session in sessions:  # in the background: the next notebook need not wait for a kernel to exit
            request = urllib.request.Request(f"{self.url}/api/sessions/{session['id']}", method="DELETE")
            threading.Thread(target=_send, args=(request,), daemon=True).start()


def _send(request: urllib.request.Request) -> None:
    try:
        urllib.request.urlopen(request, timeout=60).close()
    except OSError:
        pass  # the server is stopping: it ends the kernel itself


def _run_all(page, name: str) -> dict:
    """Clear the stored outputs, run every cell in the live kernel, wait until all have run."""
    page.wait_for_function(READY_JS, arg=name, timeout=120_000)
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
        time.sleep(POLL_S)
    raise TimeoutError(f"{name}: cells still running after {RUN_TIMEOUT_S} s: {page.evaluate(STATE_JS)}")


def _settled_snapshot(page, i: int, seconds: float = 30, steady: float = 0.5):
    """The widget's output once it is non-empty and unchanged for ``steady`` seconds (None if it never settles)."""
    deadline = time.monotonic() + seconds
    previous, since = page.evaluate(SNAPSHOT_JS, i), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        now = page.evaluate(SNAPSHOT_JS, i)
        if now != previous or not now:
            previous, since = now, time.monotonic()
        elif time.monotonic() - since >= steady:
            return now
    return None


def _move_first_control(page):
    """Change one dropdown or slider in a widget (pressing its buttons too); return (its index, output before)."""
    count = page.evaluate(LABEL_BOXES_JS)
    for i in range(count):
        box = page.locator(f'[data-d2lmp-box="{i}"]')
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


def _keep_evidence(page, name: str, index: int | None) -> list[str]:
    """Save a screenshot of the widget (or the window) and the page's HTML; return where they went."""
    ARTIFACTS.mkdir(exist_ok=True)
    stem, saved = Path(name).stem, []
    try:
        target = page.locator(f'[data-d2lmp-box="{index}"]') if index is not None else None
        shot = ARTIFACTS / f"{stem}.png"
        if target is not None and target.count():
            target.first.screenshot(path=str(shot))
        else:
            page.screenshot(path=str(shot))
        saved.append(str(shot))
        html = ARTIFACTS / f"{stem}.html"
        html.write_text(page.content())
        saved.append(str(html))
    except Exception as secondary:  # the evidence must never hide the real failure
        saved.append(f"(could not save all evidence: {secondary})")
    return saved


LAB = BrowserLab()
