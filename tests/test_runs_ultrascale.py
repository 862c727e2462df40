"""The Ultra-Scale Playbook's sweep as the figure's hover texts print it."""

from collections import Counter
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from d2lmp.model.cluster.convert import convert
from d2lmp.model.cluster.runs import SOURCES
from d2lmp.model.cluster.runs.ultrascale import _ROWS, NETWORK, RECORDS, cell


def test_rows_and_cells():
    assert "ultrascale" in SOURCES and len(RECORDS) == 1758
    cells = Counter(cell(row[0], row[1]) for row in _ROWS)
    # Models 1B, 3B, 8B, 80B on 1, 2, 4, ..., 64 nodes, but nothing measured for 80B on 1 or 2 nodes.
    assert len(cells) == 4 * 7 - 2 and "80B on 2 nodes" not in cells
    assert cells["80B on 4 nodes"] == 6 and cells["8B on 16 nodes"] == 116


def test_spot_values():
    by_row = {r.row: r for r in RECORDS}
    r = by_row["1B on 1 node: DP 8 TP 1 PP 1 ZeRO 0 MBS 2 GradAcc 16"]  # the figure's first hover text
    assert (r.value, r.gpus, r.zero) == (40150, 8, 0) and "MFU 39.2 %" in r.note
    assert r.memory_gb == pytest.approx(50.2 * 1.073741824)  # printed "GPU memory: 50.2 GB", nanotron's GiB


def test_the_memory_figure_is_rank_0s_reserved_memory_in_gib():
    """nanotron's benchmark CSV (helpers.py, create_table_log) is written on world rank 0, a first-stage GPU, and its
    memory columns divide by 1024**3; the printed figure grows with the micro-batch, so it is the reserved one."""
    assert all(r.memory_measure == "reserved" and r.memory_stage == "first" for r in RECORDS)
    assert all(r.logit_bytes == 8 for r in RECORDS)  # two FP32 copies of the logits at the loss (module docstring)
    by_row = {r.row: r for r in RECORDS}
    small = by_row["1B on 2 nodes: DP 4 TP 4 PP 1 ZeRO 0 MBS 1 GradAcc 64"]
    large = by_row["1B on 2 nodes: DP 4 TP 4 PP 1 ZeRO 0 MBS 16 GradAcc 4"]
    assert (small.memory_gb, large.memory_gb) == pytest.approx((10.3 * 2**30 / 1e9, 67.0 * 2**30 / 1e9))


def test_every_row_is_1m_tokens_and_twelve_print_a_batch_their_layout_does_not_give():
    assert all(row[4] * 4096 == 2**20 for row in _ROWS)
    odd = [row[:9] for row in _ROWS if row[5] * row[2] * row[3] != row[4]]
    assert len(odd) == 12 and ("8B", 32, 1, 64, 256, 64, 1, 4, 0) in odd
    # Which of GBS, DP, MBS and GradAcc is wrong the page does not say: those rows are information, the others not.
    contradicting = [r for r in RECORDS if r.contradiction]
    assert len(contradicting) == 12 and all(convert(r).reason.startswith("contradicts itself") for r in contradicting)
    by_row = {r.row: r for r in contradicting}
    assert by_row["8B on 32 nodes: DP 64 TP 4 PP 1 ZeRO 0 MBS 1 GradAcc 64"].contradiction.startswith(
        "GBS 256 is not DP·MBS·GradAcc = 64·1·64 = 4096")


def test_the_sweep_file_ships_with_the_package():
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert "*.csv" in pyproject["tool"]["setuptools"]["package-data"]["d2lmp.model.cluster.runs"]


def test_the_shapes_give_the_flops_per_token_behind_the_printed_mfu():
    """MFU × 989 TFLOP/s ÷ tokens/s against nanotron's get_flops for the script's shapes (vocabulary 131,072)."""
    from d2lmp.model.cluster.runs.ultrascale import _SHAPES

    def flops_per_token(layers, hidden, _heads, ffn, seq=4096, vocab=131072):
        return 3 * (layers * (8 * hidden**2 + 4 * hidden * seq + 6 * hidden * ffn) + 2 * hidden * vocab)

    ratios = [row[9] / 100 * 989e12 / row[10] / flops_per_token(*_SHAPES[row[0]]) for row in _ROWS if row[9] >= 1]
    assert len(ratios) > 1400 and all(0.89 < r < 1.21 for r in ratios)
    first = next(row for row in _ROWS if row[:9] == ("1B", 1, 2, 16, 256, 8, 1, 1, 0))
    assert abs(first[9] / 100 * 989e12 / first[10] / flops_per_token(*_SHAPES["1B"]) - 1) < 0.001


def test_every_sweep_row_states_all_the_cluster_model_needs():
    assert all(r.complete and r.precision == "bf16" and r.attention == "flash" for r in RECORDS)


def test_each_record_carries_the_playbooks_measured_network_by_node_count_and_fp32_gradients():
    """pp_comm_bandwidth.html's medians (256 MB) on 2 to 64 nodes, e.g. all-reduce 64.9 and all-gather 28 GB/s on
    32; every record carries the whole table, so that each group reads the figure over as many ranks."""
    assert [m.nodes for m in NETWORK] == [2, 4, 8, 16, 32, 64]
    assert NETWORK[4] == (32, 64.9, 28.0) and NETWORK[0] == (2, 361.7, 184.6)
    assert all(r.network_measured == NETWORK and r.fp32_grad_reduce for r in RECORDS)


def test_every_pipelined_row_leaves_its_speed_unjudged_and_no_other():
    """The page does not say which pipeline code a row ran: every row with PP > 1, and only those, has its speed
    counted as information (``RunRecord.speed_unknown``)."""
    assert all(r.pipeline_sends == "unknown" for r in RECORDS)
    assert sum(bool(r.speed_unknown()) for r in RECORDS) == sum((r.pp or 1) > 1 for r in RECORDS) == 1271


def test_the_models_have_the_parameters_of_the_benchmark_scripts_own_estimate():
    """nanotron's scripts/scaling_benchmarks.py (e24d248) ties the embeddings below an MLP of 10,000 (1B and 3B) and
    counts 2·V·h untied or V·h tied, plus l·(3·h·ffn + 4·h²) with as many key/value heads as heads; ours adds the
    norms (2·h a layer, h at the end), nothing else."""
    from d2lmp.model.cluster.convert import convert
    from d2lmp.model.cluster.runs.ultrascale import _SHAPES
    from d2lmp.model.transformer_accounting import parameter_count

    for name, (layers, hidden, _heads, ffn) in _SHAPES.items():
        record = next(r for r in RECORDS if r.row.startswith(f"{name} "))
        tied = ffn < 10_000
        script = (1 if tied else 2) * 131072 * hidden + layers * (3 * hidden * ffn + 4 * hidden * hidden)
        model = convert(record).model
        assert model is not None and model.tied_embeddings == tied == record.tied_embeddings
        assert parameter_count(model).total == script + (2 * layers + 1) * hidden, name
