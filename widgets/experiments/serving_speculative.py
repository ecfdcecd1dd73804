"""Speculative decoding, measured as a mechanism: what a draft step and a verification step cost.

Speculative decoding (Leviathan et al. 2023; Chen et al. 2023) lets a cheap draft propose ``k``
tokens that the target checks in ONE forward pass over ``k + 1`` tokens. Its speed-up is
``E[tokens] / (k c + v)`` (``widgets.models.serving.speculative_speedup``): the acceptance rate
``a`` sets ``E``, and two costs, both measurable without a trained model pair, set the rest:

- ``v(k)``: the target's pass over ``k + 1`` new tokens (writing their keys and values, causal
  attention to the cache and to each other, logits for all of them) over one plain decode step;
- ``c``: one step of the draft over one decode step of the target.

The decoders here have random weights (the device has no network and no trained pair), so their
acceptance rate means nothing and is not measured: the chapter computes the speed-up for a range
of acceptance rates from the measured ``c`` and ``v`` (a *calibrated* prediction: the costs are
measured, the acceptance rate is the reader's). ``v`` itself is also predicted from the roofline
(:func:`widgets.models.serving.speculative_verify_time_s`: the linear layers at ``B (k + 1)``
tokens, the weights and the cached keys and values read once), a prediction that fails if the
extra tokens cost more than their FLOP, or if the implementation reads the weights more than once.
``v`` is measured over the target's 1-token pass of the same (unfused) extend code, ``c`` over the
target's plain decode step (``decode_s``, where recorded), the step the roofline's ``c`` divides by;
:func:`measured_speedups` re-expresses ``v`` over that decode step too, the step plain decoding
would run.

Two drafts of the target's vocabulary: ``"mtp"``, one layer of the target's own shapes and its
output head (the shape of DeepSeek-V3's multi-token-prediction module), and ``"small"``, two layers
of Llama-3-8B's shapes with its head. On a CPU everything is the tiny decoder scaled down.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Optional

import torch
import torch.nn.functional as F

from ..models import llms
from . import harness
from .serving_decoder import Decoder, DecoderConfig, KVCache, _rotate, capture

GPU_VERIFY_TOKENS = (1, 2, 3, 5, 9, 17)  # k + 1 for k = 0, 1, 2, 4, 8, 16
CPU_VERIFY_TOKENS = (1, 2, 5)
GPU_BATCHES = (1, 16)
CPU_BATCHES = (1,)
GPU_CONTEXT = 1024
CPU_CONTEXT = 128


@torch.inference_mode()
def extend_step(m: Decoder, tokens: torch.Tensor, cache: KVCache, pos: int, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
    """The target's verification pass: ``tokens[B, T]`` at positions ``pos..pos+T-1`` attend to the
    cache ``0..pos-1`` and causally to each other; their keys and values are written at
    ``pos..pos+T-1``. ``cos``/``sin`` are ``[T, head_dim]``; ``mask`` is :func:`verify_mask`.
    Returns the logits of every position ``[B, T, vocab]`` (speculative decoding needs all of them).

    The grouped-query layout is the decode step's: the ``G`` query heads of a KV head become
    ``G * T`` query rows of that head, so each cached key and value is read once."""
    cfg = m.cfg
    b, t = tokens.shape
    h, kvh, d, g, inter = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.group, cfg.intermediate
    x = m.embed[tokens]  # [B, T, hidden]
    for i, blk in enumerate(m.blocks):
        qkv = blk.wqkv(blk.norm1(x))  # [B, T, (H + 2 KVH) D]
        qk = _rotate(qkv[..., : (h + kvh) * d].view(b, t, h + kvh, d), cos[:, None, :], sin[:, None, :])
        k_cache, v_cache = cache.k[i], cache.v[i]
        k_cache[:, :, pos : pos + t] = qk[:, :, h:].transpose(1, 2)
        v_cache[:, :, pos : pos + t] = qkv[..., (h + kvh) * d :].view(b, t, kvh, d).transpose(1, 2)
        q = qk[:, :, :h].reshape(b, t, kvh, g, d).permute(0, 2, 3, 1, 4).reshape(b, kvh, g * t, d)
        o = F.scaled_dot_product_attention(q, k_cache[:, :, : pos + t], v_cache[:, :, : pos + t], attn_mask=mask)
        o = o.view(b, kvh, g, t, d).permute(0, 3, 1, 2, 4).reshape(b, t, h * d)
        x = x + blk.wo(o)
        gu = blk.w_gate_up(blk.norm2(x))
        x = x + blk.w_down(F.silu(gu[..., :inter]) * gu[..., inter:])
    return m.lm_head(m.norm(x))


def verify_mask(cfg: DecoderConfig, pos: int, tokens: int, device=None) -> torch.Tensor:
    """Boolean mask ``[G * T, pos + T]`` of :func:`extend_step`: row ``r`` is new token
    ``r % T`` (of query head ``r // T`` of its group), which sees cache positions ``<= pos + r % T``."""
    t = torch.arange(tokens, device=device)
    cols = torch.arange(pos + tokens, device=device)
    m = cols[None, :] <= (pos + t)[:, None]
    return m.repeat(cfg.group, 1)


def time_extend_step_timing(m: Decoder, batch: int, context_tokens: int, tokens: int, graph: bool = True,
                            repeat: int = 20) -> harness.Timing:
    """Timing of one verification pass of ``tokens`` new tokens per sequence, ``batch`` sequences
    whose caches end up holding ``context_tokens`` tokens (``tokens = 1`` is a decode step written
    the same way)."""
    if not 1 <= tokens <= context_tokens:
        raise ValueError(f"tokens must be in [1, context_tokens={context_tokens}], got {tokens!r}")
    cache = KVCache(m.cfg, batch, context_tokens, device=m.device, dtype=m.dtype)
    gen = torch.Generator(device=m.device).manual_seed(batch * 1000 + tokens)
    toks = torch.randint(0, m.cfg.vocab, (batch, tokens), device=m.device, generator=gen)
    pos = context_tokens - tokens
    cos, sin = m.rope(torch.arange(pos, pos + tokens, device=m.device))
    mask = verify_mask(m.cfg, pos, tokens, m.device)

    def step():
        return extend_step(m, toks, cache, pos, cos, sin, mask)

    fn = capture(step) if graph else step
    threads = torch.get_num_threads()
    if not harness.on_gpu():
        torch.set_num_threads(1)  # as the decode steps are timed on a CPU (serving._one_cpu_thread)
    try:
        t = harness.time_fn(fn, warmup=3, repeat=repeat)
    finally:
        torch.set_num_threads(threads)
    fn = cache = None  # free (rebinding: step() reads cache)
    if harness.on_gpu():
        torch.cuda.empty_cache()
    return t


@dataclass(frozen=True)
class DraftCost(harness.Result):
    """One draft decoder's decode step, per batch (``None`` where a point failed, with the error)."""

    name: str
    config: dict
    params: int
    step_s: list
    step_min_s: list
    step_max_s: list
    note: str = ""


@dataclass(frozen=True)
class SpeculativeCosts(harness.Result):
    """The target's verification passes and its drafts' steps, measured on one device.

    ``verify_s[i][j]``: ``batches[i]`` sequences, ``verify_tokens[j]`` new tokens each (the first is
    1: a plain decode step written as the verification pass is), caches ending at
    ``context_tokens`` tokens. ``decode_s[i]``: the target's own fused decode step
    (``serving_decoder.decode_step``, as the rest of the chapter times it) at the same point."""

    target: dict
    target_params: int
    batches: list
    context_tokens: int
    verify_tokens: list
    verify_s: list
    verify_min_s: list
    verify_max_s: list
    decode_s: list
    drafts: dict[str, DraftCost]
    graphs: bool
    dtype: str
    device: str
    errors: list


def _timed(fn, errors: list, what: str) -> Optional[harness.Timing]:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - recorded with its reason, the other points still run
        errors.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
        if harness.on_gpu():
            torch.cuda.empty_cache()
        return None


def draft_configs(target: DecoderConfig) -> dict:
    """The drafts measured against ``target``: ``"mtp"`` (one layer of the target's shapes and its
    head) and, on a GPU, ``"small"`` (two layers of Llama-3-8B's shapes, same vocabulary as
    Llama-3-70B). On a CPU the ``"small"`` draft is the tiny decoder cut to one layer, narrower."""
    mtp = replace(target, layers=1, name=f"{target.name.split(' (')[0]} (1 layer: an MTP-like draft)")
    if harness.on_gpu():
        small = DecoderConfig.from_model(llms.LLAMA_3_8B.with_layers(2))
        if small.vocab != target.vocab:
            small = replace(small, vocab=target.vocab)
    else:
        small = replace(target, layers=1, hidden=128, heads=4, kv_heads=1, head_dim=32, intermediate=384, name="tiny draft")
    return {"mtp": mtp, "small": small}


def measure_speculative(decoder=None, batches=None, verify_tokens=None, context_tokens: Optional[int] = None,
                        repeat: int = 20) -> SpeculativeCosts:
    """Time the target's verification passes (``verify_tokens`` new tokens at each of ``batches``)
    and each draft's decode step (:func:`draft_configs`), on this device.

    ``decoder`` is ``(Decoder, tuning)`` as :func:`widgets.experiments.serving.build_decoder` returns
    it (built here if None). Every point fails soft: a failed one is ``None`` and its error is in
    ``errors``."""
    from .serving import _dtype, build_decoder, time_decode_step_timing

    on_gpu = harness.on_gpu()
    m, _ = decoder if decoder is not None else build_decoder()
    batches = list(batches or (GPU_BATCHES if on_gpu else CPU_BATCHES))
    ts = list(verify_tokens or (GPU_VERIFY_TOKENS if on_gpu else CPU_VERIFY_TOKENS))
    ctx = int(context_tokens or (GPU_CONTEXT if on_gpu else CPU_CONTEXT))
    errors: list = []
    v_med, v_min, v_max, dec = [], [], [], []
    for b in batches:
        row = [_timed(lambda: time_extend_step_timing(m, b, ctx, t, on_gpu, repeat), errors, f"verify b={b} T={t}") for t in ts]
        v_med.append([r.median_s if r else None for r in row])
        v_min.append([r.min_s if r else None for r in row])
        v_max.append([r.max_s if r else None for r in row])
        d = _timed(lambda: time_decode_step_timing(m, b, ctx, on_gpu, repeat), errors, f"decode b={b}")
        dec.append(d.median_s if d else None)
    drafts = {}
    for name, cfg in draft_configs(m.cfg).items():
        try:
            dm = Decoder(cfg, device=m.device, dtype=_dtype(), seed=1)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"draft {name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        row = [_timed(lambda: time_decode_step_timing(dm, b, ctx, on_gpu, repeat), errors, f"draft {name} b={b}") for b in batches]
        drafts[name] = DraftCost(name=cfg.name, config=asdict(cfg), params=dm.n_params(), step_s=[r.median_s if r else None for r in row],
                                 step_min_s=[r.min_s if r else None for r in row], step_max_s=[r.max_s if r else None for r in row],
                                 note="unfused decode step (no Triton small-op kernels), CUDA graph on a GPU")
        dm = None
        if on_gpu:
            torch.cuda.empty_cache()
    from .serving import model_dtype

    return SpeculativeCosts(target=asdict(m.cfg), target_params=m.n_params(), batches=batches, context_tokens=ctx, verify_tokens=ts,
                            verify_s=v_med, verify_min_s=v_min, verify_max_s=v_max, decode_s=dec, drafts=drafts, graphs=on_gpu,
                            dtype=model_dtype(m.dtype), device=harness.device_name(), errors=errors)


# --------------------------------------------------------------------------------------------
# From the measured costs to the chapter's numbers (used by the chapter and the accuracy ledger)
# --------------------------------------------------------------------------------------------
def verify_ratios(costs, batch_index: int = 0) -> list:
    """``v(k)``: each verification pass over the same pass with one token (``verify_tokens[0]``,
    which must be 1), at ``batches[batch_index]``; None where a point is missing."""
    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    row = c.verify_s[batch_index]
    if c.verify_tokens[0] != 1 or row[0] is None:
        return [None] * len(row)
    return [None if t is None else t / row[0] for t in row]


def draft_ratio(costs, draft: str = "mtp", batch_index: int = 0) -> Optional[float]:
    """``c``: one decode step of ``draft`` over one decode step of the target (``decode_s``), at
    ``batches[batch_index]``: the same ratio as :func:`predicted_draft_ratio`. A record without the
    target's decode step falls back to its single-token extend pass (``verify_s[.][0]``)."""
    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    d = c.drafts.get(draft)
    dec = c.decode_s[batch_index] if c.decode_s else None
    base = dec if dec else (c.verify_s[batch_index][0] if c.verify_tokens[0] == 1 else None)
    if d is None or base is None or d.step_s[batch_index] is None:
        return None
    return d.step_s[batch_index] / base


def measured_speedups(costs, acceptance_rates, draft: str = "mtp", batch_index: int = 0) -> dict:
    """For each acceptance rate, the speed-up at each measured draft length ``k = T - 1 >= 1``
    from the measured ``c`` and ``v(k)`` (calibrated), and the best ``k`` among them:
    ``{a: {"k": [...], "speedup": [...], "best_k": k, "best": s}}``. The baseline is the target's
    plain decode step (``decode_s``, where recorded), not the slower 1-token extend pass: ``c`` is
    already over it (:func:`draft_ratio`), ``v`` is rescaled by that pass over the decode step."""
    from ..models import serving as sv

    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    v = verify_ratios(c, batch_index)
    cr = draft_ratio(c, draft, batch_index)
    one, dec = c.verify_s[batch_index][0], (c.decode_s[batch_index] if c.decode_s else None)
    scale = one / dec if (one is not None and dec) else 1.0
    v = [None if x is None else x * scale for x in v]
    out = {}
    for a in acceptance_rates:
        ks, ss = [], []
        for t, vk in zip(c.verify_tokens, v):
            if t < 2 or vk is None or cr is None:
                continue
            ks.append(t - 1)
            ss.append(sv.speculative_speedup(a, t - 1, cr, vk))
        i = max(range(len(ss)), key=ss.__getitem__) if ss else None
        out[a] = {"k": ks, "speedup": ss, "best_k": ks[i] if i is not None else None, "best": ss[i] if i is not None else None}
    return out


def predicted_verify_ratios(costs, gpu: str, batch_index: int = 0, hbm_bytes_per_s: Optional[float] = None,
                            peak_flop_per_s: Optional[float] = None) -> list:
    """``v(k)`` from the roofline (:func:`widgets.models.serving.speculative_verify_time_s` with the
    catalog's bandwidth and peak for ``gpu``, or the given ones: measured ceilings make it
    calibrated), for each measured ``verify_tokens``."""
    from ..models import serving as sv

    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    m = DecoderConfig(**c.target).model_config()
    b = c.batches[batch_index]
    kw = dict(hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    t0 = sv.speculative_verify_time_s(m, gpu, b, c.context_tokens, 0, c.dtype, c.dtype, **kw)
    return [sv.speculative_verify_time_s(m, gpu, b, c.context_tokens, t - 1, c.dtype, c.dtype, **kw) / t0 for t in c.verify_tokens]


def predicted_draft_ratio(costs, gpu: str, draft: str = "mtp", batch_index: int = 0) -> Optional[float]:
    """``c`` from the roofline: the draft's decode step over the target's (:func:`widgets.models.serving.decode_step`)."""
    from ..models import serving as sv

    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    if draft not in c.drafts:
        return None
    b, ctx = c.batches[batch_index], c.context_tokens
    target = DecoderConfig(**c.target).model_config()
    d = DecoderConfig(**c.drafts[draft].config).model_config()
    return sv.decode_step(d, gpu, b, ctx, c.dtype, c.dtype).time_s / sv.decode_step(target, gpu, b, ctx, c.dtype, c.dtype).time_s


def accuracy_rows(costs, gpu: Optional[str], device: str) -> list:
    """The speculative-decoding comparisons of a record (``results["speculative"]``): the measured
    verification ratio ``v(k)`` and draft ratio ``c`` against the roofline's (predictions: catalog
    bandwidth and peak only). Empty for a record without the experiment, a failed one, or a device
    the catalog lacks (no datasheet to predict from)."""
    from ..accuracy import Row

    if not costs or gpu is None or (isinstance(costs, dict) and "error" in costs) or isinstance(costs, harness.Failed):
        return []
    c = costs if isinstance(costs, SpeculativeCosts) else SpeculativeCosts.from_record(costs)
    rows = []
    for i, b in enumerate(c.batches):
        meas, pred = verify_ratios(c, i), predicted_verify_ratios(c, gpu, i)
        for j, t in enumerate(c.verify_tokens):
            if t in (5, 17) and meas[j] is not None:
                rows.append(Row("serving", f"verification pass of {t} tokens over 1 token, batch {b}, {c.context_tokens}-token caches",
                                "roofline, datasheet bandwidth and peak (weights read once for all tokens)", pred[j], meas[j], "x", "prediction",
                                device, "falsified if the extra tokens cost more than their FLOP and their keys and values"))
    for name in ("mtp", "small"):
        meas, pred = draft_ratio(c, name), predicted_draft_ratio(c, gpu, name)
        if meas is not None and pred is not None:
            rows.append(Row("serving", f"draft step over target step ({name} draft), batch {c.batches[0]}",
                            "roofline of both decoders, datasheet bandwidth and peak", pred, meas, "x", "prediction", device,
                            "a small draft's fixed per-step costs (launches, small kernels) weigh more than its bytes"))
    return rows
