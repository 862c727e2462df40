"""The `d2lmp bench ...` commands: check every option, run one benchmark, print its table and goal line.

Every numeric option is checked before anything is timed: a bad value must not surface as a traceback
after minutes of measuring. Each check raises ValueError, which ``cli.main`` prints as one line.
"""

from __future__ import annotations

import math

__all__ = ["check_matmul_args", "check_allreduce_args", "check_dp_args", "cmd_bench_matmul", "cmd_bench_conv",
           "cmd_bench_train", "cmd_bench_allreduce", "cmd_bench_dp", "cmd_bench_pipeline", "cmd_bench_costmodel",
           "cmd_bench_zero", "cmd_bench_hybrid"]


def _need_positive(option: str, value, minimum=None) -> None:
    """``value`` (a number or a list of them) must be finite and > 0, or >= ``minimum`` where given."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ValueError(f"{option} is empty; give at least one value")
    for v in values:
        if not math.isfinite(v) or (v < minimum if minimum is not None else v <= 0):
            need = f"at least {minimum}" if minimum is not None else "positive"
            raise ValueError(f"{option} must be {need}, got {v:g}")


def check_matmul_args(args) -> None:
    _need_positive("--sizes", args.sizes)
    _need_positive("--agree-size", args.agree_size)
    _need_positive("--min-time", args.min_time)
    _need_positive("--agree-time", args.agree_time)


def check_allreduce_args(args) -> None:
    _need_positive("--worlds", args.worlds)
    _need_positive("--sizes", args.sizes)
    _need_positive("--rounds", args.rounds)
    _need_positive("--min-time", args.min_time)
    for size in args.sizes:  # float32 elements, at least one per rank
        if size % 4 or size < 4 * max(args.worlds):
            raise ValueError(f"--sizes: {size} B is not a multiple of 4 B (float32) of at least 4 B per rank "
                             f"(>= {4 * max(args.worlds)} B for {max(args.worlds)} ranks)")


def check_dp_args(args) -> None:
    _need_positive("--world", args.world)
    _need_positive("--batch", args.batch, minimum=args.world)  # every rank needs an example
    _need_positive("--steps", args.steps, minimum=3)  # the first two steps are warm-up
    _need_positive("--rounds", args.rounds)
    _need_positive("--bucket-mb", args.bucket_mb)


def cmd_bench_matmul(args) -> int:
    import torch

    from .hardware import peak_gflops, torch_devices
    from .report import table
    from .timing import harness_agreement, matmul_sweep

    check_matmul_args(args)
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


def cmd_bench_conv(args) -> int:
    import torch

    from .bench.conv import IM2COL_GOAL, benchmark_conv, im2col_over_lower_bound
    from .conv import ALEXNET_2012_CONV
    from .hardware import torch_devices
    from .report import table
    from .timing import resolve_device

    _need_positive("--batch", args.batch)
    _need_positive("--min-time", args.min_time)
    devices = [resolve_device(d) for d in (args.devices or [d for d in torch_devices() if d in ("cpu", "cuda:0")])]
    print(f"Convolution on AlexNet's conv layers (2012 paper shapes), batch {args.batch}, forward only, "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print("ratio = time / F.conv2d time in the same run (lower is better). "
          "conv2d_loops is left out: it is a reference for tiny inputs only. 'copy only' times im2col's column "
          "building alone, 'GEMM only' its matrix product alone (on columns built beforehand).")
    for device in devices:
        rows = benchmark_conv(ALEXNET_2012_CONV, batch=args.batch, device=device, min_time=args.min_time, progress=True)
        print()
        print(table([[r["layer"], r["impl"], f"{r['seconds'] * 1e3:.2f}",
                      "—" if r["gflops"] is None else f"{r['gflops']:,.1f}", f"{r['ratio']:.2f}"]
                     for r in rows], ["layer", "implementation", "median ms", "GFLOP/s", "ratio"]))
        for impl in ("im2col", "c01b", "copy only", "GEMM only"):
            ratios = [r["ratio"] for r in rows if r["impl"] == impl]
            print(f"{device} {impl}: ratio to F.conv2d {min(ratios):.2f}–{max(ratios):.2f}")
        bound = im2col_over_lower_bound(rows)
        worst = max(bound, key=bound.get)
        print(f"goal: im2col within {IM2COL_GOAL}× of its own lower bound (copy only + GEMM only, same run) on every "
              f"layer, {device}: worst {bound[worst]:.2f} on {worst} "
              f"({'met' if bound[worst] <= IM2COL_GOAL else 'missed'})")
        if device == "cpu":
            _explain_cpu_gemm(rows, args.min_time)
    return 0


def _explain_cpu_gemm(rows, min_time: float) -> None:
    """Why im2col can or cannot reach F.conv2d on this CPU: the matrix product alone, and its library."""
    from .bench.conv import compare_gemm_libraries

    for part, what in (("GEMM only", "the matrix product"), ("copy only", "building the columns")):
        slowest = max((r for r in rows if r["impl"] == part), key=lambda r: r["ratio"])
        print(f"{what} alone takes up to {slowest['ratio']:.2f}× F.conv2d's time ({slowest['layer']}): "
              "no im2col built from these parts can be faster than that.")
    libs = compare_gemm_libraries(min_time=max(min_time, 0.2))
    print("the same 2048³ FP32 product through two libraries: "
          + "; ".join(f"{r['library']} {r['gflops']:,.0f} GFLOP/s ({r['ratio']:.2f}×)" for r in libs)
          + ". F.conv2d runs on oneDNN; torch.matmul on the BLAS.")


def cmd_bench_train(args) -> int:
    from .train import train_small_alexnet

    _need_positive("--epochs", args.epochs)
    model, history, data = train_small_alexnet(epochs=args.epochs, device=args.device, progress=True)
    ok = history.final_test_acc >= 0.9 and history.total_seconds <= 60
    print(f"small AlexNet (scaled down) on {data.name}, {history.device}: test accuracy "
          f"{history.final_test_acc:.1%} after {args.epochs} epochs in {history.total_seconds:.1f} s "
          f"({'meets' if ok else 'MISSES'} the goal of >= 90% within 60 s)")
    return 0


def cmd_bench_allreduce(args) -> int:
    from .bench.allreduce import allreduce_bench, allreduce_goal_lines, size_label
    from .report import table

    check_allreduce_args(args)
    rows = allreduce_bench(args.worlds, args.sizes, rounds=args.rounds, min_time=args.min_time)
    backends = {world: next(r["backend"] for r in rows if r["world"] == world) for world in args.worlds}
    # Name the backend that actually ran (gloo on CPU ranks, NCCL with a GPU per rank); if the world
    # sizes ran on different backends, a column says which.
    name = next(iter(backends.values())) if len(set(backends.values())) == 1 else "torch"
    print("All-reduce bus bandwidth (nccl-tests convention), our ring vs torch.distributed's own on "
          + ", ".join(f"{w} ranks: {b}" for w, b in backends.items()) + "; medians:")
    lines = []
    for world in args.worlds:
        for size in args.sizes:
            torch_row = next(r for r in rows
                             if r["world"] == world and r["impl"] == "torch" and r["size_bytes"] == size)
            ring_row = next(r for r in rows if r["world"] == world and r["impl"] == "ring" and r["size_bytes"] == size)
            ratio = ring_row["busbw_gbs"] / torch_row["busbw_gbs"]
            lines.append([world, backends[world], size_label(size), f"{torch_row['seconds'] * 1e3:.3f}",
                          f"{torch_row['busbw_gbs']:.3f}", f"{ring_row['seconds'] * 1e3:.3f}",
                          f"{ring_row['busbw_gbs']:.3f}", f"{ratio:.2f}"])
    print(table(lines, ["ranks", "backend", "size", f"{name} ms", f"{name} busbw GB/s", "ring ms", "ring busbw GB/s",
                        f"ring / {name}"]))
    goals = allreduce_goal_lines(rows)
    if goals:
        print("\n" + "\n".join(goals))
    return 0


def cmd_bench_dp(args) -> int:
    from .bench.data_parallel import dp_bench, dp_bench_spec
    from .parallel.launch import choose_backend
    from .report import table

    check_dp_args(args)
    spec = dp_bench_spec()
    params = sum(a * b + b for a, b in zip(spec.sizes[:-1], spec.sizes[1:]))
    print(f"Data-parallel step time on {args.world} ranks ({choose_backend(args.world)[1]}): MLP {spec.sizes} "
          f"({params / 1e6:.1f} M parameters), global batch {args.batch}, buckets of {args.bucket_mb} MiB; "
          "median of the slowest rank")
    times = dp_bench(args.world, args.batch, args.steps, args.rounds, int(args.bucket_mb * 2**20))
    ddp = times["ddp"]
    print(table([[v, f"{t * 1e3:.1f}", f"{t / ddp:.2f}"] for v, t in times.items()],
                ["version", "step ms", "ratio to DDP"]))
    print(f"\noverlap saves {1 - times['bucketed'] / times['bucketed-no-overlap']:.0%} of the no-overlap step; "
          f"goal: bucketed within 1.15x of DDP: {times['bucketed'] / ddp:.2f} "
          f"({'met' if times['bucketed'] / ddp <= 1.15 else 'NOT met'})")
    return 0


def cmd_bench_pipeline(args) -> int:
    from .bench.pipeline import pipeline_bench
    from .report import table

    _need_positive("--worlds", args.worlds)
    _need_positive("--micro-batches", args.micro_batches)
    _need_positive("--batch", args.batch)
    _need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    result = pipeline_bench(args.worlds, args.micro_batches, batch=args.batch, steps=args.steps)
    print("Pipeline (GPipe, 4 micro-batches) of a half-width AlexNet: equal-layer vs balanced partition")
    rows = result["partitions"]
    lines = []
    for world in args.worlds:
        equal = next(r for r in rows if r["world"] == world and r["partition"] == "equal layers")
        bal = next(r for r in rows if r["world"] == world and r["partition"] == "balanced")
        for r in (equal, bal):
            lines.append([world, r["partition"], r["sizes"], f"{r['step_s'] * 1e3:.1f}",
                          f"{r['step_s'] / equal['step_s']:.2f}"])
    print(table(lines, ["stages", "partition", "layers per stage", "step ms", "ratio to equal"]))
    print(f"\nBubble on 2 stages, GPipe, batch {args.batch}, each partition balanced at its micro-batch size: "
          "measured vs (p-1)/(m+p-1)")
    worst = max(abs(b["measured"] - b["theory"]) for b in result["bubbles"])
    print(table([[b["micro_batches"], b["sizes"], f"{b['theory']:.3f}", f"{b['measured']:.3f}",
                  f"{b['measured'] - b['theory']:+.3f}"] for b in result["bubbles"]],
                ["micro-batches", "layers per stage", "theory", "measured", "difference"]))
    print(f"\ngoal: measured within 0.1 of theory: worst difference {worst:.3f} "
          f"({'met' if worst <= 0.1 else 'NOT met'})")
    return 0


def cmd_bench_costmodel(args) -> int:
    from .bench.costmodel import costmodel_bench
    from .report import table

    _need_positive("--batch", args.batch, minimum=4)  # the pipeline runs 4 micro-batches
    _need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    rows = costmodel_bench(batch=args.batch, steps=args.steps)
    print("Cost model calibrated here (one-rank FLOP/s, fitted all-reduce α and β) vs measured steps on 2 CPU ranks")
    print(table([[r["strategy"], f"{r['compute_s'] * 1e3:.1f}", f"{r['comm_s'] * 1e3:.1f}",
                  f"{r['bubble_s'] * 1e3:.1f}", f"{r['predicted_s'] * 1e3:.1f}", f"{r['measured_s'] * 1e3:.1f}",
                  f"{r['ratio']:.2f}"] for r in rows],
                ["strategy", "compute ms", "comm ms", "bubble ms", "predicted ms", "measured ms",
                 "predicted / measured"]))
    ok = all(0.75 <= r["ratio"] <= 1.33 for r in rows)
    print(f"\ngoal: every prediction within 0.75-1.33x of the measurement: {'met' if ok else 'NOT met'}")
    return 0


def cmd_bench_zero(args) -> int:
    from .bench.zero import DEFAULT_SIZES, GOAL_RATIO, goal, zero_bench
    from .parallel.costmodel import zero_memory
    from .report import table
    from .training_state import STATE_PARTS

    args.sizes = list(DEFAULT_SIZES) if args.sizes is None else args.sizes
    _need_positive("--world", args.world, minimum=2)  # one rank shards nothing
    _need_positive("--sizes", args.sizes)
    if len(args.sizes) < 2:
        raise ValueError(f"--sizes needs at least an input and an output width, got {args.sizes}")
    _need_positive("--batch", args.batch, minimum=args.world)  # every rank needs an example
    _need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    _need_positive("--rounds", args.rounds)
    sizes = tuple(args.sizes)
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    print(f"ZeRO stages 0-3 (our ring collectives) vs PyTorch FSDP2 on {args.world} CPU ranks: MLP {sizes} "
          f"({params / 1e6:.1f} M parameters), float32 Adam, batch {args.batch}; memory kept per rank, "
          f"median step of the slowest rank ({args.rounds} rounds of {args.steps} steps, the first a warm-up)",
          flush=True)
    rows = zero_bench(args.world, sizes, args.batch, args.steps, args.rounds, progress=True)
    fsdp = next(r["step_s"] for r in rows if r["config"] == "FSDP2")
    mb = 1e6
    lines = []
    for r in rows:
        stage = 3 if r["config"] == "FSDP2" else int(r["config"][-1])
        formula = sum(zero_memory(params, args.world, stage, "adam").values())
        lines.append([r["config"], *(f"{r['held'][k] / mb:.2f}" for k in STATE_PARTS),
                      f"{sum(r['held'].values()) / mb:.2f}", f"{formula / mb:.2f}", f"{r['step_s'] * 1e3:.1f}",
                      f"{r['step_s'] / fsdp:.2f}"])
    print(table(lines, ["config", "params MB", "grads MB", "Adam MB", "total MB", "zero_memory MB", "step ms",
                        "ratio to FSDP2"]))
    ratio, met = goal(rows)
    print(f"\ngoal: stage 3 step within {GOAL_RATIO}x of FSDP2: {ratio:.2f} ({'met' if met else 'missed'})")
    return 0


def cmd_bench_hybrid(args) -> int:
    from .bench.hybrid import print_hybrid_bench
    _need_positive("--batch", args.batch, minimum=2)  # each of the 2 replicas needs an example
    _need_positive("--steps", args.steps, minimum=2)  # the first is a warm-up
    _need_positive("--rounds", args.rounds, minimum=1)
    return print_hybrid_bench(args.batch, args.steps, args.rounds)
