"""The record of one source the series cites: a paper, a vendor document or datasheet, or a library's documentation."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source"]


@dataclass(frozen=True)
class Source:
    """One primary source: a paper, a vendor document or datasheet, or a library's documentation."""

    key: str
    authors: str
    title: str
    venue: str
    year: int | str
    url: str
    note: str = ""
