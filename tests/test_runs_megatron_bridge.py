"""Megatron-Bridge's performance-summary rows as the two pages print them."""

from d2lmp.bibliography import SOURCES as BIBLIOGRAPHY
from d2lmp.model.cluster.convert import convert
from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.megatron_bridge import _ROWS, RECORDS


def _one(where: str, row: str):
    (found,) = [r for r in RECORDS if where in r.where and r.row.startswith(row)]
    return found


def test_rows_per_system_and_release():
    assert len(RECORDS) == 103 and "megatron_bridge" in SOURCES and "megatron_bridge_performance" in BIBLIOGRAPHY
    assert sum(r.gpu == "H100-SXM" for r in RECORDS) == 20
    assert sum(r.where.startswith("docs/performance-summary-archive.md, 25.11") for r in RECORDS) == 28


def test_spot_values():
    r = _one("25.11", "25.11 LLAMA3.1_405B, DGX-H100")
    assert (r.value, r.gpus, r.tp, r.pp, r.cp, r.dp, r.interleave, r.global_batch) == (292, 1024, 8, 8, 2, 8, 8, 512)
    r = _one("25.09", "25.09 DeepSeekV3 (dropless), DGX-H100")
    assert (r.value, r.gpus, r.ep, r.experts, r.precision) == (1297, 1024, 64, 256, "unknown")
    assert _one("26.08", "26.08 Qwen3_235B_a22B, DGX-GB300").value == 8816


def test_printed_gradient_accumulation_matches_the_layout_but_in_two_rows():
    mismatched = []
    for row in _ROWS:
        gpus, gbs, mbs, tp, pp, cp, ga = row[6], row[7], row[8], row[11], row[12], row[13], row[16]
        assert gpus % (tp * pp * cp) == 0
        if ga is not None and gbs != ga * mbs * gpus // (tp * pp * cp):
            mismatched.append(row[1:5])
    # The page's own inconsistencies (GA 32 where GBS/(MBS·DP) is 64; GA 2 where it is 8): information, with why.
    assert mismatched == [("25.11", 559, "Qwen3_235B_a22B", "GB300"), ("25.11", 592, "GPT OSS 120B", "H100")]
    contradicting = [r for r in RECORDS if r.contradiction]
    assert [r.where.split("line ")[1] for r in contradicting] == ["559", "592"]
    reason = convert(contradicting[1]).reason
    assert reason == ("contradicts itself as printed: GBS 512 is not DP·MBS·GA = 16·4·2 = 128, and the page does not "
                      "say which figure is wrong")
