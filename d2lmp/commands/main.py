"""The ``d2lmp`` command: ``d2lmp info``, ``d2lmp selfcheck``, ``d2lmp bench <name>`` and ``d2lmp plan``; the parser
and dispatch.

Each benchmark's options, checks, run and report live in its own module of ``commands.bench``, the planner's in
``commands.plan``. A command runs in two phases. First its ``check(args)`` (a benchmark's, the planner's): a
``ValueError`` there is bad input, printed as one line, ``d2lmp: <message>``, with exit status 2, before any
work. Then the run: a ``UsageError`` (bad input only the run can find, such as a plan that nothing fits) is also
one line and status 2; any other exception is a failure, one line ``d2lmp: <command> failed: <error>`` and status
1, with its traceback under ``--debug``. A malformed command line is one line and status 2 (``OneLineParser``).
"""

from __future__ import annotations

import argparse
import sys
import traceback

from d2lmp.commands import bench, plan
from d2lmp.commands.options import OneLineParser, UsageError

__all__ = ["DEBUG_HELP", "build_parser", "main"]

DEBUG_HELP = "on a failure during a run, print its traceback too"


def cmd_info(args: argparse.Namespace) -> int:
    from d2lmp.report import info_text

    print(info_text())
    return 0


def cmd_selfcheck(args: argparse.Namespace) -> int:
    from d2lmp.checks import run_selfcheck

    report = run_selfcheck(args.output, quick=args.quick)
    failed = [c["name"] for c in report["checks"] if c["status"] == "fail"]
    return 1 if failed else 0


def _nothing_to_check(args: argparse.Namespace) -> None:
    """The check of a command without options to check."""


def _add_debug(parser: argparse.ArgumentParser) -> None:
    """``--debug`` after the command too (``d2lmp bench allreduce --debug``), not only before it."""
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)


def build_parser(only_plan: bool = False) -> argparse.ArgumentParser:
    """The whole command line, or (``only_plan``) ``d2lmp plan`` alone: plain arithmetic, it need not import every
    benchmark (and torch) to parse its options."""
    parser = OneLineParser(prog="d2lmp", description="Helpers for the d2lmp notebook series.",
                           epilog="Bad input is one line and exit status 2, before any work; a failure during a "
                                  "run is one line and exit status 1 (--debug adds its traceback).")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.set_defaults(check=_nothing_to_check)
    sub = parser.add_subparsers(dest="command", required=True)
    if only_plan:
        _add_debug(plan.add_parser(sub))
        return parser

    p = sub.add_parser("info", help="describe the CPU, GPUs and torch devices here")
    p.set_defaults(func=cmd_info)
    _add_debug(p)

    p = sub.add_parser("bench", help="benchmarks that print ratios against a reference")
    benchmarks = p.add_subparsers(dest="benchmark", required=True)
    bench.add_benchmarks(benchmarks)
    for benchmark in benchmarks.choices.values():
        _add_debug(benchmark)

    p = sub.add_parser("selfcheck", help="run every GPU code path (skips with a message without a GPU)")
    p.add_argument("--output", "-o", default="selfcheck.json", help="where to write the JSON report")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.set_defaults(func=cmd_selfcheck)
    _add_debug(p)

    _add_debug(plan.add_parser(sub))
    return parser


def _name(args: argparse.Namespace) -> str:
    """The command as typed: ``bench allreduce``, ``plan``."""
    return " ".join(str(getattr(args, key)) for key in ("command", "benchmark") if getattr(args, key, None))


def main(argv: list[str] | None = None) -> int:
    """Run ``d2lmp`` with ``argv``; return the exit status (0 done, 1 a failure during the run, 2 bad input)."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(only_plan=argv[:1] == ["plan"]).parse_args(argv)
    try:
        args.check(args)  # bad input, found before any work
    except ValueError as exc:
        return _usage(exc)
    try:
        return int(args.func(args))
    except UsageError as exc:  # bad input that only the run could find
        return _usage(exc)
    except Exception as exc:  # noqa: BLE001 -- every failure of a run gets its one line and exit status 1
        return _failed(args, exc)


def _usage(exc: ValueError) -> int:
    """Bad input: one line, exit status 2."""
    print(f"d2lmp: {' '.join(str(exc).split())}", file=sys.stderr)
    return 2


def _failed(args: argparse.Namespace, exc: Exception) -> int:
    """A failure during the run: its traceback under ``--debug``, then one line naming the command and the error (the
    first line of its message); exit status 1."""
    if args.debug:
        traceback.print_exception(exc)
    lines = str(exc).strip().splitlines() or [""]
    more = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
    hint = "" if args.debug else "; rerun with --debug for the traceback"
    print(f"d2lmp: {_name(args)} failed: {type(exc).__name__}: {lines[0]}{more}{hint}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
