"""Exercises for notebook 19 (when things fail): the checkpoint interval, the steps a restart recomputes, the rank
and line where a ring hangs, and a checkpoint saved by 4 ranks loaded into 2 and 3.

The code exercise runs the student's load on 2 and 3 gloo ranks against a checkpoint that 4 ranks saved (once per
process, in a temporary folder), compares every parameter and Adam tensor with what was saved, and checks its
traffic: each rank must read only the saved records that overlap its own shards and hold only its shards, not the
whole state. The typical mistakes (a whole model on every rank, the model without Adam's state, nothing loaded)
are recognised from those measurements. The numbers follow ``checkpoint_interval`` and the Llama 3 report's
failure count (``checkpoint_interval.REPORTS``).
"""

from __future__ import annotations

import atexit
import inspect
import shutil
import tempfile
from functools import cache
from typing import Any

import torch
import torch.distributed as dist

from d2lmp.checks import reshard as R
from d2lmp.exercises._code import code_checker, on_ranks
from d2lmp.exercises.core import Exercise, Verdict, number_checker
from d2lmp.model import checkpoint_interval as CI
from d2lmp.parallel import checkpoint as ckpt
from d2lmp.parallel.launch import launch

__all__ = ["EXERCISES", "pass_along", "load_into", "interval", "recomputed", "lost_message", "resharded_load",
           "async_when", "rng_why"]


# --------------------------------------------------------------------------------------------
# The interval by Young's rule

GPUS, SAVE_S = 4096, 120.0
_RATE = CI.REPORTS[0].per_gpu_hour  # Llama 3's unexpected interruptions per GPU-hour
YOUNG_MIN = CI.young_interval(SAVE_S, CI.job_mtbf(GPUS, _RATE)) / 60

_check_interval = number_checker(
    YOUNG_MIN, "minutes", rel_tol=0.03,
    why="The job's MTBF is 1 / (4096 λ), four times Llama 3's 16,384-GPU MTBF; √(2 δ M) with δ = 2 min.",
    near_misses=[(CI.young_interval(SAVE_S, CI.job_mtbf(CI.REPORTS[0].gpus, _RATE)) / 60,
                  "that is the interval for Llama 3's 16,384 GPUs: with 4,096 GPUs the job fails 4 times less often"),
                 (YOUNG_MIN / 2**0.5, "Young's rule is √(2 δ M): the factor 2 is missing"),
                 (YOUNG_MIN * 60, "that is in seconds; the question asks for minutes"),
                 (YOUNG_MIN / 60, "that is in hours; the question asks for minutes")])


# --------------------------------------------------------------------------------------------
# The steps a restart computes again

EVERY, KILLED = 50, 173
_check_recomputed = number_checker(
    KILLED - EVERY * (KILLED // EVERY), "steps", rel_tol=0.0, abs_tol=0.01,
    why="The last complete checkpoint holds step 150, so steps 151 to 173 run again: 22 finished ones and "
        "the step that was cut short.",
    near_misses=[(KILLED - EVERY * (KILLED // EVERY) - 1, "step 173 was under way when the rank died: its work is "
                                                           "lost too and it runs again"),
                 (EVERY / 2, "that is the average over random failure times; here the failure time is known"),
                 (EVERY - (KILLED - EVERY * (KILLED // EVERY)), "the restart goes back to the checkpoint before the "
                                                                "failure (step 150), not on to the next one")])


# --------------------------------------------------------------------------------------------
# Where a ring hangs

def pass_along(rank: int, world: int) -> torch.Tensor:
    """Each rank sends its number to the next rank round a ring and receives the previous rank's number."""
    mine, got = torch.tensor([float(rank)]), torch.empty(1)
    right = rank + 1 if rank + 1 < world else 1
    left = (rank - 1) % world
    send = dist.isend(mine, right)
    dist.recv(got, left)
    send.wait()  # type: ignore[union-attr]  # isend returns None only off the group
    return got


def _line(text: str) -> int:
    lines, first = inspect.getsourcelines(pass_along)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _check_lost_message(answer: Any) -> Verdict:
    recv, wait, isend = _line("dist.recv("), _line("send.wait()"), _line("dist.isend(")
    try:
        rank, line = (int(x) for x in answer)
    except (TypeError, ValueError):
        return Verdict(False, f"answer with (rank, line number), two whole numbers, got {answer!r}.")
    if (rank, line) == (0, recv):
        return Verdict(True, f"rank 0 waits at line {recv} for a message from rank 2, which sent it to rank 1: the "
                             "last rank's right-hand neighbour should be rank 0, (rank + 1) % world.")
    if rank == 2:
        return Verdict(False, f"rank 2 waits too, at line {wait}, but for its own send to be received: it sent the "
                              "lost message. Which rank is still waiting to receive one?")
    if rank == 1:
        return Verdict(False, "rank 1 finished its function: the stacks show it waiting in launch's closing barrier.")
    if rank == 0 and line == isend:
        return Verdict(False, "isend returns at once, without waiting: look at the line the stack shows for rank 0.")
    if rank == 0:
        return Verdict(False, f"rank 0 is the one, but line {line} is not where it waits; read the frame of "
                              "pass_along in its stack.")
    return Verdict(False, f"the ring has ranks 0, 1 and 2, got rank {rank}.")


# --------------------------------------------------------------------------------------------
# A resharded load, written by the student

def load_into(rank: int, world: int, path: str) -> tuple[Any, Any, ckpt.LoadReport]:
    """Build the FSDP2 model for ``world`` ranks, load the checkpoint at ``path`` into it, return it and the report."""
    model, optimizer = R.build("fsdp2", world)
    state = ckpt.training_state(model, optimizer)
    report = ckpt.load(state, path)
    ckpt.restore_training_state(model, optimizer, state)
    return model, optimizer, report


@cache
def _saved() -> tuple[str, ckpt.FullState, int]:
    """(path, the state 4 ranks saved, its bytes): saved once per process into a folder removed at exit."""
    folder = tempfile.mkdtemp(prefix="d2lmp-exercise-")
    atexit.register(shutil.rmtree, folder, True)
    R._import_before_fork()
    saved = launch(R.save_rank, R.SAVE_WORLD, "fsdp2", folder, 3, backend="gloo")
    return str(ckpt.step_dir(folder, 3)), saved[0].state, sum(saved[0].written.values())


def _load_worker(rank: int, world: int, fn: Any, path: str) -> tuple[ckpt.FullState, int, int | None]:
    model, optimizer, report = fn(rank, world, path)
    state = ckpt.training_state(model, optimizer)
    return ckpt.full_training_state(model, optimizer), R._held_bytes(state), getattr(report, "bytes_read", None)


def _load_run(fn: Any) -> list[tuple[str, Any, Any]]:
    try:  # an unanswered stub says so on one rank at once, before 4 ranks save the checkpoint it would need
        on_ranks(_load_worker, 1, fn, "no checkpoint here", timeout=60.0)
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - a real answer fails on the missing checkpoint: the real run follows
        pass
    path, saved, total = _saved()
    results = []
    for world in (2, 3):
        for rank, got in enumerate(on_ranks(_load_worker, world, fn, path, timeout=60.0)):
            results.append((f"{world} ranks, rank {rank}", got, (saved, total, world)))
    return results


def _whole_bytes(state: ckpt.FullState) -> int:
    return sum(t.numel() * t.element_size() for t in state.tensors().values())


def _load_judge(case: str, got: Any, context: Any) -> str | None:
    state, held, read = got
    saved, total, world = context
    if read is None:
        return "return (model, optimizer, the report that checkpoint.load returned)"
    if not R.state_difference(ckpt.FullState(state.model, {}), ckpt.FullState(saved.model, {}))[0]:
        return "the parameters are not the saved ones: was the checkpoint loaded into the model you return?"
    if not R.state_difference(state, saved)[0]:
        return ("the parameters match but Adam's state does not: load the optimizer's state too (training_state "
                "holds both, and restore_training_state puts both back)")
    if read >= total or held > 1.5 * _whole_bytes(saved) / world:
        return (f"this rank read {read:,} of the checkpoint's {total:,} bytes and holds {held:,} bytes: the whole "
                f"state. Build the model sharded over the {world} ranks (reshard.build('fsdp2', world)), so that "
                "each rank reads and keeps only its shards")
    return None


def _whole_on_every_rank(rank: int, world: int, path: str) -> tuple[Any, Any, ckpt.LoadReport]:
    model, optimizer = R.build("fsdp2", 1)
    state = ckpt.training_state(model, optimizer)
    report = ckpt.load(state, path)
    ckpt.restore_training_state(model, optimizer, state)
    return model, optimizer, report


def _model_only(rank: int, world: int, path: str) -> tuple[Any, Any, ckpt.LoadReport]:
    model, optimizer = R.build("fsdp2", world)
    state = ckpt.training_state(model, optimizer)
    report = ckpt.load({"model": state["model"]}, path)
    return model, optimizer, report


def _nothing_loaded(rank: int, world: int, path: str) -> tuple[Any, Any, ckpt.LoadReport]:
    model, optimizer = R.build("fsdp2", world)
    return model, optimizer, ckpt.LoadReport(0.0, 0)


interval = Exercise(
    key="interval", number=1,
    title="How often to checkpoint",
    question="A job trains on 4,096 GPUs, each failing as often as those of the Llama 3 run "
             "(`checkpoint_interval.REPORTS[0].per_gpu_hour`), and a checkpoint takes 2 minutes to save. By "
             "Young's rule, how many minutes of work should pass between checkpoints?",
    hint_text="First the job's mean time between failures: one GPU fails λ times an hour, 4,096 of them 4,096 λ "
              "times. Then Young's rule, τ = √(2 δ M), with δ and M in the same unit.",
    solution_text="M = 1 / (4096 λ) with λ = 419 / (54 × 24 × 16384) per GPU-hour: about 12.4 hours. "
                  "τ = √(2 × 2 min × 742 min) ≈ 54 minutes. Four times fewer GPUs than Llama 3's run fail four "
                  "times less often, and the interval grows by √4 = 2.",
    checker=_check_interval, reference=YOUNG_MIN,
    wrong=[(YOUNG_MIN / 2**0.5, "the factor 2 is missing"), (YOUNG_MIN * 60, "that is in seconds"),
           (CI.young_interval(SAVE_S, CI.job_mtbf(CI.REPORTS[0].gpus, _RATE)) / 60, "16,384 GPUs")],
    how_to_answer="Pass a number of minutes.")


recomputed = Exercise(
    key="recomputed", number=2,
    title="Steps computed twice",
    question="A run saves a checkpoint after every 50 steps. A rank dies in the middle of step 173 and the job "
             "restarts from its newest complete checkpoint. How many steps are computed a second time?",
    hint_text="Which step does the newest complete checkpoint hold? Count the steps from the one after it up "
              "to the one that was cut short.",
    solution_text="The newest complete checkpoint holds step 150; the restart runs steps 151 to 173 again: 23 "
                  "steps, 22 finished ones and the one cut short. On average, with failures at random times, a "
                  "restart recomputes about half an interval; the notebook's restart, killed while step 4's "
                  "checkpoint was being written, recomputed a whole interval (the count it prints).",
    checker=_check_recomputed, reference=KILLED - EVERY * (KILLED // EVERY),
    wrong=[(22, "was under way"), (25, "the average"), (27, "not on to the next one")],
    how_to_answer="Pass a number of steps.")


lost_message = Exercise(
    key="lost_message", number=3,
    title="Which rank hangs, and where",
    question="`ex.pass_along` (read it with `show(ex.pass_along)`) sends each rank's number to the next rank round "
             "a ring of 3 ranks, and receives "
             "the previous rank's. Run it (`launch(ex.pass_along, 3, timeout=3, group_timeout=60)`) and read "
             "the error: which rank waits for a message that never comes, and at which line? Answer "
             "`(rank, line)`.",
    hint_text="Each rank's stack ends in the line of `pass_along` where it waits. A rank that waits in "
              "`send.wait()` waits for its own message to be received; one that waits in `recv` waits for a "
              "message. Who was supposed to send it?",
    solution_text="Rank 0, in `dist.recv(got, left)`: it waits for rank 2, whose `right` is 1 instead of 0, so "
                  "rank 2 sends to rank 1, which never receives it (rank 2 waits in `send.wait()`), and rank 1, "
                  "done, waits in launch's closing barrier. The fix: `right = (rank + 1) % world`.",
    checker=_check_lost_message, reference=(0, _line("dist.recv(")),
    wrong=[((2, _line("send.wait()")), "it sent the lost message"), ((1, 0), "rank 1 finished"),
           ((0, _line("dist.isend(")), "isend returns at once"), ("rank 0", "answer with (rank, line number)")],
    how_to_answer="Pass (rank, line).")


resharded_load = Exercise(
    key="resharded_load", number=4,
    title="A resharded load", function="load_into(rank, world, path)",
    question="Write `load_into(rank, world, path)`: build the FSDP2 model of the lesson for `world` ranks "
             "(`reshard.build('fsdp2', world)`), load the checkpoint at `path` (saved by 4 ranks) into it, "
             "and return `(model, optimizer, report)`, where `report` is what `checkpoint.load` returns. It "
             "runs on 2 and on 3 ranks: every parameter and Adam tensor must equal the saved one, and each rank "
             "must read only the saved records that overlap its shards.",
    hint_text="Three calls: `checkpoint.training_state(model, optimizer)` allocates the state this world shards "
              "its own way, `checkpoint.load(state, path)` fills it in place, and "
              "`checkpoint.restore_training_state(model, optimizer, state)` puts it back.",
    solution_text="model, optimizer = reshard.build('fsdp2', world); state = checkpoint.training_state(model, "
                  "optimizer); report = checkpoint.load(state, path); checkpoint.restore_training_state(model, "
                  "optimizer, state); return model, optimizer, report. DCP's metadata maps every saved shard to "
                  "its slice of the whole tensor, so each rank asks for the slices its new shards cover, even "
                  "on 3 ranks, which split the rows unevenly where 4 did not.",
    checker=code_checker(_load_run, _load_judge, "on 2 and 3 ranks the state equals what 4 ranks saved, and each "
                                                 "rank read only the records its shards need."),
    reference=load_into,
    wrong=[(_whole_on_every_rank, "the whole state"), (_model_only, "Adam's state does not"),
           (_nothing_loaded, "are not the saved ones")])


async_when = Exercise(
    key="async_when", number=5,
    title="When an asynchronous save pays off",
    question="An asynchronous save lets training continue while a thread writes the checkpoint. When does it "
             "shorten the time training waits, and what does it cost?",
    hint_text="Split a save into copying the state out of the training's memory and writing it to storage. "
              "Which part does training still wait for, and what must stay in memory meanwhile?",
    solution_text="Training waits only for the copy (to CPU memory, for GPU tensors across PCIe); the write to "
                  "storage overlaps the following steps. It pays off when the write is slower than the copy: "
                  "slow or shared storage, large states. It costs a second copy of the state in host memory, the "
                  "write's use of cores, memory bandwidth and network, which slows the steps it overlaps, and one "
                  "more checkpoint at risk: until the write completes, the previous checkpoint is the newest "
                  "complete one.")


rng_why = Exercise(
    key="rng_why", number=6,
    title="Why restore the random state",
    question="The resumed run restored every rank's random state. Which part of training would differ "
             "without it, and why would the run still train well?",
    hint_text="Where does this model draw random numbers during a step? What would a resumed rank draw instead?",
    solution_text="Dropout: each rank draws its masks from its own generator, so a rank restarted from its seed "
                  "would draw the masks of the first steps again, and the run would differ from the uninterrupted "
                  "one (the notebook measured it). Statistically nothing is wrong, other masks are as good, so "
                  "the run still trains; what is lost is reproducibility, the guarantee that a restart changes "
                  "nothing, which is what lets a test tell a correct resume from a subtly broken one.")


EXERCISES = [interval, recomputed, lost_message, resharded_load, async_when, rng_why]
