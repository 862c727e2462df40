"""``d2lmp bench conv``: our convolutions against ``F.conv2d`` on AlexNet's layers.

It times im2col and the c01b layout against ``F.conv2d`` on AlexNet's convolutions, im2col against its own lower
bound, and why on a CPU (the measurement: ``d2lmp.bench.conv``)."""

from __future__ import annotations

import argparse

import torch

from d2lmp import hardware
from d2lmp.bench import conv
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive, words
from d2lmp.conv import ALEXNET_2012_CONV
from d2lmp.report import table
from d2lmp.timing import resolve_device

__all__ = ["HELP", "IM2COL_GOAL", "add_options", "check", "run"]

HELP = "im2col and c01b convolution vs F.conv2d on AlexNet's conv layers"
IM2COL_GOAL = 1.2  # im2col's time over its own lower bound (building the columns + the product alone)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=16, help="images per batch")
    parser.add_argument("--devices", type=words, default=None,
                        help="comma-separated devices (default: cpu and cuda:0)")
    parser.add_argument("--min-time", type=float, default=0.6, help="seconds of timing per implementation and layer")
    parser.add_argument("--gemm-size", type=int, default=2048,
                        help="n of the n×n×n FP32 product that compares the CPU's two matrix libraries")


def check(args: argparse.Namespace) -> None:
    need_positive("--batch", args.batch)
    need_positive("--min-time", args.min_time)
    need_positive("--gemm-size", args.gemm_size)
    for device in args.devices or []:
        resolve_device(device)  # a device not present here is a ValueError before anything runs


def run(args: argparse.Namespace) -> int:
    check(args)
    devices = [resolve_device(d)
               for d in (args.devices or [d for d in hardware.torch_devices() if d in ("cpu", "cuda:0")])]
    print(f"Convolution on AlexNet's conv layers (2012 paper shapes), batch {args.batch}, forward only, "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print("ratio = time / F.conv2d time in the same run (lower is better). "
          "conv2d_loops is left out: it is a reference for tiny inputs only. 'copy only' times im2col's column "
          "building alone, 'GEMM only' its matrix product alone (on columns built beforehand).")
    for device in devices:
        rows = conv.benchmark_conv(ALEXNET_2012_CONV, batch=args.batch, device=device, min_time=args.min_time,
                                   progress=True)
        print()
        print(table([[r.layer, r.impl, f"{r.seconds * 1e3:.2f}", "—" if r.gflops is None else f"{r.gflops:,.1f}",
                      f"{r.ratio:.2f}"] for r in rows], ["layer", "implementation", "median ms", "GFLOP/s", "ratio"]))
        for impl in conv.IMPLEMENTATIONS:
            ratios = [r.ratio for r in rows if r.impl == impl]
            print(f"{device} {impl}: ratio to F.conv2d {min(ratios):.2f}–{max(ratios):.2f}")
        bound = conv.im2col_over_lower_bound(rows)
        worst = max(bound, key=lambda layer: bound[layer])
        goal = Goal(f"im2col / its own lower bound (copy only + GEMM only, same run), every layer on {device}",
                    "<=", IM2COL_GOAL, "×")
        print(goal.line(bound[worst], shown=f"worst {bound[worst]:.2f}× on {worst}"))
        if device == "cpu":
            _explain_cpu_gemm(rows, args.min_time, args.gemm_size)
    return 0


def _explain_cpu_gemm(rows: list[conv.ConvTiming], min_time: float, n: int) -> None:
    """Why im2col can or cannot reach F.conv2d on this CPU: the matrix product alone, and its library."""
    for part, what in (("GEMM only", "the matrix product"), ("copy only", "building the columns")):
        slowest = max((r for r in rows if r.impl == part), key=lambda r: r.ratio)
        print(f"{what} alone takes up to {slowest.ratio:.2f}× F.conv2d's time ({slowest.layer}): "
              "no im2col built from these parts can be faster than that.")
    libs = conv.compare_gemm_libraries(n, min_time=max(min_time, 0.2))
    print(f"the same {n}³ FP32 product through two libraries: "
          + "; ".join(f"{r.library} {r.gflops:,.0f} GFLOP/s ({r.ratio:.2f}×)" for r in libs)
          + ". F.conv2d runs on oneDNN; torch.matmul on the BLAS.")
