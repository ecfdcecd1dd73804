"""The tensor-core chapter's depth experiments: the GEMM tile hierarchy (the chapter's Triton GEMM
swept over block tiles), epilogue fusion (bias + GELU in the GEMM's epilogue against eager ops),
power and data dependence (one GEMM on zeros, ones, random and sparse data, with the SM clock and
board power sampled), 2:4 structured sparsity and grouped GEMM (MoE experts).

On a GPU the sizes are the real ones (4096^3 bf16 tiles, 8192^3 for the data dependence); on a
CPU every step runs scaled down in a second or so (Triton through its interpreter, in fp16), which
shows the method, not GPU performance. Every step fails soft: a step that cannot run here (no
Triton for this arch, no 2:4 kernels, no grouped GEMM in this torch) is recorded as a
:class:`harness.Failed` with the reason, and the rest of the record survives.

``accuracy_rows`` recomputes every comparison from the raw times of a record and today's models
(:mod:`widgets.models.tensor_cores`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Optional, Union

import torch

from . import harness
from ._triton import INTERPRETED, tl, triton

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps): the block tiles swept at TILE_N^3
TILE_CONFIGS_GPU = (
    (64, 64, 64, 8, 4, 4),
    (128, 128, 64, 8, 2, 4),
    (128, 128, 64, 8, 4, 4),
    (128, 256, 64, 8, 2, 8),
    (128, 256, 64, 8, 3, 8),
    (128, 256, 64, 8, 4, 8),
)
TILE_CONFIGS_CPU = ((32, 32, 32, 4, 1, 4), (64, 64, 32, 4, 1, 4))
TILE_N_GPU, TILE_N_CPU = 4096, 64
EPILOGUE_CONFIG_GPU = (128, 256, 64, 8, 3, 8)
EPILOGUE_SHAPE_GPU = (8192, 8192, 1024)  # M, N, K: a short K makes the epilogue's share visible
EPILOGUE_SHAPE_CPU = (64, 64, 32)
DATA_KINDS = ("zeros", "ones", "randn", "sparse")  # sparse: random normal with SPARSE_ZERO_FRACTION zeros
SPARSE_ZERO_FRACTION = 0.75
DATA_N_GPU, DATA_N_CPU = 8192, 32
GROUPED_GPU = (64, 256, 2048, 1536)  # experts, tokens per expert, K (model width), N (expert width)
GROUPED_CPU = (4, 16, 32, 32)
SPARSE_N_GPU = 8192


def _dtype() -> torch.dtype:
    """bf16 on a GPU with bf16 tensor cores, else fp16 (the interpreter's bf16 ``tl.dot`` is not reliable)."""
    if harness.on_gpu():
        from .tensor_cores import _torch_dtype, gemm_dtype

        return _torch_dtype(gemm_dtype())
    return torch.float16


def _dname(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


def _tflop(flop: float, seconds: float) -> float:
    return flop / seconds


@dataclass(frozen=True)
class Spread(harness.Result):
    """Seconds per call: median and spread of ``repeat`` timed calls."""

    median_s: float
    min_s: float
    max_s: float
    repeat: int


SPACER_CYCLES = 2_000_000  # ~1 ms GPU sleep enqueued before each timed call (see _spacer)


def _spacer():
    """``setup`` for ``harness.time_fn`` on a GPU: a GPU sleep of ``SPACER_CYCLES`` enqueued before
    the start event, so the host's launch work for the call overlaps it and the events time the
    kernels alone (a Triton launch costs tens of microseconds of host time, a tenth of a 4096^3
    GEMM). None on a CPU or where ``torch.cuda._sleep`` is missing."""
    if not harness.on_gpu():
        return None
    try:
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - time without it
        return None
    return lambda: torch.cuda._sleep(SPACER_CYCLES)


def _timed(fn, repeat: int, warmup: int = 3, spaced: bool = True) -> Union[Spread, harness.Failed]:
    """Median seconds of ``fn()`` (a GPU sleep before each call unless ``spaced`` is False: then
    the host's launch work is part of the time), or :class:`harness.Failed` with the reason."""
    t = harness.attempt(harness.time_fn, fn, warmup=warmup, repeat=repeat, setup=_spacer() if spaced else None)
    if isinstance(t, harness.Failed):
        return t
    return Spread(t.median_s, t.min_s, t.max_s, t.repeat)


def _rel_err(got, ref) -> float:
    return float(torch.linalg.norm(got.float() - ref.float()) / torch.linalg.norm(ref.float()).clamp(min=1e-30))


# --------------------------------------------------------------------------------------------
# 1. The tile hierarchy: one GEMM, several block tiles
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TilePoint(harness.Result):
    """One block-tile configuration of the chapter's Triton GEMM at ``n^3``: its time, and what the
    compiler gave it (registers per thread, spills, shared memory per block) where Triton says."""

    config: tuple[int, ...]  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps
    time: Union[Spread, harness.Failed]
    flop_per_s: Optional[float] = None
    relative_error_vs_torch: Optional[float] = None
    n_regs: Optional[int] = None
    n_spills: Optional[int] = None
    shared_bytes: Optional[int] = None


@dataclass(frozen=True)
class TileSweep(harness.Result):
    n: int
    dtype: str
    interpreted: bool
    points: tuple[TilePoint, ...]
    torch: Union[Spread, harness.Failed, None] = None
    torch_flop_per_s: Optional[float] = None


def _compiled_info(compiled) -> tuple[Optional[int], Optional[int], Optional[int]]:
    """(registers per thread, spills, shared memory per block [B]) of a compiled Triton kernel, where known."""
    def get(*names):
        for obj in (compiled, getattr(compiled, "metadata", None)):
            for name in names:
                v = getattr(obj, name, None) if obj is not None else None
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return int(v)
        return None
    return get("n_regs"), get("n_spills"), get("shared")


def _tile_point(a, b, ref, cfg, repeat: int) -> TilePoint:
    from .tensor_cores_triton import matmul_kernel

    bm, bn, bk, g, stages, warps = cfg
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

    def run():
        return matmul_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_stages=stages, num_warps=warps)

    compiled = harness.attempt(run)
    if isinstance(compiled, harness.Failed):
        return TilePoint(tuple(cfg), compiled)
    harness.synchronize()
    err = _rel_err(c, ref)
    info = harness.attempt(_compiled_info, compiled)
    regs, spills, smem = (None, None, None) if isinstance(info, harness.Failed) else info
    t = _timed(run, repeat)
    flop = 2 * m * n * k
    return TilePoint(tuple(cfg), t, None if isinstance(t, harness.Failed) else flop / t.median_s, err, regs, spills, smem)


def measure_tile_sweep(n: int | None = None, configs=None, *, repeat: int | None = None, seed: int = 0) -> TileSweep:
    """The chapter's Triton GEMM (``tensor_cores_triton.matmul_kernel``) at ``n^3`` with each block
    tile of ``configs`` fixed (no autotuning), beside torch (cuBLAS). GPU: ``n = 4096`` in bf16 over
    :data:`TILE_CONFIGS_GPU`; CPU: the interpreter at ``n = 64`` in fp16 over :data:`TILE_CONFIGS_CPU`."""
    gpu = harness.on_gpu()
    n = n or (TILE_N_GPU if gpu else TILE_N_CPU)
    configs = configs or (TILE_CONFIGS_GPU if gpu else TILE_CONFIGS_CPU)
    repeat = repeat or (20 if gpu else 1)
    dt = _dtype()
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a = torch.randn((n, n), generator=gen, device=harness.device()).to(dt)
    b = torch.randn((n, n), generator=gen, device=harness.device()).to(dt)
    ref = (a @ b) if gpu else (a.float() @ b.float())
    points = tuple(_tile_point(a, b, ref, cfg, repeat) for cfg in configs)
    t = _timed(lambda: torch.mm(a, b), repeat) if gpu else _timed(lambda: a.float() @ b.float(), repeat, 1)
    tf = None if isinstance(t, harness.Failed) else 2 * n**3 / t.median_s
    return TileSweep(n, _dname(dt), INTERPRETED, points, t, tf)


# --------------------------------------------------------------------------------------------
# 2. Epilogue fusion: C = gelu(A B + bias), in the GEMM's epilogue or as two more kernels
# --------------------------------------------------------------------------------------------
@triton.jit
def matmul_bias_gelu_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # The chapter's tiled GEMM (tensor_cores_triton.matmul_kernel), up to its epilogue.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # The epilogue: bias and GELU on the fp32 tile while it is still in registers, then ONE store.
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0).to(tl.float32)
    x = acc + bias[None, :]
    x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # gelu, erf form (torch's default)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, x.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, *, config=None, out=None) -> torch.Tensor:
    """``gelu(a @ b + bias)`` in one Triton kernel (the epilogue fused). ``config`` as in
    ``tensor_cores_triton.matmul`` (default: :data:`EPILOGUE_CONFIG_GPU` on a GPU, the
    interpreter's small tile on a CPU)."""
    from .tensor_cores_triton import CPU_CONFIG

    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or bias.shape != (b.shape[1],):
        raise ValueError(f"need a (M, K), b (K, N), bias (N,), got {tuple(a.shape)}, {tuple(b.shape)}, {tuple(bias.shape)}")
    m, k = a.shape
    n = b.shape[1]
    c = out if out is not None else torch.empty((m, n), device=a.device, dtype=a.dtype)
    bm, bn, bk, g, stages, warps = config or (EPILOGUE_CONFIG_GPU if harness.on_gpu() else CPU_CONFIG)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_bias_gelu_kernel[grid](a, b, bias, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                  c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                  num_stages=stages, num_warps=warps)
    return c


@dataclass(frozen=True)
class EpilogueFusion(harness.Result):
    """``gelu(A B + bias)`` at M x N x K, three ways: torch eagerly (GEMM, add, gelu: three kernels),
    the Triton GEMM followed by the same two eager ops, and the Triton GEMM with them fused into its
    epilogue (one kernel). ``epilogue_only`` times the two eager ops alone on a ready C."""

    m: int
    n: int
    k: int
    dtype: str
    interpreted: bool
    config: tuple[int, ...]
    torch_eager: Union[Spread, harness.Failed]
    triton_unfused: Union[Spread, harness.Failed]
    triton_fused: Union[Spread, harness.Failed]
    epilogue_only: Union[Spread, harness.Failed]
    fused_relative_error: Optional[float] = None


def _eager_epilogue(c, bias):
    import torch.nn.functional as F

    return F.gelu(c + bias)


def measure_epilogue_fusion(shape=None, *, repeat: int | None = None, seed: int = 0) -> EpilogueFusion:
    """Time ``gelu(A B + bias)`` eagerly and with the epilogue fused (:class:`EpilogueFusion`).
    GPU: 8192 x 8192 x 1024 in bf16; CPU: 64 x 64 x 32 in fp16 through the interpreter."""
    from . import tensor_cores_triton as tt

    gpu = harness.on_gpu()
    m, n, k = shape or (EPILOGUE_SHAPE_GPU if gpu else EPILOGUE_SHAPE_CPU)
    repeat = repeat or (20 if gpu else 1)
    cfg = EPILOGUE_CONFIG_GPU if gpu else tt.CPU_CONFIG
    dt = _dtype()
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a = torch.randn((m, k), generator=gen, device=harness.device()).to(dt)
    b = (torch.randn((k, n), generator=gen, device=harness.device()) / math.sqrt(k)).to(dt)
    bias = torch.randn((n,), generator=gen, device=harness.device()).to(dt)
    c = torch.empty((m, n), device=a.device, dtype=dt)
    ref = _eager_epilogue((a.float() @ b.float()), bias.float())
    fused = harness.attempt(matmul_bias_gelu, a, b, bias, config=cfg)
    err = None if isinstance(fused, harness.Failed) else _rel_err(fused, ref)
    w = 3 if gpu else 1
    mm = (lambda: a @ b) if gpu else (lambda: (a.float() @ b.float()).to(dt))
    return EpilogueFusion(
        m, n, k, _dname(dt), INTERPRETED, tuple(cfg),
        torch_eager=_timed(lambda: _eager_epilogue(mm(), bias), repeat, w),
        triton_unfused=_timed(lambda: _eager_epilogue(tt.matmul(a, b, config=cfg, out=c), bias), repeat, w),
        triton_fused=fused if isinstance(fused, harness.Failed) else
        _timed(lambda: matmul_bias_gelu(a, b, bias, config=cfg, out=c), repeat, w),
        epilogue_only=_timed(lambda: _eager_epilogue(c, bias), repeat, w),
        fused_relative_error=err,
    )


# --------------------------------------------------------------------------------------------
# 3. Power and data dependence
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataRun(harness.Result):
    """The same GEMM held back to back on one kind of data: FLOP/s per window, the SM clock and the
    board power sampled during it (``None`` with the reason where NVML is not available)."""

    data: str
    zero_fraction: float  # measured fraction of exact zeros in A and B
    flop_per_s: float
    window_flop_per_s: tuple[float, ...]
    seconds_per_window: float
    calls_per_window: int
    sm_clock_mhz: Optional[dict] = None
    power_w: Optional[dict] = None
    power_kind: Optional[str] = None
    nvml: Optional[str] = None
    nvml_reason: Optional[str] = None


@dataclass(frozen=True)
class DataDependence(harness.Result):
    n: int
    dtype: str
    rest_s: float
    runs: tuple[Union[DataRun, harness.Failed], ...]
    power_limit_w: Optional[float] = None
    sparse_zero_fraction: float = SPARSE_ZERO_FRACTION


def operands(kind: str, shape, dtype, gen) -> torch.Tensor:
    """One operand of the data-dependence experiment: ``"zeros"``, ``"ones"``, ``"randn"`` (standard
    normal) or ``"sparse"`` (standard normal with :data:`SPARSE_ZERO_FRACTION` of the entries, at
    random places, set to zero)."""
    dev = harness.device()
    if kind == "zeros":
        return torch.zeros(shape, device=dev, dtype=dtype)
    if kind == "ones":
        return torch.ones(shape, device=dev, dtype=dtype)
    x = torch.randn(shape, generator=gen, device=dev)
    if kind == "sparse":
        x = x * (torch.rand(shape, generator=gen, device=dev) >= SPARSE_ZERO_FRACTION)
    elif kind != "randn":
        raise ValueError(f"kind must be one of {DATA_KINDS}, got {kind!r}")
    return x.to(dtype)


def _data_run(kind: str, n: int, dt, seconds: float, windows: int, rest_s: float, seed: int) -> DataRun:
    from .tensor_cores import _time_sustained

    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a, b = operands(kind, (n, n), dt, gen), operands(kind, (n, n), dt, gen)
    zero = float(((a == 0).sum() + (b == 0).sum()).item()) / (2 * n * n)
    fn = lambda: a @ b  # noqa: E731
    per_call = harness.time_fn(fn, warmup=3, repeat=3).median_s
    if rest_s:
        harness.synchronize()
        time.sleep(rest_s)  # let the clock recover from the previous run
    s = _time_sustained(fn, lambda: None, 2 * n**3, seconds=seconds, per_call_s=per_call, windows=windows)
    return DataRun(kind, zero, s["flop_per_s"], tuple(s["window_flop_per_s"]), seconds, s["calls_per_window"],
                   s["sm_clock_mhz"], s["power_w"], s["power_kind"], s["nvml"], s["nvml_reason"])


def measure_data_dependence(n: int | None = None, kinds=DATA_KINDS, *, seconds: float | None = None,
                            windows: int | None = None, seed: int = 0) -> DataDependence:
    """One ``n^3`` GEMM (bf16 on a GPU: ``n = 8192``; fp32 at ``n = 32`` on a CPU, 1 ms per kind) held back to
    back for ``windows`` x ``seconds`` on each kind of data (:func:`operands`), after a rest, with
    the SM clock and board power sampled (NVML). Same instructions, same bytes: only the bits differ."""
    gpu = harness.on_gpu()
    n = n or (DATA_N_GPU if gpu else DATA_N_CPU)
    seconds = seconds if seconds is not None else (2.0 if gpu else 0.001)
    windows = windows or (1 if gpu else 1)
    rest_s = 1.0 if gpu else 0.0
    dt = _dtype() if gpu else torch.float32
    runs = tuple(harness.attempt(_data_run, kd, n, dt, seconds, windows, rest_s, seed) for kd in kinds)
    cp = harness.gpu_clock_power() or {}
    return DataDependence(n, _dname(dt), rest_s, runs, cp.get("power_limit_w"))


# --------------------------------------------------------------------------------------------
# 5a. 2:4 structured sparsity
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SparseRun(harness.Result):
    n: int
    dtype: str
    dense: Union[Spread, harness.Failed]
    sparse: Union[Spread, harness.Failed]
    backend: Optional[str] = None
    relative_error: Optional[float] = None  # sparse result against the dense GEMM of the same pruned matrix


def prune_2_4(x: torch.Tensor) -> torch.Tensor:
    """Keep the two largest-magnitude values of every four consecutive ones along each row (2:4)."""
    if x.shape[-1] % 4:
        raise ValueError(f"the last dimension must be a multiple of 4 for 2:4 pruning, got {x.shape[-1]}")
    g = x.reshape(-1, 4)
    idx = g.abs().topk(2, dim=1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(1, idx, True)
    return (g * mask).reshape(x.shape)


def measure_sparse_2_4(n: int | None = None, *, repeat: int | None = None, seed: int = 0) -> SparseRun:
    """A 2:4-pruned ``n x n`` matrix times a dense one: dense GEMM against
    ``torch.sparse.to_sparse_semi_structured`` (cuSPARSELt or CUTLASS kernels). GPU only: on a CPU
    (or where torch has no such kernels for this GPU) the sparse step is a :class:`harness.Failed`."""
    gpu = harness.on_gpu()
    n = n or (SPARSE_N_GPU if gpu else 64)
    repeat = repeat or (20 if gpu else 1)
    dt = _dtype() if gpu else torch.float32
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a = prune_2_4(torch.randn((n, n), generator=gen, device=harness.device())).to(dt)
    b = torch.randn((n, n), generator=gen, device=harness.device()).to(dt)
    dense = _timed(lambda: a @ b, repeat)

    def sparse_setup():
        if not gpu:
            raise RuntimeError("no GPU: semi-structured (2:4) sparse kernels run on sm_80 and newer only")
        from torch.sparse import to_sparse_semi_structured

        return to_sparse_semi_structured(a)

    sa = harness.attempt(sparse_setup)
    if isinstance(sa, harness.Failed):
        return SparseRun(n, _dname(dt), dense, sa)
    got = harness.attempt(lambda: sa @ b)
    if isinstance(got, harness.Failed):
        return SparseRun(n, _dname(dt), dense, got, type(sa).__name__)
    err = _rel_err(got, a @ b)
    return SparseRun(n, _dname(dt), dense, _timed(lambda: sa @ b, repeat), type(sa).__name__, err)


# --------------------------------------------------------------------------------------------
# 5b. Grouped GEMM: many small expert GEMMs
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupedGemm(harness.Result):
    """``experts`` GEMMs of ``tokens`` x ``k`` by ``k`` x ``n`` (equal groups): one launch per
    expert (a Python loop of ``torch.mm``), one batched launch (``torch.bmm``), and one grouped
    launch (``torch._grouped_mm``, offsets per group) where this torch and GPU have it."""

    experts: int
    tokens: int
    k: int
    n: int
    dtype: str
    loop: Union[Spread, harness.Failed]
    bmm: Union[Spread, harness.Failed]
    grouped: Union[Spread, harness.Failed, None] = None
    grouped_relative_error: Optional[float] = None


def measure_grouped_gemm(shape=None, *, repeat: int | None = None, seed: int = 0) -> GroupedGemm:
    """Time the MoE-style grouped GEMM three ways (:class:`GroupedGemm`). GPU: 64 experts x 256
    tokens, K = 2048, N = 1536 in bf16; CPU: 4 x 16, 32, 32 in fp32. Timed as the host issues it
    (no spacer): the loop's launches are part of its cost."""
    gpu = harness.on_gpu()
    e, t, k, n = shape or (GROUPED_GPU if gpu else GROUPED_CPU)
    repeat = repeat or (20 if gpu else 1)
    dt = _dtype() if gpu else torch.float32
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    x = torch.randn((e, t, k), generator=gen, device=harness.device()).to(dt)
    w = (torch.randn((e, k, n), generator=gen, device=harness.device()) / math.sqrt(k)).to(dt)
    xs, ws = list(x.unbind(0)), list(w.unbind(0))

    def loop():
        return [torch.mm(xi, wi) for xi, wi in zip(xs, ws)]

    def grouped_fn():
        if not gpu:
            raise RuntimeError("no GPU: torch._grouped_mm runs on CUDA only")
        if not hasattr(torch, "_grouped_mm"):
            raise RuntimeError(f"torch {torch.__version__} has no torch._grouped_mm")
        x2 = x.reshape(e * t, k)
        offs = torch.arange(t, e * t + 1, t, device=x.device, dtype=torch.int32)
        wt = w.transpose(-2, -1).contiguous().transpose(-2, -1)  # each expert's B column-major
        errors = []
        for b in (wt, w):  # kernels differ in the B layout they take: try column-major, then row-major
            f = lambda b=b: torch._grouped_mm(x2, b, offs=offs)  # noqa: E731
            try:
                return f, f()
            except Exception as exc:  # noqa: BLE001 - the next layout, or the reason
                errors.append(f"{type(exc).__name__}: {str(exc)[:150]}")
        raise RuntimeError("torch._grouped_mm failed: " + "; ".join(errors))

    g = harness.attempt(grouped_fn)
    grouped, gerr = None, None
    if isinstance(g, harness.Failed):
        grouped = g
    else:
        f, out = g
        gerr = _rel_err(out.reshape(e, t, n), torch.bmm(x, w))
        grouped = _timed(f, repeat, spaced=False)
    # No spacer here: the host issuing one launch per expert is what the loop costs.
    return GroupedGemm(e, t, k, n, _dname(dt), _timed(loop, repeat, spaced=False),
                       _timed(lambda: torch.bmm(x, w), repeat, spaced=False), grouped, gerr)


# --------------------------------------------------------------------------------------------
# The topic's depth record
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DepthResults(harness.Result):
    """Everything above (``results["depth"]`` of the tensor_cores record); each step fails soft."""

    tiles: Union[TileSweep, harness.Failed, None] = None
    epilogue: Union[EpilogueFusion, harness.Failed, None] = None
    data: Union[DataDependence, harness.Failed, None] = None
    sparse: Union[SparseRun, harness.Failed, None] = None
    grouped: Union[GroupedGemm, harness.Failed, None] = None
    seconds: Optional[dict] = None  # wall time of each step [s]


def run_depth() -> DepthResults:
    """Every depth experiment, each fail-soft, with its wall time."""
    steps = {"tiles": measure_tile_sweep, "epilogue": measure_epilogue_fusion, "data": measure_data_dependence,
             "sparse": measure_sparse_2_4, "grouped": measure_grouped_gemm}
    out, secs = {}, {}
    for name, fn in steps.items():
        t0 = time.perf_counter()
        out[name] = harness.attempt(fn)
        harness.synchronize()
        secs[name] = round(time.perf_counter() - t0, 2)
    return DepthResults(**out, seconds=secs)



# --------------------------------------------------------------------------------------------
# Constants measured by other chapters' micro-benchmarks (the "calibrated" inputs), and the
# accuracy ledger of the depth experiments
# --------------------------------------------------------------------------------------------
def calibration(gpu: str = "h200") -> dict:
    """Constants the depth models take from OTHER recorded micro-benchmarks of ``gpu``: the L2
    plateau of memory_hierarchy's working-set sweep [B/s], simt's DRAM pointer-chase latency [s] and
    simt's eager launch cost per kernel [s]. A missing record or field gives ``None`` (the row that
    needs it is then left out), never an error."""
    out = {"l2_bytes_per_s": None, "dram_latency_s": None, "launch_s": None}
    try:
        from ..models.memory_hierarchy_records import l2_plateau_and_hbm_level

        out["l2_bytes_per_s"] = l2_plateau_and_hbm_level(harness.load_reference("memory_hierarchy", gpu))[0]
    except Exception:  # noqa: BLE001 - no record, or a record without the sweep
        pass
    try:
        simt = harness.load_reference("simt", gpu)["results"]
        out["dram_latency_s"] = simt.get("memory_latency", {}).get("dram_latency_s")
        out["launch_s"] = simt.get("launch_overhead", {}).get("eager_per_kernel_s")
    except Exception:  # noqa: BLE001
        pass
    return out


def _ok(x) -> bool:
    return isinstance(x, dict) and "error" not in x and x.get("median_s") is not None


def accuracy_rows(record: dict) -> list:
    """The depth experiments' comparisons in a tensor_cores ``record`` (``results["depth"]``),
    recomputed from the raw times with today's models; nothing where the record has no depth part
    or no catalog GPU.

    Labels: a tile's throughput against the catalog levels alone (compute, HBM, shared memory) is a
    **prediction**; with the L2 level added, where it binds, **calibrated** (the L2 bandwidth is
    the memory_hierarchy chapter's measured plateau). The eager epilogue's time and what fusion saves
    are **predictions** (HBM bandwidth from the catalog). Throughput on zeros, ones and sparse data
    scaled from the random-data run by the SM clocks seen is a **fit**: the random-data run's
    throughput is measured on another run, but the clock of the run compared is the one the power
    governor chose under that very load, a measured behaviour of the data compared
    (``widgets.accuracy.LABEL_RULES``). The 2:4 speed-up is a
    **prediction**; the grouped GEMM's loop time is a **prediction** where simt's measured launch cost
    is below each GEMM's time (it then does not enter), else **calibrated**; its grouped time, which
    adds one launch at that cost, **calibrated** (a **prediction** without simt's record).
    """
    from ..accuracy import Row
    from ..dtypes import bytes_per_element
    from ..models import tensor_cores as model

    R = record.get("results", {})
    D, gpu = R.get("depth"), R.get("catalog_gpu")
    if not isinstance(D, dict) or not gpu or "error" in D:
        return []
    prov = record.get("provenance", {})
    device = prov.get("gpu") or prov.get("device") or "unknown"
    g = get_gpu_safe(gpu)
    if g is None:
        return []
    cal = calibration()
    topic, rows = "tensor_cores", []
    dt = {"bfloat16": "bf16", "float16": "fp16"}
    T = D.get("tiles")
    if isinstance(T, dict) and "error" not in T and not T.get("interpreted", True) and dt.get(T.get("dtype")) in g.peak_flop_per_s:
        d = dt[T["dtype"]]
        for p in T["points"]:
            if not _ok(p.get("time")):
                continue
            bm, bn, bk, gm, st, w = p["config"]
            wm, wn = model.smem_read_tile(bm, bn, w, wgmma=g.arch == "sm_90")
            h0 = model.tile_hierarchy(g, d, bm, bn, bk, wm, wn, st, w, m=T["n"], n=T["n"], k=T["n"], group_m=gm)
            rows.append(Row(topic, f"Triton {d} GEMM {T['n']}^3, {bm}×{bn}×{bk} tile, {st} stages, {w} warps, catalog levels",
                            f"min over HBM, shared memory, compute: {h0.bound}-bound", h0.attainable_flop_per_s,
                            p["flop_per_s"], "FLOP/s", "prediction", device,
                            "catalog peak, HBM bandwidth and 128 B/clk/SM of shared memory; no L2 level"))
            h = model.tile_hierarchy(g, d, bm, bn, bk, wm, wn, st, w, m=T["n"], n=T["n"], k=T["n"], group_m=gm,
                                     l2_bytes_per_s=cal["l2_bytes_per_s"])
            if h.bound == h0.bound:
                continue  # the L2 level does not bind: the row above says it all
            label = "calibrated" if h.bound == "L2" else "prediction"
            rows.append(Row(topic, f"Triton {d} GEMM {T['n']}^3, {bm}×{bn}×{bk} tile, {st} stages, {w} warps",
                            f"min over levels: {h.bound}-bound (block {h.block_intensity:.0f}, wgmma tile "
                            f"{h.smem_intensity:.0f}, wave {h.wave_intensity:.0f} FLOP/B)",
                            h.attainable_flop_per_s, p["flop_per_s"], "FLOP/s", label, device,
                            "L2 bandwidth: memory_hierarchy's measured plateau" if label == "calibrated" else
                            "catalog peak, HBM bandwidth and 128 B/clk/SM of shared memory"))
    E = D.get("epilogue")
    if isinstance(E, dict) and "error" not in E and not E.get("interpreted", True):
        out_b = 2
        chain = model.epilogue_fusion_estimate(E["m"], E["n"], E["k"], g.peak("bf16"), g.hbm_bytes_per_s, g.sms,
                                               out_bytes=out_b)
        if _ok(E.get("epilogue_only")):
            rows.append(Row(topic, f"eager bias + GELU on a {E['m']}×{E['n']} {E['dtype']} C", "2 passes over C at the catalog HBM bandwidth",
                            chain.epilogue_s, E["epilogue_only"]["median_s"], "s", "prediction", device,
                            f"{chain.epilogue_bytes / 2**20:.0f} MiB read and written"))
        if _ok(E.get("triton_unfused")) and _ok(E.get("triton_fused")):
            saved = E["triton_unfused"]["median_s"] - E["triton_fused"]["median_s"]
            if saved > 0:
                rows.append(Row(topic, f"time epilogue fusion saves, {E['m']}×{E['n']}×{E['k']} (Triton unfused − fused)",
                                "the eager passes' bytes at the catalog HBM bandwidth", chain.epilogue_s, saved, "s",
                                "prediction", device, "same GEMM tile in both; the fused one applies bias+GELU in registers"))
    DD = D.get("data")
    if isinstance(DD, dict) and "error" not in DD:
        runs = {r["data"]: r for r in DD.get("runs", []) if isinstance(r, dict) and "error" not in r}
        base = runs.get("randn")
        clk = lambda r: ((r or {}).get("sm_clock_mhz") or {}).get("median") if ((r or {}).get("sm_clock_mhz") or {}).get("samples", 0) >= 10 else None  # noqa: E731
        if base and clk(base):
            for kind in ("zeros", "ones", "sparse"):
                r = runs.get(kind)
                if r and clk(r):
                    rows.append(Row(topic, f"{DD['dtype']} GEMM {DD['n']}^3 on {kind}, sustained",
                                    f"the random-data run's measured throughput × clock ratio ({clk(r):.0f} / "
                                    f"{clk(base):.0f} MHz, NVML's medians during the two runs)",
                                    base["flop_per_s"] * clk(r) / clk(base), r["flop_per_s"], "FLOP/s", "fit", device,
                                    "fitted: the clock of the run compared is the one the power governor chose under that "
                                    "load; the random-data throughput is measured on another run"))
    S = D.get("sparse")
    if isinstance(S, dict) and "error" not in S and _ok(S.get("dense")) and _ok(S.get("sparse")):
        d = dt.get(S["dtype"])
        if d in g.peak_flop_per_s:
            e = int(bytes_per_element(d))
            pred = model.sparse_2_4_speedup(S["n"], S["n"], S["n"], g.peak(d), g.hbm_bytes_per_s, g.sms, in_bytes=e)
            rows.append(Row(topic, f"2:4 sparse {d} GEMM {S['n']}^3, speed-up over dense", "2 × the dense peak, same tiles and waves",
                            pred, S["dense"]["median_s"] / S["sparse"]["median_s"], "x", "prediction", device,
                            f"torch.sparse.to_sparse_semi_structured ({S.get('backend')})"))
    G = D.get("grouped")
    if isinstance(G, dict) and "error" not in G:
        d = dt.get(G["dtype"])
        if d in g.peak_flop_per_s:
            est = model.grouped_gemm_estimate(G["experts"], G["tokens"], G["n"], G["k"], g.peak(d), g.hbm_bytes_per_s, g.sms,
                                              launch_s=cal["launch_s"] or 0.0)
            shape = f"{G['experts']} × ({G['tokens']}×{G['n']}×{G['k']})"
            if _ok(G.get("loop")) and cal["launch_s"]:
                # the calibrated launch cost enters only where it exceeds one GEMM's time (max(per group, launch))
                hidden = cal["launch_s"] <= est.per_group_s
                rows.append(Row(topic, f"{d} GEMMs {shape}, one launch each", "per-GEMM waves of 128×256 tiles, ≥ one launch each",
                                est.loop_s, G["loop"]["median_s"], "s", "prediction" if hidden else "calibrated", device,
                                "simt's measured launch cost is below each GEMM's time, so it does not enter" if hidden
                                else "launch cost: simt's measured eager launch"))
            if _ok(G.get("grouped")):
                rows.append(Row(topic, f"{d} GEMMs {shape}, one grouped launch (torch._grouped_mm)",
                                "waves over every group's 128×256 tiles" + (" + one launch (simt's measured eager launch)"
                                                                             if cal["launch_s"] else ""),
                                est.grouped_s, G["grouped"]["median_s"], "s",
                                "prediction" if not cal["launch_s"] else "calibrated", device, ""))
    return rows


def get_gpu_safe(name):
    """The catalog record ``name``, or None."""
    from ..hardware import get_gpu

    try:
        return get_gpu(name)
    except Exception:  # noqa: BLE001
        return None


def depth_part(record: dict, key: str):
    """``results["depth"][key]`` of a tensor_cores record, or None where the record has none or
    the step failed (:func:`depth_status` says which)."""
    D = (record or {}).get("results", {}).get("depth")
    part = D.get(key) if isinstance(D, dict) else None
    return part if isinstance(part, dict) and "error" not in part else None


def depth_status(record: dict, key: str) -> str:
    """"" where the record holds step ``key`` of the depth experiments, else a sentence saying why
    not (never recorded, or failed with the recorded error)."""
    D = (record or {}).get("results", {}).get("depth")
    if not isinstance(D, dict):
        return ("The H200 reference record does not hold this experiment yet: it is measured by "
                "python -m widgets.measure --topic tensor_cores on a GPU.")
    if isinstance(D.get("error"), str):
        return f"The depth experiments failed in the recorded run ({D['error'][:200]})."
    part = D.get(key)
    if part is None:
        return "The H200 reference record does not hold this step."
    if isinstance(part, dict) and "error" in part:
        return f"This step failed in the recorded run: {part['error'][:200]}."
    return ""


def compare_rows(record: dict, keyword: str) -> list[dict]:
    """The :func:`accuracy_rows` whose quantity contains ``keyword``, formatted for
    ``widgets.book.compare_table`` (quantity, model, label, reference, ratio)."""
    from ..units import fmt_flop_per_s, fmt_time

    def fmt(v, unit):
        return fmt_flop_per_s(v) if unit == "FLOP/s" else fmt_time(v) if unit == "s" else f"{v:.2f}{'×' if unit == 'x' else ' ' + unit}"

    out = []
    for r in accuracy_rows(record):
        if keyword in r.quantity:
            out.append(dict(quantity=r.quantity, model=fmt(r.predicted, r.unit), label=r.label,
                            reference=fmt(r.measured, r.unit), ratio=f"{r.measured / r.predicted:.2f}"))
    return out
