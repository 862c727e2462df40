"""``d2lmp bench ring-attention``: ring attention's forward against one rank's whole-sequence attention.

It measures ring attention's forward on p ranks against one rank's whole-sequence
``F.scaled_dot_product_attention``, split into compute and waiting for K/V, and the overlap it achieves (the
measurement: ``d2lmp.bench.context_parallel``)."""

from __future__ import annotations

import argparse

from d2lmp.bench import context_parallel as cp
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import ints, need_positive, need_ranks
from d2lmp.model.context_layout import chunk_count
from d2lmp.report import table

__all__ = ["HELP", "RATIO_GOAL", "OVERLAP_GOAL", "add_options", "check", "goals", "run"]

HELP = "ring attention on p ranks vs one rank's whole-sequence SDPA: compute, waiting, overlap"
# The balanced ring with the fused kernel, ring / reference. On 2 ranks a balanced rank computes 5 blocks of
# (S/4)², 5/8 of the causal half of the S × S scores that the whole-sequence kernel computes (its diagonal
# blocks whole, then masked); 0.75 leaves room for the merges and the messages not hidden.
RATIO_GOAL = Goal("balanced ring (fused kernel) / one rank's SDPA", "<=", 0.75, "×")
OVERLAP_GOAL = Goal("transfer hidden behind compute (balanced, fused)", ">=", 0.5)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", type=int, default=2, help="ranks (each holds 1/world of the sequence)")
    parser.add_argument("--shape", type=ints, default=None,
                        help="batch,heads,sequence,head_dim (default 1,4,2048,64; quick mode 1,2,256,32)")
    parser.add_argument("--no-causal", dest="causal", action="store_false", help="attend to the whole sequence")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 7; quick mode 2)")


def check(args: argparse.Namespace) -> None:
    need_ranks("--world", args.world, 2)  # one rank has no ring
    if args.shape is not None and len(args.shape) != 4:
        raise ValueError(f"--shape takes four integers (batch,heads,sequence,head_dim), got {args.shape}")
    if args.shape is not None:
        need_positive("--shape", args.shape)
        chunk_count(args.shape[2], args.world, "balanced")  # a sequence that does not split is a ValueError now
    if args.rounds is not None:
        need_positive("--rounds", args.rounds)


def goals(bench: cp.RingAttentionBench) -> list[str]:
    """The two goal lines, judged on the balanced layout with the fused kernel."""
    return [RATIO_GOAL.line(bench.ratio("balanced")), OVERLAP_GOAL.line(bench.overlap("balanced"))]


def run(args: argparse.Namespace) -> int:
    check(args)
    bench = cp.ring_attention_bench(args.world, None if args.shape is None else tuple(args.shape), args.causal,
                                    args.rounds)
    b, h, s, d = bench.shape
    print(f"Ring attention forward, {b} x {h} heads x {s} tokens x {d}, {'causal' if bench.causal else 'no mask'}, "
          f"{bench.world} ranks, median of {bench.rounds} rounds")
    print(f"reference: F.scaled_dot_product_attention on the whole sequence on one rank {bench.reference_s * 1e3:.1f} "
          f"ms; the ring's K/V messages alone {bench.transfer_s * 1e3:.2f} ms")
    rows = [[r.layout, r.kernel, f"{r.seconds * 1e3:.1f}", f"{bench.ratio(r.layout, r.kernel):.2f}",
             " / ".join(f"{c * 1e3:.1f}" for c in r.compute_s), " / ".join(f"{w * 1e3:.2f}" for w in r.wait_s),
             f"{r.compute_imbalance:.2f}", f"{bench.overlap(r.layout, r.kernel):.0%}"] for r in bench.rows]
    print(table(rows, ["layout", "kernel", "ring ms", "ring / reference", "compute ms per rank",
                       "wait ms per rank", "compute imbalance", "transfer hidden"]))
    print("\n" + "\n".join(goals(bench)))
    return 0
