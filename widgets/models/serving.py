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
from dataclasses import dataclass
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
    for _ in range(100):
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


__all__ = [
    "DEFAULT_ALLREDUCE_LATENCY_S", "DEFAULT_BLOCK_TOKENS", "DEFAULT_MAX_UTILIZATION",
    "DEFAULT_PREFILL_CHUNK_TOKENS", "DEFAULT_RESERVE_FRACTION", "MIN_ARRIVAL_RATE_PER_S", "CapacityPlan",
    "DecodeStep", "Latency", "MemoryBudget", "allreduce_time_s", "cost_per_million_tokens", "decode_ridge_batch",
    "compute_dtype_for", "decode_step", "decode_step_time_s", "decode_tokens_per_s", "e2e_latency_s", "latency",
    "littles_law_concurrency", "memory_budget", "paged_kv_blocks", "paged_kv_cache_bytes", "plan_capacity",
    "prefill_time_s", "steady_batch", "tpot_s",
]
