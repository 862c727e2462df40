"""Plain-text tables and the `d2lmp info` report."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table", "info_text"]


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """Format rows as an aligned text table."""
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: object, unit: str = "", fmt: str = "{}") -> str:
    return "not reported" if value is None else fmt.format(value) + unit


def info_text() -> str:
    """Everything `d2lmp info` prints: CPU, its peak estimate, NVIDIA GPUs and torch devices."""
    import platform

    import torch

    from d2lmp.hardware import accelerator_sentence, cpu_info, nvml_gpus, torch_devices

    cpu = cpu_info()
    lines = [
        f"Python {platform.python_version()}, torch {torch.__version__}, {platform.system()} {platform.machine()}",
        "",
        "CPU",
        f"  model:        {cpu.model}",
        f"  usable cores: {cpu.cores}",
        f"  clock:        {_fmt(cpu.clock_ghz, ' GHz', '{:.3f}')} ({cpu.clock_source})",
        f"  SIMD:         {cpu.simd}, {cpu.fp32_lanes} FP32 lanes per vector",
        f"  FMA units:    {cpu.fma_units} per core ({cpu.fma_note})",
        f"  FP32 peak:    {cpu.formula()}",
        "",
        "NVIDIA GPUs (NVML)",
    ]
    gpus, sentence = nvml_gpus()
    lines.append(f"  {sentence}")
    for g in gpus:
        links = "none" if g.nvlink_active is None else f"{g.nvlink_active} active"
        lines += [
            f"  [{g.index}] {g.name}",
            f"      memory {_fmt(g.memory_gib, ' GiB', '{:.1f}')}, max clocks SM {_fmt(g.sm_clock_max_mhz, ' MHz')}"
            f" / memory {_fmt(g.mem_clock_max_mhz, ' MHz')}",
            f"      PCIe gen {_fmt(g.pcie_gen)} x{_fmt(g.pcie_width)} now (max gen {_fmt(g.pcie_gen_max)}"
            f" x{_fmt(g.pcie_width_max)}), power limit {_fmt(g.power_limit_w, ' W', '{:.0f}')}, NVLink: {links}",
        ]
        lines += [f"      ({n})" for n in g.notes]
    lines += ["", "torch devices", f"  {', '.join(torch_devices())}", f"  {accelerator_sentence()}"]
    return "\n".join(lines)
