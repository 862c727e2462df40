"""Every notebook's exercises check themselves: hints for all, checks for at least three, solutions that pass.

For each exercise with a check, the reference answer must pass and each listed typical wrong answer must
fail with its specific message. The notebook must show each hint and each check call, and never the
solution text.
"""

import importlib
import json
import re
from pathlib import Path

import pytest

from d2lmp.exercises.core import Exercise, Verdict

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIN_CHECKS = 3


def _slug(path: Path) -> str:
    return path.stem.split("_", 1)[1]


def _module(path: Path):
    return importlib.import_module(f"d2lmp.exercises.{_slug(path)}")


def _cells(path: Path, kind: str) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


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
    markdown = "\n".join(_cells(path, "markdown"))
    code = "\n".join(_cells(path, "code"))
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
def test_typical_wrong_answer_fails_with_its_message(item, capsys):
    _, ex, answer, fragment = item
    verdict = ex.check(answer)
    assert isinstance(verdict, Verdict) and not verdict.correct, f"{ex.key}: a wrong answer passed"
    assert fragment in verdict.message, f"{ex.key}: expected {fragment!r} in {verdict.message!r}"


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


def test_parallel_strategies_answers_are_the_librarys_and_the_papers():
    """Notebook 10's new answers, each computed a second way: the one weird trick's fc6 through the cost model's
    comm_bytes, the block under tensor parallelism through Korthikanti et al.'s closed form, the crossing by hand."""
    import torch
    from torch import nn

    from d2lmp import models
    from d2lmp.exercises import parallel_strategies as ps
    from d2lmp.parallel import costmodel as CM
    from d2lmp.transformer_accounting import korthikanti_bytes_per_layer

    with torch.device("meta"):
        fc6 = models.layer_table(nn.Sequential(nn.Linear(ps.FC6_IN, 4096)), (1, ps.FC6_IN))
    images = ps.TRICK_DEVICES * ps.TRICK_IMAGES
    assert CM.comm_bytes(fc6, CM.WEIRD_TRICK, ps.TRICK_DEVICES, images) == pytest.approx(ps.TRICK_BYTES)
    assert CM.comm_bytes(fc6, "data", ps.TRICK_DEVICES, images) == pytest.approx(ps.FC6_DP_BYTES)
    g = ps._GPT3
    assert ps.TP_GB * 1e9 == pytest.approx(korthikanti_bytes_per_layer(g.seq, 1, g.hidden, g.heads, tp=ps.TP))
    d = ps.REPLICAS
    by_hand = ps._IB.ridge * (2 * (d - 1) / d * 2 * ps._PSI) / (ps._PER_TOKEN)
    assert ps.DP_TOKENS == pytest.approx(by_hand, rel=1e-9)
