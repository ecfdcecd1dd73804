#!/usr/bin/env bash
# The H200 batch, part 1: re-measure every topic with the current code, and count the strided
# kernel's traffic with Nsight Compute. Run by the lead through the device tool:
#
#   bash benchmarks/h200/measure_batch.sh <git commit>      (repo root; wheels in .whl, shim in .devshim)
#
# Writes $OUT/<topic>.json (python -m widgets.measure), $OUT/memory_hierarchy_ncu.json and
# $OUT/measure.log. The tree there has no .git, so the commit comes in as an argument.
set -uo pipefail
COMMIT="${1:?usage: measure_batch.sh <git commit>}"
export GPUBOOK_GIT_COMMIT="$COMMIT" PYTHONUNBUFFERED=1
OUT="${OUT:?set OUT}"
{
  echo "# $(date -u +%FT%TZ) commit $COMMIT on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  python3 -m widgets.measure --out "$OUT"
  echo "# measure exit status: $?"
  OUT="$OUT" bash benchmarks/h200/memory_hierarchy_ncu.sh "$COMMIT"
  echo "# ncu exit status: $?"
} 2>&1 | tee "$OUT/measure.log"
