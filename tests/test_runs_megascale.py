"""MegaScale's rows as the paper prints them: Table 2's 16 runs, Table 3's baseline and Figure 9's six bars."""

from collections import Counter

import pytest

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES, records
from d2lmp.model.cluster.runs.megascale import _ROWS, RECORDS, SEQ


def test_rows_per_table():
    places = Counter(r.where.split(", ")[1] for r in RECORDS)
    assert places == {"Table 2": 16, "Table 3": 1, "Figure 9": 6}
    assert "megascale" in SOURCES and RECORDS[0].source in BIBLIOGRAPHY
    assert sum(r.source == "jiang2024megascale" for r in records()) == 23


def test_headline_row_and_layouts():
    top = next(r for r in RECORDS if r.gpus == 12288 and "MegaScale" in r.row)
    assert (top.row, top.value, top.tp, top.pp, top.dp, top.interleave) == (
        "175B MegaScale, batch 6144, 12288 GPUs", 0.552, 8, 8, 192, 6)
    big = [r for r in RECORDS if r.layers == 105]
    assert all(r.global_batch == r.gpus and r.tp * r.pp * r.dp == r.gpus and r.pp == 35 for r in big)
    # "higher than Megatron-LM by up to 6.1 %" (§6.1) at 11,200 GPUs
    by = {(r.row.split()[1].rstrip(","), r.gpus): r.value for r in big}
    assert max(by["MegaScale", g] - by["Megatron-LM", g] for g in (2240, 4480, 11200)) == pytest.approx(0.061)


@pytest.mark.parametrize("row", [r for r in _ROWS if r[6] is not None], ids=lambda r: f"{r[2]}-{r[3]}")
def test_table2_throughput_is_batch_over_iteration_time(row):
    _, _, _, _, batch, _, step, tokens = row
    assert batch * SEQ / step == pytest.approx(tokens, rel=0.01)


# Table 2's Aggregate PFlops/s column, in the order of its rows.
AGGREGATE = (43.3, 77.6, 111.9, 131.9, 52.2, 101.4, 146.9, 188.5, 466.8, 916.3, 1106.7, 1579.5, 566.5, 1098.4, 1400.6,
             2166.3)


def test_table2_mfu_is_aggregate_over_a100_peak():
    """The MFU column is Aggregate PFlops/s over GPUs · 312 TFLOP/s (A100), except the four rows the module names."""
    table2 = [r for r in _ROWS if r[0] == "Table 2"]
    off = {(r[2], r[3]): round(100 * p / (r[3] * 0.312) - r[5], 1) for r, p in zip(table2, AGGREGATE)
           if abs(100 * p / (r[3] * 0.312) - r[5]) > 0.15}
    assert off == {("Megatron-LM", 256): 1.2, ("Megatron-LM", 512): -1.3, ("Megatron-LM", 1024): -3.4,
                   ("MegaScale", 12288): 1.3}
