"""Render the executed notebooks into a static HTML book: one page per notebook and an index.

    python -m tools.build [OUTPUT_DIR]        (default: build/book; `make book` runs this)

Pages come from the committed notebooks, which are stored executed, so the plots are there;
widgets show the plain plot printed beside them. Links between notebooks (NN_slug.ipynb)
become links between pages (NN_slug.html).
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from tools.notebooks import NOTEBOOK_DIR, ROOT, paths, read

LINK = re.compile(r'href="(\d\d_[a-z0-9_]+)\.ipynb(#[^"]*)?"')


def render(path: Path) -> str:
    """HTML of one notebook, with notebook links turned into page links."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_filename(str(path))
    return LINK.sub(r'href="\1.html\2"', body)


def index_page(entries: list[tuple[str, str]]) -> str:
    items = "\n".join(f'<li><a href="{html.escape(page)}">{html.escape(title)}</a></li>' for page, title in entries)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>d2lmp: GPUs for deep learning</title>
<style>body {{ font-family: sans-serif; max-width: 46em; margin: 3em auto; line-height: 1.5 }}</style></head>
<body><h1>d2lmp: GPUs for deep learning, and training on several of them</h1>
<p>An interactive notebook series. These pages are the notebooks as last executed; open them in JupyterLab or Colab
to run them and use the widgets.</p>
<ol>
{items}
</ol></body></html>
"""


def build(output: Path) -> list[Path]:
    """Write every page and the index into ``output``; return the written paths."""
    output.mkdir(parents=True, exist_ok=True)
    notebooks = paths()
    if not notebooks:
        raise SystemExit(f"no notebooks found in {NOTEBOOK_DIR}")
    written, entries = [], []
    for nb in notebooks:
        page = output / f"{nb.stem}.html"
        page.write_text(render(nb), encoding="utf-8")
        written.append(page)
        entries.append((page.name, read(nb).title))
        print(f"rendered {nb.name} -> {page}")
    index = output / "index.html"
    index.write_text(index_page(entries), encoding="utf-8")
    written.append(index)
    print(f"index: {index}")
    return written


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "book")
