"""Execute notebooks in place at full size, cell by cell, for committing (what `make execute` runs).

Usage: python -m tools.execute [--timeout SECONDS] [NOTEBOOK ...]   (default: every notebook in notebooks/, in order)

Why not `jupyter nbconvert --execute`: on these 2-core machines, under load, its whole-notebook run now and
then waited forever for a reply the idle kernel had already sent; driving nbclient one cell at a time has
not hung forever, but its socket polls can miss a message's wake-up too (a widget cell then ended only when its
timeout did), so the client here waits in short slices (``_poll_in_slices``). Each cell may take up to 10 minutes
(``--timeout``); each cell's time is printed as it ends; execution counts run 1..n as the conventions test expects.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from queue import Empty

import nbformat
from nbclient import NotebookClient

from tools.notebooks import paths as notebook_paths


def _poll_in_slices(channel, slice_seconds: float = 0.5) -> None:
    """Make ``channel.get_msg`` wait in short slices instead of one long poll.

    Under load the asyncio poll on a kernel's socket sometimes misses the wake-up of a message that has
    arrived, and only finds it when its timeout ends (a widget cell then "took" the whole cell timeout,
    or a poll without timeout never woke). Each slice ends with a check that finds such a message.
    """
    whole = channel.get_msg

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_seconds if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await whole(timeout=min(slice_seconds, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


def execute(path: Path, cell_timeout: int = 600) -> float:
    """Run every code cell of ``path`` in a fresh kernel (working directory notebooks/) and save it; seconds taken."""
    nb = nbformat.read(path, as_version=4)
    start = time.time()
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    count = 0
    with client.setup_kernel():
        _poll_in_slices(client.kc.shell_channel)
        _poll_in_slices(client.kc.iopub_channel)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                count += 1
                started = time.time()
                client.execute_cell(cell, index, execution_count=count)
                print(f"  {path.name} cell {index} ({count}): {time.time() - started:.1f} s", flush=True)
        client.set_widgets_metadata()
    nbformat.write(nb, path)
    return time.time() - start


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Execute notebooks in place at full size, cell by cell.")
    parser.add_argument("--timeout", type=int, default=600, help="seconds one cell may take")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.timeout < 1:
        parser.error(f"--timeout must be at least 1 second, got {args.timeout}")
    paths = args.notebooks or notebook_paths()
    for path in paths:
        print(f"{path.name}: {execute(path, args.timeout):.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
