"""Long context at small batch: does decode attention fill the GPU? (Flash-Decoding's question.)

A decode step's attention reads every cached key and value once. A kernel that gives each
(sequence, KV head) one thread block has ``batch * kv_heads`` blocks: at batch 1 with 8 KV heads,
8 of an H200's 132 SMs. Flash-Decoding (Dao et al. 2023) also splits the sequence into chunks and
combines their partial softmaxes, so that a single long sequence fills the GPU.

Measured here, for one layer of Llama-3-70B's attention shapes (64 query heads, 8 KV heads of 128,
grouped-query layout as the decoder uses it):

- the same KV bytes read as ONE sequence of ``L`` tokens and as ``16`` sequences of ``L / 16``
  (``torch.nn.functional.scaled_dot_product_attention``, whatever kernel torch picks): if the
  single sequence is much slower per byte, the kernel does not split the sequence;
- the single sequence with an explicit split-KV in torch (chunks, partial softmax, combine), the
  mechanism written out.

Each point's bandwidth is KV bytes over time. CPU: a short context, the method only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F

from ..models import llms
from . import harness

GPU_CONTEXTS = (8192, 32768, 131072)
CPU_CONTEXTS = (1024,)
SPREAD_BATCH = 16  # the same bytes spread over this many sequences
GPU_SPLITS = 32


def attention_shapes() -> tuple:
    """(query heads, KV heads, head dim) of Llama-3-70B, the chapter's decoder's shapes."""
    m = llms.LLAMA_3_70B
    return m.heads, m.kv_heads, m.head_dim


def split_kv_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, splits: int) -> torch.Tensor:
    """Attention of ``q [B, KVH, R, D]`` over ``k, v [B, KVH, L, D]`` computed in ``splits`` chunks of
    the sequence: each chunk's scores, their maximum and sum (a partial softmax), then one combine
    step that rescales the chunks' outputs to the global maximum. Equal to SDPA (up to rounding)."""
    b, h, n, d = k.shape
    if n % splits:
        raise ValueError(f"splits must divide the context ({n}), got {splits!r}")
    ks, vs = k.view(b, h, splits, n // splits, d), v.view(b, h, splits, n // splits, d)
    s = torch.einsum("bhrd,bhsld->bhsrl", q, ks).float() / math.sqrt(d)
    mx = s.amax(-1, keepdim=True)
    p = torch.exp(s - mx)
    den = p.sum(-1, keepdim=True)
    o = torch.einsum("bhsrl,bhsld->bhsrd", p.to(v.dtype), vs).float()
    g = mx.amax(2, keepdim=True)
    w = torch.exp(mx - g)
    return ((o * w).sum(2) / (den * w).sum(2)).to(q.dtype)


@dataclass(frozen=True)
class SplitKVSweep(harness.Result):
    """Decode attention of one layer against context: one sequence, the same bytes as
    ``spread_batch`` sequences, and one sequence with an explicit split-KV; ``None`` where a point
    failed (``errors`` says why)."""

    heads: int
    kv_heads: int
    head_dim: int
    contexts: list
    kv_bytes: list
    one_seq_s: list
    spread_s: list
    split_s: list
    spread_batch: int
    splits: int
    dtype: str
    device: str
    sms: Optional[int]
    errors: list


def measure_split_kv(contexts=None, repeat: int = 20) -> SplitKVSweep:
    """Time decode attention of one layer at batch 1 against context, spread over ``SPREAD_BATCH``
    sequences, and split into ``GPU_SPLITS`` chunks (CPU: 4)."""
    on_gpu = harness.on_gpu()
    dev = harness.device()
    dtype = torch.bfloat16 if on_gpu else torch.float32
    h, kvh, d = attention_shapes()
    g = h // kvh
    ctxs = list(contexts or (GPU_CONTEXTS if on_gpu else CPU_CONTEXTS))
    splits = GPU_SPLITS if on_gpu else 4
    errors, kv_bytes, one, spread, split = [], [], [], [], []
    gen = torch.Generator(device=dev).manual_seed(0)

    def timed(what, make):
        try:
            q, k, v, fn = make()
            return harness.time_fn(lambda: fn(q, k, v), warmup=3, repeat=repeat).median_s
        except Exception as exc:  # noqa: BLE001 - recorded, the other points still run
            errors.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
            return None
        finally:
            if on_gpu:
                torch.cuda.empty_cache()

    def tensors(b, n):
        q = torch.randn(b, kvh, g, d, device=dev, dtype=dtype, generator=gen)
        k = torch.randn(b, kvh, n, d, device=dev, dtype=dtype, generator=gen)
        v = torch.randn(b, kvh, n, d, device=dev, dtype=dtype, generator=gen)
        return q, k, v

    for n in ctxs:
        kv_bytes.append(2 * kvh * n * d * torch.empty((), dtype=dtype).element_size())
        one.append(timed(f"one sequence L={n}", lambda: (*tensors(1, n), F.scaled_dot_product_attention)))
        spread.append(timed(f"{SPREAD_BATCH} sequences L={n // SPREAD_BATCH}",
                            lambda: (*tensors(SPREAD_BATCH, n // SPREAD_BATCH), F.scaled_dot_product_attention)))
        split.append(timed(f"split-KV L={n}", lambda: (*tensors(1, n), lambda q, k, v: split_kv_sdpa(q, k, v, splits))))
    cap = harness.capabilities()
    sms = getattr(cap, "sms", None) if on_gpu else None
    if on_gpu and sms is None:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
    from .serving import model_dtype

    return SplitKVSweep(heads=h, kv_heads=kvh, head_dim=d, contexts=ctxs, kv_bytes=kv_bytes, one_seq_s=one, spread_s=spread, split_s=split,
                        spread_batch=SPREAD_BATCH, splits=splits, dtype=model_dtype(dtype), device=harness.device_name(), sms=sms,
                        errors=errors)


def accuracy_rows(sweep, gpu: Optional[str], device: str) -> list:
    """Decode attention at the longest context. One sequence against the chapter's model of a kernel
    with one thread block per KV head (:func:`widgets.models.serving.split_kv_attention`,
    ``time_unsplit_s``, its default ``sm_share``; the catalog's SMs and bandwidth); the same bytes
    over ``spread_batch`` sequences, which fill the SMs, against the memory roof (KV bytes over the
    catalog's bandwidth). Both are predictions. The explicit split-KV in torch has no model (its
    scores' round trip through memory is not modelled) and gets no row: the memory roof is only a
    bound for it. Empty without the experiment, for a failed one, or a device the catalog lacks."""
    from ..accuracy import Row
    from ..hardware import get_gpu
    from ..models import serving as sv

    if not sweep or gpu is None or (isinstance(sweep, dict) and "error" in sweep) or isinstance(sweep, harness.Failed):
        return []
    s = sweep if isinstance(sweep, SplitKVSweep) else SplitKVSweep.from_record(sweep)
    g = get_gpu(gpu)
    bw = g.hbm_bytes_per_s
    n, kv = s.contexts[-1], s.kv_bytes[-1]
    rows = []
    if s.one_seq_s[-1] is not None:
        model = sv.split_kv_attention(1, s.kv_heads, n, kv / (n * s.kv_heads), g.sms, bw).time_unsplit_s
        rows.append(Row("serving", f"decode attention of one layer, 1 sequence of {n:,} tokens",
                        "sv.split_kv_attention, one block per KV head (unsplit)", model, s.one_seq_s[-1], "s", "prediction", device,
                        "assumes one SM draws sm_share times its equal share of the bandwidth (an assumption, not a measurement); "
                        "SDPA's kernel choice (not recorded) decides how many SMs one sequence keeps busy"))
    if s.spread_s[-1] is not None:
        rows.append(Row("serving", f"decode attention of one layer, {s.spread_batch} sequences of {n // s.spread_batch:,} tokens",
                        "KV bytes / datasheet bandwidth", kv / bw, s.spread_s[-1], "s", "prediction", device,
                        "the memory roof: the sequences' heads fill the SMs"))
    return rows
