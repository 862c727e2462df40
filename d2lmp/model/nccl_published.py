"""Published nccl-tests measurements on multi-GPU servers: bus bandwidth against message size, read from their source.

Each row is one sweep of an nccl-tests binary as its source prints it, with the command, the system, the NCCL
version and the table it comes from. ``AZURE_ND_H200_V5``: Microsoft Azure's AI Benchmarking Guide, ND H200 v5
results, table 6 ("NCCL Bandwidth"): the in-place bus bandwidth of ``NCCL_ALGO=NVLS all_reduce_perf -b 8 -e 8G -f 2
-g 8 -n 40`` (the command in the guide's ``Benchmarks/NCCLBandwidth.py``) on the 8 H200 GPUs of one ND H200 v5
virtual machine, NCCL 2.20.5, from 1 KiB to 8 GiB. The table labels its sizes "1K", "65K", "132K", "1G": they are
the command's doubling sizes, 2^10 to 2^33 bytes, rounded. NVLS is NVLink SHARP, in which the NVSwitch adds the
buffers; busbw counts the bytes a ring would move, so under NVLS it is no longer the bandwidth on the wire.
Pure data: no process group, no device.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.alpha_beta import bus_bandwidth

__all__ = ["PublishedBusBandwidth", "AZURE_ND_H200_V5", "PUBLISHED_BUSBW"]


@dataclass(frozen=True)
class PublishedBusBandwidth:
    """One published nccl-tests sweep: ``busbw_gbs[i]`` GB/s at ``sizes_bytes[i]`` for ``collective`` on ``ranks``
    GPUs of ``system`` (``algorithm`` as NCCL_ALGO set it), with its ``command``, ``nccl`` version, ``source``
    (bibliography keys) and the ``table`` of the source it is read from."""

    system: str
    ranks: int
    collective: str
    algorithm: str
    nccl: str
    command: str
    sizes_bytes: tuple[int, ...]
    busbw_gbs: tuple[float, ...]
    source: tuple[str, ...]
    table: str

    def __post_init__(self) -> None:
        if len(self.sizes_bytes) != len(self.busbw_gbs) or not self.sizes_bytes:
            raise ValueError(f"{self.system}: {len(self.sizes_bytes)} sizes for {len(self.busbw_gbs)} bandwidths")
        bus_bandwidth(1.0, self.collective, self.ranks)  # a collective nccl-tests has a bus factor for

    @property
    def algbw_gbs(self) -> tuple[float, ...]:
        """The algorithm bandwidth, S / t, that the bus bandwidth was computed from (busbw / the bus factor)."""
        factor = bus_bandwidth(1.0, self.collective, self.ranks)
        return tuple(b / factor for b in self.busbw_gbs)


AZURE_ND_H200_V5 = PublishedBusBandwidth(
    system="Azure ND H200 v5 (8× H200, NVLink and NVSwitch)", ranks=8, collective="all_reduce", algorithm="NVLS",
    nccl="2.20.5", command="NCCL_ALGO=NVLS all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40 (in-place busbw)",
    sizes_bytes=tuple(2**k for k in range(10, 34)),
    busbw_gbs=(0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78, 138.44, 181.94, 240.41,
               300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98),
    source=("azure_ai_benchmarking_h200",), table="table 6 (NCCL Bandwidth)")

PUBLISHED_BUSBW: tuple[PublishedBusBandwidth, ...] = (AZURE_ND_H200_V5,)
