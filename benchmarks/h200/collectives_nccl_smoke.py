"""Smoke test of the collectives worker's GPU path on ONE GPU (the two-GPU record cannot be re-measured
this session): NCCL with a single rank, CUDA-event timing of interleaved batches, median and spread, and
the NVML SM clock and power read after each batch, and the host-side time per call (the wall clock
around the loop that issues a batch). A one-rank all-reduce moves no data, so the times
are only NCCL's and Python's per-call cost; the point is that the code path runs and records what it
should (clock and power not null where pynvml is installed).

    python benchmarks/h200/collectives_nccl_smoke.py            # writes $OUT/collectives_nccl_smoke.json if $OUT is set
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from widgets.experiments import collectives as exp  # noqa: E402


def main() -> int:
    if not torch.cuda.is_available():
        print("no GPU here: nothing to smoke-test (the CPU path is covered by tests/test_collectives.py)")
        return 0
    p = exp.Plan("nccl", 1, (4096, 1 << 20, 64 << 20), (), 10, 2, 10, "NCCL smoke test on one GPU")
    result = exp.launch(p, ("all_reduce", "broadcast"), p.sweep_sizes, (), timeout_s=300)
    sweep = exp.sweep_from_worker(result)
    print(exp.format_table(sweep))
    for pt in sweep.points:
        print(f"{pt.op:>12} {pt.size_bytes:>10d} B: median {pt.time_s * 1e6:8.1f} us, spread [{pt.time_min_s * 1e6:.1f}, "
              f"{pt.time_max_s * 1e6:.1f}] us, host {pt.host_time_s * 1e6:.1f} us per call, SM clock {pt.sm_clock_mhz} MHz, "
              f"power {pt.power_w} W")
    ok = sweep.all_correct and all(pt.time_min_s <= pt.time_s <= pt.time_max_s and pt.host_time_s > 0 for pt in sweep.points)
    nvml = "read" if all(pt.sm_clock_mhz for pt in sweep.points) else "not available (null recorded)"
    print("smoke test:", "ok" if ok else "FAILED", "| NVML:", nvml)
    out = os.environ.get("OUT")
    if out:
        Path(out, "collectives_nccl_smoke.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
