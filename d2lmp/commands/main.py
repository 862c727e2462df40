"""The ``d2lmp`` command: ``d2lmp info``, ``d2lmp selfcheck``, ``d2lmp bench <name>`` and ``d2lmp plan``; the parser
and dispatch.

Each benchmark's options, checks, run and report live in its own module of ``commands.bench``, the planner's in
``commands.plan``. A
``ValueError`` from any command (a bad option, found before anything runs) is printed as one line,
``d2lmp: <message>``, with exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from d2lmp.commands import bench, plan

__all__ = ["build_parser", "main"]


def cmd_info(args: argparse.Namespace) -> int:
    from d2lmp.report import info_text

    print(info_text())
    return 0


def cmd_selfcheck(args: argparse.Namespace) -> int:
    from d2lmp.checks import run_selfcheck

    report = run_selfcheck(args.output, quick=args.quick)
    failed = [c["name"] for c in report["checks"] if c["status"] == "fail"]
    return 1 if failed else 0


def build_parser(only_plan: bool = False) -> argparse.ArgumentParser:
    """The whole command line, or (``only_plan``) ``d2lmp plan`` alone: plain arithmetic, it need not import every
    benchmark (and torch) to parse its options."""
    parser = argparse.ArgumentParser(prog="d2lmp", description="Helpers for the d2lmp notebook series.")
    sub = parser.add_subparsers(dest="command", required=True)
    if only_plan:
        plan.add_parser(sub)
        return parser

    p = sub.add_parser("info", help="describe the CPU, GPUs and torch devices here")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("bench", help="benchmarks that print ratios against a reference")
    bench.add_benchmarks(p.add_subparsers(dest="benchmark", required=True))

    p = sub.add_parser("selfcheck", help="run every GPU code path (skips with a message without a GPU)")
    p.add_argument("--output", "-o", default="selfcheck.json", help="where to write the JSON report")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.set_defaults(func=cmd_selfcheck)

    plan.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(only_plan=argv[:1] == ["plan"]).parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as exc:
        print(f"d2lmp: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
