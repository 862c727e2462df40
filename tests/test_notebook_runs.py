"""How notebooks run under pytest (tests/notebook_runs.py): torch deprecations fail a cell, and nbval's cells are
checked against one browser run with nbval's own rules."""

import warnings

import nbformat
import pytest
from browser_lab import BrowserRun
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from notebook_runs import KERNEL_STARTUP, check_cell_against_run

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
