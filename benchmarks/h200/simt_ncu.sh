#!/usr/bin/env bash
# Warp stall reasons of the SIMT chapter's reduction kernels, from Nsight Compute, on the H200.
#
#   bash benchmarks/h200/simt_ncu.sh <git commit>      (from the repository root; about 1-2 minutes)
#
# Profiles four kernels of widgets/experiments/simt_warp.py (one atomic per thread, the
# shared-memory tree, warp shuffles, grid-stride) with the WarpStateStats and SchedulerStats
# sections plus every smsp__average_warps_issue_stalled_*_per_issue_active metric (warps stalled
# for each reason per instruction issued), one launch each after a warm-up launch, clocks left
# alone (--clock-control none), and writes $OUT/simt_ncu.json with provenance. The chapter draws
# it as a bar chart. Needs torch, nvcc (or NVRTC) and ncu; installs nothing.
set -euo pipefail

COMMIT="${1:?usage: bash benchmarks/h200/simt_ncu.sh <git commit>}"
OUT="${OUT:-widgets/data/h200}"
NCU="${NCU:-ncu}"
PY="${PYTHON:-python3}"
N_ELEMS="${N_ELEMS:-67108864}"         # 256 MiB of floats (the atomic-per-thread kernel: its first 16 M)
KERNELS="${KERNELS:-reduce_atomic_thread reduce_smem_tree reduce_shfl_block reduce_grid_stride}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

command -v "$NCU" >/dev/null || { echo "ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }

STALL_REGEX='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
EXTRA='smsp__average_warp_latency_per_inst_issued.ratio,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,gpu__time_duration.sum'
# the stall reasons by name (every one exists from Volta to Hopper), for an ncu without regex: metrics
REASONS="barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle membar mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait"
NAMED="$(for r in $REASONS; do printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$r"; done)"
profile() {  # kernel, extra ncu arguments...
  local k="$1"; shift
  "$NCU" --clock-control none --section WarpStateStats --section SchedulerStats "$@" \
         -k "regex:^$k\$" --launch-skip 1 --launch-count 1 \
         --csv --page raw --print-units base --log-file "$TMP/$k.csv" \
         "$PY" "$HERE/simt_ncu_driver.py" --kernel "$k" --n-elems "$N_ELEMS"
}
for k in $KERNELS; do
  echo "[ncu] $k" >&2
  profile "$k" --metrics "$STALL_REGEX,$EXTRA" \
    || { echo "[ncu] $k: retry with the stall metrics by name" >&2; profile "$k" --metrics "$NAMED$EXTRA"; } \
    || { echo "[ncu] $k: retry with the two sections only" >&2; profile "$k"; } \
    || echo "[ncu] $k failed" >&2
done

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)"
NCU_VERSION="$("$NCU" --version 2>/dev/null | tail -n1 || true)"

"$PY" - "$TMP" "$OUT/simt_ncu.json" "$COMMIT" "$GPU" "$DRIVER" "$NCU_VERSION" "$N_ELEMS" "$KERNELS" <<'PYEOF'
import csv, datetime, json, os, re, sys

tmp, out, commit, gpu, driver, ncu_version, n_elems, kernels = sys.argv[1:9]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
KEEP = ("smsp__average_warp_latency_per_inst_issued.ratio", "smsp__issue_active.avg.per_cycle_active",
        "smsp__warps_active.avg.per_cycle_active", "smsp__warps_eligible.avg.per_cycle_active", "gpu__time_duration.sum")


def number(text):
    text = (text or "").strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def parse(path):
    """(stall reason -> warps stalled per issued instruction, other metrics, error or None)."""
    if not os.path.exists(path):
        return {}, {}, "ncu wrote no log"
    text = open(path).read()
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if head is None or len(rows) < head + 3:
        return {}, {}, "no counter table in ncu's output: " + text[-1500:]
    header, values = rows[head], rows[head + 2]   # wide layout: header, units, one row per launch
    stalls, other = {}, {}
    for name, value in zip(header, values):
        m = STALL.match(name)
        if m and not m.group(1).endswith("_not_issued"):
            v = number(value)
            if v is not None:
                stalls[m.group(1)] = v
        elif name in KEEP:
            other[name] = number(value)
    return stalls, other, None if stalls else "no stall metric in ncu's output"


points = []
for k in kernels.split():
    stalls, other, err = parse(os.path.join(tmp, f"{k}.csv"))
    points.append({"kernel": k, "stalls_per_issued_instruction": dict(sorted(stalls.items(), key=lambda kv: -kv[1])),
                   "metrics": other, "error": err})
record = {
    "topic": "simt_ncu",
    "provenance": {
        "gpu": gpu or None, "driver": driver or None, "ncu": ncu_version or None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "command": f"bash benchmarks/h200/simt_ncu.sh {commit}",
        "ncu_options": "--clock-control none --section WarpStateStats --section SchedulerStats "
                       "--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,... --launch-skip 1 --launch-count 1",
        "kernels": "widgets/experiments/simt_warp.py REDUCE_SOURCE, 256 threads per block",
        "n_elems": int(n_elems),
        "n_elems_note": "every kernel sums n_elems float32 0/1 values, except reduce_atomic_thread: only the first "
                        "simt_warp.ATOMIC_THREAD_ELEMS (16,777,216) (simt_ncu_driver.py)",
    },
    "metric": "smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio: warps stalled for <reason> per instruction issued",
    "points": points,
}
with open(out, "w") as f:
    json.dump(record, f, indent=1, allow_nan=False)
    f.write("\n")
for p in points:
    top = list(p["stalls_per_issued_instruction"].items())[:3]
    print(f"{p['kernel']}: {top} {p['error'] or ''}")
print(f"wrote {out}")
PYEOF
