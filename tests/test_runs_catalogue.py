"""The run tables of the H100-era sources together: each row placed in its source, and the kinds of run the cluster
model's validation needs (H100 and newer, FSDP, over 1,000 GPUs, mixtures of experts, FP8) all present."""

from collections import Counter
from importlib import import_module

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES

MODULES = ("llama3", "deepseek_v3", "torchtitan", "ultrascale", "megatron_bridge", "megatron_lm", "nemo")


def _records():
    return [r for name in MODULES for r in import_module(f"d2lmp.model.cluster.runs.{name}").RECORDS]


def test_every_row_names_its_source_and_place():
    assert set(MODULES) <= set(SOURCES)
    for r in _records():
        assert r.source in BIBLIOGRAPHY and r.where.strip() and r.row.strip(), r.row
        # every row is validation but the table the two fixed times are fitted on (runs/ultrascale.py): the sweep's
        # rows without a pipeline on one node, and those whose tensor group is the whole cluster
        calibration = r.source == "tazi2025ultrascale" and r.pp == 1 and (r.gpus == 8 or r.tp == r.gpus)
        assert (r.use == "calibration") == calibration, r.row


def test_rows_are_distinct_within_each_source_but_for_repeated_measurements():
    repeats = Counter((r.source, r.where, r.row) for r in _records())
    # The Ultra-Scale sweep measured five layouts two or three times; every other row is printed once.
    assert {key[0] for key, n in repeats.items() if n > 1} <= {"tazi2025ultrascale"}
    assert sum(n - 1 for n in repeats.values()) == 7


def test_the_kinds_of_run_the_validation_needs_are_there():
    records = _records()
    assert len(records) > 150 and len({r.source for r in records}) >= 4
    assert sum(r.gpu == "H100-SXM" for r in records) > 100
    assert any(r.zero == 3 for r in records) and any(r.gpus > 1000 for r in records)
    assert any(r.experts > 1 and r.gpu == "H100-SXM" for r in records)
    assert any(r.precision == "fp8" and r.gpu == "H100-SXM" for r in records)
    assert any(r.experts > 1 and r.precision == "fp8" and r.gpus > 1000 for r in records)  # DeepSeek-V3
