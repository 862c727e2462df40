"""What hardware is here: CPU facts and peak FLOP/s, main memory, GPUs via NVML, torch devices.

A GPU's peak FLOP/s come from the sourced table in ``gpu_specs``. Every query is guarded:
on a machine without a GPU or without the NVML library the functions return a clear
sentence, never a traceback.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from d2lmp import gpu_specs
from d2lmp.bibliography import sources_text

__all__ = ["CPUInfo", "simd_from_flags", "X86_LOW_PRECISION", "ARM_LOW_PRECISION", "low_precision_instructions",
           "usable_cores", "cpu_info", "last_level_cache", "meminfo_total_bytes",
           "host_memory_bytes", "GPUInfo", "nvml_gpus", "torch_devices", "gpu_count", "accelerator_sentence",
           "peak_gflops"]

# ---------------------------------------------------------------------------------------
# CPU


@dataclass
class CPUInfo:
    """A CPU's model, usable cores, clock, vector width and estimated FP32 peak."""

    model: str
    cores: int
    clock_ghz: float | None
    clock_source: str
    simd: str
    fp32_lanes: int
    fma_units: int
    fma_note: str

    @property
    def flops_per_cycle_per_core(self) -> int:
        """FP32 FLOPs one core can retire per cycle: lanes × 2 (an FMA is 2 FLOPs) × FMA units."""
        return self.fp32_lanes * 2 * self.fma_units

    @property
    def peak_gflops_fp32(self) -> float | None:
        """cores × clock × lanes × 2 × FMA units, in GFLOP/s; None when the clock is unknown."""
        if self.clock_ghz is None:
            return None
        return self.cores * self.clock_ghz * self.flops_per_cycle_per_core

    def peak_gflops(self, dtype: str) -> float | None:
        """Estimated peak for ``dtype`` ("float32" or "float64"); None where we have no estimate."""
        fp32 = self.peak_gflops_fp32
        if fp32 is None:
            return None
        if dtype == "float32":
            return fp32
        if dtype == "float64":
            return fp32 / 2  # half as many 64-bit lanes in the same vector register
        return None

    def formula(self) -> str:
        """The peak estimate written out with its inputs."""
        clock = f"{self.clock_ghz:.3f} GHz" if self.clock_ghz else "unknown clock"
        peak = self.peak_gflops_fp32
        result = f"{peak:,.0f} GFLOP/s" if peak is not None else "unknown (no clock reading)"
        return (
            f"{self.cores} cores × {clock} × {self.fp32_lanes} FP32 lanes ({self.simd}) "
            f"× 2 (FMA) × {self.fma_units} FMA units = {result}"
        )


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _cpuinfo_fields() -> dict[str, str]:
    """The first processor's fields from /proc/cpuinfo (Linux), else an empty dict."""
    text = _read("/proc/cpuinfo") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def simd_from_flags(flags: set[str], machine: str = "") -> tuple[str, int, int]:
    """(name, FP32 lanes per vector unit, FMA units assumed per core) from CPU flags.

    Two FMA units is what current x86 server and desktop cores have (Intel since Haswell,
    AMD since Zen); some parts have one 512-bit unit, or split 512-bit work into two
    256-bit halves, and reach half of this peak. The flags cannot tell these apart.
    """
    if "avx512f" in flags:
        return "AVX-512", 16, 2
    if "avx2" in flags and "fma" in flags:
        return "AVX2+FMA", 8, 2
    if "avx" in flags:
        return "AVX (no FMA: one add + one multiply per lane)", 8, 1
    if "sse2" in flags:
        return "SSE2 (no FMA: one add + one multiply per lane)", 4, 1
    if machine in {"arm64", "aarch64"} or "asimd" in flags:
        return "NEON (128-bit)", 4, 2
    return "scalar (no SIMD flags found)", 1, 1


# Instructions for products of 16-bit floats (BF16) and 8-bit integers, by the names Linux lists them under in
# /proc/cpuinfo ("flags" on x86, "Features" on Arm). Without them a BF16 or INT8 matrix product takes a slower path.
# x86: BF16 dot products (AVX-512) and matrix tiles (AMX); INT8 dot products (AVX-512 VNNI, AVX-VNNI), tiles (AMX).
X86_LOW_PRECISION = ("avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni", "amx_int8")
# Arm: BF16 dot products and matrix multiply; INT8 dot products; INT8 matrix multiply.
ARM_LOW_PRECISION = ("bf16", "asimddp", "i8mm")


def _cpu_flags(fields: dict[str, str]) -> set[str]:
    """The CPU flags among /proc/cpuinfo's ``fields`` (x86 "flags", Arm "Features"); empty where it lists none."""
    return set((fields.get("flags") or fields.get("Features") or "").split())


def low_precision_instructions(flags: set[str] | None = None, machine: str | None = None) -> dict[str, bool]:
    """For each instruction set of the CPU's family (x86 or Arm) that multiplies BF16 or INT8 values: is it there.

    ``flags`` defaults to this CPU's (from /proc/cpuinfo); empty where the operating system lists none (macOS,
    Windows), so that nothing is reported as missing that was never looked at.
    """
    if flags is None:
        flags = _cpu_flags(_cpuinfo_fields())
    if not flags:
        return {}
    arm = (machine or platform.machine()).lower() in {"arm64", "aarch64"} or "asimd" in flags
    return {name: name in flags for name in (ARM_LOW_PRECISION if arm else X86_LOW_PRECISION)}


def usable_cores() -> int:
    """Cores this process may run on (respects affinity masks and containers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _clock_ghz(fields: dict[str, str]) -> tuple[float | None, str]:
    max_khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if max_khz and max_khz.strip().isdigit():
        return int(max_khz) / 1e6, "cpufreq maximum"
    if "cpu MHz" in fields:
        try:
            return float(fields["cpu MHz"]) / 1e3, "/proc/cpuinfo current clock"
        except ValueError:
            pass
    return None, "unknown"


def cpu_info() -> CPUInfo:
    """Read the CPU's model, cores, clock and SIMD width from the operating system."""
    fields = _cpuinfo_fields()
    machine = platform.machine().lower()
    flags = _cpu_flags(fields)
    model = fields.get("model name") or platform.processor() or machine or "unknown CPU"
    simd, lanes, units = simd_from_flags(flags, machine)
    clock, source = _clock_ghz(fields)
    note = (
        "assumed from the SIMD level; parts with one FMA unit (or that split 512-bit "
        "work into halves) reach half this peak"
    )
    return CPUInfo(model, usable_cores(), clock, source, simd, lanes, units, note)


def _parse_cache_size(text: str) -> int | None:
    """Bytes from a sysfs cache size such as "32768K", "1M" or "512" (None if unreadable)."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, flags=re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]
    return int(match.group(1)) * scale


def last_level_cache(root: str = "/sys/devices/system/cpu/cpu0/cache") -> tuple[int, int] | None:
    """(level, bytes) of the largest-level data or unified cache of CPU 0, read from sysfs.

    None where the operating system does not say (macOS, Windows, some containers).
    The size is what one core can use; on many CPUs a slice of it is shared with others.
    """
    best: tuple[int, int] | None = None
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return None
    for entry in entries:
        if not entry.startswith("index"):
            continue
        level, kind, size = (_read(os.path.join(root, entry, f)) for f in ("level", "type", "size"))
        if not level or not size or (kind or "").strip() == "Instruction":
            continue
        nbytes = _parse_cache_size(size)
        if not level.strip().isdigit() or nbytes is None:
            continue
        candidate = (int(level), nbytes)
        if best is None or candidate > best:
            best = candidate
    return best


def meminfo_total_bytes(text: str) -> int | None:
    """Bytes of the ``MemTotal:`` line of a /proc/meminfo text (its unit is kiB), or None."""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, flags=re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def host_memory_bytes() -> int | None:
    """This machine's main memory (RAM) in bytes: physical pages × page size, else /proc/meminfo.

    None where the operating system says neither (e.g. Windows). A container's memory limit, if
    lower, is not taken into account: this is the machine's memory.
    """
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return pages * page_size
    except (AttributeError, ValueError, OSError):  # no sysconf, or no such name on this system
        pass
    return meminfo_total_bytes(_read("/proc/meminfo") or "")


# ---------------------------------------------------------------------------------------
# GPUs through NVML


@dataclass
class GPUInfo:
    """What NVML reports about one NVIDIA GPU (None where the driver does not say)."""

    index: int
    name: str
    memory_gib: float | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    power_limit_w: float | None = None
    nvlink_active: int | None = None
    notes: list[str] = field(default_factory=list)


def _nvml_call(info: GPUInfo, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # NVMLError_NotSupported and friends
        info.notes.append(f"{what}: not reported ({type(exc).__name__})")
        return None


def nvml_gpus() -> tuple[list[GPUInfo], str]:
    """(GPUs found through NVML, one sentence describing the outcome).

    Never raises: no pynvml module, no NVML library (no NVIDIA driver) and no GPU each
    give an empty list and a sentence that says which.
    """
    try:
        import pynvml
    except ImportError:
        return [], "The pynvml module (package nvidia-ml-py) is not installed, so NVML was not queried."
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return [], f"No NVIDIA driver found (NVML could not start: {exc}); no NVIDIA GPU is usable here."
    try:
        count = pynvml.nvmlDeviceGetCount()
        gpus = [_query_gpu(pynvml, i) for i in range(count)]
        driver = pynvml.nvmlSystemGetDriverVersion()
        if isinstance(driver, bytes):
            driver = driver.decode()
    except Exception as exc:  # e.g. NoPermission in a container, or "GPU is lost"
        return [], f"NVML started but could not be queried ({type(exc).__name__}: {exc}); GPU details are unavailable."
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    if not gpus:
        return [], f"The NVIDIA driver {driver} is loaded but reports no GPU."
    return gpus, f"NVML (driver {driver}) reports {len(gpus)} NVIDIA GPU(s)."


def _query_gpu(pynvml: Any, index: int) -> GPUInfo:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    name = pynvml.nvmlDeviceGetName(handle)
    info = GPUInfo(index, name.decode() if isinstance(name, bytes) else name)
    mem = _nvml_call(info, "memory", pynvml.nvmlDeviceGetMemoryInfo, handle)
    if mem is not None:
        info.memory_gib = mem.total / 2**30
    info.sm_clock_max_mhz = _nvml_call(
        info, "SM clock", pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM
    )
    info.mem_clock_max_mhz = _nvml_call(
        info, "memory clock", pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_MEM
    )
    info.pcie_gen = _nvml_call(info, "PCIe generation", pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle)
    info.pcie_width = _nvml_call(info, "PCIe width", pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle)
    info.pcie_gen_max = _nvml_call(info, "PCIe max generation", pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle)
    info.pcie_width_max = _nvml_call(info, "PCIe max width", pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle)
    limit = _nvml_call(info, "power limit", pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    if limit is not None:
        info.power_limit_w = limit / 1000
    info.nvlink_active = _count_nvlinks(pynvml, handle)
    return info


def _count_nvlinks(pynvml: Any, handle: Any) -> int | None:
    """Active NVLink links, or None when the GPU has no NVLink (or NVML cannot tell)."""
    active, supported = 0, False
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            state = pynvml.nvmlDeviceGetNvLinkState(handle, link)
        except Exception:
            continue
        supported = True
        active += int(state == getattr(pynvml, "NVML_FEATURE_ENABLED", 1))
    return active if supported else None


# ---------------------------------------------------------------------------------------
# torch devices


def torch_devices() -> list[str]:
    """Devices PyTorch can use here, GPUs first: e.g. ["cuda:0", "cpu"]. Always has "cpu"."""
    import torch

    devices = []
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    devices.append("cpu")
    return devices


def gpu_count() -> int:
    """Number of CUDA GPUs PyTorch sees (0 on a CPU-only machine)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def accelerator_sentence() -> str:
    """One sentence naming the accelerator the notebooks will use, or saying there is none.

    The GPU's name comes from NVML, not from torch: ``torch.cuda.get_device_name`` starts CUDA
    in this process, after which ``launch`` can no longer fork gloo ranks (notebook-defined
    workers would then fail).
    """
    n = gpu_count()
    if n:
        gpus, _ = nvml_gpus()
        names = sorted({gpu.name for gpu in gpus})
        named = f": {', '.join(names)}" if names else " (NVML could not name them)"
        return f"Using {n} CUDA GPU(s){named}."
    if "mps" in torch_devices():
        return "Using Apple's Metal GPU (mps); NVIDIA-only parts (NVML, NCCL) are skipped."
    return "No GPU here: everything runs on the CPU, and GPU-only measurements are skipped (not faked)."


def peak_gflops(device: str, dtype: str, cpu: CPUInfo | None = None) -> tuple[float | None, str]:
    """(estimated peak GFLOP/s, where it comes from) for a torch device string and dtype."""
    if device == "cpu":
        cpu = cpu or cpu_info()
        peak = cpu.peak_gflops(dtype)
        return peak, ("CPU estimate: " + cpu.formula()) if peak else f"no CPU peak estimate for {dtype}"
    if device.startswith("cuda"):
        import torch

        name = torch.cuda.get_device_name(torch.device(device))
        peak = gpu_specs.gpu_peak_gflops(name, dtype)
        spec = gpu_specs.find_gpu_spec(name)
        if peak is None or spec is None:
            return None, f"no sourced {dtype} peak for {name} in NOTABLE_GPUS"
        return peak, f"{spec.name} vendor figure ({sources_text(spec.source)})"
    return None, f"no peak figure for device {device}"
