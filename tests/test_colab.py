"""Colab readiness: one repository address everywhere, badges, and GPU requests where they help."""

import re

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import pytest

from tools.notebooks import ROOT, paths, read

NOTEBOOKS = paths()
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
SLUG = REPOSITORY.removeprefix("https://github.com/")
GPU_SECTIONS = {f"{n:02d}" for n in range(1, 10)}  # timing and training notebooks; 10-14 run CPU ranks either way


def _setup_cell(path):
    return read(path).cells[1].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_setup_cell_installs_from_the_repository(path):
    assert f'"d2lmp @ git+{REPOSITORY}"' in _setup_cell(path)


def test_readme_badges_and_install_line_use_the_repository():
    readme = (ROOT / "README.md").read_text()
    badges = re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/main/notebooks/", readme)
    assert badges and set(badges) == {SLUG}
    assert f"git+{REPOSITORY}" in readme


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_gpu_requested_where_it_helps(path):
    metadata = read(path).metadata
    if path.name[:2] in GPU_SECTIONS:
        assert metadata.get("accelerator") == "GPU", "Colab should offer a GPU runtime for this notebook"
        assert metadata.get("colab", {}).get("gpuType")
    else:
        assert "accelerator" not in metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_opens_with_its_colab_badge_and_says_what_a_gpu_changes(path):
    first = read(path).cells[0].source
    link = f"https://colab.research.google.com/github/{SLUG}/blob/main/notebooks/{path.name}"
    assert f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({link})" in first
    assert "**GPU:**" in first, "the first cell says whether a GPU is needed"
    if path.name[:2] in GPU_SECTIONS:
        assert "Without a GPU" in first, "say what happens without the GPU the notebook asks for"
