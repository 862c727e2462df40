"""The install files agree with each other; conda is not run (it is not available here)."""

import re

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}  # PyPI name → conda-forge name where they differ


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _conda_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    plain = [d for d in deps if isinstance(d, str)]
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    return env, plain, pip_sections


def test_environment_yml_parses_and_lists_pip():
    env, plain, pip_sections = _conda_requirements()
    assert env["name"] == "d2lmp"
    assert "pip" in plain
    assert pip_sections and "-e ." in pip_sections[0]


def test_environment_yml_matches_pyproject():
    project = _pyproject()["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in ("lab", "test", "book"):
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    _, plain, _ = _conda_requirements()
    conda = {}
    for entry in plain:
        name, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", entry).groups()
        conda[name] = spec.replace(" ", "")
    for req in wanted:
        name = CONDA_NAMES.get(req.name, req.name)
        assert name in conda, f"{req.name} is in pyproject.toml but not in environment.yml"
        assert conda[name] == str(req.specifier) or set(conda[name].split(",")) == set(str(req.specifier).split(",")), \
            f"{name}: environment.yml says {conda[name]!r}, pyproject.toml says {req.specifier}"
    expected = {CONDA_NAMES.get(r.name, r.name) for r in wanted} | {"python", "pip"}
    assert set(conda) == expected, f"extra entries in environment.yml: {set(conda) - expected}"


def test_torch_range_admits_ci_and_colab_builds():
    torch_req = next(Requirement(r) for r in _pyproject()["project"]["dependencies"] if r.startswith("torch"))
    pinned = (ROOT / "requirements-ci.txt").read_text()
    assert "torch==2.13.0" in pinned
    for version in ["2.13.0", "2.9.0", "2.10.0", "2.14.1"]:  # CI's build and recent Colab releases
        assert torch_req.specifier.contains(Version(version)), version
    # The floor is the oldest torch with every API d2lmp calls: 2.7 lacks FSDPModule.set_gradient_divide_factor.
    assert not torch_req.specifier.contains(Version("2.7.1"))
    assert torch_req.specifier.contains(Version("2.8.0"))
    stated = re.findall(r"`torch([<>~][^`]*)`", (ROOT / "README.md").read_text())  # a range, not the CI pin
    assert stated and all(Requirement(f"torch{s}").specifier == torch_req.specifier for s in stated), \
        f"README states the range {stated}, pyproject.toml asks for {torch_req.specifier}"


def test_ipywidgets_range_keeps_colabs_own():
    """Colab's front end renders ipywidgets 7.x; an upgrade to 8 there breaks every widget."""
    req = next(Requirement(r) for r in _pyproject()["project"]["dependencies"] if r.startswith("ipywidgets"))
    for version in ["7.7.1", "8.1.5"]:  # Colab's build, and what JupyterLab 4 installs here
        assert req.specifier.contains(Version(version)), version


def test_nvml_comes_from_nvidia_ml_py_not_the_deprecated_shim():
    names = [Requirement(r).name for r in _pyproject()["project"]["dependencies"]]
    assert "nvidia-ml-py" in names and "pynvml" not in names


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    assert re.search(r"^make test$", ci, flags=re.M)
