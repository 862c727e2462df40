"""Offline digits, the IDX parser and the Fashion-MNIST cache, without touching the network."""

import gzip
import urllib.error

import numpy as np
import pytest
import torch

import d2lmp.data as data
from d2lmp.data import DataUnavailable, fetch, load_digits, load_fashion_mnist, md5sum, read_idx, write_idx


def test_digits_offline_resized_standardised():
    d = load_digits(resize=32)
    assert d.x_train.shape[1:] == (1, 32, 32) and len(d.x_train) + len(d.x_test) == 1797
    assert d.y_train.dtype == torch.int64 and set(d.y_train.tolist()) == set(range(10))
    assert abs(float(d.x_train.mean())) < 1e-4 and abs(float(d.x_train.std()) - 1) < 1e-3
    assert load_digits(resize=None).x_test.shape[1:] == (1, 8, 8)
    train, test = d.loaders(batch_size=100)
    x, y = next(iter(train))
    assert x.shape == (100, 1, 32, 32) and y.shape == (100,)
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1.5)


def test_digits_split_is_reproducible():
    a, b = load_digits(seed=3), load_digits(seed=3)
    assert torch.equal(a.y_test, b.y_test)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("suffix", [".idx", ".gz"])
def test_idx_round_trip(tmp_path, dtype, suffix):
    array = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype)
    if dtype == np.uint8:
        array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = write_idx(tmp_path / f"a{suffix}", array)
    back = read_idx(path)
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)


def test_idx_known_bytes(tmp_path):
    # 1-D unsigned bytes [7, 9]: 00 00 08 01 | 00 00 00 02 | 07 09
    path = tmp_path / "labels-idx1-ubyte"
    path.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 2, 7, 9]))
    np.testing.assert_array_equal(read_idx(path), [7, 9])


@pytest.mark.parametrize("payload, words", [
    (bytes([1, 0, 8, 1, 0, 0, 0, 1, 5]), "two zero bytes"),
    (bytes([0, 0, 0x42, 1, 0, 0, 0, 1, 5]), "type code"),
    (bytes([0, 0, 8, 2, 0, 0, 0, 2]), "truncated"),
    (bytes([0, 0, 8, 1, 0, 0, 0, 3, 5]), "needs 3 data bytes"),
])
def test_idx_bad_files(tmp_path, payload, words):
    path = tmp_path / "bad"
    path.write_bytes(payload)
    with pytest.raises(ValueError, match=words):
        read_idx(path)


def _tiny_fashion(folder):
    g = np.random.default_rng(0)
    files = {}
    for prefix, n in (("train", 6), ("t10k", 4)):
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", g.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", g.integers(0, 10, n, dtype=np.uint8))
    for path in folder.iterdir():
        files[path.name] = md5sum(path)
    return files


def _no_network(*args, **kwargs):
    raise urllib.error.URLError("network disabled in tests")


def test_fashion_mnist_uses_verified_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(data.urllib.request, "urlopen", _no_network)
    files = _tiny_fashion(tmp_path)
    d = load_fashion_mnist(folder=tmp_path, files=files, resize=32)
    assert d.x_train.shape == (6, 1, 32, 32) and d.x_test.shape == (4, 1, 32, 32)
    assert len(d.classes) == 10


def test_fashion_mnist_downloads_from_a_mirror_and_checks_md5(tmp_path, monkeypatch):
    source = tmp_path / "mirror"
    source.mkdir()
    files = _tiny_fashion(source)
    cache = tmp_path / "cache"
    d = load_fashion_mnist(folder=cache, files=files, mirrors=(source.as_uri() + "/",))
    assert sorted(p.name for p in cache.iterdir()) == sorted(files)
    assert d.x_train.shape == (6, 1, 28, 28)
    bad = {name: "0" * 32 for name in files}
    (cache / "train-images-idx3-ubyte.gz").unlink()
    with pytest.raises(ValueError, match="checksum mismatch"):
        fetch("train-images-idx3-ubyte.gz", bad["train-images-idx3-ubyte.gz"], cache, (source.as_uri() + "/",))
    assert not list(cache.glob("*.part"))


def test_corrupted_cache_is_replaced(tmp_path):
    source = tmp_path / "mirror"
    source.mkdir()
    files = _tiny_fashion(source)
    cache = tmp_path / "cache"
    cache.mkdir()
    name = "t10k-labels-idx1-ubyte.gz"
    (cache / name).write_bytes(gzip.compress(b"broken"))
    path = fetch(name, files[name], cache, (source.as_uri() + "/",))
    assert md5sum(path) == files[name]


def test_offline_fails_with_one_sentence_naming_the_default(tmp_path, monkeypatch):
    monkeypatch.setattr(data.urllib.request, "urlopen", _no_network)
    with pytest.raises(DataUnavailable) as info:
        load_fashion_mnist(folder=tmp_path)
    message = str(info.value)
    assert "load_digits()" in message and message.count(". ") == 0 and message.endswith(".")
    assert len(info.value.attempts) == len(data.FASHION_MNIST_MIRRORS)


def test_published_checksums_are_md5_hex():
    assert len(data.FASHION_MNIST_FILES) == 4
    assert all(len(v) == 32 and int(v, 16) >= 0 for v in data.FASHION_MNIST_FILES.values())


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("D2LMP_DATA", str(tmp_path))
    assert data.cache_dir() == tmp_path


def test_fashion_mnist_present_only_with_all_four_files(tmp_path, monkeypatch):
    monkeypatch.setenv("D2LMP_DATA", str(tmp_path))
    assert not data.fashion_mnist_present()
    folder = tmp_path / "fashion-mnist"
    folder.mkdir()
    _tiny_fashion(folder)
    assert data.fashion_mnist_present() and data.fashion_mnist_present(folder)
    (folder / "t10k-labels-idx1-ubyte.gz").unlink()
    assert not data.fashion_mnist_present()
