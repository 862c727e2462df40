"""How notebooks run under pytest (tests/notebook_runs.py): torch deprecations fail a cell, and nbval's cells are
checked against one browser run with nbval's own rules."""

import warnings

import nbformat
import pytest
from browser_lab import BrowserRun
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from notebook_runs import KERNEL_STARTUP, SLOW_WEIGHT, check_cell_against_run, order_longest_first

TF32_WARNING = ("Please use the new API settings to control TF32 behavior, such as torch.backends.cudnn.conv."
                "fp32_precision = 'tf32'. Old settings, e.g, torch.backends.cuda.matmul.allow_tf32 = True, "
                "will be deprecated after Pytorch 2.9.")  # torch 2.9's words, as a UserWarning


@pytest.mark.parametrize("message, category, module", [
    ("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)`",
     FutureWarning, "__main__"),
    (TF32_WARNING, UserWarning, "__main__"),
    # A deprecation whose message does not name torch and is attributed to its caller is not caught (a known gap) ...
    ("TypedStorage is deprecated", UserWarning, "d2lmp.memory"),
    ("this argument will be removed", DeprecationWarning, "torch.nn.modules.module"),  # ... one raised in torch is
    ("numpy.trapz is deprecated", DeprecationWarning, "__main__"),
    ("torch ran slowly", UserWarning, "__main__"),
])
def test_kernel_startup_turns_torch_deprecations_into_errors(message, category, module):
    torch_deprecation = ("deprecat" in message.lower() and "torch" in message.lower()) or module.startswith("torch.")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        exec(KERNEL_STARTUP, {})
        if torch_deprecation:
            with pytest.raises(category):
                warnings.warn_explicit(message, category, "cell.py", 1, module=module)
        else:
            warnings.warn_explicit(message, category, "cell.py", 1, module=module)  # shown, not raised


def _notebook(*sources, outputs=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    for cell, outs in zip(nb.cells, outputs or []):
        cell.outputs, cell.execution_count = outs, 1
    return nb


@pytest.mark.slow
def test_a_notebook_kernel_of_the_test_run_fails_on_a_torch_deprecation():
    """The kernels this run starts load the startup file (IPYTHONDIR): the current API runs, the old one fails."""
    nb = _notebook("import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nprint('current API ran')",
                   "torch.cuda.amp.GradScaler(enabled=False)")
    with pytest.raises(CellExecutionError, match="FutureWarning"):
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"] == "current API ran\n"


def _stream(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


@pytest.fixture
def cells(pytester):
    """nbval's items for a two-cell notebook: a checked cell that printed "1", an unchecked one."""
    nb = _notebook("# NBVAL_CHECK_OUTPUT\nprint(1)", "print('anything')",
                   outputs=[[_stream("1\n")], [_stream("anything\n")]])
    nbformat.write(nb, pytester.path / "nb.ipynb")
    items, _ = pytester.inline_genitems("--nbval-lax", "-p", "no:cacheprovider")
    return items


def _run(*outputs, ran=True):
    return BrowserRun("nb.ipynb", ran_all=ran,
                      executed=_notebook("", "", outputs=list(outputs)) if ran else None)


def test_a_browser_run_with_the_committed_outputs_passes(cells):
    run = _run([_stream("1\n")], [_stream("something else\n")])  # unchecked cells may print anything
    for item in cells:
        check_cell_against_run(item, run)


def test_a_checked_cell_whose_browser_output_differs_fails(cells):
    from nbval.plugin import NbCellError

    with pytest.raises(NbCellError, match="Cell outputs differ"):
        check_cell_against_run(cells[0], _run([_stream("2\n")], [_stream("anything\n")]))


def test_an_error_output_fails_even_an_unchecked_cell(cells):
    from nbval.plugin import NbCellError

    error = nbformat.v4.new_output("error", ename="ValueError", evalue="bad", traceback=["ValueError: bad"])
    with pytest.raises(NbCellError, match="caused an exception"):
        check_cell_against_run(cells[1], _run([_stream("1\n")], [error]))


def test_a_cell_the_browser_never_ran_fails(cells):
    from nbval.plugin import NbCellError

    with pytest.raises(NbCellError, match="did not run in the browser"):
        check_cell_against_run(cells[0], _run(ran=False))


class _Item:
    """What order_longest_first reads of a pytest item: its node id and its marks."""

    def __init__(self, nodeid, group=None, slow=False):
        self.nodeid, self._marks = nodeid, {}
        if group:
            self._marks["xdist_group"] = pytest.mark.xdist_group(group).mark
        if slow:
            self._marks["slow"] = pytest.mark.slow.mark

    def get_closest_marker(self, name):
        return self._marks.get(name)

    def __repr__(self):
        return self.nodeid


def test_the_queue_takes_the_heaviest_groups_first_and_keeps_each_groups_order():
    quick = [_Item(f"t.py::quick{i}") for i in range(3)]
    notebook = [_Item("browser::nb", "nb", slow=True)] + [_Item(f"nb.ipynb::Cell {i}", "nb") for i in range(4)]
    ranks = [_Item(f"r.py::launch{i}", "ranks", slow=i == 0) for i in range(SLOW_WEIGHT + 6)]
    mypy = _Item("types.py::mypy", slow=True)
    items = [quick[0], notebook[0], quick[1], ranks[0], mypy, *ranks[1:], quick[2], *notebook[1:]]
    ordered = order_longest_first(items)
    assert sorted(map(id, ordered)) == sorted(map(id, items))  # nothing lost or doubled
    # ranks weigh 10 + 15, the notebook 10 + 4, mypy 10, each quick test 1
    assert ordered == [*ranks, *notebook, mypy, *quick]
