"""``d2lmp bench matmul``: matrix-product speed against the peak, and our timer against torch's.

It measures GFLOP/s of square matrix products per size, dtype and device, the ratio to peak, and our timing harness
against ``torch.utils.benchmark`` (the measurement: ``timing.matmul_sweep`` and ``timing.harness_agreement``)."""

from __future__ import annotations

import argparse

import torch

from d2lmp import hardware, timing
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, words
from d2lmp.report import table

__all__ = ["HELP", "HARNESS_GOAL", "add_options", "check", "run"]

HELP = "matmul GFLOP/s, ratio to peak, harness vs torch.utils.benchmark"
HARNESS_GOAL = (0.95, 1.05)  # our harness's median / torch.utils.benchmark's, same product, same run


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=ints, default=[256, 512, 1024, 2048], help="comma-separated sizes")
    parser.add_argument("--dtypes", type=words, default=["float32"], help="comma-separated dtypes")
    parser.add_argument("--devices", type=words, default=None,
                        help="comma-separated devices (default: cpu and cuda:0)")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds of timing per measurement")
    parser.add_argument("--agree-size", type=int, default=1024, help="matrix size for the harness check")
    parser.add_argument("--agree-time", type=float, default=1.5, help="seconds per harness in the check")


def check(args: argparse.Namespace) -> None:
    need_positive("--sizes", args.sizes)
    need_positive("--agree-size", args.agree_size)
    need_positive("--min-time", args.min_time)
    need_positive("--agree-time", args.agree_time)
    for dtype in args.dtypes:
        timing.resolve_dtype(dtype)  # an unknown dtype or a device not present here is a ValueError now, not later
    for device in args.devices or []:
        timing.resolve_device(device)


def run(args: argparse.Namespace) -> int:
    check(args)
    devices = args.devices or [d for d in hardware.torch_devices() if d in ("cpu", "cuda:0")]
    rows = timing.matmul_sweep(args.sizes, args.dtypes, devices, min_time=args.min_time, progress=True)
    print(f"Matrix multiplication, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(table([[r.device, r.dtype, r.size, f"{r.median_s * 1e3:.3f}", f"{r.spread:.1%}",
                  f"{r.gflops:,.1f}", "n/a" if r.peak_gflops is None else f"{r.peak_gflops:,.0f}",
                  "n/a" if r.fraction_of_peak is None else f"{r.fraction_of_peak:.2f}"] for r in rows],
                ["device", "dtype", "n", "median ms", "IQR", "GFLOP/s", "peak GFLOP/s", "ratio to peak"]))
    print()
    for dev in devices:
        _, source = hardware.peak_gflops(dev, "float32")
        print(f"peak for {dev}: {source}")
    print()
    for dev in devices:
        a = timing.harness_agreement(args.agree_size, "float32", dev, min_time=args.agree_time)
        print(f"harness check on {dev}, n={a.n} float32: ours {a.ours_s * 1e3:.3f} ms, "
              f"torch.utils.benchmark {a.torch_s * 1e3:.3f} ms")
        goal = Goal(f"our harness / torch.utils.benchmark on {dev}", "within", HARNESS_GOAL)
        print(goal.line(a.ratio, shown=f"{a.ratio:.3f}"))
    return 0
