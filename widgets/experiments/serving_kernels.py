"""A Triton matmul for decode's skinny shapes, ``y[M, N] = x[M, K] @ w[N, K]^T`` with M <= 64.

A decode step multiplies a handful of rows (one per sequence) by each weight matrix, so it is a
stream of weights through the SMs: what matters is keeping enough loads in flight on every SM.
A library GEMM tiles M and N for large problems; with M = 1 and N = 8192 a 128-wide tiling makes
only 64 tiles, half the SMs of an H200 idle. This kernel puts the whole (padded) M in one tile and
splits only N, in narrow slices, so an N of 8192 makes 256 programs; the K loop is pipelined.

On a machine without a GPU it runs through Triton's interpreter (small sizes only).
"""

from __future__ import annotations

import torch

from ._triton import INTERPRETED, tl, triton

MAX_M = 64
# (BLOCK_N, BLOCK_K, num_warps, num_stages): tried in turn on the GPU, the fastest kept per shape.
CONFIGS = (
    (32, 256, 4, 4),
    (32, 128, 4, 5),
    (16, 256, 4, 4),
    (64, 128, 4, 4),
    (64, 256, 4, 3),
    (16, 512, 4, 4),
    (128, 128, 8, 3),
)


@triton.jit
def skinny_matmul_kernel(
    x_ptr, w_ptr, y_ptr, M, N, K,
    stride_xm, stride_wn, stride_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_n = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :]
    mask_x = offs_m[:, None] < M
    mask_w = offs_n[:, None] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):  # K % BLOCK_K == 0 (checked by the caller)
        x = tl.load(x_ptrs, mask=mask_x, other=0.0)
        w = tl.load(w_ptrs, mask=mask_w, other=0.0)
        acc += tl.dot(x, tl.trans(w))
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_x & (offs_n[None, :] < N))


def block_m(m: int) -> int:
    """The padded M tile: the next power of two, at least 16 (the smallest ``tl.dot``)."""
    b = 16
    while b < m:
        b *= 2
    return b


def supports(m: int, weight: torch.Tensor, block_k: int) -> bool:
    """Whether the kernel handles this call: M <= 64, a row-major weight whose K divides into
    ``block_k`` blocks."""
    n, k = weight.shape
    return 1 <= m <= MAX_M and k % block_k == 0 and weight.stride(1) == 1


def skinny_matmul(x: torch.Tensor, weight: torch.Tensor, config=CONFIGS[0], out: torch.Tensor | None = None) -> torch.Tensor:
    """``x[M, K] @ weight[N, K]^T`` with one program per ``BLOCK_N`` output columns.

    ``config`` is ``(BLOCK_N, BLOCK_K, num_warps, num_stages)``.
    """
    block_n, block_k, warps, stages = config
    m, k = x.shape
    n, k2 = weight.shape
    if k != k2:
        raise ValueError(f"x has K={k} but weight has K={k2}")
    if not supports(m, weight, block_k):
        raise ValueError(f"skinny_matmul needs 1 <= M <= {MAX_M} and K % {block_k} == 0; got M={m}, K={k}")
    if x.stride(1) != 1:
        x = x.contiguous()
    y = out if out is not None else torch.empty((m, n), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(n, block_n),)
    kwargs = {} if INTERPRETED else dict(num_warps=warps, num_stages=stages)
    skinny_matmul_kernel[grid](x, weight, y, m, n, k, x.stride(0), weight.stride(0), y.stride(0),
                               BLOCK_M=block_m(m), BLOCK_N=block_n, BLOCK_K=block_k, **kwargs)
    return y


# --------------------------------------------------------------------------------------------
# The decode step's small operations, fused (what serving engines ship as custom kernels:
# fused add + RMSNorm, rotary embedding + cache write, SiLU-and-mul). One launch each instead of
# two to seven, which matters when a step is a few milliseconds of weight streaming.
# --------------------------------------------------------------------------------------------
@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, N, eps, HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(r_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(x_ptr + row * N + offs, x.to(x_ptr.dtype.element_ty), mask=mask)
    # Normalize what was stored (rounded to the residual's dtype), as the unfused path does.
    x = x.to(x_ptr.dtype.element_ty).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * N + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x += residual`` in place (if given), then return ``rmsnorm(x) * weight``; ``x`` is
    ``[rows, N]`` contiguous."""
    rows, n = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    kwargs = {} if INTERPRETED else dict(num_warps=min(16, max(4, block // 1024)))
    add_rmsnorm_kernel[(rows,)](x, residual if residual is not None else x, weight, out, n, eps,
                                HAS_RESIDUAL=residual is not None, BLOCK=block, **kwargs)
    return out


@triton.jit
def rope_cache_kernel(qkv_ptr, cos_ptr, sin_ptr, q_ptr, k_ptr, v_ptr, pos, T,
                      H: tl.constexpr, KVH: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // (H + KVH)
    head = pid % (H + KVH)
    half = tl.arange(0, D // 2)
    row = qkv_ptr + b * (H + 2 * KVH) * D + head * D
    x1 = tl.load(row + half).to(tl.float32)
    x2 = tl.load(row + D // 2 + half).to(tl.float32)
    c = tl.load(cos_ptr + half).to(tl.float32)
    s = tl.load(sin_ptr + half).to(tl.float32)
    o1 = x1 * c - x2 * s
    o2 = x2 * c + x1 * s
    if head < H:
        dst = q_ptr + (b * H + head) * D
    else:
        kv = head - H
        dst = k_ptr + ((b * KVH + kv) * T + pos) * D
        vsrc = qkv_ptr + b * (H + 2 * KVH) * D + (H + KVH + kv) * D
        vdst = v_ptr + ((b * KVH + kv) * T + pos) * D
        tl.store(vdst + half, tl.load(vsrc + half))
        tl.store(vdst + D // 2 + half, tl.load(vsrc + D // 2 + half))
    tl.store(dst + half, o1.to(q_ptr.dtype.element_ty))
    tl.store(dst + D // 2 + half, o2.to(q_ptr.dtype.element_ty))


def rope_cache(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               pos: int, heads: int, kv_heads: int, head_dim: int) -> torch.Tensor:
    """Rotate the query and key heads of ``qkv[B, (H + 2 KVH) D]`` (rotate-half layout, ``cos``
    and ``sin`` of length ``D``), write the keys and values at ``pos`` of the contiguous caches
    ``[B, KVH, T, D]``, and return the rotated queries ``[B, H, D]``."""
    b = qkv.shape[0]
    q = torch.empty((b, heads, head_dim), device=qkv.device, dtype=qkv.dtype)
    rope_cache_kernel[(b * (heads + kv_heads),)](qkv, cos, sin, q, k_cache, v_cache, pos, k_cache.shape[2],
                                                 H=heads, KVH=kv_heads, D=head_dim)
    return q


@triton.jit
def silu_mul_kernel(gu_ptr, out_ptr, I, BLOCK: tl.constexpr):  # noqa: E741 (I: the paper's intermediate size)
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < I
    g = tl.load(gu_ptr + row * 2 * I + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gu_ptr + row * 2 * I + I + offs, mask=mask, other=0.0).to(tl.float32)
    # Round silu(g) to the storage dtype before the product, as the unfused path does.
    a = (g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + row * I + offs, (a * u).to(out_ptr.dtype.element_ty), mask=mask)


def silu_mul(gu: torch.Tensor) -> torch.Tensor:
    """``silu(gu[:, :I]) * gu[:, I:]`` for a contiguous ``gu[B, 2I]``."""
    rows, two_i = gu.shape
    i = two_i // 2
    out = torch.empty((rows, i), device=gu.device, dtype=gu.dtype)
    block = 1024
    silu_mul_kernel[(rows, triton.cdiv(i, block))](gu, out, i, BLOCK=block)
    return out
