"""The cluster model against the published runs of model.cluster.runs: every record judged or printed as information,
the validation goal held, and the memory checks held at their present level (a floor, with the miss printed)."""

from dataclasses import replace

import pytest

from d2lmp.model import transformer_accounting as ta
from d2lmp.model.cluster.convert import convert, published_tokens_per_s
from d2lmp.model.cluster.memory import stage_memory
from d2lmp.model.cluster.moe import MoETransformer
from d2lmp.model.cluster.run_record import RunRecord
from d2lmp.model.cluster.runs import records
from d2lmp.model.cluster.validation import (
    GOAL,
    PICK_GOAL,
    SHARE_GOAL,
    goal_checks,
    judge,
    judge_all,
    memory_ratios_by_micro_batch,
    memory_within_goal,
    summarise,
    sweep_cells,
)

# The present record of the model on the validation rows (raise these as the model improves; lower one only when the
# rows it counts change, and say why here). The goal of 90 % in band is met on llm-foundry's FSDP tables and missed
# overall: the Ultra-Scale Playbook's sweep of nanotron layouts without a pipeline runs at a median of 1/1.09 of the
# model's prediction, its misses growing with the TP group at small micro-batches, and bench scale prints the miss.
# 752 while the dropout masks that nanotron's Llama and MPT never keep were counted (and moved by the memory-bound
# operations); without them one Ultra-Scale row leaves the band, 751 of 2,081. The sweep's 1,270 pipelined rows ran
# pipeline code the page does not name (runs/ultrascale.py: the branch's last commit sleeps 0.1 s in each wait of a
# metadata send); their speed is no longer judged (262 of them had been in band), 489 of 811. BLOOM's runs without
# sequence parallelism (their memory-bound operations run on the whole sequence on every tensor rank), 495. The
# sweep's 26 one-node rows without a pipeline became the calibration table of the host's launch time (host_ms) and
# left the count (18 of them had been in band): 477 of 785 without it, 526 with it. Tensor parallelism across nodes
# as nanotron and Megatron run it under sequence parallelism (ten rings a block, at the bus bandwidth measured over
# the nodes the group spans, with the network's fitted α, network_us): 577 of 763, the sweep's 22 rows whose tensor
# group is the whole cluster of two or four nodes now calibration rows (the α's table). 614 with the sweep's gradient
# reduction as nanotron runs it: ZeRO 1 all-reduces after the backward (its code; zero1_all_reduce), ZeRO 0 not hidden
# either (chosen on the sweep's rows: 599 if it were), and a group with fewer members a node than GPUs reading the
# measurement over as many ranks, at most its own NICs (chosen on the same rows; the 64-node rows got worse). Still 614
# of 757 once the sweep's twelve rows whose printed GBS is not DP·MBS·GradAcc became information (six had been judged,
# none in band).
IN_BAND_AT_LEAST = 614
# of the published runs that ran (the others are the model's memory misses): 2,059 while MPT's absent dropout masks
# were counted (llm-foundry's largest micro-batches came out a few per cent over the GPU), 2,070 without them
# 2,070 while the capacity was read in 10⁹ bytes: the 11 refused were llm-foundry's largest micro-batches, predicted
# 0.1-3 % over 40 or 80·10⁹ bytes (its benchmark takes the largest micro-batch that fits); in NVIDIA's binary
# gigabytes (an 80 GB A100 holds 80 GiB), every one; 2,055 of the validation rows once the sweep's 26 one-node rows
# without a pipeline became calibration rows (they fit too); 2,033 once the 22 rows of the network's α did (all fit);
# 2,021 once the sweep's twelve rows that contradict themselves as printed became information (all had fit)
FIT_AT_LEAST = 2021
# published out-of-memory runs the model says do not fit: 3 of 6 while BLOOM's tensor ranks were taken to split their
# checkpointed activations (sequence parallelism, which its Megatron-DeepSpeed fork does not have) and its BF16
# optimizer's unsharded FP32 gradient buffer was missing; 5 with both (the sixth, 206B, predicted at 67.7 GB of 80);
# 4 with the capacity in GiB (85.9·10⁹ bytes), which the 181B layout DP 32 TP 2 PP 6 MBS 1 (84.3·10⁹) fits
OOM_AT_LEAST = 4
# reported memory predicted within ±20 %: 1,040 while the sweep's 1B and 3B models were counted with untied embeddings
# (0.27B and 0.40B parameters they do not have); counted as the source ties them, 1,024: the overcount had hidden part
# of an underestimate, the FP32 gradient buffers nanotron keeps (two bytes a parameter more); counted, 1,180; with
# DDP's 16-bit buckets beside them under ZeRO-0 (two more, nanotron's trainer.py), 1,179 (those rows' median 1.02);
# without the dropout masks nanotron's Llama never keeps (no dropout layer), 1,134: the masks too had hidden part of
# an underestimate (the sweep's median predicted/reported 0.95 -> 0.92), which bench scale prints; BLOOM's rows 6 of
# 64 (median 0.55) while their checkpointed activations were split over the tensor ranks, 44 whole, 61 with the BF16
# optimizer's FP32 buffer (median 0.89): 1,189; 1,168 of the validation rows once the 26 one-node rows became
# calibration rows (21 of them within); 1,162 once the 22 rows of the network's α did (6 of them within). 1,009 once the
# sweep's figures are read as nanotron writes them (runs/ultrascale.py): in GiB, not 10⁹ bytes (the sweep's rows within,
# calibration included: 1,128 of 1,757 -> 998), and rank 0's, a first-stage GPU, not the fuller stage's (974). Both
# misreadings had hidden part of what the figure holds and the model does not count, PyTorch's allocator's cache (median
# predicted/reported 0.93 at one sequence a micro-batch, 0.67 at sixteen), which bench scale prints. 1,057 with the two
# FP32 copies of the logits nanotron's loss holds on the last stage (logit_bytes=8; the runs that ran all still fit);
# 1,048 of 1,763 once the sweep's twelve rows that contradict themselves as printed became information (9 within)
MEMORY_WITHIN_AT_LEAST = 1048
# sweep cells where the model's pick runs within 10 % of the fastest measured: 14 of 30 with the untied overcount, 13
# without; 15 of 28 among the layouts whose speed is judged: gained 8B on 32 and 64 nodes, where the model's pipelined
# picks had measured 0.57 and 0.01 of the fastest; without the pipelined rows the 80B model keeps fewer than five
# layouts on 4 and on 32 nodes, two cells dropped (misses, 0.88 and 0.89); 16 with BLOOM's gradient reduction after
# the last backward (DeepSpeed's pipeline schedule): its 72-layer cell's pick moves from 0.80 to 0.99; 13 of 25 once
# the cells of calibration rows are no test (the sweep's one-node cells, three picks within 10 %); 12 with tensor
# parallelism across nodes at the bandwidth of the nodes it spans: only the 64-node cells moved; the model now picks
# TP 16 for the 1B, 3B and 8B models (measured 0.64, 0.26 and 0.27 of the fastest there; for the 8B it had picked the
# fastest) and TP 32 for the 80B (0.35, from 0.14): most of the sweep's 64-node TP 16 rows run 55-75 ms a block
# whatever the micro-batch, a few 11-12 ms; 18 with the sweep's reduction as nanotron runs it and the groups'
# measurement read over as many ranks (1B and 3B on 16 and 32 nodes, 8B on 16 and 64, 80B on 64 gained; 8B on 32
# nodes lost, 1.00 -> 0.85)
PICKS_WITHIN_AT_LEAST = 18


@pytest.fixture(scope="module")
def judgements():
    return judge_all(records())


@pytest.fixture(scope="module")
def validation(judgements):
    """The judgements of the validation rows: the goals count these, never the rows a parameter was fitted on."""
    return [j for j in judgements if j.record.use == "validation"]


def test_every_record_is_judged_or_printed_as_information(judgements):
    assert len(judgements) == len(records()) >= 248
    info = [j for j in judgements if j.prediction is None]
    assert all(j.converted.reason for j in info)
    assert sum(s.rows for s in summarise(judgements)) == len(judgements)
    assert sum(s.info for s in summarise(judgements)) == len(info)


def test_the_validation_share_holds_its_floor_and_the_fsdp_tables_meet_the_goal(judgements, validation):
    ratios = [j.ratio for j in validation if j.ratio is not None]
    in_band = sum(GOAL[0] <= r <= GOAL[1] for r in ratios)
    assert in_band >= IN_BAND_AT_LEAST
    share = goal_checks(judgements)[0]
    assert share.met == (in_band / len(ratios) >= SHARE_GOAL)  # the goal line says what the rows say
    (foundry,) = [s for s in summarise(judgements) if s.source == "llm_foundry_benchmarks"]
    assert foundry.share is not None and foundry.share >= SHARE_GOAL


def test_the_memory_checks_hold_their_present_level(validation):
    judged = [j for j in validation if j.prediction is not None]
    assert sum(j.memory_agrees for j in judged if not j.oom) >= FIT_AT_LEAST
    assert sum(j.memory_agrees for j in judged if j.oom) >= OOM_AT_LEAST
    memory = [m for j in judged if (m := j.memory_ratio) is not None]
    assert sum(abs(m - 1) <= 0.2 for m in memory) >= MEMORY_WITHIN_AT_LEAST


def test_a_pipelined_row_whose_pipeline_code_is_unknown_has_its_memory_judged_and_not_its_speed():
    pipelined = _record(source="tazi2025ultrascale", dp=4, pp=2, memory_gb=40.0, pipeline_sends="unknown",
                        metric="tokens_per_s_per_gpu", value=1000.0)
    judged = judge(pipelined)
    assert judged.prediction is not None and judged.memory_ratio is not None and judged.memory_agrees
    assert judged.any_ratio is not None and judged.ratio is None and "pipeline code" in judged.speed_reason
    (summary,) = summarise([judged])
    assert summary.info == 0 and summary.ratios == () and summary.speed_info == (judged.any_ratio,)
    assert summary.memory_ratios == (judged.memory_ratio,) and summary.memory_disagrees == 0
    assert not sweep_cells([judged] * 5)  # a sweep is scored on measured speeds the model judges
    without_pipeline = judge(replace(pipelined, dp=8, pp=1))  # the same code, no pipeline: judged in full
    assert without_pipeline.ratio == without_pipeline.any_ratio is not None
    assert judge(replace(pipelined, pipeline_sends="queued")).ratio is not None
    with pytest.raises(ValueError, match="pipeline_sends"):
        replace(pipelined, pipeline_sends="blocking")


def _record(**changes: object) -> RunRecord:
    fields: dict[str, object] = dict(source="llm_foundry_benchmarks", where="a hand-made row", row="7b",
                                     use="validation", layers=32, hidden=4096, heads=32, seq=2048, vocab=50368,
                                     gpu="H100-SXM", gpus=8,
                                     metric="mfu", value=0.5, dp=8, zero=3, micro_batch=4, global_batch=32,
                                     recompute="none", attention="flash")
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type]


def test_a_memory_figure_is_compared_on_its_gpu_and_as_it_counts():
    """The fuller stage's bytes against a figure of the fuller stage's GPU; the first stage's against rank 0's."""
    pipelined = _record(dp=2, pp=4, zero=0, micro_batch=1, global_batch=2, vocab=256000, memory_gb=50.0)
    device = judge(pipelined)
    assert device.prediction is not None and device.memory_ratio is not None
    assert device.memory_ratio * 50e9 == pytest.approx(device.prediction.memory.total)
    first = judge(replace(pipelined, memory_measure="reserved", memory_stage="first"))
    assert first.prediction is not None and first.memory_ratio is not None
    assert first.prediction.memory.stage == "last"  # one micro-batch in flight: the logits make the last stage fuller
    converted = first.converted
    assert converted.model is not None and converted.plan is not None
    stage = stage_memory(converted.model, converted.plan, first.prediction.layout, "first",
                         first.prediction.memory.capacity)
    assert first.memory_ratio * 50e9 == pytest.approx(stage.total)
    assert first.memory_ratio < device.memory_ratio
    with pytest.raises(ValueError, match="memory_measure"):
        replace(pipelined, memory_measure="allocated")


def test_memory_ratios_group_by_micro_batch_in_order_and_count_within_the_goal():
    with_figure = [judge(_record(micro_batch=b, global_batch=8 * b, memory_gb=gb)) for b, gb in ((4, 50.0), (1, 20.0),
                                                                                               (4, 60.0))]
    without = judge(_record(micro_batch=2, global_batch=16))  # no reported memory: left out
    groups = memory_ratios_by_micro_batch([*with_figure, without])
    assert list(groups) == [1, 4]
    assert groups[4] == [with_figure[0].memory_ratio, with_figure[2].memory_ratio]
    assert memory_within_goal([0.79, 0.8, 1.0, 1.2, 1.21]) == 3


def test_a_record_becomes_the_models_terms_or_says_why_not():
    converted = convert(_record())
    assert converted.judged and converted.plan is not None and converted.model is not None
    assert (converted.plan.dp, converted.plan.zero, converted.plan.attention) == (8, 3, "flash")
    assert converted.model.bias and converted.model.tied_embeddings  # GPT-style: no gated MLP
    assert converted.model.dropout and convert(_record(dropout=None)).model.dropout  # not printed: Megatron's
    assert convert(_record(dropout=False)).model.dropout is False
    tensor = dict(tp=2, dp=4, zero=1)  # sequence parallelism: assumed with tp > 1 unless the record says not
    assert convert(_record(**tensor)).plan.sequence_parallel
    assert not convert(_record(**tensor, sequence_parallel=False)).plan.sequence_parallel
    assert not convert(_record(sequence_parallel=True)).plan.sequence_parallel  # nothing to split at tp 1
    assert convert(_record(fp32_grad_buffer=True)).plan.fp32_grad_buffer
    assert convert(_record()).plan.dp_overlap and not convert(_record(dp_overlap=False)).plan.dp_overlap
    assert convert(_record(micro_batch=None)).reason == "not published: micro_batch"
    assert convert(_record(recompute="unknown")).reason == "not published: recompute"
    assert convert(_record(gpu="B200")).reason == "no GPU preset for 'B200'"
    printed_twice = convert(_record(contradiction="GBS 256 is not DP·MBS·GradAcc = 4096"))
    assert printed_twice.reason == "contradicts itself as printed: GBS 256 is not DP·MBS·GradAcc = 4096"
    assert printed_twice.plan is None  # information: no configuration is guessed
    moe = convert(_record(experts=8, top_k=2, ffn=1024, ep=4))  # ``ffn`` is an expert's width
    assert moe.judged and isinstance(moe.model, MoETransformer) and moe.plan is not None and moe.plan.ep == 4
    assert (moe.model.experts, moe.model.top_k, moe.model.expert_ffn, moe.model.ffn) == (8, 2, 1024, 2 * 1024)
    assert convert(_record(experts=8, top_k=2, moe_every=2)).reason.startswith("not representable: MoE blocks")
    assert convert(_record(tp=8, dp=1, heads=4, hidden=4096)).reason.startswith("not representable: heads (4)")


def test_a_published_mfu_is_read_as_tokens_per_second():
    """MFU × peak / (model FLOPs a token): 0.5 × 989.4 TFLOP/s / (training FLOPs of 32 sequences / their tokens)."""
    converted = convert(_record())
    model = converted.model
    per_token = ta.training_flops(model, 32, "none") / (32 * 2048)
    assert published_tokens_per_s(converted) == pytest.approx(0.5 * 989.4e12 / per_token)
    fp8 = convert(_record(precision="fp8"))  # an FP8 run's MFU is read against the FP8 peak
    assert published_tokens_per_s(fp8) == pytest.approx(0.5 * 1978.9e12 / per_token)
    tokens = convert(_record(metric="tokens_per_s_per_gpu", value=1234.0))
    assert published_tokens_per_s(tokens) == 1234.0


def test_a_sweep_cells_tie_is_the_pick_and_what_the_model_cannot_rank_from_it(judgements):
    """The tie widens with the error allowed: the pick alone at zero (unless another predicts the same), every
    fitting configuration at a huge one, and then it holds the fastest measured whenever that fits."""
    import math

    cell = next(c for c in sweep_cells(judgements) if c.source == "tazi2025ultrascale" and len(c.rows) >= 10)
    pick = cell.pick
    assert pick is not None and pick.prediction is not None
    assert pick in cell.ties(0.0) and all(j.prediction.tokens_per_s == pick.prediction.tokens_per_s
                                          for j in cell.ties(0.0))
    fitting = [j for j in cell.rows if j.prediction.fits]
    assert cell.ties(100.0) == tuple(fitting)
    assert cell.tie_holds_fastest(100.0) == (cell.fastest in fitting)
    sizes = [len(cell.ties(w)) for w in (0.0, 0.05, 0.15, 0.5, 100.0)]
    assert sizes == sorted(sizes)
    limit = pick.prediction.tokens_per_s * math.exp(-0.15)
    assert all(j.prediction.tokens_per_s >= limit for j in cell.ties(0.15))


def test_the_picks_among_a_sweeps_measured_configurations_hold_their_floor(judgements):
    """Each cell's pick is a measured configuration the model says fits; its score is measured over best measured."""
    cells = sweep_cells(judgements)
    assert cells and all(len(c.rows) >= 5 for c in cells)
    for cell in cells:
        pick = cell.pick
        assert pick is None or (pick in cell.rows and pick.prediction is not None and pick.prediction.fits)
        assert 0.0 <= cell.score <= 1.0
    assert sum(c.score >= PICK_GOAL[0] for c in cells) >= PICKS_WITHIN_AT_LEAST
