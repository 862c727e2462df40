"""Citations a reader can check: each in-text citation says where in the source (a locator right after it) or its
bibliography entry says what the source supports (a ``note``); no citation key is left unrendered on a page, and
no ``#ref-KEY`` link points to a key the bibliography lacks.

A citation is a markdown link ``[Author, year](#ref-KEY)``. Its locator is the text after the link up to the next
``;`` or ``)`` (the rest of its parenthetical), e.g. ``([Huang et al., 2019](#ref-huang2019gpipe), §2.3)``.
"""

import re
from pathlib import Path

import pytest

from d2lmp.bibliography import SOURCES, Source
from tools.notebooks import Cell, Notebook, notebooks

# The one place that says what counts as a locator: a section, table, figure, equation, page, algorithm, appendix,
# footnote, the abstract, a named part of a document, or a file in backticks.
LOCATOR = re.compile(
    r"§|\b(?:Tables?|Fig(?:ure)?s?\.?|[Ee]q(?:uation)?s?\.?|pp?\.|[Ss]ections?|[Ff]ootnotes?|[Aa]bstract|"
    r"Algorithms?|Appendix|Appendices|[Cc]hapters?|Listings?)(?:\s|\d|$)|`[^`]+\.[A-Za-z0-9]+`"
)
LINK = re.compile(r"\]\(#ref-([A-Za-z0-9_]+)\)")
ANY_REF = re.compile(r"#ref-([A-Za-z0-9_]+)")
# After maths and code are removed, any {NAME} left in markdown is a placeholder that was never filled in.
UNRENDERED = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_MATHS_AND_CODE = re.compile(r"```.*?```|\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]+`", re.DOTALL)

NOTEBOOKS = notebooks()


def _prose_cells(nb):
    """The markdown cells of a notebook, its References cell (the last cell) left out."""
    return [c for c in nb.cells[:-1] if c.is_markdown]


def _after_link(text: str, end: int) -> str:
    """The text after a citation link up to the next ';' or ')' that closes its parenthetical."""
    return re.split(r"[;)]", text[end:], maxsplit=1)[0]


def has_locator(after: str) -> bool:
    """Whether the text right after a citation names where in the source (see ``LOCATOR``)."""
    return LOCATOR.search(after) is not None


def citations_without_support(nb, sources=SOURCES):
    """(notebook, cell index, key) for each citation with neither a locator after it nor a note on its entry."""
    found = []
    for cell in _prose_cells(nb):
        for m in LINK.finditer(cell.source):
            key = m.group(1)
            if key in sources and not sources[key].note.strip() and not has_locator(_after_link(cell.source, m.end())):
                found.append((nb.name, cell.index, key))
    return found


def test_locator_vocabulary():
    for after in (", §2.3", ", Table 1", ", Fig. 3", ", Figure 1", ", eq. (3)", ", p. 4", ", section Pinned memory",
                  ", footnote 1", ", abstract", ", `examples/layers-80sec.cfg`", ", Algorithm 1", ", §3.2; see"):
        assert has_locator(after), after
    for after in ("", ", and notebook 12", " and others", ", 2019", ", the paper's example"):
        assert not has_locator(after), after
    text = "([Huang et al., 2019](#ref-huang2019gpipe), §2.3; [X](#ref-y)) and more"
    m = LINK.search(text)
    assert m and _after_link(text, m.end()) == ", §2.3"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda nb: nb.name)
def test_every_citation_has_a_locator_or_a_noted_entry(nb):
    missing = citations_without_support(nb)
    assert not missing, ("(notebook, cell, key) cited with neither a locator after the citation (§, Table, Fig., eq., "
                         "p., section, ...) nor a note on the entry in d2lmp/sources saying what it supports: "
                         f"{missing}")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda nb: nb.name)
def test_no_unrendered_citation_key(nb):
    found = [(nb.name, c.index, m.group()) for c in nb.markdown()
             for m in UNRENDERED.finditer(_MATHS_AND_CODE.sub("", c.source))]
    assert not found, f"(notebook, cell, text) placeholders left in markdown, cite with a #ref- link: {found}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda nb: nb.name)
def test_every_ref_link_names_a_bibliography_key(nb):
    unknown = [(nb.name, c.index, key) for c in nb.markdown() for key in ANY_REF.findall(c.source)
               if key not in SOURCES]
    assert not unknown, f"(notebook, cell, key) #ref- links to keys not in d2lmp.bibliography.SOURCES: {unknown}"


def test_the_checks_catch_what_they_look_for():
    """The patterns find the faults the tests above look for, so that those tests can fail."""
    assert UNRENDERED.search(_MATHS_AND_CODE.sub("", "a full recomputation ({N21}, eq. (3))"))
    assert not UNRENDERED.search(_MATHS_AND_CODE.sub("", r"$\frac{p-1}{m}$ and `{key}` in code"))
    bare = Source("bare", "A, B.", "T", "V", 2000, "https://example.org")
    noted = Source("noted", "A, B.", "U", "V", 2000, "https://example.org/n", "Table 2: the figure cited.")
    prose = ("One ([A, 2000](#ref-bare)); two ([A, 2000](#ref-bare), Table 2); three ([A, 2000](#ref-noted)); "
             "four ([A, 2000](#ref-bare), notebook 3; Fig. 1).")
    cells = tuple(Cell(i, "markdown", text, (), None, {}) for i, text in enumerate((prose, "## References")))
    nb = Notebook(Path("00_fake.ipynb"), {}, cells)
    assert citations_without_support(nb, {"bare": bare, "noted": noted}) == [("00_fake.ipynb", 0, "bare")] * 2
