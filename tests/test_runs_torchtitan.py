"""torchtitan's benchmark rows as the benchmark files print them."""

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.runs import SOURCES, records
from d2lmp.model.cluster.runs.torchtitan import RECORDS


def _row(where: str, row: str):
    (found,) = [r for r in RECORDS if where in r.where and r.row == row]
    return found


def test_rows_per_table():
    per_table = {t: sum(f", Table {t}" in r.where for r in RECORDS) for t in range(1, 7)}
    assert per_table == {1: 3, 2: 4, 3: 3, 4: 2, 5: 2, 6: 4}
    assert sum("asyncTP" in r.where for r in RECORDS) == 12 and sum(r.gpu == "H200" for r in RECORDS) == 2


def test_spot_values():
    assert _row("Table 1", "FSDP + torch.compile + Float8").value == 8532
    assert _row("Table 6", "FSDP 2, CP 4").value == 31 and _row("Table 6", "FSDP 2, CP 4").seq == 131072
    assert _row("Table 5", "Interleaved 1F1B").memory_gb == round(72.7 * 1.073741824, 1)
    assert _row("70b", "float8 tensorwise, Async TP").value == 942.4


def test_layouts_fill_the_gpus_and_the_source_is_listed():
    for r in RECORDS:
        assert r.tp * r.pp * r.dp * r.cp == r.gpus
        assert r.global_batch == r.dp * r.micro_batch * r.pp  # pipeline microbatches = pipeline degree
    assert "torchtitan" in SOURCES and len([r for r in records() if r.source == "torchtitan_benchmarks"]) == 32
    assert "torchtitan_benchmarks" in BIBLIOGRAPHY
