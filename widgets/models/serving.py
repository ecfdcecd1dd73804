"""Serving models: the KV cache, the memory budget, prefill and decode, latency, capacity, cost.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Units are in the names: ``*_bytes`` [B], ``*_bytes_per_s`` [B/s], ``*_flop`` [FLOP],
``*_flop_per_s`` [FLOP/s], ``*_s`` [s], ``*_per_s`` [1/s], ``*_tokens`` [tokens].

Conventions
-----------
- A decode step produces one token for each of ``batch`` sequences. Its memory lower bound reads
  every weight the step uses once and every cached key and value of every sequence once.
- The embedding table is not read by a decode step (only ``batch`` rows of it are gathered); the
  output head (``lm_head``) is. With tied embeddings the one matrix is read as the head.
- A mixture-of-experts layer reads only the experts its tokens were routed to: at batch 1 that is
  the "activated" parameters; at a large batch nearly every expert (``experts_touched_fraction``).
- ``prefill_flop`` counts 2 FLOP per parameter per token (one multiply and one add), before
  attention; attention is counted separately (``causal_attention_flop``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Optional

from ..hardware import GPU, get_gpu
from . import _check
from .collectives import ring_allreduce_time_s

# Bytes per element of each storage format (int4 / fp4 pack two elements per byte).
DTYPE_BYTES = MappingProxyType({"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5})
ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")

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
# Largest count (layers, heads, tokens, batch...) a model accepts: beyond any real model, small
# enough that every product stays exact in a float.
MAX_COUNT = 2**40
# Largest physical quantity (bytes, FLOP, B/s, FLOP/s, s, prices) a model accepts: 1e30 is beyond
# any machine, and products of a few such numbers stay far from float overflow.
MAX_QUANTITY = 1e30


def bytes_per_elem(dtype: str) -> float:
    """Bytes per stored element of ``dtype`` (``"bf16"`` -> 2.0, ``"fp8"`` -> 1.0, ``"int4"`` -> 0.5).

    >>> bytes_per_elem("fp8")
    1.0
    """
    key = _check.choice("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[key]


def _bpe(name: str, value) -> float:
    """A bytes-per-element argument: a positive number (at most 8) or a dtype name."""
    if isinstance(value, str):
        return DTYPE_BYTES[_check.choice(name, value, DTYPE_BYTES)]
    v = _check.positive(name, value)
    if v > 8:
        raise ValueError(f"{name} must be a dtype name or a number in (0, 8] bytes, got {value!r}")
    return v


def _dtype_bytes(name: str, value) -> float:
    """Bytes per element of the dtype named by the parameter ``name``."""
    return DTYPE_BYTES[_check.choice(name, value, DTYPE_BYTES)]


def _gpu(value, name: str = "gpu") -> GPU:
    """A catalog GPU (by name) or a GPU record, the error naming the caller's parameter."""
    try:
        return get_gpu(value)
    except (ValueError, TypeError, AttributeError):
        from ..hardware import gpu_names

        raise ValueError(f"{name} must be one of {', '.join(gpu_names())} or a GPU record; got {value!r}") from None


MIN_ARRIVAL_RATE_PER_S = 1e-9  # one request in 30 years: below it no server is planned


def _rate(name: str, value) -> float:
    """A request rate [1/s] in [MIN_ARRIVAL_RATE_PER_S, MAX_QUANTITY]."""
    v = _quantity(name, value, zero=False)
    if v < MIN_ARRIVAL_RATE_PER_S:
        raise ValueError(f"{name} must be >= {MIN_ARRIVAL_RATE_PER_S:g} requests/s, got {value!r}")
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
    """KV cache of one token [B]: a key and a value vector per KV head per layer,
    ``2 * layers * kv_heads * head_dim * bytes_per_elem``.

    Multi-head attention has ``kv_heads == heads``; grouped-query attention fewer (8 in Llama 3);
    multi-query attention one.

    Parameters
    ----------
    layers : int
        Transformer layers, >= 1.
    kv_heads : int
        Key/value heads per layer, >= 1.
    head_dim : int
        Elements per head, >= 1.
    bytes_per_elem : float or str
        Bytes per cached element (2 for bf16, 1 for fp8), or a dtype name.

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
    """KV cache of one token under multi-head latent attention (MLA) [B]:
    ``layers * (kv_lora_rank + rope_head_dim) * bytes_per_elem``.

    MLA caches one compressed latent vector of ``kv_lora_rank`` elements per layer, shared by all
    heads, plus one decoupled RoPE key of ``rope_head_dim`` elements (DeepSeek-V2, section 2.1.3).

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

    >>> cached_tokens(32768, 4096), cached_tokens(1000, 4096), cached_tokens(1000)
    (4096, 1000, 1000)
    """
    c = _check.integer("context_tokens", context_tokens, minimum=0)
    if sliding_window is None:
        return c
    w = _check.integer("sliding_window", sliding_window, minimum=1)
    return min(c, w)


def kv_cache_bytes(bytes_per_token: float, context_tokens: int, batch: int = 1, sliding_window: Optional[int] = None) -> float:
    """KV cache of ``batch`` sequences of ``context_tokens`` each [B].

    >>> kv_cache_bytes(131072, 8192, 16) / 2**30  # Llama-3-8B, bf16, 16 x 8k tokens: 16 GiB
    16.0
    """
    b = _quantity("bytes_per_token", bytes_per_token, zero=False)
    n = _check.integer("batch", batch, minimum=0)
    return b * cached_tokens(context_tokens, sliding_window) * n


# --------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------
def weight_bytes(params: float, bytes_per_elem: float = 2) -> float:
    """Bytes of ``params`` weights stored at ``bytes_per_elem`` each [B].

    >>> weight_bytes(8.03e9, 2) / 1e9
    16.06
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
    """Parameters of a Llama-style decoder: per layer the Q, K, V and output projections, a gated
    MLP (gate, up, down) and two RMSNorm weights; then a final norm, the embedding table and the
    output head (shared with the embedding when ``tied_embeddings``).

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
    """Expected fraction of a layer's routed experts that ``batch`` tokens touch when each token
    picks ``experts_per_token`` of ``n_experts`` at random: ``1 - (1 - k/E) ** batch``.

    A decode step reads only touched experts, so a mixture-of-experts model reads its "activated"
    parameters at batch 1 and nearly all of them at a large batch.

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
# Model presets (model cards' config.json and papers)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelConfig:
    """One model's architecture, every figure with its source.

    ``params`` is the total parameter count; ``active_params`` the parameters one token uses (equal
    for a dense model; for a mixture of experts, the "activated" count). ``head_dim`` is the
    per-head dimension of keys and values (for MLA: ``d_h``, the value head and the non-RoPE part of
    the key); ``rope_head_dim`` the decoupled RoPE key of MLA.
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
        """KV cache of one token [B] (MLA: latent plus RoPE key; otherwise keys and values)."""
        if self.attention == "mla":
            return mla_kv_cache_bytes_per_token(self.layers, self.kv_lora_rank, self.rope_head_dim, bytes_per_elem)
        return kv_cache_bytes_per_token(self.layers, self.kv_heads, self.head_dim, bytes_per_elem)

    def kv_bytes_per_sequence(self, context_tokens: int, bytes_per_elem: float = 2) -> float:
        """KV cache of one sequence of ``context_tokens`` [B], sliding window applied."""
        return kv_cache_bytes(self.kv_bytes_per_token(bytes_per_elem), context_tokens, 1, self.sliding_window)

    @property
    def embedding_params(self) -> int:
        """The embedding table (vocab x hidden); a decode step gathers rows of it, never all."""
        return self.vocab_size * self.hidden_size

    @property
    def head_params(self) -> int:
        """The output head (hidden x vocab): every forward pass multiplies by it, for the tokens
        whose next token is wanted (one per sequence)."""
        return self.vocab_size * self.hidden_size

    @property
    def routed_expert_params(self) -> float:
        """Parameters in routed experts (0 for a dense model): layers x experts x 3 x hidden x ffn."""
        return float(self.moe_layers * self.n_routed_experts * 3 * self.hidden_size * self.moe_intermediate_size)

    def step_params(self, tokens: float = 1) -> float:
        """Parameters a forward pass over ``tokens`` tokens reads: everything but the embedding
        table (the head stays, tied or not), with the routed experts scaled by the fraction
        ``tokens`` random tokens touch."""
        t = _quantity("tokens", tokens)
        emb = 0 if self.tied_embeddings else self.embedding_params
        if not self.n_routed_experts:
            return float(self.params - emb)
        touched = experts_touched_fraction(t, self.experts_per_token, self.n_routed_experts)
        return float(self.params - emb - self.routed_expert_params + self.routed_expert_params * touched)

    @property
    def flop_params(self) -> float:
        """Parameters that do arithmetic for one token: those a one-token step reads (the
        embedding lookup is a gather, no FLOP; a mixture of experts uses its routed share).
        For DeepSeek-V3 this is the 36.6B "activation parameters" of its weights documentation."""
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
        """Arithmetic intensity of decode attention [FLOP/B]: the FLOP one query token spends on a
        cached token over the bytes that token's cache takes. It depends on neither the batch (each
        sequence brings its own cache) nor the context.

        GQA: ``4 H d / (2 H_kv d b) = 2 (H / H_kv) / b``, 4 FLOP/B for Llama 3 in bf16: far below any
        GPU's ridge. Absorbed MLA: all ``H`` heads read one shared latent, ``2 H (2 d_c + d_R) /
        ((d_c + d_R) b)``, about 242 FLOP/B for DeepSeek-V3 in bf16: above an H200's ridge (206), so
        MLA decode attention is compute-bound when all heads run on one GPU (FlashMLA's deep-dive,
        ``h_q (d_k + d_v) / d_k``); ``decode_step`` divides this by what tensor parallelism replicates.

        >>> round(DEEPSEEK_V3.decode_attention_flop_per_byte(2), 1), LLAMA_3_8B.decode_attention_flop_per_byte(2)
        (241.8, 4.0)
        """
        return self.decode_attention_flop_per_token / self.kv_bytes_per_token(kv_bytes_per_elem)

    def prefill_attention_flop(self, tokens: int) -> float:
        """Causal attention FLOP of a prefill of ``tokens`` tokens, all layers."""
        qk = self.head_dim + (self.rope_head_dim or 0) if self.attention == "mla" else self.head_dim
        return causal_attention_flop(self.layers, self.heads, qk, self.head_dim, tokens)

    def prompt_flop(self, tokens: int) -> float:
        """FLOP of the prefill of one prompt of ``tokens`` tokens [FLOP]: 2 per arithmetic
        parameter per token for everything but the output head, the head for the last token only
        (only its next token is wanted), plus causal attention. The one count ``prefill_time_s``
        divides by the peak.

        >>> round(LLAMA_3_8B.prompt_flop(1024) / 1e12, 2)
        14.57
        """
        t = _check.integer("tokens", tokens, minimum=1, maximum=MAX_COUNT)
        body = self.flop_params - self.head_params
        return prefill_flop(body, t) + prefill_flop(self.head_params, 1) + self.prefill_attention_flop(t)

    def with_layers(self, layers: int) -> ModelConfig:
        """The same architecture with ``layers`` layers (parameters recounted for a dense model)."""
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


_HF = "Hugging Face model card, config.json"
_HF_SIZE = "Hugging Face model page, Safetensors 'Model size'"

LLAMA_3_8B = ModelConfig(
    name="Llama-3-8B",
    layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=128256,
    params=8.03e9, active_params=8.03e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Meta-Llama-3-8B {_HF}: num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, "
        "num_key_value_heads 8, intermediate_size 14336, vocab_size 128256; head_dim = 4096/32 = 128; "
        "also Llama 3 paper (Grattafiori et al. 2024), Table 3",
        "params": f"meta-llama/Meta-Llama-3-8B {_HF_SIZE}: 8.03B params",
    },
)
LLAMA_3_70B = ModelConfig(
    name="Llama-3-70B",
    layers=80, hidden_size=8192, heads=64, kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=128256,
    params=70.6e9, active_params=70.6e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Meta-Llama-3-70B {_HF}: num_hidden_layers 80, hidden_size 8192, num_attention_heads 64, "
        "num_key_value_heads 8, intermediate_size 28672, vocab_size 128256; head_dim = 8192/64 = 128; "
        "also Llama 3 paper (Grattafiori et al. 2024), Table 3",
        "params": f"meta-llama/Meta-Llama-3-70B {_HF_SIZE}: 70.6B params",
    },
)
MISTRAL_7B = ModelConfig(
    name="Mistral-7B",
    layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32000,
    params=7.24e9, active_params=7.24e9, attention="gqa", sliding_window=4096,
    sources={
        "architecture": f"mistralai/Mistral-7B-v0.1 {_HF}: num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, "
        "num_key_value_heads 8, intermediate_size 14336, vocab_size 32000, sliding_window 4096; "
        "Mistral 7B paper (Jiang et al. 2023), Table 1: head_dim 128, window_size 4096",
        "params": f"mistralai/Mistral-7B-v0.1 {_HF_SIZE}: 7.24B params",
    },
)
DEEPSEEK_V3 = ModelConfig(
    name="DeepSeek-V3",
    layers=61, hidden_size=7168, heads=128, kv_heads=128, head_dim=128, intermediate_size=18432, vocab_size=129280,
    params=671e9, active_params=37e9, attention="mla", kv_lora_rank=512, rope_head_dim=64,
    n_routed_experts=256, experts_per_token=8, moe_layers=58, moe_intermediate_size=2048,
    sources={
        "architecture": f"deepseek-ai/DeepSeek-V3 {_HF}: num_hidden_layers 61, hidden_size 7168, num_attention_heads 128, "
        "kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, vocab_size 129280, "
        "n_routed_experts 256, num_experts_per_tok 8, first_k_dense_replace 3, moe_intermediate_size 2048; "
        "DeepSeek-V3 technical report (2024), section 4.2: 61 layers, d_c = 512, d_h^R = 64, n_h = d_h = 128",
        "params": "DeepSeek-V3 technical report (2024), abstract: 671B total parameters with 37B activated for each token",
        "kv_cache": "DeepSeek-V2 paper (2024), section 2.1.3 and Table 1: MLA caches (d_c + d_h^R) elements per token per layer",
    },
)

LLAMA_3_1_405B = ModelConfig(
    name="Llama-3.1-405B",
    layers=126, hidden_size=16384, heads=128, kv_heads=8, head_dim=128, intermediate_size=53248, vocab_size=128256,
    params=405.85e9, active_params=405.85e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Llama-3.1-405B {_HF}: num_hidden_layers 126, hidden_size 16384, num_attention_heads 128, "
        "num_key_value_heads 8, intermediate_size 53248, vocab_size 128256; head_dim = 16384/128 = 128; "
        "Llama 3 paper (Grattafiori et al. 2024), Table 3: 126 layers, model dimension 16,384, FFN dimension 53,248, "
        "128 attention heads, 8 key/value heads",
        "params": "dense_transformer_params of the configuration: 405.85B (the model page: 406B params)",
    },
)

PRESETS: Mapping[str, ModelConfig] = MappingProxyType({m.name: m for m in (LLAMA_3_8B, LLAMA_3_70B, LLAMA_3_1_405B, MISTRAL_7B, DEEPSEEK_V3)})


def get_model(name) -> ModelConfig:
    """A preset by name (case-insensitive), or a ``ModelConfig`` passed through.

    >>> get_model("llama-3-8b").kv_heads
    8
    """
    return _model(name, "name")


def _model(value, param: str = "model") -> ModelConfig:
    if isinstance(value, ModelConfig):
        return value
    if isinstance(value, str):
        for key, m in PRESETS.items():
            if key.lower() == value.lower():
                return m
    raise ValueError(f"{param} must be one of {', '.join(PRESETS)} or a ModelConfig; got {value!r}")


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
    """A dense Llama-style model from its configuration; parameters counted by
    ``dense_transformer_params``."""
    p = dense_transformer_params(layers, hidden_size, heads, kv_heads, head_dim, intermediate_size, vocab_size)
    kind = "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")
    return ModelConfig(
        name=name, layers=layers, hidden_size=hidden_size, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=intermediate_size, vocab_size=vocab_size, params=float(p), active_params=float(p),
        attention=kind, sliding_window=sliding_window, sources={"params": "counted by dense_transformer_params"},
    )


# --------------------------------------------------------------------------------------------
# FLOP
# --------------------------------------------------------------------------------------------
def prefill_flop(params: float, tokens: int) -> float:
    """FLOP of a forward pass over ``tokens`` tokens, before attention: 2 per parameter per
    token (each weight is one multiply and one add per token).

    >>> prefill_flop(8e9, 1000) / 1e12  # an 8B model, 1000-token prompt: 16 TFLOP
    16.0
    """
    p = _quantity("params", params)
    t = _check.integer("tokens", tokens, minimum=0)
    return 2.0 * p * t


def causal_attention_flop(layers: int, heads: int, qk_dim: int, v_dim: int, tokens: int) -> float:
    """FLOP of causal self-attention over ``tokens`` tokens: per layer and head, ``QK^T`` costs
    ``2 * T^2 * qk_dim`` and ``PV`` ``2 * T^2 * v_dim``; the causal mask halves both.

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

    >>> decode_step_flop(8e9, 64) / 1e12
    1.024
    """
    p = _quantity("params", params)
    b = _check.integer("batch", batch, minimum=0)
    a = _quantity("attention_flop_per_seq", attention_flop_per_seq)
    return b * (2.0 * p + a)


# --------------------------------------------------------------------------------------------
# Decode: the memory lower bound and the ridge
# --------------------------------------------------------------------------------------------
def decode_step_time_s(param_bytes: float, kv_bytes: float, hbm_bytes_per_s: float) -> float:
    """Memory lower bound of one decode step [s]: every weight and every cached key and value
    read once, ``(param_bytes + kv_bytes) / hbm_bytes_per_s``.

    Parameters
    ----------
    param_bytes : float
        Weight bytes the step reads [B], >= 0.
    kv_bytes : float
        KV-cache bytes the step reads (all sequences of the batch) [B], >= 0.
    hbm_bytes_per_s : float
        Memory bandwidth [B/s], > 0: the datasheet's, or one measured.

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
    """The batch at which decode turns compute-bound [sequences]: where
    ``(param_bytes + B * kv_bytes_per_seq) / bandwidth == B * flop_per_seq / peak``.

    For the weight matmuls (``kv_bytes_per_seq = 0``) it is ``param_bytes / (2 * params) * peak /
    bandwidth``: the GPU's ridge intensity times the bytes per weight over 2 (206 for bf16 on an
    H200; 240 on a TPU v5e). Counting the KV cache in the same roofline (``kv_bytes_per_seq > 0``)
    adds bytes that grow with the batch as fast as the FLOP do; when ``kv_bytes_per_seq /
    bandwidth`` reaches ``flop_per_seq / peak`` the step never turns compute-bound: ``ValueError``
    saying so (there is no such batch).

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
    """End-to-end latency of a request [s]: the first token after ``ttft_s``, each later one
    ``tpot_s`` after the previous: ``ttft_s + (output_tokens - 1) * tpot_s``.

    >>> round(e2e_latency_s(0.2, 0.02, 101), 6)
    2.2
    """
    a = _quantity("ttft_s", ttft_s)
    b = _quantity("tpot_s", tpot_s)
    n = _check.integer("output_tokens", output_tokens, minimum=1)
    return a + (n - 1) * b


def tpot_s(e2e_s: float, ttft_s: float, output_tokens: int) -> float:
    """Time per output token after the first [s]: ``(e2e_s - ttft_s) / (output_tokens - 1)``,
    the mean of the inter-token latencies (ITL) of one request.

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

    >>> littles_law_concurrency(10, 6.4)  # 10 requests/s, 6.4 s each: 64 in flight
    64.0
    """
    lam = _quantity("arrival_rate_per_s", arrival_rate_per_s)
    w = _quantity("latency_s", latency_s)
    return lam * w


def decode_tokens_per_s(batch: float, tpot_s: float) -> float:
    """Output tokens per second of a server decoding ``batch`` sequences at ``tpot_s`` per step.

    >>> decode_tokens_per_s(64, 0.02)
    3200.0
    """
    b = _quantity("batch", batch)
    t = _quantity("tpot_s", tpot_s, zero=False)
    return _check.finite_result("tokens per second", b / t, batch=batch, tpot_s=tpot_s)


def cost_per_million_tokens(gpu_hour_price: float, gpus: float, tokens_per_s: float) -> float:
    """Cost of a million tokens [currency] from a GPU-hour price: ``gpus * price / 3600`` per
    second, divided by tokens per second, times 1e6.

    >>> round(cost_per_million_tokens(3.0, 1, 3200), 4)  # $3/GPU-hour at 3200 tokens/s
    0.2604
    """
    price = _quantity("gpu_hour_price", gpu_hour_price)
    g = _quantity("gpus", gpus, zero=False)
    tps = _quantity("tokens_per_s", tokens_per_s, zero=False)
    return _check.finite_result("cost", price * g / 3600.0 / tps * 1e6, gpu_hour_price=gpu_hour_price, gpus=gpus, tokens_per_s=tokens_per_s)


def allreduce_time_s(message_bytes: float, gpus: int, link_bytes_per_s: float, latency_s: Optional[float] = DEFAULT_ALLREDUCE_LATENCY_S) -> float:
    """Ring all-reduce of ``message_bytes`` over ``gpus`` GPUs [s]: the book's one all-reduce
    model, ``collectives.ring_allreduce_time_s``: ``2(n-1)/n`` of the message crosses each link
    and each of the ``2(n-1)`` steps pays ``latency_s`` (None: the collectives model's default
    latencies); 0 for one GPU.
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
def activation_bytes(tokens: int, hidden_size: int, intermediate_size: int, vocab_size: int, sequences: int = 1, bytes_per_elem: float = 2) -> float:
    """Peak transient activations of a forward pass over ``tokens`` tokens [B]: layers run one
    after another, so the peak is one layer's widest point, the MLP: the residual and its norm
    (``2 * hidden``), the fused gate-up output (``2 * intermediate``) and its product
    (``intermediate``) per token; plus fp32 logits for the last token of each of ``sequences``.

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


def _kv_share(model: ModelConfig, tp: int) -> float:
    """Fraction of the KV cache each of ``tp`` GPUs holds: heads are split, but a GPU holds at
    least one KV head, and MLA's latent is shared by all heads, so it is replicated."""
    if model.attention == "mla":
        return 1.0
    return math.ceil(model.kv_heads / tp) / model.kv_heads


@dataclass(frozen=True)
class MemoryBudget:
    """Where one GPU's memory goes [B], and how many sequences its KV cache can hold."""

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
    """One GPU's memory (``GPU.memory_bytes``: the capacity the device reports as usable where the
    catalog has it, 139.8 GiB for an H200, else the datasheet's): weights (split ``tp`` ways), the KV cache of ``batch`` sequences of
    ``context_tokens``, peak activations of a ``prefill_chunk_tokens`` forward pass, and a runtime
    reserve (CUDA context, libraries, fragmentation: ``reserve_fraction`` of memory). Reports
    whether it fits and how many sequences of that length the rest could hold (each also needs
    its fp32 logits).

    >>> b = memory_budget("Llama-3-8B", "H200-SXM", 8192, 64)
    >>> b.fits, b.max_concurrent_seqs
    (True, 110)
    """
    m = _model(model)
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
    """One decode step of ``batch`` sequences at ``context_tokens`` each, on one GPU of ``tp``,
    with ``prefill_tokens`` prompt tokens fused into it (chunked prefill; 0 for a pure decode step).

    The weight matmuls and attention run as separate kernels, one after the other, so each gets
    its own roofline: ``linear_s = max(weight bytes / bandwidth, 2 x tokens x params / peak)`` and
    ``attention_s = max(KV bytes / bandwidth, attention FLOP / peak)``; the step takes their sum
    (plus the all-reduces of tensor parallelism). Fused prompt tokens share the weight read of
    the decode tokens: they add FLOP to the same matmuls, not a second roofline."""

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

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second of the batch (one per sequence per step)."""
        return self.batch / self.time_s if self.time_s > 0 else 0.0


def _rates(gpu: GPU, compute_dtype: str, hbm_bytes_per_s, peak_flop_per_s):
    bw = gpu.hbm_bytes_per_s if hbm_bytes_per_s is None else _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    if peak_flop_per_s is None:
        key = _check.choice("compute_dtype", compute_dtype, tuple(gpu.peak_flop_per_s) or ("bf16",))
        peak = gpu.peak(key)
    else:
        peak = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    if not bw or bw <= 0:
        raise ValueError(f"hbm_bytes_per_s must be given for {gpu.name} (the catalog has none)")
    return bw, peak


def decode_step(
    model,
    gpu="H200-SXM",
    batch: float = 1,
    context_tokens: int = 1024,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int = 1,
    compute_dtype: str = "bf16",
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
    allreduce_latency_s: Optional[float] = DEFAULT_ALLREDUCE_LATENCY_S,
    prefill_tokens: float = 0.0,
    prompt_tokens: Optional[int] = None,
    allreduce_call_s: Optional[float] = None,
) -> DecodeStep:
    """Lower bound on one decode step, kernel by kernel: the weight matmuls
    ``max(W / bandwidth, 2 B P / peak)`` plus attention ``max(KV / bandwidth, FLOP / peak)``, per
    GPU, plus with ``tp > 1`` two all-reduces of the batch's hidden states per layer
    (Megatron-style tensor parallelism). Below the ridge batch both parts are memory-bound and
    the step takes ``decode_step_time_s(W, KV, bandwidth)``. MLA's attention, whose intensity is
    above the ridge when all query heads share one GPU's copy of the latent, is compute-bound at
    any batch on one GPU; under tensor parallelism each GPU holds ``1/tp`` of the heads but the
    whole latent, so its intensity falls ``tp``-fold and it is memory-bound again.

    ``allreduce_call_s``, when given, is the time of each all-reduce call, replacing the ring
    model: serving engines reduce decode-size messages with one-shot or two-shot all-reduces
    inside CUDA graphs, whose time is mostly a fixed latency of a few to some tens of microseconds.

    With ``prefill_tokens > 0`` the step also carries that many tokens of prompts of
    ``prompt_tokens`` each (chunked prefill, Sarathi-Serve): they go through the same weight
    matmuls (more FLOP, the same weight bytes; the output head only for the prompts they
    complete, ``prefill_tokens / prompt_tokens`` per step), attend causally to their prompt
    (each token on average the prompt's causal FLOP / ``prompt_tokens``) and write their keys and values.

    ``hbm_bytes_per_s`` and ``peak_flop_per_s`` default to the catalog's datasheet figures; pass
    measured ones to predict a real run.

    >>> s = decode_step("Llama-3-8B", "H200-SXM", batch=1, context_tokens=1024)
    >>> s.bound, round(s.time_s * 1e3, 2), round(s.ridge_batch)
    ('memory', 3.15, 206)
    >>> decode_step("DeepSeek-V3", "H200-SXM", batch=1, context_tokens=4096).attention_bound
    'compute'
    >>> decode_step("DeepSeek-V3", "H200-SXM", 64, 8192, "fp8", tp=8).attention_bound  # 242 / 8 FLOP/B
    'memory'
    """
    m = _model(model)
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
    bw, peak = _rates(g, compute_dtype, hbm_bytes_per_s, peak_flop_per_s)
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
    )


def prefill_time_s(
    model,
    gpu="H200-SXM",
    prompt_tokens: int = 1024,
    weight_dtype: str = "bf16",
    tp: int = 1,
    compute_dtype: str = "bf16",
    hbm_bytes_per_s: Optional[float] = None,
    peak_flop_per_s: Optional[float] = None,
) -> float:
    """Lower bound on the prefill of one prompt [s]: the larger of its FLOP
    (``ModelConfig.prompt_flop``: 2 per arithmetic parameter per token, the output head for the
    last token only, plus causal attention) over the peak and the weights it reads over the
    bandwidth. Short prompts are memory-bound like a decode step; long ones compute-bound.

    >>> round(prefill_time_s("Llama-3-8B", "H200-SXM", 4096) * 1e3, 1)
    62.2
    """
    m = _model(model)
    g = _gpu(gpu)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    bw, peak = _rates(g, compute_dtype, hbm_bytes_per_s, peak_flop_per_s)
    flop = m.prompt_flop(p) / n_tp
    w = weight_bytes(m.step_params(p), _dtype_bytes("weight_dtype", weight_dtype)) / n_tp
    return _check.finite_result("prefill time", max(flop / peak, w / bw), hbm_bytes_per_s=bw, peak_flop_per_s=peak)


@dataclass(frozen=True)
class Latency:
    """A request's latency on a server decoding ``batch`` sequences."""

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
) -> Latency:
    """TTFT (the prefill of this prompt, no queueing), TPOT (a decode step at the mean context
    of the generation, ``prompt + output/2``), end-to-end latency and the batch's output tokens/s.

    >>> r = latency("Llama-3-8B", "H200-SXM", batch=32, prompt_tokens=1024, output_tokens=256)
    >>> round(r.ttft_s * 1e3, 1), round(r.tpot_s * 1e3, 2), round(r.tokens_per_s)
    (14.7, 4.13, 7741)
    """
    m = _model(model)
    o = _check.integer("output_tokens", output_tokens, minimum=1)
    ttft = prefill_time_s(m, gpu, prompt_tokens, weight_dtype, tp, hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    step = decode_step(
        m,
        gpu,
        batch,
        prompt_tokens + o // 2,
        weight_dtype,
        kv_dtype,
        tp,
        hbm_bytes_per_s=hbm_bytes_per_s,
        peak_flop_per_s=peak_flop_per_s,
    )
    return Latency(
        model=m.name, gpu=_gpu(gpu).name, batch=step.batch, prompt_tokens=prompt_tokens, output_tokens=o, ttft_s=ttft,
        tpot_s=step.time_s, e2e_s=e2e_latency_s(ttft, step.time_s, o), tokens_per_s=step.tokens_per_s, step=step,
    )


# --------------------------------------------------------------------------------------------
# Capacity planning
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CapacityPlan:
    """How many GPUs a request rate needs at a TPOT target, and what it costs."""

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
) -> float:
    """The batch one replica runs at ``arrival_rate_per_s`` [sequences]: the fixed point of
    Little's law ``B = lambda * O * TPOT(B)``, where TPOT itself grows with B (a larger batch
    takes longer per step, so each request stays longer, so the batch grows). ``ValueError``
    when no batch that fits in memory keeps up with the rate.

    >>> b = steady_batch("Llama-3-8B", "H200-SXM", 20, 1024, 256)
    >>> round(b, 2), round(littles_law_concurrency(20, 256 * decode_step("Llama-3-8B", "H200-SXM", b, 1152,
    ...     prefill_tokens=b * 1024 / 256, prompt_tokens=1024).time_s), 2)
    (19.1, 19.1)
    """
    m = _model(model)
    g = _gpu(gpu)
    lam = _rate("arrival_rate_per_s", arrival_rate_per_s)
    p_tok = _check.integer("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_COUNT)
    o = _check.integer("output_tokens", output_tokens, minimum=1, maximum=MAX_COUNT)
    n_tp = _check.integer("tp", tp, minimum=1, maximum=1024)
    if not isinstance(chunked_prefill, bool):
        raise ValueError(f"chunked_prefill must be True or False, got {chunked_prefill!r}")
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
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
) -> CapacityPlan:
    """Replicas of ``tp`` GPUs needed to serve ``arrival_rate_per_s`` requests within a TPOT target.

    A replica decoding ``B`` sequences must also prefill the requests that replace finished
    ones: ``B / output_tokens`` prompts per step. With ``chunked_prefill`` (the default, as in
    Sarathi-Serve and vLLM) their tokens ride in the decode step's matmuls, which read the
    weights once for both: ``TPOT(B)`` is one fused step, ``decode_step(..., prefill_tokens=B P / O)``.
    Without it each prefill runs alone and stalls the batch: ``TPOT(B) = t(B) + B t_p / O``.
    The largest ``B`` that fits in memory and meets the target sets a replica's capacity,
    ``B / (output_tokens * TPOT(B))`` requests/s; the replica count covers the rate with each
    replica loaded to at most ``max_utilization`` of that capacity (headroom, so that requests do
    not queue without bound); the batch each replica then runs is the fixed point of Little's law,
    ``B = rate_per_replica * output_tokens * TPOT(B)``.

    Approximations: Little's law counts a request in the batch for ``output_tokens`` steps
    (it decodes for ``O - 1`` of them, and a prompt waiting for its chunks also holds KV cache);
    the memory check gives every sequence ``P + O`` tokens of cache (a paged cache holds
    ``P + O/2`` on average). ``ttft_s`` is the prefill alone, with no queueing; under chunked
    prefill ``ttft_chunked_s`` spreads the prompt over ``prefill_steps`` fused steps (still no queueing).

    >>> p = plan_capacity("Llama-3-8B", "H200-SXM", 20, 1024, 256, 0.03, 3.0)
    >>> p.gpus, round(p.batch, 1), round(p.cost_per_million_output_tokens, 3)
    (1, 19.1, 0.163)
    """
    m = _model(model)
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
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    budget = memory_budget(m, g, p_tok + o, 1, weight_dtype, kv_dtype, n_tp)
    b_mem = budget.max_concurrent_seqs
    t_p = prefill_time_s(m, g, p_tok, weight_dtype, n_tp, **kw)
    tpot = _tpot_fn(m, g, p_tok, o, weight_dtype, kv_dtype, n_tp, chunked_prefill, kw)

    def infeasible(reason: str, b_lat: float = 0.0) -> CapacityPlan:
        # no plan: every rate, time and cost of it is 0 (never NaN), and ``feasible`` says why
        return CapacityPlan(False, reason, 0, 0, b_mem, b_lat, 0.0, 0.0, t_p, 0.0, 0.0, 0.0, 0.0, 0.0, u_max, 0, 0.0)

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
        max_utilization=u_max, prefill_steps=steps, ttft_chunked_s=ttft_chunked,
    )


# --------------------------------------------------------------------------------------------
# A paged KV cache (vLLM's PagedAttention)
# --------------------------------------------------------------------------------------------
DEFAULT_BLOCK_TOKENS = 16  # vLLM's default --block-size


def paged_kv_blocks(context_tokens: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> int:
    """Blocks a paged KV cache gives one sequence of ``context_tokens``: ``ceil(c / block)``.

    >>> paged_kv_blocks(1000, 16), paged_kv_blocks(1024, 16), paged_kv_blocks(0, 16)
    (63, 64, 0)
    """
    c = _check.integer("context_tokens", context_tokens, minimum=0, maximum=MAX_COUNT)
    k = _check.integer("block_tokens", block_tokens, minimum=1, maximum=MAX_COUNT)
    return -(-c // k)


def paged_kv_cache_bytes(bytes_per_token: float, context_tokens, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> float:
    """Bytes a paged KV cache holds for sequences of ``context_tokens`` (one int, or a sequence of
    ints, one per sequence) [B]: whole blocks of ``block_tokens`` tokens each, so each sequence
    wastes less than one block (the vLLM paper's bound on internal fragmentation).

    >>> paged_kv_cache_bytes(131072, [1000, 24], 16) / 131072  # 63 + 2 blocks of 16 tokens
    1040.0
    """
    b = _quantity("bytes_per_token", bytes_per_token, zero=False)
    k = _check.integer("block_tokens", block_tokens, minimum=1, maximum=MAX_COUNT)
    if isinstance(context_tokens, (list, tuple)):
        if len(context_tokens) > 10**6:
            raise ValueError(f"context_tokens must list at most 1,000,000 sequences, got {len(context_tokens)}")
        blocks = sum(paged_kv_blocks(c, k) for c in context_tokens)
    else:
        blocks = paged_kv_blocks(context_tokens, k)
    return float(blocks * k * b)


def kv_bytes_by_attention(
    layers: int,
    heads: int,
    head_dim: int,
    kv_heads: int,
    kv_lora_rank: int = 512,
    rope_head_dim: int = 64,
    bytes_per_elem: float = 2,
) -> dict:
    """KV cache per token [B] of one layer stack under MHA, GQA (``kv_heads``), MQA and MLA.

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


__all__ = [
    "ATTENTION_KINDS", "DTYPE_BYTES", "PRESETS", "LLAMA_3_8B", "LLAMA_3_70B", "MISTRAL_7B", "DEEPSEEK_V3",
    "CapacityPlan", "DecodeStep", "Latency", "MemoryBudget", "ModelConfig",
    "activation_bytes", "allreduce_time_s", "bytes_per_elem", "cached_tokens", "causal_attention_flop",
    "cost_per_million_tokens", "custom_model", "decode_ridge_batch", "decode_step", "decode_step_flop",
    "decode_step_time_s", "decode_tokens_per_s", "dense_transformer_params", "e2e_latency_s",
    "experts_touched_fraction", "get_model", "kv_bytes_by_attention", "kv_cache_bytes", "kv_cache_bytes_per_token",
    "latency", "littles_law_concurrency", "memory_budget", "mla_kv_cache_bytes_per_token", "plan_capacity",
    "prefill_flop", "prefill_time_s", "tpot_s", "weight_bytes", "LLAMA_3_1_405B", "DEFAULT_BLOCK_TOKENS",
    "paged_kv_blocks", "paged_kv_cache_bytes", "steady_batch",
]
