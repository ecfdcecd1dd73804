# Two commands do all the set-up on a fresh clone:
#   make book   -- install what is needed (.venv, node_modules), build the HTML into _build/html
#   make test   -- install what is needed (also headless Chromium), run the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed

.PHONY: install book test bench chromium clean

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

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "The browser test needs Debian's chromium: run 'sudo apt-get install chromium'" >&2; exit 1; fi; }

test: install chromium
	$(PY) -m pytest -n 2 --dist loadfile -p no:cacheprovider -q \
	  tests chapters --nbval-lax --nbval-current-env \
	  --doctest-modules widgets/models widgets/units.py widgets/hardware.py

bench: install
	$(PY) tests/benchmark.py

clean:
	rm -rf _build
