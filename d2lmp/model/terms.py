"""The terms a step's time and memory are built from, shared by both cost models.

The layer-table model (``costmodel.predict``: notebooks 10-17) and the cluster model (``cluster.predict``:
notebook 20) are two front doors onto these terms:

* compute: FLOPs at a rate (``compute_seconds``);
* a link (``Link``): its bus bandwidth per direction, its per-message latency α and the rate of one send.
  A ring collective on n ranks costs its bytes per rank (``alpha_beta.BUS_FACTORS``: 2(n−1)/n of the buffer for
  an all-reduce, (n−1)/n for an all-gather or reduce-scatter) over the bandwidth, plus α per ring step
  (``RING_STEPS``: 2(n−1) for an all-reduce, n−1 for the others); a send costs α plus its bytes at the send rate;
* the training state per device (``state_per_device``): each part's bytes per parameter, divided over the devices
  for the parts a ZeRO stage shards (``ZERO_SHARDED``; Rajbhandari et al. 2020, rajbhandari2020zero, Fig. 1).

Each model keeps its own α, with its meaning, on the record that carries it: the layer table's presets read
NCCL's tuning value (``alpha_beta.GPU_ALPHA_S``); the cluster model's presets keep the assumed value its
efficiencies were fitted with (``cluster.hardware.GPUPreset.latency_s``).
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lmp.model.alpha_beta import ring_bytes_per_rank
from d2lmp.model.training_state import STATE_PARTS, OptimizerBytes, optimizer_bytes
from d2lmp.model.vocabulary import Collective, ZeroStage

__all__ = ["RING_STEPS", "Link", "compute_seconds", "ZERO_STAGES", "ZERO_SHARDED", "state_per_device"]

# Messages each rank sends (each costing α) in a ring collective on n ranks.
RING_STEPS: dict[Collective, int] = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1}


@dataclass(frozen=True)
class Link:
    """A link as both cost models see it: bus bandwidth per direction (bytes/s), α (seconds per message) and the
    rate of one point-to-point send (``p2p_bytes_per_s``; None: the bus bandwidth)."""

    bytes_per_s: float
    alpha_s: float
    p2p_bytes_per_s: float | None = None

    def collective_seconds(self, collective: Collective, nbytes: float, ranks: int) -> float:
        """A ring ``collective`` of ``nbytes`` on ``ranks`` ranks: its bytes per rank (``ring_bytes_per_rank``) over the
        bandwidth, plus α for each of its ``RING_STEPS`` × (n−1) messages; 0 on one rank."""
        if ranks == 1:
            return 0.0
        if collective not in RING_STEPS:
            raise ValueError(f"unknown collective {collective!r}; available: {', '.join(RING_STEPS)}")
        return (ring_bytes_per_rank(collective, nbytes, ranks) / self.bytes_per_s
                + RING_STEPS[collective] * (ranks - 1) * self.alpha_s)

    def all_reduce_seconds(self, nbytes: float, ranks: int) -> float:
        """Ring all-reduce of ``nbytes``: ``2(n−1)/n · nbytes / bandwidth + 2(n−1)·α``."""
        return self.collective_seconds("all_reduce", nbytes, ranks)

    def gather_seconds(self, nbytes: float, ranks: int) -> float:
        """Ring all-gather (or reduce-scatter) of a full result of ``nbytes``: ``(n−1)/n · nbytes / bw + (n−1)·α``."""
        return self.collective_seconds("all_gather", nbytes, ranks)

    def p2p_seconds(self, nbytes: float) -> float:
        """One point-to-point message: ``α + nbytes / (the link's send rate)``."""
        rate = self.bytes_per_s if self.p2p_bytes_per_s is None else self.p2p_bytes_per_s
        return self.alpha_s + nbytes / rate


def compute_seconds(flops: float, flops_per_s: float) -> float:
    """``flops`` at ``flops_per_s`` FLOP/s (an achieved rate: the caller applies any efficiency)."""
    return flops / flops_per_s


ZERO_STAGES: tuple[ZeroStage, ...] = (0, 1, 2, 3)
# What each ZeRO stage shards over the data-parallel ranks (Rajbhandari et al. 2020, rajbhandari2020zero, Fig. 1):
# stage 1 the optimizer state, stage 2 the gradients too, stage 3 the parameters too.
ZERO_SHARDED: dict[int, tuple[str, ...]] = {0: (), 1: ("optimizer_state",), 2: ("gradients", "optimizer_state"),
                                            3: STATE_PARTS}


def state_per_device(params: float, devices: int, stage: int,
                     optimizer: str | OptimizerBytes = "adam_mixed") -> dict[str, float]:
    """Bytes per device of each part of the training state of ``params`` parameters, kept as ZeRO ``stage`` keeps it
    on ``devices`` devices: a part that the stage shards (``ZERO_SHARDED``) is divided among them, the others not."""
    return {part: params * size / (devices if part in ZERO_SHARDED[stage] else 1)
            for part, size in optimizer_bytes(optimizer).state_per_parameter.items()}
