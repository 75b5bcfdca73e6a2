#!/usr/bin/env bash
# Regenerates samples/logs/ and samples/truth/. Run from anywhere; PYTHON overrides the interpreter.
# The synthetic runs are deterministic (byte-identical on every run); the torch213_cpu
# recordings are real profiles and differ in every run (timings, pid, file names).
# --synthetic-only keeps the committed torch213_cpu recordings (no torch needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}

rm -rf samples/logs/synthetic samples/truth
for scenario in dataloader launch sync host compute mixed cpu_only xss \
    graph_replay polls repeated_steps cpu_dataloader nccl_exposed; do
  "$PY" samples/synth "samples/logs/synthetic/$scenario" --scenario "$scenario" --spans 2 --gzip \
    --truth "samples/truth/$scenario.json"
done
"$PY" samples/synth samples/logs/synthetic/mixed_2021 --scenario mixed --era 2021 --spans 2 --gzip \
  --truth samples/truth/mixed_2021.json
rm -rf samples/logs/synthetic_ranks
"$PY" samples/synth/multirank.py samples/logs/synthetic_ranks/nccl_straggler --ranks 4 --steps 5 --straggler 2 --gzip \
  --truth samples/truth/ranks/nccl_straggler.json
"$PY" samples/synth/multirank.py samples/logs/synthetic_ranks/nccl_missing_rank --ranks 4 --steps 5 --missing 3 \
  --no-overlap --gzip --truth samples/truth/ranks/nccl_missing_rank.json
"$PY" samples/synth/groups.py samples/logs/synthetic_ranks/fsdp_tp --steps 3 --tp-late-ms 2 --gzip \
  --truth samples/truth/ranks/fsdp_tp.json
rm -rf samples/logs/synthetic_counters
"$PY" samples/synth/pm_sampling.py samples/logs/synthetic_counters/pm_sampling --steps 4 --gzip \
  --truth samples/truth/counters/pm_sampling.json
if [[ "${1:-}" == "--synthetic-only" ]]; then
  exit 0
fi
rm -rf samples/logs/torch213_cpu
"$PY" samples/record_profile.py samples/logs/torch213_cpu/stall --num-workers 0 --item-delay-ms 25 --gzip --device cpu
"$PY" samples/record_profile.py samples/logs/torch213_cpu/workers2 --num-workers 2 --item-delay-ms 25 --gzip --device cpu
rm -rf samples/logs/ddp_gloo_4 samples/logs/ddp_gloo_4_straggler samples/logs/ddp_gloo_2_straggler
"$PY" samples/record_distributed.py samples/logs/ddp_gloo_4
"$PY" samples/record_distributed.py samples/logs/ddp_gloo_4_straggler --slow-rank 2
"$PY" samples/record_distributed.py samples/logs/ddp_gloo_2_straggler --ranks 2 --slow-rank 1
