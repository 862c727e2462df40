"""Arguments that disagree across ranks: a ValueError on every rank naming each rank's values, never an abort
or a wrong answer; the group stays usable after it."""

import pytest
import torch

from d2lmp.bench import agreement as B
from d2lmp.parallel import agreement as A
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel import pipeline as P
from d2lmp.parallel import tensor_parallel as TP
from d2lmp.parallel.all_to_all import all_to_all
from d2lmp.parallel.context_parallel import ring_attention
from d2lmp.parallel.launch import launch


def _refused(call):
    """The message of the ValueError ``call`` raises, or None when it returns."""
    try:
        call()
    except ValueError as err:
        return str(err)
    return None


def _ring(rank, world):
    def qkv(seq=4, head=8, dtype=torch.float32):
        t = torch.ones(1, 2, seq, head, dtype=dtype)
        return t, t.clone(), t.clone()
    other = {"seq": 6} if rank == 1 else {}
    wider = {"head": 16} if rank == 1 else {}
    double = {"dtype": torch.float64} if rank == 1 else {}
    return [_refused(lambda o=o: ring_attention(*qkv(**o))) for o in (other, wider, double)] + [
        _refused(lambda: ring_attention(*qkv(), causal=rank == 0)),
        _refused(lambda: ring_attention(*qkv()))]  # agreeing again: it runs


def test_ring_attention_refuses_other_shapes_dtypes_and_masks_on_every_rank():
    for messages in launch(_ring, 2, backend="gloo"):
        seq, head, dtype, causal, fine = messages
        assert "ring_attention: the ranks disagree" in seq
        assert "rank 0: causal=True, dtype=torch.float32, layout=plain, shape=(1, 2, 4, 8); " \
               "rank 1: causal=True, dtype=torch.float32, layout=plain, shape=(1, 2, 6, 8)" in seq
        assert "shape=(1, 2, 4, 16)" in head and "rank 1: causal=True, dtype=torch.float64" in dtype
        assert "rank 0: causal=True" in causal and "rank 1: causal=False" in causal
        assert fine is None


def _exchange(rank, world):
    rows = 3 if rank == 2 else 4
    blocks = [torch.ones(2, rows) for _ in range(world)]
    return _refused(lambda: all_to_all(blocks)), _refused(lambda: all_to_all([b[:, :3] for b in blocks]))


def test_the_all_to_all_refuses_other_trailing_shapes_on_every_rank():
    for refused, fine in launch(_exchange, 3, backend="gloo"):
        assert "all_to_all: the ranks disagree" in refused
        assert "rank 0: dtype=torch.float32, rows=(4,); rank 1: dtype=torch.float32, rows=(4,); " \
               "rank 2: dtype=torch.float32, rows=(3,)" in refused
        assert fine is None


def _planned(rank, world):
    blocks = [torch.full((2, 3), float(rank)) for _ in range(world)]  # every rank sends 2 rows to every rank
    expects = [1, 2, 2] if rank == 2 else [2, 2, 2]  # rank 2 expects 1 row from rank 0
    buffers = [torch.empty(n, 3) for n in expects]
    given = _refused(lambda: all_to_all(blocks, output_sizes=expects))
    into = _refused(lambda: all_to_all(blocks, out=buffers))
    return given, into, [b[:, 0].tolist() for b in all_to_all(blocks, output_sizes=[2, 2, 2])]


def test_receive_sizes_the_caller_gives_are_checked_against_what_is_sent():
    for given, into, fine in launch(_planned, 3, backend="gloo"):
        for refused in (given, into):
            assert refused == ("all_to_all: the receive sizes given do not match what the ranks send "
                               "(rank 0 sends 2 rows to rank 2, which expects 1)")
        assert fine == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


def _schedules(rank, world):
    spec = DP.MLPSpec((4, 8, 3), seed=0)
    x, y = DP.synthetic_data(spec, 8)
    step = lambda kind, m: P.pipeline_step(rank, world, spec.build, [1, 2], x, y, kind, m)  # noqa: E731
    return (_refused(lambda: step("gpipe" if rank == 0 else "1f1b", 4)),
            _refused(lambda: step("1f1b", 4 if rank == 0 else 2)))


def test_pipeline_ranks_on_other_schedules_or_micro_batch_counts_are_refused():
    for schedule, micro in launch(_schedules, 2, backend="gloo"):
        assert "pipeline_step: the ranks disagree" in schedule
        assert "rank 0: chunks=1, kind=gpipe, micro_batches=4" in schedule and "rank 1: chunks=1, kind=1f1b" in schedule
        assert "kind=1f1b, micro_batches=4" in micro and "kind=1f1b, micro_batches=2" in micro


def _layers(rank, world):
    torch.manual_seed(0)
    column, row = TP.ColumnParallelLinear(torch.nn.Linear(4, 4)), TP.RowParallelLinear(torch.nn.Linear(4, 4), False)
    conv = TP.ChannelParallelConv2d(torch.nn.Conv2d(2, 2, 3))
    x = torch.ones(3 if rank == 0 else 5, 4)
    return (_refused(lambda: column(x)), _refused(lambda: row(x)),
            _refused(lambda: conv(torch.ones(1, 2, 5, 5 + rank))), _refused(lambda: column(torch.ones(3, 4))))


def test_tensor_parallel_layers_refuse_other_batch_sizes():
    for column, row, conv, fine in launch(_layers, 2, backend="gloo"):
        assert "column linear: the ranks disagree" in column and "rank 0: batch=(3,)" in column
        assert "rank 1: batch=(5,)" in row
        assert "rank 0: batch=1, dtype=torch.float32, image=(5, 5); rank 1: batch=1, dtype=torch.float32, " \
               "image=(5, 6)" in conv
        assert fine is None


def test_the_fingerprint_tells_values_apart_and_fits_an_int64():
    a = A.fingerprint({"shape": (1, 2), "dtype": torch.float32})
    assert a == A.fingerprint({"dtype": torch.float32, "shape": (1, 2)})  # the order of the keywords is not a value
    assert a != A.fingerprint({"shape": (1, 3), "dtype": torch.float32})
    assert 0 <= a < 2**62


def test_the_bench_times_the_check_beside_every_call_it_guards():
    costs = B.agreement_costs(2, rounds=2)
    assert [c.call for c in costs] == list(B.GUARDED)
    assert all(c.world == 2 and c.agree_seconds > 0 and c.call_seconds > 0 for c in costs)
    assert costs[0].share == costs[0].agree_seconds / costs[0].call_seconds
    with pytest.raises(ValueError, match="on 2 ranks or more"):
        B.agreement_costs(1)
