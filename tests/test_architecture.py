"""The package keeps its shape: the folders carry the layers and the kinds of code, small modules with
docstrings, nothing tracked that git ignores.

The layers, lowest first (imports point down, never up), and the folders that hold them:

    library                 d2lmp/model/, d2lmp/parallel/, the modules at d2lmp/'s root, sources/, recorded/
    checks & benchmarks     d2lmp/checks/, d2lmp/bench/, d2lmp/exercises/
    views & commands        d2lmp/views/, d2lmp/commands/

Inside the library, three kinds of code, told apart by their folder:

    model           d2lmp/model/: every formula, assumed number and vocabulary: standard library only (no torch,
                    no numpy, no runtime), beside the torch-free sourced tables it reads (SOURCED_TABLES)
    parallel        d2lmp/parallel/: the rank runtime, code that runs on ranks (launch, collectives, strategies)
    single-device   d2lmp/*.py, sources/, recorded/: timing, models, memory, precision, ... and their data

README.md and CONTRIBUTING.md name the layers and kinds the same way. A new module is placed by the folder it is
created in; nothing here lists modules one by one but the few torch-free tables the model may read. The imports
are read with `ast`, nothing is imported, so the tests take milliseconds and also see imports inside functions.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "d2lmp"

# Layer -> the folders (subpackages) it holds; a module in no listed folder is library.
LAYERS = {
    "library": (),
    "checks & benchmarks": ("d2lmp.checks", "d2lmp.bench", "d2lmp.exercises"),
    "views & commands": ("d2lmp.views", "d2lmp.commands", "d2lmp.__main__"),
}
# A module may import modules of its own layer and of the layers before it in this order.
ORDER = list(LAYERS)

MODEL = "d2lmp.model"
RUNTIME = "d2lmp.parallel"
# The torch-free sourced tables outside model/ that the model reads (GPU datasheets, link rates, the bibliography).
SOURCED_TABLES = ("d2lmp.gpu_specs", "d2lmp.topology", "d2lmp.bibliography", "d2lmp.sources")
# The cluster model's public face (``from d2lmp.scale import ...``) re-exports model/cluster and nothing else.
FACADE = "d2lmp.scale"

MAX_LINES = 400
# path (relative to the repository) -> why it may be longer. Keep it empty: split a long module by job.
LONG_MODULE_ALLOWED: dict[str, str] = {}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _layer_of(module: str) -> str:
    return next((layer for layer, folders in LAYERS.items() if any(_under(module, f) for f in folders)), "library")


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


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names or module == "__future__"


def torch_free_errors(files: dict[str, Path]) -> list[str]:
    """One line per import by which the model package (or a table it reads) leaves the standard library,
    reaches the rank runtime, or reads a d2lmp module outside model/ and the sourced tables."""
    known = set(files)
    allowed = (MODEL,) + SOURCED_TABLES
    errors = []
    for module, path in files.items():
        if not any(_under(module, a) for a in allowed):
            continue
        for line, imported in imports_of(path, known):
            if _stdlib(imported) or any(_under(imported, a) for a in allowed):
                continue
            errors.append(f"{_rel(path)}:{line}: {module} is torch-free, standard library only, "
                          f"but imports {imported}")
    return errors


def facade_errors(files: dict[str, Path]) -> list[str]:
    """The facade ``d2lmp.scale`` re-exports the cluster model and imports nothing else."""
    return [f"{_rel(files[FACADE])}:{line}: {FACADE} imports {imported}; it only re-exports {MODEL}.cluster"
            for line, imported in imports_of(files[FACADE], set(files))
            if not _stdlib(imported) and not _under(imported, f"{MODEL}.cluster")]


def runtime_errors(files: dict[str, Path]) -> list[str]:
    """The single-device library (the root's modules) never imports the rank runtime: d2lmp/parallel/ builds on
    it, not the other way round."""
    known = set(files)
    errors = []
    for module, path in files.items():
        if _layer_of(module) != "library" or any(_under(module, p) for p in (MODEL, RUNTIME)):
            continue
        errors += [f"{_rel(path)}:{line}: {module} (single-device library) imports the runtime {imported}"
                   for line, imported in imports_of(path, known) if _under(imported, RUNTIME)]
    return errors


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


def test_every_named_folder_exists():
    """The folders and tables named above are there: the rules stay true when the tree moves."""
    files = _package_files()
    named = [f for folders in LAYERS.values() for f in folders] + [MODEL, RUNTIME, FACADE, *SOURCED_TABLES]
    missing = sorted(n for n in named if n not in files)
    assert not missing, f"named in tests/test_architecture.py but not in d2lmp/: {missing}"


def test_imports_point_down_the_layers():
    errors = layering_errors(_package_files())
    assert not errors, _report(errors)


def test_the_model_package_is_standard_library_only():
    errors = torch_free_errors(_package_files())
    assert not errors, _report(errors)


def test_the_scale_facade_only_reexports_the_cluster_model():
    errors = facade_errors(_package_files())
    assert not errors, _report(errors)


def test_the_single_device_library_does_not_import_the_runtime():
    errors = runtime_errors(_package_files())
    assert not errors, _report(errors)


def test_the_model_package_imports_without_torch_or_numpy(tmp_path):
    """Import every model module in a fresh interpreter where torch and numpy cannot be imported."""
    block = tmp_path / "sitecustomize.py"
    block.write_text("import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
                     "        if name.split('.')[0] in ('torch', 'numpy', 'matplotlib'):\n"
                     "            raise ImportError(f'{name} is blocked: the model package is standard library only')\n"
                     "sys.meta_path.insert(0, _Block())\n")
    modules = sorted(m for m in _package_files() if _under(m, MODEL) or m == FACADE)
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    import os
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


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


def test_readme_module_table_is_generated_from_the_tree():
    """The README's module table is the map for a newcomer, generated from the docstrings: every module of the
    package has its row and every row names a module that exists (regenerate: python -m tools.module_table)."""
    from tools import module_table

    readme = module_table.readme_table((ROOT / "README.md").read_text(encoding="utf-8"))
    assert readme, f"README.md lacks the {module_table.START_TAG} ... {module_table.END} region"
    assert readme == module_table.table(), \
        "README.md's module table is out of date: run python -m tools.module_table"


def test_module_table_accounts_for_every_module_and_only_those():
    """The generator itself: each module of d2lmp is a row (or inside the one-row exercises), no row is invented."""
    from tools import module_table

    modules, listed = set(_package_files()), module_table.listed_modules()
    assert not modules - listed, f"modules without a row: {sorted(modules - listed)}"
    assert not listed - modules, f"rows without a module: {sorted(listed - modules)}"


def test_each_modules_first_sentence_is_its_one_job():
    """A module's table row is its docstring's first sentence: short enough to read as one job."""
    from tools import module_table

    long = [f"{row.module}: {len(row.job)} characters" for row in module_table.rows()
            if len(row.job) > module_table.MAX_JOB]
    assert not long, f"first sentence over {module_table.MAX_JOB} characters; say the one job first: {long}"


def test_module_table_first_sentence_reader():
    """The sentence reader stops at a sentence's end, not at an abbreviation, an ellipsis or a version number."""
    from tools.module_table import first_sentence

    assert first_sentence("d2lmp.x: the table (GTX 580 ... H200), e.g. ``a``. More here.", "d2lmp.x") == \
        "the table (GTX 580 ... H200), e.g. ``a``"
    assert first_sentence("Goyal et al. 2017, torch 2.13. Then `b`.\n\nOther.") == "Goyal et al. 2017, torch 2.13"
    assert first_sentence("One line\nwrapped.") == "One line wrapped"


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
