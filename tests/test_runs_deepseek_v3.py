"""DeepSeek-V3's pre-training row as the report states it."""

from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.deepseek_v3 import RECORDS


def test_gpu_hours_become_tokens_per_second_per_gpu():
    (r,) = RECORDS
    assert "deepseek_v3" in SOURCES
    # Table 1: 2,664K GPU hours for 14.8T tokens, the same rate as 180K GPU hours per trillion.
    assert abs(r.value - 14.8e12 / (2664e3 * 3600)) < 1.0
    assert r.pp * r.dp == r.gpus == 2048 and r.ep == 64 and r.precision == "fp8" and r.experts == 256
