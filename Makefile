# Kinetoscope: every target sets up what it needs on a fresh machine (Debian, Python 3.9+, root for apt).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-v5
ACCEL_SRC := tb_plugin/kinetoscope/trace/_columns.c tb_plugin/kinetoscope/trace/_scan.c \
	tb_plugin/kinetoscope/analysis/whatif/_replay.c tb_plugin/kinetoscope/views/_counters.c
ACCEL := $(VENV)/.columns-built
PORT ?= 6006
LOGDIR ?= samples/logs

.PHONY: install install-min browser-deps test test-min test-sanitize test-python test-js demo serve bench loadtest lint clean

install: $(STAMP) $(ACCEL)

# torch (a CPU build, exact pin) is for the samples scripts and their test only; it is not a runtime dependency.
# HINTS: floors for the resolver only (the newest releases it settles on; see the file).
HINTS := tests/resolve-hints.txt
$(STAMP): setup.py $(HINTS)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c $(HINTS) -e '.[test,test-cloud]'
	touch $@

# The C column extractor is compiled by the editable install; rebuild it when its source changes.
$(ACCEL): $(ACCEL_SRC) $(STAMP)
	$(BIN)/pip install -q --no-deps -e .
	@$(BIN)/python -c "import kinetoscope.trace.extractors as b; b.ACCELERATED or print('warning: no C compiler? decoding runs on the pure-Python extractor')"
	touch $@

# Debian chromium and node + playwright-core drive the browser tests; Azurite (tests/cloud) is the Azure Blob emulator.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v node >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@if [ -f tests/browser/package.json ] && [ ! -d tests/browser/node_modules ]; then cd tests/browser && npm ci --no-audit --no-fund --silent; fi
	@if [ -f tests/cloud/package.json ] && [ ! -d tests/cloud/node_modules ]; then cd tests/cloud && npm ci --no-audit --no-fund --silent; fi

test: install browser-deps test-js test-python

# The suite runs in PYTEST_WORKERS processes (pytest-xdist): the cores this process may use, at most 4 (several tests
# start servers, browsers or decode threads of their own). PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST = -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS)

test-python: install
	$(BIN)/python $(PYTEST) tests

test-js:
	@if [ -d frontend/test ]; then node --test frontend/test/; fi

# The C passes under AddressSanitizer and UndefinedBehaviorSanitizer, driven by the hostile and fuzzed inputs
# (tests/sanitize/run.sh; the sanitized build goes to .sanitize/, the regular one is left as it is).
test-sanitize: install
	PYTHON=$(BIN)/python tests/sanitize/run.sh

# The declared minimums: a second venv on the oldest Python setup.py allows, every floor of setup.py
# (install_requires and the test extra) pinned exactly by tests/min-versions.txt, no torch; the suite less the
# browser checks. PYMIN: the first python3.9 on PATH that runs (a pyenv shim may not), else pyenv's own.
PYMIN_VERSION := 3.9
PY_IS_MIN = $(shell "$(1)" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null | grep -qx '$(PYMIN_VERSION)' && echo yes)
PYMIN ?= $(firstword $(foreach p,$(shell command -v python$(PYMIN_VERSION) 2>/dev/null) \
	$(wildcard /root/.pyenv/versions/$(PYMIN_VERSION).*/bin/python$(PYMIN_VERSION)),$(if $(call PY_IS_MIN,$(p)),$(p))))
VENV_MIN := .venv-min
MIN_PINS := tests/min-versions.txt
MIN_STAMP := $(VENV_MIN)/.installed-v1
MIN_ACCEL := $(VENV_MIN)/.columns-built

install-min: $(MIN_STAMP) $(MIN_ACCEL)

$(MIN_STAMP): setup.py $(MIN_PINS)
	@if [ -z "$(PYMIN)" ] || [ -z "$(call PY_IS_MIN,$(PYMIN))" ]; then \
		echo "make test-min: no working Python $(PYMIN_VERSION) (the python_requires floor): tried PYMIN='$(PYMIN)', python$(PYMIN_VERSION) on PATH and /root/.pyenv/versions/$(PYMIN_VERSION).*; install one or pass PYMIN=/path/to/python$(PYMIN_VERSION)" >&2; \
		exit 1; fi
	rm -rf $(VENV_MIN)
	$(PYMIN) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/pip install -q --upgrade pip
	$(VENV_MIN)/bin/pip install -q --use-pep517 -c $(MIN_PINS) -e '.[test]'
	touch $@

$(MIN_ACCEL): $(ACCEL_SRC) $(MIN_STAMP)
	$(VENV_MIN)/bin/pip install -q --use-pep517 --no-deps -e .
	touch $@

test-min: install-min
	KINETOSCOPE_MIN_VERSIONS=1 $(VENV_MIN)/bin/python $(PYTEST) tests --ignore=tests/test_browser.py

demo: install
	$(BIN)/tensorboard --logdir $(LOGDIR) --host 127.0.0.1 --port $(PORT) --load_fast false

serve: demo

# Peers (torch-tb-profiler, HTA) go into their own venv under .bench/; traces are built once and cached there.
# Three stages, each writing its own results: 1x and 10x (every tool), 30x plain (every tool, msgspec floor),
# 30x gzipped (Kinetoscope and the floor; the peers take minutes per run there). BENCHMARKS.md joins them
# with the browser frame-time benchmark.
BENCH_RUNS ?= 3
RUN_BENCH := $(BIN)/python tests/bench/run_bench.py --runs $(BENCH_RUNS) --timeout 900 --no-setup
T := .bench/traces
bench: install browser-deps
	$(BIN)/python tests/bench/peers_env.py
	$(BIN)/python tests/bench/make_traces.py --max-repeat 90 > .bench/trace-list.txt
	$(RUN_BENCH) $(T)/resnet50_nw0_x1.pt.trace.json.gz $(T)/trace_diff_test_x1.pt.trace.json.gz \
		$(T)/synthetic_mixed_x1.pt.trace.json.gz $(T)/resnet50_nw0_x10.pt.trace.json $(T)/resnet50_nw0_x10.pt.trace.json.gz \
		--label "make bench (1x and 10x traces)" --out .bench/results-stage1.json --markdown .bench/stage1.md
	$(RUN_BENCH) $(T)/resnet50_nw0_x30.pt.trace.json --floor-decoders msgspec \
		--label "make bench (30x trace, about 0.9 GB)" --out .bench/results-stage2.json --markdown .bench/stage2.md
	$(RUN_BENCH) $(T)/resnet50_nw0_x30.pt.trace.json.gz --floor-decoders msgspec --tools kinetoscope,kinetoscope_w1,kinetoscope_warm,routes,floor \
		--label "make bench (30x gzipped: Kinetoscope and the floor)" --out .bench/results-stage3.json --markdown .bench/stage3.md
	$(RUN_BENCH) $(T)/resnet50_nw0_x90.pt.trace.json --tools kinetoscope,kinetoscope_w1,tbprof,hta \
		--label "make bench (90x trace, GB-scale: Kinetoscope on the cores and decoded serially; the peers where they finish)" \
		--out .bench/results-stage4.json --markdown .bench/stage4.md
	$(BIN)/python tests/bench/whole_command.py --scaled 30 $(T)/x30_indented.pt.trace.json --scaled 10 $(T)/x10_indented.pt.trace.json \
		--gzip --runs 5 --hta $(T)/x10_indented.pt.trace.json --out .bench/whole.md
	$(BIN)/python tests/bench/decode_rate.py $(T)/resnet50_nw0_x10.pt.trace.json $(T)/resnet50_nw0_x10.pt.trace.json.gz \
		$(T)/resnet50_nw0_x30.pt.trace.json $(T)/resnet50_nw0_x90.pt.trace.json --runs 3 --also-pure --workers 1,2 > .bench/decode.md
	$(BIN)/python tests/browser/bench_frames.py --runs 3 | tail -1 > .bench/frames.txt
	$(BIN)/python tests/bench/ranks_bench.py --out .bench/ranks.md > /dev/null
	$(BIN)/python tests/bench/first_lanes.py $(T)/resnet50_nw0_x10.pt.trace.json.gz $(T)/resnet50_nw0_x30.pt.trace.json.gz \
		--runs 3 --out .bench/first_lanes.md > /dev/null
	$(BIN)/python tests/bench/remote_bench.py $(T)/resnet50_nw0_x10.pt.trace.json.gz $(T)/resnet50_nw0_x10.pt.trace.json \
		--runs 3 > .bench/remote.md
	cd tests/bench && PYTHONPATH=../../tb_plugin ../../$(BIN)/python index_bench.py --repeat 3 --markdown ../../.bench/index.md > /dev/null
	$(BIN)/python tests/bench/tables_bench.py --out .bench/tables.md > /dev/null
	PYTHONPATH=tb_plugin $(BIN)/python tests/bench/compare_bench.py --runs 3 --markdown .bench/compare.md > /dev/null
	$(BIN)/python tests/bench/restart_bench.py $(T)/x10_indented.pt.trace.json --runs 3 > .bench/restart.md
	$(BIN)/python tests/bench/assemble.py .bench/stage1.md .bench/stage2.md .bench/stage3.md .bench/stage4.md \
		--decode .bench/decode.md --frames .bench/frames.txt --loadtest .bench/loadtest.md --ranks .bench/ranks.md --first-lanes .bench/first_lanes.md \
		--tables .bench/tables.md \
		--section "The whole command, as a user times it (kinetoscope report, cold and warm)=.bench/whole.md" \
		--section "A restarted TensorBoard: the first answer for a trace it analysed before=.bench/restart.md" \
		--section "Remote logdirs: time to first lanes from S3 (moto on 127.0.0.1) and from local disk=.bench/remote.md" \
		--section "Shareable index and Dask scale-out (kinetoscope index)=.bench/index.md" \
		--section "Comparing two runs (kinetoscope diff, the compare route)=.bench/compare.md" \
		--keep BENCHMARKS.md > .bench/BENCHMARKS.md.new && mv .bench/BENCHMARKS.md.new BENCHMARKS.md

# 32 clients for 60 s against a real TensorBoard on 127.0.0.1 while a cold logdir (samples, ../shared/traces,
# hostile files) loads; `make bench` copies the result (.bench/loadtest.md) into BENCHMARKS.md.
loadtest: install
	@mkdir -p .bench
	$(BIN)/python tests/bench/loadtest.py --clients 32 --seconds 60 --out .bench/loadtest.md

lint: install
	$(BIN)/python -m ruff check tb_plugin tests samples
	@if [ -d frontend/test ]; then node --check frontend/index.js; fi

clean:
	rm -rf $(VENV) $(VENV_MIN) .bench test-artifacts build *.egg-info tb_plugin/*.egg-info tb_plugin/kinetoscope/trace/_columns*.so tb_plugin/kinetoscope/trace/_scan*.so
