"""One traffic log, and one home for a ring's bytes per rank (issue 26).

Every count of what a rank sends goes through ``p2p_log.MessageLog``: no other code replaces torch.distributed's
functions to watch them, and no module keeps a registry of active logs (the active logs are the wrappers on
``dist``). The bytes a ring collective puts on the wire come from ``alpha_beta.BUS_FACTORS`` alone: no
expression ``x / n`` with ``n - 1`` in ``x`` (``2 * (n - 1) / n``, ``(world - 1) * size // world``) is typed
anywhere else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from d2lmp.parallel.p2p_log import COLLECTIVES, OPS

ROOT = Path(__file__).resolve().parents[1]
WRAPPED = {*OPS, *COLLECTIVES, "batch_isend_irecv"}
# The code that may replace a function of torch.distributed, and why.
REPLACES_DIST = {
    "d2lmp/parallel/p2p_log.py": "the traffic log itself",
    "d2lmp/bench/scale_bridge.py": "skips all_reduce to time the compute alone; it counts nothing",
    "tests/moe_workers.py": "makes dist.all_to_all fail to test the fallback of torch_all_to_all_equal; counts nothing",
}
BUS_FACTOR_HOME = "d2lmp/model/alpha_beta.py"
# Exercise modules where the student's own function, and the typical wrong answers it is checked against, write the
# ring's factor out because the question asks the student to derive it; every other exercise imports BUS_FACTORS.
DERIVED_BY_THE_STUDENT = {
    "d2lmp/exercises/training_at_scale.py": "tp_intensity and its wrong answers: the student writes 2(t-1)/t",
    "d2lmp/exercises/nccl_collectives.py": "the tree-ring crossover the student derives from the α-β model",
}


def _modules(*folders: str) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path))


def _is_dist(node: ast.expr) -> bool:
    return ast.unparse(node) in ("dist", "torch.distributed", "torch.distributed.distributed_c10d")


def replaced_dist_functions(tree: ast.AST) -> list[int]:
    """Lines that assign a function of torch.distributed, or call ``setattr`` on the module."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and _is_dist(t.value) and t.attr in WRAPPED:
                        lines.append(node.lineno)
        elif isinstance(node, ast.Call) and node.args and _is_dist(node.args[0]):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name == "setattr":
                lines.append(node.lineno)
    return sorted(set(lines))


def log_registries(tree: ast.Module) -> list[int]:
    """Lines of module-level containers of logs: a name with LOGS in it, or an annotation naming a ...Log."""
    lines = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = " ".join(ast.unparse(t) for t in targets)
            annotation = ast.unparse(node.annotation) if isinstance(node, ast.AnnAssign) else ""
            container = isinstance(node.value, ast.List | ast.Dict | ast.Set) or (
                isinstance(node.value, ast.Call) and ast.unparse(node.value.func).split(".")[-1]
                in ("list", "dict", "set", "deque", "ContextVar", "WeakSet"))
            if container and ("LOGS" in names.upper() or "Log" in annotation):
                lines.append(node.lineno)
    return lines


def ring_fractions(tree: ast.AST) -> list[int]:
    """Lines of ``x / n`` or ``x // n`` where ``x`` contains ``n - 1``: a ring's bus factor typed out."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv):
            n = ast.dump(node.right)
            if any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Sub) and ast.dump(s.left) == n
                   and isinstance(s.right, ast.Constant) and s.right.value == 1 for s in ast.walk(node.left)):
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("source, finds", [
    ("dist.isend = counted", replaced_dist_functions),
    ("dist.isend, dist.send = a, b", replaced_dist_functions),
    ("setattr(dist, name, wrapper)", replaced_dist_functions),
    ("monkeypatch.setattr(torch.distributed, 'send', f)", replaced_dist_functions),
    ("_LOGS: list[RingLog] = []", log_registries),
    ("active: list[CommLog] = []", log_registries),
    ("_ACTIVE_LOGS = ContextVar('logs')", log_registries),
    ("wire = 2 * (n - 1) / n * size", ring_fractions),
    ("wire = (self.world - 1) * flat.numel() // self.world", ring_fractions),
    ("wire = 2 * (ranks - 1) * size // ranks", ring_fractions),
])
def test_the_guards_see_what_they_guard_against(source, finds):
    assert finds(ast.parse(source)) == [1]


@pytest.mark.parametrize("source, finds", [
    ("x = dist.isend(t, 1)", replaced_dist_functions),
    ("_WATCHERS: list[list[int]] = []", log_registries),
    ("bubble = stage * (n - 1) / m", ring_fractions),
    ("alpha = intercept / (2 * (world - 1))", ring_fractions),
])
def test_the_guards_pass_what_is_not_a_copy(source, finds):
    assert finds(ast.parse(source)) == []


def test_only_the_traffic_log_replaces_torch_distributed_functions():
    found = {name: lines for name, tree in _modules("d2lmp", "tests", "tools")
             if (lines := replaced_dist_functions(tree)) and name not in REPLACES_DIST}
    assert found == {}, "count a rank's traffic with d2lmp.parallel.p2p_log.MessageLog, not a new wrapper"


def test_no_module_keeps_a_registry_of_logs():
    found = {name: lines for name, tree in _modules("d2lmp", "tests", "tools") if (lines := log_registries(tree))}
    assert found == {}, "MessageLog's active logs are its wrappers on torch.distributed (p2p_log.active_logs)"


def test_a_rings_bytes_per_rank_are_typed_only_in_alpha_beta():
    found = {name: lines for name, tree in _modules("d2lmp")
             if (lines := ring_fractions(tree)) and name != BUS_FACTOR_HOME and name not in DERIVED_BY_THE_STUDENT}
    assert found == {}, "use alpha_beta.BUS_FACTORS or alpha_beta.ring_bytes_per_rank"
    home = dict(_modules("d2lmp/model"))[BUS_FACTOR_HOME]
    assert ring_fractions(home), "the bus factors' home is where the guard looks for them"
