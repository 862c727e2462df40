"""Data parallelism end to end: DDP training of the digits CNN equals one device (no BatchNorm, or synchronised
BatchNorm), SyncBatchNorm2d equals BatchNorm on the whole batch, per-rank BatchNorm does not, and the linear
scaling rule's schedule is exactly the hand-computed one. Each world size is one launch for all of its checks."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from d2lmp.config import pick
from d2lmp.data import load_digits
from d2lmp.model.lr_scaling import linear_scaling, warmup_steps_for
from d2lmp.parallel.dp_batchnorm import (
    BatchNormAccuracy,
    BatchNormGap,
    batchnorm_accuracy_table,
    batchnorm_gaps,
    bn_inputs,
    format_batchnorm_accuracy,
    format_batchnorm_gaps,
)
from d2lmp.parallel.dp_training import (
    CNNSpec,
    FitConfig,
    dp_fit_many,
    format_lr_scaling,
    global_batches,
    lr_scaling_table,
    one_device_fit,
)
from d2lmp.parallel.launch import launch
from d2lmp.parallel.sync_batchnorm import SyncBatchNorm2d, to_sync_batchnorm

TRAIN = pick(full=256, quick=96)  # training examples of the equality checks: a few steps each
CONFIG = FitConfig(global_batch=16, epochs=1, base_lr=0.05, base_batch=8, warmup_epochs=0.5)
# (what, spec, config): the runs each world size trains in its one launch
RUNS = (("no BatchNorm", CNNSpec(8, "none"), CONFIG),
        ("no BatchNorm, 2 micro-steps per rank", CNNSpec(8, "none"), replace(CONFIG, accumulation=2)),
        ("SyncBatchNorm2d", CNNSpec(8, "sync"), CONFIG),
        ("per-rank BatchNorm", CNNSpec(8, "batch"), CONFIG))


@pytest.fixture(scope="module")
def data():
    full = load_digits(resize=None)
    return replace(full, x_train=full.x_train[:TRAIN], y_train=full.y_train[:TRAIN])


def _every_check(rank, world, runs, data, x, upstream):
    """One launch: every training run, then the BatchNorm layers' gaps on an uneven split of ``x``."""
    return dp_fit_many(rank, world, [(spec, config) for _, spec, config in runs], data), \
        batchnorm_gaps(rank, world, x, upstream)


@pytest.fixture(scope="module")
def on_ranks(data):
    x = bn_inputs(data, 30)  # 30 examples: uneven over 4 ranks (8, 8, 7, 7)
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    return {world: launch(_every_check, world, RUNS, data, x, upstream) for world in (2, 4)}


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_training_equals_one_device_without_batchnorm_or_with_synchronised_statistics(data, on_ranks, world):
    for rank, (fits, _) in enumerate(on_ranks[world]):
        for (what, spec, config), fit in zip(RUNS[:3], fits):
            one = one_device_fit(spec, config, data)
            assert len(fit.losses) == TRAIN // CONFIG.global_batch >= 6
            assert one.losses[-1] < one.losses[0], f"{what}: the reference must learn"
            torch.testing.assert_close(torch.tensor(fit.losses), torch.tensor(one.losses), rtol=1e-5, atol=1e-6,
                                       msg=lambda m, what=what, rank=rank: f"{what}, rank {rank} of {world}: {m}")
            for name, value in one.state.items():
                torch.testing.assert_close(fit.state[name], value, rtol=1e-5, atol=1e-6,
                                           msg=lambda m, w=what, n=name, r=rank: f"{w}, rank {r}, {n}: {m}")
            assert fit.test_acc == one.test_acc


@pytest.mark.parametrize("world", [2, 4])
def test_per_rank_batchnorm_trains_differently_from_one_device(data, on_ranks, world):
    what, spec, config = RUNS[3]
    one = one_device_fit(spec, config, data)
    fit = on_ranks[world][0][0][3]
    gap = max(float((fit.state[k].float() - v.float()).abs().max()) for k, v in one.state.items())
    assert gap > 1e-3, f"{what} on {world} ranks should follow another path than one device (gap {gap:.1e})"


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
def test_synchronised_batchnorm_equals_batchnorm_on_the_whole_batch_and_per_rank_does_not(on_ranks, world):
    rows = {r.statistics: r for r in on_ranks[world][0][1]}
    assert all(isinstance(r, BatchNormGap) for r in rows.values())
    ours, per_rank, torchs = rows["SyncBatchNorm2d (ours)"], rows["per-rank nn.BatchNorm2d"], \
        rows["nn.SyncBatchNorm (PyTorch)"]
    quantities = ("output", "running_mean", "running_var", "input_grad", "weight_grad", "bias_grad")
    for q in quantities:
        assert getattr(ours, q) < 1e-5, f"ours, {q}: {getattr(ours, q):.1e} from one device"
    # Per-rank statistics: outputs, running statistics and the gradients that go through the statistics differ by
    # percent; the bias gradient (the sum of the output gradient) does not depend on them.
    for q in ("output", "running_mean", "running_var", "input_grad", "weight_grad"):
        assert getattr(per_rank, q) > 1e-3, f"per rank, {q}: only {getattr(per_rank, q):.1e} from one device"
    assert per_rank.bias_grad < 1e-5
    if torch.cuda.is_available() and not torchs.note:
        assert all(getattr(torchs, q) < 1e-5 for q in quantities)
    else:  # CPU ranks: PyTorch's layer refuses, and the table says why
        assert "GPU" in torchs.note and all(getattr(torchs, q) != getattr(torchs, q) for q in quantities)
    if torchs.note:
        assert torchs.note in format_batchnorm_gaps(list(rows.values()))


def test_every_rank_agrees_on_the_gaps(on_ranks):
    for world, results in on_ranks.items():
        first = [r for r in results[0][1] if not r.note]
        for _, rows in results[1:]:
            assert [r for r in rows if not r.note] == first, world


def test_sync_batchnorm_is_batchnorm_without_a_process_group_and_converts_back_and_forth():
    torch.manual_seed(0)
    plain = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    with torch.no_grad():
        plain[1].weight.uniform_(0.5, 1.5)
    copy = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    copy.load_state_dict(plain.state_dict())
    synced = to_sync_batchnorm(copy)
    assert isinstance(synced[1], SyncBatchNorm2d) and not isinstance(plain[1], SyncBatchNorm2d)
    x = torch.randn(6, 1, 8, 8)
    for mode in (True, False):
        plain.train(mode)
        synced.train(mode)
        torch.testing.assert_close(synced(x), plain(x))
    torch.testing.assert_close(synced[1].running_var, plain[1].running_var)
    nn.BatchNorm2d(4).load_state_dict(synced[1].state_dict())  # the same parameters and buffers


def test_linear_scaling_schedule_is_the_hand_computed_one():
    # η = 1/8 at batch 32; batch 128 is k = 4: warm-up from 1/8 to 1/2 in 4 steps of 3/32 (exact in binary)
    s = linear_scaling(0.125, 32, 128, warmup_steps=4)
    assert (s.k, s.peak_lr) == (4.0, 0.5)
    assert s.lrs(7) == (0.125, 0.21875, 0.3125, 0.40625, 0.5, 0.5, 0.5)
    assert linear_scaling(0.125, 32, 128, warmup_steps=4, scaled=False).lrs(5) == (0.125,) * 5
    assert linear_scaling(0.125, 32, 128).lrs(2) == (0.5, 0.5)  # no warm-up: the scaled rate from the first step
    assert linear_scaling(0.125, 32, 16, warmup_steps=4).lrs(2) == (0.0625, 0.0625)  # k < 1: scaled down, no ramp
    assert warmup_steps_for(0.5, 11) == 6 and warmup_steps_for(2, 5) == 10
    for bad in (dict(base_lr=0.0), dict(base_batch=0), dict(warmup_steps=-1)):
        with pytest.raises(ValueError):
            linear_scaling(**{**dict(base_lr=0.1, base_batch=32, global_batch=64, warmup_steps=0), **bad})
    with pytest.raises(ValueError, match="step must be >= 0"):
        s.lr(-1)


def test_training_follows_the_schedule_and_the_batches_it_promises(data, on_ranks):
    schedule = CONFIG.schedule(TRAIN)
    assert schedule.warmup_steps == round(0.5 * (TRAIN // 16)) and schedule.peak_lr == 0.1
    for fits, _ in on_ranks[2]:
        assert fits[0].lrs == schedule.lrs(TRAIN // 16)
    batches = list(global_batches(TRAIN, CONFIG))
    assert all(len(b) == 16 for b in batches) and len(torch.cat(batches).unique()) == len(batches) * 16
    assert torch.equal(torch.cat(list(global_batches(TRAIN, CONFIG))), torch.cat(batches))  # the same on every call
    with pytest.raises(ValueError, match="global_batch must be between 1 and the"):
        replace(CONFIG, global_batch=TRAIN + 1).schedule(TRAIN)
    with pytest.raises(ValueError, match="norm must be one of"):
        CNNSpec(norm="group").build()


def test_tables_run_and_report_what_they_trained(data):
    config = FitConfig(epochs=1, base_batch=8)
    rows = lr_scaling_table(data, batches=(8, 32), world=2, spec=CNNSpec(4), config=config)
    assert [(r.global_batch, r.rule) for r in rows] == [(8, False), (32, False), (8, True), (32, True)]
    for r in rows:
        assert r.peak_lr == pytest.approx(config.base_lr * (r.global_batch / 8 if r.rule else 1))
        assert r.steps == TRAIN // r.global_batch and r.per_rank_batch == r.global_batch // 2
        assert 0.0 <= r.ranks_acc <= 1.0 and 0.0 <= r.one_device_acc <= 1.0
    assert "LR rule" in format_lr_scaling(rows)
    accuracy = batchnorm_accuracy_table(data, per_rank_batches=(8,), world=2, config=config, channels=4)
    assert len(accuracy) == 1 and isinstance(accuracy[0], BatchNormAccuracy) and accuracy[0].global_batch == 16
    # synchronised statistics train as one device does, so they end at its accuracy
    assert accuracy[0].synchronised_acc == accuracy[0].one_device_acc
    assert "per-rank BN acc" in format_batchnorm_accuracy(accuracy)
