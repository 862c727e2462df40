import dataclasses
import pickle

import pytest
import torch

from d2lmp.checks.ranks import check_data_parallel
from d2lmp.model.timeline import Timeline, TimelineEvent, align, overlap_ms, split_steps
from d2lmp.parallel import data_parallel as DP
from d2lmp.parallel.accumulation import accumulated_gradients
from d2lmp.parallel.launch import launch


@pytest.mark.parametrize("world", [2, 4])
def test_every_version_gives_the_single_process_gradients(world):
    for rank, errors in enumerate(launch(check_data_parallel, world)):
        assert set(errors) == set(DP.VERSIONS)
        for version, err in errors.items():
            assert err < 1e-6, f"rank {rank}, {version}: max error {err}"


def test_uneven_and_too_small_batches():
    x, y = torch.arange(5.0).unsqueeze(1), torch.arange(5)
    parts = [DP.shard(x, y, r, 2)[0].squeeze(1).tolist() for r in range(2)]
    assert parts == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="cannot give each of 8 ranks"):
        DP.shard(x, y, 0, 8)


SPEC = DP.MLPSpec((16, 64, 64, 64, 5), seed=0)
STEPS, LR, BUCKET = 15, 0.5, 4096  # 4 KiB buckets: several buckets in this 39 KB model
PARAM_BYTES = sorted(p.numel() * 4 for p in SPEC.build().parameters())


def _train_every_version(rank, world, spec, x, y, steps, lr, bucket):
    return {v: DP.dp_train(rank, world, spec, x, y, v, steps, lr, bucket) for v in DP.VERSIONS}


@pytest.fixture(scope="module")
def runs():
    """One launch per world size trains every version (62 examples: uneven over 4 ranks)."""
    x, y = DP.synthetic_data(SPEC, 62)
    reference = DP.single_process_train(SPEC, x, y, steps=STEPS, lr=LR)
    return reference, {world: launch(_train_every_version, world, SPEC, x, y, STEPS, LR, BUCKET) for world in (2, 4)}


@pytest.mark.parametrize("world", [2, 4])
def test_every_version_follows_the_single_process_loss_curve(runs, world):
    reference, results = runs
    assert reference[-1] < reference[0] - 0.1, "the reference run must actually learn"
    for rank, per_version in enumerate(results[world]):
        assert set(per_version) == set(DP.VERSIONS)
        for version, result in per_version.items():
            def msg(m, rank=rank, version=version):
                return f"{world} ranks, rank {rank}, {version}: {m}"

            torch.testing.assert_close(torch.tensor(result.losses), torch.tensor(reference), rtol=1e-4, atol=1e-5,
                                       msg=msg)


def _comm_and_backward(step_events):
    (backward,) = [e for e in step_events if e.kind == "backward"]
    return backward, [e for e in step_events if e.kind == "allreduce"]


@pytest.mark.parametrize("world", [2, 4])
def test_bucketed_starts_all_reduces_inside_backward_and_no_overlap_after_it(runs, world):
    for rank, per_version in enumerate(runs[1][world]):
        overlap, no_overlap = per_version["bucketed"], per_version["bucketed-no-overlap"]
        buckets = len(overlap.bucket_sizes)
        assert buckets >= 3 and no_overlap.bucket_sizes == overlap.bucket_sizes
        for steps_events, inside in ((split_steps(overlap.events), True),
                                     (split_steps(no_overlap.events), False)):
            assert len(steps_events) == STEPS
            for i, step_events in enumerate(steps_events):
                backward, comms = _comm_and_backward(step_events)
                assert len(comms) == buckets, f"rank {rank} step {i}: {len(comms)} all-reduces for {buckets} buckets"
                started_inside = [backward.start <= e.start < backward.end for e in comms]
                # With overlap every bucket's all-reduce is started by a hook while backward still runs;
                # without it, none starts before backward has returned.
                assert all(started_inside) if inside else not any(started_inside), (rank, i, inside)
        assert overlap_ms(overlap.events, rank) > 0
        assert overlap_ms(no_overlap.events, rank) == 0


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_hook_records_every_gradient_byte_in_buckets_under_the_cap(runs, world):
    total = sum(PARAM_BYTES)
    for rank, per_version in enumerate(runs[1][world]):
        steps_events = split_steps(per_version["ddp"].events)
        assert len(steps_events) == STEPS
        layouts = []
        for i, step_events in enumerate(steps_events):
            _, comms = _comm_and_backward(step_events)
            assert sum(e.nbytes for e in comms) == total, f"rank {rank} step {i}"
            assert all(e.end >= e.start for e in comms)
            assert all(e.nbytes == sum(e.tensor_bytes) for e in comms)
            assert sorted(b for e in comms for b in e.tensor_bytes) == PARAM_BYTES  # each parameter once
            layouts.append([e.tensor_bytes for e in sorted(comms, key=lambda e: e.label)])
        # From the second step on, DDP's rebuilt buckets stay the same, and each closes as soon as it reaches
        # the cap: without its last parameter every bucket is below the cap.
        assert all(layout == layouts[1] for layout in layouts[1:])
        assert len(layouts[1]) > 1
        assert all(sum(tensors[:-1]) < BUCKET for tensors in layouts[1]), layouts[1]


def test_align_and_overlap_arithmetic():
    events = [TimelineEvent(0, "backward", "", 10.0, 10.004), TimelineEvent(0, "allreduce", "b0", 10.002, 10.006)]
    aligned = align(events)
    assert aligned[0].start == 0 and aligned[1].end == pytest.approx(6.0)
    assert events[0].start == 10.0, "align returns new events"
    assert aligned[1].label == "b0" and aligned[1].kind == "allreduce"
    assert overlap_ms(aligned, 0) == pytest.approx(2.0)
    with pytest.raises(TypeError, match="TimelineEvent records, got dict"):
        align([dict(rank=0, kind="backward", label="", start=0.0, end=1.0)])


def test_timeline_events_are_frozen_records():
    timeline = Timeline(rank=3)
    timeline.add("allreduce", 1.0, 1.5, "bucket 0", nbytes=8, tensor_bytes=(4, 4))
    with timeline.span("forward", "F0", micro_batch=0):
        pass
    comm, forward = timeline.events
    assert comm == TimelineEvent(3, "allreduce", "bucket 0", 1.0, 1.5, nbytes=8, tensor_bytes=(4, 4))
    assert comm.duration == 0.5 and forward.micro_batch == 0 and forward.nbytes is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        comm.start = 0.0
    with pytest.raises(TypeError):
        timeline.add("wait", 0.0, 1.0, bytes=8)  # not a field
    assert pickle.loads(pickle.dumps(comm)) == comm  # launch sends events between processes


def test_dp_train_events_are_timeline_events():
    (result,) = launch(DP.dp_train, 1, SPEC, *DP.synthetic_data(SPEC, 8), "bucketed", 1, LR, BUCKET)
    assert result.events and all(type(e) is TimelineEvent for e in result.events)
    assert {e.kind for e in result.events} >= {"forward", "backward", "allreduce", "wait", "step"}
    assert all(e.nbytes > 0 for e in result.events if e.kind == "allreduce")


def test_bad_inputs():
    from d2lmp.parallel.launch import WorkerError

    with pytest.raises(WorkerError, match="unknown version 'zero'; available: allreduce"):
        launch(DP.dp_gradients, 1, DP.MLPSpec(), *DP.synthetic_data(DP.MLPSpec(), 4), "zero")
    with pytest.raises(ValueError):
        DP.MLPSpec((5,)).build()


ACC_SPEC, ACC_BATCH, ACC_KS = DP.MLPSpec((16, 32, 32, 5), seed=0), 23, (1, 3, 5)  # 23: uneven over 2 and 4 ranks


def _accumulate_every_way(rank, world, spec, x, y, ks):
    return {(v, k, acc): accumulated_gradients(rank, world, spec, x, y, v, k, acc, bucket_bytes=512)
            for v in DP.VERSIONS for k in ks for acc in (True, False)}


@pytest.mark.parametrize("world", [2, 4])
def test_accumulation_equals_the_large_batch_with_one_synchronisation(world):
    """k micro-steps (uneven: 23 examples over the ranks, then over k) give the full-batch gradient; with
    accumulation the gradients are summed over the ranks once per optimizer step, without it k times."""
    x, y = DP.synthetic_data(ACC_SPEC, ACC_BATCH)
    reference = DP.single_process_gradients(ACC_SPEC, x, y)
    param_bytes = sum(p.numel() * p.element_size() for p in ACC_SPEC.build().parameters())
    for rank, results in enumerate(launch(_accumulate_every_way, world, ACC_SPEC, x, y, ACC_KS)):
        for version in DP.VERSIONS:
            for k in ACC_KS:
                once, every = results[version, k, True], results[version, k, False]
                for result in (once, every):
                    for g, r in zip(result.grads, reference, strict=True):
                        torch.testing.assert_close(g, r, msg=lambda m, v=version, k=k: f"{world} ranks {v} k={k}: {m}")
                assert once.syncs == 1 and every.syncs == k, (rank, version, k)
                assert once.allreduce_bytes == param_bytes and every.allreduce_bytes == k * param_bytes
                if version != "ddp":  # DDP rebuilds its buckets after its first synchronisation
                    assert every.allreduce_calls == k * once.allreduce_calls, (rank, version, k)


def test_bucketed_no_sync_starts_nothing_and_finish_waits_for_nothing():
    model = ACC_SPEC.build()
    bucketer = DP.RecordedBucketedAllReduce(model, bucket_bytes=512)  # no process group needed: nothing is sent
    with bucketer.no_sync():
        assert not bucketer.sync
        model(torch.randn(4, 16)).sum().backward()
        bucketer.finish()
    assert bucketer.sync and bucketer.inflight == {}
    bucketer.remove()


def test_buckets_fill_last_layer_first_and_close_at_the_cap():
    model = SPEC.build()
    params = list(model.parameters())
    bucketer = DP.BucketedAllReduce(model, bucket_bytes=BUCKET)  # builds its buckets and hooks; sends nothing yet
    assert [id(p) for b in bucketer.buckets for p in b] == [id(p) for p in params[::-1]]  # once each, backward's order
    sizes = [[p.numel() * 4 for p in b] for b in bucketer.buckets]
    assert all(sum(b) >= BUCKET and sum(b[:-1]) < BUCKET for b in sizes[:-1]), sizes  # closed by its last tensor
    assert DP.fill_buckets([], 1) == [] and len(DP.fill_buckets(params, 1)) == len(params)
    with pytest.raises(ValueError, match="bucket_bytes must be positive"):
        DP.fill_buckets(params, 0)


CORE_BATCH = 23  # uneven over 2 and 4 ranks


def _shown_and_recorded(rank, world, spec, x, y, bucket):
    """One backward on this rank's slice, summed by the BucketedAllReduce notebook 13 shows and by the
    RecordedBucketedAllReduce that DataParallelStep (and so ``d2lmp bench dp``) runs, with and without overlap;
    for each: the gradients, the buckets' sizes, how many all-reduces had started when backward returned, and the
    timeline's all-reduce events."""
    makers = {"shown": lambda m, tl: DP.BucketedAllReduce(m, bucket),
              "recorded": lambda m, tl: DP.RecordedBucketedAllReduce(m, bucket, timeline=tl),
              "recorded, no overlap": lambda m, tl: DP.RecordedBucketedAllReduce(m, bucket, overlap=False, timeline=tl)}
    out = {}
    for name, make in makers.items():
        model, timeline = spec.build(), Timeline(rank)
        bucketer = make(model, timeline)
        xs, ys = DP.shard(x, y, rank, world)
        DP.local_loss(model, xs, ys, len(x)).backward()
        started = len(bucketer.inflight)
        bucketer.finish()
        out[name] = ([p.grad.clone() for p in model.parameters()], [len(b) for b in bucketer.buckets], started,
                     [e for e in timeline.events if e.kind == "allreduce"])
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_the_shown_bucketed_version_is_the_one_the_benchmark_runs(world):
    x, y = DP.synthetic_data(SPEC, CORE_BATCH)
    reference = DP.single_process_gradients(SPEC, x, y)
    for rank, runs in enumerate(launch(_shown_and_recorded, world, SPEC, x, y, BUCKET)):
        grads, buckets, started, events = runs["shown"]
        assert len(buckets) >= 3 and started == len(buckets), "every bucket's all-reduce starts inside backward"
        assert events == []
        for g, r in zip(grads, reference, strict=True):
            torch.testing.assert_close(g, r, msg=lambda m, rank=rank: f"shown, {world} ranks, rank {rank}: {m}")
        for name in ("recorded", "recorded, no overlap"):
            g2, b2, started2, events2 = runs[name]
            assert b2 == buckets and all(torch.equal(a, b) for a, b in zip(g2, grads, strict=True)), (name, rank)
            assert started2 == (len(buckets) if name == "recorded" else 0), (name, rank)
            assert sorted(e.label for e in events2) == [f"bucket {i}" for i in range(len(buckets))], (name, rank)
