"""Megatron-Core's H100 scaling table as the README's image prints it."""

from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.megatron_lm import _WEAK, RECORDS


def test_rows_and_spot_values():
    assert "megatron_lm" in SOURCES and len(RECORDS) == 9 + 2
    by_row = {r.row: r for r in RECORDS}
    assert by_row["462B, 6144 GPUs"].value == 459.9 and by_row["462B, 6144 GPUs"].pp == 16
    assert by_row["GPT-3 175B, 4608 GPUs"].value == 0.42


def test_the_printed_columns_agree_with_each_other():
    for _size, _h, _w, _l, tp, pp, dp, gpus, _b, tflops, mfu, aggregate in _WEAK:
        assert tp * pp * dp == gpus
        assert abs(tflops * gpus / 1000 - aggregate) < 0.1  # aggregate petaFLOP/s = per-GPU × GPUs
        assert abs(tflops / 989 - mfu) < 0.006  # MFU against the H100 SXM's dense BF16 peak
