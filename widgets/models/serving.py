"""Serving planners: a model's configuration on a GPU: the memory budget, prefill and decode,
latency, capacity and cost, and a paged KV cache.

Pure functions of physical quantities (standard library only). The counts they start from
(parameters, KV bytes per token, FLOP per token) are :mod:`widgets.models.transformer`'s; the
models by name are :mod:`widgets.models.llms`'s; the GPUs are :mod:`widgets.hardware`'s. Every
public function rejects non-physical input with a ``ValueError`` naming the parameter, the value
and what is valid.

Units are in the names: ``*_bytes`` [B], ``*_bytes_per_s`` [B/s], ``*_flop`` [FLOP],
``*_flop_per_s`` [FLOP/s], ``*_s`` [s], ``*_per_s`` [1/s], ``*_tokens`` [tokens].

Notes
-----
- A decode step produces one token for each of ``batch`` sequences. Its memory lower bound reads
  every weight the step uses once and every cached key and value of every sequence once.
- ``model`` arguments take a catalog name (``"Llama-3-8B"``) or a ``ModelConfig``; ``gpu`` a
  catalog name or a ``GPU`` record; ``weight_dtype``/``kv_dtype`` a format name of
  :mod:`widgets.dtypes`.

Explained in :ref:`serving`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

from .. import dtypes
from ..hardware import GPU, get_gpu
from . import _check
from .collectives import ring_allreduce_time_s
from .llms import get_model
from .transformer import MAX_COUNT, ModelConfig, _quantity, activation_bytes, cached_tokens, weight_bytes

# vLLM's default ``gpu_memory_utilization`` is 0.9: it plans weights, activations and KV cache in
# 90% of device memory and leaves the rest to the CUDA context, libraries and fragmentation.
DEFAULT_RESERVE_FRACTION = 0.10
# Tokens a serving engine pushes through one forward pass when it profiles peak activation memory
# (a chunked-prefill budget); a choice, not a constant of nature.
DEFAULT_PREFILL_CHUNK_TOKENS = 2048
# Latency of one step of a ring all-reduce (a ring of n GPUs takes 2(n-1) steps) [s]: None means
# the collectives chapter's default (``collectives.ring_allreduce_time_s``, the book's one all-reduce
# model, with its per-call and per-step latencies). Used only when ``tp > 1``.
DEFAULT_ALLREDUCE_LATENCY_S = None
# Highest utilization (offered load over capacity) a capacity plan accepts: near 1 the queue in
# front of the replicas grows without bound (an M/G/c queue's wait diverges as utilization -> 1),
# so a plan keeps headroom. 0.8 is a common rule of thumb, not a constant of nature.
DEFAULT_MAX_UTILIZATION = 0.8


def _dtype_bytes(name: str, value) -> float:
    """Bytes per element of the format named by the parameter ``name`` (:mod:`widgets.dtypes`)."""
    return dtypes.storage_bytes_per_element(value, param=name)


def _gpu(value, name: str = "gpu") -> GPU:
    """A catalog GPU (by name) or a GPU record, the error naming the caller's parameter."""
    return get_gpu(value, param=name)


MIN_ARRIVAL_RATE_PER_S = 1e-9  # one request in 30 years: below it no server is planned


def _rate(name: str, value) -> float:
    """A request rate [1/s] in [MIN_ARRIVAL_RATE_PER_S, MAX_QUANTITY]."""
    v = _quantity(name, value, zero=False)
    if v < MIN_ARRIVAL_RATE_PER_S:
        raise ValueError(f"{name} must be >= {MIN_ARRIVAL_RATE_PER_S:g} requests/s, got {value!r}")
    return v


# --------------------------------------------------------------------------------------------
# Decode: the memory lower bound and the ridge
# --------------------------------------------------------------------------------------------


def decode_step_time_s(param_bytes: float, kv_bytes: float, hbm_bytes_per_s: float) -> float:
    """Memory lower bound of one decode step [s], ``(param_bytes + kv_bytes) / hbm_bytes_per_s``.

    Every weight the step uses and every cached key and value of the batch are read once.

    Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

    Parameters
    ----------
    param_bytes : float
        Weight bytes the step reads [B], >= 0.
    kv_bytes : float
        KV-cache bytes the step reads (all sequences of the batch) [B], >= 0.
    hbm_bytes_per_s : float
        Memory bandwidth [B/s], > 0: the datasheet's, or one measured.

    Returns
    -------
    float
        Time of the step at full bandwidth [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    Llama-3-8B in bf16 on an H200 (4.8 TB/s), one sequence with a short context: about 3.1 ms,
    so at most ~320 tokens/s for that user, whatever the GPU's FLOP/s.

    >>> round(decode_step_time_s(15e9, 0.13e9, 4.8e12) * 1e3, 2)
    3.15
    """
    w = _quantity("param_bytes", param_bytes)
    kv = _quantity("kv_bytes", kv_bytes)
    bw = _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    return _check.finite_result("step time", (w + kv) / bw, param_bytes=param_bytes, kv_bytes=kv_bytes, hbm_bytes_per_s=hbm_bytes_per_s)


def decode_ridge_batch(
    param_bytes: float,
    flop_per_seq: float,
    kv_bytes_per_seq: float,
    peak_flop_per_s: float,
    hbm_bytes_per_s: float,
) -> float:
    """The batch at which decode turns compute-bound [sequences].

    Where ``(param_bytes + B * kv_bytes_per_seq) / bandwidth == B * flop_per_seq / peak``. For the
    weight matmuls (``kv_bytes_per_seq = 0``) it is ``param_bytes / (2 * params) * peak / bandwidth``:
    the GPU's ridge intensity times the bytes per weight over 2 (206 for bf16 on an H200; 240 on a
    TPU v5e). Counting the KV cache in the same roofline adds bytes that grow with the batch as fast
    as the FLOP do; when ``kv_bytes_per_seq / bandwidth`` reaches ``flop_per_seq / peak`` the step
    never turns compute-bound.

    Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

    Parameters
    ----------
    param_bytes : float
        Weight bytes a step reads [B], >= 0.
    flop_per_seq : float
        FLOP per sequence per step [FLOP], > 0.
    kv_bytes_per_seq : float
        KV-cache bytes per sequence per step [B], >= 0.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.
    hbm_bytes_per_s : float
        Memory bandwidth [B/s], > 0.

    Returns
    -------
    float
        The ridge batch [sequences].

    Raises
    ------
    ValueError
        If an input is out of range, or the KV bytes per sequence keep the step memory-bound at any
        batch (there is no ridge).

    Examples
    --------
    >>> round(decode_ridge_batch(2 * 8e9, 2 * 8e9, 0, 989.4e12, 4.8e12), 1)  # bf16 on an H200
    206.1
    """
    w = _quantity("param_bytes", param_bytes)
    f = _quantity("flop_per_seq", flop_per_seq, zero=False)
    kv = _quantity("kv_bytes_per_seq", kv_bytes_per_seq)
    p = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    bw = _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    if f * bw <= kv * p:
        raise ValueError(f"kv_bytes_per_seq={kv_bytes_per_seq!r} over hbm_bytes_per_s={hbm_bytes_per_s!r} is not below flop_per_seq="
                         f"{flop_per_seq!r} over peak_flop_per_s={peak_flop_per_s!r}: the step never turns compute-bound, "
                         "there is no ridge batch (param_bytes does not matter)")
    return _check.finite_result("ridge batch", (w / bw) / (f / p - kv / bw), param_bytes=param_bytes, flop_per_seq=flop_per_seq,
                                kv_bytes_per_seq=kv_bytes_per_seq, peak_flop_per_s=peak_flop_per_s, hbm_bytes_per_s=hbm_bytes_per_s)


# --------------------------------------------------------------------------------------------
# Latency metrics, Little's law, throughput and cost
# --------------------------------------------------------------------------------------------


def e2e_latency_s(ttft_s: float, tpot_s: float, output_tokens: int) -> float:
    """End-to-end latency of a request [s], ``ttft_s + (output_tokens - 1) * tpot_s``.

    The first token comes after ``ttft_s``, each later one ``tpot_s`` after the previous.

    Explained in :ref:`serving` > Latency: TTFT, TPOT, ITL and end-to-end.

    Parameters
    ----------
    ttft_s : float
        Time to the first token [s], >= 0.
    tpot_s : float
        Time per output token after the first [s], >= 0.
    output_tokens : int
        Tokens generated [tokens], >= 1.

    Returns
    -------
    float
        Latency [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(e2e_latency_s(0.2, 0.02, 101), 6)
    2.2
    """
    a = _quantity("ttft_s", ttft_s)
    b = _quantity("tpot_s", tpot_s)
    n = _check.integer("output_tokens", output_tokens, minimum=1)
    return a + (n - 1) * b


def tpot_s(e2e_s: float, ttft_s: float, output_tokens: int) -> float:
    """Time per output token after the first [s], ``(e2e_s - ttft_s) / (output_tokens - 1)``.

    The mean of the inter-token latencies (ITL) of one request.

    Explained in :ref:`serving` > Latency: TTFT, TPOT, ITL and end-to-end.

    Parameters
    ----------
    e2e_s : float
        End-to-end latency [s], >= ``ttft_s``.
    ttft_s : float
        Time to the first token [s], >= 0.
    output_tokens : int
        Tokens generated [tokens], >= 2.

    Returns
    -------
    float
        Mean time per output token [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(tpot_s(2.2, 0.2, 101), 6)
    0.02
    """
    e = _quantity("e2e_s", e2e_s)
    a = _quantity("ttft_s", ttft_s)
    n = _check.integer("output_tokens", output_tokens, minimum=2)
    if a > e:
        raise ValueError(f"ttft_s must be <= e2e_s={e2e_s!r}, got {ttft_s!r}")
    return (e - a) / (n - 1)


def littles_law_concurrency(arrival_rate_per_s: float, latency_s: float) -> float:
    """Little's law: requests in the system = arrival rate x time each spends in it, ``L = lambda W``.

    For a server, the batch it actually runs is the arrival rate times the time a request spends
    decoding, whatever batch the configuration allows.

    Explained in :ref:`serving` > How many requests: Little's law, throughput and cost.

    Parameters
    ----------
    arrival_rate_per_s : float
        Requests arriving per second [1/s], >= 0.
    latency_s : float
        Time each spends in the system [s], >= 0.

    Returns
    -------
    float
        Requests in flight [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> littles_law_concurrency(10, 6.4)  # 10 requests/s, 6.4 s each: 64 in flight
    64.0
    """
    lam = _quantity("arrival_rate_per_s", arrival_rate_per_s)
    w = _quantity("latency_s", latency_s)
    return lam * w


def decode_tokens_per_s(batch: float, tpot_s: float) -> float:
    """Output tokens per second of a server decoding ``batch`` sequences at ``tpot_s`` per step.

    Explained in :ref:`serving` > How many requests: Little's law, throughput and cost.

    Parameters
    ----------
    batch : float
        Sequences decoded together [-], >= 0.
    tpot_s : float
        Time of one decode step [s], > 0.

    Returns
    -------
    float
        Output tokens per second [1/s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> decode_tokens_per_s(64, 0.02)
    3200.0
    """
    b = _quantity("batch", batch)
    t = _quantity("tpot_s", tpot_s, zero=False)
    return _check.finite_result("tokens per second", b / t, batch=batch, tpot_s=tpot_s)


def cost_per_million_tokens(gpu_hour_price: float, gpus: float, tokens_per_s: float) -> float:
    """Cost of a million tokens from a GPU-hour price, ``gpus * price / 3600 / tokens_per_s * 1e6``.

    Explained in :ref:`serving` > How many requests: Little's law, throughput and cost.

    Parameters
    ----------
    gpu_hour_price : float
        Price of one GPU for an hour [currency], >= 0.
    gpus : float
        GPUs serving [-], > 0.
    tokens_per_s : float
        Tokens they produce per second [1/s], > 0.

    Returns
    -------
    float
        Cost of a million tokens [currency].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(cost_per_million_tokens(3.0, 1, 3200), 4)  # $3/GPU-hour at 3200 tokens/s
    0.2604
    """
    price = _quantity("gpu_hour_price", gpu_hour_price)
    g = _quantity("gpus", gpus, zero=False)
    tps = _quantity("tokens_per_s", tokens_per_s, zero=False)
    return _check.finite_result("cost", price * g / 3600.0 / tps * 1e6, gpu_hour_price=gpu_hour_price, gpus=gpus, tokens_per_s=tokens_per_s)


def allreduce_time_s(message_bytes: float, gpus: int, link_bytes_per_s: float, latency_s: Optional[float] = DEFAULT_ALLREDUCE_LATENCY_S) -> float:
    """Ring all-reduce of ``message_bytes`` over ``gpus`` GPUs [s], the book's one all-reduce model.

    ``collectives.ring_allreduce_time_s``: ``2(n-1)/n`` of the message crosses each link and each of
    the ``2(n-1)`` steps pays ``latency_s`` (None: the collectives model's default latencies); 0 for
    one GPU.

    Explained in :ref:`serving` > What tensor parallelism changes.

    Parameters
    ----------
    message_bytes : float
        Bytes each GPU contributes [B], 0 to 2**60.
    gpus : int
        GPUs in the ring [-], >= 1.
    link_bytes_per_s : float
        Per-direction link bandwidth [B/s], > 0.
    latency_s : float or None, optional
        Latency of one ring step [s], >= 0; None: the collectives chapter's defaults.

    Returns
    -------
    float
        Time of the all-reduce [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> allreduce_time_s(1e6, 1, 450e9)
    0.0
    """
    m = _quantity("message_bytes", message_bytes)
    if m > 2**60:
        raise ValueError(f"message_bytes must be <= 2**60 B (1 EiB), the collectives model's bound; got {message_bytes!r}")
    n = _check.integer("gpus", gpus, minimum=1, maximum=MAX_COUNT)
    bw = _quantity("link_bytes_per_s", link_bytes_per_s, zero=False)
    if latency_s is None:
        return ring_allreduce_time_s(m, n, bw)
    return ring_allreduce_time_s(m, n, bw, _quantity("latency_s", latency_s))


# --------------------------------------------------------------------------------------------
# The memory budget of one GPU
# --------------------------------------------------------------------------------------------


def _kv_share(model: ModelConfig, tp: int) -> float:
    """Fraction of the KV cache each of ``tp`` GPUs holds: heads are split, but a GPU holds at
    least one KV head, and MLA's latent is shared by all heads, so it is replicated."""
    if model.attention == "mla":
        return 1.0
    return math.ceil(model.kv_heads / tp) / model.kv_heads


@dataclass(frozen=True)
class MemoryBudget:
    """Where one GPU's memory goes, and how many sequences its KV cache can hold (:func:`memory_budget`).

    Attributes
    ----------
    model, gpu : str
        The model's and the GPU's names.
    tp : int
        Tensor-parallel GPUs the model is split over [-].
    hbm_bytes : float
        The GPU's memory planned in [B].
    weight_bytes, activation_bytes, overhead_bytes : float
        This GPU's share of the weights, the peak activations (with the batch's logits) and the
        runtime reserve [B].
    kv_bytes_per_seq : float
        KV cache of one sequence on this GPU [B].
    batch : int
        Sequences planned for [-].
    kv_bytes : float
        KV cache of the batch on this GPU [B].
    free_bytes : float
        What is left [B]; negative when the batch does not fit.
    fits : bool
        Whether ``free_bytes >= 0``.
    max_concurrent_seqs : int
        Sequences of this length the memory left after weights, activations and reserve can hold [-].
    """

    model: str
    gpu: str
    tp: int
    hbm_bytes: float
    weight_bytes: float
    activation_bytes: float
    overhead_bytes: float
    kv_bytes_per_seq: float
    batch: int
    kv_bytes: float
    free_bytes: float
    fits: bool
    max_concurrent_seqs: int

    @property
    def used_bytes(self) -> float:
        """Weights, activations, reserve and KV cache together [B]."""
        return self.weight_bytes + self.activation_bytes + self.overhead_bytes + self.kv_bytes


def memory_budget(
    model,
    gpu="H200-SXM",
    context_tokens: int = 8192,
    batch: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int = 1,
    reserve_fraction: float = DEFAULT_RESERVE_FRACTION,
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS,
) -> MemoryBudget:
    """Where one GPU's memory goes, and how many sequences of ``context_tokens`` its KV cache can hold.

    The GPU's memory (``GPU.memory_bytes``: the capacity the device reports as usable where the
    catalog has it, 139.8 GiB for an H200, else the datasheet's) holds the weights (split ``tp``
    ways), the KV cache of ``batch`` sequences of ``context_tokens``, the peak activations of a
    ``prefill_chunk_tokens`` forward pass and a runtime reserve (CUDA context, libraries,
    fragmentation: ``reserve_fraction`` of memory). Each sequence also needs its fp32 logits.

    Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    context_tokens : int, optional
        Tokens per sequence [tokens], >= 0.
    batch : int, optional
        Sequences [-], >= 0.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    reserve_fraction : float, optional
        Share of memory kept for the runtime [-], in [0, 1] (vLLM plans in 90%).
    prefill_chunk_tokens : int, optional
        Tokens of the forward pass whose activations are planned for [tokens], >= 0.

    Returns
    -------
    MemoryBudget
        Each part [B], whether the batch fits, and ``max_concurrent_seqs``.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> b = memory_budget("Llama-3-8B", "H200-SXM", 8192, 64)
    >>> b.fits, b.max_concurrent_seqs
    (True, 110)
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    n_tp = _check.integer("tp", tp, minimum=1)
    bsz = _check.integer("batch", batch, minimum=0, maximum=MAX_COUNT)
    reserve = _check.fraction("reserve_fraction", reserve_fraction)
    chunk = _check.integer("prefill_chunk_tokens", prefill_chunk_tokens, minimum=0, maximum=MAX_COUNT)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    hbm = float(g.memory_bytes)  # what the device reports as usable where known, else the datasheet's
    w = weight_bytes(m.params, _dtype_bytes("weight_dtype", weight_dtype)) / n_tp
    act0 = activation_bytes(chunk, m.hidden_size, m.intermediate_size, m.vocab_size, 0, 2) / n_tp
    logits_per_seq = activation_bytes(0, m.hidden_size, m.intermediate_size, m.vocab_size, 1, 2) / n_tp
    act = act0 + bsz * logits_per_seq
    overhead = reserve * hbm
    per_seq = m.kv_bytes_per_sequence(ctx, _dtype_bytes("kv_dtype", kv_dtype)) * _kv_share(m, n_tp)
    kv = per_seq * bsz
    free = hbm - w - act - overhead - kv
    room = hbm - w - act0 - overhead  # what sequences can share: their KV cache and their logits
    max_seqs = int(room // (per_seq + logits_per_seq)) if room > 0 else 0
    return MemoryBudget(
        model=m.name, gpu=g.name, tp=n_tp, hbm_bytes=hbm, weight_bytes=w, activation_bytes=act, overhead_bytes=overhead,
        kv_bytes_per_seq=per_seq, batch=bsz, kv_bytes=kv, free_bytes=free, fits=free >= 0, max_concurrent_seqs=max(max_seqs, 0),
    )


# --------------------------------------------------------------------------------------------
# A decode step and a request's latency
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of ``batch`` sequences at ``context_tokens`` each, on one GPU of ``tp`` (:func:`decode_step`).

    The weight matmuls and attention run as separate kernels, one after the other, so each gets its
    own roofline: ``linear_s = max(weight bytes / bandwidth, 2 x tokens x params / peak)`` and
    ``attention_s = max(KV bytes / bandwidth, attention FLOP / peak)``; the step takes their sum
    (plus the all-reduces of tensor parallelism). Fused prompt tokens (chunked prefill) share the
    weight read of the decode tokens: they add FLOP to the same matmuls, not a second roofline.

    Attributes
    ----------
    batch : float
        Sequences decoding [-].
    context_tokens : int
        Tokens each has cached [tokens].
    weight_bytes, kv_bytes : float
        Weights and KV cache the step reads on this GPU [B].
    flop : float
        FLOP of the step on this GPU [FLOP].
    memory_s : float
        (weights + KV cache) / bandwidth, the memory lower bound [s].
    compute_s : float
        All FLOP / peak [s].
    linear_s, attention_s, comm_s : float
        The weight matmuls, attention and the all-reduces [s].
    time_s : float
        The step: ``linear_s + attention_s + comm_s`` [s].
    bound : str
        Of the weight matmuls: ``"memory"`` below the ridge batch, ``"compute"`` above.
    intensity : float
        FLOP per byte of the whole step [FLOP/B].
    ridge_batch : float
        Where the weight matmuls turn compute-bound [sequences].
    attention_bound : str
        Of attention: ``"compute"`` when its intensity on one GPU is above the GPU's ridge.
    attention_intensity : float
        FLOP per byte of attention on one GPU [FLOP/B].
    prefill_tokens : float
        Prompt tokens fused into the step [tokens].
    compute_dtype : str
        The format whose peak bounds the arithmetic (:func:`compute_dtype_for`).
    compute_note : str
        Why that is not the weights' format (empty when it is, or when it was asked for).
    """

    batch: float
    context_tokens: int
    weight_bytes: float
    kv_bytes: float
    flop: float
    memory_s: float  # (weights + KV cache) / bandwidth: decode_step_time_s, the memory lower bound
    compute_s: float  # all FLOP / peak
    linear_s: float
    attention_s: float
    comm_s: float
    time_s: float
    bound: str  # of the weight matmuls: "memory" below the ridge batch, "compute" above
    intensity: float  # FLOP per byte of the whole step
    ridge_batch: float  # where the weight matmuls turn compute-bound
    attention_bound: str = "memory"  # of attention: "compute" when its FLOP/B per GPU is above the GPU's ridge (MLA on one GPU)
    attention_intensity: float = 0.0  # FLOP per byte of attention on one GPU (falls n-fold when TP replicates the cache)
    prefill_tokens: float = 0.0  # prompt tokens fused into this step (chunked prefill)
    compute_dtype: str = "bf16"  # the format whose peak bounds the arithmetic
    compute_note: str = ""  # why it is not the weights' format ("" when it is, or was asked for)

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second of the batch, one per sequence per step [1/s]."""
        return self.batch / self.time_s if self.time_s > 0 else 0.0


# Formats with a dense peak of their own that weights may be stored in and computed in as they are.
_SELF_COMPUTED = ("fp32", "bf16", "fp16")
# Where the weights' format is not one of them (or the GPU has no peak for it): the 16-bit formats,
# then fp32, in this order. bf16 first because it is what the serving engines pick where it exists;
# fp16 where it does not (Turing, sm_75).
_FALLBACK_COMPUTE = ("bf16", "fp16", "fp32")


def _peak_key(name: str, value) -> str:
    """The ``GPU.peak_flop_per_s`` key of a format named by the parameter ``name``: ``"fp8"`` for
    the plain E4M3/E5M2 formats (FNUZ included), the canonical name otherwise (``ValueError`` if it
    is not a format of :mod:`widgets.dtypes`, or has no peak key)."""
    d = dtypes.get_dtype(value, param=name)
    key = "fp8" if d.name.startswith("fp8_") else d.name
    if key not in dtypes.PEAK_DTYPES:
        raise ValueError(f"{name} must be a format with a peak rate ({', '.join(map(repr, dtypes.PEAK_DTYPES))}), got {value!r}")
    return key


def compute_dtype_for(gpu="H200-SXM", weight_dtype: str = "bf16", compute_dtype: Optional[str] = None) -> tuple:
    """The format whose dense peak bounds the arithmetic of a step, and why it is not the weights' own.

    With ``compute_dtype=None`` the weights' format where it is fp32, bf16 or fp16 and the GPU has a
    dense peak for it; otherwise the first of bf16, fp16, fp32 the GPU has a peak for: 8-bit and
    4-bit weights are counted at the 16-bit rate (weight-only kernels widen them; pass
    ``compute_dtype="fp8"`` for fp8 matmuls), and a T4 (no bf16 tensor cores) computes bf16 weights
    in fp16. A ``compute_dtype`` given is used as it is.

    Explained in :ref:`serving` > Latency: TTFT, TPOT, ITL and end-to-end.

    Parameters
    ----------
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    compute_dtype : str or None, optional
        A format with a catalog peak (``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``);
        None: chosen as above.

    Returns
    -------
    compute_dtype : str
        The key of ``GPU.peak_flop_per_s`` the step is computed at.
    note : str
        Empty when that is the weights' format or the one asked for; else why it is not (the
        GPU's reason from ``GPU.why_no_peak`` where it lacks the format).

    Raises
    ------
    ValueError
        If a name is not a format, ``compute_dtype`` has no peak on this GPU (the message says
        why), or the GPU has no peak at all (a GPU described from the CUDA runtime).

    Examples
    --------
    >>> compute_dtype_for("H200-SXM", "bf16")
    ('bf16', '')
    >>> compute_dtype_for("T4", "bf16")
    ('fp16', 'T4 (sm_75) has no bf16 tensor cores: bf16 needs sm_80 or newer; computed in fp16')
    >>> compute_dtype_for("H200-SXM", "int4")[0]
    'bf16'
    """
    g = _gpu(gpu)
    wd = dtypes.get_dtype(weight_dtype, param="weight_dtype").name
    if compute_dtype is not None:
        key = _peak_key("compute_dtype", compute_dtype)
        g.peak(key, param="compute_dtype")  # raises with the GPU's reason
        return key, ""
    return _auto_compute_dtype(g, wd)


def _auto_compute_dtype(g: GPU, wd: str) -> tuple:
    """compute_dtype=None: (key, note) for canonical weight format ``wd`` on ``g``."""
    if wd in _SELF_COMPUTED and wd in g.peak_flop_per_s:
        return wd, ""
    key = next((k for k in _FALLBACK_COMPUTE if k in g.peak_flop_per_s), None)
    if key is None:
        raise ValueError(f"gpu {g.name} has no peak FLOP/s in the catalog ({g.why_no_peak('bf16')}): give peak_flop_per_s")
    if wd in _SELF_COMPUTED:
        why = g.why_no_peak(wd)
    elif wd.startswith("fp8_") and "fp8" in g.peak_flop_per_s:
        why = f"{wd} weights counted at the {key} rate (weight-only fp8; compute_dtype='fp8' for fp8 matmuls)"
    elif wd.startswith("fp8_"):
        why = g.why_no_peak("fp8")
    else:
        why = f"{wd} weights are widened to 16 bits for the matmuls (weight-only quantization)"
    return key, f"{why}; computed in {key}"


def _rates(gpu: GPU, weight_dtype, compute_dtype, hbm_bytes_per_s, peak_flop_per_s):
    """(bandwidth [B/s], peak [FLOP/s], compute dtype, note) of a step."""
    bw = gpu.hbm_bytes_per_s if hbm_bytes_per_s is None else _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    if peak_flop_per_s is None:
        key, note = compute_dtype_for(gpu, weight_dtype, compute_dtype)
        peak = gpu.peak(key, param="compute_dtype")
    else:
        peak = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
        wd = dtypes.get_dtype(weight_dtype, param="weight_dtype").name
        if compute_dtype is not None:
            key, note = _peak_key("compute_dtype", compute_dtype), ""
        else:
            key = wd if wd in _SELF_COMPUTED else "bf16"
            note = ""
        note = f"peak_flop_per_s given ({peak:.4g} FLOP/s)" + (f"; {note}" if note else "")
    if not bw or bw <= 0:
        raise ValueError(f"hbm_bytes_per_s must be given for {gpu.name} (the catalog has none)")
    return bw, peak, key, note


def decode_step(
    model,
    gpu="H200-SXM",
    batch: float = 1,
    context_tokens: int = 1024,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int = 1,
    compute_dtype: Optional[str] = None,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    allreduce_latency_s: Optional[float] = DEFAULT_ALLREDUCE_LATENCY_S,
    prefill_tokens: float = 0.0,
    prompt_tokens: Optional[int] = None,
    allreduce_call_s: Optional[float] = None,
) -> DecodeStep:
    """Lower bound on one decode step, kernel by kernel, on one GPU of ``tp``.

    The weight matmuls take ``max(W / bandwidth, 2 B P / peak)``, attention ``max(KV / bandwidth,
    FLOP / peak)``, per GPU; with ``tp > 1`` two all-reduces of the batch's hidden states per layer
    are added (Megatron-style tensor parallelism). Below the ridge batch both parts are memory-bound
    and the step takes ``decode_step_time_s(W, KV, bandwidth)``. MLA's attention, whose intensity is
    above the ridge when all query heads share one GPU's copy of the latent, is compute-bound at any
    batch on one GPU; under tensor parallelism each GPU holds ``1/tp`` of the heads but the whole
    latent, so its intensity falls ``tp``-fold and it is memory-bound again.

    With ``prefill_tokens > 0`` the step also carries that many tokens of prompts of
    ``prompt_tokens`` each (chunked prefill, Sarathi-Serve): they go through the same weight matmuls
    (more FLOP, the same weight bytes; the output head only for the prompts they complete), attend
    causally to their prompt and write their keys and values.

    Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    batch : float, optional
        Sequences decoding, one token each [-], > 0 (a mean occupancy may be fractional).
    context_tokens : int, optional
        Tokens each sequence has cached [tokens], >= 0.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    compute_dtype : str or None, optional
        The format whose catalog peak bounds the arithmetic (``"bf16"``, ``"fp16"``, ``"fp8"``...);
        None: the weights' where the GPU has a peak for it, else the GPU's 16-bit format
        (:func:`compute_dtype_for`: fp16 on a T4).
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's datasheet figure.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's figure for ``compute_dtype``.
    allreduce_latency_s : float or None, optional
        Latency of one ring step [s], >= 0; None: the collectives model's defaults.
    prefill_tokens : float, optional
        Prompt tokens fused into the step [tokens], >= 0.
    prompt_tokens : int or None, optional
        Length of those prompts [tokens], >= 1; needed when ``prefill_tokens > 0``.
    allreduce_call_s : float or None, optional
        Time of each all-reduce call [s], >= 0, replacing the ring model (engines reduce decode-size
        messages with one-shot kernels inside CUDA graphs: mostly a fixed latency).

    Returns
    -------
    DecodeStep
        Bytes [B], FLOP [FLOP], the linear, attention and communication times [s], the total
        ``time_s`` [s], which part bounds each kernel, the intensities [FLOP/B] and the ridge batch.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> s = decode_step("Llama-3-8B", "H200-SXM", batch=1, context_tokens=1024)
    >>> s.bound, round(s.time_s * 1e3, 2), round(s.ridge_batch)
    ('memory', 3.15, 206)
    >>> decode_step("DeepSeek-V3", "H200-SXM", batch=1, context_tokens=4096).attention_bound
    'compute'
    >>> decode_step("DeepSeek-V3", "H200-SXM", 64, 8192, "fp8", tp=8).attention_bound  # 242 / 8 FLOP/B
    'memory'
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    b = _quantity("batch", batch, zero=False)
    if b > MAX_COUNT:
        raise ValueError(f"batch must be <= {MAX_COUNT}, got {batch!r}")
    c = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    tp_pre = _quantity("prefill_tokens", prefill_tokens)
    if tp_pre > MAX_COUNT:
        raise ValueError(f"prefill_tokens must be <= {MAX_COUNT}, got {prefill_tokens!r}")
    lat = None if allreduce_latency_s is None else _quantity("allreduce_latency_s", allreduce_latency_s)
    call_s = None if allreduce_call_s is None else _quantity("allreduce_call_s", allreduce_call_s)
    if prompt_tokens is not None:
        p_tok = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    elif tp_pre > 0:
        raise ValueError("prompt_tokens must be given (an integer >= 1) when prefill_tokens > 0, got None")
    else:
        p_tok = 1
    wd, kd = _dtype_bytes("weight_dtype", weight_dtype), _dtype_bytes("kv_dtype", kv_dtype)
    bw, peak, c_key, c_note = _rates(g, weight_dtype, compute_dtype, hbm_bytes_per_s, peak_flop_per_s)
    w = weight_bytes(m.step_params(b + tp_pre), wd) / n_tp
    share = _kv_share(m, n_tp)
    kv_seq = m.kv_bytes_per_sequence(c, kd) * share
    kv = kv_seq * b
    lin_flop = b * 2.0 * m.flop_params / n_tp
    attn_flop = b * m.decode_attention_flop_per_token * cached_tokens(c, m.sliding_window) / n_tp
    kv_pre = 0.0
    if tp_pre > 0:
        body = m.flop_params - m.head_params
        lin_flop += (2.0 * tp_pre * body + 2.0 * (tp_pre / p_tok) * m.head_params) / n_tp
        attn_flop += tp_pre * m.prefill_attention_flop(p_tok) / p_tok / n_tp
        kv_pre = tp_pre * m.kv_bytes_per_token(kd) * share  # written once
    linear_s = max(w / bw, lin_flop / peak)
    attention_s = max((kv + kv_pre) / bw, attn_flop / peak)
    comm = 0.0
    if n_tp > 1:
        link = g.interconnect_bytes_per_s
        if not link:
            raise ValueError(f"tp must be 1 on {g.name}: it has no GPU-to-GPU link in the catalog")
        per_call = call_s if call_s is not None else allreduce_time_s((b + tp_pre) * m.hidden_size * 2.0, n_tp, link, lat)
        comm = 2 * m.layers * per_call
    _check.finite_result("step time", linear_s + attention_s + comm, hbm_bytes_per_s=bw, peak_flop_per_s=peak, batch=batch,
                         allreduce_latency_s=allreduce_latency_s)
    w1 = weight_bytes(m.step_params(1), wd) / n_tp
    ridge = decode_ridge_batch(w1, 2.0 * m.flop_params / n_tp, 0.0, peak, bw)
    flop = lin_flop + attn_flop
    # Per GPU: attention FLOP split n ways, the cache only by ``share`` (MLA's latent is replicated,
    # as are GQA's KV heads when tp exceeds them): intensity falls by n * share.
    a_int = m.decode_attention_flop_per_byte(kd) / (n_tp * share)
    return DecodeStep(
        batch=b, context_tokens=c, weight_bytes=w, kv_bytes=kv, flop=flop, memory_s=decode_step_time_s(w, kv + kv_pre, bw), compute_s=flop / peak,
        linear_s=linear_s, attention_s=attention_s, comm_s=comm, time_s=linear_s + attention_s + comm,
        bound="memory" if w / bw >= lin_flop / peak else "compute", intensity=flop / (w + kv + kv_pre), ridge_batch=ridge,
        attention_bound="compute" if a_int > peak / bw else "memory", attention_intensity=a_int, prefill_tokens=tp_pre,
        compute_dtype=c_key, compute_note=c_note,
    )


def prefill_time_s(
    model,
    gpu="H200-SXM",
    prompt_tokens: int = 1024,
    weight_dtype: str = "bf16",
    tp: int = 1,
    compute_dtype: Optional[str] = None,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
) -> float:
    """Lower bound on the prefill of one prompt [s]: the larger of its FLOP over the peak and its weight bytes over the bandwidth.

    The FLOP are ``ModelConfig.prompt_flop``: 2 per arithmetic parameter per token, the output head
    for the last token only, plus causal attention. Short prompts are memory-bound like a decode
    step; long ones compute-bound.

    Explained in :ref:`serving` > Latency: TTFT, TPOT, ITL and end-to-end.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    prompt_tokens : int, optional
        Tokens of the prompt [tokens], >= 1.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    compute_dtype : str or None, optional
        The format whose catalog peak bounds the arithmetic; None: the weights' where the GPU has
        a peak for it, else the GPU's 16-bit format (:func:`compute_dtype_for`).
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's datasheet figure.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's figure for ``compute_dtype``.

    Returns
    -------
    float
        Time to the first token, no queueing [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(prefill_time_s("Llama-3-8B", "H200-SXM", 4096) * 1e3, 1)
    62.2
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    bw, peak, _, _ = _rates(g, weight_dtype, compute_dtype, hbm_bytes_per_s, peak_flop_per_s)
    flop = m.prompt_flop(p) / n_tp
    w = weight_bytes(m.step_params(p), _dtype_bytes("weight_dtype", weight_dtype)) / n_tp
    return _check.finite_result("prefill time", max(flop / peak, w / bw), hbm_bytes_per_s=bw, peak_flop_per_s=peak)


@dataclass(frozen=True)
class Latency:
    """A request's latency on a server decoding ``batch`` sequences (:func:`latency`).

    Attributes
    ----------
    model, gpu : str
        The model's and the GPU's names.
    batch : float
        Sequences decoding together [-].
    prompt_tokens, output_tokens : int
        The request's prompt and generated tokens [tokens].
    ttft_s, tpot_s, e2e_s : float
        Time to the first token, per output token after it, and end to end [s].
    tokens_per_s : float
        Output tokens per second of the whole batch [1/s].
    step : DecodeStep
        The decode step at the mean context.
    compute_dtype : str
        The format whose peak bounds prefill and decode (:func:`compute_dtype_for`).
    compute_note : str
        Why that is not the weights' format (empty when it is, or when it was asked for).
    """

    model: str
    gpu: str
    batch: float
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    tpot_s: float
    e2e_s: float
    tokens_per_s: float  # output tokens per second of the whole batch
    step: DecodeStep
    compute_dtype: str = "bf16"  # the format whose peak bounds prefill and decode
    compute_note: str = ""  # why it is not the weights' format


def latency(
    model,
    gpu="H200-SXM",
    batch: float = 1,
    prompt_tokens: int = 1024,
    output_tokens: int = 256,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int = 1,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    compute_dtype: Optional[str] = None,
) -> Latency:
    """A request's latency on a server decoding ``batch`` sequences: TTFT, TPOT, end-to-end and tokens/s.

    TTFT is the prefill of this prompt (no queueing); TPOT a decode step at the mean context of the
    generation, ``prompt + output/2``.

    Explained in :ref:`serving` > Latency: TTFT, TPOT, ITL and end-to-end.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    batch : float, optional
        Sequences decoding together [-], > 0.
    prompt_tokens : int, optional
        Tokens of the prompt [tokens], >= 1.
    output_tokens : int, optional
        Tokens generated [tokens], >= 1.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's datasheet figure.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's figure for ``compute_dtype``.
    compute_dtype : str or None, optional
        The format whose catalog peak bounds the arithmetic (``"bf16"``, ``"fp16"``, ``"fp8"``...);
        None: the weights' where the GPU has a peak for it, else the GPU's 16-bit format
        (:func:`compute_dtype_for`: fp16 on a T4).

    Returns
    -------
    Latency
        ``ttft_s``, ``tpot_s``, ``e2e_s`` [s], the batch's ``tokens_per_s`` [1/s], the decode step,
        and the ``compute_dtype`` used with a ``compute_note`` saying why when it is not the weights'.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> r = latency("Llama-3-8B", "H200-SXM", batch=32, prompt_tokens=1024, output_tokens=256)
    >>> round(r.ttft_s * 1e3, 1), round(r.tpot_s * 1e3, 2), round(r.tokens_per_s)
    (14.7, 4.13, 7741)
    >>> t4 = latency("Llama-3-8B", "T4", batch=8, prompt_tokens=1024, output_tokens=128)
    >>> t4.compute_dtype, round(t4.tpot_s * 1e3, 1)
    ('fp16', 50.5)
    """
    m = get_model(model, param="model")
    o = _check.integer("output_tokens", output_tokens, minimum=1)
    ttft = prefill_time_s(m, gpu, prompt_tokens, weight_dtype, tp, compute_dtype, hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    step = decode_step(
        m,
        gpu,
        batch,
        prompt_tokens + o // 2,
        weight_dtype,
        kv_dtype,
        tp,
        compute_dtype,
        hbm_bytes_per_s=hbm_bytes_per_s,
        peak_flop_per_s=peak_flop_per_s,
    )
    return Latency(
        model=m.name, gpu=_gpu(gpu).name, batch=step.batch, prompt_tokens=prompt_tokens, output_tokens=o, ttft_s=ttft,
        tpot_s=step.time_s, e2e_s=e2e_latency_s(ttft, step.time_s, o), tokens_per_s=step.tokens_per_s, step=step,
        compute_dtype=step.compute_dtype, compute_note=step.compute_note,
    )


# --------------------------------------------------------------------------------------------
# Capacity planning
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityPlan:
    """How many GPUs a request rate needs at a TPOT target, and what it costs (:func:`plan_capacity`).

    Attributes
    ----------
    feasible : bool
        Whether any batch meets the target in memory; when not, ``reason`` says why and every rate,
        time and cost is 0.
    reason : str
        Why the plan is infeasible (empty when it is feasible).
    replicas, gpus : int
        Replicas of ``tp`` GPUs, and GPUs in all [-].
    max_batch_memory : int
        Sequences one replica's memory holds [-].
    max_batch_latency : float
        Largest mean batch within the TPOT target [sequences].
    batch : float
        The mean batch each replica runs at the offered rate (Little's law) [sequences].
    tpot_s, ttft_s, e2e_s : float
        Time per output token at that batch, the prompt's prefill alone, and end to end [s].
    utilization : float
        Offered load over the replicas' capacity [-], at most ``max_utilization``.
    output_tokens_per_s : float
        Output tokens per second of the whole service [1/s].
    cost_per_million_output_tokens, cost_per_million_tokens : float
        Cost per million output tokens, and per million prompt and output tokens [currency].
    max_utilization : float
        The headroom the plan kept [-].
    prefill_steps : int
        Chunked prefill: fused steps a prompt's tokens are spread over [-].
    ttft_chunked_s : float
        Those steps times TPOT, the time to the first token of a chunked prompt before queueing [s].
    compute_dtype : str
        The format whose peak bounds prefill and decode (:func:`compute_dtype_for`).
    compute_note : str
        Why that is not the weights' format (empty when it is, or when it was asked for).
    """

    feasible: bool
    reason: str
    replicas: int
    gpus: int
    max_batch_memory: int
    max_batch_latency: float
    batch: float  # achieved mean decode batch per replica (Little's law)
    tpot_s: float
    ttft_s: float  # the prompt's prefill alone: no queueing, not spread over chunked steps
    e2e_s: float
    utilization: float  # offered load over the capacity of the replicas (at most max_utilization)
    output_tokens_per_s: float
    cost_per_million_output_tokens: float
    cost_per_million_tokens: float  # prompt and output tokens together
    max_utilization: float = DEFAULT_MAX_UTILIZATION  # the headroom the plan kept
    prefill_steps: int = 0  # chunked prefill: fused steps a prompt's tokens are spread over, ceil(P / (B P / O))
    ttft_chunked_s: float = 0.0  # those steps times TPOT: TTFT of a chunked prompt before any queueing
    compute_dtype: str = "bf16"  # the format whose peak bounds prefill and decode
    compute_note: str = ""  # why it is not the weights' format


def _tpot_fn(m, g, p_tok, o, weight_dtype, kv_dtype, n_tp, chunked_prefill, kw):
    """TPOT(B) a request sees on a replica decoding B sequences that also prefills newcomers:
    B / O prompts of ``p_tok`` tokens per step, either fused into the step (chunked prefill:
    the prompt tokens ride on the decode step's weight read) or run as separate prefills that
    stall every decode (their own roofline each, added)."""
    ctx = p_tok + o // 2
    if chunked_prefill:
        def tpot(b: float) -> float:
            return decode_step(m, g, b, ctx, weight_dtype, kv_dtype, n_tp, prefill_tokens=b * p_tok / o, prompt_tokens=p_tok, **kw).time_s
    else:
        t_p = prefill_time_s(m, g, p_tok, weight_dtype, n_tp, **kw)

        def tpot(b: float) -> float:
            return decode_step(m, g, b, ctx, weight_dtype, kv_dtype, n_tp, **kw).time_s + b * t_p / o
    return tpot


def _littles_law_batch(tpot, lam: float, o: int, hi: float) -> float:
    """The batch B in (0, hi] with ``B = lam * o * tpot(B)`` (Little's law with the server's own
    TPOT), by bisection; ``math.inf`` when even ``hi`` sequences cannot keep up."""
    f = lambda b: lam * o * tpot(b) - b  # noqa: E731  > 0: more requests arrive than the batch serves
    if f(hi) > 0:
        return math.inf
    lo = 0.0
    for _ in range(100):  # to 1e-9 of the batch (about 35 halvings from hi), not to the last bit
        if hi - lo <= 1e-9 * hi:
            break
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return hi


def steady_batch(
    model,
    gpu="H200-SXM",
    arrival_rate_per_s: float = 10.0,
    prompt_tokens: int = 1024,
    output_tokens: int = 256,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int = 1,
    chunked_prefill: bool = True,
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    compute_dtype: Optional[str] = None,
) -> float:
    """The batch one replica runs at ``arrival_rate_per_s``: the fixed point of Little's law ``B = lambda * O * TPOT(B)``.

    TPOT itself grows with B (a larger batch takes longer per step, so each request stays longer,
    so the batch grows); the fixed point is found by bisection between 0 and the batch that fits in
    memory.

    Explained in :ref:`serving` > How many requests: Little's law, throughput and cost.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    arrival_rate_per_s : float, optional
        Requests per second [1/s], >= 1e-9.
    prompt_tokens : int, optional
        Tokens of each prompt [tokens], >= 1.
    output_tokens : int, optional
        Tokens generated per request [tokens], >= 1.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    chunked_prefill : bool, optional
        Prompts ride in the decode steps (True) or run as separate prefills that stall the batch.
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's datasheet figure.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's figure for ``compute_dtype``.
    compute_dtype : str or None, optional
        The format whose catalog peak bounds the arithmetic; None: the weights' where the GPU has
        a peak for it, else the GPU's 16-bit format (:func:`compute_dtype_for`: fp16 on a T4).

    Returns
    -------
    float
        Mean batch [sequences].

    Raises
    ------
    ValueError
        If an input is out of range, or no batch that fits in memory keeps up with the rate.

    Examples
    --------
    >>> b = steady_batch("Llama-3-8B", "H200-SXM", 20, 1024, 256)
    >>> round(b, 2), round(littles_law_concurrency(20, 256 * decode_step("Llama-3-8B", "H200-SXM", b, 1152,
    ...     prefill_tokens=b * 1024 / 256, prompt_tokens=1024).time_s), 2)
    (19.1, 19.1)
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    lam = _rate("arrival_rate_per_s", arrival_rate_per_s)
    p_tok = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    o = _check.integer("output_tokens", output_tokens, minimum=1, maximum=MAX_COUNT)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    if not isinstance(chunked_prefill, bool):
        raise ValueError(f"chunked_prefill must be True or False, got {chunked_prefill!r}")
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s, compute_dtype=compute_dtype)
    b_mem = memory_budget(m, g, p_tok + o, 1, weight_dtype, kv_dtype, n_tp).max_concurrent_seqs
    if b_mem < 1:
        raise ValueError(f"model {m.name} leaves no room for one {p_tok + o}-token sequence on {n_tp} x {g.name}")
    b = _littles_law_batch(_tpot_fn(m, g, p_tok, o, weight_dtype, kv_dtype, n_tp, chunked_prefill, kw), lam, o, float(b_mem))
    if not math.isfinite(b):
        raise ValueError(f"arrival_rate_per_s={arrival_rate_per_s!r} is more than one replica can serve with its {b_mem} sequences of memory: "
                         "lower it or add replicas (plan_capacity)")
    return b


def plan_capacity(
    model,
    gpu="H200-SXM",
    arrival_rate_per_s: float = 10.0,
    prompt_tokens: int = 1024,
    output_tokens: int = 256,
    tpot_target_s: float = 0.05,
    gpu_hour_price: float = 3.0,
    tp: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    chunked_prefill: bool = True,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    compute_dtype: Optional[str] = None,
) -> CapacityPlan:
    """Replicas of ``tp`` GPUs needed to serve ``arrival_rate_per_s`` requests within a TPOT target, and the cost.

    A replica decoding ``B`` sequences must also prefill the requests that replace finished ones:
    ``B / output_tokens`` prompts per step. With ``chunked_prefill`` (the default, as in
    Sarathi-Serve and vLLM) their tokens ride in the decode step's matmuls, which read the weights
    once for both: ``TPOT(B)`` is one fused step. Without it each prefill runs alone and stalls the
    batch: ``TPOT(B) = t(B) + B t_p / O``. The largest ``B`` that fits in memory and meets the
    target sets a replica's capacity, ``B / (output_tokens * TPOT(B))`` requests/s; the replica
    count covers the rate with each replica loaded to at most ``max_utilization`` of that capacity
    (headroom, so that requests do not queue without bound); the batch each replica then runs is
    the fixed point of Little's law (:func:`steady_batch`).

    Approximations: Little's law counts a request in the batch for ``output_tokens`` steps; the
    memory check gives every sequence ``P + O`` tokens of cache (a paged cache holds ``P + O/2`` on
    average). ``ttft_s`` is the prefill alone, with no queueing; under chunked prefill
    ``ttft_chunked_s`` spreads the prompt over ``prefill_steps`` fused steps (still no queueing).

    Explained in :ref:`serving` > How many requests: Little's law, throughput and cost.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    arrival_rate_per_s : float, optional
        Requests per second [1/s], >= 1e-9.
    prompt_tokens : int, optional
        Tokens of each prompt [tokens], >= 1.
    output_tokens : int, optional
        Tokens generated per request [tokens], >= 1.
    tpot_target_s : float, optional
        Largest acceptable time per output token [s], > 0.
    gpu_hour_price : float, optional
        Price of one GPU for an hour [currency], >= 0.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...).
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's datasheet figure.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's figure for ``compute_dtype``.
    chunked_prefill : bool, optional
        Prompts ride in the decode steps (True) or run as separate prefills.
    max_utilization : float, optional
        Highest load per replica, a fraction of its capacity [-], in [0.01, 1].
    compute_dtype : str or None, optional
        The format whose catalog peak bounds the arithmetic; None: the weights' where the GPU has
        a peak for it, else the GPU's 16-bit format (:func:`compute_dtype_for`: fp16 on a T4).

    Returns
    -------
    CapacityPlan
        Feasibility (and why not), replicas and GPUs, the batches [sequences], TPOT, TTFT and
        end-to-end latency [s], utilization [-], output tokens per second [1/s] and the cost per
        million tokens [currency].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> p = plan_capacity("Llama-3-8B", "H200-SXM", 20, 1024, 256, 0.03, 3.0)
    >>> p.gpus, round(p.batch, 1), round(p.cost_per_million_output_tokens, 3)
    (1, 19.1, 0.163)
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    lam = _rate("arrival_rate_per_s", arrival_rate_per_s)
    p_tok = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    o = _check.integer("output_tokens", output_tokens, minimum=1, maximum=MAX_COUNT)
    target = _quantity("tpot_target_s", tpot_target_s, zero=False)
    price = _quantity("gpu_hour_price", gpu_hour_price)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    if not isinstance(chunked_prefill, bool):
        raise ValueError(f"chunked_prefill must be True or False, got {chunked_prefill!r}")
    u_max = _quantity("max_utilization", max_utilization, zero=False)
    if not 0.01 <= u_max <= 1:
        raise ValueError(f"max_utilization must be in [0.01, 1] (a fraction of a replica's capacity), got {max_utilization!r}")
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s, compute_dtype=compute_dtype)
    budget = memory_budget(m, g, p_tok + o, 1, weight_dtype, kv_dtype, n_tp)
    b_mem = budget.max_concurrent_seqs
    t_p = prefill_time_s(m, g, p_tok, weight_dtype, n_tp, **kw)
    tpot = _tpot_fn(m, g, p_tok, o, weight_dtype, kv_dtype, n_tp, chunked_prefill, kw)
    _, _, c_key, c_note = _rates(g, weight_dtype, compute_dtype, hbm_bytes_per_s, peak_flop_per_s)

    def infeasible(reason: str, b_lat: float = 0.0) -> CapacityPlan:
        # no plan: every rate, time and cost of it is 0 (never NaN), and ``feasible`` says why
        return CapacityPlan(False, reason, 0, 0, b_mem, b_lat, 0.0, 0.0, t_p, 0.0, 0.0, 0.0, 0.0, 0.0, u_max, 0, 0.0, c_key, c_note)

    if b_mem < 1:
        return infeasible(
            f"{m.name} in {weight_dtype} does not leave room for one {p_tok + o}-token sequence on {n_tp} x {g.name}: raise tp or use a smaller dtype"
        )
    if tpot(1.0) > target:
        return infeasible(
            f"even one sequence takes {tpot(1.0) * 1e3:.3g} ms per token, above the {target * 1e3:.3g} ms target: raise tp or use a smaller dtype"
        )
    # Largest batch (continuous: a mean occupancy) within memory and the target: TPOT grows with B.
    lo, hi = 1.0, float(b_mem)
    if tpot(hi) <= target:
        b_lat = hi
    else:
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if tpot(mid) <= target else (lo, mid)
        b_lat = lo
    mu = b_lat / (o * tpot(b_lat))  # requests/s one replica can serve
    replicas = max(1, math.ceil(lam / (mu * u_max) - 1e-12))
    if replicas > MAX_COUNT:
        raise ValueError(f"arrival_rate_per_s={arrival_rate_per_s!r} needs more than {MAX_COUNT} replicas")
    lam_r = lam / replicas
    b_ach = _littles_law_batch(tpot, lam_r, o, b_lat)  # <= b_lat: the replicas cover the rate
    if not math.isfinite(b_ach):
        b_ach = b_lat
    t_ach = tpot(b_ach)
    gpus = replicas * n_tp
    out_tps = lam * o
    if chunked_prefill:
        steps = max(1, math.ceil(p_tok / (b_ach * p_tok / o) - 1e-9))
        if steps > MAX_COUNT:
            raise ValueError(f"arrival_rate_per_s={arrival_rate_per_s!r} is so low that a prompt would wait {steps} steps for its chunks")
        ttft_chunked = steps * t_ach
    else:
        steps, ttft_chunked = 1, t_p
    return CapacityPlan(
        feasible=True, reason="", replicas=replicas, gpus=gpus, max_batch_memory=b_mem, max_batch_latency=b_lat, batch=b_ach,
        tpot_s=t_ach, ttft_s=t_p, e2e_s=e2e_latency_s(t_p, t_ach, o), utilization=lam / (replicas * mu),
        output_tokens_per_s=out_tps,
        cost_per_million_output_tokens=cost_per_million_tokens(price, gpus, out_tps),
        cost_per_million_tokens=cost_per_million_tokens(price, gpus, lam * (p_tok + o)),
        max_utilization=u_max, prefill_steps=steps, ttft_chunked_s=ttft_chunked, compute_dtype=c_key, compute_note=c_note,
    )


# --------------------------------------------------------------------------------------------
# A paged KV cache (vLLM's PagedAttention)
# --------------------------------------------------------------------------------------------


DEFAULT_BLOCK_TOKENS = 16  # vLLM's default --block-size


def paged_kv_blocks(context_tokens, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> int:
    """Blocks a paged KV cache gives sequences of ``context_tokens``, ``ceil(context_tokens / block_tokens)`` each.

    Explained in :ref:`serving` > 3. The KV cache, measured by the allocator.

    Parameters
    ----------
    context_tokens : int or list of int
        Tokens of one sequence, or of each sequence [tokens], >= 0 (at most 1,000,000 sequences).
    block_tokens : int, optional
        Tokens per block [tokens], >= 1 (vLLM's default ``--block-size`` 16).

    Returns
    -------
    int
        Blocks, summed over the sequences [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> paged_kv_blocks(1000, 16), paged_kv_blocks(1024, 16), paged_kv_blocks(0, 16), paged_kv_blocks([1000, 24], 16)
    (63, 64, 0, 65)
    """
    k = _check.integer("block_tokens", block_tokens, minimum=1, maximum=MAX_COUNT)
    if isinstance(context_tokens, (list, tuple)):
        if len(context_tokens) > 10**6:
            raise ValueError(f"context_tokens must list at most 1,000,000 sequences, got {len(context_tokens)}")
        lengths = [_check.integer(f"context_tokens[{i}]", c, minimum=0, maximum=MAX_COUNT) for i, c in enumerate(context_tokens)]
    else:
        lengths = [_check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)]
    return sum(-(-c // k) for c in lengths)


def paged_kv_cache_bytes(bytes_per_token: float, context_tokens, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> float:
    """Bytes a paged KV cache holds for sequences of ``context_tokens``: whole blocks of ``block_tokens`` each.

    Each sequence wastes less than one block (the vLLM paper's bound on internal fragmentation).

    Explained in :ref:`serving` > 3. The KV cache, measured by the allocator.

    Parameters
    ----------
    bytes_per_token : float
        KV cache of one token [B], > 0.
    context_tokens : int or list of int
        Tokens of one sequence, or of each sequence [tokens], >= 0 (at most 1,000,000 sequences).
    block_tokens : int, optional
        Tokens per block [tokens], >= 1.

    Returns
    -------
    float
        Bytes of the blocks the sequences hold [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> paged_kv_cache_bytes(131072, [1000, 24], 16) / 131072  # 63 + 2 blocks of 16 tokens
    1040.0
    """
    b = _quantity("bytes_per_token", bytes_per_token, zero=False)
    k = _check.integer("block_tokens", block_tokens, minimum=1, maximum=MAX_COUNT)
    return float(paged_kv_blocks(context_tokens, k) * k * b)


# --------------------------------------------------------------------------------------------
# Speculative decoding and multi-token prediction (Leviathan et al. 2023, Chen et al. 2023)
# --------------------------------------------------------------------------------------------

MAX_DRAFT_TOKENS = 64  # longer drafts than this are never worth it at any acceptance rate below 1


def _acceptance(value) -> float:
    return _check.fraction("acceptance_rate", value)


def speculative_expected_tokens(acceptance_rate: float, draft_tokens: int) -> float:
    """Expected tokens one verification step of the target produces, ``(1 - a^(k+1)) / (1 - a)``.

    The draft proposes ``k`` tokens; each is accepted with probability ``a`` (independently, the
    papers' simplifying assumption) until the first rejection; the target's own pass adds one
    token (the correction at the first rejection, or a bonus token when all ``k`` pass). At
    ``a = 1`` it is ``k + 1``; at ``a = 0`` it is 1 (plain decoding).

    Explained in :ref:`serving` > Speculative decoding and multi-token prediction.

    Parameters
    ----------
    acceptance_rate : float
        Probability that the target accepts a drafted token [-], in [0, 1].
    draft_tokens : int
        Tokens drafted per step, ``k`` (Leviathan et al.'s gamma) [tokens], 0 to 64.

    Returns
    -------
    float
        Expected tokens per verification step [tokens].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    Leviathan et al. 2023, Eq. (1); DeepSeek-V3's one extra MTP token accepted 85% of the time:

    >>> round(speculative_expected_tokens(0.8, 4), 4), round(speculative_expected_tokens(0.85, 1), 4)
    (3.3616, 1.85)
    """
    a = _acceptance(acceptance_rate)
    k = _check.integer("draft_tokens", draft_tokens, minimum=0, maximum=MAX_DRAFT_TOKENS)
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def speculative_speedup(acceptance_rate: float, draft_tokens: int, draft_cost_ratio: float, verify_cost_ratio: float = 1.0) -> float:
    """Speed-up of speculative decoding over plain decoding, ``E[tokens] / (k c + v)``.

    One step costs ``k`` draft steps (each ``c`` times a target decode step) and one target pass
    over ``k + 1`` tokens (``v`` times a target decode step) and yields
    :func:`speculative_expected_tokens` tokens. With ``v = 1`` (verifying ``k + 1`` tokens costs
    what one decode step costs: the step is memory-bound and reads the weights once either way)
    this is Leviathan et al.'s Theorem 3.8, ``(1 - a^(k+1)) / ((1 - a)(k c + 1))``. A measured ``v``
    above 1 (the extra tokens' FLOP and attention) lowers it. ``k = 0`` is plain decoding itself: no
    draft and no verification pass over extra tokens, so its speed-up is exactly 1 whatever ``v``
    (``v`` prices the wider pass of ``k >= 1``).

    Explained in :ref:`serving` > Speculative decoding and multi-token prediction.

    Parameters
    ----------
    acceptance_rate : float
        Probability that the target accepts a drafted token [-], in [0, 1].
    draft_tokens : int
        Tokens drafted per step, ``k`` [tokens], 0 to 64.
    draft_cost_ratio : float
        Time of one draft step over one target decode step, ``c`` [-], >= 0.
    verify_cost_ratio : float, optional
        Time of the target's pass over ``k + 1`` tokens over one target decode step, ``v`` [-], > 0
        (not used at ``k = 0``, which is plain decoding).

    Returns
    -------
    float
        Tokens per unit time with speculation over tokens per unit time without [-]; 1 at ``k = 0``.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    With one drafted token it is Leviathan et al.'s Corollary 3.9, ``(1 + a) / (1 + c)``:

    >>> round(speculative_speedup(0.8, 1, 0.05), 4), round((1 + 0.8) / (1 + 0.05), 4)
    (1.7143, 1.7143)
    >>> speculative_speedup(0.05, 0, 0.05, 3.0)  # k = 0: plain decoding, whatever v
    1.0
    """
    e = speculative_expected_tokens(acceptance_rate, draft_tokens)
    c = _quantity("draft_cost_ratio", draft_cost_ratio)
    v = _quantity("verify_cost_ratio", verify_cost_ratio, zero=False)
    if draft_tokens == 0:  # plain decoding: one ordinary decode step per token, the baseline itself
        return 1.0
    return _check.finite_result("speed-up", e / (draft_tokens * c + v), acceptance_rate=acceptance_rate, draft_tokens=draft_tokens,
                                draft_cost_ratio=draft_cost_ratio, verify_cost_ratio=verify_cost_ratio)


def speculative_best_draft_tokens(acceptance_rate: float, draft_cost_ratio: float, verify_cost_ratio: float = 1.0,
                                  max_draft_tokens: int = 16) -> tuple:
    """The draft length ``k`` in ``0..max_draft_tokens`` with the largest :func:`speculative_speedup`, and that speed-up.

    ``k = 0`` (no speculation: plain decoding, speed-up exactly 1) wins when the draft is too slow,
    too often wrong or its verification too costly: Leviathan et al.'s Corollary 3.9 says some ``k``
    helps whenever ``a > c`` (at ``v = 1``); with ``v > 1`` it takes more. Ties go to the shorter draft.

    Explained in :ref:`serving` > Speculative decoding and multi-token prediction.

    Parameters
    ----------
    acceptance_rate : float
        Probability that the target accepts a drafted token [-], in [0, 1].
    draft_cost_ratio : float
        Time of one draft step over one target decode step, ``c`` [-], >= 0.
    verify_cost_ratio : float, optional
        Time of the target's verification pass over one decode step, ``v`` [-], > 0 (the same for every ``k``).
    max_draft_tokens : int, optional
        Longest draft considered [tokens], 1 to 64.

    Returns
    -------
    draft_tokens : int
        The best ``k`` [tokens].
    speedup : float
        Its speed-up [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> k, s = speculative_best_draft_tokens(0.8, 0.05)
    >>> k, round(s, 2)
    (8, 3.09)
    >>> speculative_best_draft_tokens(0.05, 0.05, 1.05)  # nothing beats plain decoding
    (0, 1.0)
    """
    _acceptance(acceptance_rate)
    _quantity("draft_cost_ratio", draft_cost_ratio)
    _quantity("verify_cost_ratio", verify_cost_ratio, zero=False)
    kmax = _check.integer("max_draft_tokens", max_draft_tokens, minimum=1, maximum=MAX_DRAFT_TOKENS)
    best = (0, speculative_speedup(acceptance_rate, 0, draft_cost_ratio, verify_cost_ratio))
    for k in range(1, kmax + 1):
        s = speculative_speedup(acceptance_rate, k, draft_cost_ratio, verify_cost_ratio)
        if s > best[1] * (1 + 1e-12):
            best = (k, s)
    return best


def speculative_verify_time_s(model, gpu="H200-SXM", batch: int = 1, context_tokens: int = 1024, draft_tokens: int = 4,
                              weight_dtype: str = "bf16", kv_dtype: str = "bf16", hbm_bytes_per_s: Optional[float] = None,
                              peak_flop_per_s: Optional[float] = None) -> float:
    """Lower bound on the target's verification pass: ``batch`` sequences, ``draft_tokens + 1`` new tokens each, one GPU [s].

    The weight matmuls see ``batch * (k + 1)`` tokens but read the weights once
    (:func:`decode_step`'s ``linear_s`` at that many tokens, output head included for every token:
    verification needs all their logits); attention reads each sequence's cache once for its
    ``k + 1`` queries (the bytes of a ``batch``-sequence step plus the new keys and values, the
    FLOP ``k + 1`` times). Over :func:`decode_step`'s time at ``k = 0`` it is the verification
    cost ratio ``v`` of :func:`speculative_speedup`: near 1 while the step stays memory-bound.

    Explained in :ref:`serving` > Speculative decoding and multi-token prediction.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    batch : int, optional
        Sequences verified together [-], >= 1.
    context_tokens : int, optional
        Tokens each sequence has cached [tokens], >= 0.
    draft_tokens : int, optional
        Drafted tokens per sequence, ``k`` [tokens], 0 to 64.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's.

    Returns
    -------
    float
        Time of the pass [s].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    Llama-3-8B on an H200, one sequence: checking 5 tokens costs what producing one does:

    >>> t1 = speculative_verify_time_s("Llama-3-8B", "H200-SXM", 1, 1024, 0)
    >>> round(speculative_verify_time_s("Llama-3-8B", "H200-SXM", 1, 1024, 4) / t1, 3)
    1.0
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    b = _check.integer("batch", batch, minimum=1, maximum=MAX_COUNT)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    k = _check.integer("draft_tokens", draft_tokens, minimum=0, maximum=MAX_DRAFT_TOKENS)
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    big = decode_step(m, g, b * (k + 1), ctx, weight_dtype, kv_dtype, **kw)
    one = decode_step(m, g, b, ctx, weight_dtype, kv_dtype, **kw)
    bw, peak, _, _ = _rates(g, weight_dtype, None, hbm_bytes_per_s, peak_flop_per_s)
    attn_flop = one.flop - b * 2.0 * m.flop_params
    kv_new = b * k * m.kv_bytes_per_token(_dtype_bytes("kv_dtype", kv_dtype))
    attention = max((one.kv_bytes + kv_new) / bw, (k + 1) * attn_flop / peak)
    return _check.finite_result("verification time", big.linear_s + attention, batch=batch, draft_tokens=draft_tokens)


# --------------------------------------------------------------------------------------------
# Utilization (MBU, MFU), percentiles, SLOs and goodput
# --------------------------------------------------------------------------------------------


def model_bandwidth_utilization(bytes_per_step: float, step_s: float, hbm_bytes_per_s: float) -> float:
    """MBU: the bandwidth a decode step achieved over the peak, ``bytes_per_step / step_s / hbm_bytes_per_s``.

    ``bytes_per_step`` is what the step must read (weights plus the batch's KV cache), so MBU near 1
    means the step runs at the memory roof; Databricks' definition of MBU. Its twin for compute is
    :func:`model_flops_utilization`.

    Explained in :ref:`serving` > MBU and MFU: how close to which roof.

    Parameters
    ----------
    bytes_per_step : float
        Bytes the step must read [B], >= 0.
    step_s : float
        Measured time of the step (TPOT) [s], > 0.
    hbm_bytes_per_s : float
        Peak memory bandwidth [B/s], > 0.

    Returns
    -------
    float
        MBU [-] (above 1 only if the bytes are overcounted or the peak undercounted).

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    Databricks' example: a 7B-parameter model in 16 bits (14 GB) at 14 ms per token on a GPU of
    2 TB/s moves 1 TB/s, an MBU of 50%:

    >>> model_bandwidth_utilization(14e9, 14e-3, 2e12)
    0.5
    """
    b = _quantity("bytes_per_step", bytes_per_step)
    t = _quantity("step_s", step_s, zero=False)
    bw = _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    return _check.finite_result("MBU", b / t / bw, bytes_per_step=bytes_per_step, step_s=step_s, hbm_bytes_per_s=hbm_bytes_per_s)


def model_flops_utilization(flop_per_step: float, step_s: float, peak_flop_per_s: float) -> float:
    """MFU: the FLOP/s a step achieved over the dense peak, ``flop_per_step / step_s / peak_flop_per_s``.

    Explained in :ref:`serving` > MBU and MFU: how close to which roof.

    Parameters
    ----------
    flop_per_step : float
        FLOP the step must do [FLOP], >= 0.
    step_s : float
        Measured time of the step [s], > 0.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.

    Returns
    -------
    float
        MFU [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> model_flops_utilization(2 * 8e9, 3e-3, 989.4e12) < 0.01  # Llama-3-8B, batch 1: tensor cores idle
    True
    """
    f = _quantity("flop_per_step", flop_per_step)
    t = _quantity("step_s", step_s, zero=False)
    p = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    return _check.finite_result("MFU", f / t / p, flop_per_step=flop_per_step, step_s=step_s, peak_flop_per_s=peak_flop_per_s)


def percentile(values, q: float) -> float:
    """The ``q``-th percentile of ``values``, linearly interpolated between order statistics.

    The same rule as ``numpy.percentile``'s default (``method="linear"``): the sorted values are
    placed at ranks ``0..n-1`` and the percentile sits at rank ``q / 100 * (n - 1)``. Serving SLOs
    are written on percentiles (P50, P90, P99 of TTFT and TPOT), not on means: a mean hides the
    slow tail that users notice.

    Explained in :ref:`serving` > Percentiles, SLOs and goodput.

    Parameters
    ----------
    values : sequence of float
        Samples (latencies [s], or anything) [-], 1 to 2**20 finite numbers.
    q : float
        Percentile [-], in [0, 100].

    Returns
    -------
    float
        The percentile, in the samples' unit [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 90), percentile([5.0], 99)
    (2.5, 3.7, 5.0)
    """
    xs = sorted(_check.numbers_list("values", values))
    p = _check.in_range("q", q, 0.0, 100.0)
    r = p / 100.0 * (len(xs) - 1)
    lo = int(math.floor(r))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (r - lo)


def slo_attainment(ttft_s, tpot_s, ttft_slo_s: float, tpot_slo_s: float) -> float:
    """Fraction of requests that meet both their TTFT and their TPOT objective (DistServe's SLO attainment).

    Explained in :ref:`serving` > Percentiles, SLOs and goodput.

    Parameters
    ----------
    ttft_s : sequence of float
        Time to first token of each request [s], >= 0.
    tpot_s : sequence of float
        Mean time per output token of each request, in the same order [s], >= 0.
    ttft_slo_s : float
        TTFT objective [s], > 0.
    tpot_slo_s : float
        TPOT objective [s], > 0.

    Returns
    -------
    float
        Requests with ``ttft <= ttft_slo_s`` and ``tpot <= tpot_slo_s``, over all requests [-].

    Raises
    ------
    ValueError
        If an input is out of range, not a number, or the two lists differ in length.

    Examples
    --------
    >>> slo_attainment([0.1, 0.3, 0.2, 0.1], [0.02, 0.02, 0.06, 0.03], 0.25, 0.05)
    0.5
    """
    a = _check.numbers_list("ttft_s", ttft_s, check=_check.non_negative)
    b = _check.numbers_list("tpot_s", tpot_s, check=_check.non_negative)
    if len(a) != len(b):
        raise ValueError(f"tpot_s must have one value per request of ttft_s ({len(a)}), got {len(b)}")
    t1 = _quantity("ttft_slo_s", ttft_slo_s, zero=False)
    t2 = _quantity("tpot_slo_s", tpot_slo_s, zero=False)
    return sum(1 for x, y in zip(a, b) if x <= t1 and y <= t2) / len(a)


def goodput_rate_per_s(rates_per_s, attainments, target: float = 0.9) -> float:
    """DistServe's goodput: the highest request rate whose SLO attainment is at least ``target``.

    ``attainments[i]`` is the fraction of requests meeting both SLOs at ``rates_per_s[i]``
    (:func:`slo_attainment` of a run at that rate). Between two sampled rates whose attainments
    straddle the target the rate is interpolated linearly; 0 when even the lowest rate misses it.
    Goodput, not throughput, is what a deployment should be sized by: requests served too slowly
    count as lost.

    Explained in :ref:`serving` > Percentiles, SLOs and goodput.

    Parameters
    ----------
    rates_per_s : sequence of float
        Request rates, increasing [1/s], > 0.
    attainments : sequence of float
        SLO attainment at each rate [-], in [0, 1].
    target : float, optional
        Attainment goal [-], in (0, 1] (DistServe uses 90%).

    Returns
    -------
    float
        Goodput [1/s].

    Raises
    ------
    ValueError
        If an input is out of range, not a number, the lists differ in length or the rates do not increase.

    Examples
    --------
    >>> round(goodput_rate_per_s([1, 2, 4, 8], [1.0, 0.98, 0.86, 0.3], 0.9), 2)  # 2 + 2 x 0.08 / 0.12
    3.33
    """
    r = _check.numbers_list("rates_per_s", rates_per_s, check=_check.positive)
    a = _check.numbers_list("attainments", attainments, check=_check.fraction)
    if len(r) != len(a):
        raise ValueError(f"attainments must have one value per rate of rates_per_s ({len(r)}), got {len(a)}")
    if any(y <= x for x, y in zip(r, r[1:])):
        raise ValueError(f"rates_per_s must increase, got {list(rates_per_s)!r}")
    goal = _check.fraction("target", target, open_low=True)
    if a[0] < goal:
        return 0.0
    for i in range(1, len(r)):
        if a[i] < goal:
            return r[i - 1] + (r[i] - r[i - 1]) * (a[i - 1] - goal) / (a[i - 1] - a[i])
    return r[-1]


# --------------------------------------------------------------------------------------------
# The latency-throughput frontier
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrontierPoint:
    """One batch size on the latency-throughput frontier (:func:`decode_frontier`).

    Attributes
    ----------
    batch : int
        Sequences decoded together [-].
    step_s : float
        The decode step (TPOT) [s].
    user_tokens_per_s : float
        Tokens per second each user sees, ``1 / step_s`` [1/s].
    total_tokens_per_s : float
        Tokens per second of the GPU(s), ``batch / step_s`` [1/s].
    mbu : float
        Bytes the step must read over the time, over the bandwidth [-].
    mfu : float
        FLOP of the step over the time, over the peak [-].
    on_frontier : bool
        False when another batch of the list gives at least as many tokens/s per user and in total,
        and more of one of them (Pareto-dominated) [-].
    """

    batch: int
    step_s: float
    user_tokens_per_s: float
    total_tokens_per_s: float
    mbu: float
    mfu: float
    on_frontier: bool = True


def decode_frontier(model, gpu="H200-SXM", context_tokens: int = 1024, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
                    weight_dtype: str = "bf16", kv_dtype: str = "bf16", tp: int = 1,
                    hbm_bytes_per_s: Optional[float] = None, peak_flop_per_s: Optional[float] = None) -> list:
    """Per-user against total tokens/s for each batch: the latency-throughput trade-off of decode.

    Each point is :func:`decode_step` at that batch; batches that do not fit in memory
    (:func:`memory_budget`) are left out. While the weights dominate the step's bytes a larger batch
    buys total throughput for a small per-user cost (the weights are read once either way; each
    sequence adds its KV reads). Once the step's time grows in proportion to the batch (the linear
    part compute-bound and the KV reads proportional to the batch) the total stops growing, and a
    larger batch only lowers the per-user rate: such points are flagged ``on_frontier=False``
    (Pareto-dominated, with a relative tolerance of 1e-9 on ties). A serving engine picks a point of
    the frontier by its TPOT objective.

    Explained in :ref:`serving` > The latency-throughput frontier.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    context_tokens : int, optional
        Tokens each sequence has cached [tokens], >= 1.
    batches : sequence of int, optional
        Batches to evaluate [-], each 1 to 2**20, at most 64 of them.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.
    tp : int, optional
        Tensor-parallel GPUs per replica [-], 1 to 1024.
    hbm_bytes_per_s : float or None, optional
        Memory bandwidth [B/s], > 0; None: the catalog's.
    peak_flop_per_s : float or None, optional
        Dense peak [FLOP/s], > 0; None: the catalog's.

    Returns
    -------
    list of FrontierPoint
        One per batch that fits, in the order given.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> f = decode_frontier("Llama-3-8B", "H200-SXM", 1024, (1, 64))
    >>> [round(p.user_tokens_per_s) for p in f], [round(p.total_tokens_per_s) for p in f]
    ([317, 203], [317, 13017])
    >>> [(p.batch, p.on_frontier) for p in decode_frontier("Llama-3-8B", "H200-SXM", 1024, (256, 512))]
    [(256, True), (512, False)]
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    ctx = _check.integer("context_tokens", context_tokens, minimum=1, maximum=MAX_COUNT)
    bs = _check.integers_list("batches", batches, minimum=1, maximum=2**20, max_len=64)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    b_mem = memory_budget(m, g, ctx, 1, weight_dtype, kv_dtype, n_tp).max_concurrent_seqs
    out = []
    for b in bs:
        if b > b_mem:
            continue
        s = decode_step(m, g, b, ctx, weight_dtype, kv_dtype, n_tp, hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
        bw, peak, _, _ = _rates(g, weight_dtype, None, hbm_bytes_per_s, peak_flop_per_s)
        out.append(FrontierPoint(b, s.time_s, 1.0 / s.time_s, b / s.time_s, (s.weight_bytes + s.kv_bytes) / s.time_s / bw,
                                 s.flop / s.time_s / peak))

    def _ge(x, y):  # x >= y up to a relative 1e-9 (equal totals past saturation are ties, not gains)
        return x >= y * (1 - 1e-9)

    def _gt(x, y):
        return x > y * (1 + 1e-9)

    def _dominated(p):
        return any(_ge(q.user_tokens_per_s, p.user_tokens_per_s) and _ge(q.total_tokens_per_s, p.total_tokens_per_s)
                   and (_gt(q.user_tokens_per_s, p.user_tokens_per_s) or _gt(q.total_tokens_per_s, p.total_tokens_per_s))
                   for q in out if q is not p)

    return [replace(p, on_frontier=not _dominated(p)) for p in out]


# --------------------------------------------------------------------------------------------
# PagedAttention's waste, prefix caching and the price of input tokens
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KVWaste:
    """KV memory held against KV memory used, contiguous against paged (:func:`kv_cache_waste`).

    Attributes
    ----------
    used_tokens : float
        Token slots holding a cached key and value, per sequence [tokens].
    contiguous_tokens, paged_tokens : float
        Slots reserved per sequence: ``max_tokens`` contiguous, whole blocks paged [tokens].
    contiguous_waste, paged_waste : float
        Reserved but unused, as a fraction of what is reserved [-].
    batch_gain : float
        Sequences a paged cache holds in the same memory over those a contiguous one holds [-].
    """

    used_tokens: float
    contiguous_tokens: float
    paged_tokens: float
    contiguous_waste: float
    paged_waste: float
    batch_gain: float

    @property
    def paged_context_tokens(self) -> int:
        """Slots a paged sequence holds on average, rounded up to a whole token [tokens]."""
        return math.ceil(self.paged_tokens)


def kv_cache_waste(max_tokens: int, mean_tokens: float, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> KVWaste:
    """Fraction of KV memory wasted when each sequence reserves ``max_tokens`` contiguously, and with blocks.

    A contiguous cache reserves the longest allowed sequence for every request (it cannot know its
    length in advance): ``1 - mean / max`` of it is wasted. A paged cache takes a block of
    ``block_tokens`` when the last one fills, so a sequence wastes less than one block, and on
    average ``(block_tokens - 1) / 2`` slots when lengths fall evenly across a block (but holds at
    least one whole block, and at most the blocks of ``max_tokens``). The batch a
    fixed KV memory holds grows by the ratio of the reservations. (The vLLM paper measured only
    20.4% to 38.2% of KV memory holding tokens in the systems before it, and under 4% waste in vLLM.)

    Explained in :ref:`serving` > PagedAttention: why blocks, and how big.

    Parameters
    ----------
    max_tokens : int
        Longest sequence a request may reach, reserved up front by a contiguous cache [tokens], >= 1.
    mean_tokens : float
        Mean tokens a sequence holds at a given moment [tokens], in [1, ``max_tokens``].
    block_tokens : int, optional
        Tokens per block of the paged cache [tokens], 1 to ``max_tokens`` (vLLM: 16).

    Returns
    -------
    KVWaste
        Slots used and reserved per sequence [tokens], waste fractions and the batch gain [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> w = kv_cache_waste(2048, 512, 16)
    >>> round(w.contiguous_waste, 3), round(w.paged_waste, 4), round(w.batch_gain, 2)
    (0.75, 0.0144, 3.94)
    """
    mx = _check.integer("max_tokens", max_tokens, minimum=1, maximum=MAX_COUNT)
    mean = _check.in_range("mean_tokens", mean_tokens, 1.0, float(mx), "tokens")
    k = _check.integer("block_tokens", block_tokens, minimum=1, maximum=mx)
    # at least one whole block per sequence; never more than the blocks of the longest sequence
    paged = min(max(mean + (k - 1) / 2.0, float(k)), float(-(-mx // k) * k))
    return KVWaste(used_tokens=mean, contiguous_tokens=float(mx), paged_tokens=paged, contiguous_waste=1.0 - mean / mx,
                   paged_waste=1.0 - mean / paged, batch_gain=mx / paged)


@dataclass(frozen=True)
class PrefixCache:
    """What sharing a cached prompt prefix saves (:func:`prefix_cache_savings`).

    Attributes
    ----------
    kv_bytes_without, kv_bytes_with : float
        KV cache of the requests' prompts, each its own copy of the prefix or one shared copy [B].
    ttft_without_s, ttft_with_s : float
        Prefill of one prompt: all of it, or only the part after the cached prefix [s].
    """

    kv_bytes_without: float
    kv_bytes_with: float
    ttft_without_s: float
    ttft_with_s: float

    @property
    def kv_saved_fraction(self) -> float:
        """Share of the prompts' KV cache that the shared prefix saves [-]."""
        return 1.0 - self.kv_bytes_with / self.kv_bytes_without

    @property
    def ttft_saved_fraction(self) -> float:
        """Share of the prefill time that the cached prefix saves [-]."""
        return 1.0 - self.ttft_with_s / self.ttft_without_s


def prefix_cache_savings(model, gpu="H200-SXM", prefix_tokens: int = 2048, prompt_tokens: int = 2560, requests: int = 64,
                         weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> PrefixCache:
    """KV bytes and TTFT saved when ``requests`` prompts share their first ``prefix_tokens`` (a system prompt).

    With prefix caching (vLLM's automatic prefix caching, SGLang's RadixAttention) the prefix's
    keys and values are computed once and its blocks shared by every request that starts with it;
    each request prefills only its own ``prompt_tokens - prefix_tokens`` tokens. The TTFT with the
    cache is :func:`prefill_time_s` of that suffix: a lower bound that leaves out the suffix's
    attention to the cached prefix.

    Explained in :ref:`serving` > Prefix caching, and why input tokens are cheaper.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    prefix_tokens : int, optional
        Tokens every prompt shares [tokens], 0 to ``prompt_tokens - 1``.
    prompt_tokens : int, optional
        Tokens of each prompt, prefix included [tokens], >= 1.
    requests : int, optional
        Requests in flight that share the prefix [-], >= 1.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.

    Returns
    -------
    PrefixCache
        KV bytes [B] and prefill times [s] without and with the shared prefix.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> p = prefix_cache_savings("Llama-3-8B", "H200-SXM", 2048, 2560, 64)
    >>> round(p.kv_saved_fraction, 3), round(p.ttft_saved_fraction, 2)
    (0.787, 0.81)
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    pre = _check.integer("prefix_tokens", prefix_tokens, minimum=0, maximum=p - 1)
    n = _check.integer("requests", requests, minimum=1, maximum=MAX_COUNT)
    per_tok = m.kv_bytes_per_token(_dtype_bytes("kv_dtype", kv_dtype))
    without = n * p * per_tok
    with_ = (pre + n * (p - pre)) * per_tok
    t0 = prefill_time_s(m, g, p, weight_dtype)
    t1 = prefill_time_s(m, g, p - pre, weight_dtype)
    return PrefixCache(without, with_, t0, t1)


def input_output_cost_ratio(model, gpu="H200-SXM", batch: int = 64, prompt_tokens: int = 1024, context_tokens: int = 1024,
                            weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> float:
    """GPU time of an output token over GPU time of an input token: why output tokens are priced higher.

    An input token costs its share of a prefill, ``prefill_time_s(prompt_tokens) / prompt_tokens``
    (compute-bound: every weight read is used for the whole prompt); an output token its share of
    a decode step, ``decode_step(batch).time_s / batch`` (memory-bound below the ridge batch: the
    weights are read for ``batch`` tokens only). Below the ridge the ratio is roughly the ridge
    batch over ``batch``.

    Explained in :ref:`serving` > Prefix caching, and why input tokens are cheaper.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A catalog model (:func:`widgets.models.llms.get_model`) or a configuration.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`) or a GPU record.
    batch : int, optional
        Sequences per decode step [-], >= 1.
    prompt_tokens : int, optional
        Tokens of a prompt [tokens], >= 1.
    context_tokens : int, optional
        Tokens each decoding sequence has cached [tokens], >= 0.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.

    Returns
    -------
    float
        Seconds per output token over seconds per input token [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(input_output_cost_ratio("Llama-3-8B", "H200-SXM", 64, 1024, 1024), 1)
    5.3
    """
    m = get_model(model, param="model")
    g = _gpu(gpu)
    b = _check.integer("batch", batch, minimum=1, maximum=MAX_COUNT)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    per_in = prefill_time_s(m, g, p, weight_dtype) / p
    per_out = decode_step(m, g, b, ctx, weight_dtype, kv_dtype).time_s / b
    return _check.finite_result("cost ratio", per_out / per_in, batch=batch, prompt_tokens=prompt_tokens)


# --------------------------------------------------------------------------------------------
# Long context at small batch: split-KV (Flash-Decoding)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitKV:
    """SM occupancy of decode attention with and without splitting the KV sequence (:func:`split_kv_attention`).

    Attributes
    ----------
    blocks_unsplit, blocks_split : int
        Thread blocks launched: one per (sequence, KV head), times ``splits`` with split-KV [-].
    splits : int
        Chunks each sequence's KV cache is cut into [-].
    busy_sms_unsplit, busy_sms_split : float
        Fraction of the SMs with work in the first wave [-].
    time_unsplit_s, time_split_s : float
        KV bytes over the bandwidth of the busy SMs [s] (the combine step left out).
    """

    blocks_unsplit: int
    blocks_split: int
    splits: int
    busy_sms_unsplit: float
    busy_sms_split: float
    time_unsplit_s: float
    time_split_s: float

    @property
    def speedup(self) -> float:
        """Unsplit time over split time [-]."""
        return self.time_unsplit_s / self.time_split_s


def split_kv_attention(batch: int, kv_heads: int, context_tokens: int, kv_bytes_per_token_per_head: float, sms: int,
                       hbm_bytes_per_s: float, chunk_tokens: int = 1024, sm_share: float = 4.0) -> SplitKV:
    """Decode attention's time with one thread block per (sequence, KV head), and with the KV cut into chunks.

    A decode attention kernel that packs each group of query heads into one block's rows and gives
    each (sequence, KV head) one thread block (the layout of this book's decoder; kernels with one
    block per query head launch ``kv_heads`` times the group size) launches ``batch * kv_heads``
    blocks: at batch 1 with 8 KV heads, 8 of an H200's 132 SMs stream the whole cache. ``sm_share``
    is an assumption, not a measurement: the chapter's H200 record implies a smaller one for the
    kernel SDPA ran (experiment "Long context at batch 1"). Flash-Decoding (split-KV) also splits each sequence's keys and values into
    ``ceil(context / chunk_tokens)`` chunks, computes a partial softmax per chunk and combines them
    (a small second step, left out here). The model: each busy SM streams at most
    ``sm_share * hbm_bytes_per_s / sms`` (an SM can pull a few times its equal share, not all of
    HBM), so the time is the KV bytes over ``min(hbm_bytes_per_s, busy_sms * that)``.

    Explained in :ref:`serving` > Long context at small batch: split-KV.

    Parameters
    ----------
    batch : int
        Sequences [-], >= 1.
    kv_heads : int
        KV heads (one block each, the query heads of a group share it) [-], >= 1.
    context_tokens : int
        Tokens cached per sequence [tokens], >= 1.
    kv_bytes_per_token_per_head : float
        Bytes of one token's key and value of one head, all layers [B], > 0.
    sms : int
        Streaming multiprocessors of the GPU [-], >= 1.
    hbm_bytes_per_s : float
        Memory bandwidth [B/s], > 0.
    chunk_tokens : int, optional
        Tokens per split [tokens], >= 1.
    sm_share : float, optional
        Bandwidth one SM can draw, in multiples of ``hbm_bytes_per_s / sms`` [-], >= 1.

    Returns
    -------
    SplitKV
        Blocks [-], busy SM fractions [-] and times [s] without and with splitting.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> s = split_kv_attention(1, 8, 65536, 2 * 128 * 2 * 80, 132, 4.8e12)
    >>> s.blocks_unsplit, s.blocks_split, round(s.speedup, 1)
    (8, 512, 4.1)
    """
    b = _check.integer("batch", batch, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("kv_heads", kv_heads, minimum=1, maximum=MAX_COUNT)
    ctx = _check.integer("context_tokens", context_tokens, minimum=1, maximum=MAX_COUNT)
    per = _quantity("kv_bytes_per_token_per_head", kv_bytes_per_token_per_head, zero=False)
    n_sm = _check.integer("sms", sms, minimum=1, maximum=MAX_COUNT)
    bw = _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    chunk = _check.integer("chunk_tokens", chunk_tokens, minimum=1, maximum=MAX_COUNT)
    share = _check.in_range("sm_share", sm_share, 1.0, float(MAX_COUNT))
    splits = -(-ctx // chunk)
    kv = float(b) * h * ctx * per

    def time_for(blocks: int) -> float:
        busy = min(blocks, n_sm)
        return _check.finite_result("attention time", kv / bw / min(1.0, busy * share / n_sm), hbm_bytes_per_s=hbm_bytes_per_s)

    b0, b1 = b * h, b * h * splits
    return SplitKV(b0, b1, splits, min(b0, n_sm) / n_sm, min(b1, n_sm) / n_sm, time_for(b0), time_for(b1))


# --------------------------------------------------------------------------------------------
# Expert parallelism and data-parallel attention (MoE/MLA serving)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoEDeployment:
    """Bytes per GPU of an MoE model served with expert parallelism (:func:`moe_decode_per_gpu`).

    Attributes
    ----------
    gpus : int
        GPUs of the deployment [-].
    expert_bytes_per_gpu, dense_bytes_per_gpu : float
        Routed-expert weights and the rest (attention, shared experts, embeddings) on each GPU [B].
    tokens_per_expert : float
        Tokens each routed expert processes per step, ``batch_per_gpu * gpus * k / E`` [tokens].
    kv_bytes_per_gpu_dp, kv_bytes_per_gpu_tp : float
        KV cache of ``batch_per_gpu`` sequences per GPU with data-parallel attention, and what tensor
        parallelism over ``attention_tp`` GPUs costs for the same sequences (MLA's latent is replicated) [B].
    """

    gpus: int
    expert_bytes_per_gpu: float
    dense_bytes_per_gpu: float
    tokens_per_expert: float
    kv_bytes_per_gpu_dp: float
    kv_bytes_per_gpu_tp: float


def moe_decode_per_gpu(model, gpus: int = 256, batch_per_gpu: int = 64, context_tokens: int = 4096, attention_tp: int = 4,
                       weight_dtype: str = "fp8", kv_dtype: str = "bf16") -> MoEDeployment:
    """Weights and KV cache per GPU, and tokens per expert, when ``gpus`` GPUs serve an MoE model with expert parallelism.

    Each GPU holds ``1 / gpus`` of the routed experts (EP) and a full copy of everything else
    (data-parallel attention: each GPU runs the attention of its own ``batch_per_gpu`` sequences).
    The experts see the tokens of every GPU, routed by an all-to-all: ``batch_per_gpu * gpus * k / E``
    tokens each, which is what turns an expert's matmul from a weight stream into real work.
    Tensor-parallel attention over ``attention_tp`` GPUs would split the heads, but MLA's latent is
    shared by all heads, so each GPU would hold the cache of all ``attention_tp * batch_per_gpu``
    sequences: ``attention_tp`` times the KV memory for the same batch. (DeepSeek-V3 decodes with
    EP320 over 320 GPUs, attention TP4 with DP80.)

    Explained in :ref:`serving` > Disaggregation, expert parallelism and data-parallel attention.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        An MoE catalog model or configuration (``n_routed_experts > 0``).
    gpus : int, optional
        GPUs of the expert-parallel group [-], 1 to ``n_routed_experts``.
    batch_per_gpu : int, optional
        Sequences each GPU's attention decodes [-], >= 1.
    context_tokens : int, optional
        Tokens cached per sequence [tokens], >= 0.
    attention_tp : int, optional
        GPUs a tensor-parallel attention would be split over, for the comparison [-], >= 1.
    weight_dtype : str, optional
        Storage format of the weights, a name of :mod:`widgets.dtypes`.
    kv_dtype : str, optional
        Storage format of the KV cache, a name of :mod:`widgets.dtypes`.

    Returns
    -------
    MoEDeployment
        Bytes per GPU [B] and tokens per expert [tokens].

    Raises
    ------
    ValueError
        If the model has no routed experts, or an input is out of range (the message names it).

    Examples
    --------
    >>> d = moe_decode_per_gpu("DeepSeek-V3", 256, 64)
    >>> d.tokens_per_expert, round(d.kv_bytes_per_gpu_tp / d.kv_bytes_per_gpu_dp)
    (512.0, 4)
    """
    m = get_model(model, param="model")
    if not m.n_routed_experts:
        raise ValueError(f"model {m.name} has no routed experts: expert parallelism needs an MoE model")
    n = _check.integer("gpus", gpus, minimum=1, maximum=m.n_routed_experts)
    b = _check.integer("batch_per_gpu", batch_per_gpu, minimum=1, maximum=MAX_COUNT)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    atp = _check.integer("attention_tp", attention_tp, minimum=1, maximum=1024)
    wb = _dtype_bytes("weight_dtype", weight_dtype)
    expert = weight_bytes(m.routed_expert_params, wb)
    dense = weight_bytes(m.params, wb) - expert
    kv1 = m.kv_bytes_per_sequence(ctx, _dtype_bytes("kv_dtype", kv_dtype))
    kv_dp = b * kv1
    kv_tp = atp * b * kv1 * _kv_share(m, atp)
    return MoEDeployment(n, expert / n, dense, b * n * m.experts_per_token / m.n_routed_experts, kv_dp, kv_tp)


__all__ = [
    "DEFAULT_ALLREDUCE_LATENCY_S", "DEFAULT_BLOCK_TOKENS", "DEFAULT_MAX_UTILIZATION",
    "DEFAULT_PREFILL_CHUNK_TOKENS", "DEFAULT_RESERVE_FRACTION", "MIN_ARRIVAL_RATE_PER_S", "CapacityPlan",
    "DecodeStep", "Latency", "MemoryBudget", "allreduce_time_s", "cost_per_million_tokens", "decode_ridge_batch",
    "compute_dtype_for", "decode_step", "decode_step_time_s", "decode_tokens_per_s", "e2e_latency_s", "latency",
    "littles_law_concurrency", "memory_budget", "paged_kv_blocks", "paged_kv_cache_bytes", "plan_capacity",
    "prefill_time_s", "steady_batch", "tpot_s",
    "FrontierPoint", "KVWaste", "MAX_DRAFT_TOKENS", "MoEDeployment", "PrefixCache", "SplitKV", "decode_frontier",
    "goodput_rate_per_s", "input_output_cost_ratio", "kv_cache_waste", "model_bandwidth_utilization", "model_flops_utilization",
    "moe_decode_per_gpu", "percentile", "prefix_cache_savings", "slo_attainment", "speculative_best_draft_tokens",
    "speculative_expected_tokens", "speculative_speedup", "speculative_verify_time_s", "split_kv_attention",
]
