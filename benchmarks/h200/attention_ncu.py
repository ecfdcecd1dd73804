"""Count attention's DRAM traffic with Nsight Compute (H200): standard attention against fused kernels.

    python benchmarks/h200/attention_ncu.py --commit "$(git rev-parse HEAD)"

(from the repository root; ``--out DIR`` to write elsewhere than widgets/data/h200; ``--ncu PATH``
if ``ncu`` is not on PATH). For each case, this file runs itself under ``ncu --profile-from-start
off --metrics dram__bytes_read.sum,dram__bytes_write.sum``; the driver warms up (compiles,
autotunes) outside the profiled range, then runs the case once between
``torch.cuda.profiler.start()`` and ``stop()``, so every kernel of that one call is counted:

- ``standard``: ``S = Q K^T`` (a batched matmul), ``P = softmax(S)``, ``O = P V``: three kernels,
  S and P written to and read back from HBM (the model: ``4 N d + 4 N^2`` elements per head,
  ``widgets.models.attention.standard_attention_hbm_bytes``);
- ``triton_flash``: the chapter's FlashAttention kernel (``widgets.experiments.attention_triton``);
- ``sdpa_flash``: PyTorch SDPA's flash backend.

bf16, head size 128, at N = 4096 (16 (batch, head) pairs) and N = 8192 (4 pairs): S is 512 MiB,
ten times the L2. Caches are flushed before each profiled kernel (ncu's default
``--cache-control all``), clocks left alone (``--clock-control none``). Writes
``attention_ncu.json``: provenance and, per case, the summed counters and each kernel's. The
chapter and the accuracy page compare them with the model
(``widgets.experiments.attention.ncu_rows``). Needs torch, triton and ncu with permission to read
the counters; installs nothing. About 1 minute on the H200 (six ncu runs, each a Python start).

``--driver KIND`` is the program ncu profiles.
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

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
KINDS = ("standard", "triton_flash", "sdpa_flash")
SHAPES = ((4, 4, 4096), (1, 4, 8192))  # (batch, heads, seq)
HEAD_DIM = 128
SCALE = {"byte": 1, "": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}


def driver(kind: str, batch: int, heads: int, seq: int, head_dim: int) -> None:
    """Warm up, then one profiled call of ``kind`` (the program ncu runs)."""
    sys.path.insert(0, os.getcwd())
    import torch

    from widgets.experiments import attention_triton as kernels

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn((batch, heads, seq, head_dim), generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    q = q / head_dim**0.5  # the softmax scale, applied outside the counted call

    if kind == "standard":
        def call():
            s = torch.matmul(q, k.transpose(-1, -2))
            p = torch.softmax(s, dim=-1)
            del s
            return torch.matmul(p, v)
    elif kind == "triton_flash":
        def call():
            return kernels.flash_attention(q, k, v, False, sm_scale=1.0)
    else:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def call():
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0)
    for _ in range(3):
        out = call()
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float()[:1, :1], k.float()[:1, :1], v.float()[:1, :1], scale=1.0)
    err = (out[:1, :1].float() - ref).abs().max().item()
    if not err < 5e-2:
        sys.exit(f"{kind}: wrong result (max abs error {err})")
    del out
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def _number(text: str):
    text = text.strip().replace(",", "")
    return float(text) if text not in ("", "n/a") else None


def parse(path: str) -> list[dict]:
    """Per profiled kernel: its name and counters (ncu's long 'details' CSV layout)."""
    text = open(path).read()
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("==")) if r]
    head = next((i for i, r in enumerate(rows) if "ID" in r and "Metric Name" in r), None)
    if head is None:
        raise SystemExit(f"ncu produced no counter table in {path} (permissions? nothing profiled?):\n{text[-2000:]}")
    header = rows[head]
    ii = header.index("ID")
    ki = header.index("Kernel Name") if "Kernel Name" in header else ii
    ni, ui, vi = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
    kernels: dict = {}
    for r in rows[head + 1:]:
        if len(r) <= max(ii, ki, ni, ui, vi) or r[ni] not in METRICS:
            continue
        k = kernels.setdefault(r[ii], {"kernel": r[ki][:200], "metrics": {}})
        v = _number(r[vi])
        k["metrics"][r[ni]] = None if v is None else v * SCALE.get(r[ui].strip().lower(), 1)
    return list(kernels.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", help="git commit the run measures (provenance)")
    ap.add_argument("--out", default="widgets/data/h200")
    ap.add_argument("--ncu", default=os.environ.get("NCU", "ncu"))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--driver", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.driver:
        b, h, n = (int(x) for x in args.shape.split(","))
        driver(args.driver, b, h, n, HEAD_DIM)
        return 0
    if not args.commit:
        ap.error("--commit is required")
    ncu = shutil.which(args.ncu) or (args.ncu if os.path.exists(args.ncu) else None)
    if ncu is None:
        print(f"ncu not found ({args.ncu}); pass --ncu /path/to/ncu", file=sys.stderr)
        return 2
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        for b, h, n in SHAPES:
            for kind in [k for k in args.kinds.split(",") if k]:
                log = os.path.join(tmp, f"{kind}_{n}.csv")
                cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--metrics", ",".join(METRICS),
                       "--csv", "--page", "details", "--print-units", "base", "--log-file", log,
                       sys.executable, os.path.abspath(__file__), "--driver", kind, "--shape", f"{b},{h},{n}"]
                print(f"[ncu] {kind} N={n}", file=sys.stderr, flush=True)
                base = {"kind": kind, "batch": b, "heads": h, "seq": n, "head_dim": HEAD_DIM, "elem_bytes": 2}
                try:
                    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                except subprocess.TimeoutExpired:
                    points.append({**base, "error": "ncu timed out after 300 s"})
                    continue
                if run.returncode != 0:
                    print(run.stdout[-3000:], run.stderr[-3000:], file=sys.stderr)
                    points.append({**base, "error": f"ncu exited with {run.returncode}: {run.stderr.strip()[-300:]}"})
                    continue
                try:
                    ks = parse(log)
                except SystemExit as exc:
                    points.append({**base, "error": str(exc)[:500]})
                    continue
                vals = [x["metrics"].get(m) for x in ks for m in METRICS]
                total = sum(v for v in vals if v is not None) if ks and all(v is not None for v in vals) else None
                points.append({**base, "kernels": ks, "dram_bytes": total})
    smi = shutil.which("nvidia-smi")

    def query(field):
        if not smi:
            return None
        r = subprocess.run([smi, f"--query-gpu={field}", "--format=csv,noheader"], capture_output=True, text=True)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None

    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    record = {
        "topic": "attention_ncu",
        "provenance": {
            "gpu": query("name"), "driver": query("driver_version"), "ncu": ver[-1] if ver else None,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "git_commit": args.commit,
            "command": f"python benchmarks/h200/attention_ncu.py --commit {args.commit}",
            "ncu_options": "--profile-from-start off --clock-control none --cache-control all (default)",
            "cases": "bf16, head_dim 128; standard = torch.matmul, torch.softmax, torch.matmul; "
                     "triton_flash = widgets.experiments.attention_triton.flash_attention; sdpa_flash = SDPBackend.FLASH_ATTENTION",
        },
        "metrics": list(METRICS),
        "units": "bytes [B]; dram_bytes = read + write summed over the case's kernels",
        "points": points,
    }
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "attention_ncu.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1, allow_nan=False)
        f.write("\n")
    for p in points:
        print(p["kind"], p["seq"], p.get("error") or f"{p['dram_bytes']} B in {len(p['kernels'])} kernel(s)")
    print(f"wrote {out}")
    return 0 if all("dram_bytes" in p for p in points) else 1


if __name__ == "__main__":
    raise SystemExit(main())
