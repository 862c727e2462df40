"""The calibration of a CPU preset on ranks: the few numbers ``model.cluster.cpu.CPUCalibration`` holds, measured here.

``calibrate_rank`` runs on every rank of a launch at once (so each rate is the one a rank gets while the others
are as busy) and returns a ``RankCalibration``: the FLOP rate of the GPT's matrix products on this rank's thread
(``gpt_matmuls``: every product of a forward and backward, run as bare products: one block's, times the
layers, and the logits'), the seconds of a forward and backward of the whole GPT and of an AdamW step on its
parameters, gloo all-reduces of several sizes inside ``group`` (the slowest rank's median at each size) and
send/recv between paired ranks (half a round trip). ``cpu_calibration`` turns the ranks' records into a
``CPUCalibration``: the slowest rank's rates, α and β fitted to the all-reduces (``alpha_beta``), the send rate
fitted to the sends, and ``memory_passes`` inverted from the measured forward and backward.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from d2lmp.gpt import GPT, GPTConfig, lm_loss
from d2lmp.hardware import host_memory_bytes
from d2lmp.model.alpha_beta import fit_alpha_beta, ring_alpha_beta
from d2lmp.model.cluster.cpu import CPUCalibration, memory_passes_from
from d2lmp.model.cluster.efficiency import OPTIMIZER_BYTES_PER_PARAM
from d2lmp.model.cluster.layout import Plan
from d2lmp.timing import benchmark

__all__ = ["ALLREDUCE_SIZES", "P2P_SIZES", "Product", "gpt_matmuls", "product_flops", "RankCalibration",
           "flat_gradients", "Calibrator", "calibrate_rank", "cpu_calibration"]

ALLREDUCE_SIZES = (2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26)  # bytes; the gradients of the small GPT: 43 MB
P2P_SIZES = (2**12, 2**15, 2**18, 2**21, 2**23)  # bytes; a pipeline micro-batch's activations: 0.4 MB

Product = tuple[tuple[int, ...], tuple[int, ...], str]  # shapes of A and B of A @ B, and which product it is


def gpt_matmuls(config: GPTConfig, batch: int) -> tuple[list[Product], list[Product]]:
    """(one block's, the logits') matrix products of a forward and backward on ``batch`` sequences.

    A linear layer ``y = x·Wᵀ`` costs ``x·Wᵀ`` forward, ``∂y·W`` and ``∂yᵀ·x`` backward; attention's ``Q·Kᵀ`` and
    ``P·V`` (per sequence and head) cost two products each backward.
    """
    h, s, v, d = config.hidden, config.seq, config.vocab, config.head_dim
    n, heads = batch * s, batch * config.heads
    block: list[Product] = []
    for name, (i, o) in (("qkv", (h, 3 * h)), ("attn.proj", (h, h)), ("mlp.fc", (h, 4 * h)),
                         ("mlp.proj", (4 * h, h))):
        block += [((n, i), (i, o), f"{name} forward"), ((n, o), (o, i), f"{name} input grad"),
                  ((o, n), (n, i), f"{name} weight grad")]
    scores, values = ((heads, s, d), (heads, d, s)), ((heads, s, s), (heads, s, d))
    block += [(*scores, "Q·Kᵀ"), (*values, "P·V"), (*scores, "∂O·Vᵀ"), (*values, "Pᵀ·∂O"), (*values, "∂S·K"),
              (*values, "∂Sᵀ·Q")]
    logits: list[Product] = [((n, h), (h, v), "logits forward"), ((n, v), (v, h), "logits input grad"),
              ((v, n), (n, h), "logits weight grad")]
    return block, logits


def product_flops(products: Sequence[Product]) -> int:
    """2·m·k·n per product (times its batch of matrices)."""
    total = 0
    for a, b, _ in products:
        batch = a[0] if len(a) == 3 else 1
        total += 2 * batch * a[-2] * a[-1] * b[-1]
    return total


def _products(products: Sequence[Product], g: torch.Generator) -> Callable[[], None]:
    pairs = [(torch.randn(*a, generator=g), torch.randn(*b, generator=g)) for a, b, _ in products]

    def run() -> None:
        for a, b in pairs:
            torch.matmul(a, b)
    return run


@dataclass(frozen=True)
class RankCalibration:
    """One rank's measurements in one round (seconds are medians; the all-reduce and send seconds are already the
    slowest rank's at each size)."""

    matmul_flops: int  # the products' FLOPs, forward and backward, on ``batch`` sequences
    matmul_s: float
    forward_backward_s: float
    optimizer_s: float
    parameters: int
    allreduce_s: tuple[float, ...]  # at each of ``allreduce_sizes``
    allreduce_sizes: tuple[int, ...]
    p2p_s: tuple[float, ...]  # one way, at each of ``p2p_sizes``
    p2p_sizes: tuple[int, ...]


def _slowest(values: Sequence[float]) -> tuple[float, ...]:
    t = torch.tensor(list(values), dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return tuple(float(v) for v in t)


def _allreduce_seconds(group: dist.ProcessGroup | None, sizes: Sequence[int], repeats: int) -> tuple[float, ...]:
    out = []
    for size in sizes:
        t = torch.ones(size // 4)
        dist.all_reduce(t, group=group)  # warm-up
        samples = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t, group=group)
            samples.append(time.perf_counter() - start)
        out.append(statistics.median(samples))
    return _slowest(out)


def _p2p_seconds(rank: int, sizes: Sequence[int], repeats: int) -> tuple[float, ...]:
    """Half a round trip between ``rank`` and ``rank ^ 1`` (every pair at once)."""
    peer, out = rank ^ 1, []
    for size in sizes:
        buf = torch.ones(size // 4)
        samples = []
        for _ in range(repeats + 1):  # the first is a warm-up
            dist.barrier()
            start = time.perf_counter()
            if rank < peer:
                dist.send(buf, peer)
                dist.recv(buf, peer)
            else:
                dist.recv(buf, peer)
                dist.send(buf, peer)
            samples.append((time.perf_counter() - start) / 2)
        out.append(statistics.median(samples[1:]))
    return _slowest(out)


def flat_gradients(params: Sequence[torch.nn.Parameter]) -> torch.Tensor:
    """One buffer whose slices are the parameters' ``.grad`` (backward accumulates into them in place): how every
    strategy of the bridge, and the calibration, keep their gradients."""
    flat = torch.zeros(sum(p.numel() for p in params))
    offset = 0
    for p in params:
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()
    return flat


class Calibrator:
    """What ``calibrate_rank`` needs across rounds: the whole GPT, its gradient buffer and optimizer, the products'
    operands."""

    def __init__(self, config: GPTConfig, x: torch.Tensor, y: torch.Tensor) -> None:
        self.config, self.x, self.y = config, x, y
        self.model = GPT(config)
        self.flat = flat_gradients(list(self.model.parameters()))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-5)
        block, logits = gpt_matmuls(config, len(x))
        g = torch.Generator().manual_seed(0)
        self.block, self.logits = _products(block, g), _products(logits, g)
        self.flops = config.layers * product_flops(block) + product_flops(logits)

    def forward_backward(self) -> None:  # as the strategies run it: the buffer zeroed, backward adds into it
        self.flat.zero_()
        torch.autograd.backward(lm_loss(self.model(self.x), self.y))


def calibrate_rank(rank: int, calibrator: Calibrator, group: dist.ProcessGroup | None, min_time: float,
                   allreduce_sizes: Sequence[int] = ALLREDUCE_SIZES, p2p_sizes: Sequence[int] = P2P_SIZES,
                   repeats: int = 5) -> RankCalibration:
    """This rank's part of one calibration round (every rank of the launch calls it at once)."""
    c = calibrator

    def seconds(fn: Callable[[], object]) -> float:  # warm from the rounds before: one untimed call, then two
        dist.barrier()
        return benchmark(fn, warmup=0, min_time=min_time, min_blocks=2).median

    block, logits = seconds(c.block), seconds(c.logits)
    forward_backward, optimizer = seconds(c.forward_backward), seconds(c.optimizer.step)
    allreduce = _allreduce_seconds(group, allreduce_sizes, repeats)
    p2p = _p2p_seconds(rank, p2p_sizes, repeats)
    params = sum(p.numel() for p in c.model.parameters())
    return RankCalibration(c.flops, c.config.layers * block + logits, forward_backward, optimizer, params, allreduce,
                           tuple(allreduce_sizes), p2p, tuple(p2p_sizes))


def cpu_calibration(ranks: Sequence[RankCalibration], config: GPTConfig, batch: int) -> CPUCalibration:
    """The launch's ``CPUCalibration`` from its ranks' records of one round: the slowest rank's rates; α, β of a
    ring step fitted to the all-reduces of 2-rank groups; the send rate fitted to the sends; and the passes that
    make the model's one-rank forward and backward of ``batch`` sequences last as long as the slowest rank's."""
    first = ranks[0]
    intercept, slope = fit_alpha_beta(first.allreduce_sizes, first.allreduce_s)
    alpha, beta = ring_alpha_beta(intercept, slope, 2)
    _, p2p_beta = fit_alpha_beta(first.p2p_sizes, first.p2p_s)
    optimizer = max(r.optimizer_s for r in ranks)
    memory = host_memory_bytes() or 16e9
    cal = CPUCalibration(ranks=len(ranks), matmul_flops=min(r.matmul_flops / r.matmul_s for r in ranks),
                         memory_bytes_per_s=OPTIMIZER_BYTES_PER_PARAM * first.parameters / optimizer, alpha_s=alpha,
                         allreduce_bytes_per_s=1 / beta, p2p_bytes_per_s=1 / p2p_beta,
                         memory_gb=memory / 1e9 / len(ranks))
    one_rank = Plan(micro_batch=batch, global_batch=batch)
    passes = memory_passes_from(config.shape(), cal, one_rank, max(r.forward_backward_s for r in ranks))
    return replace(cal, memory_passes=passes)
