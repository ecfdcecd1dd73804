"""Triton kernels for the memory-hierarchy experiments.

Each kernel is small on purpose: the chapter shows them with ``literalinclude``. On a machine
without a GPU they run through Triton's interpreter (see ``_triton``).
"""

from ._triton import tl, triton


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    """dst[i] = src[i]: every byte read once and written once."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@triton.jit
def read_kernel(src, partial, n, BLOCK: tl.constexpr):
    """partial[p] = sum of program p's block: every byte read once, almost nothing written."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=0.0)
    tl.store(partial + pid, tl.sum(x, axis=0))


@triton.jit
def reread_kernel(buf, partial, n_chunks, iters, step, BLOCK: tl.constexpr):
    """Re-read a working set of ``n_chunks * BLOCK`` floats inside ONE launch.

    Program p reads chunks p, p + step, p + 2 step, ... (mod n_chunks) for ``iters`` steps, so
    the whole grid sweeps the working set again and again. With ``step`` coprime to ``n_chunks``
    (see ``reread_step``) every program visits every chunk, whatever ``n_chunks`` mod the grid
    size is; with ``step`` equal to the grid size and ``n_chunks`` a multiple of it, each program
    would cycle through a private subset instead. ``.cg`` caches the loads in L2 only, so a small
    working set is served by the L2, not by each SM's L1.
    """
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(iters):
        chunk = (pid.to(tl.int64) + i * step) % n_chunks
        offs = chunk.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(buf + offs, cache_modifier=".cg")
    tl.store(partial + pid, tl.sum(acc, axis=0))


@triton.jit(do_not_specialize=["stride"])
def strided_read_kernel(src, partial, n, stride, BLOCK: tl.constexpr):
    """Read ``n`` floats, lane i of the grid reading element ``i * stride``.

    ``stride`` is not specialised: Triton would otherwise compile stride 1 as a constant
    (contiguous, vectorised loads), a different kernel from every other stride."""
    pid = tl.program_id(0)
    idx = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + idx * stride, mask=idx < n, other=0.0)
    tl.store(partial + pid, tl.sum(x, axis=0))
