"""numba-cuda kernels for the SIMT experiments, written with explicit thread indices.

On a machine without a GPU they run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set
here before ``numba.cuda`` is imported), which runs every thread of a block as a Python thread:
sizes must stay tiny there, and the simulator has no warps, so it shows no divergence penalty.
The chapter shows these kernels with ``literalinclude``.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import torch

SIMULATED = not torch.cuda.is_available()
if SIMULATED:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402

if not hasattr(np, "row_stack"):
    # numba-cuda's fp16 bindings still call np.row_stack, which NumPy 2.5 removed (it was an alias
    # of vstack); seen on the H200 image (numba-cuda with numpy 2.5.2).
    np.row_stack = np.vstack

from numba import cuda, float32, int64  # noqa: E402
from numba.core.errors import NumbaPerformanceWarning  # noqa: E402

WARP = 32


@cuda.jit
def divergent_kernel(out, n_paths, iters, lane_paths):
    """Every thread does the same work (``iters`` x 4 FMAs), on the path ``lane % n_paths``.

    One inner loop, run once for each path ``p`` (with a constant that depends on ``p``) by the
    lanes whose path is ``p`` while the warp's other lanes are masked off: a warp whose lanes sit
    on ``k`` different paths runs that loop ``k`` times, one after another.
    """
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % WARP
    path = lane % n_paths
    x0 = float32(i) * float32(1e-7)
    x1 = x0 + float32(0.25)
    x2 = x0 + float32(0.5)
    x3 = x0 + float32(0.75)
    for p in range(n_paths):
        if path == p:
            a = float32(0.999) - float32(p) * float32(1e-5)
            for _ in range(iters):
                x0 = x0 * a + float32(1e-3)
                x1 = x1 * a + float32(1e-3)
                x2 = x2 * a + float32(1e-3)
                x3 = x3 * a + float32(1e-3)
    out[i] = x0 + x1 + x2 + x3
    if i < lane_paths.shape[0]:
        lane_paths[i] = path  # the first warp records which path each lane took


@cuda.jit
def pointer_chase_kernel(nxt, hops, out):
    """One thread follows a random cycle through ``nxt`` from ``out[0]``, where the previous launch
    stopped: each load's address depends on the previous load, so the time per hop is the memory
    latency, and no launch revisits the addresses of the one before."""
    j = int64(out[0])
    for _ in range(hops):
        j = nxt[j]
    out[0] = j


@cuda.jit
def stream_read_kernel(x, out):
    """Read every element once (grid-stride loop), one float per thread per iteration; the
    CPU-simulator twin of the CUDA C ``stream_read`` kernel."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = float32(0.0)
    while i < x.shape[0]:
        acc += x[i]
        i += stride
    if acc == float32(-1.0):
        out[0] = acc


@cuda.jit
def spin_kernel(out, units_per_block, iters):
    """Block b does ``units_per_block`` units of arithmetic (each ``iters`` x 4 FMAs per thread):
    the parallel part of the Amdahl pipeline; more blocks (workers) -> fewer units each."""
    t = cuda.threadIdx.x
    x0 = float32(t) * float32(1e-7)
    x1 = x0 + float32(0.25)
    x2 = x0 + float32(0.5)
    x3 = x0 + float32(0.75)
    a = float32(0.999)
    for _ in range(units_per_block):
        for _ in range(iters):
            x0 = x0 * a + float32(1e-3)
            x1 = x1 * a + float32(1e-3)
            x2 = x2 * a + float32(1e-3)
            x3 = x3 * a + float32(1e-3)
    out[cuda.blockIdx.x * cuda.blockDim.x + t] = x0 + x1 + x2 + x3


@contextlib.contextmanager
def quiet():
    """Silence numba's low-occupancy warnings: the pointer chase runs one thread on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        yield


def device_array(t: torch.Tensor):
    """A torch tensor as something a numba kernel accepts: a zero-copy device view on a GPU,
    the NumPy array (shared memory) in the simulator."""
    if SIMULATED:
        return t.numpy()
    return cuda.as_cuda_array(t.detach())
