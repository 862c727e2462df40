"""Sphinx configuration of the web book (``make book``; tools/build.py stages the pages and runs Sphinx).

Sphinx with myst-nb (notebooks as pages, outputs as stored: nothing is executed) and sphinx-book-theme
(sidebar in series order, previous/next links, offline search from Sphinx's own index). Everything a page loads
lies in the site: MathJax and Pyodide are copied from their npm packages at build time (tools/book_vendor.py).
"""

project = "d2lmp: GPUs for deep learning, and training on several of them"
author = "the d2lmp authors"
html_title = "GPUs for deep learning, and training on several of them"

extensions = ["myst_nb"]
nb_execution_mode = "off"  # the committed notebooks are stored executed
nb_ipywidgets_js: dict[str, dict[str, str]] = {}  # no require.js or widget manager from a CDN: widgets need a kernel
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "html_image"]
# Links stay as written: in-page anchors (#ref-..., the References' raw-HTML ids) and page links (NN_slug.html,
# written so by tools/book_pages.py) are plain hyperlinks.
myst_all_links_external = True
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]

# MathJax 3 from the site itself (vendored from npm), never from a CDN.
mathjax_path = "mathjax/tex-chtml-full.js"

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]  # tools/build.py appends the vendored packages' folder
html_favicon = "_static/favicon.svg"  # a chip; without one every page's load asks for /favicon.ico, a 404
html_css_files = ["calculators.css"]
html_js_files = ["calculators.js"]
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "repository_url": "https://github.com/d2lmp/d2lmp",
    "use_download_button": False,  # each page links its own notebook (tools/book_pages.py)
    "show_toc_level": 2,
    "navigation_with_keys": True,
}
html_context = {"default_mode": "auto"}  # the theme's light/dark switch starts from the reader's preference
