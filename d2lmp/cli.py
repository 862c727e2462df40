"""Command line: `d2lmp info`, `d2lmp bench ...` (see ``bench_commands``), `d2lmp selfcheck`.

This module builds the parser and dispatches; each benchmark command lives in ``d2lmp.bench_commands``.
"""

from __future__ import annotations

import argparse
import sys

from . import bench_commands as B

__all__ = ["build_parser", "main"]


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from err


def _words(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def cmd_info(args) -> int:
    from .report import info_text

    print(info_text())
    return 0


def cmd_selfcheck(args) -> int:
    from .checks import run_selfcheck

    report = run_selfcheck(args.output, quick=args.quick)
    failed = [c["name"] for c in report["checks"] if c["status"] == "fail"]
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="d2lmp", description="Helpers for the d2lmp notebook series.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="describe the CPU, GPUs and torch devices here")
    p.set_defaults(func=cmd_info)

    bench = sub.add_parser("bench", help="benchmarks that print ratios against a reference")
    bench_sub = bench.add_subparsers(dest="benchmark", required=True)
    p = bench_sub.add_parser("matmul", help="matmul GFLOP/s, ratio to peak, harness vs torch.utils.benchmark")
    p.add_argument("--sizes", type=_ints, default=[256, 512, 1024, 2048], help="comma-separated sizes")
    p.add_argument("--dtypes", type=_words, default=["float32"], help="comma-separated dtypes")
    p.add_argument("--devices", type=_words, default=None, help="comma-separated devices (default: cpu and cuda:0)")
    p.add_argument("--min-time", type=float, default=0.3, help="seconds of timing per measurement")
    p.add_argument("--agree-size", type=int, default=1024, help="matrix size for the harness check")
    p.add_argument("--agree-time", type=float, default=1.5, help="seconds per harness in the check")
    p.set_defaults(func=B.cmd_bench_matmul)

    p = bench_sub.add_parser("conv", help="im2col and c01b convolution vs F.conv2d on AlexNet's conv layers")
    p.add_argument("--batch", type=int, default=16, help="images per batch")
    p.add_argument("--devices", type=_words, default=None, help="comma-separated devices (default: cpu and cuda:0)")
    p.add_argument("--min-time", type=float, default=0.6, help="seconds of timing per implementation and layer")
    p.set_defaults(func=B.cmd_bench_conv)
    p = bench_sub.add_parser("train", help="train the small AlexNet on the offline digits; accuracy and time")
    p.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    p.add_argument("--device", default=None, help="device (default: cuda:0 if present, else cpu)")
    p.set_defaults(func=B.cmd_bench_train)

    p = bench_sub.add_parser("allreduce", help="our ring all-reduce vs torch.distributed's, busbw ratios")
    p.add_argument("--worlds", type=_ints, default=[2, 4], help="comma-separated rank counts")
    p.add_argument("--sizes", type=_ints, default=[2**10 * 4**k for k in range(9)], help="bytes, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds per size (median)")
    p.add_argument("--min-time", type=float, default=0.1, help="seconds per timed repeat")
    p.set_defaults(func=B.cmd_bench_allreduce)

    p = bench_sub.add_parser("dp", help="data-parallel step time of each version vs DistributedDataParallel")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=6, help="steps per round (the first two are warm-up)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bucket-mb", type=float, default=4.0)
    p.set_defaults(func=B.cmd_bench_dp)

    p = bench_sub.add_parser("pipeline", help="balanced vs equal partitions; measured vs theoretical bubble")
    p.add_argument("--worlds", type=_ints, default=[2, 4])
    p.add_argument("--micro-batches", type=_ints, default=[1, 2, 4, 8])
    p.add_argument("--batch", type=int, default=128, help="examples per step (micro-batches of batch/m)")
    p.add_argument("--steps", type=int, default=4, help="steps per configuration; the first is a warm-up")
    p.set_defaults(func=B.cmd_bench_pipeline)

    p = bench_sub.add_parser("costmodel", help="predicted vs measured step time of each strategy on CPU ranks")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=6)
    p.set_defaults(func=B.cmd_bench_costmodel)

    p = bench_sub.add_parser("zero", help="ZeRO stages 0-3 vs FSDP2: memory per rank and step time")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--sizes", type=_ints, default=None,
                   help="MLP layer widths, comma-separated (default: 1024,1536,1536,1536,10)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=5, help="steps per round (the first is a warm-up)")
    p.add_argument("--rounds", type=int, default=3)
    p.set_defaults(func=B.cmd_bench_zero)

    p = bench_sub.add_parser("hybrid", help="a 2 x 2 data x tensor grid: predicted vs measured step")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=6, help="steps per round (the first is a warm-up)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of calibration alternating with steps")
    p.set_defaults(func=B.cmd_bench_hybrid)

    p = sub.add_parser("selfcheck", help="run every GPU code path (skips with a message without a GPU)")
    p.add_argument("--output", "-o", default="selfcheck.json", help="where to write the JSON report")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.set_defaults(func=cmd_selfcheck)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"d2lmp: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
