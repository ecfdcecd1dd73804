"""A tiled matrix multiply in Triton: each program computes one BLOCK_M x BLOCK_N tile of C,
walking K in steps of BLOCK_K, with tiles visited in grouped order so that consecutive programs
reuse the same rows of A and columns of B from the L2 cache (after the Triton tutorial
"Matrix Multiplication", 03-matrix-multiplication.py).

On a GPU ``matmul`` autotunes over a few Hopper-friendly configurations; without one the same kernel
runs in Triton's interpreter on the CPU with one small configuration.
"""

from __future__ import annotations

import torch

from ._triton import INTERPRETED, tl, triton

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)
GPU_CONFIGS = [
    (128, 256, 64, 8, 3, 8),
    (256, 128, 64, 8, 3, 8),
    (128, 128, 64, 8, 4, 4),
    (128, 256, 32, 8, 4, 8),
]
CPU_CONFIG = (32, 32, 32, 4, 1, 4)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # Which output tile is mine? Programs are numbered row by row within groups of GROUP_M
    # tile-rows, so that programs running at the same time share tiles of A and B in L2.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Pointers to the first BLOCK_M x BLOCK_K tile of A and BLOCK_K x BLOCK_N tile of B.
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    # Walk K: load two tiles (zeros past the edge), multiply-accumulate on tensor cores in fp32.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # Round the fp32 tile to the output type and store the part inside C.
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _config(cfg):
    bm, bn, bk, g, stages, warps = cfg
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}, num_stages=stages, num_warps=warps)


_autotuned = None if INTERPRETED else triton.autotune(configs=[_config(c) for c in GPU_CONFIGS], key=["M", "N", "K"])(matmul_kernel)


def _launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, config=None) -> None:
    M, K = a.shape
    _, N = b.shape
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if config is None and not INTERPRETED:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _autotuned[grid](*args)
        return
    bm, bn, bk, g, stages, warps = config or CPU_CONFIG
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_stages=stages, num_warps=warps)


def matmul(a: torch.Tensor, b: torch.Tensor, *, config=None, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` with the Triton kernel. ``config`` = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
    num_stages, num_warps) fixes the tiling; by default a GPU autotunes over :data:`GPU_CONFIGS`
    and the interpreter uses :data:`CPU_CONFIG`."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b must be matrices with a.shape[1] == b.shape[0], got {tuple(a.shape)} and {tuple(b.shape)}")
    c = out if out is not None else torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    _launch(a, b, c, config)
    return c


def best_config():
    """The configuration the autotuner chose last (GPU), or the interpreter's one."""
    if _autotuned is not None and getattr(_autotuned, "best_config", None) is not None:
        bc = _autotuned.best_config
        kw = bc.kwargs
        return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"], bc.num_stages, bc.num_warps)
    return CPU_CONFIG
