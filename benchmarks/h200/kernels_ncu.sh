#!/usr/bin/env bash
# Count the L1 passes of the book's untiled SGEMM kernels with Nsight Compute on the H200.
#
#   bash benchmarks/h200/kernels_ncu.sh <git commit>      (from the repository root; six ncu runs, each a
#                                                         process start, a compile and about 10-20 replay passes)
#
# Profiles the kernels chapter's own rungs 1 and 2 (widgets/experiments/kernels_cuda.py: sgemm_naive and
# sgemm_coalesced, compiled and launched by widgets.experiments.kernels through kernels_ncu_driver.py) at
# M = N = 2048 and K = 4096, 4092, 4064: one launch each after a warm-up launch, clocks left alone
# (--clock-control none, as memory_hierarchy_ncu.sh; CLOCK_CONTROL=base locks them to base, ncu's default),
# caches flushed before the profiled launch (--cache-control all, the default), and writes
# $OUT/kernels_ncu.json with provenance and, per (rung, K), the raw counters and the passes below.
# The counts do not depend on the clock; the cycles and times do (sm__cycles_elapsed.avg.per_second
# records the SM clock ncu saw).
#
# Why M = N = 2048, not the ladder's 4096: the counts are divided by warps x K, and one warp's addresses
# in one step of k depend on K alone (lane r of sgemm_naive reads A at byte 4 K r, all lanes read one word
# of B), so M and N only set how many warps repeat the pattern; 2048 keeps the naive kernel's replay
# passes to about 0.1 s each (and matches the review's profile in kernels_review_ncu_2026-12-02/).
#
# Derivation (W = warps launched = blocks x 1024 / 32, every warp runs all K steps; M, N multiples of 32):
#   data-stage passes per warp per k = l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum / (W K)
#       where ncu has that counter; else (l1tex__data_pipe_lsu_wavefronts.sum
#       - l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum) / (W K), which also holds the one store of
#       C per thread (at most 32 passes per warp over the whole kernel: under 0.01 per warp per k).
#       The data stage reads the 32 banks of 4 B; lanes whose words share a bank take one pass each.
#   tag-stage passes per warp per k = l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum / (W K):
#       the wavefronts the tag stage (T) emits for global loads, one per cycle it spends resolving an
#       instruction's lines ("4 sets x 4 sectors per cycle", NVIDIA forum thread 273699/8).
#   requests (l1tex__t_requests_..._global_op_ld) and load instructions (smsp__inst_executed_op_global_ld)
#       per warp per k: 2 for both rungs (one load of A, one of B per k), a check that W K is the divisor.
#   SM cycles per warp per k = sm__cycles_elapsed.avg x SMs / (W K): the time per warp-step, to compare with
#       the larger of the two passes (the L1 pipe does about one pass per SM per cycle).
#   passes per SM cycle = count / (SMs x sm__cycles_elapsed.avg): near 1 for the stage that binds.
# widgets.models.kernels.ncu_global_load_passes reads the record and sets the model beside it.
# Needs torch, nvcc (or NVRTC) and ncu; installs nothing.
set -euo pipefail

COMMIT="${1:?usage: bash benchmarks/h200/kernels_ncu.sh <git commit>}"
OUT="${OUT:-widgets/data/h200}"
NCU="${NCU:-ncu}"
PY="${PYTHON:-python3}"
M="${M:-2048}"
N="${N:-2048}"
KS="${KS:-4096 4092 4064}"
RUNGS="${RUNGS:-naive coalesced}"
CLOCK_CONTROL="${CLOCK_CONTROL:-none}"
LOGS="${LOGS:-}"                        # a .tgz path: keep ncu's logs and the launch files there
TREE="${TREE:-}"                        # a note on the working tree (uncommitted edits), when git is not at hand
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DRIVER="$HERE/kernels_ncu_driver.py"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

command -v "$NCU" >/dev/null || { echo "ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

CORE="$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import kernels_ncu_driver as d; print(",".join(d.CORE))' "$HERE")"
EXTRA="$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import kernels_ncu_driver as d; print(",".join(d.EXTRA))' "$HERE")"

profile() {  # rung, K, metrics
  local rung="$1" k="$2" metrics="$3"
  rm -f "$TMP/${rung}_$k.csv" "$TMP/${rung}_$k.info.json"
  "$NCU" --clock-control "$CLOCK_CONTROL" --metrics "$metrics" -k "regex:^sgemm_${rung}\$" \
         --launch-skip 1 --launch-count 1 --csv --page raw --print-units base \
         --log-file "$TMP/${rung}_$k.csv" \
         "$PY" "$DRIVER" launch --rung "$rung" --m "$M" --n "$N" --k "$k" --info "$TMP/${rung}_$k.info.json"
}
has_core() {  # the log holds a header with every core counter
  "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import kernels_ncu_driver as d
v, _ = d.parse_ncu_csv(sys.argv[2], d.CORE); sys.exit(0 if all(v.get(m) is not None for m in d.CORE) else 1)' "$HERE" "$1" 2>/dev/null
}
first=1
for rung in $RUNGS; do
  for k in $KS; do
    echo "[ncu] $rung K=$k" >&2
    if profile "$rung" "$k" "$CORE,$EXTRA" && has_core "$TMP/${rung}_$k.csv"; then
      echo "core+extra" >"$TMP/${rung}_$k.attempt"
    else
      echo "[ncu] $rung K=$k: again with the core counters only" >&2
      cp "$TMP/${rung}_$k.csv" "$TMP/${rung}_$k.first.log" 2>/dev/null || true
      profile "$rung" "$k" "$CORE" || echo "[ncu] $rung K=$k failed" >&2
      echo "core" >"$TMP/${rung}_$k.attempt"
      if [ "$first" = 1 ] && ! has_core "$TMP/${rung}_$k.csv"; then
        echo "[ncu] no counters for the first kernel: ncu cannot read them here; stopping" >&2
        [ -n "$LOGS" ] && tar czf "$LOGS" -C "$TMP" . || true
        exit 3
      fi
    fi
    first=0
  done
done
[ -n "$LOGS" ] && tar czf "$LOGS" -C "$TMP" . || true

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
DRIVER_VERSION="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)"
NCU_VERSION="$("$NCU" --version 2>/dev/null | tail -n1 || true)"
NVCC_VERSION="$( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | grep -i release | head -n1 || true)"
if [ -z "$TREE" ] && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  DIRTY="$(git -C "$ROOT" status --porcelain --untracked-files=no | wc -l | tr -d ' ')"
  TREE="$([ "$DIRTY" = 0 ] && echo "clean at $COMMIT" || echo "$COMMIT with uncommitted edits in $DIRTY tracked files")"
fi

"$PY" "$DRIVER" write --tmp "$TMP" --out "$OUT/kernels_ncu.json" --commit "$COMMIT" --rungs "$RUNGS" --ks "$KS" \
  --command "M=$M N=$N KS='$KS' CLOCK_CONTROL=$CLOCK_CONTROL bash benchmarks/h200/kernels_ncu.sh $COMMIT" \
  --clock-control "$CLOCK_CONTROL" --gpu "$GPU" --driver "$DRIVER_VERSION" --ncu "$NCU_VERSION" --nvcc "$NVCC_VERSION" \
  --tree "$TREE"
