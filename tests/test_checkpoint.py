"""Distributed checkpoints: saved on 4 ranks, loaded into 2 and into 1, equal; a half-written one is never loaded."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from d2lmp.checks import reshard as R
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel.launch import launch


@pytest.mark.slow
@pytest.mark.parametrize("kind", R.KINDS)
def test_a_checkpoint_of_4_ranks_loads_into_2_and_1_equal(tmp_path, kind):
    report = R.reshard_roundtrip(str(tmp_path), kind)
    assert report.equal == {2: True, 1: True}, report
    assert report.difference == {2: 0.0, 1: 0.0}
    assert sorted(report.written) == [0, 1, 2, 3], "every saving rank wrote its own file"
    # each rank holds its shards only: the fewer the ranks, the more each holds, and one rank holds everything
    assert report.held[4] < report.held[2] < report.held[1]
    # each loading rank reads only the saved records that overlap its shards; one rank reads them all
    assert report.read[2] < report.read[1] == sum(report.written.values())
    model, optimizer = R.build(kind, 1)
    one = R._batch(R.FSDP_SIZES if kind == "fsdp2" else R.TP_SIZES)
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(one[0]), one[1]).backward()
    optimizer.step()
    assert report.held[1] == R._held_bytes(ckpt.training_state(model, optimizer))


@pytest.mark.slow
def test_a_save_gives_no_torch_deprecation_warning(tmp_path):
    """In a fresh process, since torch warns once: torch 2.8's DCP writer calls the deprecated tensor.storage() on
    CPU tensors (`make compat TORCH=2.8.0` runs this there); a deprecation warning is an error here."""
    code = ("import sys, warnings, torch\n"
            "warnings.filterwarnings('error', message='(?s).*deprecat')\n"
            "warnings.filterwarnings('ignore', message='torch.distributed is disabled')\n"
            "from d2lmp.parallel import checkpoint\n"
            "checkpoint.save({'w': torch.arange(6.0)}, sys.argv[1], 1)\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert ckpt.is_complete(ckpt.step_dir(tmp_path, 1))


def test_state_difference_sees_one_changed_element():
    a = ckpt.FullState({"w": torch.zeros(3)}, {"w": {"exp_avg": torch.ones(3), "step": torch.tensor(2.0)}})
    b = ckpt.FullState({"w": torch.zeros(3)}, {"w": {"exp_avg": torch.ones(3), "step": torch.tensor(2.0)}})
    assert R.state_difference(a, b) == (True, 0.0)
    b.optim["w"]["exp_avg"][1] = 1.5
    assert R.state_difference(a, b) == (False, 0.5)
    del b.optim["w"]["step"]
    assert R.state_difference(a, b) == (False, float("inf"))


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # one process: DCP says so, rightly
def test_a_checkpoint_counts_only_with_its_marker(tmp_path):
    """One process, no group: the marker protocol alone."""
    ckpt.save({"w": torch.arange(6.0)}, tmp_path, 1)
    ckpt.save({"w": torch.arange(6.0) * 2}, tmp_path, 2)
    assert ckpt.latest_complete(tmp_path) == ckpt.step_dir(tmp_path, 2)
    state = {"w": torch.zeros(6)}
    ckpt.load(state, ckpt.step_dir(tmp_path, 2))
    assert torch.equal(state["w"], torch.arange(6.0) * 2)

    (ckpt.step_dir(tmp_path, 2) / ckpt.MARKER).unlink()  # as if the job died before the save finished
    assert ckpt.latest_complete(tmp_path) == ckpt.step_dir(tmp_path, 1)
    with pytest.raises(ckpt.IncompleteCheckpoint, match="its save never finished"):
        ckpt.load(state, ckpt.step_dir(tmp_path, 2))

    data = next(ckpt.step_dir(tmp_path, 1).glob("*.distcp"))
    data.write_bytes(data.read_bytes()[:10])  # truncated after the save
    with pytest.raises(ckpt.IncompleteCheckpoint, match="files missing or changed"):
        ckpt.read_marker(ckpt.step_dir(tmp_path, 1))
    with pytest.warns(UserWarning, match="skipping a checkpoint that cannot be trusted"):
        assert ckpt.latest_complete(tmp_path) is None

    ckpt.save({"w": torch.ones(6)}, tmp_path, 3)
    with pytest.raises(ValueError, match="refusing to overwrite"):
        ckpt.save({"w": torch.ones(6)}, tmp_path, 3)
    ckpt.save({"w": torch.ones(6)}, tmp_path, 2)  # an incomplete folder of the same step is replaced
    assert ckpt.is_complete(ckpt.step_dir(tmp_path, 2))


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_bad_folders_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist; create it first"):
        ckpt.save({"w": torch.ones(2)}, tmp_path / "missing", 1)
    with pytest.raises(ValueError, match="does not exist"):
        ckpt.latest_complete(tmp_path / "missing")
    with pytest.raises(ckpt.IncompleteCheckpoint, match="not a checkpoint folder"):
        ckpt.load({"w": torch.ones(2)}, tmp_path / "step_00000001")
    with pytest.raises(ValueError, match="never negative"):
        ckpt.step_dir(tmp_path, -1)


def _async_roundtrip(rank, world, folder):
    model, optimizer = R.build("fsdp2", world)
    x, y = R._batch(R.FSDP_SIZES)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    saver = ckpt.AsyncSaver()
    waited = saver.save(ckpt.training_state(model, optimizer), folder, 1)
    saver.wait()
    saved = ckpt.full_training_state(model, optimizer)
    fresh, fresh_optimizer = R.build("fsdp2", world)
    state = ckpt.training_state(fresh, fresh_optimizer)
    ckpt.load(state, ckpt.step_dir(folder, 1))
    ckpt.restore_training_state(fresh, fresh_optimizer, state)
    return waited, R.state_difference(ckpt.full_training_state(fresh, fresh_optimizer), saved)


def test_an_asynchronous_save_is_complete_after_wait_and_loads_equal(tmp_path):
    R._import_before_fork()
    results = launch(_async_roundtrip, 2, str(tmp_path), backend="gloo")
    assert ckpt.is_complete(ckpt.step_dir(tmp_path, 1))
    assert ckpt.read_marker(ckpt.step_dir(tmp_path, 1)).world == 2
    for waited, (equal, worst) in results:
        assert waited >= 0 and equal and worst == 0.0
