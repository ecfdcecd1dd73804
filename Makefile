# Two commands do all the set-up on a fresh clone:
#   make book   -- install what is needed (.venv, node_modules), build the HTML into _build/html
#   make test   -- install what is needed (also headless Chromium), run the whole test suite
# While developing:
#   make unit   -- models, calculators, units, catalog, doctor and notebook checks, doctests (< 60 s; no notebook, no build)
#   make lint   -- ruff (pinned in requirements.txt, configured in pyproject.toml)
#   make bench  -- time a fresh clone's `make test` (writes benchmarks/fresh_clone_make_test.json)
VENV ?= .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed

.PHONY: install book test unit lint bench bench-parts chromium doctor clean

install: $(STAMP) node_modules/.installed

$(STAMP): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

book: install
	$(JB) build . --all -W -n --keep-going
	@echo "HTML: _build/html/index.html"

# Headless Chromium for the browser tests: installed when we are root (CI, containers); otherwise
# the browser tests skip and say why (tests/conftest.py).
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: no chromium; the browser tests will be skipped (install it: sudo apt-get install chromium)" >&2; fi; }

DOCTESTS := --doctest-modules widgets/models widgets/units.py widgets/hardware.py widgets/doctor.py

# Everything, each chapter executed twice and only twice: nbval runs it live (measuring, on the CPU
# here), the one book build (tests/conftest.py::built_book) runs it in BUILD mode (GPUBOOK_BUILD=1,
# no measurement). CI (CI=true) refuses to skip the browser tests.
test: install chromium
	GPUBOOK_REQUIRE_BROWSER=$${CI:+1} $(PY) -m pytest -n 2 --dist loadfile -p no:cacheprovider -q \
	  tests chapters --nbval-lax --nbval-current-env $(DOCTESTS)

unit: install
	$(PY) -m pytest -n 2 -p no:cacheprovider -q -m "not slow and not build and not browser" tests $(DOCTESTS)

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
