# Two commands for a newcomer (see README.md):
#   make lab    set everything up and open the notebooks in JupyterLab
#   make test   set everything up, run ruff, then all tests, notebooks included (quick mode)

PYTHON ?= python3

# Bytecode. Where Python is told not to write it (PYTHONDONTWRITEBYTECODE=1, as on this project's CI machines), every
# process compiles the modules it imports again: importing torch, matplotlib and d2lmp.views took 6.0 CPU-seconds
# uncompiled against 2.1 compiled, and `make test` starts dozens of such processes (kernels, spawned ranks, torchrun,
# the command line). So make's commands write bytecode, into build/pycache only (the checkout and the environment
# stay as they are), each module once, when it is first imported.
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/build/pycache
export PYTHONDONTWRITEBYTECODE :=

VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install lab lint test unit compat notebooks execute book browser-deps clean

install: $(STAMP)

# The environment is made without pip's own copy (ensurepip took 7 s of a 2-core machine's time, then upgrading it
# 6 s more): the Python that makes it lends its pip (pip --python, pip 22.3 or newer), and where it has none, ensurepip
# puts one in. pip installs uv into it, and uv everything else in seconds where pip took about a minute of both
# cores' time (pip itself among them, for anyone who installs more later). torch (requirements-ci.txt pins it): where
# pip's configuration points at a folder of local builds (find-links), uv installs it from there too (4 s where pip
# took 11 to 15); where it points nowhere, pip installs torch first, from wherever its configuration says, and the
# torch already there satisfies the package's range, so uv downloads no other build. Not --quiet: where no local
# build lies, torch is a multi-GB download, and pip shows it moving. Should uv fail, pip installs the rest.
INSTALL_ARGS := -r requirements-ci.txt -e ".[lab,test,book]"

$(STAMP): pyproject.toml requirements-ci.txt
	test -x $(PY) || $(PYTHON) -m venv --without-pip $(VENV)
	pip="$(PY) -m pip"; $$pip --version >/dev/null 2>&1 || pip="$(PYTHON) -m pip --python $(PY)"; \
	$$pip --version >/dev/null 2>&1 || { $(PY) -m ensurepip --upgrade >/dev/null && pip="$(PY) -m pip"; }; \
	links="$${PIP_FIND_LINKS:-$$($$pip config get global.find-links 2>/dev/null)}"; \
	$$pip install --quiet uv && \
	{ [ -n "$$links" ] || $$pip install --no-compile -r requirements-ci.txt; } && \
	{ $(PY) -m uv pip install --python $(PY) $${links:+--find-links "$$links"} pip $(INSTALL_ARGS) || \
	  { echo "uv could not install the packages: pip installs them instead"; \
	    $$pip install --no-compile pip $(INSTALL_ARGS); }; }
	touch $(STAMP)

# Jupyter refuses to run as root unless told; containers and CI often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install
	$(VENV)/bin/jupyter lab notebooks/ $(ROOT_FLAG) $(LAB_ARGS)

# Debian's Chromium for the browser tests (never a downloaded browser), and npm, with which the web book
# copies MathJax and Pyodide from the npm registry; tried only as root with apt-get, otherwise the tests
# that need them skip and say why.
browser-deps:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "Chromium not installed: the browser tests will be skipped"
	@command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; } || \
	  echo "npm not installed: the web book's tests will be skipped"

# ruff (config in pyproject.toml) over the package, the tests, the maintenance scripts and the notebooks.
LINT_PATHS := d2lmp tests tools notebooks book

lint: install
	$(PY) -m ruff check $(LINT_PATHS) && $(PY) -m mypy

# pytest-xdist workers; WORKERS=0 runs everything in one process. --dist loadgroup keeps a notebook's cells
# and its browser test on one worker, and the rank-launching tests on one (tests/notebook_runs.py).
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadgroup

# ruff, then the unit tests, the browser tests and every notebook, all in quick mode. Each notebook runs once:
# in JupyterLab for the browser tests, nbval checking its cells on that run (by itself where Chromium is missing).
# mypy runs as a test (tests/test_types.py::test_mypy_passes), beside the others rather than before them.
# The environment and the browser (apt-get: mostly waiting on the network and the disk) are set up side by side.
test:
	$(MAKE) --no-print-directory -j2 install browser-deps
	$(PY) -m ruff check $(LINT_PATHS)
	D2LMP_QUICK=1 $(PY) -m pytest -p no:cacheprovider $(PARALLEL) tests notebooks --nbval-lax --nbval-current-env --nbval-cell-timeout=300 -q -rs --durations=25

unit: install
	D2LMP_QUICK=1 $(PY) -m pytest -p no:cacheprovider $(PARALLEL) tests -q -m "not browser"

# Re-execute every notebook in place from a real (full-size) run, for committing.
execute: install
	$(PY) -m tools.execute

# The web book in build/book: the executed notebooks as a static site (tools/build.py; nothing is executed).
# The first build packs MathJax and Pyodide from the npm registry into build/npm-cache.
# Read it served: python -m http.server -d build/book (the calculators need http://, not file://).
book: install
	$(PY) -m tools.build build/book

# The unit tests and every notebook (quick mode, nbval) against another torch, e.g. `make compat TORCH=2.8.0`, in
# an environment of its own, .venv-compat-<version>, made once and kept (`make clean` removes it). On Linux x86_64
# plain PyPI serves the CUDA build (about 3.5 GB with its nvidia-* wheels), which runs on the CPU too. mypy is
# checked against requirements-ci.txt's torch only: tests/test_types.py skips it on another one and says why.
# COMPAT_ARGS: more pytest options, e.g. COMPAT_ARGS="-k all_to_all" or COMPAT_ARGS=-vv (a line per test).
TORCH ?=
COMPAT_ARGS ?=
COMPAT_VENV := .venv-compat-$(TORCH)
COMPAT_PY := $(COMPAT_VENV)/bin/python

compat:
	@test -n "$(TORCH)" || { echo "usage: make compat TORCH=<version>, e.g. make compat TORCH=2.8.0"; exit 2; }
	test -x $(COMPAT_PY) || $(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_PY) -m pip install --quiet --upgrade pip
	$(COMPAT_PY) -m pip install "torch==$(TORCH)"
	$(COMPAT_PY) -m pip install -e ".[test,book]"
	$(COMPAT_PY) -c "import torch; assert torch.__version__.split('+')[0] == '$(TORCH)', torch.__version__"
	D2LMP_QUICK=1 $(COMPAT_PY) -m pytest -p no:cacheprovider $(PARALLEL) tests notebooks -m "not browser" \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=300 -q -rfEs $(COMPAT_ARGS)

clean:
	rm -rf $(VENV) .venv-compat-* .pytest_cache .hypothesis build/pycache
