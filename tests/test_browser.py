"""Every notebook in a real browser: JupyterLab served here, driven in headless Chromium.

For each notebook (tests/browser_lab.py runs it): every cell ran, no error output, no "Error displaying widget",
at least one widget rendered; then one widget control moved, its output changed and settled without an error.
The same run's saved copy is what nbval checks the notebook's cells against (tests/notebook_runs.py), so each
notebook runs once. Without Chromium these tests are skipped with a message and nbval runs every notebook itself.
"""

import pytest
from browser_lab import LAB, available

from tools.notebooks import paths

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(
    not available(), reason="Chromium is not installed (Debian: apt-get install chromium); browser tests skipped")]


@pytest.mark.parametrize("notebook", paths(), ids=lambda p: p.name)
def test_notebook_runs_and_its_widgets_respond(notebook):
    run = LAB.run(notebook)
    kept = f" (kept: {', '.join(run.evidence)})" if run.evidence else ""
    assert run.problem is None, f"{run.problem}{kept}"
    assert run.ran_all and run.errors == [], f"error outputs: {run.errors}{kept}"
    assert run.widgets > 0, f"no widget rendered{kept}"
    assert run.widget_display_errors == 0, f"'Error displaying widget' on the page{kept}"
    assert run.moved is not None, f"no slider or dropdown with an output area found to move{kept}"
    assert run.changed and run.settled, f"the widget's output did not change and settle after its control moved{kept}"
    assert run.errors_after_move == [], f"errors after the control moved: {run.errors_after_move}{kept}"
