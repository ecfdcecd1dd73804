# Two commands do all the set-up on a fresh clone:
#   make book   -- install what is needed (.venv, node_modules), build the HTML into _build/html
#   make learner -- the same book without solutions or instructor notes, into _build/learner/html
#   make test   -- install what is needed (also headless Chromium), run the whole test suite
# While developing:
#   make unit   -- models, calculators, units, catalog, doctor and notebook checks, doctests (target < 60 s; no notebook run, no build)
#   make lint   -- ruff (pinned in requirements.txt, configured in pyproject.toml)
#   make bench  -- time a fresh clone's `make test` (writes benchmarks/fresh_clone_make_test.json)
VENV ?= .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed

# JupyterLab's settings for this environment (book/jupyterlab/overrides.json, as a package's file in
# overrides.d: a reader's own overrides.json and settings still win): every cell of a notebook rendered,
# not only those in view. jupyterlab-myst 2.7.0 takes a markdown cell's {eval} expressions from the cell
# as last rendered (its src/actions.ts); with JupyterLab's default windowing (contentVisibility), which
# renders only the cells in view, Run All left every number below the first screen as `prose.<key>`
# (tests/test_jupyterlab.py, run on that default, fails on them).
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/gpu-book.json

.PHONY: install book learner test unit lint bench bench-parts chromium doctor clean

install: $(STAMP) $(LAB_OVERRIDES) node_modules/.installed

# TORCH_INDEX: take torch from another index first, e.g. the CPU-only build on a laptop without a
# GPU (make install TORCH_INDEX=https://download.pytorch.org/whl/cpu), instead of the CUDA build the
# plain pin resolves to on Linux (a 6 GB environment against 2.8 GB, as measured for issue 14).
# The pin stays the one in requirements.txt.
TORCH_INDEX ?=
TORCH_PIN = $(shell sed -n 's/^\(torch==[^ #]*\).*/\1/p' requirements.txt)

# The packages are installed by uv (pinned in requirements.txt), from the sources pip is configured
# with here (tests/tools/uv_flags.py): a fresh requirements.txt took 12-17 s instead of pip's 36 s on
# this 2-core machine (measured for issue 13, caches empty). Like `pip --no-compile`, uv compiles no
# .pyc: imports compile only what they use (all of it: ~25 CPU s here).
UV_PIN = $(shell sed -n 's/^\(uv==[^ #]*\).*/\1/p' requirements.txt)
UV = $(VENV)/bin/uv pip install -q --python $(PY)

# PYTHON: the interpreter the venv is made from (3.11 or newer: numpy 2.4 needs it), e.g. PYTHON=python3.12
PYTHON ?= python3

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "$(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'); the book needs 3.11 or newer: make install PYTHON=python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(UV_PIN)"
	$(if $(TORCH_INDEX),$(UV) "$(TORCH_PIN)" --index-url $(TORCH_INDEX))
	$(UV) $$($(PY) tests/tools/uv_flags.py) -r requirements.txt
	$(UV) $$($(PY) tests/tools/uv_flags.py) --no-deps -e .
	touch $@

$(LAB_OVERRIDES): book/jupyterlab/overrides.json | $(STAMP)
	mkdir -p $(dir $@) && cp $< $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# Python caches what it compiles (.pyc) even where the environment says not to (PYTHONDONTWRITEBYTECODE,
# set on some machines, this one included): the packages are installed without .pyc (--no-compile
# above), so without the cache every process (each pytest worker, kernel, build, JupyterLab) would
# compile torch, plotly, sphinx... from source again: 2-3 CPU s more per kernel, and pytest would
# rewrite every test module's asserts in every worker (collection: 13 -> 7 CPU s each, measured here).
# The workers start together, so on a fresh clone each would compile the same modules: there the
# root conftest.py collects once before they start (caches_cold: 6 cold workers 108-111 -> 77 CPU s).
CACHE_PYC := PYTHONDONTWRITEBYTECODE=

book: install
	$(CACHE_PYC) $(JB) build . --all -W -n --keep-going
	@echo "HTML: _build/html/index.html"

# The learner edition: the book without exercise solutions or instructor notes (book/_ext/learner.py
# drops them; the instructor pages leave the table of contents), warnings as errors.
learner: install
	$(CACHE_PYC) $(PY) book/_ext/learner.py --out _build/learner

# Headless Chromium for the browser tests: Debian's chromium-headless-shell (the page without a
# browser around it: less CPU for the same pages than `chromium --headless=new`, and a smaller
# download; tests/headless.py picks the binary and says what was measured), installed when we are
# root (CI, containers); Debian's chromium where that package does not exist. A machine with
# `chromium` already uses that. Otherwise the browser tests skip and say why (tests/conftest.py).
chromium:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null || \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; \
	  else echo "note: no headless Chromium; the browser tests will be skipped (install it: sudo apt-get install chromium-headless-shell)" >&2; fi; }

DOCTESTS := --doctest-modules widgets/models widgets/units.py widgets/hardware.py widgets/doctor.py

# Everything, each chapter executed twice and only twice: once live (measuring, on the CPU here) by
# the JupyterLab test (Run All in a real JupyterLab, failing on any cell's traceback, then every control
# moved), or by nbval where that test cannot run (no Chromium: the root conftest.py,
# GPUBOOK_NBVAL_VIA_JUPYTERLAB=1), and once by the one book build (tests/book_build.py, shared by the
# tests through tests/conftest.py::built_book) in BUILD mode (GPUBOOK_BUILD=1, no measurement). The build starts in the background as the
# run starts (GPUBOOK_BUILD_EARLY=1, the root conftest.py) and executes the notebooks in parallel,
# one per process (book/_ext/parallel_execute.py; GPUBOOK_BUILD_JOBS, default the CPU count).
# CI (CI=true) refuses to skip the browser tests.
# Workers: twice the cores, and at least 6: the two JupyterLab chapter queues (JUPYTERLAB_STREAMS in
# the root conftest.py) each hold a worker until their chapters are done, and the browser tests mostly
# wait on Chromium, a kernel or the build, so more workers than cores keep both cores busy (one run
# each here, issue 13: 4 workers 509 s, 6 workers 445 s). The root conftest.py's scheduler keeps
# each file on one worker except the long independent ones (SPREAD_FILES), longest first.
TEST_WORKERS ?= $(shell n=$$(( $$(nproc 2>/dev/null || echo 2) * 2 )); [ $$n -lt 6 ] && n=6; echo $$n)

# One CPU thread per process for torch's, OpenBLAS's and MKL's thread pools: the test workers, the
# build's and JupyterLab's kernels and Chromium already outnumber the cores, and a pool of threads per
# process, each spinning while it waits for the others, burnt CPU the other processes needed (a
# torch-heavy slice of the tests: 80 -> 57 CPU s, 44 -> 32 s on 2 cores, measured for issue 13). The
# chapters' live runs in JupyterLab then measure this machine with one thread, as the serving chapter
# already does on a CPU.
TEST_THREADS := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

test: install chromium
	$(CACHE_PYC) $(TEST_THREADS) GPUBOOK_REQUIRE_BROWSER=$${CI:+1} GPUBOOK_BUILD_EARLY=1 GPUBOOK_NBVAL_VIA_JUPYTERLAB=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider -q \
	  tests chapters --nbval-lax --nbval-current-env $(DOCTESTS)

unit: install
	$(CACHE_PYC) $(PY) -m pytest -n 2 -p no:cacheprovider -q -m "not slow and not build and not browser" tests $(DOCTESTS)

lint: install
	$(VENV)/bin/ruff check .

doctor: install
	$(PY) -m widgets.doctor

# Benchmarks, not tests. `bench` clones this repository's HEAD into a temporary folder and times
# `make install` and `make test` there; `bench-parts` times a clean book build and nbval here.
bench: install
	$(PY) tests/benchmark.py fresh-clone

bench-parts: install
	$(PY) tests/benchmark.py build-nbval

clean:
	rm -rf _build
