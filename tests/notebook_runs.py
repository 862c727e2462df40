"""How the notebooks run under pytest: once each, in a kernel where a torch deprecation warning is an error.

A pytest plugin, registered by tests/conftest.py, for ``pytest tests notebooks --nbval-lax`` (``make test``):

- Every Jupyter kernel the run starts (nbval's, and JupyterLab's for the browser tests) runs ``KERNEL_STARTUP``
  first, from an IPython profile made for the session (``IPYTHONDIR``): a warning that calls something of torch's
  deprecated, or a DeprecationWarning or FutureWarning raised in torch's own code, becomes an exception in the cell
  that caused it, so the notebook fails instead of teaching an API on its way out.
- Where Chromium is installed and the browser tests are selected, each notebook runs once, in the browser
  (tests/browser_lab.py); nbval's item for each code cell then checks that cell of the browser's saved copy with
  nbval's own rules (an error output fails it, ``# NBVAL_CHECK_OUTPUT`` cells must match the committed outputs)
  instead of running it in a second kernel. Without Chromium nbval runs every notebook itself, as before.
- With pytest-xdist (``-n 2 --dist loadgroup``) a notebook's cells and its browser test form one group, so they
  run in order on one worker, and the tests that start ranks form one group too, so that two multi-rank launches
  never compete for the same two cores. Each worker computes with its share of the cores (``OMP_NUM_THREADS``).
- The workers take the long work first: groups and tests marked ``slow`` go to the front of the queue, heaviest
  first, and the many short tests last, so that they fill the gaps and no long test runs alone at the end while the
  other worker idles (``weight``). pytest-xdist's own reordering (by test count only) is turned off for this.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from packaging.version import Version

LOADGROUP_BROKEN = ("pytest-xdist's --dist loadgroup does not group tests on this pytest "
                    "(pytest-dev/pytest-xdist#1386): a notebook's cells would run on different workers. Install "
                    "pytest<9.2 (pyproject.toml's test extra) or run in one process (WORKERS=0 make test).")

# Run at kernel start. filterwarnings matches ``message`` case-insensitively from the message's start, and
# ``module`` against the module the warning is attributed to.
KERNEL_STARTUP = '''\
"""d2lmp's test run: a torch deprecation warning fails the notebook cell that caused it."""
import warnings

warnings.filterwarnings("error", message=r"(?s)(?=.*deprecat)(?=.*torch)")
warnings.filterwarnings("error", category=DeprecationWarning, module=r"torch(\\.|$)")
warnings.filterwarnings("error", category=FutureWarning, module=r"torch(\\.|$)")
'''

# The kernels' (and IPython's) configuration: history in memory, never in the run's IPYTHONDIR.
KERNEL_CONFIG = 'c.HistoryManager.hist_file = ":memory:"\n'

# Test modules whose tests start ranks (d2lmp.parallel.launch, torchrun, spawned workers): one xdist group.
RANK_MODULES = frozenset({
    "test_agreement", "test_alexnet_towers", "test_bounded_checks", "test_cli", "test_collectives",
    "test_data_parallel", "test_elastic", "test_hybrid", "test_launch", "test_pipeline", "test_rendezvous",
    "test_tensor_parallel", "test_torchrun", "test_zero",
})

# A test marked slow weighs this many ordinary tests when the queue is ordered (a browser run of a notebook, a rank
# launch, mypy: tens of seconds where most tests take a fraction of one).
SLOW_WEIGHT = 10


def kernel_profile(folder: Path) -> Path:
    """Write an IPython directory whose default profile runs ``KERNEL_STARTUP`` and keeps its history in memory
    (the folder is removed at the end of the run, perhaps before a kernel has written its history); return it
    (for IPYTHONDIR)."""
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00_torch_deprecations.py").write_text(KERNEL_STARTUP, encoding="utf-8")
    (folder / "profile_default" / "ipython_config.py").write_text(KERNEL_CONFIG, encoding="utf-8")
    return folder


class NotebookRuns:
    """The plugin object; one per pytest process."""

    def __init__(self):
        self._ipython_dir: Path | None = None
        self._previous: str | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        if getattr(config.option, "dist", "no") == "loadgroup" and Version(pytest.__version__) >= Version("9.2"):
            raise pytest.UsageError(LOADGROUP_BROKEN)
        workers = getattr(config.option, "numprocesses", None)
        if hasattr(config.option, "loadscopereorder"):
            config.option.loadscopereorder = False  # the queue is ordered here, heaviest first (order_longest_first)
        if isinstance(workers, int) and workers > 1 and not hasattr(config, "workerinput"):
            # The workers (and the kernels they start) share the cores: each computes with its share. Two
            # processes of two OpenMP threads each on two cores spin against each other (CONTRIBUTING.md).
            from d2lmp.hardware import usable_cores

            os.environ.setdefault("OMP_NUM_THREADS", str(max(1, usable_cores() // workers)))
        self._ipython_dir = kernel_profile(Path(tempfile.mkdtemp(prefix="d2lmp-ipython-")))
        self._previous = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = str(self._ipython_dir)

    def pytest_unconfigure(self, config):
        if self._ipython_dir is not None:
            shutil.rmtree(self._ipython_dir, ignore_errors=True)
            if self._previous is None:
                os.environ.pop("IPYTHONDIR", None)
            else:
                os.environ["IPYTHONDIR"] = self._previous

    @pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns xdist_group marks into group names
    def pytest_collection_modifyitems(self, config, items):
        for item in items:
            if _is_nbval_cell(item):
                item.add_marker(pytest.mark.xdist_group(Path(item.path).stem))
            elif _module(item) == "test_browser":
                item.add_marker(pytest.mark.xdist_group(item.callspec.params["notebook"].stem))
            elif _module(item) in RANK_MODULES:
                item.add_marker(pytest.mark.xdist_group("ranks"))
        if hasattr(config, "workerinput"):  # a pytest-xdist worker: the collection it reports is the queue's order
            items[:] = order_longest_first(items)

    @pytest.hookimpl(trylast=True)  # after -m and -k have deselected: run in the browser only what is selected
    def pytest_collection_finish(self, session):
        from browser_lab import available

        items = session.items
        if getattr(session.config.option, "loadgroup", False) and any(
                "@" not in item.nodeid for item in items if any(item.iter_markers("xdist_group"))):
            raise pytest.UsageError(LOADGROUP_BROKEN)
        browsed = {item.callspec.params["notebook"].name for item in items
                   if _module(item) == "test_browser"} if available() else set()
        for item in items:
            if _is_nbval_cell(item) and Path(item.path).name in browsed:
                item.parent.setup = item.parent.setup_sanitize_files  # no kernel of its own
                item.runtest = _checker(item)

    def pytest_sessionfinish(self, session):
        from browser_lab import LAB

        LAB.close()


def _group(item) -> str:
    """The unit pytest-xdist schedules ``item`` in: its xdist_group, else the test alone."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return item.nodeid
    return mark.args[0] if mark.args else mark.kwargs.get("name", "default")


def weight(item) -> int:
    """How much ``item`` counts when the queue is ordered: ``SLOW_WEIGHT`` for a slow test, else 1."""
    return SLOW_WEIGHT if item.get_closest_marker("slow") is not None else 1


def order_longest_first(items: list) -> list:
    """``items`` with the heaviest groups first (the sum of their tests' weights); a group's tests, and groups of
    equal weight, keep their order."""
    groups = {id(item): _group(item) for item in items}
    totals: dict[str, int] = {}
    for item in items:
        totals[groups[id(item)]] = totals.get(groups[id(item)], 0) + weight(item)
    return sorted(items, key=lambda item: -totals[groups[id(item)]])


def _module(item) -> str | None:
    """The name of the test module an item comes from (None for nbval's cells)."""
    module = getattr(item, "module", None)
    return module.__name__ if module is not None else None


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and type(item).__module__ == "nbval.plugin"


def _checker(item):
    def runtest():
        from browser_lab import LAB

        check_cell_against_run(item, LAB.run(Path(item.path)))

    return runtest


def check_cell_against_run(item, run) -> None:
    """nbval's verdict on ``item``'s cell, from the browser run's saved copy instead of a kernel of its own.

    The same rules as ``nbval.plugin.IPyNbCell.runtest``: ``# NBVAL_SKIP`` skips, an error output fails unless the
    cell is marked ``# NBVAL_RAISES_EXCEPTION``, and a checked cell's outputs are compared with the committed ones
    by nbval's own ``compare_outputs`` (the same sanitising, and images and widget ids left out).
    """
    from nbval.plugin import coalesce_streams

    if item.options["skip"]:
        pytest.skip()
    cell = run.code_cell(item.cell_num)
    if cell is None or cell.get("execution_count") is None:
        why = run.problem or ("an earlier cell failed: " + "; ".join(run.errors) if run.errors else "it was not run")
        item.raise_cell_error(f"Cell did not run in the browser ({why})")
    outputs = coalesce_streams(copy.deepcopy(list(cell.outputs)))
    errors = [o for o in outputs if o.output_type == "error"]
    if errors and not item.options["check_exception"]:
        item.raise_cell_error("Cell execution caused an exception", "\n" + "\n".join(errors[0].traceback))
    unrun = item.cell.execution_count is None
    if unrun and item.cell.outputs:
        item.raise_cell_error("Unrun reference cell has outputs")
    if item.options["check"] and not unrun and not item.compare_outputs(outputs, coalesce_streams(item.cell.outputs)):
        item.raise_cell_error("Cell outputs differ", "\n".join(item.comparison_traceback))
