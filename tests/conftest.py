import os
import tempfile

import matplotlib
import pytest
import torch
from notebook_runs import NotebookRuns

# Every test draws off screen; set once here, before any test module imports pyplot.
matplotlib.use("Agg")
# The test command sets quick mode; set it here too so `pytest tests` alone behaves the same.
os.environ.setdefault("D2LMP_QUICK", "1")

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def pytest_configure(config):
    """How notebooks run in this test run: once each, torch deprecations as errors (tests/notebook_runs.py).

    The kernels' IPython history goes to a folder of this run's own: a shared one (two xdist workers, or a
    read-only home) made IPython print "attempt to write a readonly database" at each kernel's exit."""
    if "IPYTHONDIR" not in os.environ:
        os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="d2lmp-ipython-")
    config.pluginmanager.register(NotebookRuns(), "d2lmp-notebook-runs")
    config.pluginmanager.import_plugin("pytester")  # tests/test_notebook_runs.py collects nbval's items


@pytest.fixture
def displayed(monkeypatch):
    """What widget callbacks display (figures, mostly), collected here instead of in a notebook's output."""
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    return shown


@pytest.fixture(autouse=True)
def _close_figures():
    """Tests that draw leave no figures open for the next test."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
