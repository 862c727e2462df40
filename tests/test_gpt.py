"""The small GPT: shapes, causality, seeded weights, its stage form, the weight layout tensor parallelism
splits, the pipeline running it, and training that learns more than character frequencies."""

import math
from dataclasses import replace
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from d2lmp.config import set_threads
from d2lmp.gpt import GPT, PRESETS, GPTConfig, causal_attention, generate, gpt_sequential, head_rows, lm_loss, preset
from d2lmp.gpt_train import train_gpt
from d2lmp.model.transformer_accounting import parameter_count
from d2lmp.parallel import pipeline as P
from d2lmp.parallel.launch import launch
from d2lmp.text import char_data, unigram_cross_entropy

TINY = preset("tiny")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models run fastest on one thread; two threads on two busy cores ran 25-50 times slower here."""
    before = set_threads(1)
    yield
    set_threads(before)


def _ids(config, batch=2, seed=0):
    return torch.randint(config.vocab, (batch, config.seq), generator=torch.Generator().manual_seed(seed))


def test_shapes_and_preset_sizes():
    model = GPT(TINY)
    assert model(_ids(TINY, 3)).shape == (3, TINY.seq, TINY.vocab)
    assert model(_ids(TINY)[:, :5]).shape == (2, 5, TINY.vocab)  # shorter than the context is fine
    assert 2_000 < parameter_count(TINY.shape()).total < 10_000  # a few thousand: tests and quick mode
    assert 9e6 < parameter_count(PRESETS["small"].shape()).total < 12e6  # ~10 M: full-size runs
    with pytest.raises(ValueError, match="longer than the model's context"):
        model(torch.zeros(1, TINY.seq + 1, dtype=torch.long))


@pytest.mark.parametrize("flash", [False, True])
def test_a_later_token_never_changes_an_earlier_output(flash):
    config = replace(TINY, flash=flash)
    model = GPT(config).eval()
    idx = _ids(config)
    base = model(idx)
    for t in (0, 5, config.seq - 1):
        changed = idx.clone()
        changed[:, t] = (changed[:, t] + 1) % config.vocab
        out = model(changed)
        assert torch.equal(out[:, :t], base[:, :t]), t  # the past is untouched, bit for bit
        assert not torch.allclose(out[:, t], base[:, t])  # and the change is seen from t on


def test_flash_attention_equals_the_written_out_one():
    idx = _ids(TINY)
    torch.testing.assert_close(GPT(replace(TINY, flash=True))(idx), GPT(TINY)(idx), rtol=1e-5, atol=1e-6)


def test_same_seed_same_weights_and_the_global_generator_is_left_alone():
    state = torch.random.get_rng_state()
    a, b, c = GPT(TINY, seed=3), GPT(TINY, seed=3), GPT(TINY, seed=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.blocks[0].attn.qkv.weight, c.blocks[0].attn.qkv.weight)
    seq_weights = gpt_sequential(TINY, seed=3).state_dict().values()  # another builder, the same weights
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), seq_weights))
    # GPT-2's initialisation: N(0, 0.02), the residual projections scaled by 1/sqrt(2 * layers), biases 0
    big = GPT(replace(TINY, hidden=64, heads=4))
    assert big.blocks[0].mlp.fc.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert big.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(4), rel=0.05)
    assert big.blocks[0].attn.qkv.bias.abs().sum() == 0


@pytest.mark.parametrize("tied", [True, False])
def test_the_sequential_form_equals_the_module_exactly(tied):
    config = replace(TINY, tied=tied, dropout=0.1)
    model, stages = GPT(config, seed=1), gpt_sequential(config, seed=1)
    assert [name for name, _ in stages.named_children()] == ["embed", "block1", "block2", "head"]
    assert sum(p.numel() for p in stages.parameters()) == sum(p.numel() for p in model.parameters())
    idx, targets = _ids(config), _ids(config, seed=1)
    outs = []
    for net in (model, stages):
        torch.manual_seed(7)  # the same dropout masks
        out = net(idx)
        lm_loss(out, targets).backward()
        outs.append((out, [p.grad for p in net.parameters()]))
    assert torch.equal(outs[0][0], outs[1][0])
    assert all(torch.equal(g, h) for g, h in zip(outs[0][1], outs[1][1]))
    assert (stages.head.lm_head.weight is stages.embed.token.weight) == tied


def test_recomputation_changes_no_gradient():
    idx, targets = _ids(TINY), _ids(TINY, seed=1)
    grads = {}
    for recompute in ("none", "selective", "full"):
        model = GPT(replace(TINY, dropout=0.1, recompute=recompute))
        torch.manual_seed(0)  # checkpoint replays the random state, so recomputed dropout masks match
        lm_loss(model(idx), targets).backward()
        grads[recompute] = [p.grad for p in model.parameters()]
    for recompute in ("selective", "full"):
        for g, h in zip(grads[recompute], grads["none"]):
            torch.testing.assert_close(g, h, rtol=1e-6, atol=1e-7)


def test_heads_split_by_head_rows_give_the_unsplit_attention():
    """The documented layout: column-parallel QKV by heads, row-parallel output projection, summed."""
    config = replace(TINY, heads=4, hidden=16)
    attn = GPT(config).blocks[0].attn
    x = torch.randn(2, config.seq, config.hidden, generator=torch.Generator().manual_seed(0))
    mask = attn.core.causal_mask
    d, partial_sum = config.head_dim, torch.zeros_like(x)
    for heads in (range(0, 2), range(2, 4)):  # two "ranks" of two heads each
        rows = head_rows(config, heads)
        q, k, v = F.linear(x, attn.qkv.weight[rows], attn.qkv.bias[rows]).split(len(heads) * d, dim=2)
        q, k, v = (t.view(2, config.seq, len(heads), d).transpose(1, 2) for t in (q, k, v))
        y = causal_attention(q, k, v, mask).transpose(1, 2).reshape(2, config.seq, len(heads) * d)
        partial_sum += y @ attn.proj.weight[:, rows[:len(heads) * d]].T
    torch.testing.assert_close(partial_sum + attn.proj.bias, attn(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="consecutive heads"):
        head_rows(config, range(3, 5))


def _pipeline_both_ties(rank, world, x, y):
    loss = partial(lm_loss, reduction="sum")
    return [P.pipeline_step(rank, world, partial(gpt_sequential, replace(TINY, tied=tied), 0), [2, 2], x, y,
                            "1f1b", 2, loss_fn=loss) for tied in (False, True)]


def test_the_pipeline_runs_the_stages_and_a_tied_weight_needs_its_two_gradients_summed():
    x, y = _ids(TINY, 4), _ids(TINY, 4, seed=1)
    untied, tied = zip(*launch(_pipeline_both_ties, 2, x, y))
    loss = partial(lm_loss, reduction="sum")
    ref = P.sequential_reference(partial(gpt_sequential, replace(TINY, tied=False), 0), x, y, loss)
    grads = {k: v for r in untied for k, v in r.grads.items()}
    assert set(grads) == set(ref.grads)
    for k in grads:
        torch.testing.assert_close(grads[k], ref.grads[k], rtol=1e-5, atol=1e-6, msg=k)
    torch.testing.assert_close(untied[-1].outputs, ref.outputs, rtol=1e-5, atol=1e-6)
    # Tied: the first stage's embedding and the last stage's head are one weight; its gradient is their sum.
    ref = P.sequential_reference(partial(gpt_sequential, TINY, 0), x, y, loss)
    summed = tied[0].grads["embed.token.weight"] + tied[1].grads["head.lm_head.weight"]
    torch.testing.assert_close(summed, ref.grads["embed.token.weight"], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(tied[0].grads["embed.token.weight"], ref.grads["embed.token.weight"])


def test_training_learns_more_than_character_frequencies():
    data = char_data()
    baseline = unigram_cross_entropy(data.train, data.val, data.vocab_size)
    history = train_gpt(GPT(TINY), data, steps=150, seq=TINY.seq, batch_size=16, lr=1e-2, progress=False)
    assert history.steps[0] == 0 and history.steps[-1] == 150
    assert len(history.steps) == len(history.train_loss) == len(history.val_loss) == len(history.seconds)
    assert history.val_loss[0] == pytest.approx(math.log(TINY.vocab), abs=0.2)  # a fresh model guesses uniformly
    assert history.final_val_loss < baseline - 0.3, (history.val_loss, baseline)  # it uses the context
    assert history.train_loss[-1] < history.train_loss[0] - 1.0


def test_generate_is_seeded_and_keeps_the_prompt():
    model, prompt = GPT(TINY), torch.zeros(1, 3, dtype=torch.long)
    a, b = (generate(model, prompt, 20, TINY.seq, seed=5) for _ in range(2))
    assert a.shape == (1, 23) and torch.equal(a, b) and torch.equal(a[:, :3], prompt)


@pytest.mark.parametrize("kwargs, word", [
    (dict(hidden=18, heads=4), "divisible by heads"),
    (dict(dropout=1.0), "dropout"),
    (dict(recompute="some"), "recompute"),
    (dict(layers=0), "layers"),
])
def test_bad_configs_are_value_errors(kwargs, word):
    with pytest.raises(ValueError, match=word):
        GPTConfig(**kwargs)
    with pytest.raises(ValueError, match="unknown preset"):
        preset("huge")
    with pytest.raises(ValueError, match="steps"):
        train_gpt(GPT(TINY), char_data(text="abc" * 100), steps=0, seq=4)
