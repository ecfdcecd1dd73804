"""A wider search of the warp-tiling rung's tile configurations at 4096^3 (issue 18's 70% target).

The ladder (``widgets.experiments.kernels``) times the 9 warp-tiling configurations listed in
``kernels_cuda.RUNGS``. This script times many more instantiations of the same template
(``kernels_cuda.WARPTILE``, unchanged): every configuration that satisfies the template's static
asserts, holds 128 accumulators per thread, BK of 8 or 16, 128 or 256 threads and fits 48 KiB of
static shared memory, sampled with a fixed seed, plus the ladder's own 9 as controls. Each one is
compiled on its own (a failed instantiation costs only itself), checked against the fp64
reference on the ladder's ragged shapes and at 4096^3, and timed as the ladder times it
(``kernels._measure_config``: CUDA events, median of 10). cuBLAS fp32 (TF32 off) is timed the same
way for the ratio. A GPU only; about 2-4 minutes on an H200.

    python benchmarks/h200/kernels_warptile_sweep.py --out FILE.json [--sample 96] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from widgets.experiments import harness  # noqa: E402
from widgets.experiments import kernels as ke  # noqa: E402
from widgets.experiments import kernels_cuda as kc  # noqa: E402


def candidates(sample: int, seed: int) -> list[tuple[int, ...]]:
    """Configurations (BM, BN, BK, WM, WN, WNITER, TM, TN, NT, DB) the template accepts (its static
    asserts, restated), 128 accumulators per thread, sampled; the ladder's own configurations first."""
    out = []
    for bm, bn, bk, wm, wn, wniter, tm, tn, db in itertools.product(
            (64, 128, 256), (64, 128, 256), (8, 16), (32, 64, 128), (32, 64, 128), (1, 2, 4), (4, 8), (4, 8), (0, 1)):
        if wm > bm or wn > bn or bm % wm or bn % wn or (wm * wn) % (32 * tm * tn * wniter):
            continue
        wmiter = wm * wn // (32 * tm * tn * wniter)
        if wm % wmiter or wn % wniter:
            continue
        wsubm, wsubn = wm // wmiter, wn // wniter
        if wsubm % tm or wsubn % tn or (wsubn // tn) * (wsubm // tm) != 32:
            continue
        nt = (bm // wm) * (bn // wn) * 32
        if nt not in (128, 256) or (bm + bn) * bk * 4 * (1 + db) > 48 * 1024 or wm * wn // 32 != 128 or tm * tn < 32:
            continue
        out.append((bm, bn, bk, wm, wn, wniter, tm, tn, nt, db))
    ladder = list(next(r for r in kc.RUNGS if r.name == "warptile").configs)
    rest = [c for c in out if c not in ladder]
    random.Random(seed).shuffle(rest)
    return ladder + rest[:sample]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sample", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    from widgets.experiments.simt_cuda import Driver, compile_cubin

    rung = next(r for r in kc.RUNGS if r.name == "warptile")
    configs = candidates(args.sample, args.seed)
    drv = Driver()
    arch = drv.arch()
    t0 = time.perf_counter()

    def build(cfg):
        try:
            return cfg, compile_cubin(kc.source(dataclasses.replace(rung, configs=(cfg,))), arch), ""
        except Exception as exc:  # noqa: BLE001 - one instantiation's failure is recorded
            return cfg, None, harness.Failed.of(exc).error[:300]

    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(build, configs))
    compile_s = time.perf_counter() - t0
    ragged = []
    for i, (m, n, k) in enumerate(ke.RAGGED):
        a, b = ke._operands(m, n, k, seed=i + 1)
        ragged.append((a, b, ke._reference(a, b)))
    a, b = ke._operands(*ke.BIG, seed=0)
    big = (a, b, ke._reference(a, b))
    before = harness.gpu_clock_power()
    rows = []
    for cfg, cubin, err in built:
        one = dataclasses.replace(rung, configs=(cfg,))
        if cubin is None:
            rows.append({"config": list(cfg), "error": "compile: " + err})
            continue
        r = ke._measure_config(drv, lambda name, cubin=cubin: drv.load(cubin, name), one, cfg, ragged, big)
        rows.append({"config": list(cfg), **{k: v for k, v in dataclasses.asdict(r).items() if k != "config"}})
        print(f"{cfg}: {r.gflop_per_s or 0:,.0f} GFLOP/s correct={r.correct} regs={r.regs_per_thread} {r.error[:80]}", flush=True)
    cublas = ke._library("cuBLAS fp32 (TF32 off)", "fp32", ke._cublas(False), big, ragged)
    after = harness.gpu_clock_power()
    ok = [r for r in rows if r.get("correct") and r.get("gflop_per_s")]
    best = max(ok, key=lambda r: r["gflop_per_s"]) if ok else None
    out = {"what": "warp-tiling template configurations at 4096^3, fp32, against cuBLAS fp32 (TF32 off)",
           "size": list(ke.BIG), "arch": arch, "compile_s": compile_s, "tried": len(rows),
           "ladder_configs": [list(c) for c in rung.configs], "rows": rows,
           "cublas_gflop_per_s": cublas.gflop_per_s, "best": best,
           "best_of_cublas": (best["gflop_per_s"] / cublas.gflop_per_s) if best and cublas.gflop_per_s else None,
           "clock_power_before": before, "clock_power_after": after,
           "provenance": harness.provenance("python benchmarks/h200/kernels_warptile_sweep.py --out FILE.json")}
    Path(args.out).write_text(json.dumps(out, indent=1, default=str) + "\n")
    if best:
        print(f"best {tuple(best['config'])}: {best['gflop_per_s']:,.0f} GFLOP/s = {out['best_of_cublas']:.1%} of cuBLAS "
              f"{cublas.gflop_per_s:,.0f}; {len(ok)} of {len(rows)} correct; compile {compile_s:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
