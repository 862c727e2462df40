"""Every fact has one home: no number with a unit is bound outside the model package and the sourced tables.

**The principle** (``test_no_number_with_a_unit_is_bound_outside_its_home``): a module- or class-level constant whose
name carries a unit (``_S``, ``_BYTES``, ``_GBS``, ``_W``, ``_HZ``, ... or a name with ALPHA, LATENCY or BANDWIDTH)
may be bound to a literal number only in ``d2lmp/model/`` and the sourced tables (``HOMES``: ``gpu_specs``,
``topology``, ``bibliography``, ``sources/``, ``recorded/``); everywhere else in the package, and in every notebook's
code cells, such a number is imported from its home. Program settings (timeouts, how long before a progress line)
are not facts and pass; so do the few reviewed names in ``REVIEWED_UNIT_NAMES``, each with its reason.

**Rules the principle cannot see**, kept because each catches what no unit-named constant shows:

* views name no numbers but plotting parameters, whatever the name (a view could bind ``link = 100.0``): in
  ``d2lmp/views/`` a numeric literal may not be *named* (bound at module or class level, given as a parameter's
  default, or bound to a local from literals alone) unless the name is a plotting parameter (``PLOTTING_PARAMETERS``:
  figure layout, how many things to draw, where to look from) or a reviewed exception with its reason. The values
  0 and 1 (a start, an identity) are never a fact; literals used in place, as a drawing call's argument, are layout;
  widget callbacks (functions nested in a view) are exempt, their defaults being the controls' starting positions;
* the GPU α and DDP's bucket size are found by *value*, wherever they are typed, named or inline, and a latency α
  bound to a literal is found inside the model package too, outside its one home ``model/alpha_beta.py``;
* bytes per parameter are found as call keywords and tuples (``param_bytes=2``, ``(2, 2, 12)``), not constants;
* ZeRO's sharding rule, the naive schedule's one micro-batch, α read off a fitted intercept and the ring/tree
  simulation are rules written as code (a comparison, a conditional, a division, a loop), not numbers;
* the parts of memory, their colours and the optimizers' names are a vocabulary: strings, not numbers;
* the notebooks' prose quotes the one GPU α (markdown, not code).

Everything is read with ``ast`` (nothing is imported or run); notebooks through ``tools.notebooks``.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from d2lmp.model.alpha_beta import GPU_ALPHA_S
from d2lmp.model.dp_model import DDP_BUCKET_BYTES
from d2lmp.model.training_state import BUFFERS, MEMORY_PARTS, OPTIMIZERS
from tools.notebooks import paths, read

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ROOT / "d2lmp" / "views"

# Where a number with a unit may be written: the model package and the sourced tables.
HOMES = ("d2lmp/model/", "d2lmp/gpu_specs.py", "d2lmp/topology.py", "d2lmp/bibliography.py", "d2lmp/sources/",
         "d2lmp/recorded/")
# A unit at the end of a constant's name (after an underscore: a bare ``S`` is a sequence length, ``KIB`` a unit
# conversion), or a quantity of the α-β model anywhere in a name.
UNIT_SUFFIX = re.compile(r"_(S|MS|US|NS|SECONDS|MIN|MINUTES|HOURS|BYTES|KB|MB|GB|TB|KIB|MIB|GIB|GBS|GBPS|TBS|TBPS|"
                         r"W|WATTS|HZ|KHZ|MHZ|GHZ|FLOPS|GFLOPS|TFLOPS|J|JOULES)$")
MODEL_QUANTITY = re.compile(r"(^|_)(alpha|latency|bandwidth)($|_)", re.I)
# Settings of the program, not facts about the world: how long to wait for a rank, when to print progress.
SETTING = re.compile(r"TIMEOUT|_AFTER_S$")
# (module or notebook, name) -> why it may bind a number with what looks like a unit.
REVIEWED_UNIT_NAMES = {
    ("d2lmp/exercises/activation_memory_and_composing.py", "PIPE_MB"): "MB is micro-batches (counts), not megabytes",
    ("d2lmp/exercises/gpus_in_deep_learning.py", "_FC6_BYTES"):
        "the exercise's answer, from the fc6 shape and FP32 size its question states",
    ("d2lmp/exercises/when_things_fail.py", "SAVE_S"): "the question's given: a 2-minute save on 4096 GPUs",
    ("d2lmp/models.py", "LRN_ALPHA"): "local response normalization's α (AlexNet's hyper-parameter), not a latency",
}

# Names whose numeric value is a drawing choice: figure layout, how many things to draw, where to look from.
PLOTTING_PARAMETERS = {"figsize", "fontsize", "label_min", "decimals", "columns", "ticks", "yaw", "pitch", "world",
                       "batch", "step", "width", "opacity", "unit", "floor"}
# (module, name) -> why a view may name this number: reviewed drawing choices outside PLOTTING_PARAMETERS.
REVIEWED_VIEW_NUMBERS = {
    ("data_parallel", "WORLDS"): "the numbers of devices on the scaling plot's axis",
    ("pipeline", "stages"): "the example pipeline the schedule comparison draws",
    ("pipeline", "micro_batches"): "the example pipeline the schedule comparison draws",
    ("pipeline", "chunks"): "the example pipeline the schedule comparison draws",
    ("context_parallel", "seq_len"): "the example sequence the work-per-rank figure splits",
    ("comm_roofline", "ranks"): "the widget's starting group size (tensor parallelism inside a DGX node)",
    ("planner", "gpus"): "the planner widget's starting case: GPT-3 on 1,024 GPUs",
    ("planner", "global_batch"): "the planner widget's starting case: Narayanan et al.'s batch of 1,536",
    ("strategies", "_BOX_W"): "a layer box's width in the drawing",
    ("strategies", "_BOX_H"): "a layer box's height in the drawing",
    ("strategies", "_ROW"): "the distance between the drawing's rows",
    ("strategies", "x_input"): "where the drawing puts the input",
    ("conv", "channels"): "the example layer the im2col figure sweeps",
    ("conv", "size"): "the example layer the im2col figure sweeps",
    ("conv", "batch"): "the example layer the im2col figure sweeps",
    ("conv", "kernels"): "the kernel sizes the im2col figure sweeps",
    ("conv", "strides"): "the strides the im2col figure sweeps",
    ("matmul", "sizes"): "the matrix sizes the widget offers to time",
    ("matmul", "min_time"): "how long the widget times each size",
    ("graphics", "CAMERA_DISTANCE"): "where the cube is seen from (the projection's focal)",
    ("gpu_architecture", "_LABEL_PLACES"): "where a GPU's name may sit beside its point (offsets in points)",
}
NEUTRAL = (0, 1)  # a start or an identity (an accumulator's 0.0, a scale of 1.0) states no fact

# A latency α written as a literal outside its home; LRN_ALPHA is another α, local response normalization's.
LATENCY_NAME = re.compile(r"(^|_)alpha($|_)", re.I)
OTHER_ALPHAS = {"LRN_ALPHA"}
ALPHA_HOME = "d2lmp/model/alpha_beta.py"
BUCKET_HOME = "d2lmp/model/dp_model.py"
BYTES_HOME = "d2lmp/model/training_state.py"
BYTES_KEYWORDS = {"param_bytes", "grad_bytes", "optimizer_bytes", "state_bytes"}
SIMULATION_HOME = "d2lmp/model/allreduce_steps.py"
MICRO_BATCH_HOME = "d2lmp/model/pipeline_schedule.py"
ZERO_IMPL = "d2lmp/parallel/zero.py"
COLOURS_HOME = "d2lmp/views/memory.py"
OLD_NAMES = {"optimizer", "activations"}  # what the parts of memory were once also called


# Each tree is parsed once per test process and shared by the tests, which only read it.
_NODES: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}


def _walk(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of ``tree``, as ``ast.walk`` finds them, listed once per test process (the tree is kept with its
    list, so its id is never reused by another tree)."""
    if id(tree) not in _NODES:
        _NODES[id(tree)] = (tree, tuple(ast.walk(tree)))
    return _NODES[id(tree)][1]


@functools.cache
def _package() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((path.relative_to(ROOT).as_posix(), ast.parse(path.read_text()))
                 for path in sorted((ROOT / "d2lmp").rglob("*.py")))


@functools.cache
def _notebooks() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((f"{path.relative_to(ROOT).as_posix()} cell {cell.index}", cell.tree())
                 for path in paths() for cell in read(path).code())


@functools.cache
def _tests() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((path.relative_to(ROOT).as_posix(), ast.parse(path.read_text()))
                 for path in sorted((ROOT / "tests").glob("*.py")))


def _learner_code() -> list[tuple[str, ast.Module]]:
    """The package and the notebooks: the code a learner reads."""
    return [*_package(), *_notebooks()]


def _value(node: ast.AST) -> float | tuple | None:
    """The number (or tuple of numbers) an expression of literals alone makes, else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        return -inner if isinstance(node.op, ast.USub) and isinstance(inner, (int, float)) else inner
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                   ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b, ast.FloorDiv: lambda a, b: a // b}
            op = ops.get(type(node.op))
            return op(left, right) if op else None
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts:
        values = tuple(_value(e) for e in node.elts)
        return values if all(v is not None for v in values) else None
    return None


def _has_number(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(node))


def _is_neutral(node: ast.AST) -> bool:
    value = _value(node)
    return isinstance(value, (int, float)) and value in NEUTRAL


def _names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    return []


def _defaults(f: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[tuple[str, ast.expr]]:
    a = f.args
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return [(arg.arg, d) for arg, d in pairs]


def _bindings(tree: ast.Module) -> Iterator[tuple[int, str, ast.expr]]:
    """(line, name, value) of every assignment (tuples unpacked element-wise) and every parameter default."""
    for node in _walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                        and len(target.elts) == len(node.value.elts):
                    for t, v in zip(target.elts, node.value.elts):
                        yield from ((node.lineno, n, v) for n in _names(t))
                else:
                    yield from ((node.lineno, n, node.value) for n in _names(target))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            yield from ((node.lineno, n, node.value) for n in _names(node.target))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from ((node.lineno, n, d) for n, d in _defaults(node))


# ---------------------------------------------------------------------------------------------------------------
# The principle: no number with a unit is bound outside its home


def _has_unit(name: str) -> bool:
    return bool((name.isupper() and UNIT_SUFFIX.search(name)) or MODEL_QUANTITY.search(name))


def unit_number_violations(tree: ast.Module, where: str) -> list[str]:
    """Module- and class-level constants of ``tree`` whose name carries a unit and whose value is literal numbers."""
    top = list(tree.body) + [s for c in tree.body if isinstance(c, ast.ClassDef) for s in c.body]
    found = []
    for node in top:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _value(node.value) is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{where}:{node.lineno}: {name} = {ast.unparse(node.value)[:60]}"
                      for t in targets for name in _names(t) if _has_unit(name) and not SETTING.search(name)
                      and (where.split(" cell ")[0], name) not in REVIEWED_UNIT_NAMES]
    return found


def test_no_number_with_a_unit_is_bound_outside_its_home():
    """Views are left to their own, stricter rule below (any number there, unit or not)."""
    found = [v for where, tree in _learner_code() if not where.startswith((*HOMES, "d2lmp/views/"))
             for v in unit_number_violations(tree, where)]
    assert not found, ("a number with a unit bound outside the model package and the sourced tables; move it to its "
                       f"home (d2lmp/model/ or a sourced table) with its source, and import it: {found}")


def test_the_unit_rule_catches_a_constant_and_passes_a_setting():
    """The rule itself: unit-named constants and α-β quantities are caught; settings, bare letters, units and
    values that are not literal numbers pass."""
    tree = ast.parse("NVLINK_GBS = 450.0\nclass Link:\n    ALPHA = 5e-6\nSAVE_BYTES = 3 * 2**30\n"
                     "link_bandwidth = 1e9\nRANK_TIMEOUT_S = 30.0\nS = 4096\nKIB = 2**10\nSTEP_S = other.STEP_S\n")
    found = [v.split(": ", 1)[1].split(" =")[0] for v in unit_number_violations(tree, "any.py")]
    assert sorted(found) == ["ALPHA", "NVLINK_GBS", "SAVE_BYTES", "link_bandwidth"], found


# ---------------------------------------------------------------------------------------------------------------
# Views name no numbers but plotting parameters


def view_number_violations(tree: ast.Module, module: str) -> list[str]:
    """Where a view names a number that is not a plotting parameter (see the module docstring)."""
    allowed = PLOTTING_PARAMETERS | {name for mod, name in REVIEWED_VIEW_NUMBERS if mod == module}
    found = []
    top = list(tree.body) + [s for c in tree.body if isinstance(c, ast.ClassDef) for s in c.body]
    for node in top:  # module- and class-level constants
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None \
                and _has_number(node.value) and not _is_neutral(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bad = [n for t in targets for n in _names(t) if n not in allowed]
            found += [f"{module}.py:{node.lineno}: constant {n} = {ast.unparse(node.value)[:60]}" for n in bad]
    functions = [n for n in top if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for f in functions:  # defaults of the view's own functions (nested widget callbacks are exempt)
        found += [f"{module}.py:{f.lineno}: {f.name}({name}={ast.unparse(d)})" for name, d in _defaults(f)
                  if _has_number(d) and not _is_neutral(d) and name not in allowed]
    for f in _walk(tree):  # locals bound to literals alone
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(f):
                if isinstance(node, ast.Assign) and _value(node.value) is not None and not _is_neutral(node.value):
                    found += [f"{module}.py:{node.lineno}: local {n} = {ast.unparse(node.value)[:60]}"
                              for t in node.targets for n in _names(t) if n not in allowed]
    return found


@pytest.mark.parametrize("path", sorted(VIEWS.glob("*.py")), ids=lambda p: p.name)
def test_views_name_no_numbers_but_plotting_parameters(path):
    found = view_number_violations(ast.parse(path.read_text()), path.stem)
    assert not found, ("a view names a number that is not a plotting parameter; define it once in the library "
                       f"(with its source) and import it, or add the name to PLOTTING_PARAMETERS if it only draws: "
                       f"{found}")


def test_the_view_guard_catches_a_model_number():
    """The guard itself: each way a view could name a fact is caught, and plotting parameters pass."""
    facts = ast.parse("GPU_ALPHA = 5e-6\n"
                      "class Table:\n    BYTES = (2, 2, 12)\n"
                      "def plot(x, alpha_s=20e-6, figsize=(5, 3)):\n    link = 100.0\n    return link\n"
                      "def widget():\n    def draw(world=8, gbs=15.75):\n        pass\n")
    found = view_number_violations(facts, "any")
    assert [f.split(": ", 1)[1].split(" =")[0].split("=")[0] for f in found] == \
        ["constant GPU_ALPHA", "constant BYTES", "plot(alpha_s", "local link"]
    plotting = ast.parse("def plot(world=4, figsize=(5, 3), scale=1.0):\n    left = 0.0\n    ticks = [1, 2]\n")
    assert view_number_violations(plotting, "any") == []


# ---------------------------------------------------------------------------------------------------------------
# Each assumed number and rule is typed once


def _numbers_equal_to(target: float, trees: list[tuple[str, ast.Module]]) -> list[str]:
    """Where a literal expression folds to ``target`` (exactly, or to 12 significant digits)."""
    hits = []
    for where, tree in trees:
        for node in _walk(tree):
            if isinstance(node, (ast.Constant, ast.BinOp, ast.UnaryOp)):
                value = _value(node)
                if isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and math.isclose(value, target, rel_tol=1e-12):
                    hits.append(f"{where}:{node.lineno}")
    return sorted(set(hits))


def _homes(hits: list[str]) -> set[str]:
    return {h.rsplit(":", 1)[0] for h in hits}


def test_the_gpu_alpha_is_typed_once():
    code = _learner_code()
    assert _homes(_numbers_equal_to(GPU_ALPHA_S, code)) == {ALPHA_HOME}
    stray = [f"{where}:{line}: {name} = {ast.unparse(value)}" for where, tree in code if where != ALPHA_HOME
             for line, name, value in _bindings(tree)
             if LATENCY_NAME.search(name) and name not in OTHER_ALPHAS and _value(value) is not None]
    assert not stray, f"a latency α typed as a number; import alpha_beta.GPU_ALPHA_S instead: {stray}"


def test_ddps_bucket_size_is_typed_once():
    assert _homes(_numbers_equal_to(DDP_BUCKET_BYTES, _learner_code())) == {BUCKET_HOME}


def test_bytes_per_parameter_live_in_one_table():
    stray = []
    for where, tree in _learner_code():
        if where == BYTES_HOME:
            continue
        for node in _walk(tree):
            if isinstance(node, ast.Call):
                stray += [f"{where}:{node.lineno}: {k.arg}={ast.unparse(k.value)}" for k in node.keywords
                          if k.arg in BYTES_KEYWORDS and _value(k.value) is not None]
                if isinstance(node.func, ast.Name) and node.func.id == "OptimizerBytes":
                    stray.append(f"{where}:{node.lineno}: a row of OPTIMIZERS")
            if isinstance(node, (ast.Tuple, ast.List)) and _value(node) in ((2, 2, 12), (4, 4, 8)):
                stray.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        stray += [f"{where}:{line}: {name}={ast.unparse(v)}" for line, name, v in _bindings(tree)
                  if name in BYTES_KEYWORDS and _value(v) is not None and not _is_neutral(v)]
    assert not stray, f"bytes per parameter typed outside training_state.OPTIMIZERS: {stray}"


@pytest.mark.slow
def test_what_each_zero_stage_shards_is_written_once():
    """The rule is the table ``costmodel.ZERO_SHARDED``: no code compares a stage with a number to decide what it
    shards, except ZeRO's implementation (``parallel/zero.py``, whose bytes ``test_zero`` checks against the table)."""
    stray = [f"{where}:{node.lineno}: {ast.unparse(node)}" for where, tree in _learner_code() if where != ZERO_IMPL
             for node in _walk(tree) if isinstance(node, ast.Compare) and _names(node.left) == ["stage"]
             and any(isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in node.ops)
             and all(_value(c) is not None for c in node.comparators)]
    assert not stray, f"a ZeRO stage compared with a number; use costmodel.ZERO_SHARDED: {stray}"


def test_the_naive_schedule_runs_one_micro_batch_in_one_place():
    hits = [f"{where}:{node.lineno}" for where, tree in _learner_code() for node in _walk(tree)
            if isinstance(node, ast.IfExp) and any(isinstance(c, ast.Constant) and c.value == "naive"
                                                   for c in ast.walk(node.test))]
    assert _homes(hits) == {MICRO_BATCH_HOME} and len(hits) == 1, hits


def test_alpha_is_read_off_a_fitted_line_by_one_function():
    stray = [f"{where}:{node.lineno}: {ast.unparse(node)}" for where, tree in _learner_code() if where != ALPHA_HOME
             for node in _walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
             and "intercept" in ast.unparse(node.left)]
    assert not stray, f"α computed from an intercept by hand; use alpha_beta.ring_alpha_beta: {stray}"


def _is_schedule_call(call: ast.Call) -> bool:
    """A call of ``ring_schedule`` or ``tree_schedule``, by name or as an attribute."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name.endswith(("ring_schedule", "tree_schedule"))


def _simulations(tree: ast.Module) -> list[int]:
    """Lines of loops that run a collective's schedule on numbers: a loop over ``ring_schedule``/``tree_schedule``
    (called there or bound to a name from such a call) whose body stores into a subscript."""
    schedule_names = {n for node in _walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                      and _is_schedule_call(node.value) for t in node.targets for n in _names(t)}
    lines = []
    for node in _walk(tree):
        if isinstance(node, ast.For):
            over = node.iter
            is_schedule = (isinstance(over, ast.Call) and _is_schedule_call(over)) \
                or (isinstance(over, ast.Name) and over.id in schedule_names)
            stores = is_schedule and any(isinstance(t, ast.Subscript) for s in ast.walk(node)
                                         if isinstance(s, (ast.Assign, ast.AugAssign))
                                         for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
            if stores:
                lines.append(node.lineno)
    return lines


def test_who_holds_what_is_simulated_once():
    hits = [f"{where}:{line}" for where, tree in [*_learner_code(), *_tests()] for line in _simulations(tree)]
    assert _homes(hits) == {SIMULATION_HOME}, f"a schedule simulated outside allreduce_steps: {hits}"


def _keys(node: ast.AST) -> list[str] | None:
    """The string keys of a dict literal or a dict(...) call, or the strings of a tuple/list of strings."""
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [k.arg for k in node.keywords if k.arg]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # a sequence of names only (not, say, a table's headers)
        strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return strings if len(strings) == len(node.elts) and set(strings) <= {*MEMORY_PARTS, *OLD_NAMES} else None
    return None


def test_the_parts_of_memory_have_one_name_and_one_colour():
    named, coloured, colour_tables = [], [], []
    for where, tree in _learner_code():
        for node in _walk(tree):
            keys = _keys(node)
            if keys and {"parameters", "gradients"} <= set(keys) and not set(keys) <= {*MEMORY_PARTS, BUFFERS}:
                named.append(f"{where}:{node.lineno}: {sorted(set(keys) - set(MEMORY_PARTS))}")
            if not isinstance(node, (ast.Dict, ast.Tuple, ast.List)):
                continue
            strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if set(strings) & {*MEMORY_PARTS, *OLD_NAMES} and any(re.fullmatch(r"#[0-9a-fA-F]{6}", s) for s in strings):
                coloured.append(f"{where}:{node.lineno}")
        colour_tables += [where for _, name, _ in _bindings(tree) if name == "MEMORY_PART_COLOURS"]
    assert not named, f"a part of memory under another name than training_state.MEMORY_PARTS: {named}"
    assert not coloured, f"a colour given to a part of memory outside views/memory.MEMORY_PART_COLOURS: {coloured}"
    assert colour_tables == [COLOURS_HOME]


def test_the_optimizers_have_one_table_of_names():
    labels = {o.label for o in OPTIMIZERS.values()}
    stray = [f"{where}:{node.lineno}: {node.value!r}" for where, tree in _learner_code() if where != BYTES_HOME
             for node in _walk(tree) if isinstance(node, ast.Constant) and node.value in labels]
    assert not stray, f"an optimizer named outside training_state.OPTIMIZERS: {stray}"


# ---------------------------------------------------------------------------------------------------------------
# The notebooks quote the one GPU α

ALPHA_IN_PROSE = re.compile(r"α\s*(?:=|≈|of|is)\s*(\d+(?:\.\d+)?)\s*µs")


def test_notebooks_quote_the_one_gpu_alpha():
    quoted = []
    for path in paths():
        for cell in read(path).cells:
            if cell.is_markdown:
                quoted += [(path.name, cell.index, m.group(1)) for m in ALPHA_IN_PROSE.finditer(cell.source)]
    wrong = [q for q in quoted if float(q[2]) != pytest.approx(GPU_ALPHA_S * 1e6)]
    assert not wrong, f"prose types an α other than alpha_beta.GPU_ALPHA_S ({GPU_ALPHA_S * 1e6:g} µs): {wrong}"
