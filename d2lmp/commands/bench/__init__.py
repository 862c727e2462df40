"""Every ``d2lmp bench <name>``: the registry of benchmark commands, one module of this package each.

A benchmark is a measurement module (``d2lmp.bench.<topic>``, or the library function it times) and a
command module here, named as its subcommand (``_`` written ``-`` on the command line), that defines
``HELP``, ``add_options(parser)`` (its options, each with help text and a default), ``check(args)`` (every option
and rank count against the benchmark's limits: a ``ValueError`` is bad input, reported before anything runs) and
``run(args) -> int`` (check, measure, print the table and the goal lines). Adding a benchmark is those two
modules and its line in ``BENCHMARKS``.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

from d2lmp.commands.options import OneLineParser

__all__ = ["BENCHMARKS", "command", "add_benchmarks"]

# One line per benchmark, in the order `d2lmp bench --help` lists them.
BENCHMARKS = (
    "matmul",
    "conv",
    "train",
    "allreduce",
    "dp",
    "pipeline",
    "costmodel",
    "zero",
    "hybrid",
    "recompute",
    "ring_attention",
    "all_to_all",
    "scale",
    "scale_bridge",
    "faults",
)


def command(name: str) -> ModuleType:
    """The command module of ``d2lmp bench <name>`` (``ring-attention`` or ``ring_attention``)."""
    name = name.replace("-", "_")
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)}")
    return importlib.import_module(f"{__name__}.{name}")


def add_benchmarks(subparsers: argparse._SubParsersAction[OneLineParser]) -> None:
    """Add one subcommand per benchmark, with its options, to ``d2lmp bench``'s subparsers."""
    for name in BENCHMARKS:
        module = command(name)
        parser = subparsers.add_parser(name.replace("_", "-"), help=module.HELP)
        module.add_options(parser)
        parser.set_defaults(func=module.run, check=module.check)
