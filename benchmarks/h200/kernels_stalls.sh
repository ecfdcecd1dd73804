#!/usr/bin/env bash
# Why each rung of the kernels chapter's SGEMM ladder waits: Nsight Compute's warp states, shared-memory
# passes per load instruction and the SM clock, one profiled launch per rung on the H200.
#
#   bash benchmarks/h200/kernels_stalls.sh <git commit>      (from the repository root)
#
# Each CUDA-core rung at its fastest tile configuration in widgets/data/h200/kernels.json (the ladder's
# table), at M = N = K = 4096 (the ladder's size), compiled and launched by the chapter's own code
# (kernels_stalls_driver.py launch); ncu profiles the second of two launches, clocks left alone
# (--clock-control none, so the SM clock it records is the one the kernel ran at), caches flushed
# (the default). Writes $OUT/kernels_stalls.json (kernels_stalls_driver.py write: what each counter means).
# Needs torch, nvcc (or NVRTC) and ncu; installs nothing.
set -euo pipefail

COMMIT="${1:?usage: bash benchmarks/h200/kernels_stalls.sh <git commit>}"
OUT="${OUT:-widgets/data/h200}"
NCU="${NCU:-ncu}"
PY="${PYTHON:-python3}"
SIZE="${SIZE:-4096}"
LOGS="${LOGS:-}"                        # a .tgz path: keep ncu's logs and the launch files there
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DRIVER="$HERE/kernels_stalls_driver.py"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
command -v "$NCU" >/dev/null || { echo "ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

METRICS="$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import kernels_stalls_driver as d; print(",".join(d.METRICS))' "$HERE")"
OPTIONS="--clock-control none --section WarpStateStats --section SchedulerStats --metrics $METRICS --launch-skip 1 --launch-count 1 --csv --page raw --print-units base"
"$PY" "$DRIVER" plan --record "$ROOT/widgets/data/h200/kernels.json" > "$TMP/plan.txt"
while read -r rung config kernel; do
  echo "[ncu] $rung ($kernel)" >&2
  # shellcheck disable=SC2086
  "$NCU" $OPTIONS -k "regex:^${kernel}\$" --log-file "$TMP/$rung.csv" \
    "$PY" "$DRIVER" launch --rung "$rung" --config "$config" --m "$SIZE" --n "$SIZE" --k "$SIZE" --info "$TMP/$rung.info.json" \
    || echo "[ncu] $rung failed" >&2
done < "$TMP/plan.txt"
[ -n "$LOGS" ] && tar czf "$LOGS" -C "$TMP" . || true

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
DRIVER_VERSION="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)"
NCU_VERSION="$("$NCU" --version 2>/dev/null | tail -n1 || true)"
NVCC_VERSION="$( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | grep -i release | head -n1 || true)"
"$PY" "$DRIVER" write --tmp "$TMP" --plan "$TMP/plan.txt" --out "$OUT/kernels_stalls.json" --commit "$COMMIT" \
  --command "SIZE=$SIZE bash benchmarks/h200/kernels_stalls.sh $COMMIT" --ncu-options "$OPTIONS -k regex:^<kernel>\$" \
  --gpu "$GPU" --driver "$DRIVER_VERSION" --ncu "$NCU_VERSION" --nvcc "$NVCC_VERSION" --tree "${TREE:-clean at $COMMIT}"
