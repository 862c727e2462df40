"""A checkpoint loads only what is its own: changed bits, another configuration, other tensors are refused."""

import json
import random

import pytest
import torch
from torch import nn

from d2lmp.parallel import checkpoint as ckpt

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # one process: DCP says so


def _state(model: nn.Module) -> dict:
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    return {**ckpt.training_state(model, optimizer), "step": 3}


def _flip(path, bit):
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


def test_a_single_flipped_bit_in_any_file_is_refused(tmp_path):
    torch.manual_seed(0)
    state = _state(nn.Linear(4, 3))
    ckpt.save(state, tmp_path, 1, config={"seed": 0})
    folder = ckpt.step_dir(tmp_path, 1)
    rng = random.Random(0)
    files = sorted(p for p in folder.iterdir())
    assert {p.name for p in files} >= {ckpt.MARKER, ".metadata", "__0_0.distcp"}
    for path in files:
        for bit in rng.sample(range(path.stat().st_size * 8), 8):
            _flip(path, bit)
            with pytest.raises(ckpt.CheckpointError):
                ckpt.load(state, folder, config={"seed": 0})
            _flip(path, bit)  # back as it was: the next flip is the only change
    ckpt.load(state, folder, config={"seed": 0})


def test_another_configuration_is_refused_unless_allowed(tmp_path):
    state = _state(nn.Linear(4, 3))
    ckpt.save(state, tmp_path, 1, config={"seed": 0, "lr": 0.01, "sizes": (4, 3)})
    folder = ckpt.step_dir(tmp_path, 1)
    ckpt.load(state, folder, config={"seed": 0, "lr": 0.01, "sizes": (4, 3)})  # a tuple is stored as a list
    with pytest.raises(ckpt.CheckpointMismatch, match=r"another configuration \(lr: saved 0.01, now 0.02; "
                                                      r"seed: saved 0, now 1\).*allow_other_config=True"):
        ckpt.load(state, folder, config={"seed": 1, "lr": 0.02, "sizes": (4, 3)})
    with pytest.raises(ckpt.CheckpointMismatch, match=r"seed: saved 0, now \(absent\)"):
        ckpt.load(state, folder, config={"lr": 0.01, "sizes": [4, 3]})
    ckpt.load(state, folder, config={"seed": 1}, allow_other_config=True)
    with pytest.raises(ValueError, match="must be JSON"):
        ckpt.save(state, tmp_path, 2, config={"model": nn.Linear(1, 1)})


def test_a_model_with_fewer_or_more_layers_is_refused(tmp_path):
    two = _state(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 3)))
    ckpt.save(two, tmp_path, 1)
    one = _state(nn.Sequential(nn.Linear(4, 4)))  # its names, 0.weight and 0.bias, are a subset of the saved ones
    with pytest.raises(ckpt.CheckpointMismatch, match=r"only in the checkpoint: model\.1\.bias, model\.1\.weight, "):
        ckpt.load(one, ckpt.step_dir(tmp_path, 1))
    ckpt.save(one, tmp_path, 2)
    with pytest.raises(ckpt.CheckpointMismatch, match=r"only in the checkpoint: none; only in this state: model\.1"):
        ckpt.load(two, ckpt.step_dir(tmp_path, 2))
    ckpt.load({"model": two["model"]}, ckpt.step_dir(tmp_path, 1))  # a part left out is not compared


def test_dcps_own_failure_is_a_checkpoint_error(tmp_path):
    ckpt.save({"w": torch.ones(6)}, tmp_path, 1)
    with pytest.raises(ckpt.CheckpointError, match=r"the load of .* failed: rank 0: ValueError: Size mismatch"):
        ckpt.load({"w": torch.ones(4)}, ckpt.step_dir(tmp_path, 1))  # a CheckpointException (BaseException) in DCP


def test_the_newest_checkpoint_is_found_past_eight_digits_and_a_malformed_marker_is_skipped(tmp_path):
    for step in (99_999_999, 10**8, 10**8 + 1):
        ckpt.save({"w": torch.full((2,), float(step))}, tmp_path, step)
    assert ckpt.step_dir(tmp_path, 10**8).name == "step_100000000"
    assert ckpt.latest_complete(tmp_path) == ckpt.step_dir(tmp_path, 10**8 + 1)
    marker = ckpt.step_dir(tmp_path, 10**8 + 1) / ckpt.MARKER
    for text in ("{", "[]", json.dumps({"step": 1, "files": []}), "\xff"):
        marker.write_text(text, errors="surrogateescape")
        with pytest.warns(UserWarning, match=r"skipping a checkpoint that cannot be trusted: .*malformed"):
            assert ckpt.latest_complete(tmp_path) == ckpt.step_dir(tmp_path, 10**8)


def test_a_file_is_named_as_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    for call in (lambda: ckpt.read_marker(tmp_path / "f"), lambda: ckpt.latest_complete(tmp_path / "f"),
                 lambda: ckpt.save({"w": torch.ones(1)}, tmp_path / "f", 1),
                 lambda: ckpt.load({"w": torch.ones(1)}, tmp_path / "f")):
        with pytest.raises(ValueError, match=r"/f is a file, not a checkpoint directory"):
            call()
