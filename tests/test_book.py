"""The static book builds: a page per notebook, an index in chapter order, and working links."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))

import build as book  # noqa: E402


def test_book_builds_with_every_page_and_link(tmp_path):
    written = book.build(tmp_path)
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    pages = {p.name for p in written}
    assert pages == {f"{nb.stem}.html" for nb in notebooks} | {"index.html"}
    index = (tmp_path / "index.html").read_text()
    assert re.findall(r'href="([^"]+\.html)"', index) == [f"{nb.stem}.html" for nb in notebooks]
    for page in written:
        text = page.read_text()
        for target in re.findall(r'href="(\d\d_[a-z0-9_]+\.html)"', text):
            assert (tmp_path / target).exists(), f"{page.name} links to missing {target}"
        assert not re.search(r'href="\d\d_[a-z0-9_]+\.ipynb"', text), f"{page.name} still links to .ipynb"
        if page.name != "index.html":
            assert "data:image/png;base64" in text, f"{page.name} shows no plot"
