"""The static book builds: a page per notebook, an index in chapter order, and working links."""

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from tools import build as book
from tools.notebooks import paths, read

NOTEBOOKS = paths()


class _Links(HTMLParser):
    """Every href and src in a page, and every element id (anchors)."""

    def __init__(self):
        super().__init__()
        self.targets, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.targets.append(value)
            if name == "id" and value:
                self.ids.add(value)


def _parse(path):
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _png_outputs(notebook):
    return sum("image/png" in out.get("data", {}) for out in read(notebook).outputs())


def test_link_rewriting_keeps_anchors():
    assert book.LINK.sub(r'href="\1.html\2"', 'href="03_general_purpose_gpus.ipynb#Summary"') == \
        'href="03_general_purpose_gpus.html#Summary"'

@pytest.mark.slow

def test_book_builds_with_every_page_link_and_plot(tmp_path):
    written = book.build(tmp_path)
    pages = {p.name for p in written}
    assert pages == {f"{nb.stem}.html" for nb in NOTEBOOKS} | {"index.html"}
    index = (tmp_path / "index.html").read_text()
    assert re.findall(r'href="([^"]+\.html)"', index) == [f"{nb.stem}.html" for nb in NOTEBOOKS]
    parsed = {page.name: _parse(page) for page in written}
    for name, links in parsed.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or target.startswith(("#", "//")):
                continue  # absolute (CDN scripts, Colab badges, sources) or in-page
            assert not parts.path.endswith(".ipynb"), f"{name} still links to a notebook: {target}"
            assert (tmp_path / parts.path).exists(), f"{name} links to missing {target}"
            if parts.fragment and parts.path in parsed:
                assert parts.fragment in parsed[parts.path].ids, f"{name} links to a missing anchor: {target}"
    for nb in NOTEBOOKS:
        text = (tmp_path / f"{nb.stem}.html").read_text(encoding="utf-8")
        shown, stored = text.count("data:image/png;base64"), _png_outputs(nb)
        assert stored > 0, f"{nb.name} has no plot output"
        assert shown >= stored, f"{nb.stem}.html shows {shown} of the notebook's {stored} plots"
