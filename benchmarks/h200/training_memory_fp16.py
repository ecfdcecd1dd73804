"""The training step in fp16 with a loss scaler beside bf16, on this GPU: the scaler adds nothing per parameter.

GPUs without bf16 tensor cores (sm_75: a T4) train the chapter's GPT in fp16 with a
``torch.amp.GradScaler`` (``widgets.experiments.training_memory``, chosen by the capability rule).
The H200 has bf16, so the measure batch never runs that path at scale: this script forces it
(``measure_step(dtype=torch.float16)``) on a 4-layer cut of the chapter's GPT and runs the same shape
in bf16, then prints the allocator's buckets of both, the scaler's device bytes, its last scale and the
steps it skipped. Each run fails soft (its error is recorded). About 30-60 s on an H200.

    python benchmarks/h200/training_memory_fp16.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from widgets import doctor  # noqa: E402
from widgets.experiments import harness  # noqa: E402
from widgets.experiments import training_memory as ex  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the two runs as JSON (with provenance) here")
    args = ap.parse_args()
    if not harness.on_gpu():
        print("no GPU: nothing to compare (the fp16 path is tested on the CPU by tests/test_training_memory.py)")
        return 0
    shape = dict(doctor.TRAINING_SHAPE, layers=4)
    runs = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16 + GradScaler", torch.float16)):
        t0 = time.perf_counter()
        r = harness.attempt(ex.measure_step, shape, batches=(1, 2), modes=("none", "full"), repeat=2, dtype=dtype)
        runs[name] = {"seconds": round(time.perf_counter() - t0, 1), "result": r.to_record() if hasattr(r, "to_record") else repr(r)}
        if isinstance(r, ex.StepResult):
            print(f"{name}: params {r.params:,}; weights {r.weights_bytes:,} B; optimizer {r.optimizer_bytes:,} B; "
                  f"scaler {r.scaler_bytes} B; loss scale {r.loss_scale}; skipped steps {r.skipped_steps}")
            for p in r.points:
                print(f"   recompute {p.recompute:<5} b={p.micro_batch}: activations {p.activations_bytes:,} B, "
                      f"gradients {p.gradients_bytes:,} B, peak {p.peak_bytes:,} B, step {p.step_s * 1e3:.1f} ms")
        else:
            print(f"{name}: failed: {getattr(r, 'error', r)}")
    out = {"shape": shape, "runs": runs, "provenance": harness.provenance("python benchmarks/h200/training_memory_fp16.py")}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
