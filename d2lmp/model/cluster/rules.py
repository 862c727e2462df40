"""Rules of thumb a learner can apply without the planner, each written as code so it can be checked against it.

- ``playbook_plan``: the Ultra-Scale Playbook's procedure (Tazi et al., 2025, section Finding the Best Training
  Configuration, Steps 1-3). Step 1 fits one model instance, GPU-rich case: under 10B parameters one technique
  (ZeRO-3 with full recomputation); 10B-100B tensor parallelism 8 with ZeRO-3 (or with a pipeline); at 1,024 GPUs
  and more tensor parallelism 8 with a pipeline and ZeRO-2. Step 2 reaches the global batch with data parallelism
  and gradient accumulation (here the largest micro-batch that fits, the rest accumulated). Step 3 (tuning the
  throughput) is measurement, so the rule stops at step 2.
- ``tp_limit``: *How to Scale Your Model* (Austin et al., 2025, "How to Think About GPUs", section Tensor
  Parallelism under Rooflines for LLM Scaling on GPUs): tensor parallelism over ``Y`` GPUs stays compute-bound
  while ``Y < F·W/C`` (``F`` the MLP width, ``W`` the NVLink bandwidth a GPU sends at, ``C`` its 16-bit peak), and
  its TLDR keeps it within one NVLink domain.
- ``fsdp_tokens``: the same chapter, section Data Parallelism: data parallelism and ZeRO sharding hide their
  traffic when each GPU works on more than ``C/W`` tokens a step, ``W`` the node's network egress ("about 2500
  tokens per GPU" on an H100 node).

Both books use datasheet peaks, not the fitted rates the cost model runs at.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from d2lmp.model.cluster.hardware import Cluster
from d2lmp.model.cluster.layout import Plan
from d2lmp.model.cluster.planner import PlanReport
from d2lmp.model.cluster.predict import predict
from d2lmp.model.cluster.steptime import STEP_PARTS
from d2lmp.model.transformer_accounting import Transformer, parameter_count
from d2lmp.model.vocabulary import ZeroStage

__all__ = ["HIDES", "playbook_plan", "tp_limit", "fsdp_tokens", "RuleCheck", "check_rules"]

HIDES = 0.05  # a family "hides" its data-parallel traffic when under 5 % of its predicted step is exposed


def tp_limit(model: Transformer, cluster: Cluster) -> int:
    """The largest power of two ``Y`` with ``Y < F·W/C``, capped at the NVLink domain (the node)."""
    preset = cluster.preset
    bound = model.ffn_size * preset.nvlink_GBps * 1e9 / preset.peak_flops
    y = 1
    while 2 * y < bound and 2 * y <= preset.gpus_per_node:
        y *= 2
    return y


def fsdp_tokens(cluster: Cluster) -> float:
    """Tokens a GPU must work on per step for data parallelism or ZeRO to hide across nodes: ``C / W_node``."""
    preset = cluster.preset
    return preset.peak_flops / (preset.network_GBps_per_gpu * preset.gpus_per_node * 1e9)


def playbook_plan(model: Transformer, cluster: Cluster, global_batch: int) -> Plan | None:
    """Steps 1 and 2: the first layout of step 1's list that fits, its data parallelism filling the GPUs."""
    params, node = parameter_count(model).total, min(8, cluster.preset.gpus_per_node)
    stages: tuple[ZeroStage, ZeroStage, ZeroStage] = (1, 2, 3)  # ZeRO stages
    if params < 10e9:
        layouts = [(1, 1, stages[2])]  # (tp, pp, zero): one technique, ZeRO-3
    elif params <= 100e9 and cluster.gpus < 1024:
        layouts = [(node, 1, stages[2])] + [(node, p, stages[0]) for p in (2, 4, 8, 16, 32, 64)]
    else:
        layouts = [(node, p, stages[1]) for p in (1, 2, 4, 8, 16, 32, 64, 128)]
    for tp, pp, zero in layouts:
        dp = cluster.gpus // (tp * pp)
        if dp < 1 or tp * pp * dp != cluster.gpus or global_batch % dp:
            continue
        per_replica = global_batch // dp  # step 2: the largest micro-batch that fits, the rest accumulated
        for mb in sorted((b for b in range(1, per_replica + 1) if per_replica % b == 0), reverse=True):
            plan = Plan(tp=tp, pp=pp, dp=dp, micro_batch=mb, global_batch=global_batch, zero=zero,
                        recompute="full", attention="flash")
            try:
                if predict(model, cluster, plan).memory.fits:
                    return plan
            except ValueError:  # the layers or heads do not split that way
                break
    return None


@dataclass(frozen=True)
class RuleCheck:
    """One rule on one case: what it says, what the planner says, whether they agree, and why they differ."""

    rule: str
    says: str
    planner: str
    agree: bool
    why: str


def check_rules(report: PlanReport) -> list[RuleCheck]:
    """The three rules on ``report``'s case, each against the planner's answer in that report."""
    model, cluster, best = report.model, report.cluster, report.best
    if best is None:
        raise ValueError("nothing fits: the planner has no answer to check the rules against")
    checks = []
    rule_plan = playbook_plan(model, cluster, report.global_batch)
    if rule_plan is not None:
        ruled = predict(model, cluster, rule_plan)
        slower = ruled.step_s / best.prediction.step_s
        extra = max(STEP_PARTS, key=lambda k: ruled.parts[k] - best.prediction.parts[k])
        checks.append(RuleCheck("Playbook, steps 1-2", rule_plan.describe(), best.plan.describe(),
                                slower <= math.exp(report.tie_within),
                                f"{slower - 1:+.0%} predicted; most of it in {extra} "
                                f"(+{ruled.parts[extra] - best.prediction.parts[extra]:.2f} s)"))
    limit = tp_limit(model, cluster)
    checks.append(RuleCheck("tensor parallelism within F·W/C and the node", f"tp <= {limit}",
                            f"tp = {best.plan.tp}", best.plan.tp <= limit,
                            "the rule bounds tp from above; below it, memory and unhidden all-reduces choose"))
    tokens, needed = report.global_batch * model.seq / cluster.gpus, fsdp_tokens(cluster)
    alone = next((v.best for v in report.families if v.best is not None and v.sizes[:2] == (1, 1)), None)
    if alone is not None:
        parts = alone.prediction.parts
        share = (parts["dp"] + parts["zero"]) / alone.prediction.step_s
        checks.append(RuleCheck("data parallelism / ZeRO needs C/W_node tokens a GPU",
                                f"{tokens:,.0f} tokens a GPU vs {needed:,.0f}: "
                                + ("hides" if tokens > needed else "exposed"),
                                f"{alone.plan.describe()}: {share:.0%} of its step exposed",
                                (tokens > needed) == (share < HIDES),
                                "the planner's groups send over every adapter of their nodes, as the rule's W_node"))
    return checks
