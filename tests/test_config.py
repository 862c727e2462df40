import os

import pytest
import torch

from d2lmp import config


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("YES", True), ("on", True),
                                             ("0", False), ("", False), ("no", False)])
def test_quick_mode_reads_environment_each_call(monkeypatch, value, expected):
    monkeypatch.setenv("D2LMP_QUICK", value)
    assert config.quick_mode() is expected
    assert config.pick(full="full", quick="quick") == ("quick" if expected else "full")


def test_set_seed_makes_torch_repeatable():
    config.set_seed(3)
    a = torch.rand(3)
    config.set_seed(3)
    assert torch.equal(a, torch.rand(3))


def test_set_threads_returns_previous_and_rejects_zero():
    before = torch.get_num_threads()
    assert config.set_threads(1) == before
    assert torch.get_num_threads() == 1
    config.set_threads(before)
    with pytest.raises(ValueError, match="at least 1"):
        config.set_threads(0)


def test_in_colab_false_here():
    assert config.in_colab() is False


def test_quick_mode_set_restores_the_previous_setting(monkeypatch):
    monkeypatch.setenv(config.QUICK_ENV, "1")
    with config.quick_mode_set(False):
        assert not config.quick_mode()
    assert config.quick_mode()
    monkeypatch.delenv(config.QUICK_ENV)
    with config.quick_mode_set(True):
        assert config.pick(full=1, quick=2) == 2
    assert config.QUICK_ENV not in os.environ
