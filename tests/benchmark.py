"""Benchmark (not a test): the clean build time of the book and the nbval time of the chapters.

    make bench                       # or: .venv/bin/python tests/benchmark.py --repeat 3

Each command runs as a whole process ``--repeat`` times; min, median and max are printed and written
with the machine's description to ``benchmarks/build_and_nbval.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"command failed: {' '.join(cmd)}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "build_and_nbval.json"))
    args = ap.parse_args()
    results = {}
    out_dir = Path(tempfile.mkdtemp(prefix="gpubook-bench-"))
    build = [str(BIN / "jupyter-book"), "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out_dir)]
    nbval = [str(BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "chapters"]
    for name, cmd, before in (
        ("clean_build_s", build, lambda: shutil.rmtree(out_dir / "_build", ignore_errors=True)),
        ("nbval_s", nbval, lambda: None),
    ):
        times = []
        for _ in range(args.repeat):
            before()
            times.append(timed(cmd))
        results[name] = {"min": min(times), "median": statistics.median(times), "max": max(times), "runs": times, "command": " ".join(cmd)}
        print(f"{name:14s} min {min(times):7.1f} s   median {statistics.median(times):7.1f} s   max {max(times):7.1f} s")
    shutil.rmtree(out_dir, ignore_errors=True)
    record = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "chapters": sorted(p.name for p in (ROOT / "chapters").glob("*.ipynb")),
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
