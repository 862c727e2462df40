"""Workers for test_gpt_tensor: every case of the tensor-parallel GPT on one launch per world size."""

from dataclasses import replace

import torch
import torch.distributed as dist

from d2lmp.checks.gpt_parallel import MODES, check_gpt_tensor, tiny_for
from d2lmp.checks.tp_layers import check_gqa, check_vocab_parallel, dropout_masks
from d2lmp.gpt import GPT, preset
from d2lmp.gqa import GroupedQueryAttention
from d2lmp.parallel import collectives as C
from d2lmp.parallel.gpt_tp import TensorParallelGPT
from d2lmp.parallel.gqa_tp import TPGroupedQueryAttention
from d2lmp.parallel.p2p_log import MessageLog
from d2lmp.parallel.tensor_parallel import ring_wire_bytes
from d2lmp.parallel.tp_accounting import activation_table, measure_block
from d2lmp.parallel.transformer_tp import TPBlock, split_dropout, tp_group


def _gathered(t):
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return parts


def _refusal(build):
    try:
        build()
    except ValueError as error:
        return str(error)
    return None


def refusals(world):
    """The message of each ValueError a bad size raises (None: no error)."""
    tp, sp = tp_group(), tp_group(None, True)
    odd_hidden = preset("tiny", hidden=3 * (world + 1), heads=3)
    odd_heads = preset("tiny", hidden=2 * world * (world + 1), heads=world + 1)
    odd_seq = tiny_for(world, seq=world + 1)
    return {
        "hidden": _refusal(lambda: TPBlock(GPT(odd_hidden).blocks[0], odd_hidden, tp)),
        "heads": _refusal(lambda: TPBlock(GPT(odd_heads).blocks[0], odd_heads, tp)),
        "seq": _refusal(lambda: TPBlock(GPT(odd_seq).blocks[0], odd_seq, sp)),
        "vocab": _refusal(lambda: TensorParallelGPT(GPT(tiny_for(world, vocab=4 * world + 1)))),
        "short sequence": _refusal(lambda: TensorParallelGPT(GPT(tiny_for(world)), None, True)(
            torch.zeros(1, world + 1, dtype=torch.long))),
    }


def dropout_cases(world):
    """With dropout: where every rank holds the whole activation, all draw the same mask (the outputs agree);
    split regions draw masks of their own; recomputation draws the same masks again."""
    config = tiny_for(world, dropout=0.2)
    x = torch.randn(2, config.seq, config.hidden, generator=torch.Generator().manual_seed(5))
    out = {}
    torch.manual_seed(0)
    replicated = TPBlock(GPT(config).blocks[0], config, tp_group()).train()(x).detach()
    out["replicas disagree by"] = max(float((p - replicated).abs().max()) for p in _gathered(replicated))
    without = GPT(replace(config, dropout=0.0)).blocks[0](x).detach()
    out["dropout changes the output by"] = float((replicated - without).abs().max())
    torch.manual_seed(0)
    masks = _gathered(split_dropout(torch.ones(4096), 0.5, dist.get_rank()))
    out["split masks agree on"] = max(float((m == masks[0]).float().mean()) for m in masks[1:])
    for _, sp, regather in MODES[:2]:
        tp = tp_group(None, sp, regather)
        grads = {}
        for recompute in ("none", "selective", "full"):
            torch.manual_seed(0)
            variant = replace(config, recompute=recompute)
            block = TPBlock(GPT(variant).blocks[0], variant, tp).train()
            xs = (x.tensor_split(world, 1)[dist.get_rank()] if sp else x).clone()
            block(xs).square().sum().backward()
            grads[recompute] = torch.cat([p.grad.flatten() for p in block.parameters()])
        out[f"SP={sp}: recomputed masks differ by"] = max(float((grads[r] - grads["none"]).abs().max())
                                                          for r in ("selective", "full"))
    return out


def ring_bytes(world):
    """Bytes our ring collectives really send (counted by MessageLog) against ``ring_wire_bytes``."""
    x = torch.arange(6.0 * world)
    found = {}
    for op, run, logged in (("all_reduce", lambda: C.ring_all_reduce(x.clone()), x),
                            ("reduce_scatter", lambda: C.ring_reduce_scatter(x), x),
                            ("all_gather", lambda: C.ring_all_gather(x[:6]), x[:6])):
        with MessageLog() as log:
            run()
        nbytes = logged.numel() * logged.element_size()
        found[op] = (sum(m.nbytes for m in log.sent), ring_wire_bytes(op, nbytes, world))
    return found


def everything(rank, world):
    """Every tensor-parallel GPT case on this rank, in one launch."""
    config = tiny_for(world)
    return {
        "errors": check_gpt_tensor(rank, world),
        "blocks": {mode: measure_block(config, tp_group(None, sp, regather)) for mode, sp, regather in MODES},
        "table": activation_table(tp_group(), tiny_for(world, dropout=0.1)),
        "dropout": dropout_cases(world),
        "refusals": {**refusals(world), "kv heads": _refusal(
            lambda: TPGroupedQueryAttention(GroupedQueryAttention(32, 8, world // 2), tp_group()))},
        "gqa": check_gqa(tp_group(), hidden=32, heads=8, kv_heads=4),
        "vocab": check_vocab_parallel(config, tp_group()),
        "dropout masks": dropout_masks(tp_group()),
        "ring bytes": ring_bytes(world),
    }
