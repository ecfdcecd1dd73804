"""Tensor-core experiments: GEMM throughput per data type, a shape sweep (alignment and wave
quantization), the error of each data type against an fp64 reference, and a Triton GEMM against
cuBLAS.

On a GPU the sizes are the real ones (8192^3 and friends, capped by free memory); on a CPU every
experiment runs scaled down in seconds (Triton through its interpreter), which shows the method,
not GPU performance.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import asdict, dataclass

import torch

from ..hardware import catalog_name_for, get_gpu
from ..models import tensor_cores as model
from . import harness

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
_TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_ELEM_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def has_fp8() -> bool:
    """fp8 GEMMs through ``torch._scaled_mm`` need compute capability 8.9 or later."""
    if not harness.on_gpu() or not hasattr(torch, "_scaled_mm"):
        return False
    major, minor = torch.cuda.get_device_capability()
    return (major, minor) >= (8, 9)


@contextlib.contextmanager
def tf32_enabled(enabled: bool = True):
    """Let fp32 matmuls use TF32 tensor cores inside the block (restored afterwards), through
    ``torch.backends.cuda.matmul.allow_tf32`` (``torch.set_float32_matmul_precision`` where a
    torch build refuses the legacy switch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = enabled
            legacy = True
        except RuntimeError:
            old = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high" if enabled else "highest")
            legacy = False
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if legacy:
                torch.backends.cuda.matmul.allow_tf32 = old
            else:
                torch.set_float32_matmul_precision(old)


def _randn(shape, dtype, gen):
    return torch.randn(shape, generator=gen, device=harness.device(), dtype=torch.float32).to(dtype)


def _to_fp8(x: torch.Tensor):
    """Per-tensor scaled E4M3: returns (x8, scale) with x ~ x8 * scale and max |x8| = 448."""
    amax = x.abs().max().clamp(min=1e-12).float()
    scale = amax / torch.finfo(torch.float8_e4m3fn).max
    return (x / scale).to(torch.float8_e4m3fn), scale


def _gemm_fn(dtype: str, m: int, n: int, k: int, copies: int, gen, *, fast_accum: bool = True):
    """A zero-argument GEMM call that cycles through ``copies`` independent operand pairs (so that
    the working set exceeds the L2 cache where caching would flatter), and a setup that advances it."""
    pairs = []
    for _ in range(copies):
        if dtype == "fp8":
            a8, sa = _to_fp8(_randn((m, k), torch.float32, gen))
            b8, sb = _to_fp8(_randn((n, k), torch.float32, gen))
            pairs.append((a8, b8.t(), sa, sb))  # B column-major, as _scaled_mm requires
        else:
            t = _TORCH_DTYPE[dtype]
            pairs.append((_randn((m, k), t, gen), _randn((k, n), t, gen)))
    state = {"i": 0}

    def advance():
        state["i"] = (state["i"] + 1) % copies

    if dtype == "fp8":

        def fn():
            a, b, sa, sb = pairs[state["i"]]
            return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)

    else:

        def fn():
            a, b = pairs[state["i"]]
            return a @ b

    return fn, advance


def _copies(bytes_per_pair: int) -> int:
    """Operand pairs to rotate through so that they add up to at least twice the L2 (1 on a CPU)."""
    l2 = harness.l2_bytes()
    if not l2:
        return 1
    return max(1, min(8, math.ceil(2 * l2 / bytes_per_pair)))


def _time_gemm(dtype: str, m: int, n: int, k: int, *, repeat: int, fast_accum: bool = True, seed: int = 0) -> dict:
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    e = _ELEM_BYTES[dtype]
    copies = _copies((m * k + k * n) * e)
    fn, advance = _gemm_fn(dtype, m, n, k, copies, gen, fast_accum=fast_accum)
    with tf32_enabled(dtype == "tf32"):
        t = harness.time_fn(fn, warmup=3, repeat=repeat, setup=advance)
    flop = model.matmul_flop(m, n, k)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "time_s": t.median_s, "min_s": t.min_s,
            "flop_per_s": flop / t.median_s, "copies": copies}


def reference_gpu():
    """The catalog record of this machine's GPU, or None (CPU, or a GPU the catalog lacks)."""
    if not harness.on_gpu():
        return None
    name = catalog_name_for(torch.cuda.get_device_name())
    return get_gpu(name) if name else None


# --------------------------------------------------------------------------------------------
# 1. Throughput per data type at a large size
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DtypeThroughput:
    dtype: str
    n: int
    time_s: float
    flop_per_s: float
    peak_flop_per_s: float | None  # the catalog's dense peak for this GPU, if known
    fraction_of_peak: float | None
    note: str = ""


def measure_dtype_throughput(n: int | None = None, *, repeat: int | None = None) -> list[dict]:
    """Time an ``n x n x n`` GEMM in each data type; compare with the catalog's dense peak.

    GPU: ``n = 8192`` (capped so three bf16 matrices fit in a quarter of free memory); fp8 through
    ``torch._scaled_mm`` (per-tensor scales, bf16 output) where the GPU has it. CPU: ``n = 256``,
    fp8 and tf32 skipped (no such units).
    """
    gpu = harness.on_gpu()
    if n is None:
        n = 8192 if gpu else 256
        if gpu:
            cap = int(math.sqrt(harness.choose_bytes(3 * 4 * 8192**2, 0) / (3 * 4)))
            n = min(n, max(1024, cap // 256 * 256))
    repeat = repeat or (20 if gpu else 3)
    spec = reference_gpu()
    out = []
    for d in DTYPES:
        if d == "fp8" and not has_fp8():
            out.append(asdict(DtypeThroughput(d, n, float("nan"), float("nan"), None, None, "no fp8 GEMM on this device")))
            continue
        if d == "tf32" and not gpu:
            out.append(asdict(DtypeThroughput(d, n, float("nan"), float("nan"), None, None, "no TF32 on a CPU")))
            continue
        peak = spec.peak_flop_per_s.get(d) if spec else None
        for fast in (True, False) if d == "fp8" else (True,):
            r = _time_gemm(d, n, n, n, repeat=repeat, fast_accum=fast)
            note = f"torch._scaled_mm, per-tensor scales, use_fast_accum={fast}" if d == "fp8" else ""
            out.append(asdict(DtypeThroughput(d, n, r["time_s"], r["flop_per_s"], peak, r["flop_per_s"] / peak if peak else None, note)))
    return out


# --------------------------------------------------------------------------------------------
# 2. Shape sweep: alignment, and N at fixed M, K (wave quantization)
# --------------------------------------------------------------------------------------------
def alignment_sizes(gpu: bool | None = None) -> list[int]:
    """Square sizes near multiples of 8, 64 and 128."""
    gpu = harness.on_gpu() if gpu is None else gpu
    bases = (4096, 8192) if gpu else (256,)
    offsets = (-1, 0, 1, 8, 16, 64, 128)
    return [b + o for b in bases for o in offsets]


def n_sweep_shape(gpu: bool | None = None) -> tuple[int, int, list[int]]:
    """(M, K, list of N) for the wave-quantization sweep."""
    gpu = harness.on_gpu() if gpu is None else gpu
    if gpu:
        return 2048, 8192, list(range(256, 16384 + 1, 256))
    return 64, 128, list(range(32, 256 + 1, 32))


def measure_shape_sweep(*, repeat: int | None = None, triton_sweep: bool = True) -> dict:
    """bf16 GEMMs (fp16 on a CPU, where bf16 Triton is not interpretable) across shapes.

    ``alignment``: square ``n^3`` for n near multiples of 8/64/128, through torch (cuBLAS).
    ``n_sweep``: ``M x N x K`` at fixed M, K across N, through torch and through the Triton kernel
    with ONE fixed tile (128 x 256 on a GPU): the Triton kernel runs exactly the schedule the
    tile-and-wave model assumes; cuBLAS picks its own tiles per shape.
    """
    gpu = harness.on_gpu()
    repeat = repeat or (15 if gpu else 2)
    dtype = "bf16"
    align = []
    for s in alignment_sizes(gpu):
        r = _time_gemm(dtype, s, s, s, repeat=repeat)
        align.append({"n": s, "time_s": r["time_s"], "flop_per_s": r["flop_per_s"]})
    m, k, ns = n_sweep_shape(gpu)
    torch_pts = []
    for n in ns:
        r = _time_gemm(dtype, m, n, k, repeat=repeat)
        torch_pts.append({"n": n, "time_s": r["time_s"], "flop_per_s": r["flop_per_s"]})
    out = {"dtype": dtype, "alignment": align, "n_sweep": {"m": m, "k": k, "torch": torch_pts}}
    if triton_sweep:
        from . import tensor_cores_triton as tt

        cfg = tt.GPU_CONFIGS[0] if gpu else tt.CPU_CONFIG
        tdtype = torch.bfloat16 if gpu else torch.float16
        gen = torch.Generator(device=harness.device()).manual_seed(1)
        a = _randn((m, k), tdtype, gen)
        pts = []
        for n in ns:
            b = _randn((k, n), tdtype, gen)
            c = torch.empty((m, n), device=a.device, dtype=tdtype)
            t = harness.time_fn(lambda: tt.matmul(a, b, config=cfg, out=c), warmup=2 if gpu else 1, repeat=repeat)
            pts.append({"n": n, "time_s": t.median_s, "flop_per_s": model.matmul_flop(m, n, k) / t.median_s})
        out["n_sweep"]["triton"] = pts
        out["n_sweep"]["triton_config"] = list(cfg)
    return out


# --------------------------------------------------------------------------------------------
# 3. Numerical error against an fp64 reference as K grows
# --------------------------------------------------------------------------------------------
def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 fraction bits) to nearest even, kept in fp32 (for CPU emulation)."""
    bits = x.float().contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    bits = (bits + 0x0FFF + lsb) & ~0x1FFF
    return bits.view(torch.float32)


def _lowp_matmul(dtype: str, a64: torch.Tensor, b64: torch.Tensor, *, fast_accum: bool = False):
    """``a @ b`` in ``dtype`` from fp64 operands.

    Returns (result in fp64, rounded A in fp64, rounded B in fp64, method, output dtype). The
    result is kept in fp32 where the library allows it, so that the error is the inputs' and the
    accumulation's, not the rounding of the output. On a CPU, tensor-core GEMMs are emulated: the
    inputs are rounded to ``dtype`` and multiplied in fp32.
    """
    gpu = a64.is_cuda
    if dtype == "fp8":
        a8, sa = _to_fp8(a64.float())
        b8, sb = _to_fp8(b64.float())
        ar, br = a8.double() * sa.double(), b8.double() * sb.double()
        if has_fp8():
            b8t = b8.t().contiguous().t()  # column-major B, as _scaled_mm requires
            method = "torch._scaled_mm" + (", use_fast_accum" if fast_accum else "")
            try:
                c = torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.float32, use_fast_accum=fast_accum)
                return c.double(), ar, br, method, "fp32"
            except RuntimeError:  # a build that only writes 16-bit outputs
                c = torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
                return c.double(), ar, br, method, "bf16"
        c = (a8.float() * sa) @ (b8.float() * sb)
        return c.double(), ar, br, "emulated: E4M3 inputs, fp32 matmul", "fp32"
    if dtype == "tf32":
        ar, br = _round_tf32(a64.float()), _round_tf32(b64.float())
        if gpu:
            with tf32_enabled(True):
                c = a64.float() @ b64.float()
            return c.double(), ar.double(), br.double(), "cuBLAS, allow_tf32", "fp32"
        return (ar @ br).double(), ar.double(), br.double(), "emulated: TF32-rounded inputs, fp32 matmul", "fp32"
    t = _TORCH_DTYPE[dtype]
    a, b = a64.to(t), b64.to(t)
    if t == torch.float32:
        with tf32_enabled(False):
            return (a @ b).double(), a.double(), b.double(), "torch.mm", "fp32"
    if not gpu:
        return (a.float() @ b.float()).double(), a.double(), b.double(), f"emulated: {dtype} inputs, fp32 matmul", "fp32"
    try:
        c = torch.mm(a, b, out_dtype=torch.float32)
        return c.double(), a.double(), b.double(), "torch.mm(out_dtype=float32)", "fp32"
    except (TypeError, RuntimeError):
        return (a @ b).double(), a.double(), b.double(), "torch.mm", dtype


def precision_ks(gpu: bool | None = None) -> list[int]:
    gpu = harness.on_gpu() if gpu is None else gpu
    return [2**p for p in range(8, 17)] if gpu else [2**p for p in range(6, 12, 1)]


def measure_precision(ks=None, *, size: int | None = None, seed: int = 0) -> list[dict]:
    """Relative error of ``A[size,K] @ B[K,size]`` in each data type against fp64, as K grows.

    Inputs: standard normal in fp64. Two errors per dtype and K:
    ``total`` = ||C_dtype - C_exact||_F / ||C_exact||_F (inputs rounded to the dtype, then the
    product), and ``accumulation`` = the same against the fp64 product of the ROUNDED inputs (the
    GEMM's own error). ``max_componentwise`` = max |c_hat - c| / (|A| |B|), to compare with the
    deterministic bound. fp8 is E4M3 with per-tensor scales.
    """
    gpu = harness.on_gpu()
    ks = list(ks or precision_ks(gpu))
    size = size or (256 if gpu else 64)
    dev = harness.device()
    gen = torch.Generator(device=dev).manual_seed(seed)
    out = []
    variants = [("fp32", False), ("tf32", False), ("bf16", False), ("fp16", False), ("fp8", False)]
    if has_fp8():
        variants.append(("fp8", True))
    for k in ks:
        a = torch.randn((size, k), generator=gen, device=dev, dtype=torch.float64)
        b = torch.randn((k, size), generator=gen, device=dev, dtype=torch.float64)
        exact = a @ b
        for d, fast in variants:
            c, ar, br, method, out_dtype = _lowp_matmul(d, a, b, fast_accum=fast)
            exact_r = ar @ br
            absab = ar.abs() @ br.abs()
            out.append({
                "dtype": d, "k": k, "m": size, "method": method, "fast_accum": fast, "out_dtype": out_dtype,
                "total": float(torch.linalg.norm(c - exact) / torch.linalg.norm(exact)),
                "accumulation": float(torch.linalg.norm(c - exact_r) / torch.linalg.norm(exact_r)),
                "max_componentwise": float(((c - exact_r).abs() / absab).max()),
            })
    return out


# --------------------------------------------------------------------------------------------
# 4. A Triton GEMM against cuBLAS
# --------------------------------------------------------------------------------------------
def measure_triton_vs_torch(n: int | None = None, *, repeat: int | None = None, seed: int = 0) -> dict:
    """Time the Triton kernel (autotuned on a GPU) and torch's GEMM on the same ``n^3`` problem,
    after checking that the two agree. bf16 on a GPU (n = 8192); fp16 at n = 64 on a CPU, where
    the interpreter runs the kernel."""
    from . import tensor_cores_triton as tt

    gpu = harness.on_gpu()
    n = n or (8192 if gpu else 64)
    repeat = repeat or (20 if gpu else 2)
    dtype = torch.bfloat16 if gpu else torch.float16
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a = _randn((n, n), dtype, gen)
    b = _randn((n, n), dtype, gen)
    ref = (a.float() @ b.float()) if not gpu else (a @ b).float()
    got = tt.matmul(a, b).float()
    err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    tol = 2e-2 if gpu else 5e-3
    if not err < tol:
        raise AssertionError(f"Triton matmul disagrees with torch: relative error {err:.3g} >= {tol}")
    c = torch.empty_like(a)
    t_triton = harness.time_fn(lambda: tt.matmul(a, b, out=c), warmup=3 if gpu else 1, repeat=repeat)
    if gpu:
        t_torch = harness.time_fn(lambda: torch.mm(a, b, out=c), warmup=3, repeat=repeat)
    else:
        t_torch = harness.time_fn(lambda: torch.mm(a, b), warmup=1, repeat=repeat)
    flop = model.matmul_flop(n, n, n)
    return {
        "n": n, "dtype": str(dtype).replace("torch.", ""), "relative_error_vs_torch": err,
        "config": list(tt.best_config()), "interpreted": tt.INTERPRETED,
        "triton_time_s": t_triton.median_s, "torch_time_s": t_torch.median_s,
        "triton_flop_per_s": flop / t_triton.median_s, "torch_flop_per_s": flop / t_torch.median_s,
        "ratio": t_torch.median_s / t_triton.median_s,
    }


def run_all() -> dict:
    """Every tensor-core experiment, as a JSON-able dict (``python -m widgets.measure``)."""
    torch.manual_seed(0)
    spec = reference_gpu()
    return {
        "catalog_gpu": spec.name if spec else None,
        "throughput": measure_dtype_throughput(),
        "shape_sweep": measure_shape_sweep(),
        "precision": measure_precision(),
        "triton": measure_triton_vs_torch(),
    }
