"""NeMo's performance tables as the two documentation pages print them."""

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.nemo import RECORDS


def _one(where: str, row: str):
    (found,) = [r for r in RECORDS if where in r.where and r.row == row]
    return found


def test_rows_per_table():
    assert "nemo" in SOURCES and "nemo_performance" in BIBLIOGRAPHY
    assert sum("performance_summary.md" in r.where for r in RECORDS) == 12
    assert sum("H100' (NeMo 24.03.01)" in r.where for r in RECORDS) == 9 + 6
    assert sum(r.gpu == "B200" for r in RECORDS) == 8 + 5


def test_spot_values():
    r = _one("performance_summary.md", "GPT3-175B, 512 GPUs")
    assert (r.value, r.global_batch, r.micro_batch, r.tp, r.pp, r.dp, r.interleave) == (825, 2048, 2, 4, 8, 16, 6)
    assert _one("summary", "LLAMA3-70B, 64 GPUs").cp == 2
    r = _one("H100", "1024K, with CP")
    assert (r.value, r.seq, r.tp, r.dp, r.cp, r.global_batch) == (536, 1048576, 8, 4, 32, 4)
    assert _one("H100", "1024K, without CP").value == 26.5 and _one("H100", "1024K, without CP").tp is None


def test_layouts_fill_the_gpus_where_printed_consistently():
    for r in RECORDS:
        if r.dp is not None:
            assert r.tp * r.pp * r.dp * r.cp == r.gpus
    assert all(r.dp is None for r in RECORDS if r.gpu == "B200")
