# Kinetoscope: every target sets up what it needs on a fresh machine (Debian, Python 3.9+, root for apt).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-v2
PORT ?= 6006
LOGDIR ?= samples/logs

.PHONY: install browser-deps test test-python test-js demo serve bench lint clean

install: $(STAMP)

# torch (a CPU build, exact pin) is for the samples scripts and their test only; it is not a runtime dependency.
$(STAMP): setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# Debian chromium and node + playwright-core drive the browser tests.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v node >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@if [ -f tests/browser/package.json ] && [ ! -d tests/browser/node_modules ]; then cd tests/browser && npm ci --no-audit --no-fund --silent; fi

test: install browser-deps test-js test-python

test-python: install
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

test-js:
	@if [ -d frontend/test ]; then node --test frontend/test/; fi

demo: install
	$(BIN)/tensorboard --logdir $(LOGDIR) --host 127.0.0.1 --port $(PORT) --load_fast false

serve: demo

# Peers (torch-tb-profiler, HTA) go into their own venv under .bench/; traces are built once and cached there.
BENCH_RUNS ?= 3
BENCH_MAX_REPEAT ?= 30
bench: install
	$(BIN)/python tests/bench/peers_env.py
	$(BIN)/python tests/bench/make_traces.py --max-repeat $(BENCH_MAX_REPEAT) > .bench/trace-list.txt
	$(BIN)/python tests/bench/run_bench.py $$(cat .bench/trace-list.txt) --runs $(BENCH_RUNS) --timeout 900 \
		--label "make bench" --markdown BENCHMARKS.md

lint: install
	$(BIN)/python -m ruff check tb_plugin tests samples
	@if [ -d frontend/test ]; then node --check frontend/index.js; fi

clean:
	rm -rf $(VENV) .bench test-artifacts build *.egg-info tb_plugin/*.egg-info
