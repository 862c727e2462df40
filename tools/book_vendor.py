"""What the web book's pages load, copied into the site at build time: nothing is fetched when a page is read.

``vendor(static)`` copies MathJax (math) and Pyodide (Python in the page) out of their npm packages, packed
once into build/npm-cache by ``npm pack`` (the only network access of a build, to the npm registry; later
builds reuse the tarballs). ``model_zip(path)`` writes the model package (``d2lmp.model`` and the torch-free
modules it imports) and book/calculators.py into the zip the calculators unpack in Pyodide.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tools.notebooks import ROOT

CACHE = ROOT / "build" / "npm-cache"
CALCULATORS = ROOT / "book" / "calculators.py"
# package: (version, {file in the tarball's package/ folder: where it goes under _static/})
PACKAGES = {
    "pyodide": ("314.0.8", {f: f"pyodide/{f}" for f in
                            ("pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                             "pyodide-lock.json")}),
    "mathjax": ("3.2.2", {"es5/tex-chtml-full.js": "mathjax/tex-chtml-full.js",
                          "es5/output/chtml/fonts/woff-v2/": "mathjax/output/chtml/fonts/woff-v2/"}),
}


def npm_available() -> bool:
    return shutil.which("npm") is not None


def tarball(name: str, version: str, cache: Path = CACHE) -> Path:
    """The npm tarball of ``name@version`` in ``cache``, packed from the registry when missing."""
    path = cache / f"{name}-{version}.tgz"
    if not path.exists():
        if not npm_available():
            raise SystemExit("npm is needed once to fetch the book's MathJax and Pyodide (apt-get install npm)")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", f"{name}@{version}", "--pack-destination", str(cache), "--silent"],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def vendor(static: Path, cache: Path = CACHE) -> list[Path]:
    """Copy each package's files into ``static``; return the files written."""
    written = []
    for name, (version, files) in PACKAGES.items():
        with tarfile.open(tarball(name, version, cache)) as tar:
            for member in tar.getmembers():
                inner = member.name.removeprefix("package/")
                for src, dest in files.items():
                    if member.isfile() and (inner == src or (src.endswith("/") and inner.startswith(src))):
                        target = static / (dest + inner[len(src):] if src.endswith("/") else dest)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        extracted = tar.extractfile(member)
                        assert extracted is not None
                        target.write_bytes(extracted.read())
                        written.append(target)
    return written


def _imports(path: Path) -> set[str]:
    """Modules ``path`` imports anywhere (``from a import b`` gives a and a.b)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


# Packages the calculators need whole: the published runs' tables, imported by name (``runs.SOURCES``) and read
# from data files beside them (``ultrascale_sweep.csv``); the planner's tie margin is fitted to them.
WHOLE_PACKAGES = ("d2lmp/model/cluster/runs",)
DATA_SUFFIXES = (".csv",)


def model_files(start: Path = CALCULATORS) -> set[Path]:
    """``start`` and every d2lmp module it needs, with their packages' __init__ files (and all of
    ``WHOLE_PACKAGES``, data files too); refuses a module that imports something beyond the standard library
    (torch, numpy) at its top level."""
    todo, seen = [start], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.name == "__init__.py" and path.parent.relative_to(ROOT).as_posix() in WHOLE_PACKAGES:
            todo += sorted(path.parent.glob("*.py"))
            seen |= {f for f in path.parent.iterdir() if f.suffix in DATA_SUFFIXES}
        top = {a.name.split(".")[0] for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, (ast.Import, ast.ImportFrom)) for a in
               ([ast.alias(node.module or "")] if isinstance(node, ast.ImportFrom) else node.names)}
        foreign = top - set(sys.stdlib_module_names) - {"d2lmp", ""}
        if foreign:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            raise ValueError(f"{shown} imports {sorted(foreign)}: the page runs on the standard library alone")
        for name in sorted(n for n in _imports(path) if n.split(".")[0] == "d2lmp"):
            parts = name.split(".")
            for k in range(1, len(parts) + 1):
                found = _module_file(".".join(parts[:k]))
                if found is not None:
                    todo.append(found)
    return seen


def model_zip(path: Path) -> list[str]:
    """Write the zip the calculators unpack; return its member names."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for file in sorted(model_files()):
            name = file.name if file == CALCULATORS else file.relative_to(ROOT).as_posix()
            z.write(file, name)
            names.append(name)
    return names
