"""Why each rung of the kernels chapter's SGEMM ladder waits: Nsight Compute's warp states (run by kernels_stalls.sh).

    python3 benchmarks/h200/kernels_stalls_driver.py plan --record widgets/data/h200/kernels.json
    python3 benchmarks/h200/kernels_stalls_driver.py launch --rung warptile --config 128,256,... --m 4096 --n 4096 --k 4096 --info I.json
    python3 benchmarks/h200/kernels_stalls_driver.py write --tmp DIR --out OUT.json --commit SHA ...

``plan`` prints, for every CUDA-core rung of the ladder record, the rung, its fastest tile configuration
in that record (``best``) and the kernel's name: what the chapter's ladder table shows. ``launch``
compiles and launches that configuration twice (kernels_ncu_driver.launch: the chapter's own compile,
launcher and operands; ncu profiles the second launch) and checks the result. ``write`` reads ncu's CSV
logs and writes the record (no GPU needed).

What the record holds per rung: the raw counters, with their units; widgets.experiments.kernels.warp_states
reads them (what each means is in its docstring and in widgets.experiments.ncu.STALL_MEANINGS):
- the warp states, ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``: per scheduler, the
  warps in state <reason> per cycle in which it issued, that is the warp cycles spent in that state per
  issued instruction; they add up to ncu's ``smsp__average_warp_latency_per_inst_issued.ratio``
  (``selected`` is the cycle of the issue itself). Nsight Compute's Kernel Profiling Guide defines them;
- shared-memory loads: L1 data-stage wavefronts (passes) and warp-level shared load instructions;
- the SM clock ncu saw (``sm__cycles_elapsed.avg.per_second``, clocks left alone: --clock-control none),
  the duration, issue slots used, achieved occupancy and the FMA pipe's use.
(Records written before warp_states existed also hold a "derived" block computed by this driver then.)
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernels_ncu_driver as base  # noqa: E402  (the chapter's compile and launch, ncu's CSV)

METRICS = (
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.avg",
    "sm__cycles_elapsed.avg.per_second",
    "gpu__time_duration.sum",
    "smsp__issue_active.avg.per_cycle_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__warps_active.avg.per_cycle_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
)


def plan(record: str) -> int:
    rec = json.loads(Path(record).read_text())
    for r in rec["results"]["ladder"]["rungs"]:
        if r.get("best") is None:
            continue
        c = r["configs"][r["best"]]
        print(r["name"], ",".join(str(x) for x in c["config"]) or "-", c["kernel"])
    return 0


def read_csv(path: Path) -> tuple[dict, dict]:
    """Every counter of ncu's wide CSV (``--page raw``): (name -> value, name -> unit)."""
    text = path.read_text() if path.exists() else ""
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if head is None or len(rows) < head + 3:
        raise ValueError(f"no counter table in {path}: {text[-1500:]}")
    header, units, values = rows[head], rows[head + 1], rows[head + 2]
    out, unit = {}, {}
    for i, name in enumerate(header):
        if "__" in name and i < len(values):
            out[name], unit[name] = base._number(values[i]), units[i] if i < len(units) else ""
    return out, unit


def write(a) -> int:
    from widgets.experiments.kernels import warp_states
    from widgets.experiments.ncu import STALL_METRIC

    tmp = Path(a.tmp)
    rows, problems = [], []
    for line in Path(a.plan).read_text().splitlines():
        if not line.strip():
            continue
        rung, config, kernel = line.split()
        info_path = tmp / f"{rung}.info.json"
        if not info_path.exists():
            problems.append(f"{rung}: the launch wrote no {info_path.name} (see {rung}.csv)")
            continue
        info = json.loads(info_path.read_text())
        try:
            metrics, units = read_csv(tmp / f"{rung}.csv")
        except ValueError as exc:
            problems.append(f"{rung}: {exc}")
            continue
        if not any(STALL_METRIC.match(name) for name in metrics):
            problems.append(f"{rung}: ncu reported no warp states")
        rows.append({"rung": rung, "kernel": kernel, "launch": info, "metrics": metrics, "units": units})
    if not rows:
        print("no row could be read:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    first = rows[0]["launch"]
    record = {
        "topic": "kernels_stalls",
        "provenance": {
            "gpu": a.gpu or first.get("device_name"), "driver": a.driver or None, "ncu": a.ncu or None,
            "nvcc": a.nvcc or None, "cuda_torch": first.get("torch_cuda"), "torch": first.get("torch"),
            "compiler": first.get("compiler"), "arch": first.get("arch"), "sms": first.get("sms"),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "git_commit": a.commit, "tree": a.tree or None, "command": a.command,
            "ncu_options": a.ncu_options,
            "kernels": "each CUDA-core rung of widgets/experiments/kernels_cuda.py at its fastest tile configuration in "
                       "widgets/data/h200/kernels.json, compiled and launched by widgets.experiments.kernels "
                       "(benchmarks/h200/kernels_ncu_driver.py launch)",
        },
        "m": first["m"], "n": first["n"], "k": first["k"],
        "rows": rows,
        "problems": problems,
    }
    Path(a.out).write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    for d in warp_states(record):
        print(f"{d['rung']:13s} {d['cycles_per_issue']:.2f} warp cycles per issue; top {list(d['states'])[:3]}; "
              f"shared passes per load {d['shared_passes_per_load']}; clock {d['sm_clock_hz']}")
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    print(f"wrote {a.out}")
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("plan")
    pl.add_argument("--record", required=True)
    la = sub.add_parser("launch")
    la.add_argument("--rung", required=True)
    la.add_argument("--config", required=True, help="comma-separated tile parameters, or - for a rung without any")
    for name in ("m", "n", "k"):
        la.add_argument(f"--{name}", type=int, required=True)
    la.add_argument("--info", required=True)
    wr = sub.add_parser("write")
    for name in ("tmp", "out", "plan", "commit", "command", "ncu_options"):
        wr.add_argument(f"--{name.replace('_', '-')}", required=True)
    for name in ("gpu", "driver", "ncu", "nvcc", "tree"):
        wr.add_argument(f"--{name}", default="")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        return plan(a.record)
    if a.cmd == "launch":
        config = () if a.config == "-" else tuple(int(x) for x in a.config.split(","))
        return base.launch(a.rung, a.m, a.n, a.k, a.info, config=config)
    return write(a)


if __name__ == "__main__":
    raise SystemExit(main())
