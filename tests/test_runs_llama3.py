"""Llama 3's Table 4 as the paper prints it."""

from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.llama3 import RECORDS


def test_table_4():
    assert "llama3" in SOURCES and len(RECORDS) == 3
    assert [(r.gpus, r.cp, r.dp, r.seq, r.value) for r in RECORDS] == [
        (8192, 1, 64, 8192, 0.43), (16384, 1, 128, 8192, 0.41), (16384, 16, 8, 131072, 0.38)]


def test_every_row_fills_its_gpus_with_16m_tokens_a_batch():
    for r in RECORDS:
        assert r.tp * r.cp * r.pp * r.dp == r.gpus
        assert r.global_batch * r.seq == 16 * 2**20  # "16M" tokens per batch
        assert r.layers == 126 and r.pp == 16  # 126 layers do not divide over 16 stages
