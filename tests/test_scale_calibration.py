"""The published tables as transcribed, the fit that gives the stored parameters, and the ratios it achieves."""

from dataclasses import fields, replace

import pytest

from d2lmp.bibliography import SOURCES
from d2lmp.model import transformer_accounting as ta
from d2lmp.model.cluster.calibration import GOAL, compare, fit, fit_all, fixed_cost_objective, objective
from d2lmp.model.cluster.efficiency import BOUNDS, FITTED, FIXED_COSTS, RATES, describe
from d2lmp.model.cluster.published import (
    CHECKED_TABLES,
    KORTHIKANTI_TABLE,
    MEGATRON_GPT3,
    NARAYANAN_TABLE1,
    NARAYANAN_TABLE2,
)
from d2lmp.model.cluster.report import calibration_report, format_calibration

# Narayanan et al. (2021), Table 1: the columns the data table does not hold, to check its transcription
# against: parameters (billions) and achieved aggregate petaFLOP/s.
TABLE1_PARAMETERS = (1.7, 3.6, 7.5, 18.4, 39.1, 76.1, 145.6, 310.1, 529.6, 1008.0)
TABLE1_AGGREGATE = (4.4, 8.8, 18.2, 34.6, 70.8, 143.8, 227.1, 297.4, 410.2, 502.0)
# Korthikanti et al. (2022), Table 5: model and hardware FLOPs utilisation of the selective + SP runs.
KORTHIKANTI_MFU_HFU = {"22B": (41.5, 43.7), "175B": (51.4, 52.8), "530B": (56.0, 57.0), "1T": (56.3, 57.0)}
# The calibration table's ratios (predicted / published) with the stored parameters: the model's record.
TABLE1_RATIOS = (0.997, 1.006, 1.000, 1.008, 0.957, 1.030, 0.999, 1.024, 1.007, 0.978)


def test_table1_is_transcribed_consistently():
    assert len(NARAYANAN_TABLE1) == 10
    for run, billions, aggregate in zip(NARAYANAN_TABLE1, TABLE1_PARAMETERS, TABLE1_AGGREGATE, strict=True):
        m = run.model
        assert ta.narayanan_parameters(m.layers, m.hidden, m.vocab, m.seq) / 1e9 == pytest.approx(billions, abs=0.06)
        assert run.published * run.plan.gpus / 1000 == pytest.approx(aggregate, rel=0.005)
        assert run.plan.gpus % 8 == 0 and run.plan.recompute == "full" and run.gpu == "A100-80GB"
        assert all(k in SOURCES for k in run.source)


def test_korthikantis_times_give_their_published_utilisation():
    """The iteration times as transcribed reproduce the MFU the paper prints next to them, and its HFU under the
    paper's own count of recomputed FLOPs: the attention term s/(6h) doubled to s/(3h), 12·b·s²·h per layer
    where ``training_flops`` adds one forward of the attention core, 4·b·s²·h (the comparison is of times)."""
    for run in KORTHIKANTI_TABLE:
        if run.plan.recompute != "selective":
            continue
        mfu, hfu = KORTHIKANTI_MFU_HFU[run.row.split(",")[0]]
        m, batch, gpus, peak = run.model, run.plan.global_batch, run.plan.gpus, 312e12
        model_flops = ta.training_flops(m, batch, "none")
        assert 100 * model_flops / run.published / gpus / peak == pytest.approx(mfu, abs=0.2)
        s, h, extra = m.seq, m.hidden, m.vocab / (12 * m.layers * m.hidden)
        paper_hardware = model_flops * (1 + s / (3 * h) + extra) / (1 + s / (6 * h) + extra)
        assert 100 * paper_hardware / run.published / gpus / peak == pytest.approx(hfu, abs=0.2)
        assert ta.training_flops(m, batch, "selective") < paper_hardware


def test_table2_runs_keep_their_global_batch_per_scheme():
    zero = [r for r in NARAYANAN_TABLE2 if r.plan.zero == 3]
    assert len(zero) == 6 and all(r.plan.tp == r.plan.pp == 1 for r in zero)
    ptdp = [r for r in NARAYANAN_TABLE2 if r.plan.zero == 0]
    assert {r.plan.tp * r.plan.pp for r in ptdp} == {96, 280}  # the model-parallel sizes of Table 2


def test_megatrons_gpt3_example_counts_the_recomputed_flops():
    """The README's 32 s an iteration and 138 teraFLOP/s per GPU agree with each other when the FLOPs count a full
    recomputation (Narayanan et al.'s eq. (3)), not with the model FLOPs: hence the assumed recomputation."""
    (run,) = MEGATRON_GPT3
    m, batch, gpus = run.model, run.plan.global_batch, run.plan.gpus
    assert (run.plan.tp, run.plan.pp, run.plan.dp, gpus, batch) == (8, 16, 8, 1024, 1536)
    per_gpu = ta.training_flops(m, batch, "full") / run.published / gpus / 1e12
    assert per_gpu == pytest.approx(138, rel=0.01) and run.plan.recompute == "full"
    assert ta.training_flops(m, batch, "none") / run.published / gpus / 1e12 < 110


@pytest.mark.slow
def test_the_stored_parameters_are_the_fit():
    """The rates from Table 1; the fixed times from the records declared for calibration, the rates held; the two
    alternated until the rates stop moving."""
    fitted = fit_all()
    for name in (*RATES, *FIXED_COSTS):
        tolerance = {"host_ms": 1e-2, "network_us": 0.1}.get(name, 1e-3)
        assert getattr(fitted, name) == pytest.approx(getattr(FITTED, name), abs=tolerance), name
        low, high = BOUNDS[name]
        assert low < getattr(FITTED, name) < high, f"{name} sits on its bound: the fit is not a minimum"
    assert [f.name for f in fields(FITTED)] == [*RATES, *FIXED_COSTS]  # every parameter is fitted, on one table each


@pytest.mark.slow
def test_the_rates_refit_with_the_fitted_times_held_stay_put():
    """The alternation has converged: Table 1 refit with the stored host time and network α gives the stored rates."""
    again = fit(held=FITTED)
    for name in RATES:
        assert getattr(again, name) == pytest.approx(getattr(FITTED, name), abs=2e-3), name


def test_the_fit_is_a_minimum():
    best = objective(FITTED)
    for name in RATES:
        for factor in (0.95, 1.05):
            assert objective(replace(FITTED, **{name: getattr(FITTED, name) * factor})) > best, name
    latency_best = fixed_cost_objective(FITTED)
    for name in FIXED_COSTS:
        for factor in (0.95, 1.05):
            assert fixed_cost_objective(replace(FITTED, **{name: getattr(FITTED, name) * factor})) > latency_best, name


def test_the_host_never_holds_back_the_calibration_table_of_the_rates():
    """No block of Table 1 runs shorter than the host's launches, so the host plays no part in the rates' fit: Table
    1 is predicted alike with the fitted host and with none."""
    without = [c.predicted for c in compare(NARAYANAN_TABLE1, replace(FITTED, host_ms=0.0))]
    assert [c.predicted for c in compare(NARAYANAN_TABLE1)] == without
    assert all(c.prediction.parts["host"] == 0.0 for c in compare(NARAYANAN_TABLE1))


def test_calibration_ratios_are_the_recorded_ones():
    ratios = [c.ratio for c in compare(NARAYANAN_TABLE1)]
    assert ratios == pytest.approx(TABLE1_RATIOS, abs=0.002)


# The rows the model misses, and on which side: DeepSpeed's ZeRO-3 of 2021 ran at about one InfiniBand adapter's rate
# per GPU, where NCCL's rings over a node's eight adapters (the model's network) would run it up to eight times faster.
KNOWN_MISSES = {"ZeRO-3 174.6B, 384 GPUs", "ZeRO-3 174.6B, 768 GPUs", "ZeRO-3 174.6B, 1536 GPUs",
                "ZeRO-3 529.6B, 640 GPUs", "ZeRO-3 529.6B, 1120 GPUs", "ZeRO-3 529.6B, 2240 GPUs"}


def test_every_row_of_every_table_is_within_the_goal_but_the_known_misses():
    report = calibration_report()
    outside = {c.run.row: c.ratio for rows in report.tables.values() for c in rows if not GOAL[0] <= c.ratio <= GOAL[1]}
    assert set(outside) == KNOWN_MISSES and all(ratio > GOAL[1] for ratio in outside.values())
    assert set(report.tables) == {"Narayanan et al. 2021, Table 1 (calibration)", *CHECKED_TABLES}


def test_every_published_configuration_fits_in_memory():
    report = calibration_report()
    assert all(c.prediction.fits for rows in report.tables.values() for c in rows)


def test_the_report_prints_every_row_and_the_goal_line():
    text = format_calibration(calibration_report())
    assert text.count("goal 0.8-1.25 on every row: met") == len(CHECKED_TABLES)  # all but Table 2's ZeRO-3 rows
    assert all(run.row in text for run in NARAYANAN_TABLE1 + NARAYANAN_TABLE2 + KORTHIKANTI_TABLE)
    assert all(name in describe() for name in BOUNDS)
