"""The llm-foundry benchmark rows as the README prints them: counts per table, spot values, and the columns agreeing."""

from collections import Counter

import pytest

from d2lmp.model.cluster.runs import SOURCES, records
from d2lmp.model.cluster.runs.llm_foundry import RECORDS, SHAPES, TABLE_ROWS, VOCAB

# The peak each table's MFU divides by (TFLOP/s per GPU), by GPU column and precision.
PEAK = {("a100_80gb", "bf16"): 312, ("a100_40gb", "bf16"): 312, ("h100_80gb", "bf16"): 989, ("h100_80gb", "fp8"): 1979}


def test_rows_per_table_as_in_the_readme():
    counts = Counter(row["table"] for row in TABLE_ROWS)
    assert counts == {"H100 80GB BF16 (Large Scale, >= 128 GPUs)": 18, "H100 80GB BF16": 52, "H100 80GB FP8": 7,
                      "A100 80GB with 1600 Gbps node-node interconnect (RoCE)": 61,
                      "A100 40GB with 1600 Gbps node-node interconnect (RoCE)": 78}
    assert "llm_foundry" in SOURCES and len([r for r in records() if r.source == "llm_foundry_benchmarks"]) == 216


def test_spot_rows():
    first = RECORDS[0]  # README line 75: 70b | 2048 | 512 | h100_80gb | 41.25 | 55.0 | 408 | 8 | 1 | 4096 ...
    assert (first.layers, first.hidden, first.gpus, first.gpu, first.value, first.micro_batch, first.global_batch,
            first.zero, first.recompute) == (80, 8192, 512, "H100-SXM", 0.4125, 8, 4096, 3, "full")
    a100 = next(r for r in RECORDS if r.where.endswith("line 166"))  # 70b | 2048 | 64 | a100_80gb | 53.33 | 71.1
    assert (a100.gpu, a100.gpus, a100.value, a100.micro_batch) == ("A100-80GB", 64, 0.5333, 8)
    fp8 = [r for r in RECORDS if r.precision == "fp8"]
    assert len(fp8) == 7 and all(r.gpu == "H100-SXM" for r in fp8)


@pytest.mark.parametrize("row", TABLE_ROWS, ids=lambda r: r["line"])
def test_columns_agree(row):
    """The assumed shapes give the published NumParams; batch = micro · accumulation · GPUs; and the published MFU
    follows from the throughput by the README's formula over the table's peak."""
    layers, d, _ = SHAPES[row["model"]]
    seq, gpus = int(row["seq"]), int(row["gpus"])
    assert layers * (12 * d * d + 13 * d) + VOCAB * d + seq * d + 2 * d == int(row["params"])
    assert int(row["micro"]) * int(row["accum"]) * gpus == int(row["global"])
    peak = PEAK[(row["gpu"], "fp8" if row["precision"] == "amp_fp8" else "bf16")] * 1e12
    flops_per_token = 6 * int(row["params"]) + 12 * layers * d * seq
    mfu = flops_per_token * int(row["tokens_per_gpu"]) / peak
    assert mfu == pytest.approx(float(row["mfu"]) / 100, rel=0.01, abs=0.001)
    assert int(row["tflop"]) == pytest.approx(float(row["mfu"]) / 100 * peak / 1e12, abs=1.01)


def test_every_row_is_complete_and_validation():
    assert all(r.complete and r.use == "validation" and r.tp * r.pp * r.dp == r.gpus for r in RECORDS)
