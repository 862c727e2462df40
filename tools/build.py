"""Build the web book: the executed notebooks as a static site, in series order, in build/book.

    python -m tools.build [OUTPUT_DIR] [NOTEBOOK_STEM ...]     (`make book` runs it with build/book)

Sphinx with myst-nb and sphinx-book-theme (book/conf.py), chosen over Jupyter Book 2 (mystmd, a Node
application that fetches its theme at build time) because it builds offline from PyPI packages, in the
Python the series already uses, and gives a sidebar, previous/next links and a search that needs no server.
Jupyter Book 1 is these same three packages behind its own configuration layer, which adds nothing here.
Nothing is executed: pages show the outputs stored in the notebooks. tools/book_pages.py stages each
notebook (links to Colab and the file, folded solutions, calculators), tools/book_vendor.py copies MathJax
and Pyodide from npm and zips the model package the calculators run. Naming notebook stems builds only those
(and the front page and errata), as the quick browser tests do.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from tools import book_pages, book_vendor
from tools.notebooks import ROOT, paths, read

BOOK = ROOT / "book"
STATIC_NAME = "vendor"


def stage(source: Path, stems: list[str] | None = None) -> list[str]:
    """Write the Sphinx source folder: front page with the table of contents, errata, staged notebooks and
    the original notebooks (for download). Return the page names in order."""
    extra = source.parent / "extra"
    for folder in (source, extra):
        if folder.exists():
            shutil.rmtree(folder)
    (extra / "notebooks").mkdir(parents=True)
    source.mkdir()
    pages, titles = [], {}
    for nb in paths():
        if stems and nb.stem not in stems:
            continue
        staged = book_pages.stage(json.loads(nb.read_text(encoding="utf-8")), nb.stem)
        (source / nb.name).write_text(json.dumps(staged, ensure_ascii=False), encoding="utf-8")
        shutil.copy(nb, extra / "notebooks" / nb.name)
        pages.append(nb.stem)
        titles[nb.stem] = read(nb).title
    (source / "calculators.md").write_text(book_pages.calculators_page(titles), encoding="utf-8")
    errata = (ROOT / "ERRATA.md").read_text(encoding="utf-8")
    (source / "errata.md").write_text(book_pages.errata_page(errata, [nb.stem for nb in paths()]), encoding="utf-8")
    toc = "\n".join(["", "```{toctree}", ":maxdepth: 1", ":caption: The notebooks", "", *pages, "", "```", "",
                     "```{toctree}", ":maxdepth: 1", ":caption: In the page", "", "calculators", "errata", "```", ""])
    (source / "index.md").write_text((BOOK / "index.md").read_text(encoding="utf-8") + toc, encoding="utf-8")
    return [*pages, "calculators", "errata"]


def build(output: Path, stems: list[str] | None = None, work: Path | None = None) -> list[str]:
    """Stage, vendor and run Sphinx into ``output``; return the page names in series order."""
    from sphinx.application import Sphinx

    output = output.resolve()  # Sphinx reads relative paths in confoverrides from book/, not from here
    work = (work or output.parent / f"{output.name}-work").resolve()
    pages = stage(work / "source", stems)
    vendored = work / STATIC_NAME
    book_vendor.vendor(vendored)
    book_vendor.model_zip(vendored / "calculators" / "model.zip")
    app = Sphinx(str(work / "source"), str(BOOK), str(output), str(work / "doctrees"), "html",
                 confoverrides={"html_static_path": [str(BOOK / "_static"), str(vendored)],
                                "html_extra_path": [str(work / "extra")]},
                 status=None, warning=sys.stderr, freshenv=True, parallel=1)
    app.build()
    if app.statuscode:
        raise SystemExit(f"sphinx failed ({app.statuscode})")
    return pages


def main(argv: list[str]) -> None:
    output = Path(argv[0]) if argv else ROOT / "build" / "book"
    start = time.perf_counter()
    pages = build(output, argv[1:] or None)
    size = sum(f.stat().st_size for f in output.rglob("*") if f.is_file())
    print(f"{len(pages)} pages and the front page in {output} ({size / 1e6:.1f} MB) "
          f"in {time.perf_counter() - start:.0f} s; serve with: python -m http.server -d {output}")


if __name__ == "__main__":
    main(sys.argv[1:])
