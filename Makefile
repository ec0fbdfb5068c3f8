# Two commands matter (see README):  make lab   |   make test
# Everything installs into ./.venv from requirements.lock (exact versions, hashes), compiled
# from pyproject.toml by `make lock`; nothing is needed beyond Python 3.11+ and make.
# LATEST=1 (e.g. `make test LATEST=1`) uses ./.venv-latest with the newest releases instead.

PYTHON ?= python3
LOCK   := requirements.lock
ifeq ($(LATEST),1)
VENV   := .venv-latest
export COMPANION_UNPINNED := 1
else
VENV   := .venv
endif
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
# JupyterHub + nbgrader venv and the npm proxy of the course check (tools/course_env.sh)
export COURSE_ENV              ?= $(STATE)/course-env
export PYTHONHASHSEED          := 0

NBVAL := --nbval --nbval-current-env --nbval-sanitize-with=nbval_sanitize.cfg
NOTEBOOK_DIRS := notebooks solutions exercises dashboards

.PHONY: setup setup-latest lock lab lab-instructor fresh-copy dashboard test test-fast test-dispatch execute \
        exercises bench stress nbgrader-check course-env course-check book handout lite lite-tools \
        lite-lock gallery clean

ifeq ($(LATEST),1)
# the unpinned path: newest releases that pyproject.toml allows (may fail; see README)
$(STAMP): pyproject.toml
	mkdir -p $(STATE)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	$(PY) -m pip install -q --upgrade -e '.[test,book]'
	touch $(STAMP)
else
# exactly the lock: install its pins (hash-checked; pip installs the lock's uv, and uv the
# rest), remove what it does not pin, add the project itself without resolving anything (uv,
# like the rest: it reports the build backend's output only when the build fails, so
# setuptools' notice about editable installs stays out of a student's terminal), then
# prove the result equals the lock
$(STAMP): $(LOCK) pyproject.toml
	mkdir -p $(STATE)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(VENV)/bin/uv || { $(PYTHON) tools/lock_entry.py uv $(LOCK) > $(STATE)/uv.req && \
	  $(PY) -m pip install -q --require-hashes --no-deps -r $(STATE)/uv.req; }
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) --require-hashes --no-deps \
	  -r $(LOCK)
	$(PY) tools/check_lock.py --extras | xargs -r $(PY) -m pip uninstall -q -y
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps --no-build-isolation --offline -e .
	$(PY) tools/check_lock.py
	touch $(STAMP)
endif

setup: $(STAMP)

setup-latest:
	$(MAKE) setup LATEST=1

## Recompile requirements.lock (and requirements-course.lock, the course check's JupyterHub +
## nbgrader venv, held to the same pins) from pyproject.toml (keeps the current pins where they still
## fit; UPGRADE=1 moves every package to its newest release; lock-overrides.txt says what is left
## out and why). uv lives in its own venv.
UV_VERSION := 0.13.9
LOCK_TOOLS := $(STATE)/lock-tools
COURSE_LOCK := requirements-course.lock
lock:
	mkdir -p $(STATE)
	test -x $(LOCK_TOOLS)/bin/uv || { $(PYTHON) -m venv $(LOCK_TOOLS) && \
	  $(LOCK_TOOLS)/bin/pip install -q uv==$(UV_VERSION); }
	$(LOCK_TOOLS)/bin/uv pip compile --quiet pyproject.toml --extra test --extra book --group install \
	  --universal --python-version 3.11.5 --generate-hashes --overrides lock-overrides.txt \
	  $(if $(UPGRADE),--upgrade) --custom-compile-command "make lock" -o $(LOCK)
	$(LOCK_TOOLS)/bin/uv pip compile --quiet pyproject.toml --extra course --group install \
	  --universal --python-version 3.11.5 --generate-hashes --overrides lock-overrides.txt \
	  -c $(LOCK) $(if $(UPGRADE),--upgrade) --custom-compile-command "make lock" -o $(COURSE_LOCK)

## JupyterLab defaults owned by the project (no news prompt, no update check): an overrides.d
## file in the venv's app settings, which user settings still override.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/llm-inference-companion.json
$(LAB_OVERRIDES): jupyter/lab-overrides.json | $(STAMP)
	mkdir -p $(dir $@)
	cp $< $@

LAB_FLAGS := --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate
# Jupyter refuses to start as root without --allow-root; root is the normal case in Docker, on
# cloud VMs and lab machines, so the flag is added exactly when the effective uid is 0
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
## A student's working copy (git-ignored): notebooks/ and exercises/ as in the repository, so
## JupyterLab's saves never touch a tracked file (tools/work_copy.py). `make lab` creates it and
## adds files new since; `make fresh-copy` moves it aside to $(WORK).old-<date> and starts anew.
WORK ?= my-work

## Set everything up and open the companion in JupyterLab (LAB_ARGS: extra server flags).
## Jupyter Server settings owned by the project (the venv's jupyter_server_config.json):
## notebook_shim, which only maps the classic Notebook's config onto Jupyter Server, is off (it
## reads the deprecated ServerApp.token, and every start printed its DeprecationWarning); and
## kernels get CurveZMQ keys from the server where their kernelspec supports it (ipykernel's
## does), so their traffic on 127.0.0.1 is encrypted and ipykernel no longer warns, for every
## notebook opened, that it is not.
SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.json
$(SERVER_CONFIG): jupyter/server-config.json | $(STAMP)
	mkdir -p $(dir $@)
	cp $< $@

lab: $(STAMP) $(LAB_OVERRIDES) $(SERVER_CONFIG)
	$(PY) tools/work_copy.py $(WORK)
	$(VENV)/bin/jupyter lab --notebook-dir=$(WORK) $(LAB_FLAGS) $(ROOT_FLAG) $(LAB_ARGS) \
	  $(WORK)/notebooks/START_HERE.ipynb

## The instructor's view: JupyterLab on the repository root, opened on solutions/index.ipynb
## (every exercise with its parts, points and answers); exercises/ and my-work/ sit beside it.
lab-instructor: $(STAMP) $(LAB_OVERRIDES) $(SERVER_CONFIG)
	$(VENV)/bin/jupyter lab --notebook-dir=. $(LAB_FLAGS) $(ROOT_FLAG) $(LAB_ARGS) \
	  solutions/index.ipynb

fresh-copy: $(STAMP)
	$(PY) tools/work_copy.py --fresh $(WORK)

## The lecture dashboard (8.6 scheme comparison + 17 §2 roofline) as a standalone page, offline.
## Voila keeps one kernel that has already run the notebook (preheated), so the page a lecturer
## opens has its figures without waiting for the kernel; the template loads plotly.js from the
## page's first bytes (tools/dashboard_assets.py links the installed copy beside it).
## tests/browser/lab_harness.py's VoilaServer starts the same command.
dashboard: $(STAMP)
	$(PY) tools/dashboard_assets.py >/dev/null
	JUPYTER_PATH=$(CURDIR)/dashboards/share/jupyter $(PY) -m voila dashboards/lecture.ipynb \
	  --template=lab-offline --Voila.ip=127.0.0.1 \
	  --VoilaConfiguration.preheat_kernel=True --VoilaConfiguration.default_pool_size=1 \
	  --VoilaConfiguration.extension_denylist=jupyterlab-jupytext \
	  --VoilaConfiguration.extension_denylist=@jupyter-notebook/lab-extension \
	  --VoilaConfiguration.extension_denylist=@jupyter/nbgrader

# One worker per core (WORKERS=N sets another count). One more was tried: on 2 cores it cut a
# re-run in a warm clone (pass 1 453 s with 3 workers) but not a fresh clone's run, where the
# lite build and the course's venv keep both cores busy (594 s with 3 against 487-580 s with
# 2), and with 4 workers a run was slower still (487 s warm).
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST := COMPANION_FAST=1 $(PY) -m pytest -n $(WORKERS) --dist loadfile -q
## Set everything up and run the whole test suite (unit, property, ledger, browser, notebooks
## via nbval), then the notebooks again under another CPU's code paths (tools/cpu_dispatch.py:
## NumPy's widest SIMD tier off, OpenBLAS's plain kernels, another hash seed).
test: $(STAMP)
	mkdir -p $(STATE)
	$(PY) tools/run_tests.py "$(PYTEST) --no-loadscope-reorder $(NBVAL) tests $(NOTEBOOK_DIRS)" \
	  "$(PYTEST) $(NBVAL) $(NOTEBOOK_DIRS)"

## Only the second notebook pass (ARGS: notebooks or folders; default all of them).
test-dispatch: $(STAMP)
	mkdir -p $(STATE)
	$(PY) tools/run_tests.py --second-only "$(PYTEST) $(NBVAL) $(or $(ARGS),$(NOTEBOOK_DIRS))"

## Unit tests only (no notebooks): the quick loop while editing companion/.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q tests

## Re-execute notebooks from their py:percent sources and store the outputs (never hand-edit).
execute: $(STAMP)
	COMPANION_FAST=1 $(PY) tools/execute_notebooks.py $(ARGS)

## Regenerate the students' exercises/ from solutions/.
exercises: $(STAMP)
	$(PY) tools/make_exercises.py

## Import all 22 solutions/ into a throwaway nbgrader course (own venv under /tmp) and autograde
## the solutions, nbgrader's blank release and exercises/: full marks, zero, zero.
NBGRADER_VENV ?= /tmp/nbgrader-venv
nbgrader-check: $(STAMP)
	NBGRADER_VENV=$(NBGRADER_VENV) tools/nbgrader_check.sh

## JupyterHub, nbgrader and configurable-http-proxy for the course check (created on first use).
course-env: $(STAMP)
	mkdir -p $(STATE)
	UV=$(VENV)/bin/uv tools/course_env.sh $(COURSE_ENV)

## A whole course through a real JupyterHub: release, fetch, work, submit, collect, autograde,
## feedback, with one instructor and two students (also part of `make test`; deploy/README.md).
course-check: course-env
	$(COURSE_ENV)/venv/bin/python tools/course_check.py --env $(COURSE_ENV) \
	  --summary artifacts/course-check/summary.json

## The static, offline book of every notebook (stored outputs, no kernel) in build/book/.
## A warning fails the build (a broken link, an output it cannot render).
BOOK_OUT      ?= build/book
BOOK_DOCTREES ?= build/book-doctrees
book: $(STAMP)
	rm -rf $(BOOK_OUT)
	$(VENV)/bin/sphinx-build -b html -q -W --keep-going -c book -d $(BOOK_DOCTREES) . $(BOOK_OUT)
	@echo "book: $(BOOK_OUT)/index.html"

## The whole companion as an offline JupyterLite site in build/lite/ (Pyodide kernel, nothing
## installed by the reader; serve the folder with any static web server; LITE_OUT: another
## folder). Its tools live in their own venv from lite/tools.lock; what the site serves is pinned
## in lite/artefacts.json.
LITE_TOOLS := $(STATE)/lite-tools
LITE_STAMP := $(LITE_TOOLS)/.installed
# One install at a time (two test files run make lite at once on a fresh clone); the second
# finds the stamp new once it holds the lock. The main venv's uv (requirements.lock pins it)
# installs the tools' lock, pip included, into a venv made without ensurepip's pip: 22 s with
# pip, 12 s once pip no longer byte-compiled, about 3 s now.
$(LITE_STAMP): lite/tools.lock | $(STAMP)
	mkdir -p $(STATE)
	$(PYTHON) tools/with_lock.py $(STATE)/lite-tools.lock sh -c '[ $@ -nt lite/tools.lock ] || { \
	  { test -x $(LITE_TOOLS)/bin/python || $(PYTHON) -m venv --without-pip $(LITE_TOOLS); } && \
	  $(VENV)/bin/uv pip install -q --python $(LITE_TOOLS)/bin/python --require-hashes \
	    --no-deps -r lite/tools.lock && touch $@; }'
lite-tools: $(LITE_STAMP)
LITE_OUT ?= build/lite
lite: $(LITE_STAMP)
	$(LITE_TOOLS)/bin/python tools/lite_build.py --out $(LITE_OUT)

## Recompile lite/tools.lock from lite/tools.in.
lite-lock:
	test -x $(LOCK_TOOLS)/bin/uv || { $(PYTHON) -m venv $(LOCK_TOOLS) && \
	  $(LOCK_TOOLS)/bin/pip install -q uv==$(UV_VERSION); }
	$(LOCK_TOOLS)/bin/uv pip compile --quiet lite/tools.in --universal --python-version 3.11.5 \
	  --generate-hashes --overrides lock-overrides.txt --custom-compile-command "make lite-lock" \
	  -o lite/tools.lock

## A PDF of the exercises with a chosen seed's data: make handout SEED=3 -> build/handout-seed3.pdf
SEED ?= 0
handout: $(STAMP)
	$(PY) tools/make_handout.py --seed $(SEED) --out build/handout-seed$(SEED).pdf

## Print the benchmark figures (nothing is asserted).
bench: $(STAMP)
	$(PY) benchmarks/run_all.py $(ARGS)

## Every browser test STRESS_N times in a row (default 20), one CPU burner per core running
## throughout (issue 26: no test passes or fails by chance). ARGS: test files or node ids.
STRESS_N ?= 20
stress: $(STAMP)
	mkdir -p $(STATE)
	COMPANION_FAST=1 $(PY) -m pytest -q -p no:xdist --repeat $(STRESS_N) --cpu-burners \
	  --junitxml=$(STATE)/stress.xml $(or $(ARGS),tests/browser); \
	  status=$$?; $(PY) tools/stress_summary.py $(STATE)/stress.xml; exit $$status

## One offline page with every stored figure: its PNG beside the live plotly figure
## (build/gallery/index.html); BEFORE=<git rev> adds that revision's PNGs beside them. Also
## every explorer panel in JupyterLab and the book's pages, as screenshots (SURFACES=0: not).
gallery: $(STAMP)
	$(PY) tools/make_gallery.py $(if $(BEFORE),--before $(BEFORE)) $(if $(filter 0,$(SURFACES)),,--surfaces)

clean:
	rm -rf .venv .venv-latest $(STATE)   # never $(WORK): a student's work stays
