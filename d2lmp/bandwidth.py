"""Memory bandwidth: from bus width × data rate, and measured (device copies, host↔device copies).

Peak bandwidth of a memory system is (bus width in bits × data rate per pin in Gb/s) / 8, in
GB/s. Copy measurements count the bytes read plus the bytes written for a copy within one
memory (``measure_bandwidth``, swept over buffer sizes by ``device_copy_sweep``), and the bytes
moved once for a copy between host and device: the link carries each byte once, in one direction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from d2lmp.gpu_specs import NOTABLE_GPUS, find_gpu_spec
from d2lmp.timing import benchmark, resolve_device

__all__ = ["bus_bandwidth_gbs", "GPUMemoryRow", "gpu_memory_table", "measure_bandwidth", "DeviceCopyRow",
           "device_copy_sweep", "host_device_copy", "CopyRow", "transfer_sweep"]


def bus_bandwidth_gbs(bus_bits: int, gbps_per_pin: float) -> float:
    """Peak GB/s = bus bits × Gb/s per pin / 8 (e.g. 352 × 14 / 8 = 616 for the RTX 2080 Ti)."""
    if bus_bits <= 0 or gbps_per_pin <= 0:
        raise ValueError(f"bus width and data rate must be positive, got {bus_bits} and {gbps_per_pin}")
    return bus_bits * gbps_per_pin / 8


@dataclass(frozen=True)
class GPUMemoryRow:
    """One GPU of ``gpu_memory_table``: the memory figures of its sourced row and two derived from them."""

    name: str
    year: int
    memory_type: str
    bus_bits: int
    bandwidth_gbs: float
    gbps_per_pin: float  # bandwidth × 8 / bus bits (derived here, not a vendor figure)
    memory_gb: float
    fp32_tflops: float
    bytes_per_flop: float  # bytes of memory traffic available per FP32 FLOP


def gpu_memory_table() -> list[GPUMemoryRow]:
    """The sourced GPUs of ``gpu_specs.NOTABLE_GPUS`` with the per-pin data rate their figures imply.

    ``gbps_per_pin`` = bandwidth × 8 / bus bits (derived here, not a vendor figure), and
    ``bytes_per_flop``: bytes of memory traffic available per FP32 FLOP.
    """
    return [GPUMemoryRow(name=s.name, year=s.year, memory_type=s.memory_type, bus_bits=s.bus_bits,
                         bandwidth_gbs=s.bandwidth_gbs, gbps_per_pin=s.bandwidth_gbs * 8 / s.bus_bits,
                         memory_gb=s.memory_gb, fp32_tflops=s.fp32_tflops,
                         bytes_per_flop=s.bandwidth_gbs / (s.fp32_tflops * 1e3))
            for s in NOTABLE_GPUS]


def measure_bandwidth(device: str = "cpu", megabytes: int = 256, min_time: float = 0.2) -> float:
    """Memory bandwidth in GB/s from copying one buffer into another (read + write counted).

    Use buffers far larger than the last-level cache, or you measure the cache.
    """
    if megabytes <= 0:
        raise ValueError(f"megabytes must be positive, got {megabytes}")
    device = resolve_device(device)
    n = megabytes * 2**20 // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    m = benchmark(lambda: dst.copy_(src), device, min_time=min_time, label="copy")
    return 2 * src.nbytes / m.median / 1e9


@dataclass(frozen=True)
class DeviceCopyRow:
    """One buffer size of ``device_copy_sweep``: the device, one buffer's MiB, the bytes a copy touches (source
    + destination) and GB/s; on a GPU its L2 cache's bytes and whether the copy fits in it (then it need not
    reach device memory and can beat the memory's spec), and on a known GPU the spec and the fraction of it."""

    device: str
    megabytes: int
    bytes_touched: int
    gbs: float
    l2_bytes: int | None = None
    fits_in_l2: bool | None = None
    spec_gbs: float | None = None
    fraction_of_spec: float | None = None


def device_copy_sweep(device: str = "cpu", megabytes: Iterable[int] = (1, 4, 16, 64, 256),
                      min_time: float = 0.1) -> list[DeviceCopyRow]:
    """Copy bandwidth within one device's memory for each buffer size (read + write counted).

    Small buffers show the caches, large ones main memory. One ``DeviceCopyRow`` per size.
    """
    sizes = list(megabytes)
    if not sizes:
        raise ValueError("megabytes is empty; give buffer sizes such as (1, 4, 16, 64)")
    device = resolve_device(device)
    on_gpu = device.startswith("cuda")
    spec = find_gpu_spec(torch.cuda.get_device_name(torch.device(device))) if on_gpu else None
    l2 = torch.cuda.get_device_properties(torch.device(device)).L2_cache_size if on_gpu else None
    rows = []
    for mb in sizes:
        gbs = measure_bandwidth(device, mb, min_time)
        touched = 2 * mb * 2**20
        rows.append(DeviceCopyRow(device=device, megabytes=mb, bytes_touched=touched, gbs=gbs, l2_bytes=l2,
                                  fits_in_l2=None if l2 is None else touched <= l2,
                                  spec_gbs=None if spec is None else spec.bandwidth_gbs,
                                  fraction_of_spec=None if spec is None else gbs / spec.bandwidth_gbs))
    return rows


def host_device_copy(device: str, megabytes: int, pinned: bool, direction: str = "h2d",
                     min_time: float = 0.1) -> float:
    """GB/s of one copy of ``megabytes`` between host memory (``pinned`` or pageable) and a CUDA device.

    ``direction``: "h2d" (host to device) or "d2h". A pageable buffer must first be staged
    through a pinned bounce buffer by the driver; a pinned (page-locked) one is read by the
    GPU's copy engine directly, so it is faster and is what ``DataLoader(pin_memory=True)`` gives.
    """
    if direction not in ("h2d", "d2h"):
        raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}")
    if megabytes <= 0:
        raise ValueError(f"megabytes must be positive, got {megabytes}")
    device = resolve_device(device)
    if not device.startswith("cuda"):
        raise ValueError(f"host↔device copies need a CUDA device, got {device}")
    n = megabytes * 2**20 // 4
    host = torch.ones(n, pin_memory=pinned)
    dev = torch.empty(n, device=device)
    fn: Callable[[], object]
    if direction == "h2d":
        fn = lambda: dev.copy_(host, non_blocking=pinned)  # noqa: E731
    else:
        fn = lambda: host.copy_(dev, non_blocking=pinned)  # noqa: E731
    m = benchmark(fn, device, min_time=min_time, label=f"{direction} pinned={pinned}")
    return host.nbytes / m.median / 1e9


@dataclass(frozen=True)
class CopyRow:
    """One host-device copy: size, pinned or pageable host memory, direction ("h2d" or "d2h"), GB/s."""

    megabytes: int
    pinned: bool
    direction: str
    gbs: float


def transfer_sweep(device: str, megabytes: Iterable[int] = (1, 16, 256), min_time: float = 0.1) -> list[CopyRow]:
    """``host_device_copy`` for every size × pinned/pageable × direction."""
    return [CopyRow(megabytes=mb, pinned=p, direction=d, gbs=host_device_copy(device, mb, p, d, min_time))
            for d in ("h2d", "d2h") for p in (False, True) for mb in megabytes]
