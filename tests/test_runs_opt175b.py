"""OPT-175B's row as the paper prints it (§2.4, Table 1), its layout adding up to the 992 GPUs."""

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.opt175b import RECORDS


def test_the_published_run():
    (run,) = RECORDS
    assert "opt175b" in SOURCES and run.source in BIBLIOGRAPHY
    assert (run.layers, run.heads, run.hidden, run.seq, run.gpus, run.value) == (96, 96, 12288, 2048, 992, 147.0)
    assert run.tp * run.pp * run.dp == run.gpus and run.zero == 3 and run.counts_recompute is None
    assert not run.complete  # batch in sequences, vocabulary and recomputation are not stated: printed as info
