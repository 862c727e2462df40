"""Exercises for notebook 14 (network partitioning): the bubble, schedules, balancing, and a pipeline on ranks.

Numbers are checked against ``d2lmp.model.pipeline_schedule`` (its bubble formula, simulator and schedules,
the interleaved one included).
The balancing exercise compares the student's partition with the exact ``pipeline_balance.balance`` on awkward
layer costs; the pipeline exercises (a micro-batched forward, and a pipeline's loss given with a bug) run on
2 and 3 real gloo ranks against the unsplit network, and count each rank's messages (``_pipeline_code``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from d2lmp.exercises import _pipeline_code as P
from d2lmp.exercises._answers import whole_pair
from d2lmp.exercises._code import DIST_IMPORT, bug_hunt, code_checker
from d2lmp.exercises.core import Exercise, Verdict, choice_checker, number_checker
from d2lmp.model import pipeline_balance, pipeline_schedule

__all__ = ["EXERCISES", "micro_batches_for_bubble", "equal_times_bubble", "peak_alive", "unequal_stages",
           "bytes_pipeline_vs_data", "balance_code", "pipeline_forward", "pipeline_loss", "interleaved_warmup"]


def _smallest_m(stages: int, target: float = 0.1) -> int:
    m = 1
    while (stages - 1) / (m + stages - 1) >= target:
        m += 1
    return m


M_FOR_10_PERCENT = (_smallest_m(4), _smallest_m(8))  # (28, 64)


def _check_micro_batches(answer: Any) -> Verdict:
    pair = whole_pair(answer)
    if pair is None:
        return Verdict(False, f"answer with a pair of whole numbers (m for 4 stages, m for 8 stages); got {answer!r}.")
    if pair == M_FOR_10_PERCENT:
        return Verdict(True, "28 and 64: (p − 1)/(m + p − 1) < 0.1 means m > 9(p − 1). In practice m is limited by "
                             "the batch (each micro-batch must stay large enough to use the device well) and, for "
                             "GPipe, by the activations of m micro-batches held at once.")
    notes = []
    for stages, m in zip((4, 8), pair):
        bubble = (stages - 1) / (m + stages - 1)
        if math.isclose(bubble, 0.1):
            notes.append(f"with {stages} stages m = {m} gives a bubble of exactly 10 %, not under it")
        elif bubble > 0.1:
            notes.append(f"with {stages} stages m = {m} still leaves a bubble of {bubble:.1%}")
        elif m > _smallest_m(stages):
            hint = " ((p − 1)/m is not the formula: the step lasts m + p − 1 slots)" if m == 10 * (stages - 1) + 1 \
                else ""
            notes.append(f"with {stages} stages m = {m} works, but a smaller m does too{hint}")
    return Verdict(False, "; ".join(notes) + ".")


def _check_peak_alive(answer: Any) -> Verdict:
    pair = whole_pair(answer)
    if pair is None:
        return Verdict(False, f"answer with a pair (GPipe, 1F1B) of whole numbers; got {answer!r}.")
    gpipe, one_f_one_b = pair
    problems = []
    if gpipe != 6:
        problems.append(f"GPipe on rank 0 holds {gpipe}? It runs all 6 forwards before its first backward, so all 6 "
                        "micro-batches are alive at once")
    if one_f_one_b == 3:
        problems.append("1F1B's rank 0 warms up with p − r − 1 = 3 forwards, then runs a 4th forward before its "
                        "first backward: 4 are alive at that moment")
    elif one_f_one_b != 4:
        problems.append(f"1F1B on rank 0 holds {one_f_one_b}? Walk through its schedule F0 F1 F2 F3 B0 F4 B1 ...: "
                        "add one at each F, remove one at each B, and keep the maximum")
    if problems:
        return Verdict(False, "; ".join(problems) + ".")
    return Verdict(True, "6 for GPipe (every micro-batch, m) and 4 for 1F1B (p − r on rank r): 1F1B's memory for "
                         "activations does not grow with m.")


def forwards_before_first_backward(stages: int, rank: int, micro_batches: int, chunks: int) -> int:
    """How many (virtual stage, micro-batch) forwards ``rank`` runs under interleaved 1F1B before its first
    backward, read off ``pipeline_schedule.interleaved_schedule``."""
    plan = pipeline_schedule.interleaved_schedule(stages, rank, micro_batches, chunks)
    return next(n for n, (op, _, _) in enumerate(plan) if op == "B")


WARMUP_CASE = (4, 8, 2)  # p, m, v
WARMUP = tuple(forwards_before_first_backward(4, r, 8, 2) for r in (0, 3))  # (rank 0, rank p - 1): (11, 5)


def _check_warmup(answer: Any) -> Verdict:
    pair = whole_pair(answer)
    if pair is None:
        return Verdict(False, f"answer with a pair (rank 0, rank 3) of whole numbers; got {answer!r}.")
    p, m, v = WARMUP_CASE
    if pair == WARMUP:
        return Verdict(True, f"{WARMUP[0]} and {WARMUP[1]}: the warm-up is 2(p − r − 1) + (v − 1)p forwards, and "
                             "the steady phase opens with one more forward before its first backward. Each is a "
                             f"chunk of 1/v of the rank's layers, so rank 0 holds about {WARMUP[0] / v:g} "
                             f"micro-batches' worth of activations against 1F1B's {p}: interleaving costs some "
                             "memory as well as messages.")
    notes = []
    if pair == tuple(2 * (p - r - 1) + (v - 1) * p for r in (0, p - 1)):
        notes.append("that is the warm-up alone; the steady phase starts with a forward, then its first backward")
    elif pair == (p, 1):
        notes.append("that is 1F1B's count, p − r, with one stage per rank; with v chunks a rank runs a group of p "
                     "micro-batches through every one of its chunks before the last stage can start a backward")
    elif pair == tuple(2 * (p - r - 1) + 1 for r in (0, p - 1)):
        notes.append("you left out the (v − 1)p forwards through the rank's later chunks: the first backward runs "
                     "on the last virtual stage, which a micro-batch reaches only after passing every rank v times")
    else:
        for name, got, want in (("rank 0", pair[0], WARMUP[0]), ("rank 3", pair[1], WARMUP[1])):
            if got != want:
                notes.append(f"{name} runs {'more' if want > got else 'fewer'} than {got} forwards before its first "
                             "backward; walk through S.interleaved_schedule(4, rank, 8, 2) up to the first 'B'")
    return Verdict(False, "; ".join(notes) + ".")


# --------------------------------------------------------------------------------------------
# Balancing, written by the student


def my_balance(costs: Sequence[float], stages: int) -> list[int]:
    """Layers per stage of a contiguous split that minimises the slowest stage (exact): a binary search on the
    slowest stage's cost, each candidate tested by filling stages greedily."""

    def fill(limit: float) -> list[int] | None:
        """Layers per stage when each stage takes layers while it stays within ``limit``; None if too many."""
        sizes, total = [], math.inf
        for c in costs:
            if c > limit:
                return None
            if total + c > limit:  # this layer opens the next stage
                sizes.append(0)
                total = 0.0
            sizes[-1] += 1
            total += c
        return sizes if len(sizes) <= stages else None

    # The slowest stage of any split costs as much as some run of consecutive layers: search those sums.
    candidates = sorted({sum(costs[j:i]) for i in range(1, len(costs) + 1) for j in range(i)})
    low, high = 0, len(candidates) - 1
    while low < high:
        mid = (low + high) // 2
        if fill(candidates[mid]) is None:
            low = mid + 1
        else:
            high = mid
    sizes = fill(candidates[low])
    assert sizes is not None  # the last candidate, the cost of all layers together, always fits
    while len(sizes) < stages:  # fewer stages sufficed: split off a layer; no stage gets slower
        i = sizes.index(max(sizes))
        sizes[i:i + 1] = [sizes[i] - 1, 1]
    return sizes


BALANCE_CASES = (  # awkward costs: one huge layer at either end, ties, a greedy fill that overshoots
    ([4, 1, 1, 1, 1, 4, 2, 2], 2),
    ([4, 1, 1, 1, 1, 4, 2, 2], 4),
    ([1, 1, 1, 1, 10], 2),
    ([10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 3),
    ([0.5, 7, 0.5, 0.5, 6, 0.5], 2),
    ([3, 3, 3], 3),
    ([5, 1, 1, 1, 1, 1, 5], 3),
    ([2, 9, 2, 2, 2, 2, 9, 2], 4),
)


def _balance_run(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(f"costs {costs} in {p} stages", fn(list(costs), p), (costs, p, pipeline_balance.balance(costs, p)))
            for costs, p in BALANCE_CASES]


def _greedy(costs: Sequence[float], stages: int) -> list[int]:
    sizes: list[int] = []
    target, current, total = sum(costs) / stages, 0, 0.0
    for c in costs:
        if total + c > target and current and len(sizes) < stages - 1:
            sizes.append(current)
            current, total = 0, 0.0
        current, total = current + 1, total + c
    return sizes + [current]


def _balance_judge(case: str, got: Any, context: Any) -> str | None:
    costs, p, best = context
    try:
        sizes = [int(s) for s in got]
    except (TypeError, ValueError):
        return f"expected a list of layers per stage, got {got!r}"
    if len(sizes) != p:
        return f"your split {sizes} has {len(sizes)} stages, expected {p}"
    if any(s < 1 for s in sizes):
        return f"your split {sizes} has an empty stage: every stage needs at least one layer"
    if sum(sizes) != len(costs):
        return f"your split {sizes} covers {sum(sizes)} layers, there are {len(costs)}"
    slowest = max(pipeline_balance.stage_costs(costs, sizes))
    optimum = max(pipeline_balance.stage_costs(costs, best))
    if math.isclose(slowest, optimum, rel_tol=1e-9, abs_tol=1e-12):
        return None
    why = ""
    if sizes == pipeline_balance.equal_split(len(costs), p):
        why = "that is the equal split by layer count, which ignores the costs; "
    elif sizes == _greedy(costs, p):
        why = "a greedy fill (cut when a stage passes the average) is not optimal; "
    return (f"{why}your split {sizes} has a slowest stage of {slowest:g}, the best contiguous split ({best}) "
            f"has {optimum:g}")


def _balance_equal(costs: Sequence[float], stages: int) -> list[int]:
    """A typical wrong answer: the library's equal split by layer count, blind to the costs."""
    return pipeline_balance.equal_split(len(costs), stages)


micro_batches_for_bubble = Exercise(
    key="micro_batches_for_bubble", number=1, title="A bubble under 10 %",
    question="From the bubble formula, how many micro-batches keep the bubble under 10 % with 4 stages, and with "
             "8? (The smallest m for each.) What limits m in practice?",
    hint_text="Solve (p − 1)/(m + p − 1) < 0.1 for m; 'under' means strictly less. Answer with the pair "
              "`(m for 4 stages, m for 8 stages)`.",
    solution_text="(p − 1)/(m + p − 1) < 0.1 ⇔ m > 9(p − 1): m = 28 for 4 stages (27 gives exactly 10 %) and m "
                  "= 64 for 8. In practice the batch limits m: each micro-batch must stay large enough to keep a "
                  "device busy (small matrix products run far below peak, and every message costs a latency), "
                  "and GPipe holds the activations of all m micro-batches; the optimizer wants a fixed global "
                  "batch, so more micro-batches means smaller ones.",
    checker=_check_micro_batches, reference=M_FOR_10_PERCENT,
    wrong=[((27, 63), "exactly 10 %"), ((20, 40), "still leaves a bubble")],
    how_to_answer="Pass (m for 4 stages, m for 8 stages).")


equal_times_bubble = Exercise(
    key="equal_times_bubble", number=2, title="A backward as fast as the forward",
    question="The widget keeps the backward at twice the forward, as its title says. Set it to GPipe with 4 stages "
             "and 4 micro-batches and note the idle share of the step it prints. Then simulate the same pipeline "
             "with the backward as fast as the forward yourself, "
             "`events = S.simulate(\"gpipe\", 4, 4, forward=1.0, backward=1.0)`, and measure it with "
             "`S.measured_bubble(events, 4)`. What bubble fraction do you get? Does the bubble change? Why?",
    hint_text="Count slots: with equal stages every stage idles p − 1 forward slots and p − 1 backward slots "
              "out of m + p − 1 of each.",
    solution_text="3/7 ≈ 0.429, the same as with backward = 2 × forward, and the same as (p − 1)/(m + p − 1). "
                  "Each stage waits p − 1 forward slots for the pipeline to fill and p − 1 backward slots for it "
                  "to drain, out of m + p − 1 slots of each kind: scaling the backward time scales the busy and "
                  "the idle backward time alike, so the fraction does not depend on the ratio.",
    checker=number_checker(3 / 7, rel_tol=0.01, why="(p − 1)/(m + p − 1), whatever the ratio of backward to "
                           "forward time.", near_misses=[
                               (3 / 4, "that is (p − 1)/m: the step lasts m + p − 1 slots, not m"),
                               (4 / 7, "that is the busy share; the bubble is the idle share")]),
    reference=3 / 7, wrong=[(0.75, "(p − 1)/m"), (4 / 7, "busy share")],
    how_to_answer="Pass the bubble fraction (between 0 and 1).")


peak_alive = Exercise(
    key="peak_alive", number=3, title="Micro-batches alive at once",
    question="Count, for GPipe and for 1F1B on rank 0 with 4 stages and 6 micro-batches (the schedules printed "
             "above), the largest number of micro-batches whose activations are alive at once, using "
             "`S.schedule`.",
    hint_text="A micro-batch becomes alive at its F and dies at its B. Walk through `S.schedule(kind, 4, 0, 6)` "
              "keeping a counter. Answer with `(GPipe, 1F1B)`.",
    solution_text="GPipe: 6 (all six forwards run before the first backward). 1F1B: 4 (three warm-up forwards, "
                  "then F3 before B0), in general p − r on rank r whatever m: that is what 1F1B saves, memory for "
                  "activations, while its bubble stays the same.",
    checker=_check_peak_alive, reference=(6, 4), wrong=[((6, 3), "warms up with"), ((4, 4), "all 6")],
    how_to_answer="Pass (GPipe, 1F1B).")


unequal_stages = Exercise(
    key="unequal_stages", number=4, title="Unequal stages",
    question="The measured bubble exceeds the formula. Use the measured per-stage busy times from the timeline to "
             "predict the step time of an unequal two-stage pipeline, and compare.",
    hint_text="With stage times t1 and t2 per micro-batch (forward + backward), the slower stage sets the pace: "
              "it works m times, and the faster one's share of the first and last micro-batch adds once.",
    solution_text="With per-micro-batch times t1 and t2 (forward + backward) for the two stages, GPipe's step "
                  "takes about (m − 1)·max(t1, t2) + t1 + t2: the slower stage is busy m·max(t1, t2), and the "
                  "other stage's work on the first forward and the last backward cannot overlap with it. Sum "
                  "each rank's busy time in the measured events, divide by m, and compare the prediction with the "
                  "measured span; what it leaves out is message latency (gloo: tens to "
                  "hundreds of µs per send) and the cost of small micro-batches, which the formula also ignores.")


bytes_pipeline_vs_data = Exercise(
    key="bytes_pipeline_vs_data", number=5, title="Activations or gradients",
    question="Pipeline parallelism sends activations, data parallelism all-reduces gradients. For AlexNet (about "
             "61 M parameters; pool5 output 9216 values per image), which sends fewer bytes per step at batch "
             "128, and how does the answer change with the batch size?",
    hint_text="Pipeline, cut at pool5: 9216 values per image forward and as many gradients backward, in FP32. "
              "Data: a ring all-reduce sends about 2 × 61 M × 4 bytes per rank. Answer 'pipeline' or 'data'.",
    solution_text="The pipeline: at batch 128 it sends 2 × 128 × 9216 × 4 B ≈ 9.4 MB (activations forward, "
                  "their gradients backward), against 2(n − 1)/n × 244 MB per rank for a ring all-reduce of the "
                  "gradients: 244 MB on 2 GPUs, approaching 490 MB on many. The pipeline's bytes grow with the "
                  "batch, the gradients' do not: they break even at a batch of about 3,300 on 2 GPUs and about "
                  "6,600 on many, beyond which data parallelism sends less.",
    checker=choice_checker("pipeline", {
        "pipeline": "about 9.4 MB of activations and their gradients at batch 128, against 244 MB (2 GPUs) to "
                    "490 MB (many) per rank for the gradient all-reduce; the pipeline's bytes grow with the "
                    "batch, the gradients' do not.",
        "data": "data parallelism sends the gradients of all 61 M parameters, 244 MB, up to twice over in a ring, "
                "every step; the pipeline sends 128 × 9216 values each way, about 9.4 MB in all."}),
    reference="pipeline", wrong=[("data", "244 MB")],
    how_to_answer="Pass 'pipeline' or 'data'.")


balance_code = Exercise(
    function="my_balance(costs, stages)",
    key="balance_code", number=6, title="Balance the stages",
    question="Write `my_balance(costs, stages)`: the number of layers per stage of the contiguous split that "
             "minimises the slowest stage's cost, like `B.balance`, without calling it. It is checked on awkward "
             "costs (one huge layer at either end, ties, costs where a greedy fill overshoots); any optimal split "
             "is accepted.",
    hint_text="Dynamic programming: let best[s][i] be the smallest possible slowest-stage cost for the first i "
              "layers in s stages; best[s][i] = min over j of max(best[s−1][j], cost of layers j..i−1). Keep "
              "the j that achieved it to recover the cuts. Prefix sums make each stage's cost O(1).",
    solution_text="Two exact methods. The dynamic programme of the hint is what `B.balance` runs (its source is "
                  "in the notebook): best[s][i] = min over j < i of max(best[s−1][j], prefix[i] − prefix[j]), "
                  "with best[0][0] = 0; record the minimising j and walk back from best[p][n] to read the stage "
                  "sizes, O(p·n²) time. The model answer below takes the other route: the slowest stage of any "
                  "split costs as much as some run of consecutive layers, so binary-search those sums for the "
                  "smallest limit at which filling stages greedily (a new stage when the next layer would pass "
                  "the limit) needs at most p stages, then split stages until there are p. Greedy filling up to "
                  "the average is not optimal: a large layer near a cut pushes the whole remainder onto the last "
                  "stages.",
    checker=code_checker(_balance_run, _balance_judge, "your splits are optimal on every awkward case tried."),
    reference=my_balance,
    wrong=[(_balance_equal, "equal split by layer count"), (_greedy, "greedy fill")])


pipeline_forward = Exercise(
    function="my_pipeline_forward(rank, world, stage, x, micro_batches)", imports=DIST_IMPORT,
    key="pipeline_forward", number=7, title="A pipeline from messages",
    question="Write the forward pass of a micro-batched pipeline, from `dist.send` and `dist.recv`: "
             "`my_pipeline_forward(rank, world, stage, x, micro_batches)`. `stage` is this rank's slice of a "
             "network whose layers all keep the width of `x`; every rank gets the whole batch `x` (only rank 0 "
             "uses its values; the others need its shape). Cut `x` with `torch.tensor_split(x, micro_batches)`; "
             "rank 0 runs its stage on each micro-batch and sends the result to rank 1, every middle rank "
             "receives, runs and sends on, and the last rank returns the outputs of all micro-batches "
             "concatenated in order (the other ranks return None). It runs on 2 and 3 gloo ranks with "
             "micro-batches of unequal sizes, and each rank's messages are counted: one per micro-batch, to the "
             "next rank.",
    hint_text="A rank r > 0 receives each micro-batch from r − 1 into `torch.empty_like(micro_batch)`; a rank "
              "r < world − 1 sends its output to r + 1. Loop over the micro-batches in the same order on every "
              "rank, so each send meets its recv.",
    solution_text="Loop over torch.tensor_split(x, m) on every rank: rank 0 takes the micro-batch itself, other "
                  "ranks dist.recv into a buffer of its shape from rank − 1; apply the stage; all but the last "
                  "rank dist.send the output to rank + 1, the last rank collects it, and returns torch.cat of the "
                  "outputs. Because the ranks work on different micro-batches at the same time (rank 1 on "
                  "micro-batch 0 while rank 0 computes micro-batch 1), the pipeline fills.",
    checker=P.forward_checker, reference=P.my_pipeline_forward, wrong=P.FORWARD_WRONG)


pipeline_loss = Exercise(
    key="pipeline_loss", number=8, title="Find the bug: a pipeline's loss",
    function="my_pipeline_loss(rank, world, stage, x, y, micro_batches)",
    imports="import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F",
    question="The function below extends exercise 7: the last rank also computes the whole batch's mean squared "
             "error against the targets `y`, micro-batch by micro-batch, as a pipeline does before its backward. "
             "It runs and its loss is close to the right one, but it has a bug. Find it with this notebook's kind "
             "of check: compare its loss with the unsplit network's `F.mse_loss(model(x), y)` on the same batch, "
             "with `torch.testing.assert_close`, first with micro-batches that divide the batch and then with "
             "micro-batches that do not. Fix it in the cell and run the check (2 and 3 gloo ranks, micro-batches "
             "of unequal sizes, one message per micro-batch).",
    hint_text="`F.mse_loss` of a micro-batch is a mean over that micro-batch. When do the m means, averaged, give "
              "the mean over the whole batch, and what weight should each get otherwise?",
    solution_text="It averages the micro-batches' means, each with weight 1/m. That is the batch's mean only when "
                  "every micro-batch holds as many examples; with 7 examples in 3 micro-batches (3, 2, 2) the "
                  "examples of the small ones count more. Weigh each micro-batch's mean by its share of the "
                  "examples, `F.mse_loss(out, yb) * len(yb) / len(y)` (or sum the squared errors and divide by "
                  "the number of elements once). Gradient accumulation has the same trap when it divides each "
                  "micro-step's mean loss by the number of steps; the gradients a pipeline backpropagates from "
                  "this loss are then wrong by the same weights.",
    checker=bug_hunt(P.given_pipeline_loss, P.loss_checker,
                     "Compare its loss with the unsplit network's on the same batch, with micro-batches that "
                     "divide the batch and with micro-batches that do not."),
    reference=P.my_pipeline_loss, given=P.given_pipeline_loss,
    wrong=[(P.given_pipeline_loss, "bug included"), *P.LOSS_WRONG])


interleaved_warmup = Exercise(
    key="interleaved_warmup", number=9, title="Interleaved 1F1B's warm-up",
    question="Under interleaved 1F1B with p = 4 ranks, v = 2 chunks per rank and m = 8 micro-batches, how many "
             "forwards (each through one chunk) does rank 0 run before its first backward, and how many does "
             "rank 3 run? Work it out from the rule in `S.interleaved_schedule`'s listing first, then count them "
             "in `S.interleaved_schedule(4, rank, 8, 2)`. What does the answer say about the activations a rank "
             "holds, against 1F1B's?",
    hint_text="The warm-up of rank r is 2(p − r − 1) + (v − 1)p forwards; then the steady phase runs one forward "
              "and one backward in turn. Answer with `(rank 0, rank 3)`.",
    solution_text="11 and 5. Rank r warms up with 2(p − r − 1) + (v − 1)p forwards, 10 on rank 0 and 4 on rank 3, "
                  "and the steady phase opens with one more forward before its first backward. A backward can "
                  "start only once micro-batch 0 has reached the last virtual stage, p·v − 1, which it does after "
                  "passing every rank v times; meanwhile every rank keeps taking new micro-batches. Each forward "
                  "covers one chunk, 1/v of the rank's layers, so rank 0 holds at most 11/2 = 5.5 micro-batches' "
                  "worth of activations, against 1F1B's p = 4 on its first rank: interleaving costs some "
                  "activation memory as well as (pv − 1)/(p − 1) times the messages, 7/3 here.",
    checker=_check_warmup, reference=WARMUP,
    wrong=[((10, 4), "warm-up alone"), ((4, 1), "1F1B's count"), ((7, 1), "(v − 1)p"), ((12, 5), "rank 0 runs")],
    how_to_answer="Pass (rank 0, rank 3).")


EXERCISES = [micro_batches_for_bubble, equal_times_bubble, peak_alive, unequal_stages, bytes_pipeline_vs_data,
             balance_code, pipeline_forward, pipeline_loss, interleaved_warmup]
