"""Every fact has one home: each assumed number and model rule is written once, in the library, and views only draw.

Two guards, both reading the code with ``ast`` (nothing is imported or run):

* **Views name no numbers but plotting parameters.** In ``d2lmp/views/``, a numeric literal may not be *named*
  (bound at module or class level, given as a parameter's default, or bound to a local from literals alone)
  unless the name is a plotting parameter: figure layout, how many things to draw, where to look from
  (``PLOTTING_PARAMETERS``), or one of the few reviewed exceptions listed here with their reason. The values
  0 and 1 (a start, an identity) are never a fact. Literals used in place, as a drawing call's argument (a
  position, a margin, a unit conversion), are layout and are not checked. Widget callbacks (functions nested in
  a view) are exempt: their defaults are the starting positions of the widget's controls.
* **Each assumed number and rule is typed once.** Over the package and every notebook's code cells: the GPU α
  (and any latency α written as a literal), DDP's bucket size, the bytes per parameter of each optimizer, what
  each ZeRO stage shards, the naive schedule's one micro-batch, α read off a fitted intercept, the ring/tree
  "who holds what" simulation (tests included), the names of the parts of memory, their colours and the
  optimizers' names each appear in their one home only. The notebooks' prose quotes the one GPU α.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from d2lmp.model.alpha_beta import GPU_ALPHA_S
from d2lmp.model.dp_model import DDP_BUCKET_BYTES
from d2lmp.model.training_state import BUFFERS, MEMORY_PARTS, OPTIMIZERS

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ROOT / "d2lmp" / "views"

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


def _parse_cell(source: str) -> ast.Module:
    """A notebook code cell as Python: IPython's %magics and !commands become ``pass`` at their indentation."""
    lines = [line[:len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
             for line in source.splitlines()]
    return ast.parse("\n".join(lines))


def _package() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / "d2lmp").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _notebooks() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                yield f"{path.relative_to(ROOT).as_posix()} cell {i}", _parse_cell("".join(cell["source"]))


def _tests() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / "tests").glob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


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
    for node in ast.walk(tree):
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
    for f in ast.walk(tree):  # locals bound to literals alone
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
        for node in ast.walk(tree):
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
        for node in ast.walk(tree):
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


def test_what_each_zero_stage_shards_is_written_once():
    """The rule is the table ``costmodel.ZERO_SHARDED``: no code compares a stage with a number to decide what it
    shards, except ZeRO's implementation (``parallel/zero.py``, whose bytes ``test_zero`` checks against the table)."""
    stray = [f"{where}:{node.lineno}: {ast.unparse(node)}" for where, tree in _learner_code() if where != ZERO_IMPL
             for node in ast.walk(tree) if isinstance(node, ast.Compare) and _names(node.left) == ["stage"]
             and any(isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in node.ops)
             and all(_value(c) is not None for c in node.comparators)]
    assert not stray, f"a ZeRO stage compared with a number; use costmodel.ZERO_SHARDED: {stray}"


def test_the_naive_schedule_runs_one_micro_batch_in_one_place():
    hits = [f"{where}:{node.lineno}" for where, tree in _learner_code() for node in ast.walk(tree)
            if isinstance(node, ast.IfExp) and any(isinstance(c, ast.Constant) and c.value == "naive"
                                                   for c in ast.walk(node.test))]
    assert _homes(hits) == {MICRO_BATCH_HOME} and len(hits) == 1, hits


def test_alpha_is_read_off_a_fitted_line_by_one_function():
    stray = [f"{where}:{node.lineno}: {ast.unparse(node)}" for where, tree in _learner_code() if where != ALPHA_HOME
             for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
             and "intercept" in ast.unparse(node.left)]
    assert not stray, f"α computed from an intercept by hand; use alpha_beta.ring_alpha_beta: {stray}"


def _simulations(tree: ast.Module) -> list[int]:
    """Lines of loops that run a collective's schedule on numbers: a loop over ``ring_schedule``/``tree_schedule``
    (called there or bound to a name from such a call) whose body stores into a subscript."""
    schedule_names = {n for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                      and ast.unparse(node.value.func).endswith(("ring_schedule", "tree_schedule"))
                      for t in node.targets for n in _names(t)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            over = node.iter
            is_schedule = (isinstance(over, ast.Call) and ast.unparse(over.func).endswith(("ring_schedule",
                                                                                          "tree_schedule"))) \
                or (isinstance(over, ast.Name) and over.id in schedule_names)
            stores = any(isinstance(t, ast.Subscript) for s in ast.walk(node)
                         if isinstance(s, (ast.Assign, ast.AugAssign))
                         for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
            if is_schedule and stores:
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
        for node in ast.walk(tree):
            keys = _keys(node)
            if keys and {"parameters", "gradients"} <= set(keys) and not set(keys) <= {*MEMORY_PARTS, BUFFERS}:
                named.append(f"{where}:{node.lineno}: {sorted(set(keys) - set(MEMORY_PARTS))}")
            strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if isinstance(node, (ast.Dict, ast.Tuple, ast.List)) and set(strings) & {*MEMORY_PARTS, *OLD_NAMES} \
                    and any(re.fullmatch(r"#[0-9a-fA-F]{6}", s) for s in strings):
                coloured.append(f"{where}:{node.lineno}")
        colour_tables += [where for _, name, _ in _bindings(tree) if name == "MEMORY_PART_COLOURS"]
    assert not named, f"a part of memory under another name than training_state.MEMORY_PARTS: {named}"
    assert not coloured, f"a colour given to a part of memory outside views/memory.MEMORY_PART_COLOURS: {coloured}"
    assert colour_tables == [COLOURS_HOME]


def test_the_optimizers_have_one_table_of_names():
    labels = {o.label for o in OPTIMIZERS.values()}
    stray = [f"{where}:{node.lineno}: {node.value!r}" for where, tree in _learner_code() if where != BYTES_HOME
             for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in labels]
    assert not stray, f"an optimizer named outside training_state.OPTIMIZERS: {stray}"


# ---------------------------------------------------------------------------------------------------------------
# The notebooks quote the one GPU α

ALPHA_IN_PROSE = re.compile(r"α\s*(?:=|≈|of|is)\s*(\d+(?:\.\d+)?)\s*µs")


def test_notebooks_quote_the_one_gpu_alpha():
    quoted = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "markdown":
                quoted += [(path.name, i, m.group(1)) for m in ALPHA_IN_PROSE.finditer("".join(cell["source"]))]
    wrong = [q for q in quoted if float(q[2]) != pytest.approx(GPU_ALPHA_S * 1e6)]
    assert not wrong, f"prose types an α other than alpha_beta.GPU_ALPHA_S ({GPU_ALPHA_S * 1e6:g} µs): {wrong}"
