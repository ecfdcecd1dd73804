"""Transformer arithmetic: parameters, bytes and FLOP of a decoder-only transformer.

Pure functions of a model's configuration (standard library only): how many parameters it has,
how many bytes its weights and its KV cache take, how many FLOP a forward pass over some tokens
costs, and what a mixture of experts reads. No GPU appears here; the serving planners
(:mod:`widgets.models.serving`) put these counts on a GPU, and the catalog of real models
(:mod:`widgets.models.llms`) fills in the configurations. Every public function rejects
non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Units are in the names: ``*_bytes`` [B], ``*_flop`` [FLOP], ``*_tokens`` [tokens]. A
``bytes_per_elem`` argument is a number of bytes (2 for bf16) or a format name of
:mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...), which stands for what an element of
a tensor in that format occupies, block scales included (NVFP4: 4.5 bits).

Notes
-----
- The embedding table is not read by a decode step (only ``batch`` rows of it are gathered); the
  output head (``lm_head``) is. With tied embeddings the one matrix is read as the head.
- A mixture-of-experts layer reads only the experts its tokens were routed to: at batch 1 that is
  the "activated" parameters; at a large batch nearly every expert (``experts_touched_fraction``).
- ``prefill_flop`` counts 2 FLOP per parameter per token (one multiply and one add), before
  attention; attention is counted separately (``causal_attention_flop``).

Explained in :ref:`serving` > The KV cache, and > Two phases: prefill and decode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Optional

from .. import dtypes
from . import _check

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")
# Storage formats the serving calculators offer for weights and the KV cache (any name of
# widgets.dtypes is accepted; this is the short list a reader chooses from).
STORAGE_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
# Largest count (layers, heads, tokens, batch...) a model accepts: beyond any real model, small
# enough that every product stays exact in a float.
MAX_COUNT = 2**40
# Largest physical quantity (bytes, FLOP, B/s, FLOP/s, s, prices) a model accepts: 1e30 is beyond
# any machine, and products of a few such numbers stay far from float overflow.
MAX_QUANTITY = 1e30


def _bpe(name: str, value) -> float:
    """A bytes-per-element argument: a positive number (at most 8) or a format name of :mod:`widgets.dtypes`."""
    if isinstance(value, str):
        return dtypes.storage_bytes_per_element(value, param=name)
    v = _check.positive(name, value)
    if v > 8:
        raise ValueError(f"{name} must be a dtype name or a number in (0, 8] bytes, got {value!r}")
    return v


def _quantity(name: str, value, *, zero: bool = True) -> float:
    """A physical quantity (bytes, FLOP, rates, seconds): finite, >= 0 (> 0 unless ``zero``), at most
    ``MAX_QUANTITY``, so that products of a few of them stay finite."""
    v = _check.non_negative(name, value) if zero else _check.positive(name, value)
    if v > MAX_QUANTITY:
        raise ValueError(f"{name} must be <= {MAX_QUANTITY:g}, got {value!r}")
    return v


# --------------------------------------------------------------------------------------------
# The KV cache
# --------------------------------------------------------------------------------------------


def kv_cache_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_elem: float = 2) -> float:
    """KV cache of one token, all layers [B]: ``2 * layers * kv_heads * head_dim * bytes_per_elem``.

    A key and a value vector per KV head per layer. Multi-head attention has ``kv_heads == heads``;
    grouped-query attention fewer (8 in Llama 3); multi-query attention one.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    kv_heads : int
        Key/value heads per layer [-], >= 1.
    head_dim : int
        Elements per head [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B], in (0, 8] (2 for bf16, 1 for fp8, 0.5 for int4), or a format name of
        :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...; its block scales counted).

    Returns
    -------
    float
        Bytes one token's keys and values take [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    OPT-13B (40 layers, 40 heads of 128): the vLLM paper's "800 KB" per token.

    >>> kv_cache_bytes_per_token(40, 40, 128, 2)
    819200.0

    Llama-3-8B (32 layers, 8 KV heads of 128) in bf16: 128 KiB per token.

    >>> kv_cache_bytes_per_token(32, 8, 128) / 1024
    128.0
    """
    n = _check.integer("layers", layers, minimum=1)
    h = _check.integer("kv_heads", kv_heads, minimum=1)
    d = _check.integer("head_dim", head_dim, minimum=1)
    b = _bpe("bytes_per_elem", bytes_per_elem)
    return 2.0 * n * h * d * b


def mla_kv_cache_bytes_per_token(layers: int, kv_lora_rank: int, rope_head_dim: int, bytes_per_elem: float = 2) -> float:
    """KV cache of one token under multi-head latent attention (MLA), all layers [B].

    MLA caches one compressed latent vector of ``kv_lora_rank`` elements per layer, shared by all
    heads, plus one decoupled RoPE key of ``rope_head_dim`` elements (DeepSeek-V2, section 2.1.3):
    ``layers * (kv_lora_rank + rope_head_dim) * bytes_per_elem``.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    kv_lora_rank : int
        Elements of the latent vector, d_c [-], >= 1.
    rope_head_dim : int
        Elements of the decoupled RoPE key, d_h^R [-], >= 0.
    bytes_per_elem : float or str, optional
        Bytes per element [B], in (0, 8] (2 for bf16, 1 for fp8, 0.5 for int4), or a format name of
        :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...; its block scales counted).

    Returns
    -------
    float
        Bytes one token's latent and RoPE key take [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> mla_kv_cache_bytes_per_token(61, 512, 64, 2)  # DeepSeek-V3 in bf16
    70272.0
    """
    n = _check.integer("layers", layers, minimum=1)
    r = _check.integer("kv_lora_rank", kv_lora_rank, minimum=1)
    d = _check.integer("rope_head_dim", rope_head_dim, minimum=0)
    b = _bpe("bytes_per_elem", bytes_per_elem)
    return float(n * (r + d) * b)


def cached_tokens(context_tokens: int, sliding_window: Optional[int] = None) -> int:
    """Tokens a sequence keeps in its KV cache: all of them, or the last ``sliding_window``.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    context_tokens : int
        Tokens in the sequence [tokens], >= 0.
    sliding_window : int or None, optional
        Attention window [tokens], >= 1 (Mistral-7B: 4096); None for full attention.

    Returns
    -------
    int
        Tokens whose keys and values are cached [tokens].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> cached_tokens(32768, 4096), cached_tokens(1000, 4096), cached_tokens(1000)
    (4096, 1000, 1000)
    """
    c = _check.integer("context_tokens", context_tokens, minimum=0)
    if sliding_window is None:
        return c
    w = _check.integer("sliding_window", sliding_window, minimum=1)
    return min(c, w)


def kv_cache_bytes(bytes_per_token: float, context_tokens: int, batch: int = 1, sliding_window: Optional[int] = None) -> float:
    """KV cache of ``batch`` sequences of ``context_tokens`` each [B], the sliding window applied.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    bytes_per_token : float
        KV cache of one token [B], > 0 (:func:`kv_cache_bytes_per_token`).
    context_tokens : int
        Tokens per sequence [tokens], >= 0.
    batch : int, optional
        Sequences [-], >= 0.
    sliding_window : int or None, optional
        Attention window [tokens], >= 1; None for full attention.

    Returns
    -------
    float
        Bytes of the batch's cache [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> kv_cache_bytes(131072, 8192, 16) / 2**30  # Llama-3-8B, bf16, 16 x 8k tokens: 16 GiB
    16.0
    """
    b = _quantity("bytes_per_token", bytes_per_token, zero=False)
    n = _check.integer("batch", batch, minimum=0)
    return b * cached_tokens(context_tokens, sliding_window) * n


def kv_bytes_by_attention(
    layers: int,
    heads: int,
    head_dim: int,
    kv_heads: int,
    kv_lora_rank: int = 512,
    rope_head_dim: int = 64,
    bytes_per_elem: float = 2,
) -> dict:
    """KV cache per token of one layer stack under MHA, GQA, MQA and MLA [B], side by side.

    MHA caches ``heads`` key/value heads, GQA ``kv_heads``, MQA one; MLA a latent of ``kv_lora_rank``
    plus a RoPE key of ``rope_head_dim`` elements.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    heads : int
        Query heads per layer [-], >= 1.
    head_dim : int
        Elements per head [-], >= 1.
    kv_heads : int
        Key/value heads of the GQA variant [-], 1 to ``heads``.
    kv_lora_rank : int, optional
        Latent elements of the MLA variant [-], >= 1.
    rope_head_dim : int, optional
        RoPE key elements of the MLA variant [-], >= 0.
    bytes_per_elem : float or str, optional
        Bytes per element [B], in (0, 8] (2 for bf16, 1 for fp8, 0.5 for int4), or a format name of
        :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...; its block scales counted).

    Returns
    -------
    dict
        ``{"MHA": ..., "GQA": ..., "MQA": ..., "MLA": ...}``: bytes per token of each [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> {k: v / 1024 for k, v in kv_bytes_by_attention(61, 128, 128, 8).items()}
    {'MHA': 3904.0, 'GQA': 244.0, 'MQA': 30.5, 'MLA': 68.625}
    """
    _check.integer("layers", layers, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("heads", heads, minimum=1, maximum=MAX_COUNT)
    kv = _check.integer("kv_heads", kv_heads, minimum=1, maximum=MAX_COUNT)
    if kv > h:
        raise ValueError(f"kv_heads must be <= heads={h}, got {kv_heads!r}")
    return {
        "MHA": kv_cache_bytes_per_token(layers, heads, head_dim, bytes_per_elem),
        "GQA": kv_cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_elem),
        "MQA": kv_cache_bytes_per_token(layers, 1, head_dim, bytes_per_elem),
        "MLA": mla_kv_cache_bytes_per_token(layers, kv_lora_rank, rope_head_dim, bytes_per_elem),
    }


# --------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------


def weight_bytes(params: float, bytes_per_elem: float = 2) -> float:
    """Bytes of ``params`` weights stored at ``bytes_per_elem`` each [B].

    Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

    Parameters
    ----------
    params : float
        Parameters [-], >= 0.
    bytes_per_elem : float or str, optional
        Bytes per element [B], in (0, 8] (2 for bf16, 1 for fp8, 0.5 for int4), or a format name of
        :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...; its block scales counted).

    Returns
    -------
    float
        Bytes of the weights [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> weight_bytes(8.03e9, 2) / 1e9
    16.06
    >>> weight_bytes(8.03e9, "int4") / 1e9
    4.015
    """
    p = _quantity("params", params)
    return p * _bpe("bytes_per_elem", bytes_per_elem)


def dense_transformer_params(
    layers: int,
    hidden_size: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate_size: int,
    vocab_size: int,
    tied_embeddings: bool = False,
) -> int:
    """Parameters of a Llama-style decoder, counted from its configuration.

    Per layer the Q, K, V and output projections, a gated MLP (gate, up, down) and two RMSNorm
    weights; then a final norm, the embedding table and the output head (shared with the embedding
    when ``tied_embeddings``).

    Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    hidden_size : int
        Model dimension [-], >= 1.
    heads : int
        Query heads [-], >= 1.
    kv_heads : int
        Key/value heads [-], >= 1.
    head_dim : int
        Elements per head [-], >= 1.
    intermediate_size : int
        MLP width [-], >= 1.
    vocab_size : int
        Vocabulary [tokens], >= 1.
    tied_embeddings : bool, optional
        One matrix for the embedding and the output head.

    Returns
    -------
    int
        Parameters [-].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> dense_transformer_params(32, 4096, 32, 8, 128, 14336, 128256)  # Llama-3-8B
    8030261248
    """
    n = _check.integer("layers", layers, minimum=1)
    h = _check.integer("hidden_size", hidden_size, minimum=1)
    q = _check.integer("heads", heads, minimum=1)
    kv = _check.integer("kv_heads", kv_heads, minimum=1)
    d = _check.integer("head_dim", head_dim, minimum=1)
    f = _check.integer("intermediate_size", intermediate_size, minimum=1)
    v = _check.integer("vocab_size", vocab_size, minimum=1)
    tied = _check.flag("tied_embeddings", tied_embeddings)
    attn = h * q * d + 2 * h * kv * d + q * d * h
    mlp = 3 * h * f
    per_layer = attn + mlp + 2 * h
    emb = v * h
    return n * per_layer + h + emb + (0 if tied else emb)


def experts_touched_fraction(batch: float, experts_per_token: int, n_experts: int) -> float:
    """Expected fraction of a layer's routed experts that ``batch`` tokens touch: ``1 - (1 - k/E) ** batch``.

    Each token picks ``experts_per_token`` (k) of ``n_experts`` (E) at random. A decode step reads
    only touched experts, so a mixture-of-experts model reads its "activated" parameters at batch 1
    and nearly all of them at a large batch.

    Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

    Parameters
    ----------
    batch : float
        Tokens in the step [tokens], >= 0.
    experts_per_token : int
        Experts each token is routed to, k [-], 1 to ``n_experts``.
    n_experts : int
        Routed experts per layer, E [-], >= 1.

    Returns
    -------
    float
        Fraction of the experts touched [-], in [0, 1].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(experts_touched_fraction(1, 8, 256), 5), round(experts_touched_fraction(64, 8, 256), 3)
    (0.03125, 0.869)
    """
    b = _quantity("batch", batch)
    k = _check.integer("experts_per_token", experts_per_token, minimum=1)
    e = _check.integer("n_experts", n_experts, minimum=1)
    if k > e:
        raise ValueError(f"experts_per_token must be <= n_experts={e}, got {experts_per_token!r}")
    return 1.0 - (1.0 - k / e) ** b


# --------------------------------------------------------------------------------------------
# FLOP
# --------------------------------------------------------------------------------------------


def prefill_flop(params: float, tokens: int) -> float:
    """FLOP of a forward pass over ``tokens`` tokens before attention: 2 per parameter per token.

    Each weight is one multiply and one add per token (Kaplan et al. 2020, Table 1).

    Explained in :ref:`serving` > Two phases: prefill and decode.

    Parameters
    ----------
    params : float
        Parameters that do arithmetic [-], >= 0.
    tokens : int
        Tokens [tokens], >= 0.

    Returns
    -------
    float
        FLOP [FLOP].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> prefill_flop(8e9, 1000) / 1e12  # an 8B model, 1000-token prompt: 16 TFLOP
    16.0
    """
    p = _quantity("params", params)
    t = _check.integer("tokens", tokens, minimum=0)
    return 2.0 * p * t


def causal_attention_flop(layers: int, heads: int, qk_dim: int, v_dim: int, tokens: int) -> float:
    """FLOP of causal self-attention over ``tokens`` tokens, all layers and heads.

    Per layer and head, ``QK^T`` costs ``2 T^2 qk_dim`` and ``PV`` ``2 T^2 v_dim``; the causal mask
    halves both: ``layers * heads * T^2 * (qk_dim + v_dim)``.

    Explained in :ref:`serving` > Two phases: prefill and decode.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    heads : int
        Query heads per layer [-], >= 1.
    qk_dim : int
        Elements of a query/key head [-], >= 1.
    v_dim : int
        Elements of a value head [-], >= 1.
    tokens : int
        Tokens in the sequence [tokens], >= 0.

    Returns
    -------
    float
        FLOP [FLOP].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> causal_attention_flop(32, 32, 128, 128, 8192) / 1e12  # Llama-3-8B, 8k prompt
    17.592186044416
    """
    n = _check.integer("layers", layers, minimum=1)
    h = _check.integer("heads", heads, minimum=1)
    dq = _check.integer("qk_dim", qk_dim, minimum=1)
    dv = _check.integer("v_dim", v_dim, minimum=1)
    t = _check.integer("tokens", tokens, minimum=0)
    return float(n * h * t * t * (dq + dv))


def decode_step_flop(params: float, batch: int, attention_flop_per_seq: float = 0.0) -> float:
    """FLOP of one decode step: ``2 * params`` per sequence plus its attention FLOP.

    Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

    Parameters
    ----------
    params : float
        Parameters that do arithmetic [-], >= 0.
    batch : int
        Sequences, one new token each [-], >= 0.
    attention_flop_per_seq : float, optional
        Attention FLOP of one sequence's token [FLOP], >= 0.

    Returns
    -------
    float
        FLOP of the step [FLOP].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> decode_step_flop(8e9, 64) / 1e12
    1.024
    """
    p = _quantity("params", params)
    b = _check.integer("batch", batch, minimum=0)
    a = _quantity("attention_flop_per_seq", attention_flop_per_seq)
    return b * (2.0 * p + a)


# --------------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------------


def activation_bytes(tokens: int, hidden_size: int, intermediate_size: int, vocab_size: int, sequences: int = 1, bytes_per_elem: float = 2) -> float:
    """Peak transient activations of a forward pass over ``tokens`` tokens [B].

    Layers run one after another, so the peak is one layer's widest point, the MLP: the residual and
    its norm (``2 * hidden``), the fused gate-up output (``2 * intermediate``) and its product
    (``intermediate``) per token; plus fp32 logits for the last token of each of ``sequences``.

    Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

    Parameters
    ----------
    tokens : int
        Tokens in the forward pass [tokens], >= 0.
    hidden_size : int
        Model dimension [-], >= 1.
    intermediate_size : int
        MLP width [-], >= 1.
    vocab_size : int
        Vocabulary [tokens], >= 1.
    sequences : int, optional
        Sequences whose last token's logits are computed [-], >= 0.
    bytes_per_elem : float or str, optional
        Bytes per element [B], in (0, 8] (2 for bf16, 1 for fp8, 0.5 for int4), or a format name of
        :mod:`widgets.dtypes` (``"bf16"``, ``"fp8"``, ``"int4"``...; its block scales counted).

    Returns
    -------
    float
        Bytes at the peak [B].

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> activation_bytes(2048, 4096, 14336, 128256, 1) / 2**20  # Llama-3-8B, a 2048-token chunk
    200.4892578125
    """
    t = _check.integer("tokens", tokens, minimum=0)
    h = _check.integer("hidden_size", hidden_size, minimum=1)
    f = _check.integer("intermediate_size", intermediate_size, minimum=1)
    v = _check.integer("vocab_size", vocab_size, minimum=1)
    s = _check.integer("sequences", sequences, minimum=0)
    b = _bpe("bytes_per_elem", bytes_per_elem)
    return t * (2 * h + 3 * f) * b + s * v * 4.0


# --------------------------------------------------------------------------------------------
# A model's configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """One model's architecture, every figure with its source.

    ``params`` is the total parameter count; ``active_params`` the parameters one token uses (equal
    for a dense model; for a mixture of experts, the "activated" count). ``head_dim`` is the
    per-head dimension of keys and values (for MLA: ``d_h``, the value head and the non-RoPE part of
    the key); ``rope_head_dim`` the decoupled RoPE key of MLA. Construction checks every field and
    raises ``ValueError`` naming the first one out of range.

    Explained in :ref:`serving` > The KV cache.

    Attributes
    ----------
    name : str
        A label (the catalog's name).
    layers, hidden_size, heads, kv_heads, head_dim, intermediate_size : int
        Transformer layers, model dimension, query heads, key/value heads, elements per head and MLP
        width [-].
    vocab_size : int
        Vocabulary [tokens].
    params, active_params : float
        Total parameters and those one token uses [-].
    attention : str
        ``"mha"``, ``"gqa"``, ``"mqa"`` or ``"mla"``.
    sliding_window : int or None
        Attention window [tokens], or None.
    kv_lora_rank, rope_head_dim : int or None
        MLA's latent and decoupled RoPE key [-] (None for other attention).
    tied_embeddings : bool
        One matrix for the embedding and the output head.
    n_routed_experts, experts_per_token, moe_layers, moe_intermediate_size : int
        Mixture of experts: routed experts per layer, experts per token, layers with experts, expert
        MLP width [-] (0 for a dense model).
    sources : Mapping
        Where each figure comes from.
    """

    name: str
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    params: float
    active_params: float
    attention: str = "gqa"
    sliding_window: Optional[int] = None
    kv_lora_rank: Optional[int] = None
    rope_head_dim: Optional[int] = None
    tied_embeddings: bool = False
    n_routed_experts: int = 0
    experts_per_token: int = 0
    moe_layers: int = 0
    moe_intermediate_size: int = 0
    sources: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        for name in ("layers", "hidden_size", "heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size"):
            object.__setattr__(self, name, _check.integer(name, getattr(self, name), minimum=1, maximum=MAX_COUNT))
        _quantity("params", self.params, zero=False)
        _quantity("active_params", self.active_params, zero=False)
        if not isinstance(self.tied_embeddings, bool):
            raise ValueError(f"tied_embeddings must be True or False, got {self.tied_embeddings!r}")
        for name, low in (("kv_lora_rank", 1), ("rope_head_dim", 0)):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _check.integer(name, getattr(self, name), minimum=low, maximum=MAX_COUNT))
        for name in ("n_routed_experts", "experts_per_token", "moe_layers", "moe_intermediate_size"):
            object.__setattr__(self, name, _check.integer(name, getattr(self, name), minimum=0, maximum=MAX_COUNT))
        if self.n_routed_experts:
            for name in ("experts_per_token", "moe_layers", "moe_intermediate_size"):
                if getattr(self, name) < 1:
                    raise ValueError(f"{name} must be >= 1 when n_routed_experts > 0, got {getattr(self, name)!r}")
            if self.experts_per_token > self.n_routed_experts:
                raise ValueError(f"experts_per_token must be <= n_routed_experts={self.n_routed_experts}, got {self.experts_per_token!r}")
            if self.moe_layers > self.layers:
                raise ValueError(f"moe_layers must be <= layers={self.layers}, got {self.moe_layers!r}")
            if self.routed_expert_params >= self.params:
                raise ValueError(f"params must exceed the routed experts' {self.routed_expert_params:.4g} parameters, got {self.params!r}")
        if self.active_params > self.params:
            raise ValueError(f"active_params must be <= params={self.params!r}, got {self.active_params!r}")
        _check.choice("attention", self.attention, ATTENTION_KINDS)
        if self.kv_heads > self.heads:
            raise ValueError(f"kv_heads must be <= heads={self.heads}, got {self.kv_heads!r}")
        if self.attention == "mla" and (self.kv_lora_rank is None or self.rope_head_dim is None):
            raise ValueError("an MLA model needs kv_lora_rank and rope_head_dim")
        if self.sliding_window is not None:
            _check.integer("sliding_window", self.sliding_window, minimum=1)
        if not isinstance(self.sources, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in self.sources.items()):
            raise ValueError(f"sources must be a mapping of strings to strings, got {self.sources!r}")
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    # -- bytes ---------------------------------------------------------------------------------
    def kv_bytes_per_token(self, bytes_per_elem: float = 2) -> float:
        """KV cache of one token, all layers [B] (MLA: latent plus RoPE key; otherwise keys and values).

        Explained in :ref:`serving` > The KV cache.

        Parameters
        ----------
        bytes_per_elem : float or str, optional
            Bytes per cached element [B], in (0, 8], or a format name of :mod:`widgets.dtypes`.

        Returns
        -------
        float
            Bytes per token [B].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).

        Examples
        --------
        >>> from widgets.models.llms import LLAMA_3_8B
        >>> LLAMA_3_8B.kv_bytes_per_token("bf16") / 1024
        128.0
        """
        if self.attention == "mla":
            return mla_kv_cache_bytes_per_token(self.layers, self.kv_lora_rank, self.rope_head_dim, bytes_per_elem)
        return kv_cache_bytes_per_token(self.layers, self.kv_heads, self.head_dim, bytes_per_elem)

    def kv_bytes_per_sequence(self, context_tokens: int, bytes_per_elem: float = 2) -> float:
        """KV cache of one sequence of ``context_tokens`` [B], the sliding window applied.

        Explained in :ref:`serving` > The KV cache.

        Parameters
        ----------
        context_tokens : int
            Tokens of the sequence [tokens], >= 0.
        bytes_per_elem : float or str, optional
            Bytes per cached element [B], in (0, 8], or a format name of :mod:`widgets.dtypes`.

        Returns
        -------
        float
            Bytes of the sequence's cache [B].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).
        """
        return kv_cache_bytes(self.kv_bytes_per_token(bytes_per_elem), context_tokens, 1, self.sliding_window)

    @property
    def embedding_params(self) -> int:
        """The embedding table (vocab x hidden); a decode step gathers rows of it, never all."""
        return self.vocab_size * self.hidden_size

    @property
    def head_params(self) -> int:
        """The output head, hidden x vocab [-].

        Every forward pass multiplies by it, for the tokens whose next token is wanted (one per sequence).
        """
        return self.vocab_size * self.hidden_size

    @property
    def routed_expert_params(self) -> float:
        """Parameters in routed experts, 0 for a dense model [-].

        ``moe_layers * n_routed_experts * 3 * hidden_size * moe_intermediate_size``.
        """
        return float(self.moe_layers * self.n_routed_experts * 3 * self.hidden_size * self.moe_intermediate_size)

    def step_params(self, tokens: float = 1) -> float:
        """Parameters a forward pass over ``tokens`` tokens reads.

        Everything but the embedding table (the head stays, tied or not), with the routed experts scaled
        by the fraction ``tokens`` random tokens touch (:func:`experts_touched_fraction`).

        Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

        Parameters
        ----------
        tokens : float, optional
            Tokens in the pass [tokens], >= 0.

        Returns
        -------
        float
            Parameters read [-].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).
        """
        t = _quantity("tokens", tokens)
        emb = 0 if self.tied_embeddings else self.embedding_params
        if not self.n_routed_experts:
            return float(self.params - emb)
        touched = experts_touched_fraction(t, self.experts_per_token, self.n_routed_experts)
        return float(self.params - emb - self.routed_expert_params + self.routed_expert_params * touched)

    @property
    def flop_params(self) -> float:
        """Parameters that do arithmetic for one token [-].

        Those a one-token step reads (the embedding lookup is a gather, no FLOP; a mixture of experts
        uses its routed share). For DeepSeek-V3 this is the 36.6B "activation parameters" of its weights
        documentation.
        """
        return self.step_params(1)

    # -- attention FLOP ------------------------------------------------------------------------
    @property
    def decode_attention_flop_per_token(self) -> float:
        """FLOP that attention spends per cached token per decoded token, all layers:
        ``4 * heads * head_dim`` per layer (QK^T and PV); absorbed MLA scores against the latent
        and RoPE key and sums latents: ``2 * heads * (2 * rank + rope_dim)`` per layer."""
        if self.attention == "mla":
            return 2.0 * self.layers * self.heads * (2 * self.kv_lora_rank + self.rope_head_dim)
        return 4.0 * self.layers * self.heads * self.head_dim

    def decode_attention_flop_per_byte(self, kv_bytes_per_elem: float = 2) -> float:
        """Arithmetic intensity of decode attention [FLOP/B].

        The FLOP one query token spends on a cached token over the bytes that token's cache takes. It
        depends on neither the batch (each sequence brings its own cache) nor the context. GQA:
        ``4 H d / (2 H_kv d b) = 2 (H / H_kv) / b``, 4 FLOP/B for Llama 3 in bf16: far below any GPU's
        ridge. Absorbed MLA: all ``H`` heads read one shared latent, ``2 H (2 d_c + d_R) / ((d_c + d_R)
        b)``, about 242 FLOP/B for DeepSeek-V3 in bf16: above an H200's ridge (206), so MLA decode
        attention is compute-bound when all heads run on one GPU (FlashMLA's deep-dive,
        ``h_q (d_k + d_v) / d_k``); ``decode_step`` divides this by what tensor parallelism replicates.

        Explained in :ref:`serving` > The decode step: a lower bound, and the ridge.

        Parameters
        ----------
        kv_bytes_per_elem : float or str, optional
            Bytes per cached element [B], in (0, 8], or a format name of :mod:`widgets.dtypes`.

        Returns
        -------
        float
            Intensity [FLOP/B].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).

        Examples
        --------
        >>> from widgets.models.llms import DEEPSEEK_V3, LLAMA_3_8B
        >>> round(DEEPSEEK_V3.decode_attention_flop_per_byte(2), 1), LLAMA_3_8B.decode_attention_flop_per_byte(2)
        (241.8, 4.0)
        """
        return self.decode_attention_flop_per_token / self.kv_bytes_per_token(kv_bytes_per_elem)

    def prefill_attention_flop(self, tokens: int) -> float:
        """Causal attention FLOP of a prefill of ``tokens`` tokens, all layers (:func:`causal_attention_flop`).

        Explained in :ref:`serving` > Two phases: prefill and decode.

        Parameters
        ----------
        tokens : int
            Tokens of the prompt [tokens], >= 0.

        Returns
        -------
        float
            FLOP [FLOP].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).
        """
        qk = self.head_dim + (self.rope_head_dim or 0) if self.attention == "mla" else self.head_dim
        return causal_attention_flop(self.layers, self.heads, qk, self.head_dim, tokens)

    def prompt_flop(self, tokens: int) -> float:
        """FLOP of the prefill of one prompt of ``tokens`` tokens [FLOP].

        2 per arithmetic parameter per token for everything but the output head, the head for the last
        token only (only its next token is wanted), plus causal attention. The one count
        ``prefill_time_s`` divides by the peak.

        Explained in :ref:`serving` > Two phases: prefill and decode.

        Parameters
        ----------
        tokens : int
            Tokens of the prompt [tokens], >= 1.

        Returns
        -------
        float
            FLOP [FLOP].

        Raises
        ------
        ValueError
            If an input is out of range (the message names it).

        Examples
        --------
        >>> from widgets.models.llms import LLAMA_3_8B
        >>> round(LLAMA_3_8B.prompt_flop(1024) / 1e12, 2)
        14.57
        """
        t = _check.integer("tokens", tokens, minimum=1, maximum=MAX_COUNT)
        body = self.flop_params - self.head_params
        return prefill_flop(body, t) + prefill_flop(self.head_params, 1) + self.prefill_attention_flop(t)

    def with_layers(self, layers: int) -> ModelConfig:
        """The same dense architecture with ``layers`` layers, its parameters recounted.

        Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

        Parameters
        ----------
        layers : int
            Transformer layers [-], >= 1.

        Returns
        -------
        ModelConfig
            A new configuration named ``"<name> (<layers> layers)"``.

        Raises
        ------
        ValueError
            If ``layers`` is out of range, or the model is a mixture of experts.
        """
        n = _check.integer("layers", layers, minimum=1)
        if self.n_routed_experts:
            raise ValueError("with_layers supports dense models only")
        p = dense_transformer_params(
            n,
            self.hidden_size,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.intermediate_size,
            self.vocab_size,
            self.tied_embeddings,
        )
        return replace(self, name=f"{self.name} ({n} layers)", layers=n, params=float(p), active_params=float(p))


def custom_model(
    layers: int,
    hidden_size: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate_size: int,
    vocab_size: int = 32000,
    sliding_window: Optional[int] = None,
    name: str = "custom",
) -> ModelConfig:
    """A dense Llama-style model from its configuration, parameters counted by :func:`dense_transformer_params`.

    The attention kind follows from the heads: MHA when ``kv_heads == heads``, MQA when 1, else GQA.

    Explained in :ref:`serving` > The memory budget, and the concurrency it allows.

    Parameters
    ----------
    layers : int
        Transformer layers [-], >= 1.
    hidden_size : int
        Model dimension [-], >= 1.
    heads : int
        Query heads [-], >= 1.
    kv_heads : int
        Key/value heads [-], 1 to ``heads``.
    head_dim : int
        Elements per head [-], >= 1.
    intermediate_size : int
        MLP width [-], >= 1.
    vocab_size : int, optional
        Vocabulary [tokens], >= 1.
    sliding_window : int or None, optional
        Attention window [tokens], >= 1; None for full attention.
    name : str, optional
        A label.

    Returns
    -------
    ModelConfig
        The configuration, its ``params`` and ``active_params`` counted.

    Raises
    ------
    ValueError
        If an input is out of range or not a number (the message names it).

    Examples
    --------
    >>> round(custom_model(32, 4096, 32, 8, 128, 14336, 128256).params / 1e9, 2)
    8.03
    """
    p = dense_transformer_params(layers, hidden_size, heads, kv_heads, head_dim, intermediate_size, vocab_size)
    kind = "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")
    return ModelConfig(
        name=name, layers=layers, hidden_size=hidden_size, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=intermediate_size, vocab_size=vocab_size, params=float(p), active_params=float(p),
        attention=kind, sliding_window=sliding_window, sources={"params": "counted by dense_transformer_params"},
    )


__all__ = [
    "ATTENTION_KINDS", "MAX_COUNT", "MAX_QUANTITY", "STORAGE_DTYPES", "ModelConfig", "activation_bytes",
    "cached_tokens", "causal_attention_flop", "custom_model", "decode_step_flop", "dense_transformer_params",
    "experts_touched_fraction", "kv_bytes_by_attention", "kv_cache_bytes", "kv_cache_bytes_per_token",
    "mla_kv_cache_bytes_per_token", "prefill_flop", "weight_bytes",
]
