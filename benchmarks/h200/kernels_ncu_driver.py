"""Launch one of the book's untiled SGEMM kernels for Nsight Compute, and write the record (run by kernels_ncu.sh).

    python3 benchmarks/h200/kernels_ncu_driver.py launch --rung naive --m 2048 --n 2048 --k 4096 --info INFO.json
    python3 benchmarks/h200/kernels_ncu_driver.py write --tmp DIR --out OUT.json --commit SHA ...

``launch`` compiles the rung's CUDA C (``widgets.experiments.kernels_cuda.source``) as the chapter's
ladder does (``simt_cuda.compile_cubin``: nvcc, else NVRTC), loads it through the driver API and
launches it twice with the ladder's own launcher (``kernels._Launcher``: 1,024 threads, a 32 x 32
tile per block, on torch's stream) on the ladder's operands (``kernels._operands``, seed 0); ncu
profiles only the second launch (``--launch-skip 1 --launch-count 1``). It then checks C against
the fp64 reference (``kernels.rel_err`` < ``kernels.REL_TOL``) and writes what it launched to
``--info`` (grid, threads, warps, SMs, registers, versions).

``write`` reads the ncu CSV logs and the launch files that kernels_ncu.sh left in ``--tmp`` and
writes the record; it needs neither torch nor a GPU. The derivation of the passes is in the header
of kernels_ncu.sh.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WARP = 32
# Counters every run needs (all seen on the H200 by ncu in benchmarks/h200/kernels_review_ncu_2026-12-02,
# except the last three, which are in every Nsight Compute since 2019.5: instructions, cycles, duration).
CORE = (
    "l1tex__data_pipe_lsu_wavefronts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sector_hit_rate.pct",
    "smsp__inst_executed_op_global_ld.sum",
    "sm__cycles_elapsed.avg",
    "gpu__time_duration.sum",
)
# Counters asked for first; a run where ncu rejects one of them is repeated with CORE alone (they are null then).
EXTRA = (
    "l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "smsp__inst_executed_op_global_st.sum",
    "sm__cycles_elapsed.avg.per_second",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
)
TIME_SCALE = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1.0, "s": 1.0}


# --------------------------------------------------------------------------------------------
# launch (on the GPU, under ncu)
# --------------------------------------------------------------------------------------------
def launch(rung_name: str, m: int, n: int, k: int, info_path: str, config: tuple | None = None) -> int:
    import torch

    if not torch.cuda.is_available():
        print("no GPU: nothing to profile", file=sys.stderr)
        return 2
    from widgets.experiments import kernels as ke
    from widgets.experiments import kernels_cuda as kc
    from widgets.experiments import simt_cuda as sc

    rung = next(r for r in kc.RUNGS if r.name == rung_name)
    config = rung.configs[0] if config is None else tuple(config)
    drv = sc.Driver()
    arch = drv.arch()
    cubin = sc.compile_cubin(kc.source(rung), arch)
    name = kc.kernel_name(rung, config)
    func = drv.load(cubin, name)
    run = ke._Launcher(drv, func, rung, config)
    a, b = ke._operands(m, n, k, seed=0)
    c = torch.full((m, n), float("nan"), device=a.device)
    for _ in range(2):  # warm-up, then the launch ncu profiles
        run(a, b, c)
    torch.cuda.synchronize()
    err = ke.rel_err(c, ke._reference(a, b)) if torch.isfinite(c).all() else math.inf
    gx, gy = -(-n // run.bn), -(-m // run.bm)
    nvcc = sc._nvcc()
    info = {
        "rung": rung.name,
        "kernel": name,
        "config": list(config),
        "m": m, "n": n, "k": k,
        "grid_blocks": gx * gy,
        "threads_per_block": run.threads,
        "warps": gx * gy * run.threads // WARP,
        "sms": drv.device_attribute("multiprocessor_count"),
        "arch": arch,
        "regs_per_thread": drv.func_attribute(func, "num_regs"),
        "compiler": f"nvcc ({nvcc})" if nvcc else "NVRTC",
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device_name": torch.cuda.get_device_name(0),
        "rel_err": err if math.isfinite(err) else None,
        "correct": bool(err < ke.REL_TOL),
    }
    Path(info_path).write_text(json.dumps(info, indent=1) + "\n")
    if not info["correct"]:
        print(f"{name} at {m}x{n}x{k}: wrong answer (rel. error {err})", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------------------------
# write (anywhere: parses ncu's CSV)
# --------------------------------------------------------------------------------------------
def _number(text):
    text = (text or "").strip().replace(",", "")
    if text in ("", "n/a"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_ncu_csv(path: str, metrics) -> tuple[dict, dict]:
    """(metric -> value, metric -> unit) from ncu's ``--csv`` log, wide (``--page raw``) or long (``--page details``)
    layout; a metric ncu did not report is absent. Raises ValueError when the log holds no counter table."""
    text = Path(path).read_text() if os.path.exists(path) else ""
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if head is None or len(rows) < head + 2:
        raise ValueError(f"no counter table in {path}: {text[-1500:]}")
    header = rows[head]
    values, units = {}, {}
    if "Metric Name" in header:  # long layout: a row per metric
        ni, ui, vi = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
        for r in rows[head + 1:]:
            if len(r) > max(ni, ui, vi) and r[ni] in metrics:
                values[r[ni]], units[r[ni]] = _number(r[vi]), r[ui]
    else:  # wide layout: header, units, a row per profiled launch
        if len(rows) < head + 3:
            raise ValueError(f"ncu profiled no launch in {path}: {text[-1500:]}")
        unit_row, value_row = rows[head + 1], rows[head + 2]
        for i, name in enumerate(header):
            if name in metrics and i < len(value_row):
                values[name], units[name] = _number(value_row[i]), unit_row[i] if i < len(unit_row) else ""
    return values, units


def _per(value, count):
    return None if value is None or not count else value / count


def derive(metrics: dict, units: dict, info: dict) -> dict:
    """Per-warp-per-k passes and rates from the raw counters (see kernels_ncu.sh's header)."""
    warps, k, sms = info["warps"], info["k"], info.get("sms")
    wk = warps * k
    glob = metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum")
    total = metrics.get("l1tex__data_pipe_lsu_wavefronts.sum")
    shared = metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") or 0.0
    if glob is not None:
        data, source = glob, "l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum"
    elif total is not None:
        data, source = total - shared, "l1tex__data_pipe_lsu_wavefronts.sum - l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
    else:
        data, source = None, None
    tag = metrics.get("l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum")
    cycles = metrics.get("sm__cycles_elapsed.avg")
    t = metrics.get("gpu__time_duration.sum")
    time_s = None if t is None else t * TIME_SCALE.get((units.get("gpu__time_duration.sum") or "nsecond").lower(), 1e-9)
    d = {
        "data_passes_per_warp_per_k": _per(data, wk),
        "data_passes_source": source,
        "tag_passes_per_warp_per_k": _per(tag, wk),
        "requests_per_warp_per_k": _per(metrics.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"), wk),
        "load_instructions_per_warp_per_k": _per(metrics.get("smsp__inst_executed_op_global_ld.sum"), wk),
        "sectors_per_warp_per_k": _per(metrics.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), wk),
        "sm_cycles_per_warp_per_k": None if cycles is None or not sms else cycles * sms / wk,
        "data_passes_per_sm_cycle": None if data is None or cycles is None or not sms else data / (sms * cycles),
        "tag_passes_per_sm_cycle": None if tag is None or cycles is None or not sms else tag / (sms * cycles),
        "time_s": time_s,
        "gflop_per_s": None if not time_s else 2.0 * info["m"] * info["n"] * k / time_s / 1e9,
    }
    grid, block = metrics.get("launch__grid_size"), metrics.get("launch__block_size")
    d["ncu_warps_agree"] = None if grid is None or block is None else grid * block / WARP == warps
    return d


def write(a) -> int:
    tmp = Path(a.tmp)
    wanted = CORE + EXTRA
    rows, problems = [], []
    for rung in a.rungs.split():
        for k in a.ks.split():
            tag = f"{rung}_{k}"
            info_path = tmp / f"{tag}.info.json"
            if not info_path.exists():
                problems.append(f"{tag}: the launch wrote no {info_path.name} (see the ncu log)")
                continue
            info = json.loads(info_path.read_text())
            try:
                metrics, units = parse_ncu_csv(str(tmp / f"{tag}.csv"), wanted)
            except ValueError as exc:
                problems.append(f"{tag}: {exc}")
                continue
            missing = [m for m in CORE if metrics.get(m) is None]
            if missing:
                problems.append(f"{tag}: ncu reported no {', '.join(missing)}")
            attempt = (tmp / f"{tag}.attempt").read_text().strip() if (tmp / f"{tag}.attempt").exists() else "core+extra"
            rows.append({
                "rung": rung,
                "k": int(k),
                "launch": info,
                "metrics_requested": attempt,
                "metrics": {m: metrics.get(m) for m in wanted},
                "units": {m: units.get(m) for m in wanted if m in units},
                "derived": derive(metrics, units, info),
            })
    if not rows:
        print("no row could be read:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    first = rows[0]["launch"]
    record = {
        "topic": "kernels_ncu",
        "provenance": {
            "gpu": a.gpu or first.get("device_name"),
            "driver": a.driver or None,
            "ncu": a.ncu or None,
            "nvcc": a.nvcc or None,
            "cuda_torch": first.get("torch_cuda"),
            "torch": first.get("torch"),
            "compiler": first.get("compiler"),
            "arch": first.get("arch"),
            "sms": first.get("sms"),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "git_commit": a.commit,
            "tree": a.tree or None,
            "command": a.command,
            "clock_control": a.clock_control,
            "ncu_options": f"--clock-control {a.clock_control} --cache-control all (default) --replay-mode kernel (default) "
                           "-k regex:^<kernel>$ --launch-skip 1 --launch-count 1 --csv --page raw --print-units base",
            "kernels": "widgets/experiments/kernels_cuda.py NAIVE (sgemm_naive) and COALESCED (sgemm_coalesced), compiled "
                       "and launched by widgets.experiments.kernels (_Launcher: 1,024 threads, 32 x 32 outputs per block)",
            "size_note": "M and N only set the number of warps; every count here is divided by warps x K, and a warp's "
                         "addresses in one step of k depend on K alone (lane r of the naive kernel reads A at 4 K r bytes)",
        },
        "m": first["m"],
        "n": first["n"],
        "metrics_core": list(CORE),
        "metrics_extra": list(EXTRA),
        "rows": rows,
        "problems": problems,
    }
    Path(a.out).write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    for r in rows:
        d = r["derived"]
        print(f"{r['rung']:9s} K={r['k']}: data {d['data_passes_per_warp_per_k']}, tag {d['tag_passes_per_warp_per_k']}, "
              f"SM cycles {d['sm_cycles_per_warp_per_k']} per warp per k; {d['gflop_per_s']} GFLOP/s")
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    print(f"wrote {a.out}")
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    la = sub.add_parser("launch")
    la.add_argument("--rung", required=True, choices=("naive", "coalesced"))
    la.add_argument("--m", type=int, required=True)
    la.add_argument("--n", type=int, required=True)
    la.add_argument("--k", type=int, required=True)
    la.add_argument("--info", required=True)
    wr = sub.add_parser("write")
    for name in ("tmp", "out", "commit", "rungs", "ks", "command", "clock_control"):
        wr.add_argument(f"--{name.replace('_', '-')}", required=True)
    for name in ("gpu", "driver", "ncu", "nvcc", "tree"):
        wr.add_argument(f"--{name}", default="")
    a = ap.parse_args(argv)
    if a.cmd == "launch":
        if a.m % 32 or a.n % 32:
            print("m and n must be multiples of 32 (every warp then runs all K steps)", file=sys.stderr)
            return 2
        return launch(a.rung, a.m, a.n, a.k, a.info)
    return write(a)


if __name__ == "__main__":
    raise SystemExit(main())
