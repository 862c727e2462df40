"""A real profiler trace of a DDP step: the files are Chrome trace JSON with the events we draw, the summary is what
the files say, and the overlap measured from a hand-made trace is the hand-computed value."""

import json

import pytest
import torch

from d2lmp.parallel.data_parallel import MLPSpec
from d2lmp.parallel.profiler_trace import profiler_activities, record_ddp_trace
from d2lmp.parallel.trace_events import (
    BACKWARD_PREFIX,
    intersection_ms,
    load_trace,
    merge_traces,
    summarise,
    to_timeline,
    trace_spans,
    union_ms,
)
from d2lmp.views.trace import plot_trace, plot_trace_beside_timeline

SPEC = MLPSpec((64, 128, 128, 128, 10), seed=0)  # 4 parameter tensors of 64 KiB and more: 4 buckets of 16 KiB
BUCKET = 16 * 1024


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return record_ddp_trace(tmp_path_factory.mktemp("trace"), world=2, spec=SPEC, batch=32, bucket_bytes=BUCKET)


def test_each_rank_wrote_a_chrome_trace_with_the_events_of_a_ddp_step(recording):
    assert [p.name for p in recording.paths] == ["ddp_trace_rank0.json", "ddp_trace_rank1.json"]
    for rank, path in enumerate(recording.paths):
        trace = json.loads(path.read_text())  # plain JSON, as Perfetto and chrome://tracing read it
        assert isinstance(trace["traceEvents"], list) and trace["distributedInfo"]["rank"] == rank
        complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        for e in complete:
            assert {"name", "ts", "dur", "pid", "tid"} <= set(e), e
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        names = {e["name"] for e in complete}
        assert {"forward", "backward", "optimizer", "gloo:all_reduce", "DistributedDataParallel.forward"} <= names
        assert any(n.startswith(BACKWARD_PREFIX + "AddmmBackward") for n in names)
        # one gloo all-reduce per bucket, the same number the communication hook logged on the timeline
        hooked = [e for e in recording.timeline if e.rank == rank and e.kind == "allreduce"]
        assert sum(e["name"] == "gloo:all_reduce" for e in complete) == len(hooked) >= 3


def test_the_merged_trace_holds_every_rank_as_its_own_process_on_one_clock(recording):
    merged = load_trace(recording.merged)
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    for rank, path in enumerate(recording.paths):
        own = trace_spans(load_trace(path))
        part = {"traceEvents": [e for e in merged["traceEvents"] if e.get("pid") == rank],
                "baseTimeNanoseconds": merged["baseTimeNanoseconds"]}
        moved = trace_spans(part, rank)
        assert [(s.kind, s.name) for s in moved] == [(s.kind, s.name) for s in own]
        assert [s.start_ms for s in moved] == pytest.approx([s.start_ms for s in own], abs=1e-3)


def test_the_summary_is_what_each_file_says(recording):
    assert recording.device == "cpu" or recording.device.startswith("cuda")
    for rank, (path, summary) in enumerate(zip(recording.paths, recording.summaries)):
        spans = trace_spans(load_trace(path))
        assert summary == summarise(spans, rank)
        assert summary.backward_ms > 0 and len(summary.allreduce_ms) >= 3
        assert 0 <= summary.overlap_ms <= min(summary.allreduce_busy_ms, summary.backward_ms) + 1e-9
        assert summary.overlap_ms + summary.exposed_ms == pytest.approx(summary.allreduce_busy_ms)
        assert summary.allreduce_busy_ms <= sum(summary.allreduce_ms) + 1e-9
        if recording.device == "cpu":
            assert summary.gpu_kernels == 0


def test_overlap_from_a_hand_made_trace_is_the_hand_value(tmp_path):
    def op(name, ts_us, dur_us, tid=1, cat="cpu_op"):
        return {"ph": "X", "name": name, "cat": cat, "ts": ts_us, "dur": dur_us, "pid": 7, "tid": tid}

    # backward operators 0-2 ms and 3-5 ms; all-reduces 1-4 ms and 4.5-7 ms on the process group's thread, plus
    # the CPU-side call that launched one (not a span we count) and an unrelated operator.
    events = [op(BACKWARD_PREFIX + "AddmmBackward0", 0, 2000), op(BACKWARD_PREFIX + "ReluBackward0", 3000, 2000),
              op("gloo:all_reduce", 1000, 3000, tid=2), op("gloo:all_reduce", 4500, 2500, tid=3),
              op("c10d::allreduce_", 1900, 50), op("aten::mm", 100, 500),
              {"ph": "M", "name": "thread_name", "pid": 7, "tid": 2, "args": {"name": "gloo"}}]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"traceEvents": events, "baseTimeNanoseconds": 5_000_000, "distributedInfo": {
        "rank": 3}}))
    spans = trace_spans(load_trace(path))
    assert sorted((s.kind, s.start_ms, s.end_ms) for s in spans) == [
        ("allreduce", 6.0, 9.0), ("allreduce", 9.5, 12.0), ("backward", 5.0, 7.0), ("backward", 8.0, 10.0)]
    s = summarise(spans, 3)
    # backward span 0-5 ms (5 ms); all-reduce busy 3 + 2.5 = 5.5 ms; inside the span 3 (1-4) + 0.5 (4.5-5) = 3.5 ms
    assert (s.rank, s.backward_ms, s.allreduce_ms) == (3, 5.0, (3.0, 2.5))
    assert (s.allreduce_busy_ms, s.overlap_ms, s.exposed_ms, s.gpu_kernels) == (5.5, 3.5, 2.0, 0)
    assert union_ms([(0, 2), (1, 3), (5, 6)]) == 4 and intersection_ms([(0, 2), (1, 3), (5, 6)], (1.5, 5.5)) == 2
    assert [e.kind for e in to_timeline(spans)] == ["backward", "allreduce", "backward", "allreduce"]
    with pytest.raises(ValueError, match="no backward operator"):
        summarise(spans, 0)
    merged = load_trace(merge_traces([path, path], tmp_path / "both.json"))
    assert {e["pid"] for e in merged["traceEvents"]} == {3}  # both files say rank 3: one process


def test_a_gpu_trace_counts_nccl_kernels_as_the_all_reduces():
    events = [{"ph": "X", "name": BACKWARD_PREFIX + "MmBackward0", "cat": "cpu_op", "ts": 0, "dur": 4000, "pid": 1,
               "tid": 1},
              {"ph": "X", "name": "nccl:all_reduce", "cat": "cpu_op", "ts": 1000, "dur": 10, "pid": 1, "tid": 1},
              {"ph": "X", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "cat": "kernel", "ts": 2000,
               "dur": 3000, "pid": 0, "tid": 7},
              {"ph": "X", "name": "ampere_sgemm_128x64_nn", "cat": "kernel", "ts": 500, "dur": 1000, "pid": 0,
               "tid": 7}]
    s = summarise(trace_spans({"traceEvents": events}), 0)
    assert (s.allreduce_ms, s.overlap_ms, s.exposed_ms, s.gpu_kernels) == ((3.0,), 2.0, 1.0, 1)


def test_bad_traces_and_inputs_are_refused_with_a_reason(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="not a Chrome trace"):
        load_trace(path)
    path.write_text(json.dumps([{"ph": "X", "name": "a", "ts": 0, "dur": 1}]))  # the bare array form is fine
    assert load_trace(path)["traceEvents"][0]["name"] == "a"
    with pytest.raises(ValueError, match="bucket_bytes must be positive"):
        record_ddp_trace(tmp_path, bucket_bytes=0)
    assert profiler_activities(torch.device("cpu")) == [torch.profiler.ProfilerActivity.CPU]


def test_the_trace_figure_is_drawn_from_the_files_beside_the_timeline(recording):
    ax = plot_trace(recording.paths).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0 compute", "rank 0 comm", "rank 1 compute",
                                                           "rank 1 comm"]
    assert "rank 0:" in ax.get_title() and f"{recording.summaries[1].overlap_ms:.1f} ms" in ax.get_title()
    bars = sum(len(c.get_paths()) for c in ax.collections)
    spans = sum(len(trace_spans(load_trace(p))) for p in recording.paths)
    assert bars == spans  # one bar per backward operator, all-reduce, forward and optimizer span
    fig = plot_trace_beside_timeline(recording)
    assert len(fig.axes) == 2 and "Timeline" in fig.axes[1].get_title()
