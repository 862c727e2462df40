"""``d2lmp plan``: the planner from the command line.

It runs the planner (``scale.plan``) and prints the fastest configurations that fit, as a table, and
each family's verdict (why it is not the winner).

The model is a preset name (``d2lmp.scale.MODEL_PRESETS``: the calibration table's GPTs, 22B, 175B, Llama 3,
DeepSeek-V3) or a shape given as options (``--layers``, ``--hidden``, ``--heads`` and the rest), which ``--moe`` makes
a mixture of experts (``--ep`` limits its expert-parallel sizes); the cluster a GPU preset and a count.
Options limit the search (recomputation, ZeRO stages, the largest tensor or pipeline size, ...). Every option is
checked before the search (``check``): a bad one is a ``ValueError`` (one line, exit 2). A request nothing fits is a
``UsageError`` (one line, exit 2) that counts the families per reason (the batch does not split, memory, ...). A
search that lasts more than a second says on stderr what it searches and how long it has run.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from typing import TypedDict

from d2lmp.commands.options import OneLineParser, UsageError, ints, need_positive, words
from d2lmp.model.cluster.hardware import GPU_PRESETS, Cluster, gpu_preset
from d2lmp.model.cluster.moe import MoETransformer, moe_transformer
from d2lmp.model.cluster.planner import (
    ExpertSearch,
    FamilyVerdict,
    PlanReport,
    family_options,
    plan,
    powers_of_two,
)
from d2lmp.model.cluster.presets import MODEL_PRESETS, model_preset
from d2lmp.model.cluster.report import format_plan
from d2lmp.model.transformer_accounting import RECOMPUTE, Transformer
from d2lmp.model.vocabulary import (
    ATTENTION_KERNELS,
    MATMUL_PRECISIONS,
    AttentionKernel,
    MatmulPrecision,
    Recompute,
    ZeroStage,
)

__all__ = ["HELP", "SHAPE_OPTIONS", "MOE_FORMAT", "PROGRESS_AFTER_S", "MAX_GPUS", "add_parser", "model_of",
           "SearchLimits", "search_limits", "expert_search", "check", "why_nothing_fits", "cmd_plan"]

HELP = "rank the parallel configurations of a model on a GPU cluster (the cluster model's planner)"
SHAPE_OPTIONS = ("layers", "hidden", "heads", "seq", "vocab", "ffn", "kv_heads")
PROGRESS_AFTER_S = 1.0  # a search that lasts longer says so on stderr
# The search tries every pipeline size that divides both the layers and the GPU count, so its time grows with the
# GPU count; a cap of 2**20 GPUs (about a million) keeps any search within seconds.
MAX_GPUS = 2**20


def add_parser(sub: argparse._SubParsersAction[OneLineParser]) -> OneLineParser:
    """Add ``d2lmp plan`` and its options to the subcommands; return its parser."""
    p = sub.add_parser("plan", help=HELP, description=HELP)
    p.add_argument("--model", help=f"a preset: {', '.join(MODEL_PRESETS)} (default: none; give it or a shape)")
    shape = p.add_argument_group("a shape instead of --model")
    for name, what in (("layers", "transformer layers"), ("hidden", "hidden size"), ("heads", "attention heads")):
        shape.add_argument(f"--{name}", type=int, help=f"{what} (default: none; give --layers, --hidden and --heads)")
    shape.add_argument("--seq", type=int, help="sequence length (default 2048)")
    shape.add_argument("--vocab", type=int, help="vocabulary (default 51200)")
    shape.add_argument("--ffn", type=int, help="MLP width (default 4 × hidden)")
    shape.add_argument("--kv-heads", type=int, help="key/value heads (grouped-query attention; default: heads)")
    shape.add_argument("--gated-mlp", action="store_true", help="a SwiGLU MLP (three matrices)")
    shape.add_argument("--no-bias", action="store_true", help="no biases (Llama)")
    shape.add_argument("--untied", action="store_true", help="an LM head of its own")
    shape.add_argument("--rotary", action="store_true", help="no learned position embedding")
    p.add_argument("--moe", type=ints, help="make the model (a preset or a shape) a mixture of experts: "
                   "EXPERTS,TOP_K,EXPERT_FFN[,SHARED[,DENSE_LAYERS]] (routed experts, experts a token, an expert's "
                   "MLP width, shared experts, dense blocks first; default: none, a dense model)")
    p.add_argument("--ep", type=ints, help="expert-parallel sizes to try (default: powers of two dividing the "
                   "experts and dp)")
    p.add_argument("--fp8-dispatch", action="store_true", help="send the MoE dispatch in FP8 (DeepSeek-V3's recipe)")
    p.add_argument("--ep-overlap", action="store_true",
                   help="hide the MoE all-to-alls behind compute (DeepSeek-V3's DualPipe)")
    p.add_argument("--gpus", type=int, required=True, help="GPUs in the cluster (required)")
    p.add_argument("--gpu", default="A100-80GB", help=f"a GPU preset: {', '.join(GPU_PRESETS)}")
    p.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (NVLink within a node)")
    p.add_argument("--global-batch", type=int, required=True, help="sequences per step (required)")
    p.add_argument("--top", type=int, default=5, help="configurations to show")
    p.add_argument("--recompute", type=words, default=list(RECOMPUTE), help="allowed, e.g. full or none,selective")
    p.add_argument("--zero", type=ints, default=[0, 1, 2, 3], help="allowed ZeRO stages, e.g. 0,1")
    p.add_argument("--max-tp", type=int, help="largest tensor-parallel size (default: four nodes' GPUs)")
    p.add_argument("--max-pp", type=int, help="largest pipeline size (default: the layers)")
    p.add_argument("--cp", type=ints, help="context-parallel sizes to try (default: powers of two, 1,024+ tokens each)")
    p.add_argument("--micro-batch", type=ints, help="micro-batch sizes to try (default: divisors up to 16)")
    p.add_argument("--sequence-parallel", choices=("both", "yes", "no"), default="both",
                   help="try Megatron's sequence parallelism with tensor parallelism, without it, or both")
    p.add_argument("--dp-overlap", action=argparse.BooleanOptionalAction, default=True,
                   help="the gradient all-reduce overlaps the last backward")
    p.add_argument("--attention", choices=ATTENTION_KERNELS, default="flash",
                   help="the attention kernel: fused (flash, no s×s tensor) or materialised scores")
    p.add_argument("--precision", choices=MATMUL_PRECISIONS, default="bf16",
                   help="the linear layers' matrix products: bf16 or fp8")
    p.add_argument("--families", action=argparse.BooleanOptionalAction, default=True,
                   help="also print each family's verdict")
    p.set_defaults(func=cmd_plan, check=check)
    return p


MOE_FORMAT = "EXPERTS,TOP_K,EXPERT_FFN[,SHARED[,DENSE_LAYERS]]"


def model_of(args: argparse.Namespace) -> tuple[str, Transformer]:
    """(name, shape) from ``--model`` or from the shape options (not both), made a mixture of experts by ``--moe``."""
    name, model = _dense_model_of(args)
    if args.moe is None:
        return name, model
    if isinstance(model, MoETransformer):
        raise ValueError(f"--moe: {name} is already a mixture of experts")
    if not 3 <= len(args.moe) <= 5:
        raise ValueError(f"--moe takes {MOE_FORMAT}, got {','.join(map(str, args.moe))}")
    need_positive("--moe", args.moe[:3])
    experts, top_k, expert_ffn, *rest = args.moe
    shared, dense = (rest + [0, 0])[:2]
    moe = moe_transformer(model, experts, top_k, expert_ffn, shared, dense_layers=dense)
    return f"{name} with {experts} experts (top {top_k})", moe


def _dense_model_of(args: argparse.Namespace) -> tuple[str, Transformer]:
    """(name, shape) from ``--model`` or from the shape options (not both)."""
    given = [name for name in SHAPE_OPTIONS if getattr(args, name) is not None]
    if args.model is not None:
        if given:
            raise ValueError(f"give --model or a shape, not both (--model {args.model} with "
                             f"{', '.join('--' + g.replace('_', '-') for g in given)})")
        preset = model_preset(args.model)
        return preset.name, preset.model
    missing = [f"--{name}" for name in ("layers", "hidden", "heads") if getattr(args, name) is None]
    if missing:
        raise ValueError(f"give --model (a preset) or a shape: {', '.join(missing)} missing")
    for name in given:
        need_positive(f"--{name.replace('_', '-')}", getattr(args, name))
    model = Transformer(layers=args.layers, hidden=args.hidden, heads=args.heads, seq=args.seq or 2048,
                        vocab=args.vocab or 51200, ffn=args.ffn, kv_heads=args.kv_heads, gated_mlp=args.gated_mlp,
                        bias=not args.no_bias, tied_embeddings=not args.untied, learned_positions=not args.rotary)
    return f"{model.layers} layers × hidden {model.hidden}", model


class SearchLimits(TypedDict, total=False):
    """The keyword arguments of ``plan`` that the command line sets (the others keep ``plan``'s defaults)."""

    recompute: tuple[Recompute, ...]
    zero: tuple[ZeroStage, ...]
    dp_overlap: bool
    sequence_parallel: tuple[bool, ...]
    attention: AttentionKernel
    precision: MatmulPrecision
    tp: list[int]
    pp: list[int]
    cp: tuple[int, ...]
    micro_batch: tuple[int, ...]


def search_limits(args: argparse.Namespace, model: Transformer, cluster: Cluster) -> SearchLimits:
    """The keyword arguments of ``plan`` that the options set (checked)."""
    bad = [r for r in args.recompute if r not in RECOMPUTE]
    if bad or not args.recompute:
        raise ValueError(f"--recompute takes {', '.join(RECOMPUTE)} (comma-separated), got {','.join(args.recompute)}")
    if not args.zero or any(z not in (0, 1, 2, 3) for z in args.zero):
        raise ValueError(f"--zero takes the stages 0, 1, 2, 3 (comma-separated), got {args.zero}")
    limits = SearchLimits(recompute=tuple(args.recompute), zero=tuple(args.zero), dp_overlap=args.dp_overlap,
                          sequence_parallel={"both": (False, True), "yes": (True,), "no": (False,)}[
                              args.sequence_parallel], attention=args.attention, precision=args.precision)
    if args.max_tp is not None:
        need_positive("--max-tp", args.max_tp)
        limits["tp"] = [t for t in powers_of_two(min(args.max_tp, cluster.gpus))
                        if model.heads % t == 0 and model.kv_head_count % t == 0]
    if args.max_pp is not None:
        need_positive("--max-pp", args.max_pp)
        limits["pp"] = [p for p in range(1, min(args.max_pp, model.layers) + 1) if model.layers % p == 0]
    if args.cp is not None:
        need_positive("--cp", args.cp)
        limits["cp"] = tuple(args.cp)
    if args.micro_batch is not None:
        need_positive("--micro-batch", args.micro_batch)
        limits["micro_batch"] = tuple(args.micro_batch)
    return limits


def expert_search(args: argparse.Namespace, model: Transformer) -> ExpertSearch:
    """The expert-parallel search the options set (checked): ``--ep``, ``--fp8-dispatch``, ``--ep-overlap``."""
    if args.ep is not None or args.fp8_dispatch or args.ep_overlap:
        if not isinstance(model, MoETransformer):
            raise ValueError("--ep, --fp8-dispatch and --ep-overlap need a mixture of experts (an MoE preset or --moe)")
        if args.ep is not None:
            need_positive("--ep", args.ep)
    return ExpertSearch(None if args.ep is None else tuple(args.ep), args.fp8_dispatch, args.ep_overlap)


class _Progress:
    """After ``PROGRESS_AFTER_S``, say on stderr what the search searches; on a terminal, keep its time updated."""

    def __init__(self, what: str) -> None:
        self.what, self.start, self.done = what, time.perf_counter(), threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()

    def _tick(self) -> None:
        if self.done.wait(PROGRESS_AFTER_S):
            return
        tty = sys.stderr.isatty()
        while True:
            elapsed = time.perf_counter() - self.start
            sys.stderr.write(f"\r{self.what}: {elapsed:.0f} s" if tty else f"{self.what} ...\n")
            sys.stderr.flush()
            if not tty or self.done.wait(1.0):
                break
        if tty:
            self.done.wait()
            sys.stderr.write("\n")


def _prepared(args: argparse.Namespace) -> tuple[str, Transformer, Cluster, SearchLimits,
                                                 list[tuple[int, int, int, int]]]:
    """(name, model, cluster, search limits, families) from the options; ValueError says what is wrong."""
    need_positive("--gpus", args.gpus)
    if args.gpus > MAX_GPUS:
        raise ValueError(f"--gpus must be at most {MAX_GPUS:,} (the search's bound), got {args.gpus:,}")
    need_positive("--global-batch", args.global_batch)
    need_positive("--top", args.top)
    need_positive("--gpus-per-node", args.gpus_per_node)
    name, model = model_of(args)
    cluster = Cluster(gpu=gpu_preset(args.gpu).name, gpus=args.gpus, gpus_per_node=args.gpus_per_node)
    limits = search_limits(args, model, cluster)
    expert_search(args, model)
    families = family_options(model, cluster, args.global_batch, tp=limits.get("tp"), pp=limits.get("pp"),
                              cp=limits.get("cp"))
    if not families:
        raise ValueError(f"no (tp, pp, dp, cp) family multiplies to {args.gpus} GPUs within the limits given")
    return name, model, cluster, limits, families


def check(args: argparse.Namespace) -> None:
    """Every option, before the search: ValueError says what is wrong."""
    _prepared(args)


def why_nothing_fits(report: PlanReport) -> str:
    """Why no family runs: the families counted per reason (numbers aside), most common first, each with an
    example."""
    groups: dict[str, list[FamilyVerdict]] = {}
    for verdict in report.families:
        groups.setdefault(re.sub(r"\d[\d.]*", "#", verdict.reason), []).append(verdict)
    total = len(report.families)
    return "; ".join(f"{len(g)} of {total} {'family' if total == 1 else 'families'}, "
                     f"{'e.g. ' if len(g) > 1 else ''}(tp, pp, dp, cp) = {g[0].sizes}: {g[0].reason}"
                     for g in sorted(groups.values(), key=len, reverse=True))


def cmd_plan(args: argparse.Namespace) -> int:
    """Search, print the table and the families' verdicts; a request nothing fits is a UsageError."""
    name, model, cluster, limits, families = _prepared(args)
    start = time.perf_counter()
    with _Progress(f"d2lmp plan: searching {len(families)} families (tp × pp × dp × cp) of {name} on "
                   f"{args.gpus} × {cluster.gpu}"):
        report: PlanReport = plan(model, cluster, args.global_batch, experts=expert_search(args, model),
                                  top=args.top, **limits)
    seconds = time.perf_counter() - start
    print(f"{name} on {args.gpus} x {cluster.gpu} ({cluster.gpus_per_node} a node), global batch "
          f"{args.global_batch}: predicted by d2lmp.scale (parameters fitted on Narayanan et al. 2021, Table 1)\n")
    print(format_plan(report, families=args.families or report.best is None))
    print(f"\nsearched {report.considered} configurations of {len(families)} families in {seconds:.1f} s")
    if report.best is None:
        raise UsageError(f"nothing fits: no configuration of {name} fits on {args.gpus} x {cluster.gpu} "
                         f"({cluster.preset.memory_gb:g} GB each) for a global batch of {args.global_batch}: "
                         f"{why_nothing_fits(report)}")
    return 0
