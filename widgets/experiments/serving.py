"""Serving experiments: decode as a weight stream, a real decoder's step time and TTFT, and the
KV cache measured by the allocator.

- ``measure_copy_bandwidth`` / ``measure_gemm_peak``: the two ceilings of this device, measured in
  the same run, so the models can be given achievable rates as well as datasheet ones.
- ``measure_batched_gemv``: the weight matmuls of one decoder layer at batch 1..4096: time stays
  flat while the weights dominate the bytes, then grows with the FLOP past the ridge.
- ``measure_decode_steps``: a decoder with a KV cache (``serving_decoder``; on a GPU a Llama-3-70B-
  shaped stack of 4 layers, 5.5B parameters, in bf16, each step one CUDA graph): step time
  against batch and against context.
- ``measure_ttft``: prefill time against prompt length (time to first token, without queueing).
- ``measure_kv_memory``: a paged KV cache (vLLM's layout: a pool of fixed-size blocks per layer,
  a block table per sequence, keys and values scattered into their slots) filled by prefills and
  decode steps of sequences of random lengths; the allocator's count (``torch.cuda.memory_allocated``;
  tensor bytes on a CPU) and the blocks handed out against the paged model. Also dense caches of
  several attention variants (their shapes come from the formula: a consistency check only).

Every timing keeps its median and its spread (min, max over the repeats); the copy and GEMM
ceilings also record the SM clock and board power NVML reported while they ran (null on a CPU).
The predictions use the catalog entry of the device that ran (``describe_local_gpu``) and the
dtype it ran in.

Without a GPU everything runs scaled down on the CPU (a tiny decoder in fp32, no CUDA graphs, no
Triton): the numbers show the method, not a GPU.
"""

from __future__ import annotations

import functools
import gc
import random
import statistics
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Optional

import torch
import torch.nn.functional as F

from .. import dtypes
from ..accuracy import Row
from ..hardware import catalog_name_for, describe_local_gpu, gpu_names
from ..models import serving as model
from ..models import transformer
from ..units import GiB, MiB
from . import harness
from .serving_decoder import (
    Decoder,
    DecoderConfig,
    KVCache,
    Linear,
    capture,
    cpu_config,
    decode_step,
    enable_fused,
    gpu_config,
    prefill,
    tune_linears,
)
from .serving_speculative import SpeculativeCosts, measure_speculative
from .serving_splitkv import SplitKVSweep, measure_split_kv

GPU_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CPU_BATCHES = (1, 2, 4, 8, 16)
GPU_CONTEXTS = (256, 1024, 4096, 16384, 32768)
CPU_CONTEXTS = (64, 256, 1024)
GPU_PROMPTS = (16, 64, 256, 1024, 4096, 16384)
CPU_PROMPTS = (8, 32, 128)
GPU_GEMV_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
CPU_GEMV_BATCHES = (1, 4, 16, 64, 256)


def _dtype() -> torch.dtype:
    # bf16 on a GPU (what serving uses), fp16 on one without bf16 tensor cores (a T4, sm_75);
    # fp32 on a CPU, where 16-bit matmuls are emulated and slow.
    cap = harness.capabilities()
    if not cap.gpu:
        return torch.float32
    return torch.float16 if cap.nvidia and not cap.tensor_cores("bf16") else torch.bfloat16


class NotEnoughGpuMemory(ValueError):
    """The GPU has too little free memory for even one decoder layer (another process may hold it):
    a set-up condition a notebook reports and goes on past, not a bug (a ``ValueError``)."""


def decoder_layers(cap=None) -> int:
    """Layers of the GPU decoder (``gpu_config``): all 4 where they fit in free memory with their
    largest KV cache, else the most that fit (a 15 GiB T4: 1), by the doctor's rule
    (``widgets.doctor.serving_layers``: the same numbers decide its verdict). ``NotEnoughGpuMemory``
    (a ``ValueError``) where not even one layer fits."""
    from .. import doctor

    cap = cap or harness.capabilities()
    n = doctor.serving_layers(cap.free_bytes)
    if n < 1:
        raise NotEnoughGpuMemory(f"the serving experiment needs about {doctor.serving_gpu_bytes(1) / GiB:.1f} GiB of free GPU memory "
                         f"for one decoder layer and its KV caches; {cap.device} has {cap.free_bytes / GiB:.1f} GiB free")
    return n


def _elem_bytes() -> int:
    return torch.empty((), dtype=_dtype()).element_size()


def model_dtype(torch_dtype) -> str:
    """The registry's name (``widgets.dtypes``) for a torch dtype, matched by identity, never by
    its byte size (``torch.float16`` -> ``"fp16"``, ``"bfloat16"`` -> ``"bf16"``)."""
    name = str(torch_dtype).replace("torch.", "")
    tdt = getattr(torch, name, None)
    if not isinstance(tdt, torch.dtype):
        raise ValueError(f"torch_dtype must be a torch dtype such as torch.bfloat16 or 'bfloat16', got {torch_dtype!r}")
    try:
        return dtypes.from_torch(tdt).name
    except ValueError as exc:
        raise ValueError(f"torch_dtype {torch_dtype!r} is not in the registry: {exc}") from None


# The models take a catalog GPU. Where the device that ran is not in the catalog (a CPU, an
# unknown GPU) they are given this one, and every rate they use is passed in measured (tp = 1:
# no link either), so none of its figures enters a prediction; the record says ``gpu: null``.
MODEL_STANDIN_GPU = "H200-SXM"


def local_gpu_name() -> Optional[str]:
    """The catalog name of this device's GPU, or None (a CPU, or a GPU the catalog lacks)."""
    g = describe_local_gpu()
    return g.name if g is not None and g.name in gpu_names() else None


def record_gpu_name(record: dict) -> Optional[str]:
    """The catalog name of the GPU a record was measured on (from its provenance), or None."""
    prov = record.get("provenance", {}) if isinstance(record, dict) else {}
    for key in ("gpu", "device"):
        name = prov.get(key)
        if isinstance(name, str) and catalog_name_for(name):
            return catalog_name_for(name)
    return None


def model_gpu_name(gpu: Optional[str] = None) -> str:
    """The catalog GPU to give the models for ``gpu`` (default: this device): itself when the
    catalog has it, else :data:`MODEL_STANDIN_GPU` (then only measured rates may be passed)."""
    return gpu or local_gpu_name() or MODEL_STANDIN_GPU


class NvmlSampler:
    """Samples the SM clock [MHz] and board power [W] every ``interval_s`` while a ``with`` block
    runs (``torch.cuda.clock_rate``/``power_draw``, which read NVML through pynvml). Without a GPU
    or NVML, ``summary()`` holds nulls and says why."""

    def __init__(self, interval_s: float = 0.01):
        self.interval_s = interval_s
        self.clock_mhz: list = []
        self.power_w: list = []
        self.reason: Optional[str] = None
        self._stop = threading.Event()
        self._thread = None

    def _read(self):
        try:
            self.clock_mhz.append(float(torch.cuda.clock_rate()))
            self.power_w.append(float(torch.cuda.power_draw()) / 1000.0)  # NVML reports mW
        except Exception as exc:  # no pynvml, or NVML refused
            self.reason = f"NVML not available: {type(exc).__name__}"
            self._stop.set()

    def _loop(self):
        while not self._stop.is_set():
            self._read()
            self._stop.wait(self.interval_s)

    def __enter__(self):
        if harness.on_gpu():
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        else:
            self.reason = "no GPU: nothing to sample"
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        return False

    def summary(self) -> dict:
        def med(v):
            return statistics.median(v) if v else None

        return dict(sm_clock_mhz_median=med(self.clock_mhz), sm_clock_mhz_min=min(self.clock_mhz) if self.clock_mhz else None,
                    power_w_median=med(self.power_w), power_w_max=max(self.power_w) if self.power_w else None,
                    samples=len(self.clock_mhz), reason=None if self.clock_mhz else (self.reason or "no samples"))


def _one_cpu_thread(fn):
    """On a CPU, time with one thread: a shared machine's other work then slows a run down
    instead of stalling a team of threads at every barrier. On a GPU, nothing changes."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if harness.on_gpu():
            return fn(*args, **kwargs)
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(n)

    return wrapper


def _free():
    gc.collect()
    if harness.on_gpu():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------
# Ceilings of this device, measured in the same run
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ceilings(harness.Result):
    """Achievable rates of this device: a device-to-device copy [B/s] (bytes read + written) and
    a large matmul [FLOP/s] in the serving dtype."""

    copy_bytes_per_s: float
    copy_nbytes: int
    gemm_flop_per_s: float
    gemm_n: int
    dtype: str
    device: str
    datasheet_bytes_per_s: Optional[float]
    datasheet_flop_per_s: Optional[float]
    # spread of the repeats [B/s, FLOP/s] (from the slowest and the fastest call) and NVML during them
    copy_bytes_per_s_min: Optional[float] = None
    copy_bytes_per_s_max: Optional[float] = None
    gemm_flop_per_s_min: Optional[float] = None
    gemm_flop_per_s_max: Optional[float] = None
    repeat: Optional[int] = None
    copy_nvml: Optional[dict] = None
    gemm_nvml: Optional[dict] = None
    gpu: Optional[str] = None  # catalog entry of the device that ran


@_one_cpu_thread
def measure_ceilings(copy_nbytes: Optional[int] = None, gemm_n: Optional[int] = None, repeat: int = 20) -> Ceilings:
    """Copy ``copy_nbytes`` (default 2 GiB on a GPU, 64 MiB on a CPU) and multiply two
    ``gemm_n``-square matrices (8192 on a GPU, 512 on a CPU)."""
    if copy_nbytes is None:
        copy_nbytes = harness.choose_bytes(2 * GiB, 64 * MiB, max_fraction_of_free=0.2)
    n = int(copy_nbytes) // 4
    src = torch.rand(n, device=harness.device())
    dst = torch.empty_like(src)
    with NvmlSampler() as copy_nvml:
        t = harness.time_fn(lambda: dst.copy_(src), repeat=repeat)
    moved = 2 * n * 4
    src = dst = None  # free the buffers (rebinding, not del: the timed lambda reads these names)
    gemm_n = gemm_n or (8192 if harness.on_gpu() else 512)
    dt = _dtype()
    a = torch.randn(gemm_n, gemm_n, device=harness.device(), dtype=dt)
    b = torch.randn(gemm_n, gemm_n, device=harness.device(), dtype=dt)
    with NvmlSampler() as gemm_nvml:
        tg = harness.time_fn(lambda: a @ b, repeat=repeat)
    gpu = describe_local_gpu()
    ds_bw = gpu.hbm_bytes_per_s if gpu and gpu.hbm_bytes_per_s else None
    ds_peak = gpu.peak_flop_per_s.get(model_dtype(dt)) if gpu else None
    a = b = None  # free (rebinding, not del: the timed lambda reads these names)
    _free()
    flop = 2.0 * gemm_n**3
    return Ceilings(
        moved / t.median_s, moved, flop / tg.median_s, gemm_n, str(dt).replace("torch.", ""), harness.device_name(), ds_bw, ds_peak,
        copy_bytes_per_s_min=moved / t.max_s, copy_bytes_per_s_max=moved / t.min_s,
        gemm_flop_per_s_min=flop / tg.max_s, gemm_flop_per_s_max=flop / tg.min_s, repeat=t.repeat,
        copy_nvml=copy_nvml.summary(), gemm_nvml=gemm_nvml.summary(), gpu=local_gpu_name(),
    )


# --------------------------------------------------------------------------------------------
# 1. Decode as a weight stream: one layer's matmuls against the batch
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemvSweep(harness.Result):
    """The four weight matmuls of one decoder layer (fused QKV, output, fused gate-up, down) on
    ``batch`` rows: time of cuBLAS alone (``cublas_s``) and of the layer as tuned (``best_s``: the
    decoder's choice per shape, cuBLAS or the Triton skinny kernel, picked on short timings for
    batches up to 64, so at some points a little slower than cuBLAS alone)."""

    shapes: list  # [N, K] of each weight
    weight_bytes: int
    batches: list
    cublas_s: list
    best_s: list
    flop: list
    bytes_moved: list
    device: str
    best_min_s: Optional[list] = None  # spread of the repeats of best_s
    best_max_s: Optional[list] = None


def _layer_linears(cfg: DecoderConfig, dtype, seed: int = 0) -> list:
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    kw = dict(device=harness.device(), dtype=dtype, generator=gen)
    h, q, kv, d, f = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.intermediate
    return [Linear(h, (q + 2 * kv) * d, **kw), Linear(q * d, h, **kw), Linear(h, 2 * f, **kw), Linear(f, h, **kw)]


@_one_cpu_thread
def measure_batched_gemv(batches: Optional[Sequence[int]] = None, cfg: Optional[DecoderConfig] = None, repeat: int = 10) -> GemvSweep:
    """Time ``y = x @ W^T`` for the four weights of one layer of ``cfg`` (default: the decoder's
    layer shapes, Llama-3-70B's on a GPU) at each batch."""
    on_gpu = harness.on_gpu()
    batches = list(batches or (GPU_GEMV_BATCHES if on_gpu else CPU_GEMV_BATCHES))
    cfg = cfg or (gpu_config() if on_gpu else cpu_config())
    dt = _dtype()
    lins = _layer_linears(cfg, dt)

    class _Holder(torch.nn.Module):  # tune_linears walks a decoder's linears
        def linears(self):
            return iter(lins)

    tune_linears(_Holder(), batches=[b for b in batches if b <= 64], repeat=repeat)
    eb = _elem_bytes()
    wbytes = sum(lin.weight.numel() * eb for lin in lins)
    cub, best, flop, moved, bmin, bmax = [], [], [], [], [], []
    for b in batches:
        xs = [torch.randn(b, lin.weight.shape[1], device=harness.device(), dtype=dt) for lin in lins]

        def run_cublas():
            for lin, x in zip(lins, xs):
                F.linear(x, lin.weight)

        def run_best():
            for lin, x in zip(lins, xs):
                lin(x)

        cub.append(harness.time_fn(run_cublas, repeat=repeat).median_s)
        tb = harness.time_fn(run_best, repeat=repeat)
        best.append(tb.median_s)
        bmin.append(tb.min_s)
        bmax.append(tb.max_s)
        flop.append(sum(2.0 * b * lin.weight.numel() for lin in lins))
        moved.append(wbytes + sum(b * (lin.weight.shape[0] + lin.weight.shape[1]) * eb for lin in lins))
        xs = None  # free (rebinding, not del: run_cublas/run_best read it)
    shapes = [list(lin.weight.shape) for lin in lins]
    lins = None  # free (rebinding, not del: the closures above read it)
    _free()
    return GemvSweep(shapes, wbytes, batches, cub, best, flop, moved, harness.device_name(), bmin, bmax)


def gemv_model_s(sweep: GemvSweep, hbm_bytes_per_s: float, peak_flop_per_s: float) -> list:
    """The roofline of each sweep point [s]: ``max(bytes / bandwidth, FLOP / peak)``."""
    return [max(b / hbm_bytes_per_s, f / peak_flop_per_s) for b, f in zip(sweep.bytes_moved, sweep.flop)]


# --------------------------------------------------------------------------------------------
# 2. A real decoder: step time against batch and context; TTFT against prompt length
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeSweep(harness.Result):
    """Decode-step times of ``config`` (medians [s]), one CUDA graph per point on a GPU."""

    config: dict
    params: int
    step_weight_bytes: float  # bytes of the weights one step reads (all but the embedding table)
    kv_bytes_per_token: float
    batch_context_tokens: int
    batches: list
    batch_step_s: list
    context_batch: int
    contexts: list
    context_step_s: list
    eager_batches: list
    eager_step_s: list
    graphs: bool
    linear_tuning: dict
    device: str
    batch_step_min_s: Optional[list] = None  # spread of the repeats (fastest, slowest call)
    batch_step_max_s: Optional[list] = None
    context_step_min_s: Optional[list] = None
    context_step_max_s: Optional[list] = None
    dtype: Optional[str] = None  # the model's name of the dtype the decoder ran in


def build_decoder(cfg: Optional[DecoderConfig] = None, seed: int = 0, tune: bool = True):
    """The decoder of this device (``gpu_config`` or ``cpu_config``) with random weights; on a
    GPU its weight matmuls tuned and its small ops fused (when the Triton kernels compile and
    agree with torch). Returns ``(decoder, summary of the tuning)``."""
    cfg = cfg or (gpu_config(decoder_layers()) if harness.on_gpu() else cpu_config())
    m = Decoder(cfg, device=harness.device(), dtype=_dtype(), seed=seed)
    summary = tune_linears(m) if tune else {"used_triton": False, "errors": [], "choices": []}
    summary["fused"] = enable_fused(m) if (tune and harness.on_gpu()) else {"fused": False}
    return m, summary


def time_decode_step(m: Decoder, batch: int, context_tokens: int, graph: bool = True, repeat: int = 20) -> float:
    """Median time of one decode step [s] (``time_decode_step_timing`` keeps the spread)."""
    return time_decode_step_timing(m, batch, context_tokens, graph, repeat).median_s


@_one_cpu_thread
def time_decode_step_timing(m: Decoder, batch: int, context_tokens: int, graph: bool = True, repeat: int = 20) -> harness.Timing:
    """Timing of one decode step: ``batch`` sequences whose caches hold ``context_tokens`` tokens
    (the step writes the last slot and attends to all of them)."""
    if context_tokens < 1:
        raise ValueError(f"context_tokens must be >= 1, got {context_tokens!r}")
    cache = KVCache(m.cfg, batch, context_tokens, device=m.device, dtype=m.dtype)
    tokens = torch.randint(0, m.cfg.vocab, (batch,), device=m.device, generator=torch.Generator(device=m.device).manual_seed(batch))
    pos = context_tokens - 1
    cos, sin = m.rope(torch.tensor([pos], device=m.device))
    cos, sin = cos[0].contiguous(), sin[0].contiguous()

    def step():
        return decode_step(m, tokens, cache, pos, cos, sin)

    fn = capture(step) if graph else step
    t = harness.time_fn(fn, warmup=3, repeat=repeat)
    fn = cache = None  # free (rebinding, not del: step() reads cache)
    _free()
    return t


def measure_decode_steps(
    decoder=None,
    batches: Optional[Sequence[int]] = None,
    contexts: Optional[Sequence[int]] = None,
    batch_context_tokens: Optional[int] = None,
    context_batch: Optional[int] = None,
    eager_batches: Optional[Sequence[int]] = None,
    repeat: int = 20,
) -> DecodeSweep:
    """Decode-step time against batch (at ``batch_context_tokens``) and against context (at
    ``context_batch`` sequences). On a GPU each point is one captured CUDA graph; the
    ``eager_batches`` are timed again without a graph, to show the launch overhead."""
    on_gpu = harness.on_gpu()
    m, tuning = decoder if decoder is not None else build_decoder()
    batches = list(batches or (GPU_BATCHES if on_gpu else CPU_BATCHES))
    contexts = list(contexts or (GPU_CONTEXTS if on_gpu else CPU_CONTEXTS))
    bctx = batch_context_tokens or (1024 if on_gpu else 256)
    cb = context_batch or (16 if on_gpu else 4)
    eager_batches = list(eager_batches if eager_batches is not None else ((1, 64) if on_gpu else ()))
    b_t = [time_decode_step_timing(m, b, bctx, on_gpu, repeat) for b in batches]
    c_t = [time_decode_step_timing(m, cb, c, on_gpu, repeat) for c in contexts]
    b_s, c_s = [t.median_s for t in b_t], [t.median_s for t in c_t]
    e_s = [time_decode_step(m, b, bctx, False, repeat) for b in eager_batches]
    mc = m.cfg.model_config()
    eb = _elem_bytes()
    return DecodeSweep(
        config=asdict(m.cfg), params=m.n_params(), step_weight_bytes=transformer.weight_bytes(mc.step_params(1), eb),
        kv_bytes_per_token=mc.kv_bytes_per_token(eb), batch_context_tokens=bctx, batches=batches, batch_step_s=b_s,
        context_batch=cb, contexts=contexts, context_step_s=c_s, eager_batches=eager_batches, eager_step_s=e_s,
        graphs=on_gpu, linear_tuning=tuning, device=harness.device_name(),
        batch_step_min_s=[t.min_s for t in b_t], batch_step_max_s=[t.max_s for t in b_t],
        context_step_min_s=[t.min_s for t in c_t], context_step_max_s=[t.max_s for t in c_t], dtype=model_dtype(m.dtype),
    )


@dataclass(frozen=True)
class TTFTSweep(harness.Result):
    """Prefill time of one prompt [s] against its length (TTFT without queueing)."""

    config: dict
    prompts: list
    prefill_s: list
    graphs: bool
    device: str
    prefill_min_s: Optional[list] = None
    prefill_max_s: Optional[list] = None
    nvml: Optional[dict] = None  # SM clock and power sampled while the prefills ran (nulls and a reason without NVML)


@_one_cpu_thread
def measure_ttft(decoder=None, prompts: Optional[Sequence[int]] = None, repeat: int = 10) -> TTFTSweep:
    """Time the prefill of one prompt of each length (on a GPU, each captured in a CUDA graph)."""
    on_gpu = harness.on_gpu()
    m, _ = decoder if decoder is not None else build_decoder()
    prompts = list(prompts or (GPU_PROMPTS if on_gpu else CPU_PROMPTS))
    out, lo, hi = [], [], []
    sampler = NvmlSampler()
    with sampler:
        _time_prefills(m, prompts, on_gpu, repeat, out, lo, hi)
    try:
        nvml = sampler.summary()
    except Exception as exc:  # an optional reading: never lose the sweep over it
        nvml = dict(sm_clock_mhz_median=None, sm_clock_mhz_min=None, power_w_median=None, power_w_max=None, samples=0,
                    reason=f"NVML summary failed: {type(exc).__name__}")
    return TTFTSweep(asdict(m.cfg), prompts, out, on_gpu, harness.device_name(), lo, hi, nvml)


def _time_prefills(m, prompts, on_gpu, repeat, out, lo, hi):
    for p in prompts:
        cache = KVCache(m.cfg, 1, p + 1, device=m.device, dtype=m.dtype)
        tokens = torch.randint(0, m.cfg.vocab, (1, p), device=m.device, generator=torch.Generator(device=m.device).manual_seed(p))
        fn = capture(lambda: prefill(m, tokens, cache)) if on_gpu else (lambda: prefill(m, tokens, cache))
        t = harness.time_fn(fn, warmup=2, repeat=repeat)
        out.append(t.median_s)
        lo.append(t.min_s)
        hi.append(t.max_s)
        fn = cache = None  # free (rebinding, not del: the timed lambdas read cache)
        _free()


def decode_model_s(
    sweep: DecodeSweep,
    gpu: Optional[str] = None,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
) -> dict:
    """The model's step times for a sweep [s]: ``{"batch": [...], "context": [...]}``."""
    mc = DecoderConfig(**sweep.config).model_config()
    dt = _sweep_dtype(sweep)
    gpu = gpu or MODEL_STANDIN_GPU

    def t(b, c):
        return model.decode_step(mc, gpu, b, c, dt, dt, hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s).time_s

    return {
        "batch": [t(b, sweep.batch_context_tokens) for b in sweep.batches],
        "context": [t(sweep.context_batch, c) for c in sweep.contexts],
    }


def _sweep_dtype(sweep: DecodeSweep) -> str:
    """The dtype a decode sweep ran in, as recorded by name (never guessed from a byte size, which
    cannot tell fp16 from bf16); ``ValueError`` for a record made before it was recorded."""
    if not sweep.dtype:
        raise ValueError("the decode sweep does not record its dtype (a record older than the dtype field): measure it again")
    return dtypes.get_dtype(sweep.dtype, param="decode dtype").name


def ttft_model_s(
    sweep: TTFTSweep,
    gpu: Optional[str] = None,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    dtype: str = "bf16",
) -> list:
    """The model's prefill lower bound for each prompt of a sweep [s]."""
    mc = DecoderConfig(**sweep.config).model_config()
    gpu = gpu or MODEL_STANDIN_GPU
    return [model.prefill_time_s(mc, gpu, p, dtype, hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s) for p in sweep.prompts]


# --------------------------------------------------------------------------------------------
# 3. The KV cache, measured by the allocator
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KVMemory(harness.Result):
    """KV caches allocated for real: bytes the allocator reports against the formula's."""

    config: dict
    batch: int
    context_tokens: int
    variants: list  # dicts: name, formula_bytes, measured_bytes
    decode_peak_extra_bytes: Optional[float]  # transient bytes of one decode step beyond weights and cache
    prefill_tokens: int
    prefill_peak_extra_bytes: Optional[float]  # transient bytes of a prefill beyond weights and cache
    prefill_estimate_bytes: float  # transformer.activation_bytes for the same prefill
    method: str
    device: str
    paged: Optional[dict] = None  # the paged cache: see measure_paged_kv


class PagedKVCache:
    """A paged KV cache as vLLM lays it out: per layer one pool of ``num_blocks`` blocks, keys and
    values of ``block_tokens`` tokens each (``[2, num_blocks, block_tokens, kv_heads, head_dim]``);
    each sequence owns a block table, and a block is taken from the free list when its first
    token arrives. ``append`` scatters new keys and values into their slots (vLLM's
    ``reshape_and_cache``); ``gather`` reads a sequence back through its block table."""

    def __init__(self, cfg: DecoderConfig, num_blocks: int, block_tokens: int, device, dtype):
        self.cfg, self.block_tokens, self.device = cfg, block_tokens, device
        shape = (2, num_blocks, block_tokens, cfg.kv_heads, cfg.head_dim)
        self.pools = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.layers)]
        self.free = list(range(num_blocks - 1, -1, -1))
        self.tables: dict = {}
        self.lengths: dict = {}

    @property
    def blocks_used(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def append(self, seq: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Append ``k``, ``v`` of shape ``[layers, tokens, kv_heads, head_dim]`` to sequence ``seq``."""
        n = k.shape[1]
        start = self.lengths.get(seq, 0)
        table = self.tables.setdefault(seq, [])
        while len(table) * self.block_tokens < start + n:
            if not self.free:
                raise RuntimeError("the paged KV cache is out of blocks")
            table.append(self.free.pop())
        pos = torch.arange(start, start + n, device=self.device)
        blocks = torch.tensor(table, device=self.device)[pos // self.block_tokens]
        offs = pos % self.block_tokens
        for layer, pool in enumerate(self.pools):
            pool[0, blocks, offs] = k[layer]
            pool[1, blocks, offs] = v[layer]
        self.lengths[seq] = start + n

    def gather(self, seq: int, layer: int):
        """Keys and values of ``seq`` in ``layer``, in token order: ``[tokens, kv_heads, head_dim]`` each."""
        n = self.lengths[seq]
        pos = torch.arange(n, device=self.device)
        blocks = torch.tensor(self.tables[seq], device=self.device)[pos // self.block_tokens]
        offs = pos % self.block_tokens
        pool = self.pools[layer]
        return pool[0, blocks, offs], pool[1, blocks, offs]


def measure_paged_kv(cfg: DecoderConfig, batch: int, max_prompt_tokens: int, decode_steps: int, block_tokens: int = model.DEFAULT_BLOCK_TOKENS,
                     device=None, dtype=None, seed: int = 0) -> dict:
    """Fill a paged KV cache the way a server does: ``batch`` prompts of random lengths (uniform
    in [max/8, max], seeded) prefilled, then ``decode_steps`` decode steps appending one token to
    every sequence. Reports the pool's bytes by the allocator against the model's block bytes, the
    blocks the block tables took against ``paged_kv_blocks``, and what a dense cache would hold."""
    device = device or harness.device()
    dtype = dtype or _dtype()
    rng = random.Random(seed)
    prompts = [rng.randint(max(1, max_prompt_tokens // 8), max_prompt_tokens) for _ in range(batch)]
    final = [p + decode_steps for p in prompts]
    eb = torch.empty((), dtype=dtype).element_size()
    kvpt = transformer.kv_cache_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.head_dim, eb)
    block_bytes = model.paged_kv_cache_bytes(kvpt, block_tokens, block_tokens)
    # a pool with room to spare, as a server sizes it from free memory: 25% above the dense total
    num_blocks = int(1.25 * sum(final) / block_tokens) + batch
    _free()
    before = _allocated()
    cache = PagedKVCache(cfg, num_blocks, block_tokens, device, dtype)
    on_cuda = torch.device(device).type == "cuda"  # the cache's device, not whether a GPU exists
    if on_cuda:
        torch.cuda.synchronize()
        pool_measured = _allocated() - before
    else:
        pool_measured = sum(t.numel() * t.element_size() for t in cache.pools)
    gen = torch.Generator(device=device).manual_seed(seed)

    def kv(n):
        shape = (cfg.layers, n, cfg.kv_heads, cfg.head_dim)
        return torch.randn(shape, device=device, dtype=dtype, generator=gen), torch.randn(shape, device=device, dtype=dtype, generator=gen)

    first = {}
    for i, p in enumerate(prompts):  # prefill
        k, v = kv(p)
        cache.append(i, k, v)
        if i == 0:
            first = dict(k=k[-1, :].clone(), v=v[-1, :].clone())
    for _ in range(decode_steps):  # one token per sequence per step
        for i in range(batch):
            k, v = kv(1)
            cache.append(i, k, v)
    k_back, v_back = cache.gather(0, cfg.layers - 1)
    if not (torch.equal(k_back[: prompts[0]], first["k"]) and torch.equal(v_back[: prompts[0]], first["v"])):
        raise RuntimeError("the paged cache did not read back what was written")
    if harness.on_gpu():
        torch.cuda.synchronize()
    out = dict(
        block_tokens=block_tokens, num_blocks=num_blocks, batch=batch, decode_steps=decode_steps, lengths=final,
        kv_bytes_per_token=kvpt, block_bytes=block_bytes,
        pool_formula_bytes=num_blocks * block_bytes, pool_measured_bytes=int(pool_measured),
        blocks_used=cache.blocks_used,
        used_bytes=cache.blocks_used * block_bytes,
        exact_bytes=sum(final) * kvpt,
        dense_max_bytes=batch * max(final) * kvpt,
        method="torch.cuda.memory_allocated before/after the pool" if on_cuda else "sum of tensor nbytes (CPU)",
    )
    del cache, first, k_back, v_back
    _free()
    return out


def _allocated() -> int:
    return torch.cuda.memory_allocated() if harness.on_gpu() else 0


def _measure_alloc(make) -> int:
    """Bytes that ``make()`` adds: the allocator's count on a GPU, tensor bytes on a CPU."""
    _free()
    before = _allocated()
    tensors = make()
    if harness.on_gpu():
        torch.cuda.synchronize()
        n = _allocated() - before
    else:
        n = sum(t.numel() * t.element_size() for t in tensors)
    del tensors
    _free()
    return int(n)


def measure_kv_memory(
    decoder=None,
    batch: Optional[int] = None,
    context_tokens: Optional[int] = None,
    window: Optional[int] = None,
    prefill_tokens: Optional[int] = None,
) -> KVMemory:
    """Allocate KV caches of ``batch`` sequences of ``context_tokens`` for the decoder's layers in
    five layouts (its own GQA, MHA with a KV head per query head, MQA, a sliding window, an MLA
    latent of rank 512 + a 64-wide RoPE key) and compare the allocator's count with the formula.
    Then measure the transient memory of one decode step and of one prefill."""
    on_gpu = harness.on_gpu()
    m, _ = decoder if decoder is not None else build_decoder(tune=False)
    cfg = m.cfg
    batch = batch or (16 if on_gpu else 4)
    ctx = context_tokens or (8192 if on_gpu else 256)
    window = window or ctx // 2
    eb = _elem_bytes()
    dev, dt = m.device, m.dtype
    rank, rope = 512, 64
    if not on_gpu:
        rank, rope = 64, 16

    def kv(heads, tokens):
        return lambda: [torch.empty(batch, heads, tokens, cfg.head_dim, device=dev, dtype=dt) for _ in range(2 * cfg.layers)]

    variants = [
        (
            f"GQA ({cfg.kv_heads} KV heads)",
            kv(cfg.kv_heads, ctx),
            transformer.kv_cache_bytes(
                transformer.kv_cache_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.head_dim, eb), ctx, batch
            ),
        ),
        (
            f"MHA ({cfg.heads} KV heads)",
            kv(cfg.heads, ctx),
            transformer.kv_cache_bytes(transformer.kv_cache_bytes_per_token(cfg.layers, cfg.heads, cfg.head_dim, eb), ctx, batch),
        ),
        (
            "MQA (1 KV head)",
            kv(1, ctx),
            transformer.kv_cache_bytes(transformer.kv_cache_bytes_per_token(cfg.layers, 1, cfg.head_dim, eb), ctx, batch),
        ),
        (
            f"GQA, sliding window {window}",
            kv(cfg.kv_heads, min(ctx, window)),
            transformer.kv_cache_bytes(
                transformer.kv_cache_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.head_dim, eb), ctx, batch, window
            ),
        ),
        (
            f"MLA (rank {rank} + RoPE {rope})",
            lambda: [torch.empty(batch, ctx, rank + rope, device=dev, dtype=dt) for _ in range(cfg.layers)],
            transformer.kv_cache_bytes(transformer.mla_kv_cache_bytes_per_token(cfg.layers, rank, rope, eb), ctx, batch),
        ),
        (
            "the decoder's KVCache",
            lambda: (lambda c: c.k + c.v)(KVCache(cfg, batch, ctx, device=dev, dtype=dt)),
            transformer.kv_cache_bytes(
                transformer.kv_cache_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.head_dim, eb), ctx, batch
            ),
        ),
    ]
    rows = [dict(name=n, formula_bytes=f, measured_bytes=_measure_alloc(make)) for n, make, f in variants]

    # Transients: peak minus what was resident before the pass (weights + cache).
    decode_extra = prefill_extra = None
    p = prefill_tokens or (2048 if on_gpu else 64)
    if on_gpu:
        cache = KVCache(cfg, batch, ctx, device=dev, dtype=dt)
        tokens = torch.zeros(batch, dtype=torch.long, device=dev)
        cos, sin = m.rope(torch.tensor([ctx - 1], device=dev))
        decode_step(m, tokens, cache, ctx - 1, cos[0], sin[0])
        _free()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        decode_step(m, tokens, cache, ctx - 1, cos[0], sin[0])
        torch.cuda.synchronize()
        decode_extra = torch.cuda.max_memory_allocated() - base
        del cache
        _free()
        cache = KVCache(cfg, 1, p, device=dev, dtype=dt)
        ptoks = torch.zeros(1, p, dtype=torch.long, device=dev)
        _free()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        prefill(m, ptoks, cache)
        torch.cuda.synchronize()
        prefill_extra = torch.cuda.max_memory_allocated() - base
        del cache
        _free()
    estimate = transformer.activation_bytes(p, cfg.hidden, cfg.intermediate, cfg.vocab, 1, eb)
    paged = measure_paged_kv(cfg, batch, ctx, 32 if on_gpu else 8, device=dev, dtype=dt)
    return KVMemory(
        config=asdict(cfg), batch=batch, context_tokens=ctx, variants=rows, decode_peak_extra_bytes=decode_extra,
        prefill_tokens=p, prefill_peak_extra_bytes=prefill_extra, prefill_estimate_bytes=estimate,
        method="torch.cuda.memory_allocated before/after" if on_gpu else "sum of tensor nbytes (CPU)", device=harness.device_name(),
        paged=paged,
    )


# --------------------------------------------------------------------------------------------
# Comparisons with the model, and the whole run
# --------------------------------------------------------------------------------------------
# What each bandwidth option is, in the book's labels (widgets.accuracy): only the datasheet's
# inputs are independent of the measured step. The copy is a constant from another, named
# micro-benchmark; the "gemv" rate is one layer's weight matmuls timed alone, the same kernels
# that stream about three quarters of the step's bytes: a calibration close to a fit.
OPTION_LABELS = {"datasheet": "prediction", "copy": "calibrated", "gemv": "calibrated"}
OPTION_INPUTS = {
    "datasheet": "datasheet bandwidth and dense peak",
    "copy": "device-to-device copy bandwidth and 8192^3 GEMM rate measured in the same run",
    "gemv": "batch-1 weight stream of one layer's matmuls and the GEMM rate, measured in the same run",
}


def option_peak(ceilings: Ceilings, option: str) -> float:
    """The compute roof that goes with a bandwidth option [FLOP/s]: the datasheet's dense peak for
    the datasheet option (so that prediction uses no measurement at all), else the GEMM measured."""
    if option == "datasheet" and ceilings.datasheet_flop_per_s:
        return ceilings.datasheet_flop_per_s
    return ceilings.gemm_flop_per_s


def bandwidth_options(ceilings: Ceilings, gemv: Optional[GemvSweep] = None) -> dict:
    """The bandwidths a prediction can use [B/s]: the datasheet's, the copy measured in this run,
    and the best weight stream of the batch-1 layer matmuls measured in this run."""
    opts = {}
    if ceilings.datasheet_bytes_per_s:
        opts["datasheet"] = ceilings.datasheet_bytes_per_s
    opts["copy"] = ceilings.copy_bytes_per_s
    if gemv is not None and gemv.batches and gemv.batches[0] == 1:
        opts["gemv"] = gemv.bytes_moved[0] / gemv.best_s[0]
    return opts


def compare_decode(sweep: DecodeSweep, ceilings: Ceilings, gemv: Optional[GemvSweep] = None, gpu: Optional[str] = None) -> dict:
    """Measured / predicted step time for every point and every bandwidth option, and the worst
    error over batches 1 to 64."""
    out = {}
    for name, bw in bandwidth_options(ceilings, gemv).items():
        peak = option_peak(ceilings, name)
        pred = decode_model_s(sweep, gpu, bw, peak)
        rb = [mt / pt for mt, pt in zip(sweep.batch_step_s, pred["batch"])]
        rc = [mt / pt for mt, pt in zip(sweep.context_step_s, pred["context"])]
        in_range = [r for b, r in zip(sweep.batches, rb) if 1 <= b <= 64]
        out[name] = dict(
            hbm_bytes_per_s=bw, peak_flop_per_s=peak, batch_model_s=pred["batch"], context_model_s=pred["context"],
            batch_ratio=rb, context_ratio=rc, max_error_batch_1_64=max(abs(r - 1) for r in in_range) if in_range else None,
        )
    return out


@dataclass(frozen=True)
class ServingResults(harness.Result):
    """The topic's record (``widgets/data/h200/serving.json``'s ``results``), typed. The model
    comparisons (``gemv_model_s``, ``decode_vs_model``, ``ttft_model_s``, ``target``) are plain
    mappings: :func:`compare_record` recomputes them from the measurements with today's models."""

    ceilings: Ceilings
    gemv: GemvSweep
    decode: DecodeSweep
    ttft: TTFTSweep
    kv_memory: KVMemory
    gemv_model_s: Optional[dict] = None
    decode_vs_model: Optional[dict] = None
    ttft_model_s: Optional[dict] = None
    target: Optional[dict] = None
    speculative: SpeculativeCosts | harness.Failed | None = None  # serving_speculative: draft and verification costs
    split_kv: SplitKVSweep | harness.Failed | None = None  # serving_splitkv: decode attention at batch 1, long context


RESULTS = ServingResults  # the topic's result type (widgets.book.setup reads the record with it)


def run_all() -> ServingResults:
    """Every serving experiment on this device."""
    print(harness.describe_run("serving"), flush=True)
    ceilings = measure_ceilings()
    print(f"  copy {ceilings.copy_bytes_per_s / 1e12:.3f} TB/s, GEMM {ceilings.gemm_flop_per_s / 1e12:.1f} TFLOP/s", flush=True)
    gemv = measure_batched_gemv()
    print(f"  layer matmuls at batch 1: {gemv.best_s[0] * 1e6:.1f} us ({gemv.bytes_moved[0] / gemv.best_s[0] / 1e12:.3f} TB/s)", flush=True)
    dec = build_decoder()
    print(f"  decoder: {dec[0].n_params() / 1e9:.2f}B parameters; Triton used: {dec[1]['used_triton']}", flush=True)
    steps = measure_decode_steps(dec)
    ttft = measure_ttft(dec)
    kvm = measure_kv_memory(dec)
    gpu = local_gpu_name()
    cmp = compare_decode(steps, ceilings, gemv, gpu)
    for name, c in cmp.items():
        print(f"  decode vs model ({name} bandwidth): ratios {[f'{r:.2f}' for r in c['batch_ratio']]}; "
              f"worst error for batch 1-64: {c['max_error_batch_1_64']:.1%}", flush=True)
    opts = bandwidth_options(ceilings, gemv)
    ttft_cmp = {name: ttft_model_s(ttft, gpu, bw, option_peak(ceilings, name), steps.dtype) for name, bw in opts.items()}
    spec = harness.attempt(measure_speculative, dec)
    print(f"  speculative: {spec.error if isinstance(spec, harness.Failed) else 'verify ' + str(spec.verify_s) + '; errors ' + str(spec.errors)}",
          flush=True)
    _free()
    splitkv = harness.attempt(measure_split_kv)
    print(f"  split-KV: {splitkv.error if isinstance(splitkv, harness.Failed) else str(splitkv.one_seq_s) + ' / ' + str(splitkv.spread_s)}",
          flush=True)
    return ServingResults(
        ceilings=ceilings,
        gemv=gemv,
        gemv_model_s={name: gemv_model_s(gemv, bw, option_peak(ceilings, name)) for name, bw in opts.items()},
        decode=steps,
        decode_vs_model=cmp,
        ttft=ttft,
        ttft_model_s=ttft_cmp,
        kv_memory=kvm,
        target={
            "what": "max |measured decode step / model - 1| over batches 1 to 64, per bandwidth given to the memory-bound "
                    "model: datasheet, device-to-device copy measured in this run, batch-1 weight stream of one layer's "
                    "matmuls measured in this run",
            "max_error": {name: c["max_error_batch_1_64"] for name, c in cmp.items()},
            "labels": dict(OPTION_LABELS),
        },
        speculative=spec,
        split_kv=splitkv,
    )


# --------------------------------------------------------------------------------------------
# Reading a record back (the recorded H200 run, or this device's) for the chapter
# --------------------------------------------------------------------------------------------
def compare_record(results: dict, gpu: Optional[str] = None) -> dict:
    """Recompute every prediction of a record's results with the current models: for each
    bandwidth option (datasheet, copy and weight-stream measured in the same run) the GEMV sweep,
    the decode steps and the prefill times, and their measured/model ratios."""
    r = results if isinstance(results, ServingResults) else ServingResults.from_record(results)
    ceilings, gemv, steps, ttft = r.ceilings, r.gemv, r.decode, r.ttft
    opts = bandwidth_options(ceilings, gemv)
    peak = ceilings.gemm_flop_per_s
    dt = _sweep_dtype(steps)
    gemv_model = {k: gemv_model_s(gemv, bw, option_peak(ceilings, k)) for k, bw in opts.items()}
    ttft_model = {k: ttft_model_s(ttft, gpu, bw, option_peak(ceilings, k), dt) for k, bw in opts.items()}
    return {
        "options": opts,
        "labels": {k: OPTION_LABELS[k] for k in opts},
        "peak_flop_per_s": peak,
        "gemv": dict(batches=gemv.batches, cublas_s=gemv.cublas_s, best_s=gemv.best_s, model_s=gemv_model,
                     ratio={k: [m / p for m, p in zip(gemv.best_s, v)] for k, v in gemv_model.items()}),
        "decode": dict(batches=steps.batches, batch_step_s=steps.batch_step_s, contexts=steps.contexts, context_step_s=steps.context_step_s,
                       batch_context_tokens=steps.batch_context_tokens, context_batch=steps.context_batch,
                       eager_batches=steps.eager_batches, eager_step_s=steps.eager_step_s, by_option=compare_decode(steps, ceilings, gemv, gpu)),
        "ttft": dict(prompts=ttft.prompts, prefill_s=ttft.prefill_s, model_s=ttft_model,
                     ratio={k: [m / p for m, p in zip(ttft.prefill_s, v)] for k, v in ttft_model.items()}),
    }


def gemv_knee_batch(batches: Sequence[int], times_s: Sequence[float], factor: float = 1.25) -> Optional[int]:
    """The first batch whose time exceeds ``factor`` times the batch-1 time (None if none does):
    where the flat, weight-streaming part of the sweep ends (default: 25% slower than batch 1, above
    the few-per-cent wobble of a tuner's choice, well below doubling)."""
    for b, t in zip(batches, times_s):
        if t > factor * times_s[0]:
            return int(b)
    return None


# --------------------------------------------------------------------------------------------
# The accuracy ledger (widgets.accuracy): every comparison the chapter makes, recomputed
# --------------------------------------------------------------------------------------------
def gemv_share_of_step_bytes(results: dict) -> float:
    """Fraction of a decode step's weight bytes that the "gemv" calibration's layer matmuls are
    (the calibrating layer times the number of layers, over the step's weight bytes)."""
    steps = results["decode"]
    return results["gemv"]["weight_bytes"] * steps["config"]["layers"] / steps["step_weight_bytes"]


def accuracy_rows(record: dict) -> list:
    """Every comparison of the serving chapter, recomputed from the raw measurements of
    ``record`` with today's models (nothing read from stored ratios or verdicts).

    Works with records written before and after the spread fields were added: rows that need a
    field an older record lacks are left out. The paged cache's counts are a bookkeeping check,
    not a prediction, and are not rows."""
    res = record["results"]
    gpu = record_gpu_name(record)
    device = record.get("provenance", {}).get("gpu") or res["ceilings"].get("device", "unknown")
    cmp = compare_record(res, gpu)
    rows = []
    d = cmp["decode"]
    i64 = d["batches"].index(max(b for b in d["batches"] if b <= 64))
    share = gemv_share_of_step_bytes(res)
    for opt, label in cmp["labels"].items():
        by = d["by_option"][opt]
        note = "" if opt != "gemv" else f"the calibrating layers are {share:.0%} of the step's weight bytes"
        for i in sorted({0, i64}):
            rows.append(Row("serving", f"decode step, batch {d['batches'][i]}, {d['batch_context_tokens']} tokens", OPTION_INPUTS[opt],
                            by["batch_model_s"][i], d["batch_step_s"][i], "s", label, device, note))
        rows.append(Row("serving", f"decode step, batch {d['context_batch']}, {d['contexts'][-1]} tokens", OPTION_INPUTS[opt],
                        by["context_model_s"][-1], d["context_step_s"][-1], "s", label, device, note))
        t = cmp["ttft"]
        if opt != "gemv":  # compute-bound: the gemv option's roof is the same GEMM rate as the copy option's
            rows.append(
                Row(
                    "serving",
                    f"prefill (TTFT) of {t['prompts'][-1]} tokens",
                    OPTION_INPUTS[opt],
                    t["model_s"][opt][-1],
                    t["prefill_s"][-1],
                    "s",
                    label,
                    device,
                    "compute-bound: the roof is the dense peak (datasheet) or the measured GEMM rate",
                )
            )
    g = cmp["gemv"]
    for opt in ("datasheet", "copy"):
        if opt in g["model_s"]:
            rows.append(Row("serving", "one layer's weight matmuls, batch 1", OPTION_INPUTS[opt], g["model_s"][opt][0], g["best_s"][0], "s",
                            OPTION_LABELS[opt], device))
    kv = res["kv_memory"]
    if kv.get("prefill_peak_extra_bytes"):
        cfg = kv["config"]
        eb = dtypes.bytes_per_element(_sweep_dtype(DecodeSweep.from_record(res["decode"])))
        est = transformer.activation_bytes(kv["prefill_tokens"], cfg["hidden"], cfg["intermediate"], cfg["vocab"], 1, eb)
        rows.append(Row("serving", f"transient memory of a {kv['prefill_tokens']}-token prefill", "activation_bytes of the decoder's shapes",
                        est, kv["prefill_peak_extra_bytes"], "B", "prediction", device,
                        "the decoder keeps SiLU output and product apart and copies K and V per query group"))
    from . import serving_speculative, serving_splitkv

    # predictions from the catalog's datasheet: only for a device the run found in the catalog
    datasheet_gpu = gpu if res["ceilings"].get("datasheet_bytes_per_s") else None
    rows += serving_speculative.accuracy_rows(res.get("speculative"), datasheet_gpu, device)
    rows += serving_splitkv.accuracy_rows(res.get("split_kv"), datasheet_gpu, device)
    # The paged cache's pool bytes and block counts are NOT rows: the pool is allocated with the
    # formula's own shape and blocks are taken as ceil(len / block) by construction, so they check
    # the allocator's bookkeeping, not a prediction (serving review 1). The chapter shows them.
    return rows
