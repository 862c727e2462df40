"""Command line: `d2lmp info`, `d2lmp bench matmul`, `d2lmp selfcheck`."""

from __future__ import annotations

import argparse
import sys


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")


def _words(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def cmd_info(args) -> int:
    from .report import info_text

    print(info_text())
    return 0


def cmd_bench_matmul(args) -> int:
    import torch

    from .hardware import peak_gflops, torch_devices
    from .report import table
    from .timing import harness_agreement, matmul_sweep

    devices = args.devices or [d for d in torch_devices() if d in ("cpu", "cuda:0")]
    rows = matmul_sweep(args.sizes, args.dtypes, devices, min_time=args.min_time, progress=True)
    print(f"Matrix multiplication, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(table([[r["device"], r["dtype"], r["size"], f"{r['median_s'] * 1e3:.3f}", f"{r['spread']:.1%}",
                  f"{r['gflops']:,.1f}", "n/a" if r["peak_gflops"] is None else f"{r['peak_gflops']:,.0f}",
                  "n/a" if r["fraction_of_peak"] is None else f"{r['fraction_of_peak']:.2f}"] for r in rows],
                ["device", "dtype", "n", "median ms", "IQR", "GFLOP/s", "peak GFLOP/s", "ratio to peak"]))
    print()
    for dev in devices:
        _, source = peak_gflops(dev, "float32")
        print(f"peak for {dev}: {source}")
    print()
    for dev in devices:
        a = harness_agreement(args.agree_size, "float32", dev, min_time=args.agree_time)
        print(f"harness check on {dev}, n={a['n']} float32: ours {a['ours_s'] * 1e3:.3f} ms, "
              f"torch.utils.benchmark {a['torch_s'] * 1e3:.3f} ms, ratio {a['ratio']:.3f} "
              f"({'within' if abs(a['ratio'] - 1) <= 0.05 else 'OUTSIDE'} the 5% goal)")
    return 0


def cmd_selfcheck(args) -> int:
    from .selfcheck import run_selfcheck

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
    p.set_defaults(func=cmd_bench_matmul)

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
