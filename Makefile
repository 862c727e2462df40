# Two commands for a newcomer (see README.md):
#   make lab    set everything up and open the notebooks in JupyterLab
#   make test   set everything up and run all tests, notebooks included (quick mode)

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install lab test unit notebooks execute clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements-ci.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-ci.txt
	$(PY) -m pip install --quiet -e ".[lab,test]"
	touch $(STAMP)

lab: install
	$(VENV)/bin/jupyter lab notebooks/

# Unit tests, then every notebook under nbval-lax, all in quick mode.
test: install
	D2LMP_QUICK=1 $(PY) -m pytest -p no:cacheprovider tests notebooks --nbval-lax --nbval-current-env --nbval-cell-timeout=300 -q

unit: install
	D2LMP_QUICK=1 $(PY) -m pytest -p no:cacheprovider tests -q

# Re-execute every notebook in place from a real (full-size) run, for committing.
execute: install
	for nb in notebooks/[0-9][0-9]_*.ipynb; do \
	  $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=1200 "$$nb" || exit 1; \
	done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
