"""Count the transpose kernels' sectors and shared-memory wavefronts with Nsight Compute (H200).

    python benchmarks/h200/memory_hierarchy_transpose_ncu.py --commit "$(git rev-parse HEAD)"

(from the repository root; ``--out DIR`` to write elsewhere than widgets/data/h200; ``--ncu PATH``
if ``ncu`` is not on PATH). Profiles the five numba kernels of the chapter's transpose experiment
(``widgets.experiments.memory_hierarchy_transpose``: copy, naive, tiled, padded, swizzled) on an n x n fp32
matrix (n = 8192 by default), one profiled launch per kernel after a warm-up launch, clocks left
alone (``--clock-control none``), caches flushed before the profiled launch (ncu's default), and
writes ``memory_hierarchy_transpose_ncu.json``: provenance and, per kernel, the counters below. The
chapter compares them with the sector and bank model (``memory_hierarchy_transpose.ncu_rows``).
Needs torch, numba-cuda and ncu with permission to read the counters; installs nothing. About
1 minute on the H200 (five ncu runs, each a Python start, a numba compile and a few replays).

``--driver KIND`` is the program ncu profiles (this file runs itself under ncu).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
)
KERNEL_NAMES = {"copy": "copy_kernel", "naive": "transpose_naive_kernel", "naive_read": "transpose_naive_read_kernel",
                "tiled": "transpose_tiled_kernel",
                "padded": "transpose_padded_kernel", "swizzled": "transpose_swizzled_kernel"}
SCALE = {"byte": 1, "sector": 1, "": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}
# gpu__time_duration is kept in nanoseconds (ncu's base unit; the 18:00 H200 run printed it unscaled)
TIME_TO_NS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def _scale(metric: str, unit: str) -> float:
    u = unit.strip().lower()
    if metric.startswith("gpu__time_duration"):
        return TIME_TO_NS.get(u, 1)
    return SCALE.get(u, 1)


def driver(kind: str, n: int) -> None:
    """Two launches of one kernel (ncu skips the first): the program ncu profiles."""
    import torch

    sys.path.insert(0, os.getcwd())
    from widgets.experiments import memory_hierarchy_transpose as tx

    src = torch.rand((n, n), device="cuda" if torch.cuda.is_available() else "cpu")
    dst = torch.empty_like(src)
    s, d = tx._device_array(src), tx._device_array(dst)
    kern = tx.KERNELS[kind][(n // tx.TILE, n // tx.TILE), (tx.TILE, tx.BLOCK_ROWS)]
    for _ in range(2):
        kern(s, d)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    want = src if kind == "copy" else src.t()
    if not torch.equal(dst, want):
        sys.exit(f"{kind}: wrong result")


def _number(text: str):
    text = text.strip().replace(",", "")
    return float(text) if text not in ("", "n/a") else None


def parse(path: str) -> dict:
    """Counter values from ncu's CSV (the long 'details' layout, or the wide 'raw' one)."""
    text = open(path).read()
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r), None)
    if head is None or len(rows) < head + 2:
        raise SystemExit(f"ncu produced no counter table in {path} (permissions? kernel name?):\n{text[-2000:]}")
    header, found = rows[head], {}
    if "Metric Name" in header:
        ni, ui, vi = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
        for r in rows[head + 1:]:
            if len(r) > max(ni, ui, vi) and r[ni] in METRICS:
                v = _number(r[vi])
                found[r[ni]] = None if v is None else v * _scale(r[ni], r[ui])
    else:
        if len(rows) < head + 3:
            raise SystemExit(f"ncu profiled no launch in {path}:\n{text[-2000:]}")
        units, values = rows[head + 1], rows[head + 2]
        for m in METRICS:
            if m in header:
                i = header.index(m)
                v = _number(values[i])
                found[m] = None if v is None else v * _scale(m, units[i])
    return {m: found.get(m) for m in METRICS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", help="git commit the run measures (provenance)")
    ap.add_argument("--out", default="widgets/data/h200")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"))
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--kinds", default="copy,naive,naive_read,tiled,padded,swizzled")
    ap.add_argument("--driver", choices=sorted(KERNEL_NAMES), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.n < 32 or args.n % 32:
        ap.error(f"--n must be a positive multiple of 32, got {args.n}")
    if args.driver:
        driver(args.driver, args.n)
        return 0
    if not args.commit:
        ap.error("--commit is required")
    ncu = shutil.which(args.ncu) or (args.ncu if os.path.exists(args.ncu) else None)
    if ncu is None:
        print(f"ncu not found ({args.ncu}); pass --ncu /path/to/ncu", file=sys.stderr)
        return 2
    kinds = [k for k in args.kinds.split(",") if k]
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            log = os.path.join(tmp, f"{kind}.csv")
            cmd = [ncu, "--clock-control", "none", "--metrics", ",".join(METRICS),
                   "-k", f"regex:{KERNEL_NAMES[kind]}", "--launch-skip", "1", "--launch-count", "1",
                   "--csv", "--page", "details", "--print-units", "base", "--log-file", log,
                   sys.executable, os.path.abspath(__file__), "--driver", kind, "--n", str(args.n)]
            print(f"[ncu] {kind}", file=sys.stderr, flush=True)
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(run.stdout[-3000:], run.stderr[-3000:], file=sys.stderr)
                points.append({"kind": kind, "error": f"ncu exited with {run.returncode}: {run.stderr.strip()[-300:]}"})
                continue
            try:
                points.append({"kind": kind, "metrics": parse(log)})
            except SystemExit as exc:
                points.append({"kind": kind, "error": str(exc)[:500]})
    smi = shutil.which("nvidia-smi")

    def query(field):
        if not smi:
            return None
        r = subprocess.run([smi, f"--query-gpu={field}", "--format=csv,noheader"], capture_output=True, text=True)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None

    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    record = {
        "topic": "memory_hierarchy_transpose_ncu",
        "provenance": {
            "gpu": query("name"), "driver": query("driver_version"), "ncu": ver[-1] if ver else None,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "git_commit": args.commit,
            "command": f"python benchmarks/h200/memory_hierarchy_transpose_ncu.py --commit {args.commit} --n {args.n}",
            "ncu_options": "--clock-control none --cache-control all (default) --launch-skip 1 --launch-count 1",
            "kernels": "widgets.experiments.memory_hierarchy_transpose (numba-cuda), 32 x 32 tiles, 32 x 8 threads",
        },
        "n": args.n,
        "elem_bytes": 4,
        "metrics": list(METRICS),
        "units": "counters as counted, bytes in B, gpu__time_duration.sum in ns",
        "points": points,
    }
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "memory_hierarchy_transpose_ncu.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1, allow_nan=False)
        f.write("\n")
    for p in points:
        print(p["kind"], p.get("error") or {k.split("__")[1].split(".")[0]: v for k, v in p["metrics"].items()})
    print(f"wrote {out}")
    return 0 if all("metrics" in p for p in points) else 1


if __name__ == "__main__":
    raise SystemExit(main())
