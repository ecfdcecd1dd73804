"""Training-memory experiments: one real training step of a GPT-style decoder (causal), bucket by bucket.

- ``GPT``: a decoder-only transformer written out so that what autograd keeps is exactly what
  Korthikanti et al. 2022 count (LayerNorm, attention with a materialized softmax and dropout, a 4h
  GELU MLP, dropout masks), in 16-bit (bf16 where the device has bf16 tensor cores or on a CPU,
  else fp16). On a GPU: 2048 wide, 16 heads, 2048 tokens, 20 layers (1.1e9 parameters), fewer
  layers where free memory is short; on a CPU: a tiny one (the method, not a GPU's numbers).
- ``MixedAdamW``: AdamW in the layout of the ZeRO paper: 16-bit weights and gradients in the
  model, an fp32 master copy and two fp32 moments in the optimizer (2 + 2 + 12 bytes per
  parameter), updated one parameter at a time (the update is ``torch.optim.AdamW``'s, checked
  against it in tests/test_training_memory.py).
- ``measure_step``: the allocator's count (``torch.cuda.memory_allocated``) after the weights,
  after the optimizer state, after the forward pass (activations) and after the backward pass
  (gradients), and the peak, for each recomputation mode (none, selective, full; with
  ``torch.utils.checkpoint``) and micro-batch; beside it the bytes autograd saved, counted by
  ``torch.autograd.graph.saved_tensors_hooks`` (the only count on a CPU). Step time and MFU.
- ``measure_oom``: grow the micro-batch until the allocator fails (GPU only, capped), catch
  ``torch.OutOfMemoryError``, and record what its message names against what held the memory.
- ``measure_fragmentation``: in a fresh process without and with ``expandable_segments`` (GPU
  only): allocations of growing size, each freed before the next (what the allocator keeps cached:
  harmless, released before an OOM), then fragmentation proper under a 4 GiB cap: segments pinned
  by small live tensors, and one request larger than any free gap (does it fail?).
- ``measure_stock``: the same shape built from ``torch.nn.TransformerEncoderLayer`` (causal SDPA,
  no dropout) with ``torch.optim.AdamW``: a model not written to match the count, bucket by bucket.
- ``measure_context``: device memory outside PyTorch's allocator in a fresh process.

Every step is fail-soft (``harness.attempt``): a failed one is recorded with its error.
"""

from __future__ import annotations

import functools
import gc
import math
import re
from dataclasses import dataclass
from typing import Optional, Union

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from .. import dtypes
from ..accuracy import Row
from ..hardware import catalog_name_for, get_gpu
from ..models import training_memory as model
from . import harness

CPU_SHAPE = dict(hidden=64, heads=4, seq=32, vocab=256, layers=2)
BATCHES = (1, 2, 4)  # the largest is widgets.doctor.TRAINING_MAX_BATCH
MODES = model.RECOMPUTE  # ("none", "selective", "full")
DROPOUT = 0.1
OOM_MAX_TRIALS = 10
OOM_MAX_BATCH = 256
CPU_NOTE = "CPU: a tiny model; no allocator counts (the saved-tensor hooks count activations); times show the method only"


# --------------------------------------------------------------------------------------------
# The model: every op chosen so that autograd saves what the paper counts
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _causal_mask(s: int, device: str):
    """True above the diagonal: the future a decoder may not see (one s x s bool tensor per shape,
    shared by every layer; masked_fill keeps it for backward, s^2 bytes once, not per layer)."""
    return torch.ones(s, s, dtype=torch.bool, device=device).triu_(1)


def _attention_core(q, k, v, p: float, training: bool):
    """Causal softmax(Q K^T / sqrt(d)) with dropout, times V: saves Q, K (2+2 sbh), the softmax
    output (2 a s^2 b), the dropout mask (a s^2 b) and its output with V (2 a s^2 b + 2 sbh). The
    causal mask is filled in place into the scores (which nothing saves): it adds no activation."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    scores.masked_fill_(_causal_mask(q.shape[-2], str(q.device)), float("-inf"))
    probs = F.dropout(torch.softmax(scores, dim=-1), p, training)
    return torch.matmul(probs, v)


class Layer(nn.Module):
    """One GPT layer (pre-LayerNorm): 12 h^2 + 13 h parameters."""

    def __init__(self, hidden: int, heads: int, p: float):
        super().__init__()
        self.h, self.a, self.p = hidden, heads, p
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.selective = False

    def forward(self, x):
        b, s, h = x.shape
        # one contiguous (3, b, a, s, d) block: Q, K, V are contiguous slices of it, so the
        # matmuls save views of one 6 sbh buffer and copy nothing
        qkv = self.qkv(F.layer_norm(x, (h,), self.ln1.weight, self.ln1.bias))
        qkv = qkv.view(b, s, 3, self.a, h // self.a).permute(2, 0, 3, 1, 4).contiguous()
        q, k, v = qkv[0], qkv[1], qkv[2]
        if self.selective and self.training:
            # use_reentrant=True on purpose: its saved inputs go through saved_tensors_hooks, so
            # the SavedBytes count sees what checkpointing keeps (the non-reentrant variant keeps
            # them outside the hooks); the model needs neither torch.autograd.grad nor kwargs
            core = torch.utils.checkpoint.checkpoint(_attention_core, q, k, v, self.p, True, use_reentrant=True)
        else:
            core = _attention_core(q, k, v, self.p, self.training)
        attn = self.proj(core.transpose(1, 2).reshape(b, s, h))
        x = x + F.dropout(attn, self.p, self.training)
        y = self.fc2(F.gelu(self.fc1(F.layer_norm(x, (h,), self.ln2.weight, self.ln2.bias))))
        return x + F.dropout(y, self.p, self.training)


class GPT(nn.Module):
    """Token and position embeddings (with dropout), ``layers`` layers, a final LayerNorm and an
    untied output head; the loss is an fp32 cross-entropy (as Korthikanti et al. count it)."""

    def __init__(self, hidden: int, heads: int, seq: int, vocab: int, layers: int, p: float = DROPOUT):
        super().__init__()
        self.p, self.recompute = p, "none"
        self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.layers = nn.ModuleList(Layer(hidden, heads, p) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)

    def set_recompute(self, mode: str) -> None:
        self.recompute = mode
        for layer in self.layers:
            layer.selective = mode == "selective"

    def forward(self, idx, targets):
        b, s = idx.shape
        x = F.dropout(self.tok(idx) + self.pos.weight[:s], self.p, self.training)
        for layer in self.layers:
            if self.recompute == "full" and self.training:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=True)
            else:
                x = layer(x)
        logits = self.head(F.layer_norm(x, (x.shape[-1],), self.ln_f.weight, self.ln_f.bias))
        return F.cross_entropy(logits.float().view(b * s, -1), targets.view(b * s))


class MixedAdamW:
    """AdamW with fp32 master weights and moments for a 16-bit model (12 bytes per parameter),
    stepping one parameter at a time (a transient of one parameter's fp32 gradient).

    For an fp16 model it takes a loss scaler (``scaler``: a ``torch.amp.GradScaler``): the loss is
    scaled before ``backward`` (:meth:`scale`) so that small gradients do not flush to zero in fp16,
    and :func:`optimizer_step` hands the step to the scaler, which checks the 16-bit gradients for
    inf/NaN and sets ``grad_scale`` and ``found_inf`` here (PyTorch's contract for optimizers that
    unscale inside their own step, ``_step_supports_amp_scaling``, as its fused Adam does): a step
    with an overflow is skipped, the others divide each fp32 gradient transient by the scale. The
    scaler keeps one scale and one growth counter, nothing per parameter (Micikevicius et al. 2018).
    """

    _step_supports_amp_scaling = True  # GradScaler.step: check infs, set grad_scale/found_inf, call step()

    def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.95), eps: float = 1e-8, weight_decay: float = 0.1, scaler=None):
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps, self.wd, self.t = lr, betas, eps, weight_decay, 0
        self.master = [p.detach().float().clone() for p in self.params]
        self.m = [torch.zeros_like(w) for w in self.master]
        self.v = [torch.zeros_like(w) for w in self.master]
        self.scaler = scaler
        self.skipped = 0  # steps skipped by the loss scaler (an inf/NaN gradient)

    @property
    def param_groups(self) -> list:
        """What ``torch.amp.GradScaler`` reads to find the gradients (one group, as an optimizer has)."""
        return [{"params": self.params}]

    def scale(self, loss):
        """The loss to call ``backward`` on: scaled by the loss scaler, if there is one."""
        return loss if self.scaler is None else self.scaler.scale(loss)

    @torch.no_grad()
    def step(self) -> None:
        scale = getattr(self, "grad_scale", None)  # set by GradScaler.step for this call only
        found_inf = getattr(self, "found_inf", None)
        if found_inf is not None and float(found_inf) > 0:
            self.skipped += 1
            return  # an overflow in the scaled gradients: skip the update (the scaler lowers the scale)
        self.t += 1
        b1, b2 = self.betas
        bc1, bc2 = 1 - b1**self.t, 1 - b2**self.t
        for p, w, m, v in zip(self.params, self.master, self.m, self.v):
            if p.grad is None:
                continue
            g = p.grad.float()
            if scale is not None:
                g.div_(scale)
            w.mul_(1 - self.lr * self.wd)
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / math.sqrt(bc2)).add_(self.eps)
            w.addcdiv_(m, denom, value=-self.lr / bc1)
            p.copy_(w)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


def optimizer_step(opt: MixedAdamW) -> None:
    """One optimizer step; with a loss scaler: ``scaler.step`` (inf check, then ``opt.step``) and
    ``scaler.update`` (halve the scale after an overflow, double it after 2000 clean steps)."""
    if opt.scaler is None:
        opt.step()
    else:
        opt.scaler.step(opt)
        opt.scaler.update()


def loss_scaler(dtype):
    """A ``torch.amp.GradScaler`` for an fp16 model (its default dynamic scaling), None for bf16
    or fp32 (their exponent range needs none)."""
    if dtype != torch.float16:
        return None
    return torch.amp.GradScaler(harness.device().type)


# --------------------------------------------------------------------------------------------
# Counting bytes
# --------------------------------------------------------------------------------------------
class SavedBytes:
    """Bytes of the tensors autograd saves for the backward pass while the ``with`` block runs,
    each storage counted once, parameters left out (they are the weights bucket)."""

    def __init__(self, params=()):
        self.skip = {p.untyped_storage().data_ptr() for p in params}
        self.seen: dict = {}

    def _pack(self, t):
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in self.skip:
            self.seen[ptr] = st.nbytes()
        return t

    def __enter__(self):
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    @property
    def nbytes(self) -> int:
        return int(sum(self.seen.values()))


def _allocated() -> int:
    return int(torch.cuda.memory_allocated()) if harness.on_gpu() else 0


def _tensor_bytes(tensors) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


def _free() -> None:
    gc.collect()
    if harness.on_gpu():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _dtype() -> torch.dtype:
    cap = harness.capabilities()
    if cap.gpu and not cap.tensor_cores("bf16"):
        return torch.float16  # a T4: no bf16 tensor cores (memory is the same: 2 bytes)
    return torch.bfloat16  # bf16 on the CPU too: the byte counts are those of a GPU run


def choose_shape(cap=None) -> dict:
    """The model's shape for this device: on a GPU the doctor's rule (``widgets.doctor.training_shape``:
    as many of ``doctor.TRAINING_SHAPE``'s layers as fit beside the largest micro-batch in 60% of free memory);
    on a CPU ``CPU_SHAPE``. ``ValueError`` where not even one layer fits."""
    from .. import doctor

    cap = cap or harness.capabilities()
    if not cap.gpu:
        return dict(CPU_SHAPE)
    shape = doctor.training_shape(cap.free_bytes)
    if shape is None:
        raise ValueError(f"not enough free GPU memory for the training experiment ({cap.free_bytes / 2**30:.1f} GiB free)")
    return shape


def _batch(shape: dict, micro_batch: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, shape["vocab"], (micro_batch, shape["seq"] + 1), generator=gen).to(harness.device())
    return idx[:, :-1].contiguous(), idx[:, 1:].contiguous()


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepPoint(harness.Result):
    """One (recompute mode, micro-batch) point: bytes [B] above the state after the forward pass
    (``activations_bytes``), after the backward pass (``gradients_bytes``), the peak above the
    state during forward + backward (``peak_bytes``; allocator counts, null on a CPU), the bytes
    autograd saved (``saved_bytes``, hooks, both devices), and the step time [s]."""

    recompute: str
    micro_batch: int
    saved_bytes: int
    activations_bytes: Optional[int] = None
    gradients_bytes: Optional[int] = None
    peak_bytes: Optional[int] = None
    reserved_bytes: Optional[int] = None
    step_s: Optional[float] = None
    step_min_s: Optional[float] = None
    step_max_s: Optional[float] = None
    repeat: int = 0
    fwd_bwd_s: Optional[float] = None
    fwd_bwd_min_s: Optional[float] = None


@dataclass(frozen=True)
class StepResult(harness.Result):
    """The training step: the model's shape, its parameter counts, the state buckets [B] measured
    by the allocator (null on a CPU) and by tensor sizes, and one ``StepPoint`` per mode and batch.
    In fp16 (a GPU without bf16 tensor cores): ``loss_scaler`` names the scaler, ``scaler_bytes`` is
    what it holds on the device [B] (allocator), ``loss_scale`` its last scale and ``skipped_steps``
    the steps it skipped for an inf/NaN gradient (empty, null, null, 0 in bf16)."""

    device: str
    dtype: str
    shape: dict
    params: int
    matmul_params: int
    weights_bytes: Optional[int]
    optimizer_bytes: Optional[int]
    weights_tensor_bytes: int
    optimizer_tensor_bytes: int
    gradients_tensor_bytes: int
    outside_allocator_bytes: Optional[int]
    peak_flop_per_s: Optional[float]
    gpu: Optional[str]
    points: tuple[StepPoint, ...]
    note: str = ""
    optimizer_step_s: Optional[float] = None
    layer_matmul_params: Optional[int] = None
    loss_scaler: str = ""
    scaler_bytes: Optional[int] = None
    loss_scale: Optional[float] = None
    skipped_steps: int = 0


@dataclass(frozen=True)
class OomResult(harness.Result):
    """Anatomy of an out-of-memory error: the largest micro-batch that ran, the first that failed,
    the error's first line and the bytes it says it tried to allocate, against what the allocator
    held at that moment (state and activations) and the capacity the run started with [B]."""

    largest_ok_batch: int
    failed_batch: Optional[int]
    message: str
    tried_bytes: Optional[int]
    held_bytes: Optional[int]
    state_bytes: int
    capacity_bytes: int
    trials: tuple[int, ...]
    reserved_minus_allocated_bytes: Optional[int] = None
    note: str = ""
    summary: str = ""


@dataclass(frozen=True)
class StockPoint(harness.Result):
    """One micro-batch of the stock model: bytes above the state after the forward pass
    (allocator) and saved for backward (hooks) [B], and the peak above the state [B]."""

    micro_batch: int
    saved_bytes: int
    activations_bytes: Optional[int] = None
    peak_bytes: Optional[int] = None


@dataclass(frozen=True)
class StockResult(harness.Result):
    """A model written without this book in mind: ``torch.nn.TransformerEncoderLayer`` (pre-norm,
    GELU, dropout 0, causal ``scaled_dot_product_attention`` inside ``nn.MultiheadAttention``) in
    16-bit with ``torch.optim.AdamW(foreach=True)`` (its moments in the parameters' dtype: the
    pure-16-bit layout, no master copy). Each bucket by the allocator [B] (null on a CPU)."""

    device: str
    dtype: str
    shape: dict
    params: int
    sdpa_backend: str
    weights_bytes: Optional[int]
    gradients_bytes: Optional[int]
    optimizer_bytes: Optional[int]
    points: tuple[StockPoint, ...]
    note: str = ""


@dataclass(frozen=True)
class ContextResult(harness.Result):
    """Device memory not held by PyTorch's allocator in a fresh process [B]: after CUDA starts
    (the context) and after one bf16 matmul (plus cuBLAS's handle and kernels), less what was in
    use on the device before it started (``used_before_bytes``: the measuring process and any other)."""

    total_bytes: int
    after_init_bytes: int
    after_matmul_bytes: int
    used_before_bytes: Optional[int] = None


@dataclass(frozen=True)
class AllocatorRun(harness.Result):
    """The caching allocator's counts [B] after a run of growing allocations, each freed before
    the next (a batch whose size changes every step), in one fresh process."""

    expandable_segments: bool
    allocated_bytes: int
    reserved_bytes: int
    peak_reserved_bytes: int
    largest_bytes: int
    pinned_ok: Optional[bool] = None
    pinned_error: str = ""
    pinned_cap_bytes: Optional[int] = None
    pinned_request_bytes: Optional[int] = None
    pinned_live_bytes: Optional[int] = None
    pinned_reserved_bytes: Optional[int] = None
    inactive_split_bytes: Optional[int] = None
    alloc_retries: Optional[int] = None
    pinned_segments: Optional[int] = None  # segments of exactly the block size before the request (the pinned ones)


@dataclass(frozen=True)
class FragmentationResult(harness.Result):
    """The same run without and with ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``."""

    default: AllocatorRun
    expandable: AllocatorRun
    sizes_mib: tuple[int, ...]


@dataclass(frozen=True)
class TrainingMemoryResults(harness.Result):
    step: Union[StepResult, harness.Failed, None] = None
    oom: Union[OomResult, harness.Failed, None] = None
    fragmentation: Union[FragmentationResult, harness.Failed, None] = None
    stock: Union[StockResult, harness.Failed, None] = None
    context: Union[ContextResult, harness.Failed, None] = None


RESULTS = TrainingMemoryResults


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------
def build(shape: dict, dtype=None, seed: int = 0):
    """The GPT of ``shape`` on this device in ``dtype`` and its optimizer, with the allocator's
    count after each: ``(gpt, opt, weights_bytes, optimizer_bytes)`` (counts None on a CPU)."""
    dtype = dtype or _dtype()
    torch.manual_seed(seed)
    base = _allocated()
    with torch.device(harness.device()):  # initialise on the device: no 4.5 GB fp32 host copy
        gpt = GPT(**shape).to(dtype=dtype)
    gpt.train()
    after_w = _allocated()
    opt = MixedAdamW(gpt.parameters(), scaler=loss_scaler(dtype))
    after_o = _allocated()
    on = harness.on_gpu()
    return gpt, opt, (after_w - base if on else None), (after_o - after_w if on else None)


def scaler_bytes(opt: MixedAdamW) -> Optional[int]:
    """Bytes the loss scaler holds on the device after its first use (its scale and growth
    counter, made lazily), by the allocator; None without a scaler or on a CPU."""
    if opt.scaler is None or not harness.on_gpu():
        return None
    before = _allocated()
    probe = opt.scaler.scale(torch.ones((), device=harness.device()))
    del probe
    return _allocated() - before


def train_step(gpt: GPT, opt: MixedAdamW, idx, targets, counter: Optional[SavedBytes] = None) -> dict:
    """One step (forward, backward, AdamW), with the allocator's count after each phase [B]."""
    opt.zero_grad()
    harness.synchronize()
    m0 = _allocated()
    if harness.on_gpu():
        torch.cuda.reset_peak_memory_stats()
    if counter is not None:
        with counter:
            loss = gpt(idx, targets)
    else:
        loss = gpt(idx, targets)
    m_fwd = _allocated()
    opt.scale(loss).backward()
    del loss
    m_bwd = _allocated()
    peak = int(torch.cuda.max_memory_allocated()) if harness.on_gpu() else 0
    optimizer_step(opt)
    return dict(activations=m_fwd - m0, gradients=m_bwd - m0, peak=peak - m0)


def fwd_bwd(gpt: nn.Module, opt, idx, targets) -> None:
    """Forward and backward only (no optimizer step): what recomputation changes."""
    opt.zero_grad()
    loss = gpt(idx, targets)
    (opt.scale(loss) if isinstance(opt, MixedAdamW) else loss).backward()  # the stock model's AdamW has no scaler
    del loss


def measure_step(shape: Optional[dict] = None, batches=BATCHES, modes=MODES, repeat: int = 3, dtype=None) -> StepResult:
    """Build the GPT of ``shape`` (default: ``choose_shape()``), then for each recomputation mode
    and micro-batch: one warm-up step, one counted step, ``repeat`` timed steps. ``dtype``: the
    device's 16-bit format (``_dtype()``) unless given (``torch.float16`` runs the loss-scaled path
    on any device)."""
    _free()
    shape = dict(shape or choose_shape())
    dtype = dtype or _dtype()
    outside = None
    if harness.on_gpu():
        free, total = torch.cuda.mem_get_info()
        outside = int(total - free - torch.cuda.memory_reserved())
    gpt, opt, w_bytes, o_bytes = build(shape, dtype)
    s_bytes = scaler_bytes(opt)
    params = sum(p.numel() for p in gpt.parameters())
    matmul_params = params - gpt.tok.weight.numel() - gpt.pos.weight.numel()
    points = []
    for mode in modes:
        gpt.set_recompute(mode)
        for b in batches:
            idx, tgt = _batch(shape, b)
            train_step(gpt, opt, idx, tgt)  # warm-up: cuBLAS workspaces, kernels
            _free()
            counter = SavedBytes(gpt.parameters())
            mem = train_step(gpt, opt, idx, tgt, counter)
            timing = harness.time_fn(functools.partial(train_step, gpt, opt, idx, tgt), warmup=0, repeat=repeat)
            fb = harness.time_fn(functools.partial(fwd_bwd, gpt, opt, idx, tgt), warmup=0, repeat=repeat)
            on = harness.on_gpu()
            points.append(StepPoint(
                recompute=mode, micro_batch=b, saved_bytes=counter.nbytes,
                activations_bytes=mem["activations"] if on else None, gradients_bytes=mem["gradients"] if on else None,
                peak_bytes=mem["peak"] if on else None,
                reserved_bytes=int(torch.cuda.memory_reserved()) if on else None,
                step_s=timing.median_s, step_min_s=timing.min_s, step_max_s=timing.max_s, repeat=timing.repeat,
                fwd_bwd_s=fb.median_s, fwd_bwd_min_s=fb.min_s))
    opt_s = None
    try:  # the optimizer step alone (gradients of the last point in place)
        opt_s = harness.time_fn(functools.partial(optimizer_step, opt), warmup=0, repeat=repeat).median_s
    except Exception:  # noqa: BLE001 - a timing, fail-soft
        opt_s = None
    layer_params = sum(p.numel() for layer in gpt.layers for p in layer.parameters())
    gpu = catalog_name_for(harness.device_name()) if harness.on_gpu() else None
    dname = dtypes.from_torch(dtype).name
    peak = get_gpu(gpu).peak_flop_per_s.get(dname) if gpu else None
    res = StepResult(
        device=harness.device_name(), dtype=dname, shape=shape, params=int(params), matmul_params=int(matmul_params),
        weights_bytes=w_bytes, optimizer_bytes=o_bytes,
        weights_tensor_bytes=_tensor_bytes(gpt.parameters()),
        optimizer_tensor_bytes=_tensor_bytes(opt.master + opt.m + opt.v),
        gradients_tensor_bytes=_tensor_bytes(gpt.parameters()),  # one 16-bit gradient per weight
        outside_allocator_bytes=outside, peak_flop_per_s=peak, gpu=gpu, points=tuple(points),
        note="" if harness.on_gpu() else CPU_NOTE, optimizer_step_s=opt_s, layer_matmul_params=int(layer_params),
        loss_scaler="torch.amp.GradScaler (dynamic)" if opt.scaler is not None else "", scaler_bytes=s_bytes,
        loss_scale=float(opt.scaler.get_scale()) if opt.scaler is not None else None, skipped_steps=opt.skipped)
    del gpt, opt
    _free()
    return res


_TRIED = re.compile(r"Tried to allocate ([0-9.]+) ([KMGT]i?B)")
_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def tried_bytes(message: str) -> Optional[int]:
    """The bytes an out-of-memory message says it tried to allocate, or None if it names none."""
    m = _TRIED.search(message or "")
    return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else None


def measure_oom(shape: Optional[dict] = None, start_batch: int = 8, max_trials: int = OOM_MAX_TRIALS) -> OomResult:
    """Double the micro-batch (no recomputation) until a forward + backward fails, then bisect,
    at most ``max_trials`` tries. GPU only: on a CPU the allocator would swap, not fail."""
    if not harness.on_gpu():
        raise RuntimeError("the out-of-memory search runs on a GPU only (a CPU swaps instead of failing)")
    oom_error = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    _free()
    shape = dict(shape or choose_shape())
    free, _total = torch.cuda.mem_get_info()
    capacity = int(free + torch.cuda.memory_reserved())
    gpt, opt, _w, _o = build(shape)
    gpt.set_recompute("none")
    state = _allocated()
    ok, bad, trials = 0, None, []
    message, tried, held, gap, summary = "", None, None, None, ""
    b = start_batch
    for _ in range(max_trials):
        trials.append(b)
        opt.zero_grad()
        try:
            idx, tgt = _batch(shape, b)
            loss = gpt(idx, tgt)
            opt.scale(loss).backward()
            del loss, idx, tgt
            ok = b
        except oom_error as exc:
            bad = b
            message = str(exc).split("\n")[0][:600]
            tried = tried_bytes(message)
            held = _allocated()  # the failed pass's activations are still referenced by the traceback
            gap = int(torch.cuda.memory_reserved() - torch.cuda.memory_allocated())
            try:
                summary = torch.cuda.memory_summary(abbreviated=True)[:6000]
            except Exception as err:  # noqa: BLE001 - text for the chapter, fail-soft
                summary = f"memory_summary failed: {type(err).__name__}"
            del exc
        opt.zero_grad()
        _free()
        nxt = b * 2 if bad is None else (ok + bad) // 2
        if bad is not None and nxt <= ok:
            break
        if nxt > OOM_MAX_BATCH:
            break
        b = nxt
    del gpt, opt
    _free()
    return OomResult(largest_ok_batch=ok, failed_batch=bad, message=message, tried_bytes=tried, held_bytes=held, state_bytes=int(state),
                     capacity_bytes=capacity, trials=tuple(trials), reserved_minus_allocated_bytes=gap,
                     note="" if bad else f"no failure up to micro-batch {ok}", summary=summary)


FRAG_SIZES_MIB = tuple(64 + 8 * i for i in range(1, 41))  # 72 ... 384 MiB, 9.1 GiB in all

_FRAG_SCRIPT = r"""
import json, sys, torch
if not torch.cuda.is_available():
    sys.exit("no CUDA device")
sizes = [int(x) for x in sys.argv[1].split(",")]
for mib in sizes:
    x = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")
    del x
torch.cuda.synchronize()
out = dict(allocated=torch.cuda.memory_allocated(), reserved=torch.cuda.memory_reserved(),
           peak=torch.cuda.max_memory_reserved(), largest=max(sizes) * 2**20)
# Phase 2, fragmentation proper, under a cap of CAP bytes: for each of N rounds a BLOCK-byte
# tensor (its own segment: no free block is that large), freed; a tensor KEEP bytes smaller takes
# its place (a split: the only free block) and is held until every round is done, so the next
# round cannot reuse this segment; a KEEP-byte keeper takes the remainder. Then the big tensors
# are freed: each segment holds a small live keeper and a free gap smaller than BLOCK that only a
# smaller request can use. Then one request larger than any gap and than the unreserved capacity,
# though far below the free capacity. (Round 4's version freed each big tensor within its round,
# so the next round's split reused the previous segment's gap and only a few segments formed.)
torch.cuda.empty_cache()
MiB = 2**20
cap, block, keep, request, rounds = [int(x) for x in sys.argv[2].split(",")]
cap, block, keep, request = cap * MiB, block * MiB, keep * MiB, request * MiB
_free, total = torch.cuda.mem_get_info()
torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total))
torch.cuda.reset_peak_memory_stats()
keepers, held = [], []
try:
    for _ in range(rounds):
        x = torch.empty(block, dtype=torch.uint8, device="cuda")
        del x
        held.append(torch.empty(block - keep, dtype=torch.uint8, device="cuda"))
        keepers.append(torch.empty(keep, dtype=torch.uint8, device="cuda"))
    segments = sum(1 for s in torch.cuda.memory_snapshot() if s.get("total_size") == block)
    held.clear()
    live = torch.cuda.memory_allocated()
    try:
        y = torch.empty(request, dtype=torch.uint8, device="cuda")
        ok, err = True, ""
        del y
    except torch.OutOfMemoryError as exc:
        ok, err = False, str(exc).split("\n")[0][:300]
    st = torch.cuda.memory_stats()
    out.update(pinned_ok=ok, pinned_error=err, pinned_cap=cap, pinned_request=request, pinned_live=live, pinned_segments=segments,
               pinned_reserved=torch.cuda.max_memory_reserved(),
               inactive_split=st.get("inactive_split_bytes.all.current"), retries=st.get("num_alloc_retries"))
except Exception as exc:
    out.update(pinned_error=f"{type(exc).__name__}: {exc}"[:300])
print(json.dumps(out))
"""

# cap 4 GiB; 12 rounds of 256 MiB blocks with 2 MiB keepers (3 GiB reserved, 24 MiB live); then 1.5 GiB
FRAG_PINNED_MIB = (4096, 256, 2, 1536, 12)


def _allocator_run(expandable: bool, sizes_mib) -> AllocatorRun:
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)  # the allocator's defaults, whatever this process was started with
    if expandable:
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    proc = subprocess.run([sys.executable, "-c", _FRAG_SCRIPT, ",".join(map(str, sizes_mib)), ",".join(map(str, FRAG_PINNED_MIB))],
                          env=env, capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"allocator subprocess failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-300:]}")
    d = json.loads(proc.stdout.strip().splitlines()[-1])
    return AllocatorRun(expandable_segments=expandable, allocated_bytes=int(d["allocated"]), reserved_bytes=int(d["reserved"]),
                        peak_reserved_bytes=int(d["peak"]), largest_bytes=int(d["largest"]),
                        pinned_ok=d.get("pinned_ok"), pinned_error=d.get("pinned_error", ""), pinned_cap_bytes=d.get("pinned_cap"),
                        pinned_request_bytes=d.get("pinned_request"), pinned_live_bytes=d.get("pinned_live"),
                        pinned_reserved_bytes=d.get("pinned_reserved"), inactive_split_bytes=d.get("inactive_split"),
                        alloc_retries=d.get("retries"), pinned_segments=d.get("pinned_segments"))


def measure_fragmentation(sizes_mib=FRAG_SIZES_MIB) -> FragmentationResult:
    """Allocate and free tensors of growing size (``sizes_mib``) in a fresh process, without and with
    expandable segments (the setting must be made before CUDA starts, hence the subprocess), and
    record what the allocator keeps reserved. GPU only."""
    if not harness.on_gpu():
        raise RuntimeError("the allocator's fragmentation is measured on a GPU only")
    sizes = tuple(int(x) for x in sizes_mib)
    return FragmentationResult(default=_allocator_run(False, sizes), expandable=_allocator_run(True, sizes), sizes_mib=sizes)


_CONTEXT_SCRIPT = r"""
import json, os, sys, torch
if not torch.cuda.is_available():
    sys.exit("no CUDA device")
before = int(os.environ.get("GPUBOOK_DEVICE_USED_BEFORE", "0"))  # in use on the device before this process started
torch.cuda.init()
torch.empty(1, device="cuda")  # the context is created lazily: make it
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
a = total - free - before - torch.cuda.memory_reserved()
x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
y = x @ x
torch.cuda.synchronize()
free2, _ = torch.cuda.mem_get_info()
print(json.dumps(dict(total=total, init=a, matmul=total - free2 - before - torch.cuda.memory_reserved(), before=before)))
"""


def measure_context() -> ContextResult:
    """Device memory outside PyTorch's allocator in a fresh process (nothing else imported): after
    CUDA starts and after one bf16 matmul [B]. GPU only. ``mem_get_info`` is device-wide, so what
    was in use before the fresh process started (this process, which waits meanwhile, with what
    earlier topics left cached, and any other process) is read first and subtracted; the H200's
    first record (13.2 GB "context") had counted it."""
    import json
    import os
    import subprocess
    import sys

    if not harness.on_gpu():
        raise RuntimeError("the CUDA context is measured on a GPU only")
    _free()
    free0, total0 = torch.cuda.mem_get_info()
    env = dict(os.environ, GPUBOOK_DEVICE_USED_BEFORE=str(int(total0 - free0)))
    proc = subprocess.run([sys.executable, "-c", _CONTEXT_SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"context subprocess failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-300:]}")
    d = json.loads(proc.stdout.strip().splitlines()[-1])
    return ContextResult(total_bytes=int(d["total"]), after_init_bytes=int(d["init"]), after_matmul_bytes=int(d["matmul"]),
                         used_before_bytes=int(d.get("before", 0)))


class StockGPT(nn.Module):
    """The same shape built from PyTorch's own blocks: token and position embeddings, pre-norm
    ``nn.TransformerEncoderLayer`` (GELU, 4h, dropout 0) run causally (``is_causal=True``: the
    attention is ``scaled_dot_product_attention``, fused where the device has a kernel), a final
    LayerNorm and an untied head; an fp32 cross-entropy."""

    def __init__(self, hidden: int, heads: int, seq: int, vocab: int, layers: int):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
            for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)

    def forward(self, idx, targets):
        b, s = idx.shape
        x = self.tok(idx) + self.pos.weight[:s]
        mask = nn.Transformer.generate_square_subsequent_mask(s, device=x.device, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(b * s, -1), targets.view(b * s))


def _stock_pass(gpt, opt, idx, tgt, counter=None) -> dict:
    opt.zero_grad(set_to_none=True)
    harness.synchronize()
    m0 = _allocated()
    if harness.on_gpu():
        torch.cuda.reset_peak_memory_stats()
    if counter is not None:
        with counter:
            loss = gpt(idx, tgt)
    else:
        loss = gpt(idx, tgt)
    m_fwd = _allocated()
    loss.backward()
    del loss
    m_bwd = _allocated()
    peak = int(torch.cuda.max_memory_allocated()) if harness.on_gpu() else 0
    return dict(activations=m_fwd - m0, gradients=m_bwd - m0, peak=peak - m0)


def measure_stock(shape: Optional[dict] = None, batches=(1, 2)) -> StockResult:
    """The stock model (``StockGPT``) with ``torch.optim.AdamW(foreach=True)``: the allocator's count
    after the weights, after the first step (gradients and the lazily created moments), and per
    micro-batch after the forward pass. Flash attention is asked for first (``sdpa_kernel``);
    where it cannot run, PyTorch's default choice, recorded in ``sdpa_backend``."""
    _free()
    shape = dict(shape or choose_shape())
    dtype = _dtype()
    torch.manual_seed(0)
    base = _allocated()
    with torch.device(harness.device()):
        gpt = StockGPT(**shape).to(dtype=dtype)
    gpt.train()
    w_bytes = _allocated() - base
    opt = torch.optim.AdamW(gpt.parameters(), lr=1e-4, weight_decay=0.1, foreach=True)
    params = sum(p.numel() for p in gpt.parameters())
    on = harness.on_gpu()
    backend, ctx = "default", None
    if on:
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            ctx = functools.partial(sdpa_kernel, [SDPBackend.FLASH_ATTENTION])
            with ctx():
                idx, tgt = _batch(shape, 1)
                fwd_bwd(gpt, opt, idx, tgt)
            backend = "flash"
        except Exception:  # noqa: BLE001 - no flash kernel here: PyTorch's default choice
            ctx, backend = None, "default"
    import contextlib

    ctx = ctx or contextlib.nullcontext
    idx, tgt = _batch(shape, batches[0])
    with ctx():
        fwd_bwd(gpt, opt, idx, tgt)
    g_bytes = _allocated() - base - w_bytes
    before = _allocated()
    opt.step()
    o_bytes = _allocated() - before
    points = []
    for b in batches:
        idx, tgt = _batch(shape, b)
        with ctx():
            _stock_pass(gpt, opt, idx, tgt)  # warm-up
            _free()
            counter = SavedBytes(gpt.parameters())
            mem = _stock_pass(gpt, opt, idx, tgt, counter)
        points.append(StockPoint(micro_batch=b, saved_bytes=counter.nbytes, activations_bytes=mem["activations"] if on else None,
                                 peak_bytes=mem["peak"] if on else None))
    res = StockResult(device=harness.device_name(), dtype=dtypes.from_torch(dtype).name, shape=shape, params=int(params),
                      sdpa_backend=backend, weights_bytes=w_bytes if on else None, gradients_bytes=g_bytes if on else None,
                      optimizer_bytes=o_bytes if on else None, points=tuple(points), note="" if on else CPU_NOTE)
    del gpt, opt
    _free()
    return res


def run_all() -> TrainingMemoryResults:
    context = harness.attempt(measure_context) if harness.on_gpu() else None
    step = harness.attempt(measure_step)
    stock = harness.attempt(measure_stock)
    oom = harness.attempt(measure_oom) if harness.on_gpu() else None
    frag = harness.attempt(measure_fragmentation) if harness.on_gpu() else None
    return TrainingMemoryResults(step=step, oom=oom, fragmentation=frag, stock=stock, context=context)


# --------------------------------------------------------------------------------------------
# Model against measurement
# --------------------------------------------------------------------------------------------
def predicted_activation_bytes(shape: dict, micro_batch: int, recompute: str) -> float:
    """The activation model (Korthikanti et al. 2022) for the experiment's shape [B]."""
    return model.activation_bytes(shape["seq"], micro_batch, shape["hidden"], shape["heads"], shape["layers"], shape["vocab"],
                                  recompute=recompute)


def predicted_full_recompute_peak_bytes(shape: dict, micro_batch: int, params: int) -> float:
    """The calculators' planner for full recomputation (:func:`widgets.models.training_memory.memory_budget`)
    on the experiment's shape: the stored layer inputs and outside-layer activations, plus one
    layer's full activations while it is recomputed, plus the gradients (2 B/param), as if all
    three peaked at once [B]. Meant as an upper bound (in the backward pass the checkpoints are
    freed as the gradients appear), so the chapter checks it one-sided (measured peak <= this);
    a backward temporary outside the three would break it."""
    one_layer = model.activation_bytes_per_layer(shape["seq"], micro_batch, shape["hidden"], shape["heads"])
    return predicted_activation_bytes(shape, micro_batch, "full") + one_layer + model.state_bytes(params).gradients


def predicted_stock_activation_bytes(shape: dict, micro_batch: int) -> float:
    """The activation model for the stock model (:class:`StockGPT`): the same count with fused
    attention and no dropout (``attention="flash", dropout=False``) [B]. Its flash term (the
    kernel's output is the projection's input, one tensor) was corrected after the H200 record
    showed 2 s b h per layer fewer than a count with two."""
    return model.activation_bytes(shape["seq"], micro_batch, shape["hidden"], shape["heads"], shape["layers"], shape["vocab"],
                                  attention="flash", dropout=False)


def predicted_step_ratio(step: StepResult, recompute: str) -> float:
    """Forward + backward time with ``recompute`` over without, if FLOP/s stay the same: one plus
    the extra FLOP over the step's (``6 N + attention``; full recomputation reruns the layers'
    matmuls, ``layer_matmul_params``, not the output head, which the experiment does not
    checkpoint) [-]."""
    layers = step.layer_matmul_params or step.matmul_params
    return 1.0 + model.recompute_flop_fraction(step.matmul_params, attention_flop(step.shape), recompute, recomputed_params=layers)


def attention_flop(shape: dict) -> float:
    """Training FLOP per token of the experiment's attention (PaLM's 12 L H Q T) [FLOP]."""
    return model.attention_flop_per_token(shape["layers"], shape["heads"], shape["hidden"] // shape["heads"], shape["seq"])


def measured_mfu(step: StepResult, point: StepPoint) -> Optional[float]:
    """MFU of one point (matmul parameters + attention), or None without a catalog peak."""
    if not step.peak_flop_per_s or not point.step_s:
        return None
    tokens_per_s = point.micro_batch * step.shape["seq"] / point.step_s
    return model.mfu(tokens_per_s, step.matmul_params, step.peak_flop_per_s, attention_flop(step.shape))


def predicted_largest_batch(step_shape: dict, params: int, capacity_bytes: int, reserve_fraction: float = 0.0) -> int:
    """The model's largest micro-batch: 16 bytes per parameter plus the activation model per
    sequence, in ``capacity_bytes``, less ``reserve_fraction`` of it (0: nothing else, no
    transients, no fragmentation; ``model.DEFAULT_RESERVE_FRACTION``: the calculators' planner)."""
    per = predicted_activation_bytes(step_shape, 1, "none")
    fixed = model.training_state_bytes(params) + reserve_fraction * capacity_bytes
    return model.max_micro_batch(capacity_bytes, fixed, per)


FLASH_TERM_CORRECTED_ON = ("69404c31b94322dddcc1643fe915a68990f37986",)
"""Code commits of the records whose stock-model activations led to correcting the count's flash
term (the fused kernel's output is the output projection's input: one tensor, not two). On them the
stock activation rows match after the fact (fit); on any other record they are predictions."""


def stock_activations_label(record: dict) -> str:
    """``"fit"`` for a record the count's flash term was corrected on (``FLASH_TERM_CORRECTED_ON``), else
    ``"prediction"``."""
    prov = record.get("provenance", {}) if isinstance(record, dict) else {}
    return "fit" if prov.get("git_commit") in FLASH_TERM_CORRECTED_ON else "prediction"


def accuracy_rows(record: dict) -> list:
    """Every comparison of the training-memory chapter, recomputed from ``record``'s raw counts."""
    res = TrainingMemoryResults.from_record(record["results"])
    step = res.step
    rows: list = []
    if not isinstance(step, StepResult):
        return rows
    device = record.get("provenance", {}).get("gpu") or step.device
    if step.weights_bytes is not None and step.optimizer_bytes is not None:
        g = [p.gradients_bytes for p in step.points if p.gradients_bytes is not None]
        measured = step.weights_bytes + step.optimizer_bytes + (g[0] if g else 0)
        rows.append(Row("training_memory", "weights + gradients + AdamW state of the book's GPT (allocator)", "16 bytes per parameter",
                        model.training_state_bytes(step.params), measured, "B", "fit", device,
                        "by construction, not a prediction: MixedAdamW allocates exactly 12 B/param; checks only the allocator's rounding"))
    for p in step.points:
        pred = predicted_activation_bytes(step.shape, p.micro_batch, p.recompute)
        inputs = f"Korthikanti et al. (recompute {p.recompute}), s={step.shape['seq']}, b={p.micro_batch}"
        note = ("by construction, not a prediction: the book's GPT was written so that autograd keeps exactly the count's "
                "tensors; checks the accounting, not the count")
        if p.activations_bytes is not None:
            what = f"activations after the forward pass, recompute {p.recompute}, micro-batch {p.micro_batch} (allocator)"
            rows.append(Row("training_memory", what, inputs, pred, p.activations_bytes, "B", "fit", device, note))
        elif p.saved_bytes:
            rows.append(Row("training_memory", f"activations saved for backward, recompute {p.recompute}, micro-batch {p.micro_batch} (hooks)",
                            inputs, pred, p.saved_bytes, "B", "fit", device, note))
    # The full-recomputation peak against the planner's sum (predicted_full_recompute_peak_bytes) is a one-sided
    # bound, which a two-sided ratio cannot check: the chapter shows it as a bound check, not here.
    stock = res.stock
    if isinstance(stock, StockResult):
        rows += _stock_rows(stock, device, stock_activations_label(record))
    by = {(p.recompute, p.micro_batch): p for p in step.points}
    why = {"selective": "the recomputed attention core is mostly memory-bound work on the s × s scores (scale, mask fill, "
                        "softmax, dropout), which a FLOP count prices at matmul speed",
           "full": "fails if the recomputed work runs at another FLOP/s than the step's"}
    for mode in ("selective", "full"):
        for b in BATCHES:
            base, rc = by.get(("none", b)), by.get((mode, b))
            if base and rc and base.fwd_bwd_s and rc.fwd_bwd_s and step.peak_flop_per_s:
                rows.append(Row("training_memory", f"extra forward + backward time of {mode} recomputation, micro-batch {b}",
                                "extra FLOP of recomputation over the step's (layers only; same FLOP/s)",
                                predicted_step_ratio(step, mode) - 1.0, rc.fwd_bwd_s / base.fwd_bwd_s - 1.0,
                                "fraction of the forward + backward time", "prediction", device,
                                f"the overhead itself, not 1 + overhead; optimizer step excluded from both times; {why[mode]}"))
    oom = res.oom
    predicted_batch = predicted_largest_batch(step.shape, step.params, oom.capacity_bytes) if isinstance(oom, OomResult) else 0
    if isinstance(oom, OomResult) and oom.failed_batch and oom.largest_ok_batch > 0 and predicted_batch > 0:
        rows.append(Row("training_memory", "largest micro-batch that fits (no recomputation)",
                        "16 B/param + activation model, capacity free at start", predicted_batch,
                        oom.largest_ok_batch, "sequences", "prediction", device,
                        f"bisected over {len(oom.trials)} tries; transients (the logits' fp32 copy and gradient, "
                        "backward temporaries) are not in the model"))
    reserve = model.DEFAULT_RESERVE_FRACTION
    planned = predicted_largest_batch(step.shape, step.params, oom.capacity_bytes, reserve) if isinstance(oom, OomResult) else 0
    if isinstance(oom, OomResult) and oom.failed_batch and oom.largest_ok_batch > 0 and planned > 0:
        rows.append(Row("training_memory", "largest micro-batch that fits, the calculators' planner (10% allowance)",
                        "16 B/param + activation model + 10% of the capacity", planned, oom.largest_ok_batch, "sequences",
                        "prediction", device, "the allowance is too generous if the measured batch is larger, too tight if smaller"))
    return rows


def _stock_rows(stock: StockResult, device: str, activations_label: str = "prediction") -> list:
    """The stock model, bucket by bucket: weights and gradients (dtype x count: by construction, fit),
    torch AdamW's moments (a prediction) and the activations (``activations_label``: a prediction, or
    fit on a record the count was corrected on, :func:`stock_activations_label`)."""
    rows: list = []
    st = model.state_bytes(stock.params, "adamw", "bf16")
    for what, pred, meas, label, note in (
            ("weights", st.weights, stock.weights_bytes, "fit", "by construction (2 B × parameters): not counted"),
            ("gradients", st.gradients, stock.gradients_bytes, "fit", "by construction (2 B × parameters): not counted"),
            ("AdamW state (torch.optim.AdamW, foreach)", st.optimizer, stock.optimizer_bytes, "prediction",
             "pure-16-bit layout: two moments in the weights' dtype, no master copy; fails if torch keeps fp32 state")):
        if meas is not None:
            rows.append(Row("training_memory", f"stock model: {what} (allocator)", "state_bytes(precision='bf16')", pred, meas, "B",
                            label, device, note))
    for p in stock.points:
        if p.activations_bytes is not None:
            rows.append(Row("training_memory", f"stock model: activations after the forward pass, micro-batch {p.micro_batch} (allocator)",
                            f"activation_bytes(attention='flash', dropout=False), SDPA backend {stock.sdpa_backend}",
                            predicted_stock_activation_bytes(stock.shape, p.micro_batch), p.activations_bytes, "B", activations_label,
                            device, "nn.TransformerEncoderLayer + SDPA, not written to match the count" + (
                                "; but the count's flash term was corrected after this record showed it 2 s b h per layer too "
                                "high: a fit until a new run tests it" if activations_label == "fit" else "")))
    return rows
