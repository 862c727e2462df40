"""Every command answers bad input in one line: ``d2lmp`` (info, selfcheck, each bench, plan), the torchrun entry
points' checks (``commands.demo``, ``commands.resilient``).

``CASES`` is the table: a command line, its exit status and a piece of its one line. Each case runs in-process
with every measurement and launch replaced by a failure, so a case that starts work before answering fails; it
must answer within ``ANSWER_S`` (a hang guard, not a timing), with exactly one line on stderr and no traceback.
A failure during a run is one line and status 1, and ``--debug`` adds its traceback. A few cases run as real
processes, for the exit status the shell sees; the real torchrun case is in ``tests/test_torchrun.py``.
"""

import argparse
import subprocess
import sys
import threading

import pytest

from d2lmp.commands import demo, resilient
from d2lmp.commands.bench import BENCHMARKS
from d2lmp.commands.main import build_parser, main
from d2lmp.commands.options import RANKS_PER_CORE, DefaultsFormatter, rank_cap

ANSWER_S = 20.0  # generous: the answer needs no measurement, but the machine may be busy
CAP = rank_cap()
MANY = CAP + 1  # more ranks than any benchmark starts here

# (command line, exit status, a piece of the one line on stderr)
CASES = [
    (["info", "--verbose"], 2, "unrecognized arguments: --verbose"),
    (["selfcheck", "--output"], 2, "argument --output/-o: expected one argument"),
    (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    (["bench"], 2, "the following arguments are required: benchmark"),
    (["bench", "fft"], 2, "invalid choice: 'fft'"),
    (["bench", "matmul", "--sizes", "a,b"], 2, "expected comma-separated integers, got 'a,b'"),
    (["bench", "matmul", "--dtypes", "float7"], 2, "unknown dtype 'float7'"),
    (["bench", "matmul", "--devices", "cuda:7"], 2, "device 'cuda:7' is not present here"),
    (["bench", "conv", "--devices", "cuda:5"], 2, "device 'cuda:5' is not present here"),
    (["bench", "conv", "--min-time", "0"], 2, "--min-time must be positive, got 0"),
    (["bench", "train", "--epochs", "0"], 2, "--epochs must be positive, got 0"),
    (["bench", "train", "--device", "cuda:2"], 2, "device 'cuda:2' is not present here"),
    (["bench", "allreduce", "--worlds", "1"], 2, "--worlds must be at least 2, got 1"),
    (["bench", "allreduce", "--worlds", str(MANY)], 2, f"--worlds must be at most {CAP} ({RANKS_PER_CORE} ranks "
     "per core"),
    (["bench", "allreduce", "--sizes", "6"], 2, "6 B is not a multiple of 4 B"),
    (["bench", "dp", "--world", "0"], 2, "--world must be positive, got 0"),
    (["bench", "dp", "--world", "200"], 2, f"--world must be at most {CAP}"),
    (["bench", "dp", "--bucket-mb", "1e-9"], 2, "--bucket-mb must hold at least one byte"),
    (["bench", "pipeline", "--worlds", "9" if CAP < 9 else "24"], 2, "--worlds must be at most"),
    (["bench", "pipeline", "--micro-batches", "16", "--batch", "8"], 2, "--batch must be at least 16, got 8"),
    (["bench", "costmodel", "--steps", "1"], 2, "--steps must be at least 2, got 1"),
    (["bench", "zero", "--world", "1"], 2, "--world must be at least 2, got 1"),
    (["bench", "zero", "--world", str(MANY)], 2, f"--world must be at most {CAP}"),
    (["bench", "hybrid", "--rounds", "0"], 2, "--rounds must be at least 1, got 0"),
    (["bench", "recompute", "--batch", "-3"], 2, "--batch must be positive, got -3"),
    (["bench", "ring-attention", "--world", "1"], 2, "--world must be at least 2, got 1"),
    (["bench", "ring-attention", "--shape", "1,2,3"], 2, "--shape takes four integers"),
    (["bench", "ring-attention", "--shape", "1,2,30,8"], 2, "a sequence of 30 tokens does not split into 4 equal"),
    (["bench", "all-to-all", "--worlds", "100"], 2, f"--worlds must be at most {CAP}"),
    (["bench", "all-to-all", "--worlds", "1"], 2, "--worlds must be at least 2, got 1"),
    (["bench", "scale", "--planner", "yes"], 2, "unrecognized arguments: yes"),
    (["bench", "faults", "--worlds", "5"], 2, "--worlds must be at most 4 (the campaign's faults need at most 4"),
    (["bench", "faults", "--runs", "0"], 2, "--runs must be positive, got 0"),
    (["bench", "scale-bridge", "--model", "huge"], 2, "unknown preset 'huge'"),
    (["plan", "--model", "175B"], 2, "the following arguments are required: --gpus, --global-batch"),
    (["plan", "--model", "175B", "--gpus", "1024", "--global-batch", "0"], 2, "--global-batch must be positive"),
    (["plan", "--model", "175B", "--gpus", str(2**30), "--global-batch", "1536"], 2, "--gpus must be at most"),
    (["plan", "--model", "175B", "--gpus", "1000", "--global-batch", "1536"], 2,
     "16 of 16 families, e.g. (tp, pp, dp, cp) = (1, 1, 1000, 1): invalid: the global batch (1536) does not split "
     "over dp = 1000"),
    (["plan", "--model", "175B", "--gpus", "8", "--global-batch", "8"], 2,
     "nothing fits: no configuration of 175B fits on 8 x A100-80GB (80 GB each) for a global batch of 8: 16 of 16 "
     "families"),
    (["plan", "--model", "1.7B", "--moe", "8,2", "--gpus", "8", "--global-batch", "8"], 2,
     "--moe takes EXPERTS,TOP_K,EXPERT_FFN[,SHARED[,DENSE_LAYERS]], got 8,2"),
    (["plan", "--model", "1.7B", "--moe", "8,9,1024", "--gpus", "8", "--global-batch", "8"], 2,
     "top_k (9) cannot exceed the routed experts (8)"),
    (["plan", "--model", "1.7B", "--moe", "8,2,0", "--gpus", "8", "--global-batch", "8"], 2, "--moe must be positive"),
    (["plan", "--model", "deepseek-v3", "--moe", "8,2,64", "--gpus", "8", "--global-batch", "8"], 2,
     "--moe: deepseek-v3 is already a mixture of experts"),
    (["plan", "--model", "1.7B", "--ep", "2", "--gpus", "8", "--global-batch", "8"], 2,
     "--ep, --fp8-dispatch and --ep-overlap need a mixture of experts"),
    (["plan", "--model", "deepseek-v3", "--ep", "0", "--gpus", "8", "--global-batch", "8"], 2, "--ep must be positive"),
]


def _must_not_run(*args: object, **kwargs: object) -> None:
    pytest.fail("started working before checking the input")


@pytest.fixture
def no_work(monkeypatch):
    """Every measurement and launch a command could start fails the test."""
    from d2lmp import timing
    from d2lmp.bench import (
        all_to_all,
        allreduce,
        context_parallel,
        costmodel,
        data_parallel,
        hybrid,
        pipeline,
        scale_bridge,
        zero,
    )
    from d2lmp.parallel import launch

    for module in (launch, allreduce, all_to_all, context_parallel, costmodel, data_parallel, hybrid, pipeline,
                   scale_bridge, zero):
        if hasattr(module, "launch"):
            monkeypatch.setattr(module, "launch", _must_not_run)
    for module, name in ((timing, "matmul_sweep"), (timing, "harness_agreement"), (timing, "benchmark"),
                         (pipeline, "pipeline_model")):
        monkeypatch.setattr(module, name, _must_not_run)
    monkeypatch.setattr("d2lmp.train.train_small_alexnet", _must_not_run)
    monkeypatch.setattr("d2lmp.bench.conv.benchmark_conv", _must_not_run)
    monkeypatch.setattr("d2lmp.bench.recompute.recompute_bench", _must_not_run)
    monkeypatch.setattr("d2lmp.commands.bench.scale.calibration_report", _must_not_run)
    monkeypatch.setattr(demo, "run_from_env", _must_not_run)


def answer(run, *args: object) -> object:
    """``run(*args)``'s exit status (a SystemExit's code counts), within ``ANSWER_S``."""
    result: dict[str, object] = {}

    def target() -> None:
        try:
            result["status"] = run(*args)
        except SystemExit as exc:
            result["status"] = exc.code
        except BaseException as exc:  # noqa: BLE001 -- reported below, with the case
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(ANSWER_S)
    assert not thread.is_alive(), f"no answer within {ANSWER_S} s"
    assert "error" not in result, f"raised {result.get('error')!r}"
    return result["status"]


def one_line(err: str) -> str:
    """The one line of ``err`` (asserts there is exactly one and no traceback)."""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv, status, message", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_one_line_and_its_exit_status(no_work, capsys, argv, status, message):
    assert answer(main, argv) == status
    out, err = capsys.readouterr()
    assert message in one_line(err) and err.startswith("d2lmp"), err


def test_the_table_covers_every_command_and_benchmark():
    covered = {tuple(argv[:2]) if argv[0] == "bench" else (argv[0],) for argv, _, _ in CASES}
    assert {("bench", name.replace("_", "-")) for name in BENCHMARKS} <= covered
    assert {("info",), ("selfcheck",), ("plan",)} <= covered


def _torchrun_env(world: int, local_rank: int) -> dict[str, str]:
    return {"RANK": str(local_rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local_rank)}


DEMO_CASES = [
    (["all"], 2, "cannot run on 2 ranks: 3d needs at least 4 ranks, a multiple of 4; hybrid needs at least 4 ranks"),
    (["pipeline"], 8, "cannot run on 8 ranks: pipeline needs at most 7 ranks"),
    (["interleaved"], 1, "cannot run on 1 rank: interleaved needs at least 2 and at most 5 ranks"),
    (["shard"], 2, "unknown strategy 'shard'"),
    (["--fast", "dp"], 2, "unrecognized arguments: --fast"),
]


@pytest.mark.parametrize("argv, world, message", DEMO_CASES)
def test_the_torchrun_entry_point_checks_before_joining_and_every_rank_says_why(no_work, capsys, tmp_path, argv,
                                                                                  world, message):
    for rank in range(min(world, 2)):
        env = _torchrun_env(world, rank) | {"TORCHELASTIC_ERROR_FILE": str(tmp_path / f"error{rank}.json")}
        assert answer(demo.main, argv, env) == 2
        err = one_line(capsys.readouterr().err)
        assert message in err and err.startswith(demo.PROG), err
        if not argv[0].startswith("--"):  # argparse's own errors come before the entry point can write the file
            assert message in (tmp_path / f"error{rank}.json").read_text()


def test_the_world_size_check_names_every_strategy_that_cannot_run():
    assert demo.select(["dp", "zero"], 2) == ["dp", "zero"]
    with pytest.raises(ValueError, match="cannot run on 3 ranks: 3d needs at least 4 ranks, a multiple of 4; hybrid"):
        demo.select(["3d", "dp", "hybrid"], 3)


def test_the_restart_entry_point_answers_bad_input_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(resilient, "_join_group", _must_not_run)
    assert answer(resilient.main, ["--steps", "8", "--checkpoint-every", "2", "--kill-rank", "1",
                                   "--dir", str(tmp_path)]) == 2
    assert "give --kill-rank and --kill-step together" in one_line(capsys.readouterr().err)


def test_a_failure_during_a_run_is_one_line_and_exit_1_with_the_traceback_under_debug(monkeypatch, capsys):
    from d2lmp.bench import allreduce

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(allreduce, "allreduce_bench", broken)
    assert main(["bench", "allreduce", "--worlds", "2", "--sizes", "4096"]) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("d2lmp: bench allreduce failed: ZeroDivisionError: float division by zero") and \
        "--debug" in err
    for argv in (["--debug", "bench", "allreduce"], ["bench", "allreduce", "--debug"]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and "in broken" in err
        assert err.splitlines()[-1].startswith("d2lmp: bench allreduce failed: ZeroDivisionError")


def test_a_library_value_error_during_a_run_is_a_failure_not_a_usage_error(monkeypatch, capsys):
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug deep in the library")

    monkeypatch.setattr("d2lmp.bench.allreduce.allreduce_bench", broken)
    assert main(["bench", "allreduce", "--worlds", "2", "--sizes", "4096"]) == 1
    assert "failed: ValueError: a bug deep in the library" in one_line(capsys.readouterr().err)


def _options(parser: argparse.ArgumentParser, name: str = "d2lmp"):
    """(command, option) for every option of ``parser`` and its subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _options(sub, f"{name} {sub_name}")
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            yield name, action


def test_every_option_has_help_that_names_its_default():
    options = list(_options(build_parser()))
    assert len(options) > 60
    formatter = DefaultsFormatter("d2lmp")  # every parser's: what --help prints
    for command, action in options:
        assert action.help, f"{command} {action.option_strings[0]} has no help text"
        text = formatter._get_help_string(action)
        flag = action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction)
        assert flag or action.required or "default" in (text or ""), \
            f"{command} {action.option_strings[0]}: the help names no default: {text!r}"


def test_plan_answers_in_seconds_for_a_huge_batch():
    from d2lmp.model.cluster.planner import _divisors
    from d2lmp.scale import Cluster, model_preset, plan

    assert _divisors(10**18, 16) == [1, 2, 4, 5, 8, 10, 16]
    assert _divisors(720) == [k for k in range(1, 721) if 720 % k == 0]
    # the micro-batch sizes came from walking all 10^15 / dp numbers before
    report = answer(plan, model_preset("1.7B").model, Cluster("A100-80GB", gpus=8), 10**15)
    assert report.best is not None  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("argv, status, message", [
    (["bench", "allreduce", "--worlds", "1"], 2, "d2lmp: --worlds must be at least 2, got 1"),
    (["bench", "allreduce", "--worlds", "x"], 2, "d2lmp bench allreduce: error: argument --worlds"),
    (["plan", "--model", "175B", "--gpus", "1000", "--global-batch", "1536"], 2, "d2lmp: nothing fits"),
])
@pytest.mark.slow
def test_as_a_process_bad_input_is_one_line_and_its_exit_status(argv, status, message):
    result = subprocess.run([sys.executable, "-m", "d2lmp.commands.main", *argv], capture_output=True, text=True,
                            timeout=120)
    # a search that lasts over a second says so first (a loaded machine); the answer is then the one line after it
    answer = "".join(line for line in result.stderr.splitlines(keepends=True)
                     if not line.startswith("d2lmp plan: searching "))
    assert result.returncode == status and one_line(answer).startswith(message), result.stderr


def test_the_readme_lists_every_benchmark():
    """README's package section names every `d2lmp bench` command (it once lacked ring-attention and all-to-all)."""
    from pathlib import Path

    from d2lmp.commands.bench import BENCHMARKS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [name.replace("_", "-") for name in BENCHMARKS if f"d2lmp bench {name.replace('_', '-')} " not in readme]
    assert not missing, f"README.md does not list: {missing}"
