"""The web book, built once per test session and served here, read in headless Chromium (Debian's).

``SITE.root`` is the built site (quick mode: the front page, the errata and the notebooks with an in-page
calculator; otherwise every notebook), ``SITE.url`` where a local HTTP server serves it and ``SITE.open(page)``
a Playwright page with everything that went wrong on it recorded: console errors, uncaught exceptions, failed
or refused requests (every request that leaves the site is refused: nothing may be fetched from outside).
Built into test-artifacts/book, beside screenshots of failures.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browser_lab import CHROMIUM, shared_playwright

from book.calculators import CALCULATORS
from d2lmp import config
from tools import book_vendor
from tools.build import build
from tools.notebooks import ROOT

LATE_NOTEBOOK = "19_when_things_fail"  # the search test looks for a term of it
QUICK_STEMS = sorted({c.notebook for c in CALCULATORS.values()} | {LATE_NOTEBOOK})
OUTPUT = ROOT / "test-artifacts" / "book"


def npm_or_cache() -> bool:
    """True when the vendored packages can be had: npm is installed or their tarballs are cached."""
    return book_vendor.npm_available() or all(
        (book_vendor.CACHE / f"{name}-{version}.tgz").exists() for name, (version, _) in book_vendor.PACKAGES.items())


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a page closed while its files were sent: nothing the tests look at


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".wasm": "application/wasm", ".js": "text/javascript"}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


@dataclass
class Problems:
    """What went wrong on one page."""

    console: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return self.console + self.failed + [f"request to outside the site: {u}" for u in self.outside]


class Site:
    def __init__(self) -> None:
        self.root: Path | None = None
        self.pages: list[str] = []
        self._server: _Server | None = None
        self._browser: Any = None

    def build(self) -> None:
        """Build the site once (quick mode: ``QUICK_STEMS`` only)."""
        if self.root is not None:
            return
        if OUTPUT.exists():
            shutil.rmtree(OUTPUT)
        self.pages = build(OUTPUT, QUICK_STEMS if config.quick_mode() else None, work=ROOT / "build" / "book-test-work")
        self.root = OUTPUT

    def start(self) -> None:
        """Build if not yet built, then serve the site and start Chromium."""
        self.build()
        if self._browser is not None:
            return
        handler = functools.partial(_Handler, directory=str(OUTPUT))
        self._server = _Server(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._browser = shared_playwright().chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def open(self, path: str) -> tuple[Any, Problems]:
        """A new page at ``path`` (relative to the site), loaded, and the record of what went wrong on it."""
        self.start()
        problems = Problems()
        page = self._browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda m: problems.console.append(f"console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.console.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: problems.failed.append(f"{r.url}: {r.failure}")
                if r.url.startswith(self.url) else None)
        page.on("response", lambda r: problems.failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)

        def route(request: Any) -> None:
            if request.request.url.startswith(self.url) or request.request.url.startswith(("data:", "blob:")):
                request.continue_()
            else:
                problems.outside.append(request.request.url)
                request.abort()

        page.route("**/*", route)
        page.goto(self.url + path, wait_until="load")
        return page, problems

    def screenshot(self, page: Any, name: str) -> Path:
        path = ROOT / "test-artifacts" / f"book-{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=False)
        return path

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


SITE = Site()
