"""`d2lmp selfcheck`: run every GPU code path the package has and write a JSON report.

Each check is a function ``check(device, quick) -> dict`` returning at least
``status`` ("pass", "fail", "skip" or "info") and ``detail`` (one sentence), plus any
measured figures. Without a CUDA GPU the GPU checks are skipped with a message, never
faked. Later parts of the package add their checks to ``CHECKS``.
"""

from __future__ import annotations

import json
import math
import platform
import time
import traceback

import torch

from .config import pick, quick_mode_set


def _skip_without_gpu(device):
    if device is None:
        return {"status": "skip", "detail": "no CUDA GPU visible to torch; GPU path not exercised"}
    return None


def check_environment(device, quick):
    from .hardware import accelerator_sentence, cpu_info, nvml_gpus

    gpus, sentence = nvml_gpus()
    cpu = cpu_info()
    return {
        "status": "info",
        "detail": accelerator_sentence(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cpu": cpu.model,
        "cpu_peak_fp32_gflops": cpu.peak_gflops_fp32,
        "cpu_peak_formula": cpu.formula(),
        "nvml": sentence,
        "gpus": [g.__dict__ for g in gpus],
    }


def check_nvml_matches_torch(device, quick):
    from .hardware import gpu_count, nvml_gpus

    if (skip := _skip_without_gpu(device)):
        return skip
    gpus, sentence = nvml_gpus()
    ok = len(gpus) >= gpu_count() and len(gpus) > 0
    return {"status": "pass" if ok else "fail",
            "detail": f"torch sees {gpu_count()} GPU(s); {sentence}",
            "nvml_names": [g.name for g in gpus]}


def check_matmul_correctness(device, quick):
    """CUDA matmul in each dtype against a float64 CPU reference, with a per-dtype tolerance."""
    if (skip := _skip_without_gpu(device)):
        return skip
    n = 512
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g, dtype=torch.float64), torch.randn(n, n, generator=g, dtype=torch.float64)
    reference = a @ b
    tolerance = {"float32": 1e-3, "float16": 5e-2, "bfloat16": 2e-1}  # max error relative to max |value|
    errors = {}
    for name, dt in [("float32", torch.float32), ("float16", torch.float16), ("bfloat16", torch.bfloat16)]:
        out = (a.to(device, dt) @ b.to(device, dt)).double().cpu()
        errors[name] = float((out - reference).abs().max() / reference.abs().max())
    ok = all(errors[k] <= tolerance[k] for k in errors)
    return {"status": "pass" if ok else "fail",
            "detail": "GPU matmul agrees with a float64 CPU reference in every dtype" if ok
            else "GPU matmul error above tolerance", "relative_errors": errors, "tolerances": tolerance}


def check_timer_synchronises(device, quick):
    """An unsynchronised clock sees only the launch; ``Timer`` must see the work."""
    from .timing import Timer, matmul_flops

    if (skip := _skip_without_gpu(device)):
        return skip
    n = 8192
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a @ b
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    a @ b
    launch = time.perf_counter() - start  # no synchronisation: measures the launch only
    torch.cuda.synchronize(device)
    with Timer(device) as t:
        a @ b
    naive_tflops = matmul_flops(n) / launch / 1e12
    timed_tflops = matmul_flops(n) / t.seconds / 1e12
    ok = t.seconds > 5 * launch
    return {"status": "pass" if ok else "fail",
            "detail": f"unsynchronised clock: {launch * 1e3:.3f} ms (would claim {naive_tflops:,.0f} TFLOP/s); "
                      f"Timer: {t.seconds * 1e3:.3f} ms ({timed_tflops:,.1f} TFLOP/s)",
            "launch_s": launch, "timer_s": t.seconds}


def check_matmul_sweep(device, quick):
    """GPU matmul GFLOP/s in three dtypes with the ratio to the vendor peak; above-peak figures fail."""
    from .timing import matmul_sweep

    if (skip := _skip_without_gpu(device)):
        return skip
    sizes = pick([1024, 2048, 4096, 8192], [1024, 4096])
    rows = matmul_sweep(sizes, ["float32", "float16", "bfloat16"], [device], min_time=0.2)
    ratios = [r["fraction_of_peak"] for r in rows if r["fraction_of_peak"] is not None]
    ok = all(r <= 1.05 for r in ratios)
    best = max(rows, key=lambda r: r["gflops"])
    return {"status": "pass" if ok else "fail",
            "detail": f"best {best['gflops'] / 1e3:,.1f} TFLOP/s ({best['dtype']}, n={best['size']})"
                      + ("" if ratios else "; no vendor peak known for this GPU"),
            "rows": rows}


def check_harness_agreement(device, quick):
    """Our benchmark against torch.utils.benchmark on the GPU (goal: within 5 %)."""
    from .timing import harness_agreement

    if (skip := _skip_without_gpu(device)):
        return skip
    result = harness_agreement(4096, "float32", device, min_time=1.0)
    ok = abs(result["ratio"] - 1) <= 0.05
    return {"status": "pass" if ok else "fail",
            "detail": f"ours / torch.utils.benchmark = {result['ratio']:.3f} at n=4096 float32", **result}


def check_bandwidth(device, quick):
    """Device-memory copy bandwidth against the vendor figure (above spec would mean a broken timer)."""
    from .hardware import find_gpu_spec
    from .roofline import measure_bandwidth

    if (skip := _skip_without_gpu(device)):
        return skip
    gbs = measure_bandwidth(device, megabytes=pick(2048, 512))
    spec = find_gpu_spec(torch.cuda.get_device_name(device))
    ratio = gbs / spec.bandwidth_gbs if spec else None
    ok = ratio is None or ratio <= 1.0
    return {"status": "pass" if ok else "fail",
            "detail": f"copy bandwidth {gbs:,.0f} GB/s"
                      + (f" = {ratio:.0%} of {spec.name}'s {spec.bandwidth_gbs:,.0f} GB/s" if spec else ""),
            "bandwidth_gbs": gbs, "ratio_to_spec": ratio}


def check_roofline_points(device, quick):
    """The operation ladder of notebook 03, measured on the GPU."""
    from .roofline import measure_operations

    if (skip := _skip_without_gpu(device)):
        return skip
    points = measure_operations(device, vector_megabytes=256, matmul_sizes=(256, 1024, 4096, 8192))
    return {"status": "pass", "detail": "; ".join(f"{p.name}: {p.gflops:,.0f} GFLOP/s" for p in points),
            "points": [dict(name=p.name, intensity=p.intensity, gflops=p.gflops, gbs=p.gbs) for p in points]}


def check_graphics(device, quick):
    """The vertex transform of notebook 01 gives the same result on the GPU as on the CPU."""
    from .graphics import rotation_y, transform_batched

    if (skip := _skip_without_gpu(device)):
        return skip
    v = torch.randn(100_000, 4)
    m = rotation_y(0.7)
    ok = torch.allclose(transform_batched(v.to(device), m.to(device)).cpu(), transform_batched(v, m), atol=1e-5)
    return {"status": "pass" if ok else "fail",
            "detail": "batched vertex transform: GPU equals CPU" if ok else "GPU differs"}


def check_conv_cuda(device, quick):
    """im2col and c01b convolution on the GPU against F.conv2d on AlexNet's layers (forward and gradients)."""
    import torch.nn.functional as F

    from .conv import ALEXNET_2012_CONV, check_layer, conv2d_im2col

    if (skip := _skip_without_gpu(device)):
        return skip
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # compare FP32 with FP32
        errors = [check_layer(layer, batch=4, device=device) for layer in ALEXNET_2012_CONV]
    worst = max(max(e["im2col"], e["c01b"]) / e["max_abs_ref"] for e in errors)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, 11, 11, generator=g).to(device).requires_grad_()
    w = torch.randn(6, 4, 3, 3, generator=g).to(device).requires_grad_()
    grads = []
    for fn in (lambda: F.conv2d(x, w, None, 2, 1, 1, 2), lambda: conv2d_im2col(x, w, None, 2, 1, 2)):
        x.grad = w.grad = None
        fn().square().sum().backward()
        grads.append((x.grad.clone(), w.grad.clone()))
    grad_ok = all(torch.allclose(a, b, rtol=1e-3, atol=1e-3) for a, b in zip(grads[0], grads[1]))
    ok = worst < 1e-3 and grad_ok
    return {"status": "pass" if ok else "fail",
            "detail": f"largest error relative to max |output| {worst:.1e} over AlexNet's conv layers; "
                      f"im2col gradients {'match' if grad_ok else 'DIFFER from'} F.conv2d's",
            "errors": errors}


def check_conv_speed(device, quick):
    """im2col and c01b against F.conv2d (cuDNN) on AlexNet's conv layers on the GPU, batch 128 and 16."""
    from .conv import ALEXNET_2012_CONV, benchmark_conv

    if (skip := _skip_without_gpu(device)):
        return skip
    rows = []
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # FP32 against FP32, not TF32
        for batch in pick([16, 128], [16, 128]):
            rows += benchmark_conv(ALEXNET_2012_CONV, batch=batch, device=device, min_time=pick(0.3, 0.15))
    summary = "; ".join(f"b{b} {impl} {min(r['ratio'] for r in rows if r['impl'] == impl and r['batch'] == b):.1f}–"
                        f"{max(r['ratio'] for r in rows if r['impl'] == impl and r['batch'] == b):.1f}×"
                        for b in sorted({r['batch'] for r in rows})
                        for impl in ("im2col", "c01b", "copy only", "GEMM only"))
    return {"status": "info", "detail": f"time / F.conv2d time (FP32, TF32 off): {summary}", "rows": rows}


def check_train_cuda(device, quick):
    """A few training steps of the small AlexNet on the GPU: loss falls, GPU forward equals CPU forward."""
    from .config import set_seed
    from .data import load_digits
    from .models import alexnet_small
    from .train import train

    if (skip := _skip_without_gpu(device)):
        return skip
    set_seed(0)
    data = load_digits(resize=32)
    model = alexnet_small().eval()
    x = data.x_test[:64]
    with torch.no_grad():
        cpu_out = model(x)
        gpu_out = model.to(device)(x.to(device)).cpu()
    same = torch.allclose(cpu_out, gpu_out, rtol=1e-3, atol=1e-4)
    train_loader, test_loader = data.loaders(batch_size=64)
    history = train(model, train_loader, test_loader, epochs=pick(10, 3), device=device, progress=False)
    falls = history.train_loss[-1] < history.train_loss[0]
    ok = same and falls
    return {"status": "pass" if ok else "fail",
            "detail": f"GPU forward {'equals' if same else 'DIFFERS from'} CPU; loss {history.train_loss[0]:.3f} → "
                      f"{history.train_loss[-1]:.3f}, test accuracy {history.final_test_acc:.1%} after "
                      f"{len(history.epoch)} epochs in {history.total_seconds:.1f} s",
            "history": history.as_dict()}


def check_nccl_collectives(device, quick):
    """Our send/recv collectives against NCCL's, one rank per GPU."""
    from .hardware import gpu_count
    from .parallel.launch import launch
    from .parallel.workers import check_collectives

    if (skip := _skip_without_gpu(device)):
        return skip
    world = gpu_count()
    results = launch(check_collectives, world, (1, 3, 1001, 2**20 + 3), "cuda", backend="nccl", timeout=300)
    ok = all(all(r.values()) for r in results)
    note = "" if world > 1 else " (one GPU: one rank, so this exercises NCCL set-up and calls, not traffic)"
    return {"status": "pass" if ok else "fail", "detail": f"{world} NCCL rank(s): all equal: {ok}{note}",
            "per_rank": results}


def check_nccl_data_parallel(device, quick):
    """Every data-parallel version on NCCL ranks gives the single-process gradients."""
    from .hardware import gpu_count
    from .parallel.data_parallel import VERSIONS
    from .parallel.launch import launch
    from .parallel.workers import check_data_parallel

    if (skip := _skip_without_gpu(device)):
        return skip
    world = gpu_count()
    results = launch(check_data_parallel, world, VERSIONS, 23, "cuda", backend="nccl", timeout=300)
    worst = max(max(r.values()) for r in results)
    ok = worst < 1e-4
    return {"status": "pass" if ok else "fail",
            "detail": f"{world} NCCL rank(s), versions {', '.join(VERSIONS)}: max |grad error| {worst:.1e}",
            "per_rank": results}


def check_nccl_bandwidth(device, quick):
    """All-reduce bus bandwidth on NCCL, like nccl-tests (needs two or more GPUs)."""
    from .hardware import gpu_count
    from .parallel.launch import launch

    if (skip := _skip_without_gpu(device)):
        return skip
    world = gpu_count()
    if world < 2:
        return {"status": "skip", "detail": "one GPU: an all-reduce needs two or more to move data"}
    rows = launch(_nccl_bandwidth_worker, world, backend="nccl", timeout=300)[0]
    best = max(r["busbw_gbs"] for r in rows)
    return {"status": "pass", "detail": f"{world} GPUs: best all-reduce busbw {best:,.1f} GB/s", "rows": rows}


def check_nccl_pipeline_and_tensor_parallel(device, quick):
    """Pipeline schedules and split linear layers on NCCL ranks against the unsplit model."""
    from .hardware import gpu_count
    from .parallel.launch import launch
    from .parallel.workers import check_pipeline, check_tensor_parallel

    if (skip := _skip_without_gpu(device)):
        return skip
    world = gpu_count()
    pipe = launch(check_pipeline, world, backend="nccl", timeout=300)
    tp = launch(check_tensor_parallel, world, backend="nccl", timeout=300)
    worst = max(max(r.values()) for r in pipe + tp)
    return {"status": "pass" if worst < 1e-4 else "fail",
            "detail": f"{world} NCCL rank(s): pipeline (naive, GPipe, 1F1B) and split linear layers, "
                      f"max error {worst:.1e}",
            "pipeline": pipe, "tensor_parallel": tp}


def _nccl_bandwidth_worker(rank, world):
    from .parallel.collectives import measure_collective

    return measure_collective("all_reduce", "torch", [2**20, 2**24, 2**28], device="cuda")


# ---------------------------------------------------------------------------------------
# Notebooks 04-07: bandwidth, host-device copies, memory of a step, mixed precision, int8


def check_bandwidth_sweep(device, quick):
    """Device-memory copy bandwidth from small to large buffers, against the vendor figure.

    Copies whose read + write fit in the L2 cache can be served from it and beat the memory's
    spec; only the larger ones are held to it (a copy above the spec from device memory would
    mean the measurement is wrong).
    """
    from .bandwidth import device_copy_sweep

    if (skip := _skip_without_gpu(device)):
        return skip
    rows = device_copy_sweep(device, megabytes=pick([1, 4, 16, 64, 256, 1024, 4096], [1, 16, 256, 2048]), min_time=0.1)
    from_memory = [r for r in rows if not r.get("fits_in_l2")]
    if not from_memory:
        return {"status": "fail", "detail": "every buffer fit in the L2 cache: no device-memory bandwidth measured",
                "rows": rows}
    best = max(from_memory, key=lambda r: r["gbs"])
    ratios = [r["fraction_of_spec"] for r in from_memory if "fraction_of_spec" in r]
    ok = all(r <= 1.0 for r in ratios)
    cached = [r for r in rows if r.get("fits_in_l2")]
    cache_note = ""
    if cached:
        top = max(cached, key=lambda r: r["gbs"])
        cache_note = (f"; from the {top['l2_bytes'] / 2**20:.0f} MiB L2 cache: up to {top['gbs']:,.0f} GB/s "
                      f"at {top['megabytes']} MiB")
    return {"status": "pass" if ok else "fail",
            "detail": f"device memory: best {best['gbs']:,.0f} GB/s at {best['megabytes']} MiB"
                      + (f" = {best['fraction_of_spec']:.0%} of spec" if ratios else "; GPU not in NOTABLE_GPUS")
                      + cache_note,
            "rows": rows}


def check_pinned_copies(device, quick):
    """Host-to-device and back, pageable vs pinned host memory; pinned should be faster, and below the PCIe link."""
    from .bandwidth import transfer_sweep
    from .hardware import nvml_gpus
    from .topology import PCIE, pcie_bandwidth_gbs

    if (skip := _skip_without_gpu(device)):
        return skip
    rows = transfer_sweep(device, megabytes=pick([1, 16, 256, 1024], [16, 256]), min_time=0.1)
    big = max(r["megabytes"] for r in rows)
    get = {(r["direction"], r["pinned"]): r["gbs"] for r in rows if r["megabytes"] == big}
    gpus, _ = nvml_gpus()
    link = None
    if gpus and gpus[0].pcie_gen in PCIE and gpus[0].pcie_width in (1, 2, 4, 8, 16):
        link = pcie_bandwidth_gbs(gpus[0].pcie_gen, gpus[0].pcie_width)
    faster = get[("h2d", True)] >= get[("h2d", False)]
    below = link is None or max(get.values()) <= 1.05 * link
    return {"status": "pass" if faster and below else "fail",
            "detail": f"{big} MiB h2d: pageable {get[('h2d', False)]:,.1f}, pinned {get[('h2d', True)]:,.1f} GB/s; "
                      f"d2h: pageable {get[('d2h', False)]:,.1f}, pinned {get[('d2h', True)]:,.1f} GB/s"
                      + (f"; PCIe link (NVML gen {gpus[0].pcie_gen} x{gpus[0].pcie_width}) "
                         f"{link:,.1f} GB/s per direction"
                         if link else "; PCIe link not reported"),
            "rows": rows, "pcie_link_gbs": link}


def _memory_models():
    """(name, model, input shape) of the two models the memory check measures."""
    from .models import alexnet_small
    from .precision import digits_mlp

    return [("mlp", digits_mlp(dropout=0.5), (256, 1, 8, 8)), ("alexnet_small", alexnet_small(), (128, 1, 32, 32))]


MEMORY_ACCOUNTING = ("peaks include the parameters, the input batch and (training) the optimizer state; "
                     "measured on a step after an unmeasured warm-up step")


def check_memory_cuda(device, quick):
    """Saved activations measured on the GPU vs the formula (dropout keeps a 1-byte mask on CUDA), and the
    allocator's peak for an inference pass (vs its prediction, within 5 %) and a training step (at least
    parameters + optimizer state + saved activations; see ``memory.judge_cuda_peaks``)."""
    from .config import set_seed
    from .memory import (
        compare_saved_activations,
        cuda_peak_memory,
        judge_cuda_peaks,
        predict_inference_memory,
        predict_step_memory,
    )

    if (skip := _skip_without_gpu(device)):
        return skip
    set_seed(0)
    results = {}
    for name, model, shape in _memory_models():
        model = model.to(device)
        x = torch.randn(shape, device=device)
        y = torch.randint(0, 10, (shape[0],), device=device)
        cmp = compare_saved_activations(model, x)
        pred = predict_step_memory(model, shape, "adam", device_type="cuda")
        pred_infer = predict_inference_memory(model, shape)
        infer = cuda_peak_memory(model, x, y, train=False)
        train = cuda_peak_memory(model, x, y, train=True)
        verdict = judge_cuda_peaks(pred, pred_infer, train["peak_bytes"], infer["peak_bytes"])
        results[name] = dict(saved_ratio=cmp["ratio"], measured=cmp["measured_bytes"], predicted=cmp["predicted_bytes"],
                             train_peak=train["peak_bytes"], inference_peak=infer["peak_bytes"],
                             parameter_bytes=train["parameter_bytes"], input_bytes=train["input_bytes"],
                             optimizer_state_bytes=train["optimizer_state_bytes"],
                             train_step_bytes=train["step_bytes"], inference_step_bytes=infer["step_bytes"],
                             predicted_step_total=sum(pred.values()), predicted_parts=pred, **verdict)
    ok = all(abs(r["saved_ratio"] - 1) <= 0.05 and r["inference_ok"] and r["train_ok"] for r in results.values())
    return {"status": "pass" if ok else "fail",
            "detail": "; ".join(f"{k}: saved measured/predicted {r['saved_ratio']:.3f}; inference peak "
                                f"{r['inference_peak'] / 2**20:,.2f} MiB = {r['inference_ratio']:.3f} × predicted; "
                                f"training peak {r['train_peak'] / 2**20:,.2f} MiB (lower bound "
                                f"{r['train_lower_bound'] / 2**20:,.2f}, "
                                f"formula total {r['train_formula_total'] / 2**20:,.2f})"
                                for k, r in results.items()),
            "accounting": MEMORY_ACCOUNTING, "models": results}


def memory_cuda_rows(entry: dict) -> list[dict]:
    """Rows {"model", "batch", "train_peak", "inference_peak", "inference_predicted", "train_formula" (the sum of
    ``predict_step_memory``'s parts, Adam), "first_step"} from a
    ``memory_cuda`` report entry (e.g. ``recorded.selfcheck_section("memory_cuda")``), in the current accounting.

    Reports written before the accounting was fixed (no "accounting" key) measured bytes above what was
    allocated before the call, so without the parameters and the input batch, and the training step was
    the first one (no optimizer state yet during forward and backward). Their peaks are converted by
    adding the parameters and the input back, exact arithmetic for these two models; the training figure
    stays a first step, which ``first_step`` says.
    """
    from .memory import predict_inference_memory, predict_step_memory

    old = "accounting" not in entry
    rows = []
    for name, model, shape in _memory_models():
        r = entry["models"][name]
        add = 0
        if old:
            add = sum(p.numel() for p in model.parameters()) * 4 + math.prod(shape) * 4
        rows.append(dict(model=name, batch=shape[0], train_peak=r["train_peak"] + add,
                         inference_peak=r["inference_peak"] + add,
                         inference_predicted=sum(predict_inference_memory(model, shape).values()),
                         train_formula=sum(predict_step_memory(model, shape, "adam", device_type="cuda").values()),
                         first_step=old))
    return rows


def check_fp16_grad_scaler(device, quick):
    """Train the same MLP in FP32, BF16 autocast and FP16 autocast with GradScaler on the GPU; accuracies must agree."""
    from .config import set_seed
    from .data import load_digits
    from .precision import digits_mlp, train_mixed

    if (skip := _skip_without_gpu(device)):
        return skip
    data = load_digits(resize=None)
    train_loader, test_loader = data.loaders(batch_size=64)
    results = {}
    for mode in ("fp32", "bf16", "fp16"):
        set_seed(0)
        r = train_mixed(digits_mlp(), train_loader, test_loader, mode, epochs=pick(5, 3), device=device)
        results[mode] = dict(test_acc=r["test_acc"], final_loss=r["losses"][-1], skipped_steps=r["skipped_steps"],
                             final_scale=r["final_scale"])
    finite = all(torch.isfinite(torch.tensor(r["final_loss"])) for r in results.values())
    close = all(abs(results[m]["test_acc"] - results["fp32"]["test_acc"]) <= 0.03 for m in ("bf16", "fp16"))
    return {"status": "pass" if finite and close else "fail",
            "detail": ", ".join(f"{m} {r['test_acc']:.1%}" for m, r in results.items())
                      + f" test accuracy; GradScaler skipped {results['fp16']['skipped_steps']} step(s), "
                        f"final scale {results['fp16']['final_scale']:g}",
            "results": results}


def check_int8_inference(device, quick):
    """Hand-written int8 inference (torch._int_mm) on the GPU against FP32 and BF16: accuracy and latency."""
    from .config import set_seed
    from .data import load_digits
    from .precision import digits_mlp, train_mixed
    from .quantize import compare_inference, has_int_mm

    if (skip := _skip_without_gpu(device)):
        return skip
    set_seed(0)
    data = load_digits(resize=None)
    train_loader, test_loader = data.loaders(batch_size=64)
    model = digits_mlp(hidden=(1024, 1024))
    train_mixed(model, train_loader, test_loader, "fp32", epochs=3, device=device)
    x, y = data.x_test.repeat(8, 1, 1, 1), data.y_test.repeat(8)
    rows = compare_inference(model, x, y, min_time=0.2, device=device)
    acc = {r["method"]: r["accuracy"] for r in rows}
    ok = acc["int8"] >= acc["fp32"] - 0.02
    return {"status": "pass" if ok else "fail",
            "detail": f"_int_mm on GPU: {has_int_mm(device)}; " + ", ".join(
                f"{r['method']} {r['accuracy']:.1%} in {r['median_s'] * 1e3:.3f} ms" for r in rows),
            "rows": rows}


CHECKS = [
    check_environment,
    check_nvml_matches_torch,
    check_matmul_correctness,
    check_timer_synchronises,
    check_matmul_sweep,
    check_harness_agreement,
    check_bandwidth,
    check_roofline_points,
    check_graphics,
    check_conv_cuda,
    check_conv_speed,
    check_train_cuda,
    check_bandwidth_sweep,
    check_pinned_copies,
    check_memory_cuda,
    check_fp16_grad_scaler,
    check_int8_inference,
    check_nccl_collectives,
    check_nccl_data_parallel,
    check_nccl_bandwidth,
    check_nccl_pipeline_and_tensor_parallel,
]


def run_selfcheck(output: str | None = "selfcheck.json", quick: bool = False, checks=None, echo=print) -> dict:
    """Run ``checks`` (default: all) on the first CUDA GPU, print one line each, write JSON to ``output``."""
    device = "cuda:0" if torch.cuda.is_available() else None
    report = {"device": device, "checks": []}
    start = time.perf_counter()
    for check in checks or CHECKS:
        t0 = time.perf_counter()
        try:
            with quick_mode_set(quick):  # the checks size their work with config.pick
                result = check(device, quick)
        except Exception as exc:
            result = {"status": "fail", "detail": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        result = {"name": check.__name__.removeprefix("check_"), **result, "seconds": time.perf_counter() - t0}
        report["checks"].append(result)
        echo(f"[{result['status']:>4}] {result['name']}: {result['detail']} ({result['seconds']:.1f} s)")
    report["seconds"] = time.perf_counter() - start
    counts = {s: sum(c["status"] == s for c in report["checks"]) for s in ("pass", "fail", "skip", "info")}
    report["summary"] = counts
    echo(f"selfcheck: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
         f"in {report['seconds']:.1f} s")
    if output:
        with open(output, "w") as f:
            json.dump(report, f, indent=2, default=str)
        echo(f"report written to {output}")
    return report
