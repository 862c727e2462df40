"""The project bibliography: every primary source the notebooks cite, and the markdown that cites it.

A notebook cites a source with a link to its anchor, ``[Huang et al., 2019](#ref-huang2019gpipe)``
(or, in running text, ``Huang et al. ([2019](#ref-huang2019gpipe))``), and ends with a References cell
made by ``references_markdown(cited_keys(text))``. ``tests/test_sources.py`` keeps the two in sync.
Authors are written ``"Surname, I.; Surname, I."``; an organisation is one name without a comma.
Undated living documents (documentation, product pages) have the year ``"n.d."``. Data tables
(``gpu_specs.NOTABLE_GPUS``, ``topology``'s link tables, the cost-model presets) name their sources by
key in a ``source`` field; ``sources_text`` prints them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["Source", "SOURCES", "cite", "cite_text", "sources_text", "year_text", "references_markdown", "cited_keys"]


from d2lmp.sources.documents import DOCUMENTS
from d2lmp.sources.papers import PAPERS
from d2lmp.sources.record import Source

SOURCES: dict[str, Source] = {s.key: s for s in (*PAPERS, *DOCUMENTS)}


def _authors(source: Source) -> list[str]:
    return [a.strip() for a in source.authors.split(";")]


def _surname(author: str) -> str:
    return author.split(",")[0].strip()


def _name_part(source: Source) -> str:
    """'Huang et al.', 'Patarasuk and Yuan', 'NVIDIA': the author part of a citation."""
    authors = _authors(source)
    if len(authors) == 1:
        return _surname(authors[0])
    if len(authors) == 2:
        return f"{_surname(authors[0])} and {_surname(authors[1])}"
    return f"{_surname(authors[0])} et al."


def year_text(key: str) -> str:
    """The year as cited, with a/b/... where one author part has several sources in a year ('2017a', 'n.d.-b')."""
    source = SOURCES[key]
    same = sorted(k for k, s in SOURCES.items() if _name_part(s) == _name_part(source) and s.year == source.year)
    if len(same) == 1:
        return str(source.year)
    letter = "abcdefghijklmnopqrstuvwxyz"[same.index(key)]
    return f"{source.year}-{letter}" if source.year == "n.d." else f"{source.year}{letter}"


def cite_text(key: str) -> str:
    """The text of a citation: 'Huang et al., 2019'."""
    return f"{_name_part(SOURCES[key])}, {year_text(key)}"


def sources_text(keys: Iterable[str]) -> str:
    """The citation texts of several keys, for printing a data table's ``source``: 'NVIDIA, 2022a; NVIDIA, 2022b'."""
    return "; ".join(cite_text(k) for k in keys)


def cite(key: str) -> str:
    """A markdown citation linking to the References cell: '[Huang et al., 2019](#ref-huang2019gpipe)'."""
    return f"[{cite_text(key)}](#ref-{key})"


def _author_list(source: Source) -> str:
    authors = _authors(source)
    if len(authors) <= 2:
        return " and ".join(authors)
    return ", ".join(authors[:-1]) + ", and " + authors[-1]


def _entry(key: str) -> str:
    s = SOURCES[key]
    note = f" {s.note}" if s.note else ""
    return f'- <a id="ref-{key}"></a>{_author_list(s)} ({year_text(key)}). *{s.title}*. {s.venue}.{note} <{s.url}>'


def references_markdown(keys: Iterable[str]) -> str:
    """The markdown of a References cell for ``keys``: one anchored bullet per source, sorted by citation."""
    unique = sorted(set(keys), key=lambda k: (cite_text(k).lower(), k))
    return "\n".join(["## References", ""] + [_entry(k) for k in unique])


_LINK = re.compile(r"\]\(#ref-([A-Za-z0-9_]+)\)")


def cited_keys(markdown_text: str) -> list[str]:
    """The keys of every ``(#ref-KEY)`` link in ``markdown_text``, once each, in order of first appearance."""
    return list(dict.fromkeys(_LINK.findall(markdown_text)))
