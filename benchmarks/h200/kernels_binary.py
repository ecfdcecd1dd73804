"""Reading the binary, for the kernels chapter: what nvcc leaves, PTX against SASS, register
counts and spills, the cubin patch, and Triton's own PTX and SASS. Writes one JSON record.

    python benchmarks/h200/kernels_binary.py --out widgets/data/h200/kernels_binary.json

Runs on a GPU machine with the CUDA toolkit (nvcc, cuobjdump, nvdisasm); every step is fail-soft:
a missing tool or a failed step is recorded with the reason (``null`` + ``error``), never a crash.
Without a GPU the compile, disassembly and patch steps still run where the tools exist; the
patched kernel is not run. About 10-30 s (a few nvcc calls, one Triton compile).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from widgets.experiments import harness  # noqa: E402
from widgets.experiments import kernels_cubin as cubin_tools  # noqa: E402
from widgets.experiments import kernels_cuda as kc  # noqa: E402

MAX_LINES = 400


def tool(name: str) -> str | None:
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for cand in (shutil.which(name), os.path.join(cuda_home, "bin", name), f"/usr/local/cuda/bin/{name}"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def run(cmd: list[str], cwd: str | None = None) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120)
    return {"cmd": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)), "rc": p.returncode,
            "stdout": p.stdout, "stderr": p.stderr, "s": round(time.perf_counter() - t0, 3)}


def clip(text: str, n: int = MAX_LINES) -> list[str]:
    lines = text.splitlines()
    return lines[:n] + ([f"... ({len(lines) - n} more lines)"] if len(lines) > n else [])


def step(out: dict, key: str, fn):
    try:
        out[key] = fn()
    except Exception as exc:  # noqa: BLE001 - recorded with its reason
        out[key] = None
        out.setdefault("errors", {})[key] = f"{type(exc).__name__}: {str(exc)[:500]}"
        traceback.print_exc()


def arch_here() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            return f"sm_{p.major}{p.minor}"
    except Exception:  # noqa: BLE001
        pass
    return "sm_90"


def nvcc_keep(tmp: Path, arch: str, nvcc: str) -> dict:
    """nvcc --keep: the intermediate files of one compilation, the PTX, ptxas -v."""
    src = tmp / "times3.cu"
    src.write_text(kc.TIMES3)
    keep = tmp / "keep"
    keep.mkdir()
    r = run([nvcc, "--keep", f"--keep-dir={keep}", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-O3", str(src), "-o", str(tmp / "times3.cubin")])
    if r["rc"]:
        raise RuntimeError("nvcc failed: " + r["stderr"][-800:])
    fat = run([nvcc, "-fatbin", f"-gencode=arch=compute_{arch[3:]},code=[{arch},compute_{arch[3:]}]", str(src), "-o", str(tmp / "times3.fatbin")])
    ptx = next(keep.glob("*.ptx"), None)
    return {
        "command": r["cmd"],
        "kept_files": sorted((p.name, p.stat().st_size) for p in keep.iterdir()),
        "ptx": clip(ptx.read_text()) if ptx else None,
        "ptxas_v": clip(r["stderr"]),
        "cubin_bytes": (tmp / "times3.cubin").stat().st_size,
        "cubin_magic": (tmp / "times3.cubin").read_bytes()[:4].hex(),
        "fatbin_command": fat["cmd"],
        "fatbin_bytes": (tmp / "times3.fatbin").stat().st_size if fat["rc"] == 0 else None,
        "fatbin_error": fat["stderr"][-500:] if fat["rc"] else None,
        "sections": [vars(s) for s in cubin_tools.elf_sections((tmp / "times3.cubin").read_bytes())],
    }


def disassemble(path: Path, cuobjdump: str | None, nvdisasm: str | None) -> dict:
    out = {}
    if cuobjdump:
        r = run([cuobjdump, "--dump-sass", str(path)])
        out["cuobjdump_sass"] = clip(r["stdout"]) if r["rc"] == 0 else None
        out["cuobjdump_error"] = r["stderr"][-500:] if r["rc"] else None
    if nvdisasm:
        r = run([nvdisasm, "-c", "-hex", str(path)])
        out["nvdisasm"] = clip(r["stdout"]) if r["rc"] == 0 else None
        out["nvdisasm_error"] = r["stderr"][-500:] if r["rc"] else None
    return out


def run_times(cubin: bytes, n: int = 8) -> list[float]:
    """Load ``cubin`` through the driver API (cuModuleLoadData) and run times3 on 0..n-1."""
    import ctypes

    import torch

    from widgets.experiments.simt_cuda import Driver

    drv = Driver()
    func = drv.load(cubin, "times3")
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    drv.launch(func, 1, 32, 0, [y.data_ptr(), x.data_ptr(), ctypes.c_int(n)], stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return y.cpu().tolist()


def patch(tmp: Path, cuobjdump, nvdisasm, gpu: bool) -> dict:
    data = (tmp / "times3.cubin").read_bytes()
    patched, hit = cubin_tools.patch_float_immediate(data, "times3", 3.0, 5.0)
    (tmp / "times3_patched.cubin").write_bytes(patched)
    diff = [i for i, (a, b) in enumerate(zip(data, patched)) if a != b]
    out = {
        "kernel": "times3",
        "old": 3.0, "new": 5.0,
        "instruction_offset": hit.instruction_offset,
        "file_offset": hit.file_offset,
        "instruction_before_hex": hit.instruction_hex,
        "instruction_after_hex": patched[hit.file_offset - 4:hit.file_offset + 12].hex(),
        "bytes_before": data[hit.file_offset:hit.file_offset + 4].hex(),
        "bytes_after": patched[hit.file_offset:hit.file_offset + 4].hex(),
        "bytes_changed": len(diff),
        "before": disassemble(tmp / "times3.cubin", cuobjdump, nvdisasm),
        "after": disassemble(tmp / "times3_patched.cubin", cuobjdump, nvdisasm),
        "input": list(range(8)),
    }
    if gpu:
        out["result_before"] = run_times(data)
        out["result_after"] = run_times(patched)
    else:
        out["result_before"] = out["result_after"] = None
        out["not_run"] = "no GPU here: the patched cubin was not loaded"
    return out


def ladder_ptxas(tmp: Path, arch: str, nvcc: str, cuobjdump) -> dict:
    """ptxas -v of every ladder kernel, and the instruction mix of each kernel's SASS."""
    res = {}
    for rung in kc.RUNGS:
        src = tmp / f"{rung.name}.cu"
        src.write_text(kc.source(rung))
        r = run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", str(src), "-o", str(tmp / f"{rung.name}.cubin")])
        entry = {"ptxas_v": clip(r["stderr"], 80), "rc": r["rc"]}
        if r["rc"] == 0 and cuobjdump:
            d = run([cuobjdump, "--dump-sass", str(tmp / f"{rung.name}.cubin")])
            if d["rc"] == 0:
                entry["sass_counts"] = sass_counts(d["stdout"])
                if rung.name in ("naive", "smem", "vectorized"):
                    entry["sass"] = clip(d["stdout"], 300)
        res[rung.name] = entry
    return res


_FUNC = re.compile(r"Function : (\S+)")
_OP = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)")


def sass_counts(text: str) -> dict:
    """Per kernel: how many SASS instructions of each opcode (the text before the first '.')."""
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in text.splitlines():
        m = _FUNC.search(line)
        if m:
            cur = m.group(1)
            out[cur] = {}
            continue
        m = _OP.search(line)
        if m and cur:
            op = m.group(1).split(".")[0]
            out[cur][op] = out[cur].get(op, 0) + 1
    return out


def triton_asm(gpu: bool) -> dict:
    if not gpu:
        return {"not_run": "no GPU: Triton compiles for a GPU only"}
    import torch
    import triton

    from widgets.experiments.tensor_cores_triton import matmul_kernel

    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(256, 256, device="cuda", dtype=torch.bfloat16)
    grid = (triton.cdiv(256, 128) * triton.cdiv(256, 128),)
    k = matmul_kernel[grid](a, b, c, 256, 256, 256, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8)
    torch.cuda.synchronize()
    out = {"config": "BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_stages=3 num_warps=8, bf16", "asm_keys": sorted(k.asm.keys())}
    ptx = k.asm.get("ptx") or ""
    out["ptx_lines"] = len(ptx.splitlines())
    out["ptx_mma"] = {w: ptx.count(w) for w in ("wgmma.mma_async", "mma.sync", "cp.async.bulk", "cp.async", "ldmatrix")}
    out["ptx_head"] = clip(ptx, 60)
    out["ptx_wgmma_lines"] = [ln.strip() for ln in ptx.splitlines() if "wgmma.mma_async" in ln][:8]
    try:
        sass = k.asm["sass"]
        out["sass_counts"] = next(iter(sass_counts(sass).values()), {})
        out["sass_mma_lines"] = [ln.strip() for ln in sass.splitlines() if "GMMA" in ln or "HMMA" in ln][:8]
    except Exception as exc:  # noqa: BLE001
        out["sass_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    out["n_regs"] = getattr(k, "n_regs", None)
    out["n_spills"] = getattr(k, "n_spills", None)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "widgets/data/h200/kernels_binary.json"))
    args = ap.parse_args(argv)
    tools = {t: tool(t) for t in ("nvcc", "cuobjdump", "nvdisasm")}
    rec: dict = {"topic": "kernels_binary", "provenance": harness.provenance(
        "python benchmarks/h200/kernels_binary.py " + " ".join(argv if argv is not None else sys.argv[1:]))}
    res: dict = {"tools": tools, "missing_tools": [t for t, p in tools.items() if p is None]}
    gpu = harness.on_gpu()
    arch = arch_here()
    res["arch"] = arch
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if tools["nvcc"]:
            step(res, "nvcc_keep", lambda: nvcc_keep(tmp, arch, tools["nvcc"]))
            if res.get("nvcc_keep"):
                step(res, "patch", lambda: patch(tmp, tools["cuobjdump"], tools["nvdisasm"], gpu))
            step(res, "ladder", lambda: ladder_ptxas(tmp, arch, tools["nvcc"], tools["cuobjdump"]))
        else:
            res["errors"] = {"nvcc": "nvcc not found: nothing compiled"}
    step(res, "triton", lambda: triton_asm(gpu))
    rec["binary"] = res  # not "results": widgets.accuracy reads */*.json with "results" as topic records
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
    p = res.get("patch") or {}
    print(f"wrote {out}; missing tools: {res['missing_tools']}; errors: {list(res.get('errors', {}))}")
    print(f"patch: {p.get('bytes_before')} -> {p.get('bytes_after')} at file offset {p.get('file_offset')}; "
          f"result before {p.get('result_before')}, after {p.get('result_after')}")
    return 1 if res.get("errors") else 0


if __name__ == "__main__":
    raise SystemExit(main())
