"""The attention chapter's Triton kernels: a fused row softmax and a FlashAttention forward pass.

``softmax(x)``: one program per row reads the row once, keeps it in registers, and writes the
probabilities once (2 x rows x cols elements moved), where a softmax written as five eager ops
moves about four times as much (:func:`naive_softmax`).

``flash_attention(q, k, v, causal)``: FlashAttention's forward pass in FlashAttention-2's loop
order (Dao 2023, Algorithm 1). One program owns ``BLOCK_M`` query rows of one (batch, head): it
loads its Q block once (it stays in registers), streams ``BLOCK_N`` rows of K and V at a time,
computes ``S = Q K^T`` with ``tl.dot`` (tensor cores, fp32 accumulation), and keeps per row the
running max ``m`` and sum ``l`` of the online softmax, rescaling the output accumulator by
``exp(m_old - m_new)`` whenever the max grows. The exponentials are ``exp2`` with ``log2(e)``
folded into the softmax scale. With ``causal``, the blocks strictly below the diagonal run without
a mask, the diagonal blocks with one, and the blocks above the diagonal are skipped. The output is
divided by ``l`` once, at the end. Written for the book after reading the Triton tutorial
"Fused Attention" (06-fused-attention.py) for technique.

On a GPU the kernel autotunes over :data:`GPU_CONFIGS` (block sizes, warps, pipeline stages); on a
CPU it runs in Triton's interpreter with :data:`CPU_CONFIG` (slow: keep N <= 256).
"""

from __future__ import annotations

import math

import torch

from ._triton import INTERPRETED, tl, triton

LOG2E = 1.4426950408889634

# (BLOCK_M, BLOCK_N, num_warps, num_stages); BLOCK_N <= BLOCK_M (the causal split needs it)
GPU_CONFIGS = (
    (128, 64, 4, 3),
    (128, 64, 8, 3),
    (128, 128, 8, 2),
    (128, 128, 8, 3),
    (128, 64, 4, 4),
    (64, 64, 4, 3),
    (128, 128, 4, 3),
    (128, 32, 4, 4),
)
CPU_CONFIG = (32, 32, 4, 1)


# ----------------------------------------------------------------------------------------------
# Fused softmax
# ----------------------------------------------------------------------------------------------
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    """One row per program: read it once, max, exp, sum, divide in registers, write it once."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor with :func:`softmax_kernel`."""
    if x.ndim != 2:
        raise ValueError(f"x must be a matrix (rows x cols), got shape {tuple(x.shape)}")
    rows, cols = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=warps)
    return y


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax as five eager ops, each a kernel that reads and writes a full-size tensor.

    max (read x), subtract (read x, write z), exp (read z, write e), sum (read e), divide (read e,
    write y): about 8 x rows x cols elements moved, against 2 for the fused kernel.
    """
    m = x.max(dim=1, keepdim=True).values
    z = x - m
    e = torch.exp(z)
    s = e.sum(dim=1, keepdim=True)
    return e / s


# ----------------------------------------------------------------------------------------------
# FlashAttention forward
# ----------------------------------------------------------------------------------------------
@triton.jit
def _attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, lo, hi, n_ctx, qk_scale,
                offs_m, offs_n, offs_d,
                DIAGONAL: tl.constexpr, EVEN_N: tl.constexpr, BLOCK_N: tl.constexpr):
    """Stream K/V blocks [lo, hi) past the Q block: the online softmax's update per block."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k_ptrs = k_base + cols[:, None] * stride_kn + offs_d[None, :]
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :]
        if EVEN_N:
            k = tl.load(k_ptrs)
        else:
            k = tl.load(k_ptrs, mask=cols[:, None] < n_ctx, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale  # S block: BLOCK_M x BLOCK_N, fp32, scaled before the max (any sign)
        if DIAGONAL:
            keep = offs_m[:, None] >= cols[None, :]
            if not EVEN_N:
                keep = keep & (cols[None, :] < n_ctx)
            qk = tl.where(keep, qk, -1.0e30)
        elif not EVEN_N:
            qk = tl.where(cols[None, :] < n_ctx, qk, -1.0e30)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk = qk - m_ij[:, None]
        p = tl.math.exp2(qk)  # scores already in log2 units
        alpha = tl.math.exp2(m_i - m_ij)  # rescales the old sum and output when the max grew
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if EVEN_N:
            v = tl.load(v_ptrs)
        else:
            v = tl.load(v_ptrs, mask=cols[:, None] < n_ctx, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def flash_attention_kernel(Q, K, V, Out, sm_scale,
                           stride_qz, stride_qh, stride_qn,
                           stride_kz, stride_kh, stride_kn,
                           stride_vz, stride_vh, stride_vn,
                           stride_oz, stride_oh, stride_on,
                           H, N_CTX,
                           HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    """O = softmax(Q K^T * sm_scale) V for BLOCK_M query rows of one (batch, head)."""
    num_m = tl.cdiv(N_CTX, BLOCK_M)
    pid_m = tl.program_id(0)
    if CAUSAL:  # each (batch, head)'s longest rows (most K/V blocks) first: axis 0 is dispatched fastest in practice
        pid_m = num_m - 1 - pid_m
    bh = tl.program_id(1)
    z = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    q_base = Q + z * stride_qz + h * stride_qh
    k_base = K + z * stride_kz + h * stride_kh
    v_base = V + z * stride_vz + h * stride_vh
    o_base = Out + z * stride_oz + h * stride_oh

    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x log2 e)

    q_ptrs = q_base + offs_m[:, None] * stride_qn + offs_d[None, :]
    if EVEN_N:
        q = tl.load(q_ptrs)  # stays in registers for the whole loop
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)

    if CAUSAL:
        # blocks wholly below the diagonal: no mask
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, 0, start_m, N_CTX,
                                    qk_scale, offs_m, offs_n, offs_d, False, EVEN_N, BLOCK_N)
        # the diagonal block(s): masked; the blocks above are never visited
        hi = tl.minimum(start_m + BLOCK_M, N_CTX)
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, start_m, hi, N_CTX,
                                    qk_scale, offs_m, offs_n, offs_d, True, EVEN_N, BLOCK_N)
    else:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_m, 0, N_CTX, N_CTX,
                                    qk_scale, offs_m, offs_n, offs_d, False, EVEN_N, BLOCK_N)

    acc = acc / l_i[:, None]  # normalize once, at the end
    o_ptrs = o_base + offs_m[:, None] * stride_on + offs_d[None, :]
    if EVEN_N:
        tl.store(o_ptrs, acc.to(Out.dtype.element_ty))
    else:
        tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


def _config(cfg):
    bm, bn, warps, stages = cfg
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)


def _even(args):
    return args["N_CTX"] % args["BLOCK_M"] == 0 and args["N_CTX"] % args["BLOCK_N"] == 0


_heuristic = triton.heuristics({"EVEN_N": _even})(flash_attention_kernel)
_autotuned = None if INTERPRETED else triton.autotune(
    configs=[_config(c) for c in GPU_CONFIGS], key=["N_CTX", "HEAD_DIM", "CAUSAL"])(_heuristic)


def _check_qkv(q, k, v):
    if not (q.ndim == k.ndim == v.ndim == 4):
        raise ValueError(f"q, k, v must be (batch, heads, seq, head_dim), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must have the same shape (self-attention), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    d = q.shape[-1]
    if d not in (16, 32, 64, 128, 256):
        raise ValueError(f"head_dim must be one of 16, 32, 64, 128, 256, got {d}")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: float | None = None, *, config=None) -> torch.Tensor:
    """``softmax(q k^T * sm_scale) v`` with :func:`flash_attention_kernel` (forward only).

    ``q, k, v``: (batch, heads, seq, head_dim), one dtype, head_dim a power of two from 16 to 256.
    ``config`` = (BLOCK_M, BLOCK_N, num_warps, num_stages) fixes the tiling; by default a GPU
    autotunes over :data:`GPU_CONFIGS` and the interpreter uses :data:`CPU_CONFIG`.
    """
    _check_qkv(q, k, v)
    if not all(t.stride(-1) == 1 for t in (q, k, v)):
        q, k, v = (t.contiguous() for t in (q, k, v))
    b, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)
    o = torch.empty_like(q)
    args = (q, k, v, o, scale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3], h, n)
    if config is None and _autotuned is not None:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)  # noqa: E731
        _autotuned[grid](*args, HEAD_DIM=d, CAUSAL=bool(causal))
        return o
    bm, bn, warps, stages = config or CPU_CONFIG
    if bn > bm or bm % bn:
        raise ValueError(f"BLOCK_N must divide BLOCK_M, got BLOCK_M={bm}, BLOCK_N={bn}")
    grid = (triton.cdiv(n, bm), b * h)
    _heuristic[grid](*args, HEAD_DIM=d, CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)
    return o


def best_config():
    """The configuration the autotuner chose last (GPU), or the interpreter's one, as
    (BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    if _autotuned is not None and getattr(_autotuned, "best_config", None) is not None:
        bc = _autotuned.best_config
        return (bc.kwargs["BLOCK_M"], bc.kwargs["BLOCK_N"], bc.num_warps, bc.num_stages)
    return CPU_CONFIG


# ----------------------------------------------------------------------------------------------
# The same kernel with tensor descriptors (Hopper's TMA on a GPU that has it)
# ----------------------------------------------------------------------------------------------
TMA_CONFIGS = (
    (128, 64, 4, 3),
    (128, 64, 8, 3),
    (128, 128, 8, 2),
    (128, 128, 8, 3),
)


@triton.jit
def _attn_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, row0, lo, hi, qk_scale, offs_m, offs_n,
                    DIAGONAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """As :func:`_attn_inner`, the K and V blocks loaded through tensor descriptors."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, tl.trans(k)) * qk_scale  # scaled before the max: max(s x) = s max(x) only for s > 0
        if DIAGONAL:
            keep = offs_m[:, None] >= (start_n + offs_n)[None, :]
            qk = tl.where(keep, qk, -1.0e30)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk = qk - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def flash_attention_tma_kernel(Q, K, V, Out, sm_scale, ZH, N_CTX,
                               HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """:func:`flash_attention_kernel` for contiguous (batch, heads, N, d) tensors, N a multiple of
    both blocks, every tile moved by a tensor descriptor (TMA on Hopper)."""
    num_m = tl.cdiv(N_CTX, BLOCK_M)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = num_m - 1 - pid_m
    bh = tl.program_id(1)
    rows = ZH * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    row0 = bh * N_CTX
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    q = desc_q.load([row0 + start_m, 0])
    if CAUSAL:
        acc, l_i, m_i = _attn_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, row0, 0, start_m, qk_scale, offs_m, offs_n,
                                        False, BLOCK_N)
        acc, l_i, m_i = _attn_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, start_m + BLOCK_M, qk_scale, offs_m,
                                        offs_n, True, BLOCK_N)
    else:
        acc, l_i, m_i = _attn_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, row0, 0, N_CTX, qk_scale, offs_m, offs_n,
                                        False, BLOCK_N)
    acc = acc / l_i[:, None]
    desc_o.store([row0 + start_m, 0], acc.to(Out.dtype.element_ty))


_tma_autotuned = None if INTERPRETED else triton.autotune(
    configs=[_config(c) for c in TMA_CONFIGS], key=["N_CTX", "HEAD_DIM", "CAUSAL"])(flash_attention_tma_kernel)
_ALLOCATOR_SET = False


def _set_allocator(device) -> None:
    """Tensor descriptors made inside a kernel need a little global scratch memory from the host."""
    global _ALLOCATOR_SET
    if _ALLOCATOR_SET:
        return

    def alloc(size: int, alignment: int, stream):
        return torch.empty(size, device=device, dtype=torch.int8)

    triton.set_allocator(alloc)
    _ALLOCATOR_SET = True


def flash_attention_tma(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                        sm_scale: float | None = None, *, config=None) -> torch.Tensor:
    """:func:`flash_attention` through :func:`flash_attention_tma_kernel`: contiguous inputs, N a
    multiple of 128 (of the blocks of ``config``); autotuned over :data:`TMA_CONFIGS` on a GPU."""
    _check_qkv(q, k, v)
    q, k, v = (t.contiguous() for t in (q, k, v))
    b, h, n, d = q.shape
    autotune = config is None and _tma_autotuned is not None
    need = 128 if autotune else max((config or CPU_CONFIG)[:2])  # every block of TMA_CONFIGS divides 128
    if n % need:
        raise ValueError(f"the TMA kernel needs N a multiple of {need}, got {n}")
    _set_allocator(q.device)
    scale = 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)
    o = torch.empty_like(q)
    args = (q, k, v, o, scale, b * h, n)
    if autotune:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)  # noqa: E731
        _tma_autotuned[grid](*args, HEAD_DIM=d, CAUSAL=bool(causal))
        return o
    bm, bn, warps, stages = config or CPU_CONFIG
    flash_attention_tma_kernel[(triton.cdiv(n, bm), b * h)](*args, HEAD_DIM=d, CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn,
                                                             num_warps=warps, num_stages=stages)
    return o


def best_tma_config():
    """The configuration the TMA kernel's autotuner chose last, or None."""
    if _tma_autotuned is not None and getattr(_tma_autotuned, "best_config", None) is not None:
        bc = _tma_autotuned.best_config
        return (bc.kwargs["BLOCK_M"], bc.kwargs["BLOCK_N"], bc.num_warps, bc.num_stages)
    return None


def _timings(tuner) -> dict:
    """{"BLOCK_M x BLOCK_N, warps w, stages s": ms} of the autotuner's last tuning, or {} (none, or an older Triton)."""
    out = {}
    try:
        for cfg, t in (getattr(tuner, "configs_timings", None) or {}).items():
            ms = t[0] if isinstance(t, (list, tuple)) else t
            label = f"{cfg.kwargs['BLOCK_M']} x {cfg.kwargs['BLOCK_N']}, warps {cfg.num_warps}, stages {cfg.num_stages}"
            out[label] = float(ms)
    except Exception:  # noqa: BLE001 - diagnostics only
        return {}
    return out


def autotune_timings() -> dict:
    """The pointer kernel's autotuning: milliseconds per configuration at the last shape tuned (GPU)."""
    return _timings(_autotuned)


def tma_autotune_timings() -> dict:
    """The TMA kernel's autotuning: milliseconds per configuration at the last shape tuned (GPU)."""
    return _timings(_tma_autotuned)
