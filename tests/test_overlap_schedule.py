"""The overlap schedules: operations start when their lane is free and their inputs are ready; prefetching and
decomposition end sooner by the arithmetic of their timelines; contention makes overlap cost time."""

import matplotlib
import pytest

from d2lmp.model.overlap_schedule import COMM, COMPUTE, Op, finish, fsdp_ops, schedule, tp_matmul_ops
from d2lmp.views.overlap_schedule import plot_schedules

matplotlib.use("Agg")


def test_an_operation_waits_for_its_lane_and_its_inputs():
    spans = {s.name: s for s in schedule([Op("a", COMM, 2.0), Op("b", COMPUTE, 1.0), Op("c", COMPUTE, 1.0, ("a",)),
                                          Op("d", COMM, 0.5)])}
    assert (spans["b"].start, spans["b"].end) == (0.0, 1.0)  # nothing to wait for
    assert (spans["c"].start, spans["c"].end) == (2.0, 3.0)  # waits for a, though its lane is free at 1
    assert (spans["d"].start, spans["d"].end) == (2.0, 2.5)  # waits for its lane


def test_contention_stretches_only_the_overlapped_part():
    ops = [Op("gather", COMM, 1.0), Op("compute", COMPUTE, 2.0)]
    assert finish(schedule(ops)) == 2.0
    assert finish(schedule(ops, slowdown=1.5)) == pytest.approx(2.0 + 0.5 * 1.0)


def test_plain_and_decomposed_matmul_end_where_their_timelines_say():
    ranks, matmul, chunk = 4, 4.0, 0.8
    assert finish(schedule(tp_matmul_ops(ranks, matmul, chunk, False))) == pytest.approx((ranks - 1) * chunk + matmul)
    # each chunk arrives before the product of the one before it ends: only the products remain
    assert finish(schedule(tp_matmul_ops(ranks, matmul, chunk, True))) == pytest.approx(matmul)
    slow = schedule(tp_matmul_ops(ranks, 4.0, 2.0, True))  # slow transfers: the last product waits for its chunk
    assert finish(slow) == pytest.approx((ranks - 1) * 2.0 + matmul / ranks)


def test_prefetching_ends_sooner_and_contention_gives_back_part_of_it():
    plain, prefetch = (finish(schedule(fsdp_ops(4, 1.0, 0.6, p))) for p in (False, True))
    contended = finish(schedule(fsdp_ops(4, 1.0, 0.6, True), slowdown=1.3))
    # without prefetching each gather waits for the computation before it, and in backward also queues behind the
    # reduce-scatter issued before it on the communication stream
    assert plain == pytest.approx(4 * (0.6 + 1.0) + (0.6 + 2.0) + 3 * (0.6 + 0.6 + 2.0) + 0.6)
    assert prefetch < contended < plain
    names = [op.name for op in fsdp_ops(3, 1.0, 0.6, True)]
    assert names.index("gather 2'") < names.index("reduce-scatter 3")  # ahead of the reduce-scatter on the stream


def test_bad_schedules_are_refused():
    with pytest.raises(ValueError, match="issued after it"):
        schedule([Op("b", COMPUTE, 1.0, ("a",)), Op("a", COMM, 1.0)])
    with pytest.raises(ValueError, match="slowdown"):
        schedule([Op("a", COMM, 1.0)], slowdown=0.5)


def test_the_picture_has_a_panel_per_schedule_and_names_each_bar():
    plans = {name: schedule(tp_matmul_ops(4, 4.0, 0.8, d)) for name, d in (("plain", False), ("decomposed", True))}
    fig = plot_schedules(plans, title="t")
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title(loc="left") == "plain: ends at 6.4"
    assert fig.axes[1].get_title(loc="left") == "decomposed: ends at 4"
    assert "matmul, chunk 3" in {t.get_text() for t in fig.axes[1].texts}
