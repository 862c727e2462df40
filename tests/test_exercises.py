"""Every notebook's exercises check themselves: hints for all, checks for at least three, solutions that pass.

For each exercise with a check, the reference answer must pass and each listed typical wrong answer must
fail with its specific message. The notebook must show each hint and each check call, and never the
solution text; its Exercises section is generated from the module (``tools/exercise_cells.py``), so that each
question is written once. A find-the-bug exercise fails as the notebook shows it and passes once fixed;
every ring or sharding exercise has a library shortcut (right numbers, wrong messages) that must fail
with a message that says what was asked, and another right algorithm that must pass.
"""

import dataclasses
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from d2lmp.exercises import _swap_code
from d2lmp.exercises._code import same_code
from d2lmp.exercises.core import Exercise, Verdict
from tools.exercise_cells import HEADING, INTRO, check_code, section, section_bounds, update_section
from tools.notebooks import paths, read

NOTEBOOKS = paths()
MIN_CHECKS = 3
# A deadlocked answer is found when the exercise's timeout ends (10 s, room for a busy machine): the same hang, found
# with a shorter one.
HANG_TIMEOUT_S = 3.0


def _slug(path: Path) -> str:
    return read(path).slug


def _module(path: Path):
    return importlib.import_module(f"d2lmp.exercises.{_slug(path)}")


ALL = [(path.name, ex) for path in NOTEBOOKS for ex in _module(path).EXERCISES]
CHECKED = [(name, ex) for name, ex in ALL if ex.checker is not None]
WRONG = [(name, ex, answer, fragment) for name, ex in CHECKED for answer, fragment in ex.wrong]


def _id(item):
    return f"{item[0]}::{item[1].key}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_has_a_hint_and_enough_have_checks(path):
    exercises = _module(path).EXERCISES
    assert exercises, "the notebook has no exercises module entries"
    assert all(isinstance(e, Exercise) for e in exercises)
    assert [e.number for e in exercises] == list(range(1, len(exercises) + 1)), "numbered 1..n in order"
    assert len({e.key for e in exercises}) == len(exercises), "keys are unique"
    for e in exercises:
        assert e.hint_text.strip() and e.solution_text.strip(), f"{e.key} needs a hint and a solution"
    checks = [e for e in exercises if e.checker is not None]
    assert len(checks) >= MIN_CHECKS, f"only {len(checks)} exercises have a check (need {MIN_CHECKS})"
    for e in checks:
        assert e.wrong, f"{e.key}: a check needs at least one typical wrong answer that it rejects"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_shows_hints_and_check_calls_but_not_solutions(path):
    markdown = "\n".join(c.source for c in read(path).markdown())
    code = "\n".join(c.source for c in read(path).code())
    for e in _module(path).EXERCISES:
        assert e.hint_text.strip() in markdown, f"{e.key}: the hint is not shown in the notebook"
        if e.checker is not None:
            assert re.search(rf"\bex\.{e.key}\.check\(", code), f"{e.key}: no cell calls ex.{e.key}.check(...)"
        assert e.solution_text.strip() not in markdown + code, f"{e.key}: the solution is visible in the notebook"


@pytest.mark.parametrize("item", CHECKED, ids=_id)
def test_solution_passes_its_check(item, capsys):
    _, ex = item
    verdict = ex.check(ex.reference)
    assert isinstance(verdict, Verdict) and verdict.correct, f"{ex.key}: the reference answer fails: {verdict}"


@pytest.mark.parametrize("item", WRONG, ids=lambda w: f"{w[0]}::{w[1].key}::{w[3][:30]}")
def test_typical_wrong_answer_fails_with_its_message(item, capsys, monkeypatch):
    _, ex, answer, fragment = item
    hangs = fragment == "ranks hung"
    if hangs:
        monkeypatch.setattr(_swap_code, "SWAP_TIMEOUT_S", HANG_TIMEOUT_S)
    verdict = ex.check(answer)
    assert isinstance(verdict, Verdict) and not verdict.correct, f"{ex.key}: a wrong answer passed"
    assert fragment in verdict.message, f"{ex.key}: expected {fragment!r} in {verdict.message!r}"
    if hangs:
        assert f"within {HANG_TIMEOUT_S:g} s" in verdict.message, verdict.message


@pytest.mark.parametrize("item", CHECKED, ids=_id)
def test_unanswered_exercise_says_what_to_do(item, capsys):
    _, ex = item
    assert ex.check() is None
    assert "not answered yet" in capsys.readouterr().out


def test_open_question_check_points_to_the_solution(capsys):
    open_ones = [ex for _, ex in ALL if ex.checker is None]
    if not open_ones:
        pytest.skip("every exercise has a check")
    assert open_ones[0].check("anything") is None
    assert "solution()" in capsys.readouterr().out



@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_exercise_is_the_module_attribute_its_key_names(path):
    """The notebook calls ``ex.<key>.check(...)``: that name must be the exercise itself, in every module."""
    module = _module(path)
    for e in module.EXERCISES:
        assert getattr(module, e.key, None) is e, f"{module.__name__}.{e.key} is not the exercise keyed {e.key!r}"
    assert {e.key for e in module.EXERCISES} <= set(module.__all__), "every exercise is public"


@pytest.mark.slow  # a fresh interpreter imports torch and every exercise module
def test_importing_the_exercise_modules_builds_no_model():
    """Importing does no work: a module that needs a network's figures builds it when an exercise is first used."""
    code = textwrap.dedent("""
        import importlib, sys
        from torch import nn

        def refuse(self, *args, **kwargs):
            raise AssertionError(f"{type(self).__name__} built while importing")

        nn.Module.__init__ = refuse
        for slug in sys.argv[1:]:
            importlib.import_module(f"d2lmp.exercises.{slug}")
    """)
    slugs = [_slug(path) for path in NOTEBOOKS]
    done = subprocess.run([sys.executable, "-c", code, *slugs], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_solution_prints_and_shows_the_reference_function(capsys):
    for _, ex in ALL:
        ex.solution()
        out = capsys.readouterr().out
        assert out.startswith(f"Solution to exercise {ex.number}:") and ex.solution_text in out
        if callable(ex.reference):
            assert f"def {ex.reference.__name__}(" in out and "# d2lmp/exercises/" in out, ex.key


def test_the_notebook_editor_is_a_tool_not_part_of_the_package():
    assert importlib.util.find_spec("d2lmp.exercises.cells") is None
    assert importlib.util.find_spec("tools.exercise_cells") is not None

# --------------------------------------------------------------------------------------------
# One source for each question: the notebook's Exercises section is generated from the module


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercise_cells_are_generated_from_the_module(path):
    """The cells between ## Exercises and ## References are exactly what ``tools.exercise_cells.section`` makes of the
    module: run ``python -m tools.update_exercises`` after changing a question, a hint or a check cell."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    start, end = section_bounds(nb["cells"])
    found = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"][start:end]]
    expected = section(_slug(path), _module(path).EXERCISES)
    for i, (got, want) in enumerate(zip(found, expected)):
        assert got == want, f"cell {start + i} differs (run python -m tools.update_exercises):\n{got!r}\n{want!r}"
    assert len(found) == len(expected), "the section has more or fewer cells than the module makes; regenerate it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_style_a_title_and_a_check_cell_under_every_checked_exercise(path):
    for e in _module(path).EXERCISES:
        assert e.title.strip() and not e.question.lstrip().startswith("**"), f"{e.key}: a title, and no bold in front"
        assert (check_code(e) is None) == (e.checker is None)
        if callable(e.reference) and e.checker is not None:
            assert e.function, f"{e.key}: a code exercise names the function the student writes"
    markdown = [c for kind, c in section(_slug(path), _module(path).EXERCISES) if kind == "markdown"]
    assert markdown[0] == f"{HEADING}\n\n{INTRO}", "the same introduction in every notebook"


def test_update_keeps_unchanged_cells_and_their_outputs():
    path = next(p for p in NOTEBOOKS if _slug(p) == "nccl_collectives")
    nb = json.loads(path.read_text(encoding="utf-8"))
    start, end = section_bounds(nb["cells"])
    before = [dict(c) for c in nb["cells"]]
    assert not update_section(nb, _slug(path), _module(path).EXERCISES), "an up-to-date section stays as it is"
    assert nb["cells"] == before
    exercises = list(_module(path).EXERCISES)
    exercises[2] = dataclasses.replace(exercises[2], hint_text="A new hint.")
    assert update_section(nb, _slug(path), exercises)
    assert nb["cells"][:start] == before[:start] and nb["cells"][end:] == before[end:], "other cells are untouched"
    changed = [i for i, (a, b) in enumerate(zip(before[start:end], nb["cells"][start:end])) if a != b]
    assert len(changed) == 1 and "A new hint." in "".join(nb["cells"][start + changed[0]]["source"])
    assert nb["cells"][start + changed[0]]["id"] == before[start + changed[0]]["id"]
    assert all(c.get("outputs") == b.get("outputs") for c, b in zip(nb["cells"], before) if c["cell_type"] == "code")


def test_numbers_in_questions_come_from_the_library():
    from d2lmp.exercises import nccl_collectives
    from d2lmp.model.costmodel import PRESETS

    preset = PRESETS["8x H100 (NVSwitch)"]
    assert f"α = {preset.alpha * 1e6:g} µs" in nccl_collectives.ring_beats_tree.question
    assert f"{preset.link_bytes_per_s / 1e9:g} GB/s" in nccl_collectives.ring_beats_tree.question
    from d2lmp.exercises import gpu_memory, hardware_configurations, inference_accelerators
    from d2lmp.gpu_specs import find_gpu_spec

    h200, h100, t4 = (find_gpu_spec(name) for name in ("H200", "H100", "T4"))
    assert f"{h200.bandwidth_gbs:,.0f} GB/s" in gpu_memory.gddr6_pins.question
    assert f"{h200.bandwidth_gbs / 1000:g} instead of {h100.bandwidth_gbs / 1000:g} TB/s" in \
        gpu_memory.h200_vs_h100.question
    assert f"({t4.tdp_w:g} W each" in hardware_configurations.t4_power_supply.question
    assert f"{t4.int8_tops:g} INT8 TOPS, {t4.fp16_tensor_tflops:g} FP16 TFLOPS, {t4.bandwidth_gbs:g} GB/s" in \
        inference_accelerators.t4_compute_bound.question
    assert f"a {t4.memory_gb:g} GB T4" in inference_accelerators.t4_models.question


def test_order_of_transforms_rejects_the_other_order_because_its_two_transforms_do_not_commute():
    import math

    from d2lmp.exercises import gpus_in_deep_learning as nb01
    from d2lmp.graphics import rotation_x, translation

    rotate, shift = rotation_x(math.radians(45)), translation(0, 2, 0)
    assert not torch.allclose(shift @ rotate, rotate @ shift), "the exercise's pair must not commute"
    right, other = nb01.rotate_then_shift.checker(shift @ rotate), nb01.rotate_then_shift.checker(rotate @ shift)
    assert right.correct and not other.correct and "other order" in other.message
    # a shift along x commutes with a rotation about x: with that pair the check could not tell the orders apart
    shift_x = translation(2, 0, 0)
    assert torch.allclose(shift_x @ rotate, rotate @ shift_x)
    assert not nb01.rotate_then_shift.checker(rotate @ shift_x).correct


# --------------------------------------------------------------------------------------------
# Find the bug: the function as given fails, as the notebook shows it too; the fixed one passes

BUGS = [(name, ex) for name, ex in CHECKED if ex.given is not None]


def test_every_parallel_notebook_has_a_bug_to_find():
    notebooks = {name[:2] for name, _ in BUGS}
    assert {"12", "13", "14", "15", "16"} <= notebooks, f"find-the-bug exercises only in {sorted(notebooks)}"


@pytest.mark.parametrize("item", BUGS, ids=_id)
def test_the_bug_as_the_notebook_shows_it_fails_and_the_fix_passes(item, capsys, ipython_shell):
    """The check cell, run as a notebook runs it (IPython compiles each statement of a cell on its own), gets
    "bug included" without a diagnosis; the fixed function passes; a function that calls the given one is
    run on the ranks, and fails (``wrong`` holds it, with the diagnosis it must get)."""
    _, ex = item
    cell = check_code(ex)
    code, call = cell.rsplit("\n\n\n", 1)
    name = ex.function.split("(")[0]
    assert call == f"ex.{ex.key}.check({name})"
    assert ipython_shell.run_cell(code).success
    for shown in (ipython_shell.user_ns[name], _exec(code)[name]):  # with its source (IPython), and without (exec)
        verdict = ex.check(shown)
        assert verdict is not None and not verdict.correct and "bug included" in verdict.message
    assert ex.check(ex.reference).correct
    assert not same_code(ex.reference, ex.given), "the fix differs from the function given"


def _exec(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<a cell without its source>", "exec"), namespace)
    return namespace


def test_same_code_ignores_names_and_comments_not_a_changed_line():
    def f(x):
        return x + 1  # one

    def g(y):
        return y + 1

    def h(x):
        return x + 1  # another comment

    def k(x):
        return x - 1

    assert same_code(f, h) and not same_code(f, k) and not same_code(f, g), "a renamed argument is a change"
    assert not same_code(f, "not a function")


def test_same_code_ignores_annotations_and_decorators_as_the_cells_drop_them():
    import typing

    def plain(x):
        return x + 1

    @typing.no_type_check
    def annotated(x: int) -> int:
        return x + 1

    def changed(x: int) -> int:
        return x - 1

    assert same_code(plain, annotated) and not same_code(plain, changed)


# --------------------------------------------------------------------------------------------
# Library shortcuts: right numbers, wrong messages; each must fail with a message that says what was asked


def _all_gather_library(tensor):
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return torch.stack(parts)


def _all_gather_into_tensor(tensor):
    world = dist.get_world_size()
    out = torch.empty((world * tensor.shape[0], *tensor.shape[1:]), dtype=tensor.dtype)
    dist.all_gather_into_tensor(out, tensor.contiguous())
    return out.view(world, *tensor.shape)


def _reduce_scatter_by_all_reduce(tensor):
    total = tensor.flatten().clone()
    dist.all_reduce(total)
    return torch.tensor_split(total, dist.get_world_size())[dist.get_rank()]


def _all_reduce_library(tensor):
    total = tensor.clone()
    dist.all_reduce(total)
    return total


def _grad_shard_by_all_reduce(rank, world, flat_grad):
    total = flat_grad.clone()
    dist.all_reduce(total)
    return total.chunk(world)[rank]


def _zero_step_without_sharding(rank, world, params, grad, momentum, lr):
    total = grad.clone()
    dist.all_reduce(total)
    momentum.mul_(0.9).add_(total.chunk(world)[rank])
    shards = params.chunk(world)
    shards[rank].sub_(lr * momentum)
    gathered = torch.empty_like(params)
    dist.all_gather_into_tensor(gathered, shards[rank].clone())
    return gathered, momentum


def _column_forward_by_all_reduce(rank, world, x, weight, bias):
    k = weight.shape[0] // world
    out = torch.zeros(x.shape[0], weight.shape[0])
    out[:, rank * k:(rank + 1) * k] = torch.nn.functional.linear(x, weight[rank * k:(rank + 1) * k],
                                                                 bias[rank * k:(rank + 1) * k])
    dist.all_reduce(out)
    return out


def _global_stats_by_padded_all_reduce(rank, world, x):
    """Right statistics, not SyncBatchNorm's traffic: every example is summed into a buffer of the global batch."""
    counts = torch.zeros(world, dtype=torch.long)
    counts[rank] = len(x)
    dist.all_reduce(counts)
    whole = torch.zeros(int(counts.sum()), *x.shape[1:])
    start = int(counts[:rank].sum())
    whole[start:start + len(x)] = x
    dist.all_reduce(whole)
    return whole.mean(dim=(0, 2, 3)), whole.var(dim=(0, 2, 3), correction=0)
def _pass_by_all_gather(kv):
    parts = [torch.empty_like(kv) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, kv)
    return parts[(dist.get_rank() - 1) % dist.get_world_size()]


def _ring_attention_by_all_gather(q, k, v):
    world, n = dist.get_world_size(), q.shape[2]
    keys, values = [torch.empty_like(k) for _ in range(world)], [torch.empty_like(v) for _ in range(world)]
    dist.all_gather(keys, k)
    dist.all_gather(values, v)
    mask = torch.ones(n, n * world, dtype=torch.bool).tril(dist.get_rank() * n)
    return torch.nn.functional.scaled_dot_product_attention(q, torch.cat(keys, dim=2), torch.cat(values, dim=2),
                                                            attn_mask=mask)


def _all_to_all_single(blocks, recv_sizes):
    out = torch.empty(sum(recv_sizes), *blocks[0].shape[1:])
    dist.all_to_all_single(out, torch.cat(blocks), list(recv_sizes), [len(b) for b in blocks])
    return list(torch.split(out, list(recv_sizes)))


def _grad_shard_by_all_gather(rank, world, flat_grad):
    """Right shard, not stage 2's traffic: every rank's whole gradient gathered, then this rank's piece summed."""
    parts = [torch.empty_like(flat_grad) for _ in range(world)]
    dist.all_gather(parts, flat_grad)
    return sum(p.chunk(world)[rank] for p in parts)


def _accumulate_by_all_reduce_per_micro_step(rank, world, model, xs, ys, global_batch, k):
    """Right gradients, k times the traffic: DDP without no_sync, every micro-step summed over the ranks."""
    total = [torch.zeros_like(p) for p in model.parameters()]
    for xj, yj in zip(xs.tensor_split(k), ys.tensor_split(k)):
        model.zero_grad()
        (torch.nn.functional.cross_entropy(model(xj), yj, reduction="sum") / global_batch).backward()
        for t, p in zip(total, model.parameters()):
            dist.all_reduce(p.grad)
            t += p.grad
    return total


SHORTCUTS = [
    ("nccl_collectives", "all_gather_code", _all_gather_library, "your function called dist.all_gather;"),
    ("nccl_collectives", "all_gather_code", _all_gather_into_tensor, "called dist.all_gather_into_tensor"),
    ("nccl_collectives", "reduce_scatter_code", _reduce_scatter_by_all_reduce, "your function called dist.all_reduce"),
    ("nccl_collectives", "ring_bug", _all_reduce_library, "the ring built from point-to-point messages"),
    ("sharding_the_training_state", "stage2_shard", _grad_shard_by_all_reduce, "2 times the 48 bytes of stage 2's"),
    ("sharding_the_training_state", "stage2_shard", _grad_shard_by_all_gather, "through dist.all_gather"),
    ("sharding_the_training_state", "stale_shard", _zero_step_without_sharding,
     "1.5 times the 96 bytes of a ZeRO-2 step"),
    ("activation_memory_and_composing", "accumulation_bug", _accumulate_by_all_reduce_per_micro_step,
     "once per optimizer step, not once per micro-step"),
    ("layerwise_partitioning", "column_forward", _column_forward_by_all_reduce, "2 times the"),
    ("data_parallelism", "global_stats", _global_stats_by_padded_all_reduce, "times the"),
    ("long_sequences_and_experts", "pass_kv", _pass_by_all_gather, "your function called dist.all_gather;"),
    ("long_sequences_and_experts", "ring_forward_code", _ring_attention_by_all_gather, "called dist.all_gather;"),
    ("long_sequences_and_experts", "all_to_all_code", _all_to_all_single, "called dist.all_to_all_single;"),
]


@pytest.mark.parametrize("item", SHORTCUTS, ids=lambda s: f"{s[1]}::{s[2].__name__}")
def test_a_library_shortcut_fails_with_what_was_asked(item, capsys):
    module, key, shortcut, fragment = item
    ex = getattr(importlib.import_module(f"d2lmp.exercises.{module}"), key)
    verdict = ex.check(shortcut)
    assert verdict is not None and not verdict.correct, f"{key}: {shortcut.__name__} passed"
    assert fragment in verdict.message, f"expected {fragment!r} in {verdict.message!r}"


def test_every_ring_and_sharding_exercise_has_a_shortcut_that_fails():
    ring_or_sharding = {"all_gather_code", "reduce_scatter_code", "ring_bug", "stage2_shard", "stale_shard",
                        "accumulation_bug",
                        "column_forward", "pass_kv", "ring_forward_code", "all_to_all_code"}
    assert ring_or_sharding <= {key for _, key, _, _ in SHORTCUTS}


def _grad_shard_by_reduce_scatter_tensor(rank, world, flat_grad):
    out = torch.empty(flat_grad.numel() // world)
    dist.reduce_scatter_tensor(out, flat_grad)
    return out


def _grad_shard_by_our_ring(rank, world, flat_grad):
    from d2lmp.parallel.collectives import ring_reduce_scatter

    return ring_reduce_scatter(flat_grad)


def _reduce_scatter_batched(tensor):
    """The ring with each step's send and receive in one batch_isend_irecv, as NCCL needs."""
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = [c.clone() for c in torch.tensor_split(tensor.flatten(), world)]
    for step in range(world - 1):
        send_i, recv_i = (rank - step - 1) % world, (rank - step - 2) % world
        incoming = torch.empty_like(chunks[recv_i])
        ops = [dist.P2POp(dist.isend, chunks[send_i], (rank + 1) % world),
               dist.P2POp(dist.irecv, incoming, (rank - 1) % world)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
        chunks[recv_i] += incoming
    return chunks[rank]


def _global_stats_three_all_reduces(rank, world, x):
    """The same sums in float32, in three all-reduces: the count, then Σx and Σx² per channel."""
    n = torch.tensor([x.numel() / x.shape[1]])
    total, squares = x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3))
    for t in (n, total, squares):
        dist.all_reduce(t)
    mean = total / n
    return mean, squares / n - mean * mean
def _pass_batched(kv):
    """One ring step in one batch_isend_irecv, as NCCL needs."""
    rank, world = dist.get_rank(), dist.get_world_size()
    incoming = torch.empty_like(kv)
    ops = [dist.P2POp(dist.irecv, incoming, (rank - 1) % world), dist.P2POp(dist.isend, kv, (rank + 1) % world)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    return incoming


def _ring_attention_k_and_v_apart(q, k, v):
    """The ring with K and V as two messages a step, each block's softmax merged as it comes."""
    from d2lmp.parallel.attention_blocks import attention_block, merge

    rank, world = dist.get_rank(), dist.get_world_size()
    result = None
    for step in range(world):
        holder = (rank - step) % world
        if holder <= rank:
            result = merge(result, attention_block(q, k, v, diagonal=holder == rank))
        if step < world - 1:
            new_k, new_v = torch.empty_like(k), torch.empty_like(v)
            requests = [dist.irecv(new_k, (rank - 1) % world), dist.irecv(new_v, (rank - 1) % world),
                        dist.isend(k, (rank + 1) % world), dist.isend(v, (rank + 1) % world)]
            for request in requests:
                request.wait()
            k, v = new_k, new_v
    return result[0]


def _all_to_all_sends_first(blocks, recv_sizes):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = [torch.empty(n, *blocks[0].shape[1:]) for n in recv_sizes]
    out[rank] = blocks[rank].clone()
    requests = [dist.isend(blocks[d].contiguous(), d) for d in range(world) if d != rank and len(blocks[d])]
    requests += [dist.irecv(out[s], s) for s in range(world) if s != rank and recv_sizes[s]]
    for request in requests:
        request.wait()
    return out


ALTERNATIVES = [
    ("sharding_the_training_state", "stage2_shard", _grad_shard_by_reduce_scatter_tensor),
    ("sharding_the_training_state", "stage2_shard", _grad_shard_by_our_ring),
    ("nccl_collectives", "reduce_scatter_code", _reduce_scatter_batched),
    ("data_parallelism", "global_stats", _global_stats_three_all_reduces),
    ("long_sequences_and_experts", "pass_kv", _pass_batched),
    ("long_sequences_and_experts", "ring_forward_code", _ring_attention_k_and_v_apart),
    ("long_sequences_and_experts", "all_to_all_code", _all_to_all_sends_first),
]


@pytest.mark.parametrize("item", ALTERNATIVES, ids=lambda s: f"{s[1]}::{s[2].__name__}")
def test_another_right_algorithm_passes(item, capsys):
    """The traffic checks ask for the algorithm, not for one way to write it."""
    module, key, answer = item
    verdict = getattr(importlib.import_module(f"d2lmp.exercises.{module}"), key).check(answer)
    assert verdict is not None and verdict.correct, verdict
def test_parallel_strategies_answers_are_the_librarys_and_the_papers():
    """The three splits' and the running example's answers, each computed a second way: the one weird trick's fc6
    through the cost model's comm_bytes, the block under tensor parallelism through Korthikanti et al.'s closed form,
    the crossing by hand."""
    import torch
    from torch import nn

    from d2lmp import models
    from d2lmp.exercises import a_transformer_to_split as ts
    from d2lmp.exercises import parallel_strategies as ps
    from d2lmp.model import costmodel as CM
    from d2lmp.model.transformer_accounting import korthikanti_bytes_per_layer

    with torch.device("meta"):
        fc6 = models.layer_table(nn.Sequential(nn.Linear(ps.FC6_IN, 4096)), (1, ps.FC6_IN))
    images = ps.TRICK_DEVICES * ps.TRICK_IMAGES
    assert CM.comm_bytes(fc6, CM.WEIRD_TRICK, ps.TRICK_DEVICES, images) == pytest.approx(ps.TRICK_BYTES)
    assert CM.comm_bytes(fc6, "data", ps.TRICK_DEVICES, images) == pytest.approx(ps.FC6_DP_BYTES)
    g = ts._GPT3
    assert ts.TP_GB * 1e9 == pytest.approx(korthikanti_bytes_per_layer(g.seq, 1, g.hidden, g.heads, tp=ts.TP))
    d = ts.REPLICAS
    by_hand = ts._IB.ridge * (2 * (d - 1) / d * 2 * ts._PSI) / (ts._PER_TOKEN)
    assert ts.DP_TOKENS == pytest.approx(by_hand, rel=1e-9)


@pytest.mark.parametrize("p, m, v", [(4, 8, 2), (2, 4, 2), (4, 4, 3), (3, 6, 2)])
def test_interleaved_warmup_answer_follows_the_rule(p, m, v):
    """Exercise 9 of notebook 14 reads its answer off the schedule: the warm-up 2(p - r - 1) + (v - 1)p, plus the
    steady phase's opening forward (every forward first when m = p)."""
    from d2lmp.exercises import network_partitioning as ex

    for r in range(p):
        rule = m * v if m == p else 2 * (p - r - 1) + (v - 1) * p + 1
        assert ex.forwards_before_first_backward(p, r, m, v) == rule
    assert ex.WARMUP == tuple(2 * (4 - r - 1) + 4 + 1 for r in (0, 3))
