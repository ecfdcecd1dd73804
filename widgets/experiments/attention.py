"""Attention, measured: a fused softmax, the chapter's FlashAttention kernel, PyTorch SDPA's backends.

Four experiments, each fail-soft per step (a step that cannot run is recorded as a
:class:`harness.Failed` or an error string with its reason, never raised):

- :func:`measure_softmax`: a row softmax written as five eager ops, PyTorch's own softmax kernel
  and the Triton kernel of :mod:`.attention_triton` (one read, one write), at several row lengths;
- :func:`measure_flash`: the Triton FlashAttention forward against every SDPA backend (flash,
  cuDNN, memory-efficient, math), each run alone under ``torch.nn.attention.sdpa_kernel``, causal
  and not, at bf16 and head size 128 (fp16 and small sizes through Triton's interpreter on a CPU:
  the interpreter mis-multiplies bf16 in ``tl.dot``);
- :func:`measure_memory`: peak memory and time against the sequence length for the math and the
  flash backends (``torch.cuda.max_memory_allocated``), up to the length where the math path
  runs out of memory;
- :func:`measure_backends`: which backend runs for each dtype x head size x mask x dropout. How it
  is detected: each backend is tried alone (``sdpa_kernel([backend])``); the ones that succeed
  are recorded with their time and the ones that refuse with the warning PyTorch gives. The
  default choice is read from the dispatcher itself (``torch._fused_sdp_choice``, the function
  ``scaled_dot_product_attention`` calls) and checked against the first backend of
  ``torch._C._get_sdp_priority_order()`` that succeeded alone.

Standard attention's HBM traffic is counted by Nsight Compute in a separate script
(``benchmarks/h200/attention_ncu.py``, record ``attention_ncu.json``).

``accuracy_rows(record)`` recomputes every comparison from the raw times of a record and today's
models (:mod:`widgets.models.attention`).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch

from ..accuracy import Row
from ..models import attention as model
from . import attention_triton as kernels
from . import harness
from ._triton import INTERPRETED

TOPIC = "attention"
BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
"""SDPA's backends the experiments try, by their ``SDPBackend`` names."""
BACKEND_SHORT = {"FLASH_ATTENTION": "flash", "CUDNN_ATTENTION": "cuDNN", "EFFICIENT_ATTENTION": "memory-efficient",
                 "MATH": "math", "triton": "this chapter's Triton kernel",
                 "triton_tma": "the same kernel, TMA descriptors"}

HEAD_DIM = 128
GPU_FLASH_SHAPES = ((4, 16, 4096), (2, 16, 8192))  # (batch, heads, seq): B*H*N the same, 64 and 32 (batch, head) pairs
CPU_FLASH_SHAPES = ((1, 2, 128), (1, 2, 256))
CPU_HEAD_DIM = 64
BF16_TOLERANCE = 2e-2  # largest |Triton - SDPA| accepted at bf16 (a few bf16 ulps of O's values)
CPU_TOLERANCE = 2e-3  # fp16 through the interpreter against SDPA in fp32

GPU_SOFTMAX_ELEMS = 2**27  # 512 MiB of fp32 per tensor: far beyond the L2
GPU_SOFTMAX_COLS = (1024, 4096, 16384)
CPU_SOFTMAX_SHAPES = ((8, 128), (8, 512))

# 256 to 832: below the length at which PyTorch's flash forward stops splitting the keys for this shape on an H200
# (models.attention.flash_split_kv_splits: 2, 2, 6 and 1 parts), so its split-KV accumulators are measured too
GPU_MEMORY_SEQS = (256, 512, 768, 832, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
CPU_MEMORY_SEQS = (128, 256, 512)
MEMORY_SHAPE = dict(batch=1, heads=16, head_dim=128)
CPU_MEMORY_SHAPE = dict(batch=1, heads=2, head_dim=64)

TABLE_DTYPES = ("fp32", "fp16", "bf16")
TABLE_HEAD_DIMS = (64, 128, 256)
TABLE_MASKS = ("none", "causal", "bool")
TABLE_DROPOUTS = (0.0, 0.1)
TABLE_SHAPE = dict(batch=1, heads=16, seq=2048)
CPU_TABLE_SHAPE = dict(batch=1, heads=2, seq=64)
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
NCU_FILE = "attention_ncu.json"

CPU_NOTE = ("CPU: Triton's interpreter at tiny sizes in fp16 (the interpreter mis-multiplies bf16 in tl.dot); "
            "times show the method, not a GPU")


# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timed(harness.Result):
    """Seconds per call: median and spread of ``repeat`` timed calls."""

    median_s: float
    min_s: float
    max_s: float
    repeat: int


@dataclass(frozen=True)
class SoftmaxPoint(harness.Result):
    """One row length: the time of each way and the largest difference from ``torch.softmax``."""

    rows: int
    cols: int
    elem_bytes: int
    naive: Union[Timed, harness.Failed, None] = None
    torch_fused: Union[Timed, harness.Failed, None] = None
    triton: Union[Timed, harness.Failed, None] = None
    triton_max_abs_error: Optional[float] = None
    naive_max_abs_error: Optional[float] = None


@dataclass(frozen=True)
class SoftmaxResult(harness.Result):
    device: str
    interpreted: bool
    points: tuple[SoftmaxPoint, ...]
    note: str = ""


@dataclass(frozen=True)
class KernelRun(harness.Result):
    """One way of computing attention at one shape: its time, its error against the reference
    (SDPA's default choice, or fp32 on a CPU), the bytes it allocated beyond its inputs at its peak,
    or the error that stopped it."""

    name: str
    time: Union[Timed, harness.Failed, None] = None
    max_abs_error: Optional[float] = None
    peak_extra_bytes: Optional[int] = None


@dataclass(frozen=True)
class FlashPoint(harness.Result):
    batch: int
    heads: int
    seq: int
    head_dim: int
    dtype: str
    causal: bool
    runs: tuple[KernelRun, ...]
    triton_config: Optional[tuple[int, ...]] = None  # (BLOCK_M, BLOCK_N, num_warps, num_stages)
    first_call_s: Optional[float] = None  # the Triton kernel's first call: compilation and autotuning included
    triton_tma_config: Optional[tuple[int, ...]] = None  # the TMA variant's choice
    autotune_ms: dict[str, float] = field(default_factory=dict)  # each configuration's time when the pointer kernel was tuned
    tma_autotune_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class FlashResult(harness.Result):
    device: str
    interpreted: bool
    points: tuple[FlashPoint, ...]
    tolerance: float
    note: str = ""


@dataclass(frozen=True)
class MemoryPoint(harness.Result):
    """One backend at one sequence length: bytes allocated at the peak beyond what was allocated
    before the inputs existed (``peak_bytes``: Q, K, V and O count), beyond what was allocated once
    they existed (``extra_bytes``: what the backend itself allocated; None in records made before
    it was measured), its time, or the error (out of memory)."""

    seq: int
    backend: str
    peak_bytes: Optional[int] = None
    time_s: Optional[float] = None
    error: str = ""
    extra_bytes: Optional[int] = None


@dataclass(frozen=True)
class MemoryResult(harness.Result):
    batch: int
    heads: int
    head_dim: int
    dtype: str
    device: str
    capacity_bytes: int
    points: tuple[MemoryPoint, ...]
    note: str = ""
    math_half_in_fp32: Optional[bool] = None  # True: the math path computes fp16/bf16 in fp32 (PyTorch >= 2.5 default)


@dataclass(frozen=True)
class BackendCase(harness.Result):
    """One dtype x head size x mask x dropout: the backends that ran alone (with their times),
    why each other refused, and the dispatcher's own choice."""

    dtype: str
    head_dim: int
    mask: str
    dropout: float
    ran: tuple[str, ...]
    times_s: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    dispatcher_choice: Optional[str] = None
    priority_choice: Optional[str] = None


@dataclass(frozen=True)
class BackendResult(harness.Result):
    batch: int
    heads: int
    seq: int
    device: str
    torch_version: str
    priority_order: tuple[str, ...]
    how: str
    cases: tuple[BackendCase, ...]


@dataclass(frozen=True)
class AttentionResults(harness.Result):
    softmax: Union[SoftmaxResult, harness.Failed, None] = None
    flash: Union[FlashResult, harness.Failed, None] = None
    memory: Union[MemoryResult, harness.Failed, None] = None
    backends: Union[BackendResult, harness.Failed, None] = None


RESULTS = AttentionResults


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _timed(fn, repeat: int, warmup: int = 3) -> Union[Timed, harness.Failed]:
    t = harness.attempt(harness.time_fn, fn, warmup=warmup, repeat=repeat)
    if isinstance(t, harness.Failed):
        return t
    return Timed(t.median_s, t.min_s, t.max_s, t.repeat)


def _max_abs(a, b) -> Optional[float]:
    try:
        v = (a.float() - b.float()).abs().max().item()
    except Exception:  # noqa: BLE001
        return None
    return float(v) if math.isfinite(v) else None


def _free() -> None:
    import gc

    gc.collect()
    if harness.on_gpu():
        torch.cuda.empty_cache()


def _backend(name: str):
    from torch.nn.attention import SDPBackend

    return getattr(SDPBackend, name)


def _sdpa(q, k, v, backend: Optional[str] = None, causal: bool = False, mask=None, dropout: float = 0.0):
    """SDPA with one backend alone (``backend`` None: PyTorch's own choice)."""
    import torch.nn.functional as F

    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal)
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel([_backend(backend)]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal)


_TRIGGERED = re.compile(r"\(Triggered internally at [^)]*\)\.?")


def _refusal(exc: BaseException, caught) -> str:
    """The reason a backend refused: PyTorch's warnings (why each check failed), else the error."""
    reasons = [" ".join(_TRIGGERED.sub("", str(w.message)).split()) for w in caught]
    reasons = [r for r in reasons if "Memory efficient kernel not used" not in r or len(reasons) == 1]
    text = "; ".join(dict.fromkeys(reasons)) or f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return text[:400]


def _peak_extra(fn) -> Optional[int]:
    """Bytes allocated at ``fn()``'s peak beyond what was allocated before it (GPU only)."""
    if not harness.on_gpu():
        fn()
        return None
    harness.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    harness.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return int(peak)


# --------------------------------------------------------------------------------------------
# 1. Fused softmax
# --------------------------------------------------------------------------------------------
def measure_softmax(shapes=None, repeat: int = 20) -> SoftmaxResult:
    """Five eager ops, ``torch.softmax`` and the Triton kernel on fp32 rows of several lengths."""
    gpu = harness.on_gpu()
    if shapes is None:
        shapes = tuple((GPU_SOFTMAX_ELEMS // c, c) for c in GPU_SOFTMAX_COLS) if gpu else CPU_SOFTMAX_SHAPES
    dev = harness.device()
    points = []
    for rows, cols in shapes:
        g = torch.Generator(device=dev).manual_seed(0)
        x = harness.attempt(torch.randn, (rows, cols), generator=g, device=dev, dtype=torch.float32)
        if isinstance(x, harness.Failed):
            points.append(SoftmaxPoint(rows, cols, 4, naive=x))
            continue
        want = torch.softmax(x, dim=1)
        tri = harness.attempt(kernels.softmax, x)
        nai = harness.attempt(kernels.naive_softmax, x)
        points.append(SoftmaxPoint(
            rows, cols, 4,
            naive=_timed(lambda: kernels.naive_softmax(x), repeat),
            torch_fused=_timed(lambda: torch.softmax(x, dim=1), repeat),
            triton=_timed(lambda: kernels.softmax(x), repeat, warmup=3 if gpu else 0) if not isinstance(tri, harness.Failed) else tri,
            triton_max_abs_error=None if isinstance(tri, harness.Failed) else _max_abs(tri, want),
            naive_max_abs_error=None if isinstance(nai, harness.Failed) else _max_abs(nai, want)))
        x = want = tri = nai = None  # free before the next size
        _free()
    return SoftmaxResult(harness.device_name(), INTERPRETED, tuple(points), "" if gpu else CPU_NOTE)


# --------------------------------------------------------------------------------------------
# 2. FlashAttention: the Triton kernel against SDPA's backends
# --------------------------------------------------------------------------------------------
def _gpu_dtype() -> tuple[torch.dtype, str]:
    """bf16 where the GPU has bf16 tensor cores (sm_80 and later), fp16 elsewhere (and in Triton's interpreter)."""
    if harness.on_gpu() and harness.capabilities().tensor_cores("bf16"):
        return torch.bfloat16, "bf16"
    return torch.float16, "fp16"


def _inputs(batch, heads, seq, head_dim, dtype, seed=0):
    dev = harness.device()
    g = torch.Generator(device=dev).manual_seed(seed)
    return tuple(torch.randn((batch, heads, seq, head_dim), generator=g, device=dev, dtype=dtype) for _ in range(3))


def _flash_point(batch, heads, seq, head_dim, causal, repeat) -> FlashPoint:
    gpu = harness.on_gpu()
    dtype, name = _gpu_dtype()
    q, k, v = _inputs(batch, heads, seq, head_dim, dtype)
    # the reference: SDPA's default choice on a GPU; fp32 SDPA on a CPU
    ref = harness.attempt(_sdpa, q, k, v, None, causal) if gpu else _sdpa(q.float(), k.float(), v.float(), None, causal)
    runs = []
    import time

    t0 = time.perf_counter()
    out = harness.attempt(kernels.flash_attention, q, k, v, causal)
    harness.synchronize()
    first = time.perf_counter() - t0
    if isinstance(out, harness.Failed):
        runs.append(KernelRun("triton", time=out))
        first = None
    else:
        err = None if isinstance(ref, harness.Failed) else _max_abs(out, ref)
        del out
        peak = harness.attempt(_peak_extra, lambda: kernels.flash_attention(q, k, v, causal))
        runs.append(KernelRun("triton", time=_timed(lambda: kernels.flash_attention(q, k, v, causal), repeat,
                                                    warmup=3 if gpu else 0),
                              max_abs_error=err, peak_extra_bytes=peak if isinstance(peak, int) else None))
    config = tuple(kernels.best_config())
    tuned = kernels.autotune_timings() if gpu else {}
    tma_tuned: dict = {}
    tma_config = None
    if gpu:  # the same kernel with tensor descriptors (TMA on Hopper): fail-soft, a second Triton variant
        out = harness.attempt(kernels.flash_attention_tma, q, k, v, causal)
        if isinstance(out, harness.Failed):
            runs.append(KernelRun("triton_tma", time=out))
        else:
            err = None if isinstance(ref, harness.Failed) else _max_abs(out, ref)
            out = None
            runs.append(KernelRun("triton_tma", time=_timed(lambda: kernels.flash_attention_tma(q, k, v, causal), repeat),
                                  max_abs_error=err))
            tma_config = kernels.best_tma_config()
            tma_tuned = kernels.tma_autotune_timings()
        _free()
    for backend in BACKENDS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                o = _sdpa(q, k, v, backend, causal)
            except Exception as exc:  # noqa: BLE001 - the backend refused: recorded with its reason
                runs.append(KernelRun(backend, time=harness.Failed(_refusal(exc, caught))))
                continue
        err = None if isinstance(ref, harness.Failed) else _max_abs(o, ref)
        del o
        peak = harness.attempt(_peak_extra, lambda b=backend: _sdpa(q, k, v, b, causal))
        runs.append(KernelRun(backend, time=_timed(lambda b=backend: _sdpa(q, k, v, b, causal), repeat),
                              max_abs_error=err, peak_extra_bytes=peak if isinstance(peak, int) else None))
        _free()
    q = k = v = ref = None  # free before the next shape
    _free()
    return FlashPoint(batch, heads, seq, head_dim, name, bool(causal), tuple(runs), config, first,
                      tuple(tma_config) if tma_config else None, tuned, tma_tuned)


def measure_flash(shapes=None, head_dim: Optional[int] = None, repeat: Optional[int] = None) -> FlashResult:
    """The Triton kernel and each SDPA backend, causal and not, at each (batch, heads, seq)."""
    gpu = harness.on_gpu()
    shapes = shapes or (GPU_FLASH_SHAPES if gpu else CPU_FLASH_SHAPES)
    d = head_dim or (HEAD_DIM if gpu else CPU_HEAD_DIM)
    repeat = repeat or (20 if gpu else 1)
    points = []
    for b, h, n in shapes:
        for causal in (False, True):
            p = harness.attempt(_flash_point, b, h, n, d, causal, repeat)
            if isinstance(p, harness.Failed):
                p = FlashPoint(b, h, n, d, _gpu_dtype()[1], causal, (KernelRun("triton", time=p),))
            points.append(p)
    return FlashResult(harness.device_name(), INTERPRETED, tuple(points), BF16_TOLERANCE if gpu else CPU_TOLERANCE,
                       "" if gpu else CPU_NOTE)


# --------------------------------------------------------------------------------------------
# 3. Peak memory against N: math against flash
# --------------------------------------------------------------------------------------------
def _memory_point(seq, backend, shape, dtype, repeat) -> MemoryPoint:
    gpu = harness.on_gpu()
    before = torch.cuda.memory_allocated() if gpu else 0
    try:
        q, k, v = _inputs(shape["batch"], shape["heads"], seq, shape["head_dim"], dtype)
        if gpu:
            harness.synchronize()
            with_inputs = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        out = _sdpa(q, k, v, backend)
        harness.synchronize()
        top = torch.cuda.max_memory_allocated() if gpu else None
        del out
        t = harness.time_fn(lambda: _sdpa(q, k, v, backend), warmup=1, repeat=repeat)
        return MemoryPoint(seq, backend, int(top - before) if gpu else None, t.median_s,
                           extra_bytes=int(top - with_inputs) if gpu else None)
    except Exception as exc:  # noqa: BLE001 - out of memory is the result
        return MemoryPoint(seq, backend, error=" ".join(f"{type(exc).__name__}: {exc}".split())[:300])
    finally:
        q = k = v = out = None  # noqa: F841
        _free()


def measure_memory(seqs=None, repeat: int = 3) -> MemoryResult:
    """Peak memory and time of SDPA's math and flash backends against the sequence length (bf16 on
    a GPU, fp32 on a CPU); a length where the math path ran out of memory records the error."""
    gpu = harness.on_gpu()
    seqs = seqs or (GPU_MEMORY_SEQS if gpu else CPU_MEMORY_SEQS)
    shape = MEMORY_SHAPE if gpu else CPU_MEMORY_SHAPE
    dtype, dname = _gpu_dtype() if gpu else (torch.float32, "fp32")
    points = []
    for backend in ("MATH", "FLASH_ATTENTION"):
        failed = False
        for n in seqs:
            if failed:  # once out of memory, longer sequences are too
                points.append(MemoryPoint(n, backend, error="not tried: a shorter sequence already failed"))
                continue
            p = _memory_point(n, backend, shape, dtype, repeat)
            failed = bool(p.error)
            points.append(p)
    cap = int(torch.cuda.get_device_properties(0).total_memory) if gpu else 0
    try:
        upcast = not bool(torch._C._get_math_sdp_allow_fp16_bf16_reduction())
    except Exception:  # noqa: BLE001 - older torch: no such switch (the math path computed in the input's dtype)
        upcast = None
    return MemoryResult(shape["batch"], shape["heads"], shape["head_dim"], dname,
                        harness.device_name(), cap, tuple(points), "" if gpu else "CPU: no allocator counters; times only",
                        upcast)


# --------------------------------------------------------------------------------------------
# 4. The backend table
# --------------------------------------------------------------------------------------------
def _priority_order() -> tuple[str, ...]:
    from torch.nn.attention import SDPBackend

    try:
        order = torch._C._get_sdp_priority_order()
    except Exception:  # noqa: BLE001 - older torch: the documented order
        return ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION")
    names = {int(b.value): n for n, b in SDPBackend.__members__.items()}
    return tuple(names.get(int(i), str(i)) for i in order)


def _dispatcher_choice(q, k, v, mask, dropout, causal) -> Optional[str]:
    from torch.nn.attention import SDPBackend

    try:
        i = torch._fused_sdp_choice(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal)
    except Exception:  # noqa: BLE001 - a private function: absent in some versions
        return None
    names = {int(b.value): n for n, b in SDPBackend.__members__.items()}
    return names.get(int(i), str(i))


def _case(dtype_name, head_dim, mask_kind, dropout, shape, order, repeat) -> BackendCase:
    dtype = TORCH_DTYPES[dtype_name]
    q, k, v = _inputs(shape["batch"], shape["heads"], shape["seq"], head_dim, dtype)
    n = shape["seq"]
    causal = mask_kind == "causal"
    mask = None
    if mask_kind == "bool":  # an arbitrary boolean mask (here a band: each query sees 256 keys back)
        i = torch.arange(n, device=q.device)
        mask = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < 256)
    ran, times, refused = [], {}, {}
    for backend in BACKENDS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                _sdpa(q, k, v, backend, causal, mask, dropout)
            except Exception as exc:  # noqa: BLE001
                refused[backend] = _refusal(exc, caught)
                continue
        ran.append(backend)
        t = harness.attempt(harness.time_fn, lambda b=backend: _sdpa(q, k, v, b, causal, mask, dropout), warmup=1, repeat=repeat)
        if not isinstance(t, harness.Failed):
            times[backend] = t.median_s
    choice = _dispatcher_choice(q, k, v, mask, dropout, causal)
    prio = next((b for b in order if b in ran), None)
    q = k = v = mask = None  # free before the next case
    _free()
    return BackendCase(dtype_name, head_dim, mask_kind, float(dropout), tuple(ran), times, refused, choice, prio)


def measure_backends(repeat: Optional[int] = None) -> BackendResult:
    """Which SDPA backend runs for each dtype x head size x mask x dropout on this device."""
    gpu = harness.on_gpu()
    shape = TABLE_SHAPE if gpu else CPU_TABLE_SHAPE
    repeat = repeat or (5 if gpu else 1)
    order = _priority_order()
    cases = []
    for dt in TABLE_DTYPES:
        for d in TABLE_HEAD_DIMS:
            for m in TABLE_MASKS:
                for p in TABLE_DROPOUTS:
                    c = harness.attempt(_case, dt, d, m, p, shape, order, repeat)
                    if isinstance(c, harness.Failed):
                        c = BackendCase(dt, d, m, p, (), refused={"all": c.error})
                    cases.append(c)
    how = ("each backend tried alone under torch.nn.attention.sdpa_kernel([backend]) (refusals keep PyTorch's "
           "warning); the default is torch._fused_sdp_choice (the dispatcher's own function), checked against "
           "the first backend of torch._C._get_sdp_priority_order() that ran alone")
    return BackendResult(shape["batch"], shape["heads"], shape["seq"], harness.device_name(), torch.__version__, order, how,
                         tuple(cases))


def run_all() -> AttentionResults:
    softmax = harness.attempt(measure_softmax)
    _free()
    flash = harness.attempt(measure_flash)
    _free()
    memory = harness.attempt(measure_memory)
    _free()
    backends = harness.attempt(measure_backends)
    return AttentionResults(softmax=softmax, flash=flash, memory=memory, backends=backends)


# --------------------------------------------------------------------------------------------
# Reading records: derived quantities and the model against measurement
# --------------------------------------------------------------------------------------------
def run_tflop_per_s(point: FlashPoint, run: KernelRun) -> Optional[float]:
    """FLOP/s of one run in TFLOP/s, with the papers' convention (:func:`model.attention_flop`)."""
    if not isinstance(run.time, Timed) or run.time.median_s <= 0:
        return None
    flop = model.attention_flop(point.batch, point.heads, point.seq, point.seq, point.head_dim, causal=point.causal)
    return flop / run.time.median_s / 1e12


def flash_table(flash: FlashResult) -> list[dict]:
    """One row per (shape, causal, way): time, TFLOP/s, error, peak extra bytes, or the refusal."""
    out = []
    for p in flash.points:
        for r in p.runs:
            out.append({"seq": p.seq, "batch": p.batch, "heads": p.heads, "causal": p.causal, "name": r.name,
                        "time_s": r.time.median_s if isinstance(r.time, Timed) else None,
                        "tflop_per_s": run_tflop_per_s(p, r), "max_abs_error": r.max_abs_error,
                        "peak_extra_bytes": r.peak_extra_bytes,
                        "error": r.time.error if isinstance(r.time, harness.Failed) else ""})
    return out


def softmax_bytes(point: SoftmaxPoint, way: str) -> float:
    """The model's bytes for one way of the softmax (``fused`` for torch's and Triton's kernels) [B]."""
    return model.softmax_hbm_bytes(point.rows, point.cols, point.elem_bytes, fused=(way != "naive"))


def load_ncu(folder=None) -> Optional[dict]:
    """The Nsight Compute record of ``benchmarks/h200/attention_ncu.py``, or None if absent."""
    path = Path(folder) if folder else Path(__file__).resolve().parents[1] / "data" / "h200"
    f = path / NCU_FILE
    if not f.is_file():
        return None
    return json.loads(f.read_text())


def ncu_rows(ncu_record: Optional[Mapping]) -> list[dict]:
    """Per profiled case: DRAM bytes counted (read + write, all kernels of the case) against the model."""
    if not isinstance(ncu_record, Mapping) or not isinstance(ncu_record.get("points"), list):
        return []
    out = []
    for p in ncu_record["points"]:
        if not isinstance(p, Mapping) or "dram_bytes" not in p:
            continue
        b, h, n, d = (int(p[k]) for k in ("batch", "heads", "seq", "head_dim"))
        if p.get("kind") == "standard":
            want = model.standard_attention_hbm_bytes(b, h, n, d, int(p.get("elem_bytes", 2)))
        else:
            want = model.flash_attention_min_hbm_bytes(b, h, n, d, int(p.get("elem_bytes", 2)))
        got = p["dram_bytes"]
        got = float(got) if isinstance(got, (int, float)) and not isinstance(got, bool) and math.isfinite(got) else None
        out.append({"kind": p.get("kind"), "batch": b, "heads": h, "seq": n, "head_dim": d, "measured": got, "model": want,
                    "ratio": got / want if got else None})
    return out


REFERENCE_GPU_NAME = "H200-SXM"


def measured_copy_bytes_per_s() -> Optional[float]:
    """The H200's HBM bandwidth as the memory-hierarchy chapter's Triton copy measured it [B/s]
    (its reference record), or None where that record or field is missing."""
    try:
        rec = harness.load_reference("memory_hierarchy")
        v = rec["results"]["hbm_bandwidth"]["triton_copy_bytes_per_s"]
    except Exception:  # noqa: BLE001 - a calibration that is not there is left out
        return None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def accuracy_rows(record: dict) -> list:
    """Every comparison of the attention chapter, recomputed from ``record``'s raw measurements."""
    res = AttentionResults.from_record(record["results"])
    device = record.get("provenance", {}).get("gpu") or "?"
    rows: list = []
    from ..hardware import catalog_name_for, get_gpu

    name = catalog_name_for(device) if isinstance(device, str) else None
    gpu = get_gpu(name) if name else None
    sm = res.softmax
    copy_bw = measured_copy_bytes_per_s() if gpu is not None and gpu.name == REFERENCE_GPU_NAME else None
    if isinstance(sm, SoftmaxResult) and gpu is not None and not sm.interpreted:
        for p in sm.points:
            for way, t in (("naive", p.naive), ("torch_fused", p.torch_fused), ("triton", p.triton)):
                if isinstance(t, Timed):
                    what = f"softmax of {p.rows} rows × {p.cols} fp32, {way.replace('_', ' ')}: time"
                    pred = softmax_bytes(p, way) / gpu.hbm_bytes_per_s
                    rows.append(Row(TOPIC, what, "model bytes / datasheet HBM bandwidth", pred, t.median_s, "s", "prediction", device,
                                    "fails if the kernel is not bandwidth-bound or moves other bytes than counted"))
                    if copy_bw:
                        rows.append(Row(TOPIC, what, "model bytes / the H200's measured copy bandwidth (memory_hierarchy record)",
                                        softmax_bytes(p, way) / copy_bw, t.median_s, "s", "calibrated", device,
                                        "the bandwidth is a constant measured on another micro-benchmark (a Triton copy)"))
    mem = res.memory
    if isinstance(mem, MemoryResult) and mem.capacity_bytes:
        bpe = 2 if mem.dtype in ("bf16", "fp16") else 4
        for p in mem.points:
            if p.backend == "MATH" and p.peak_bytes is not None and p.seq >= 4096:
                cbpe = 4 if mem.math_half_in_fp32 else bpe
                pred = model.math_path_peak_bytes(mem.batch, mem.heads, p.seq, mem.head_dim, bpe, cbpe)
                rows.append(Row(TOPIC, f"peak memory of SDPA's {BACKEND_SHORT[p.backend]} backend, N = {p.seq}",
                                f"Q, K, V, working copies, S and P alive together (the N d terms itemised approximately), "
                                f"computed in {cbpe} B elements", pred,
                                p.peak_bytes, "B", "prediction", device,
                                "torch.cuda.max_memory_allocated from before the inputs; fails if the backend keeps other buffers"))
            # the flash backend: what it allocates beyond Q, K and V (its peak from before the inputs is three quarters
            # the harness's own allocations, so its ratio to the count would move a quarter as much for the same extra buffer)
            if p.backend == "FLASH_ATTENTION" and p.extra_bytes is not None:
                pred = model.flash_path_peak_bytes(mem.batch, mem.heads, p.seq, mem.head_dim, bpe, count_inputs=False,
                                                   sms=gpu.sms if gpu is not None else None)
                parts = model.flash_split_kv_splits(mem.batch, mem.heads, p.seq, p.seq, mem.head_dim, gpu.sms) if gpu is not None else 1
                rows.append(Row(TOPIC, f"memory SDPA's {BACKEND_SHORT[p.backend]} backend allocates beyond Q, K, V, N = {p.seq}",
                                "O and an fp32 log-sum-exp per row, nothing in N^2" + (f"; the keys split in {parts} parts (PyTorch's "
                                "split-KV heuristic, from the SM count): an fp32 O and log-sum-exp per part" if parts > 1 else ""),
                                pred, p.extra_bytes, "B", "prediction", device,
                                "torch.cuda.max_memory_allocated from after the inputs exist; fails if the kernel allocates an N^2 "
                                "buffer or a workspace the count leaves out, or splits the keys otherwise than the heuristic read "
                                "from PyTorch's flash_api.cpp"))
    ncu = load_ncu()
    if ncu and record.get("provenance", {}).get("gpu") and gpu is not None:
        for r in ncu_rows(ncu):
            if r["measured"] and r["kind"] == "standard":
                rows.append(Row(TOPIC, f"standard attention's DRAM traffic (Nsight Compute), N = {r['seq']}",
                                "4 N d + 4 N^2 elements per head", r["model"], r["measured"], "B", "prediction",
                                (ncu.get("provenance") or {}).get("gpu") or device,
                                "caches flushed before each kernel (so S and P cannot stay in L2 between kernels); fails if a kernel "
                                "re-reads or skips its input; writes still in L2 at a kernel's end are not counted"))
    return rows
