#!/usr/bin/env bash
# Count the strided-read kernel's memory traffic with Nsight Compute on the H200.
#
#   bash benchmarks/h200/memory_hierarchy_ncu.sh <git commit>      (from the repository root)
#
# Profiles widgets.experiments.memory_hierarchy_kernels.strided_read_kernel (the kernel of the
# chapter's strided experiment, BLOCK 4096, 8 warps) at strides 1, 2, 4, 8, 16, 32 and 64, one
# launch per stride after a warm-up launch, with clocks left alone (--clock-control none) and
# caches flushed before the profiled launch (ncu's default --cache-control all), and writes
# $OUT/memory_hierarchy_ncu.json: provenance (gpu, driver, ncu version, date, commit, command)
# and, per stride, the counters below and the bytes per requested byte. The chapter compares it
# with the sector model through widgets.models.memory_hierarchy_records.ncu_comparison.
# Needs torch, triton and ncu; installs nothing.
set -euo pipefail

COMMIT="${1:?usage: bash benchmarks/h200/memory_hierarchy_ncu.sh <git commit>}"
OUT="${OUT:-benchmarks/h200}"
NCU="${NCU:-ncu}"
PY="${PYTHON:-python3}"
N_ELEMS="${N_ELEMS:-16777216}"          # 64 MiB of floats requested at every stride
STRIDES="${STRIDES:-1 2 4 8 16 32 64}"
NCU_PAGE="${NCU_PAGE:-details}"        # details: a CSV row per metric; raw: one wide row (both parsed)
METRICS="dram__sectors_read.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors.sum"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

command -v "$NCU" >/dev/null || { echo "ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }

for s in $STRIDES; do
  echo "[ncu] stride $s" >&2
  "$NCU" --clock-control none --metrics "$METRICS" -k regex:strided_read_kernel \
         --launch-skip 1 --launch-count 1 --csv --page "$NCU_PAGE" --print-units base \
         --log-file "$TMP/stride_$s.csv" \
         "$PY" "$HERE/memory_hierarchy_ncu_driver.py" --stride "$s" --n-elems "$N_ELEMS"
done

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)"
NCU_VERSION="$("$NCU" --version 2>/dev/null | tail -n1 || true)"

"$PY" - "$TMP" "$OUT/memory_hierarchy_ncu.json" "$COMMIT" "$GPU" "$DRIVER" "$NCU_VERSION" "$N_ELEMS" "$STRIDES" "$METRICS" <<'PYEOF'
import csv, datetime, json, math, os, sys

tmp, out, commit, gpu, driver, ncu_version, n_elems, strides, metrics = sys.argv[1:10]
metrics = metrics.split(",")
SCALE = {"byte": 1, "sector": 1, "": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}


def number(text):
    text = text.strip().replace(",", "")
    return float(text) if text not in ("", "n/a") else None


def parse(path):
    """Counter values from ncu's CSV (wide 'raw' page, or the long 'details' layout)."""
    text = open(path).read()
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r), None)
    if head is None or len(rows) < head + 2:
        sys.exit(f"ncu produced no counter table in {path} (permissions? wrong kernel name?):\n{text[-2000:]}")
    header = rows[head]
    found = {}
    if "Metric Name" in header:  # long layout: one row per metric
        name_i, unit_i, value_i = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
        for r in rows[head + 1 :]:
            if r[name_i] in metrics:
                v = number(r[value_i])
                found[r[name_i]] = None if v is None else v * SCALE.get(r[unit_i].lower(), 1)
    else:  # wide layout: header row, unit row, one row per profiled launch
        if len(rows) < head + 3:
            sys.exit(f"ncu profiled no launch in {path}:\n{text[-2000:]}")
        units, values = rows[head + 1], rows[head + 2]
        for m in metrics:
            if m in header:
                i = header.index(m)
                v = number(values[i])
                found[m] = None if v is None else v * SCALE.get(units[i].lower(), 1)
    return {m: found.get(m) for m in metrics}


points = []
for s in strides.split():
    m = parse(os.path.join(tmp, f"stride_{s}.csv"))
    requested = int(n_elems) * 4
    points.append({
        "stride": int(s),
        "n_elems": int(n_elems),
        "requested_bytes": requested,
        "metrics": m,
        "dram_bytes_per_requested_byte": None if m["dram__bytes_read.sum"] is None else m["dram__bytes_read.sum"] / requested,
        "l2_read_bytes_per_requested_byte": None if m["lts__t_sectors_srcunit_tex_op_read.sum"] is None
        else 32 * m["lts__t_sectors_srcunit_tex_op_read.sum"] / requested,
    })
record = {
    "topic": "memory_hierarchy_ncu",
    "provenance": {
        "gpu": gpu or None, "driver": driver or None, "ncu": ncu_version or None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "command": f"bash benchmarks/h200/memory_hierarchy_ncu.sh {commit}",
        "ncu_options": "--clock-control none --cache-control all (default) --launch-skip 1 --launch-count 1",
        "kernel": "widgets.experiments.memory_hierarchy_kernels.strided_read_kernel, BLOCK 4096, 8 warps",
    },
    "elem_bytes": 4,
    "metrics": metrics,
    "points": points,
}
with open(out, "w") as f:
    json.dump(record, f, indent=1, allow_nan=False)
    f.write("\n")
for p in points:
    print(f"stride {p['stride']:3d}: DRAM {p['dram_bytes_per_requested_byte']} B, L2 {p['l2_read_bytes_per_requested_byte']} B per requested byte")
print(f"wrote {out}")
PYEOF
