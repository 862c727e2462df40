"""The package keeps its shape: layered imports, small modules with docstrings, nothing tracked that git ignores.

The layers, lowest first (imports point down, never up):

    library  <-  checks & measurements  <-  front ends

The library computes; checks and benchmarks prove it right and measure it; views and commands (the
`d2lmp` command, its benchmarks and the torchrun entry point) show it. The analytic models (step time,
memory, alpha-beta) are pure arithmetic: they must import without a process group, so they never import
the runtime.

Every module under d2lmp/ must belong to exactly one layer: a new module fails these tests until it
is placed in LAYERS below. The imports are read with `ast`, nothing is imported, so the tests take
milliseconds and also see imports inside functions.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "d2lmp"

# A name ending in ".*" covers that package and everything below it; any other name is one module.
LAYERS = {
    "library": (
        "d2lmp",  # the package's __init__ only
        "d2lmp.config", "d2lmp.hardware", "d2lmp.gpu_specs", "d2lmp.timing", "d2lmp.roofline",
        "d2lmp.power", "d2lmp.graphics", "d2lmp.bandwidth", "d2lmp.topology", "d2lmp.conv",
        "d2lmp.models", "d2lmp.data", "d2lmp.features", "d2lmp.train", "d2lmp.memory", "d2lmp.memory_records",
        "d2lmp.precision",
        "d2lmp.quantize", "d2lmp.report", "d2lmp.bibliography", "d2lmp.sources.*", "d2lmp.recorded.*",
        "d2lmp.recompute",
        "d2lmp.transformer_accounting", "d2lmp.transformer_stage_memory", "d2lmp.training_state", "d2lmp.scale.*",
        "d2lmp.gpt", "d2lmp.text", "d2lmp.gpt_train", "d2lmp.gpt_accounting",
        "d2lmp.moe",
        "d2lmp.parallel",  # the subpackage's __init__ only
        "d2lmp.parallel.launch", "d2lmp.parallel.collectives", "d2lmp.parallel.alpha_beta",
        "d2lmp.parallel.ring_messages", "d2lmp.parallel.nccl_published",
        "d2lmp.parallel.data_parallel", "d2lmp.parallel.accumulation", "d2lmp.parallel.pipeline",
        "d2lmp.parallel.pipeline_memory",
        "d2lmp.parallel.pipeline_balance", "d2lmp.parallel.pipeline_schedule", "d2lmp.parallel.p2p_log",
        "d2lmp.parallel.comm_log", "d2lmp.parallel.tensor_parallel",
        "d2lmp.parallel.alexnet_towers", "d2lmp.parallel.timeline", "d2lmp.parallel.dp_model",
        "d2lmp.parallel.costmodel", "d2lmp.parallel.zero", "d2lmp.parallel.hybrid",
        "d2lmp.parallel.context_layout", "d2lmp.parallel.attention_blocks", "d2lmp.parallel.context_parallel",
        "d2lmp.parallel.model_size", "d2lmp.parallel.allreduce_steps",
        "d2lmp.parallel.transformer_tp", "d2lmp.parallel.gpt_tp", "d2lmp.parallel.tp_accounting",
        "d2lmp.parallel.grid3d",
        "d2lmp.parallel.all_to_all", "d2lmp.parallel.expert_parallel",
        "d2lmp.parallel.lr_scaling", "d2lmp.parallel.sync_batchnorm", "d2lmp.parallel.dp_training",
        "d2lmp.parallel.dp_batchnorm", "d2lmp.parallel.trace_events", "d2lmp.parallel.profiler_trace",
        "d2lmp.checkpoint_interval", "d2lmp.parallel.stacks", "d2lmp.parallel.checkpoint",
        "d2lmp.parallel.resilient", "d2lmp.parallel.faults",
    ),
    # Exercises check a student's answer against the library, as the checks check the library.
    "checks & measurements": ("d2lmp.checks.*", "d2lmp.bench.*", "d2lmp.exercises.*"),
    # Figures and widgets; the `d2lmp` command, each `d2lmp bench` and the torchrun entry point.
    "front ends": ("d2lmp.views.*", "d2lmp.commands.*", "d2lmp.__main__"),
}
# A module may import modules of its own layer and of the layers before it in this order.
ORDER = list(LAYERS)

# Pure arithmetic that must work without a process group.
ANALYTIC = ("d2lmp.parallel.alpha_beta", "d2lmp.parallel.dp_model", "d2lmp.parallel.costmodel",
            "d2lmp.parallel.model_size", "d2lmp.training_state", "d2lmp.parallel.nccl_published",
            "d2lmp.transformer_accounting", "d2lmp.transformer_stage_memory", "d2lmp.scale",
            "d2lmp.scale.hardware", "d2lmp.scale.layout", "d2lmp.scale.cpu",
            "d2lmp.scale.memory", "d2lmp.scale.steptime", "d2lmp.scale.efficiency", "d2lmp.scale.predict",
            "d2lmp.scale.published", "d2lmp.scale.calibration", "d2lmp.scale.planner", "d2lmp.scale.presets",
            "d2lmp.scale.report", "d2lmp.scale.comm_roofline", "d2lmp.checkpoint_interval")
RUNTIME = ("d2lmp.parallel.launch", "d2lmp.parallel.collectives", "torch.distributed.*")

MAX_LINES = 400
# path (relative to the repository) -> why it may be longer. Keep it empty: split a long module by job.
LONG_MODULE_ALLOWED: dict[str, str] = {}


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return module == base or module.startswith(base + ".")
    return module == pattern


def _layer_of(module: str) -> str | None:
    found = [layer for layer, patterns in LAYERS.items() if any(_matches(module, p) for p in patterns)]
    return found[0] if len(found) == 1 else None


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_files(package: Path = PACKAGE) -> dict[str, Path]:
    return {_module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def imports_of(path: Path, known: set[str], root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every module that `path` imports, anywhere in the file.

    `from d2lmp import timing` counts as importing d2lmp.timing (a known module), relative imports are
    resolved against the file's package, and a use of `torch.distributed` as an attribute or through
    `importlib.import_module("...")` counts as an import of it.
    """
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known or not base.startswith("d2lmp"):
                    found.append((node.lineno, full))
                else:
                    found.append((node.lineno, base))
        elif (isinstance(node, ast.Attribute) and node.attr == "distributed"
              and isinstance(node.value, ast.Name) and node.value.id == "torch"):
            found.append((node.lineno, "torch.distributed"))
        elif isinstance(node, ast.Call) and _called_name(node) == "import_module" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return sorted(set(found))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def layering_errors(files: dict[str, Path]) -> list[str]:
    """One line per import that points up the layers."""
    known = set(files)
    errors = []
    for module, path in files.items():
        layer = _layer_of(module)
        if layer is None:
            continue  # reported by test_every_module_belongs_to_one_layer
        for line, imported in imports_of(path, known):
            if imported not in known:
                continue  # not ours (or not there: the import itself fails elsewhere)
            target = _layer_of(imported)
            if target is None:
                errors.append(f"{_rel(path)}:{line}: {module} ({layer}) imports {imported}, which belongs to no layer")
            elif ORDER.index(target) > ORDER.index(layer):
                errors.append(f"{_rel(path)}:{line}: {module} ({layer}) imports {imported} ({target})")
    return errors


def analytic_errors(files: dict[str, Path]) -> list[str]:
    """One line per way an analytic model reaches the runtime, directly or through other d2lmp modules."""
    known = set(files)
    errors = []
    for start in ANALYTIC:
        if start not in files:
            continue
        chains, seen = [[start]], {start}
        while chains:
            chain = chains.pop()
            path = files[chain[-1]]
            for line, imported in imports_of(path, known):
                if any(_matches(imported, r) for r in RUNTIME):
                    via = " -> ".join(chain[1:] + [imported]) if len(chain) > 1 else imported
                    errors.append(f"{_rel(path)}:{line}: analytic model {start} imports the runtime: {via}")
                elif imported in files and imported not in seen and imported not in ANALYTIC:  # those are checked
                    seen.add(imported)
                    chains.append(chain + [imported])
    return errors


def unplaced_modules(files: dict[str, Path]) -> list[str]:
    return [f"{_rel(path)}: {module} belongs to no layer (or to several): add it to LAYERS"
            for module, path in files.items() if _layer_of(module) is None]


def long_modules(files: dict[str, Path]) -> list[str]:
    errors = []
    for path in files.values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES and _rel(path) not in LONG_MODULE_ALLOWED:
            errors.append(f"{_rel(path)}: {lines} lines (at most {MAX_LINES}): split it by job")
    return errors


def undocumented_modules(files: dict[str, Path]) -> list[str]:
    return [f"{_rel(path)}: no module docstring (one paragraph: its one job)"
            for path in files.values() if not (ast.get_docstring(ast.parse(path.read_text())) or "").strip()]


def _report(errors: list[str]) -> str:
    return f"{len(errors)} problem(s):\n" + "\n".join(errors)


def test_the_package_is_where_we_look():
    files = _package_files()
    assert "d2lmp" in files and "d2lmp.commands.main" in files and len(files) > 20


def test_every_module_belongs_to_one_layer():
    errors = unplaced_modules(_package_files())
    assert not errors, _report(errors)


def test_every_named_module_exists():
    """An entry of LAYERS or ANALYTIC that names one module names a module that is there: the table stays true."""
    files = _package_files()
    named = [p for patterns in LAYERS.values() for p in patterns if not p.endswith(".*")] + list(ANALYTIC)
    missing = sorted({p for p in named if p not in files})
    assert not missing, f"named in tests/test_architecture.py but not in d2lmp/: {missing}"


def test_imports_point_down_the_layers():
    errors = layering_errors(_package_files())
    assert not errors, _report(errors)


def test_analytic_models_do_not_import_the_runtime():
    errors = analytic_errors(_package_files())
    assert not errors, _report(errors)


def test_modules_are_short():
    errors = long_modules(_package_files())
    assert not errors, _report(errors)


def test_allowed_long_modules_are_still_long():
    """An allow-list entry goes when its module is split."""
    stale = [p for p in LONG_MODULE_ALLOWED
             if not (ROOT / p).exists() or len((ROOT / p).read_text().splitlines()) <= MAX_LINES]
    assert not stale, f"remove from LONG_MODULE_ALLOWED: {stale}"


def test_every_module_has_a_docstring():
    errors = undocumented_modules(_package_files())
    assert not errors, _report(errors)


def test_no_tracked_file_is_ignored():
    """A tracked file that .gitignore matches is lost by the next clean copy (as `dist/` once was)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert not out, f"tracked but ignored by .gitignore: {out}"


def test_import_reader_sees_every_form(tmp_path):
    """The reader itself: absolute, relative, in-function, aliased, dynamic and attribute imports are all found."""
    pkg = tmp_path / "d2lmp"
    (pkg / "parallel").mkdir(parents=True)
    for name in ("__init__.py", "plots.py", "parallel/__init__.py", "parallel/launch.py"):
        (pkg / name).write_text('"""x"""\n')
    mod = pkg / "parallel" / "costmodel.py"
    mod.write_text(
        '"""x"""\n'
        "import torch\n"                                       # 2
        "from . import launch\n"                               # 3
        "from ..plots import figure\n"                         # 4
        "def f():\n"
        "    import d2lmp.plots as p\n"                        # 6
        "    from d2lmp import plots\n"                        # 7
        "    importlib.import_module('d2lmp.parallel.launch')\n"  # 8
        "    return torch.distributed.get_rank()\n"            # 9
    )
    found = imports_of(mod, set(_package_files(pkg)), root=tmp_path)
    assert found == [(2, "torch"), (3, "d2lmp.parallel.launch"), (4, "d2lmp.plots"), (6, "d2lmp.plots"),
                     (7, "d2lmp.plots"), (8, "d2lmp.parallel.launch"), (9, "torch.distributed")], found


def test_readme_names_every_module():
    """The README's module table is the map for a newcomer: every module of the package has its line."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set()
    for cell in re.findall(r"^\| (`[^|]+`) \|", readme, flags=re.M):
        names = re.findall(r"`([\w.]+)`", cell)
        prefix = names[0].rsplit(".", 1)[0] if names else ""
        for name in names:  # "`d2lmp.commands.main`, `demo`" names two modules
            listed.add(name if name.startswith("d2lmp") else f"{prefix}.{name}")
    files = _package_files()
    # Leaf modules, packages whose __init__ holds code, and the exercises as one entry (one module per notebook).
    modules = {m for m, path in files.items() if not m.endswith("__main__") and not m.split(".")[-1].startswith("_")
               and not m.startswith("d2lmp.exercises.")
               and (path.name != "__init__.py" or len(path.read_text().splitlines()) > 10)} | {"d2lmp.exercises"}
    missing = sorted(modules - listed)
    assert not missing, f"README.md's module table lacks: {missing}"


def test_readme_notebook_table_matches_the_notebooks_imports():
    """The README's notebook -> modules table is what the notebooks import (regenerate: tools/notebook_modules.py)."""
    from tools import notebook_modules

    assert notebook_modules.table() in (ROOT / "README.md").read_text(encoding="utf-8"), \
        "README.md's notebook -> modules table is out of date: run python -m tools.notebook_modules"


def test_public_modules_declare_what_they_export():
    """Every public module names its public API in ``__all__``, and every name there exists."""
    import importlib

    problems = []
    for name, path in _package_files().items():
        if path.name in ("__init__.py", "__main__.py") or path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = next((node for node in tree.body if isinstance(node, ast.Assign)
                         and any(getattr(t, "id", "") == "__all__" for t in node.targets)), None)
        if exported is None:
            problems.append(f"{name}: no __all__")
            continue
        module = importlib.import_module(name)  # importing has no side effects (checked by other tests)
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        if missing:
            problems.append(f"{name}: __all__ names {missing}, which the module does not define")
    assert not problems, "\n".join(problems)
