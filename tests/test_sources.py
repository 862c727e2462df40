"""Sources ship with the project: notebooks cite entries of d2lmp.bibliography, each notebook ends with a
References cell that lists exactly what it cites, and nothing points to a file outside the repository."""

import re

import pytest

from d2lmp import gpu_specs, topology
from d2lmp.bibliography import (
    SOURCES,
    Source,
    cite,
    cite_text,
    cited_keys,
    references_markdown,
    sources_text,
    year_text,
)
from d2lmp.model import costmodel, nccl_published
from tools.notebooks import ROOT, paths, read

NOTEBOOKS = paths()
# A reference sheet kept outside the repository, or any path outside it. The bracket in "wor[k]" keeps this
# file from matching its own pattern.
OUTSIDE = re.compile(r"facts\.md|\.\./shared|/wor[k]/")
LINK = re.compile(r"\[([^\]]*)\]\(#ref-([A-Za-z0-9_]+)\)")


def _prose(path):
    """The markdown of a notebook without its References cell (the last cell)."""
    return "\n".join(c.source for c in read(path).cells[:-1] if c.is_markdown)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_points_only_inside_the_repository(path):
    found = [(c.index, m.group()) for c in read(path).cells for m in OUTSIDE.finditer(c.source)]
    assert not found, f"cells cite files outside the repository (cite d2lmp.bibliography instead): {found}"


def test_package_tests_tools_and_readme_point_only_inside_the_repository():
    files = [f for folder in ("d2lmp", "tests", "tools") for f in sorted((ROOT / folder).rglob("*.py"))]
    files += [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    offenders = [f"{f.relative_to(ROOT)}:{n}" for f in files
                 for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]
    assert not offenders, "these lines cite files outside the repository:\n" + "\n".join(offenders)


def _table_rows():
    """(table, row name, source) for every row of every sourced data table."""
    yield from (("gpu_specs.NOTABLE_GPUS", g.name, g.source) for g in gpu_specs.NOTABLE_GPUS)
    yield from (("gpu_specs.SM_LAYOUTS", s.gpu, s.source) for s in gpu_specs.SM_LAYOUTS)
    yield from (("topology.pcie_table", f"PCIe {r.generation}", r.source) for r in topology.pcie_table())
    yield from (("topology.nvlink_table", f"NVLink {r.generation}", r.source) for r in topology.nvlink_table())
    yield from (("costmodel.PRESETS", name, hw.source) for name, hw in costmodel.PRESETS.items())
    yield from (("nccl_published.PUBLISHED_BUSBW", sweep.system, sweep.source)
                for sweep in nccl_published.PUBLISHED_BUSBW)


def test_every_data_table_row_cites_bibliography_keys():
    """A row's ``source`` is a tuple of one or more keys of SOURCES, never free text or a website."""
    rows = list(_table_rows())
    assert {table for table, _, _ in rows} == {"gpu_specs.NOTABLE_GPUS", "gpu_specs.SM_LAYOUTS", "topology.pcie_table",
                                                "topology.nvlink_table", "costmodel.PRESETS",
                                                "nccl_published.PUBLISHED_BUSBW"}
    assert set(topology.PCIE_SOURCES) == set(topology.PCIE) and set(topology.NVLINK_SOURCES) == set(topology.NVLINK)
    bad = [(table, name, source) for table, name, source in rows
           if not (isinstance(source, tuple) and source and all(k in SOURCES for k in source))]
    assert not bad, f"(table, row, source) whose source is not a tuple of bibliography keys: {bad}"
    assert sources_text(("nvidia_turing_whitepaper", "nvidia_volta_whitepaper")) == "NVIDIA, 2018; NVIDIA, 2017b"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cited_key_is_in_the_bibliography(path):
    missing = [k for k in cited_keys(_prose(path)) if k not in SOURCES]
    assert not missing, f"cited but not in d2lmp.bibliography.SOURCES: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_citation_text_matches_the_bibliography(path):
    """A link reads 'Huang et al., 2019' (or, after the authors' names in the sentence, just '2019')."""
    wrong = [(text, key, cite_text(key)) for text, key in LINK.findall(_prose(path))
             if key in SOURCES and text not in (cite_text(key), year_text(key))]
    assert not wrong, f"(link text, key, expected text): {wrong}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ends_with_its_references(path):
    nb = read(path)
    last = nb.cells[-1]
    assert last.is_markdown, "the last cell is the References cell"
    headings = [line.strip() for c in nb.markdown() for line in c.source.splitlines()]
    assert "## Exercises" in headings and headings.index("## Exercises") < headings.index("## References")
    keys = cited_keys(_prose(path))
    assert keys, "a notebook cites at least one source"
    assert last.source == references_markdown(keys), \
        "References cell out of date: regenerate it with d2lmp.bibliography.references_markdown(cited keys)"


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_source_is_complete(key):
    source = SOURCES[key]
    assert source.key == key and re.fullmatch(r"[A-Za-z0-9_]+", key)
    for field in ("authors", "title", "venue", "year", "url"):
        assert str(getattr(source, field)).strip(), f"{key}: empty {field}"
    assert source.url.startswith(("https://", "http://")), f"{key}: {source.url}"
    assert all(a.strip() for a in source.authors.split(";")), f"{key}: empty author in {source.authors!r}"


def test_cite_and_references_format():
    assert cite("huang2019gpipe") == "[Huang et al., 2019](#ref-huang2019gpipe)"
    assert cite("patarasuk2009bandwidth") == "[Patarasuk and Yuan, 2009](#ref-patarasuk2009bandwidth)"
    assert cite("krizhevsky2014weird").startswith("[Krizhevsky, 2014")
    gpipe, ring = cite("huang2019gpipe"), cite("patarasuk2009bandwidth")
    text = f"GPipe ({gpipe}) and the ring ({ring}), GPipe again ({gpipe})"
    assert cited_keys(text) == ["huang2019gpipe", "patarasuk2009bandwidth"]
    lines = references_markdown(["patarasuk2009bandwidth", "huang2019gpipe"]).splitlines()
    assert lines[:2] == ["## References", ""]
    assert [line.split('"')[1] for line in lines[2:]] == ["ref-huang2019gpipe", "ref-patarasuk2009bandwidth"]
    assert lines[2].startswith('- <a id="ref-huang2019gpipe"></a>Huang, Y., ')
    assert "(2019)" in lines[2] and "*GPipe:" in lines[2] and "<https://arxiv.org/abs/1811.06965>" in lines[2]


def test_same_author_and_year_get_letters():
    nvidia_2017 = sorted(k for k, s in SOURCES.items() if s.authors == "NVIDIA" and s.year == 2017)
    assert len(nvidia_2017) > 1
    assert sorted(year_text(k) for k in nvidia_2017) == [f"2017{c}" for c in "abcdefgh"[: len(nvidia_2017)]]
    assert len({cite_text(k) for k in SOURCES}) == len(SOURCES), "every source has its own citation text"


def test_source_is_frozen():
    with pytest.raises(AttributeError):
        SOURCES["huang2019gpipe"].year = 2020
    assert isinstance(SOURCES["huang2019gpipe"], Source)


def test_every_source_has_one_key():
    """Two keys for one paper split its citations: one URL and one title per source."""
    from collections import Counter

    for what, values in (("URL", [s.url for s in SOURCES.values()]),
                         ("title", [s.title.lower() for s in SOURCES.values()])):
        twice = [v for v, n in Counter(values).items() if n > 1]
        assert not twice, f"sources with the same {what} under two keys: {twice}"


def test_update_references_relabels_in_text_links_from_their_keys():
    from tools.update_references import relabel

    key = "nvidia_gtx580_specs"
    assert relabel(f"see [NVIDIA, n.d.-a](#ref-{key})") == f"see [{cite_text(key)}](#ref-{key})"
    assert relabel(f"NVIDIA ([n.d.-a](#ref-{key}))") == f"NVIDIA ([{year_text(key)}](#ref-{key}))"
    assert relabel(f"[the product page](#ref-{key})") == f"[the product page](#ref-{key})"  # other labels stay
