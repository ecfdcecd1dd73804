"""A real decoder with a KV cache, built from torch modules with random weights.

Llama-style: RMSNorm, fused QKV projection, rotary position embedding, grouped-query attention
through ``torch.nn.functional.scaled_dot_product_attention``, a fused gate-up SwiGLU MLP, an output
head. Written for speed in the decode step, which streams every weight once per token:

- one fused QKV and one fused gate-up matrix per layer (fewer, larger weight streams);
- a KV cache preallocated for the whole run (``KVCache``), written in place;
- grouped-query attention without copying K and V per query head: the ``G`` query heads that
  share a KV head are laid out as ``G`` query rows of that head (``[B, kv_heads, G, head_dim]``),
  so each cached key and value is read once;
- the weight matmuls go to cuBLAS or to a Triton kernel for skinny shapes, whichever is faster
  for that shape (``tune_linears``);
- on a GPU the whole step is captured once in a ``torch.cuda.CUDAGraph`` and replayed, so the
  ~20 small kernels per layer do not each pay a launch from Python.

Weights are random (fixed seed): timing does not depend on their values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..models import llms, transformer
from . import harness


# --------------------------------------------------------------------------------------------
# Weight matmuls: cuBLAS or a Triton kernel, per shape
# --------------------------------------------------------------------------------------------
class Linear(nn.Module):
    """``y = x @ weight^T`` without bias. ``choice[m_bucket]`` names the implementation used for
    ``m`` rows: ``None`` is cuBLAS (``F.linear``), a tuple is a Triton skinny-kernel config."""

    def __init__(self, in_features: int, out_features: int, *, device=None, dtype=None, generator=None):
        super().__init__()
        w = torch.empty(out_features, in_features, device=device, dtype=dtype)
        # Scaled normal init keeps activations O(1) through the stack.
        w.normal_(0.0, 1.0 / math.sqrt(in_features), generator=generator)
        self.weight = nn.Parameter(w, requires_grad=False)
        self.choice: dict[int, Optional[tuple]] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        cfg = self.choice.get(_m_bucket(x2.shape[0])) if self.choice else None
        if cfg is None:
            y = F.linear(x2, self.weight)
        else:
            from .serving_kernels import skinny_matmul

            y = skinny_matmul(x2, self.weight, cfg)
        return y.reshape(*shape[:-1], y.shape[-1])


def _m_bucket(m: int) -> int:
    b = 1
    while b < m:
        b *= 2
    return b


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecoderConfig:
    """Shapes of the decoder. ``from_model`` copies them from a ``ModelConfig``."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    name: str = "decoder"

    @classmethod
    def from_model(cls, m: transformer.ModelConfig) -> DecoderConfig:
        if m.attention == "mla" or m.n_routed_experts:
            raise ValueError(f"the decoder implements dense grouped-query attention models, not {m.name}")
        return cls(m.layers, m.hidden_size, m.heads, m.kv_heads, m.head_dim, m.intermediate_size, m.vocab_size, m.name)

    def model_config(self) -> transformer.ModelConfig:
        """The same architecture as a ``ModelConfig``, for the serving models' predictions."""
        return transformer.custom_model(self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate, self.vocab,
                                        name=self.name)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads


def gpu_config(layers: int = 4) -> DecoderConfig:
    """On a GPU: Llama-3-70B's layer shapes and vocabulary, cut to ``layers`` layers (4 by
    default: 5.5B parameters, 8.9 GB of weights read per decode step in bf16; fewer where the GPU's
    free memory asks for it, see ``widgets.experiments.serving.decoder_layers``). Few, wide layers
    keep the per-layer small kernels a small share of the step."""
    return DecoderConfig.from_model(llms.LLAMA_3_70B.with_layers(layers))


def cpu_config() -> DecoderConfig:
    """On a CPU: a tiny decoder (about 4M parameters) that runs in milliseconds."""
    return DecoderConfig(layers=2, hidden=256, heads=8, kv_heads=2, head_dim=32, intermediate=768, vocab=4096, name="tiny decoder")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5, *, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype), requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class Block(nn.Module):
    def __init__(self, cfg: DecoderConfig, **kw):
        super().__init__()
        gen = kw.pop("generator")
        self.cfg = cfg
        self.norm1 = RMSNorm(cfg.hidden, **kw)
        self.wqkv = Linear(cfg.hidden, (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim, generator=gen, **kw)
        self.wo = Linear(cfg.heads * cfg.head_dim, cfg.hidden, generator=gen, **kw)
        self.norm2 = RMSNorm(cfg.hidden, **kw)
        self.w_gate_up = Linear(cfg.hidden, 2 * cfg.intermediate, generator=gen, **kw)
        self.w_down = Linear(cfg.intermediate, cfg.hidden, generator=gen, **kw)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        gu = self.w_gate_up(self.norm2(x))
        i = self.cfg.intermediate
        return self.w_down(F.silu(gu[..., :i]) * gu[..., i:])


class Decoder(nn.Module):
    """Embedding, ``layers`` blocks, final norm and output head; random weights from ``seed``."""

    def __init__(self, cfg: DecoderConfig, device=None, dtype=torch.bfloat16, seed: int = 0):
        super().__init__()
        device = torch.device(device) if device is not None else harness.device()
        gen = torch.Generator(device=device).manual_seed(seed)
        kw = dict(device=device, dtype=dtype)
        self.cfg = cfg
        emb = torch.empty(cfg.vocab, cfg.hidden, **kw).normal_(0.0, 1.0, generator=gen)
        self.embed = nn.Parameter(emb, requires_grad=False)
        self.blocks = nn.ModuleList(Block(cfg, generator=gen, **kw) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, **kw)
        self.lm_head = Linear(cfg.hidden, cfg.vocab, generator=gen, **kw)
        inv = 1.0 / (500000.0 ** (torch.arange(0, cfg.head_dim, 2, device=device, dtype=torch.float32) / cfg.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.fused = False  # decode_step's small ops as Triton kernels (set by enable_fused)

    @property
    def device(self) -> torch.device:
        return self.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def rope(self, positions: torch.Tensor):
        """cos and sin tables ``[len(positions), head_dim]`` (rotate-half layout)."""
        f = torch.outer(positions.to(torch.float32), self.inv_freq)
        f = torch.cat((f, f), dim=-1)
        return f.cos().to(self.dtype), f.sin().to(self.dtype)

    def linears(self):
        for b in self.blocks:
            yield from (b.wqkv, b.wo, b.w_gate_up, b.w_down)
        yield self.lm_head


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * sin


# --------------------------------------------------------------------------------------------
# The KV cache
# --------------------------------------------------------------------------------------------
class KVCache:
    """Keys and values of ``batch`` sequences of up to ``max_tokens`` tokens, per layer:
    ``[batch, kv_heads, max_tokens, head_dim]`` each, preallocated once."""

    def __init__(self, cfg: DecoderConfig, batch: int, max_tokens: int, device=None, dtype=torch.bfloat16, fill: bool = False):
        device = torch.device(device) if device is not None else harness.device()
        shape = (batch, cfg.kv_heads, max_tokens, cfg.head_dim)
        make = (lambda: torch.randn(shape, device=device, dtype=dtype)) if fill else (lambda: torch.zeros(shape, device=device, dtype=dtype))
        self.k = [make() for _ in range(cfg.layers)]
        self.v = [make() for _ in range(cfg.layers)]
        self.batch, self.max_tokens = batch, max_tokens

    @property
    def nbytes(self) -> int:
        """Bytes of all cache tensors (what the formula predicts)."""
        return sum(t.numel() * t.element_size() for t in self.k + self.v)


# --------------------------------------------------------------------------------------------
# Forward passes
# --------------------------------------------------------------------------------------------
def _add_norm(x: torch.Tensor, residual: Optional[torch.Tensor], weight: torch.Tensor, eps: float, fused: bool) -> torch.Tensor:
    """``x += residual`` (in place), then RMSNorm of ``x``: one fused kernel or two torch ops."""
    if fused:
        from .serving_kernels import add_rmsnorm

        return add_rmsnorm(x, residual, weight, eps)
    if residual is not None:
        x.add_(residual)
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


@torch.inference_mode()
def decode_step(m: Decoder, tokens: torch.Tensor, cache: KVCache, pos: int, cos: torch.Tensor, sin: torch.Tensor,
                fused: Optional[bool] = None) -> torch.Tensor:
    """One decode step: ``tokens[B]`` at position ``pos`` attend to cache positions ``0..pos``;
    their keys and values are written at ``pos``. ``cos``/``sin`` are the ``[head_dim]`` rows for
    ``pos``. Returns the logits ``[B, vocab]``.

    ``fused`` (default: ``m.fused``) replaces the small operations by three Triton kernels
    (add + RMSNorm, RoPE + cache write, SiLU-and-mul); the result is the same."""
    fused = m.fused if fused is None else fused
    cfg = m.cfg
    b = tokens.shape[0]
    h, kvh, d, g, inter = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.group, cfg.intermediate
    eps = m.norm.eps
    x = m.embed[tokens]  # the residual stream [B, hidden], updated in place
    hn = _add_norm(x, None, m.blocks[0].norm1.weight, eps, fused)
    for i, blk in enumerate(m.blocks):
        qkv = blk.wqkv(hn)
        k_cache, v_cache = cache.k[i], cache.v[i]
        if fused:
            from .serving_kernels import rope_cache

            q = rope_cache(qkv, cos, sin, k_cache, v_cache, pos, h, kvh, d)
        else:
            qk = _rotate(qkv[:, : (h + kvh) * d].view(b, h + kvh, d), cos, sin)
            k_cache[:, :, pos] = qk[:, h:]
            v_cache[:, :, pos] = qkv[:, (h + kvh) * d :].view(b, kvh, d)
            q = qk[:, :h]
        if pos + 1 < cache.max_tokens:
            k_cache, v_cache = k_cache[:, :, : pos + 1], v_cache[:, :, : pos + 1]
        # The G query heads of each KV head become G query rows of that head: K, V read once.
        o = F.scaled_dot_product_attention(q.view(b, kvh, g, d), k_cache, v_cache)
        hn = _add_norm(x, blk.wo(o.reshape(b, h * d)), blk.norm2.weight, eps, fused)
        gu = blk.w_gate_up(hn)
        if fused:
            from .serving_kernels import silu_mul

            act = silu_mul(gu)
        else:
            act = F.silu(gu[:, :inter]) * gu[:, inter:]
        nxt = m.blocks[i + 1].norm1.weight if i + 1 < len(m.blocks) else m.norm.weight
        hn = _add_norm(x, blk.w_down(act), nxt, eps, fused)
    return m.lm_head(hn)


@torch.inference_mode()
def prefill(m: Decoder, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Process prompts ``tokens[B, P]`` from position 0, fill the cache, return the logits of the
    last position ``[B, vocab]`` (the first generated token comes from them)."""
    cfg = m.cfg
    b, p = tokens.shape
    h, kvh, d, g = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.group
    cos, sin = m.rope(torch.arange(p, device=tokens.device))
    x = m.embed[tokens]
    for i, blk in enumerate(m.blocks):
        qkv = blk.wqkv(blk.norm1(x))  # [B, P, (H + 2 KVH) D]
        qk = _rotate(qkv[..., : (h + kvh) * d].view(b, p, h + kvh, d), cos[:, None, :], sin[:, None, :])
        q = qk[:, :, :h].transpose(1, 2)  # [B, H, P, D]
        k = qk[:, :, h:].transpose(1, 2)  # [B, KVH, P, D]
        v = qkv[..., (h + kvh) * d :].view(b, p, kvh, d).transpose(1, 2)
        cache.k[i][:, :, :p] = k
        cache.v[i][:, :, :p] = v
        if g > 1:
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + blk.wo(o.transpose(1, 2).reshape(b, p, h * d))
        x = x + blk.mlp(x)
    return m.lm_head(m.norm(x[:, -1]))


# --------------------------------------------------------------------------------------------
# CUDA graphs and tuning
# --------------------------------------------------------------------------------------------
def capture(fn: Callable[[], object]):
    """Capture ``fn`` in a CUDA graph (after warm-up on a side stream); returns a callable that
    replays it. On a CPU, returns ``fn`` itself."""
    if not harness.on_gpu():
        return fn
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay


def tune_linears(m: Decoder, batches=(1, 2, 4, 8, 16, 32, 64), repeat: int = 10, enabled: Optional[bool] = None) -> dict:
    """For each weight shape and each batch bucket, time cuBLAS and every Triton skinny config
    and keep the fastest (checked against cuBLAS for correctness). Returns a JSON-able summary.
    Does nothing on a CPU (``enabled`` defaults to "on a GPU") or without Triton."""
    summary = {"used_triton": False, "errors": [], "choices": []}
    if not (harness.on_gpu() if enabled is None else enabled):
        return summary
    try:
        from .serving_kernels import CONFIGS, skinny_matmul, supports
    except Exception as exc:  # no Triton: cuBLAS everywhere
        summary["errors"].append(f"import: {exc!r}")
        return summary
    by_shape: dict[tuple, list[Linear]] = {}
    for lin in m.linears():
        by_shape.setdefault(tuple(lin.weight.shape), []).append(lin)
    for shape, lins in by_shape.items():
        w = lins[0].weight
        for bsz in batches:
            bucket = _m_bucket(bsz)
            x = torch.randn(bucket, shape[1], device=w.device, dtype=w.dtype)
            ref = F.linear(x, w)
            best_cfg, best_t = None, harness.time_fn(lambda: F.linear(x, w), warmup=2, repeat=repeat).median_s
            cublas_t = best_t
            for cfg in CONFIGS:
                if not supports(bucket, w, cfg[1]):
                    continue
                try:
                    y = skinny_matmul(x, w, cfg)
                    if not torch.allclose(y.float(), ref.float(), rtol=2e-2, atol=2e-2 * float(ref.abs().max())):
                        summary["errors"].append(f"{shape} M={bucket} {cfg}: wrong result")
                        continue
                    t = harness.time_fn(lambda: skinny_matmul(x, w, cfg), warmup=2, repeat=repeat).median_s
                except Exception as exc:  # a config that does not compile on this GPU
                    summary["errors"].append(f"{shape} M={bucket} {cfg}: {type(exc).__name__}")
                    continue
                if t < best_t:
                    best_cfg, best_t = cfg, t
            for lin in lins:
                lin.choice[bucket] = best_cfg
            summary["used_triton"] |= best_cfg is not None
            summary["choices"].append(
                dict(n=shape[0], k=shape[1], m=bucket, impl="cublas" if best_cfg is None else f"triton{list(best_cfg)}",
                     cublas_s=cublas_t, best_s=best_t, best_bytes_per_s=w.numel() * w.element_size() / best_t)
            )
    summary["errors"] = summary["errors"][:20]
    return summary


def enable_fused(m: Decoder, tol: float = 0.05) -> dict:
    """Switch ``m``'s decode step to the fused Triton kernels if they compile here and give the
    same logits as the torch path (relative to the logits' scale). Returns what happened."""
    try:
        cache_a = KVCache(m.cfg, 2, 16, device=m.device, dtype=m.dtype, fill=True)
        cache_b = KVCache(m.cfg, 2, 16, device=m.device, dtype=m.dtype)
        for ka, kb in zip(cache_a.k + cache_a.v, cache_b.k + cache_b.v):
            kb.copy_(ka)
        tokens = torch.arange(2, device=m.device)
        cos, sin = m.rope(torch.tensor([9], device=m.device))
        ref = decode_step(m, tokens, cache_a, 9, cos[0], sin[0], fused=False).float()
        got = decode_step(m, tokens, cache_b, 9, cos[0], sin[0], fused=True).float()
        err = float((got - ref).abs().max() / ref.abs().max())
        cache_err = max(float((a - b).abs().max()) for a, b in zip(cache_a.k + cache_a.v, cache_b.k + cache_b.v))
    except Exception as exc:  # Triton missing or a kernel that does not compile here
        m.fused = False
        return {"fused": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    m.fused = err <= tol and cache_err <= tol
    return {"fused": m.fused, "max_rel_logit_error": err, "max_cache_error": cache_err}
