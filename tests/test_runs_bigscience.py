"""BigScience's BLOOM-176B rows as the repository prints them: the run, the sweep's tables, and TFLOPs from Sec/it."""

from collections import Counter

import pytest

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES, records
from d2lmp.model.cluster.runs.bigscience_tr11 import BEST, RECORDS, RUN, SEQ, SWEEP_ROWS, VOCAB


def _tflops(gbs: int, layers: int, hidden: int, seconds: float, gpus: int) -> float:
    """Megatron-DeepSpeed's logged TFLOPs: 96·B·s·l·h²·(1 + s/6h + V/16lh) over time and GPUs."""
    s, h, v = SEQ, hidden, VOCAB
    return 96 * gbs * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h)) / (seconds * gpus) / 1e12


def test_rows_and_sections():
    assert "bigscience_tr11" in SOURCES and RECORDS[0].source in BIBLIOGRAPHY
    assert len(RUN) == 3 and len(BEST) == 6 and len(SWEEP_ROWS) == 110 and len(RECORDS) == 119
    assert sum(r.source == "bigscience_tr11" for r in records()) == 119
    sections = Counter(r.where.split("section ")[1].split("'")[1] for r in RECORDS[9:])
    assert sections["GBS Variations"] == 25 and sections["Rebalancing layers"] == 20
    assert [r.row.split(":")[0] for r in RECORDS if r.metric == "oom"] == [
        "181B h14336 l72 heads 64", "181B h14336 l72 heads 64", "181B h14336 l72 heads 64",
        "184B h12288 l100 heads 64", "184B h12288 l100 heads 64", "206B h14336 l82 heads 128"]


def test_the_run_as_printed():
    final = RUN[0]  # README line 663: ... elapsed time per iteration (s): 104.70 ... TFLOPs: 149.77
    assert (final.layers, final.hidden, final.heads, final.tp, final.pp, final.dp, final.micro_batch) == (
        70, 14336, 112, 4, 12, 8, 2)
    assert _tflops(2048, 70, 14336, 104.70, 384) == pytest.approx(final.value, rel=1e-3)
    assert _tflops(16, 70, 14336, 15.23, 384) == pytest.approx(RUN[1].value, rel=1e-2)  # line 245: 8.04
    bloom = next(r for r in RECORDS if r.where.endswith("line 948"))  # the sweep's row of BLOOM's layout
    assert (bloom.value, bloom.memory_gb, bloom.heads, bloom.precision) == (150.05, 59.0, 112, "bf16")


def test_no_sequence_parallelism_and_the_bf16_optimizers_fp32_buffer():
    """tr11-176B-ml.slurm sets neither --sequence-parallel nor --partition-activations: each tensor rank keeps a
    layer's whole input. The BF16 optimizer ("Rebalancing layers" on, and the run) adds an unsharded FP32 gradient
    buffer; the FP16 rows before it do not."""
    from d2lmp.model.cluster.convert import convert

    assert all(r.sequence_parallel is False and r.dp_overlap is False for r in RECORDS)  # DeepSpeed's pipeline
    assert all(c.plan is None or not c.plan.sequence_parallel for c in map(convert, RECORDS))
    assert all(r.fp32_grad_buffer for r in RUN)
    sweep = RECORDS[len(RUN) + len(BEST):]
    assert all(r.fp32_grad_buffer == (r.precision == "bf16") for r in sweep)
    assert sum(r.fp32_grad_buffer for r in sweep) == 20  # the section "Rebalancing layers"
    assert not any(r.fp32_grad_buffer for r in BEST)


@pytest.mark.parametrize("row", [r for r in SWEEP_ROWS if r["tflops"] and r["line"] not in ("648", "670")],
                         ids=lambda r: r["line"])
def test_sweep_tflops_follow_from_iteration_time(row):
    """The shape read above each table gives the printed TFLOPs from the printed Sec/it."""
    gpus = int(row["nodes"]) * 8
    predicted = _tflops(int(row["gbs"]), int(row["layers"]), int(row["hidden"]), float(row["seconds"]), gpus)
    assert predicted == pytest.approx(float(row["tflops"]), rel=2e-3)
    assert int(row["dp"]) * int(row["tp"]) * int(row["pp"]) == gpus


def test_the_two_noted_rows():
    odd = {r["line"]: r for r in SWEEP_ROWS}
    assert _tflops(2048, 80, 13824, 147.04, 320) == pytest.approx(float(odd["648"]["tflops"]), rel=1e-3)
    assert _tflops(2048, 72, 14336, 137.34, 384) / float(odd["670"]["tflops"]) == pytest.approx(1.039, abs=1e-3)


def test_best_tflops_rows_follow_the_early_estimate():
    """'Best TFLOPs' (02-17): the table's TFLOPs are 8·(12·l·h²)·tokens over the logged iteration time and GPUs."""
    printed = (108.47, 98.87, 97.07, 107.48, 97.82, 96.19)
    for run, tflops in zip(BEST, printed):
        estimate = 8 * 12 * run.layers * run.hidden**2 * 2048 * 2048 / (run.value * run.gpus) / 1e12
        assert estimate == pytest.approx(tflops, rel=2e-3)
        assert run.tp * run.pp * run.dp == run.gpus and run.memory_gb is not None
