# Two commands matter (see README):  make lab   |   make test
# Everything installs into ./.venv from pyproject.toml; nothing is needed beyond Python 3.11+ and make.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STATE  := $(CURDIR)/.state

# Keep Jupyter, IPython and matplotlib side files out of $HOME (tests, CI, benchmarks).
export JUPYTER_CONFIG_DIR      := $(STATE)/jupyter-config
export JUPYTER_DATA_DIR        := $(STATE)/jupyter-data
export JUPYTER_RUNTIME_DIR     := $(STATE)/jupyter-runtime
export JUPYTERLAB_SETTINGS_DIR := $(STATE)/lab-user-settings
export JUPYTERLAB_WORKSPACES_DIR := $(STATE)/lab-workspaces
export IPYTHONDIR              := $(STATE)/ipython
export MPLCONFIGDIR            := $(STATE)/mpl
export JUPYTER_PLATFORM_DIRS   := 1
export XDG_CONFIG_HOME         := $(STATE)/xdg-config
export XDG_CACHE_HOME          := $(STATE)/xdg-cache
export npm_config_cache        := $(STATE)/npm-cache
export MPLBACKEND              := Agg
export PYTHONHASHSEED          := 0

NBVAL := --nbval --nbval-current-env --nbval-sanitize-with=nbval_sanitize.cfg
NOTEBOOK_DIRS := notebooks solutions exercises dashboards

.PHONY: setup lab dashboard test test-fast execute exercises bench nbgrader-check book handout clean

$(STAMP): pyproject.toml
	mkdir -p $(STATE)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,book]'
	touch $(STAMP)

setup: $(STAMP)

## Set everything up and open the companion in JupyterLab.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=. notebooks/START_HERE.ipynb

## The lecture dashboard (8.6 scheme comparison + 17 §2 roofline) as a standalone page, offline.
dashboard: $(STAMP)
	JUPYTER_PATH=$(CURDIR)/dashboards/share/jupyter $(PY) -m voila dashboards/lecture.ipynb \
	  --template=lab-offline --Voila.ip=127.0.0.1 \
	  --VoilaConfiguration.extension_denylist=jupyterlab-jupytext \
	  --VoilaConfiguration.extension_denylist=@jupyter-notebook/lab-extension \
	  --VoilaConfiguration.extension_denylist=@jupyter/nbgrader

## Set everything up and run the whole test suite (unit, property, ledger, notebooks via nbval).
test: $(STAMP)
	mkdir -p $(STATE)
	COMPANION_FAST=1 $(PY) -m pytest -n 2 --dist loadfile -q $(NBVAL) tests $(NOTEBOOK_DIRS)

## Unit tests only (no notebooks): the quick loop while editing companion/.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q tests

## Re-execute notebooks from their py:percent sources and store the outputs (never hand-edit).
execute: $(STAMP)
	COMPANION_FAST=1 $(PY) tools/execute_notebooks.py $(ARGS)

## Regenerate the students' exercises/ from solutions/.
exercises: $(STAMP)
	$(PY) tools/make_exercises.py

## Import solutions/ into a throwaway nbgrader course (own venv under /tmp) and autograde a
## full and a blank submission: full marks vs zero.
NBGRADER_VENV ?= /tmp/nbgrader-venv
nbgrader-check: $(STAMP)
	NBGRADER_VENV=$(NBGRADER_VENV) tools/nbgrader_check.sh

## The static, offline book of every notebook (stored outputs, no kernel) in build/book/.
## A warning fails the build (a broken link, an output it cannot render).
BOOK_OUT      ?= build/book
BOOK_DOCTREES ?= build/book-doctrees
book: $(STAMP)
	rm -rf $(BOOK_OUT)
	$(VENV)/bin/sphinx-build -b html -q -W --keep-going -c book -d $(BOOK_DOCTREES) . $(BOOK_OUT)
	@echo "book: $(BOOK_OUT)/index.html"

## A PDF of the exercises with a chosen seed's data: make handout SEED=3 -> build/handout-seed3.pdf
SEED ?= 0
handout: $(STAMP)
	$(PY) tools/make_handout.py --seed $(SEED) --out build/handout-seed$(SEED).pdf

## Print the benchmark figures (nothing is asserted).
bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(STATE)
