# chesszero developer entry points. Every target creates/reuses the project
# venv itself, so a fresh clone needs only `make run` or `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PRESET ?= cpu
PYTEST_ARGS ?=
CPP_SOURCES := $(shell find cpp -name '*.cpp' -o -name '*.h') CMakeLists.txt pyproject.toml
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup build web system-deps test killtest sanitize run demo bench learning lint clean mlflow-ui serve reports
export PREFECT_HOME ?= $(CURDIR)/.prefect

all: test

$(VENV)/.deps-stamp: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q scikit-build-core pybind11 'torch==2.13.0'
	touch $@

# The editable install maps each Python module to its file, so adding, moving or
# removing a module needs a reinstall: the stamp names a hash of the module list.
MODULES_STAMP := $(VENV)/.modules-$(shell find src -name '*.py' | sort | md5sum | cut -c1-12)

$(MODULES_STAMP): $(VENV)/.deps-stamp
	rm -f $(VENV)/.modules-*
	touch $@

# Editable install compiles the native core (portable baseline build).
$(VENV)/.build-stamp: $(VENV)/.deps-stamp $(CPP_SOURCES) $(MODULES_STAMP)
	$(PIP) install -q --no-build-isolation -e '.[learn,campaign,web,dev]'
	touch $@

setup: build system-deps
build: $(VENV)/.build-stamp

# Debian packages: Stockfish 15.1 for ladder matches and reference benchmarks;
# Node.js and npm to build the web page; Chromium for its browser test.
system-deps:
	@missing=""; \
	  [ -x /usr/games/stockfish ] || missing="$$missing stockfish"; \
	  command -v node >/dev/null && command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	  [ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	  if [ -n "$$missing" ]; then \
	    $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; fi

# The play page (`chesszero web`): npm installs the pinned front-end packages
# (web/package-lock.json) and esbuild bundles them into the Python package's
# static files (src/chesszero/web/static/dist, not in git; wheels include it),
# plus web/build/encoder-check.mjs for the encoder test.
WEB_DIST := src/chesszero/web/static/dist/app.js
WEB_SOURCES := $(shell find web/src -type f) web/package.json web/package-lock.json web/build.mjs
web: $(WEB_DIST)
$(WEB_DIST): $(WEB_SOURCES)
	cd web && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent

test: setup web
	$(PY) -m pytest -q --durations=15 $(PYTEST_ARGS)

# Kill -9 anywhere (tests/test_campaign_kill.py; `make test` runs it at seed 15
# with 10 kills): a random seed (printed; KILLTEST_SEED=N replays it) and more
# kills over more generations.
KILLTEST_KILLS ?= 16
KILLTEST_GENERATIONS ?= 4
killtest: setup
	KILLTEST_SEED=$${KILLTEST_SEED:-$$RANDOM} KILLTEST_KILLS=$(KILLTEST_KILLS) \
	  KILLTEST_GENERATIONS=$(KILLTEST_GENERATIONS) $(PY) -m pytest -q -s -p no:cacheprovider tests/test_campaign_kill.py

# Debug build of the native core with ASan + UBSan (asserts on) in build/sanitize
# (the installed core is left alone), then the native-core, bindings, search and
# self-play tests against it: the sanitized module is loaded as chesszero._core
# before the tests import it, with the ASan runtime preloaded into Python, and
# libstdc++ too (ASan intercepts C++ throws only if it is there at start). Leak
# checks are off (CPython keeps memory until exit). Any report fails the run.
SAN_DIR := build/sanitize
SAN_TESTS ?= tests/test_core_*.py tests/test_bindings_threads.py tests/test_search*.py tests/test_selfplay*.py tests/test_nnue_core.py tests/test_alphabeta.py
sanitize: build
	cmake -S . -B $(SAN_DIR) -G Ninja -DCHESSZERO_SANITIZE=ON -DPython_EXECUTABLE=$(CURDIR)/$(PY) \
	  -Dpybind11_DIR="$$($(PY) -m pybind11 --cmakedir)"
	cmake --build $(SAN_DIR) --target _core
	LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libstdc++.so)" \
	  ASAN_OPTIONS=detect_leaks=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 $(PY) -c 'import glob, importlib.util as u, sys; \
	    spec = u.spec_from_file_location("chesszero._core", glob.glob(sys.argv[1])[0]); \
	    m = u.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m); \
	    print("native core:", m.__file__); import pytest; sys.exit(pytest.main(sys.argv[2:]))' \
	  '$(SAN_DIR)/_core*.so' -q -p no:cacheprovider --capture=sys $(PYTEST_ARGS) $(SAN_TESTS)

# The main job: a campaign of the $(PRESET) preset (resumes if interrupted).
run: setup
	$(PY) -m chesszero campaign run --preset $(PRESET)

demo: build
	$(PY) -m chesszero demo

# STRICT=1: exit non-zero when a benchmark row misses its target (benchmarks/targets.py).
STRICT ?=
bench: setup
	$(PY) benchmarks/run_all.py --out reports/bench $(if $(filter 1 yes true,$(STRICT)),--strict)

# The learning benchmark (hours; not part of `bench`): the cpu preset from random
# weights for HOURS of campaign time, a final evaluation, and the learning curve in
# reports/learning/learning-$(HOURS)h/ (`dvc repro learning-figure` redraws it).
# LEARNING_ARGS adds options, e.g. LEARNING_ARGS='--no-prefect --set search.root=gumbel' (an ablation).
HOURS ?= 2
LEARNING_ARGS ?=
learning: setup
	$(PY) -m chesszero bench --only learning --hours $(HOURS) --name learning-$(HOURS)h $(LEARNING_ARGS)

# MLflow UI on the project's store: http://127.0.0.1:5000
mlflow-ui: build
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db --host 127.0.0.1 --port 5000

# Prefect deployments final-recipe/{smoke,cpu,paper}; needs `prefect server start` and PREFECT_API_URL.
serve: build
	$(PY) flows/serve.py

# Figures and tables from the MLflow store (after a campaign).
reports: build
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/dvc repro figures tables

lint: build
	$(VENV)/bin/ruff check src tests benchmarks flows scripts reports

clean:
	rm -rf build $(VENV) .pytest_cache web/node_modules web/build src/chesszero/web/static/dist
