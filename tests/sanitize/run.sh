#!/usr/bin/env bash
# `make test-sanitize`: the four C passes (trace/_scan.c, trace/_columns.c, analysis/whatif/_replay.c,
# views/_counters.c) built with AddressSanitizer and UndefinedBehaviorSanitizer (-fno-sanitize-recover: the first
# report fails the run), then the tests that drive them with hostile and fuzzed input: every hostile-corpus case, the
# scanner's piece cases and mutations, the extractor's cases, the replay and counter passes. The sanitized build goes
# to .sanitize/ (a copy of the package beside the regular build, which is left as it is).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
CC=${CC:-gcc}
OUT=.sanitize
rm -rf "$OUT" && mkdir -p "$OUT/pkg"
cp -r tb_plugin/kinetoscope "$OUT/pkg/kinetoscope"
find "$OUT/pkg" -name '*.so' -delete
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g"
CFLAGS="$FLAGS" LDFLAGS="-fsanitize=address,undefined" "$PY" setup.py -q build_ext --build-lib "$OUT/lib" --build-temp "$OUT/tmp" --force
for so in $(cd "$OUT/lib" && find . -name '*.so'); do cp "$OUT/lib/$so" "$OUT/pkg/$so"; done
built=$(find "$OUT/pkg" -name '*.so' | wc -l)
if [ "$built" -ne 4 ]; then echo "test-sanitize: $built of the 4 C passes built with the sanitizers" >&2; exit 1; fi
export LD_PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONMALLOC=malloc PYTHONPATH="$PWD/$OUT/pkg" KINETOSCOPE_SANITIZED=1
"$PY" - <<'PY'
import kinetoscope.trace.extractors as e, kinetoscope.analysis.whatif.replay as r, kinetoscope.views.counter_lanes as c
import os
for mod in (e._scan, e.accel, r._accel, c._accel):
    assert mod is not None and ".sanitize" in mod.__file__, mod
print("test-sanitize: the sanitized passes are the ones loaded")
PY
"$PY" -m pytest -q -p no:cacheprovider -x tests/test_hostile_corpus.py tests/test_fast_decode.py tests/test_columns_accel.py \
  tests/test_huge_spans.py tests/test_counter_lanes.py tests/test_hw_counters.py tests/test_whatif.py "$@"
