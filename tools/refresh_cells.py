"""Re-run chosen cells of a notebook whose outputs follow from the code alone, keeping every other output.

Usage: python -m tools.refresh_cells NOTEBOOK CELL [CELL ...]   (cell indices from 0, as the tests print them)

A cell whose output is plain arithmetic on the library (the communication roofline, a table of presets, a figure of
a model) goes stale when that code changes, while the notebook's measurements stay right. Re-executing the whole
notebook would replace those measurements with a run on whatever machine is at hand; this tool instead runs, in a
fresh kernel at full size, the notebook's import lines and then the chosen cells in order, and stores their new
outputs (execution counts kept). A chosen cell that needs a variable an earlier non-import cell computes fails with
a NameError here, and nothing is written: such a cell needs ``make execute``. Choose only cells that measure
nothing; the tool cannot tell, the reviewer of the diff can.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.execute import _poll_in_slices
from tools.notebooks import read
from tools.refresh_listings import import_lines

__all__ = ["refresh_cells", "main"]


def refresh_cells(path: Path, indices: list[int], cell_timeout: int = 600) -> None:
    """Re-run the code cells ``indices`` of ``path`` after its import lines, and store their outputs."""
    nb = nbformat.read(path, as_version=4)
    for index in indices:
        if not 0 <= index < len(nb.cells) or nb.cells[index].cell_type != "code":
            raise ValueError(f"{path.name}: cell {index} is not a code cell")
    scratch = nbformat.v4.new_notebook(metadata=nb.metadata)
    scratch.cells = [nbformat.v4.new_code_cell(import_lines(read(path)))] + [
        nbformat.v4.new_code_cell(nb.cells[i].source) for i in indices]
    client = NotebookClient(scratch, timeout=cell_timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        _poll_in_slices(client.kc.shell_channel)
        _poll_in_slices(client.kc.iopub_channel)
        for position, cell in enumerate(scratch.cells):
            client.execute_cell(cell, position, execution_count=position + 1)
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            if errors:
                raise RuntimeError(f"{path.name}: cell {([-1] + indices)[position]} failed here "
                                   f"({errors[0].get('ename')}: {errors[0].get('evalue')}); nothing was written")
    for index, cell in zip(indices, scratch.cells[1:]):
        count = nb.cells[index].execution_count
        for output in cell.outputs:
            if "execution_count" in output:
                output["execution_count"] = count
        nb.cells[index].outputs = cell.outputs
    nbformat.write(nb, path)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Re-run chosen deterministic cells of a notebook in place.")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("cells", nargs="+", type=int, help="code cell indices, from 0")
    args = parser.parse_args(argv)
    refresh_cells(args.notebook, args.cells)
    print(f"{args.notebook.name}: cells {', '.join(map(str, args.cells))} refreshed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
