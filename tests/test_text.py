"""The offline text: a fixed alphabet, a split that covers the corpus, seeded batches whose targets are the
inputs shifted by one, and the unigram baseline a language model must beat."""

import math

import pytest
import torch

from d2lmp.text import ALPHABET, CharTokenizer, batches, char_data, corpus_text, get_batch, unigram_cross_entropy


def test_the_corpus_ships_with_python_in_the_fixed_alphabet():
    text = corpus_text()
    assert len(text) > 100_000 and set(text) <= set(ALPHABET) and len(ALPHABET) == 96
    assert "for" in text and "class" in text


def test_tokenizer_round_trips_and_refuses_unknown_characters():
    tok = CharTokenizer()
    s = "def f(x):\n    return x ** 2  # ~"
    assert tok.decode(tok.encode(s)) == s and tok.vocab_size == 96
    with pytest.raises(ValueError, match="outside the alphabet"):
        tok.encode("caf\u00e9")


def test_the_split_covers_the_corpus_in_order():
    data = char_data(val_fraction=0.1)
    whole = CharTokenizer().encode(corpus_text())
    assert torch.equal(torch.cat([data.train, data.val]), whole)
    assert len(data.val) == pytest.approx(0.1 * len(whole), abs=1)
    with pytest.raises(ValueError, match="val_fraction"):
        char_data(val_fraction=1.0)


def test_batches_are_seeded_and_targets_are_shifted_inputs():
    ids = torch.arange(1000)
    (x, y), (x2, y2) = next(batches(ids, 4, 8, seed=3)), next(batches(ids, 4, 8, seed=3))
    assert x.shape == y.shape == (4, 8) and torch.equal(x, x2) and torch.equal(y, y2)
    assert torch.equal(y, x + 1)  # on 0, 1, 2, ...: the next id
    assert not torch.equal(x, next(batches(ids, 4, 8, seed=4))[0])
    with pytest.raises(ValueError, match="no window"):
        get_batch(ids[:8], 1, 8, torch.Generator())


def test_unigram_cross_entropy_is_the_entropy_of_the_frequencies():
    train = torch.tensor([0, 0, 1, 1])  # with add-one smoothing over 2 symbols: 1/2 each
    assert unigram_cross_entropy(train, torch.tensor([0, 1, 1]), 2) == pytest.approx(math.log(2))
    train = torch.tensor([0] * 98 + [1] * 0)  # counts 99 and 1 after smoothing
    assert unigram_cross_entropy(train, torch.tensor([1]), 2) == pytest.approx(-math.log(1 / 100))
