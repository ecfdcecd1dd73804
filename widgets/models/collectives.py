"""Collective communication models: bus bandwidth, the alpha-beta cost of ring and tree
algorithms, the ring all-reduce schedule, data-parallel overlap, hierarchical all-reduce.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Conventions
-----------
- ``n`` is the number of ranks (one GPU each).
- ``size_bytes`` is the size ``S`` that nccl-tests prints and divides by the time: the size of the
  WHOLE buffer (NVIDIA nccl-tests, doc/PERFORMANCE.md and src/*.cu). For ``all_reduce``,
  ``broadcast`` and ``reduce`` it is the tensor every rank holds; for ``all_gather`` it is the
  OUTPUT (n shards); for ``reduce_scatter`` it is the INPUT (n shards); for ``all_to_all`` it is
  each rank's send buffer (n pieces, one per peer). :func:`nccl_tests_size_bytes` converts.
- ``link_bytes_per_s`` is each rank's bandwidth to the rest PER DIRECTION [B/s] (what the catalog
  stores as ``interconnect_bytes_per_s``); ``latency_s`` is the alpha of ONE step [s].
- Times in seconds, rates in bytes per second (decimal GB/s when printed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _check

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")
ALGORITHMS = ("ring", "tree")

# Network links per GPU, per direction [B/s] (one NIC per GPU, as in DGX/HGX H100 and H200 nodes).
NETWORK_LINKS = {
    "InfiniBand NDR / 400 GbE RoCE": (400e9 / 8, "400 Gb/s per port (IBTA NDR 4x; IEEE 802.3 400GbE), / 8 bits: 50 GB/s per direction; NVIDIA DGX H200 datasheet: 8 x ConnectX-7 400 Gb/s, one per GPU"),
    "InfiniBand HDR / 200 GbE RoCE": (200e9 / 8, "200 Gb/s per port (IBTA HDR 4x; IEEE 802.3 200GbE), / 8 bits: 25 GB/s per direction; NVIDIA DGX A100 datasheet: 8 x ConnectX-6 200 Gb/s"),
}


def _op(op) -> str:
    return _check.choice("op", op, OPS)


def _ranks(n, minimum: int = 1) -> int:
    if isinstance(n, bool):
        raise ValueError(f"n must be an integer >= {minimum}, got {n!r}")
    return _check.integer("n", n, minimum=minimum)


def _log2_ceil(n: int) -> int:
    return (n - 1).bit_length()  # ceil(log2 n) for n >= 1


# --------------------------------------------------------------------------------------------
# What each collective does
# --------------------------------------------------------------------------------------------
def collective_semantics(op: str, n: int) -> tuple[list, list]:
    """Who holds what before and after ``op`` on ``n`` ranks (root 0 for broadcast and reduce).

    Returns ``(before, after)``: for each rank, a list of the pieces it holds, written
    ``x3`` (rank 3's whole input), ``x3[1]`` (piece 1 of it), ``sum`` (the element-wise sum of all
    inputs), ``sum[1]`` (piece 1 of the sum); ``-`` means nothing defined.

    >>> collective_semantics("reduce_scatter", 2)
    ([['x0'], ['x1']], [['sum[0]'], ['sum[1]']])
    >>> collective_semantics("all_to_all", 2)[1]
    [['x0[0]', 'x1[0]'], ['x0[1]', 'x1[1]']]
    """
    o, k = _op(op), _ranks(n)
    ranks = range(k)
    if o == "all_to_all":
        return [[f"x{r}[{c}]" for c in ranks] for r in ranks], [[f"x{s}[{r}]" for s in ranks] for r in ranks]
    before = [[f"x{r}"] for r in ranks]
    if o == "all_reduce":
        return before, [["sum"] for _ in ranks]
    if o == "reduce_scatter":
        return before, [[f"sum[{r}]"] for r in ranks]
    if o == "all_gather":
        return before, [[f"x{s}" for s in ranks] for _ in ranks]
    if o == "broadcast":
        return [["x0"]] + [["-"] for _ in range(k - 1)], [["x0"] for _ in ranks]
    return before, [["sum"]] + [["-"] for _ in range(k - 1)]  # reduce


# --------------------------------------------------------------------------------------------
# Bandwidth: algbw and busbw (nccl-tests)
# --------------------------------------------------------------------------------------------
def busbw_factor(op: str, n: int) -> float:
    """The factor nccl-tests multiplies algorithm bandwidth by to get bus bandwidth.

    ``all_reduce``: 2(n-1)/n; ``all_gather``, ``reduce_scatter``, ``all_to_all``: (n-1)/n;
    ``broadcast``, ``reduce``: 1 (NVIDIA nccl-tests, doc/PERFORMANCE.md, "Summary").
    It is also the bandwidth term of the ring algorithm: the bytes each rank must send per byte
    of ``S``.

    Parameters
    ----------
    op : str
        One of ``OPS``.
    n : int
        Number of ranks, >= 1.

    Examples
    --------
    >>> busbw_factor("all_reduce", 8)
    1.75
    >>> busbw_factor("all_gather", 8), busbw_factor("broadcast", 8)
    (0.875, 1.0)
    """
    o, k = _op(op), _ranks(n)
    if o == "all_reduce":
        return 2.0 * (k - 1) / k
    if o in ("all_gather", "reduce_scatter", "all_to_all"):
        return (k - 1) / k
    return 1.0


def algbw_bytes_per_s(size_bytes: float, time_s: float) -> float:
    """Algorithm bandwidth ``S / t`` [B/s] (nccl-tests, doc/PERFORMANCE.md).

    >>> round(algbw_bytes_per_s(2**30, 3.25e-3) / 1e9, 1)  # 1 GiB in 3.25 ms [GB/s]
    330.4
    """
    s = _check.non_negative("size_bytes", size_bytes)
    t = _check.positive("time_s", time_s)
    return s / t


def busbw_bytes_per_s(op: str, n: int, size_bytes: float, time_s: float) -> float:
    """Bus bandwidth ``busbw_factor(op, n) * S / t`` [B/s]: comparable with a link's
    per-direction bandwidth whatever the number of ranks (nccl-tests, doc/PERFORMANCE.md).

    >>> round(busbw_bytes_per_s("all_reduce", 8, 2**30, 6e-3) / 1e9, 1)
    313.2
    """
    return busbw_factor(op, n) * algbw_bytes_per_s(size_bytes, time_s)


def time_from_busbw_s(op: str, n: int, size_bytes: float, busbw: float) -> float:
    """The converse: the time [s] an ``op`` of ``size_bytes`` takes at bus bandwidth ``busbw``
    [B/s]. ``inf`` when the factor is 0 (one rank moves nothing, so busbw says nothing).

    >>> round(time_from_busbw_s("all_reduce", 8, 2**30, 450e9) * 1e3, 3)  # ms
    4.176
    """
    s = _check.non_negative("size_bytes", size_bytes)
    b = _check.positive("busbw", busbw)
    f = busbw_factor(op, n)
    return f * s / b if f > 0 else math.inf


def nccl_tests_size_bytes(op: str, n: int, rank_buffer_bytes: float) -> float:
    """The size ``S`` nccl-tests prints [B], from the tensor each rank passes to torch.

    ``rank_buffer_bytes`` is the input of ``all_gather_into_tensor`` (one shard), the output of
    ``reduce_scatter_tensor`` (one shard), the tensor of ``all_reduce``, ``broadcast`` and
    ``reduce``, or the input of ``all_to_all_single``. For ``all_gather`` and ``reduce_scatter``
    nccl-tests reports ``count * typesize * nranks`` (src/all_gather.cu, src/reduce_scatter.cu):
    the whole, n-shard buffer.

    >>> nccl_tests_size_bytes("all_gather", 8, 2**20) == 8 * 2**20
    True
    >>> nccl_tests_size_bytes("all_reduce", 8, 2**20) == 2**20
    True
    """
    o, k = _op(op), _ranks(n)
    b = _check.non_negative("rank_buffer_bytes", rank_buffer_bytes)
    return b * k if o in ("all_gather", "reduce_scatter") else b


# --------------------------------------------------------------------------------------------
# Alpha-beta cost: ring and tree
# --------------------------------------------------------------------------------------------
def ring_steps(op: str, n: int) -> int:
    """Sequential steps (alpha terms) of the ring algorithm: ``2(n-1)`` for all-reduce
    (a reduce-scatter then an all-gather), ``n-1`` for the others (pipelined chain for
    broadcast and reduce, pairwise exchange for all-to-all).

    >>> ring_steps("all_reduce", 4), ring_steps("all_gather", 4)
    (6, 3)
    """
    o, k = _op(op), _ranks(n)
    return 2 * (k - 1) if o == "all_reduce" else k - 1


def tree_steps(op: str, n: int) -> int:
    """Sequential steps of the logarithmic ("tree") algorithms: ``2 ceil(log2 n)`` for
    all-reduce (reduce up a binomial tree, broadcast down), ``ceil(log2 n)`` for the others.

    >>> tree_steps("all_reduce", 8), tree_steps("broadcast", 8), tree_steps("broadcast", 9)
    (6, 3, 4)
    """
    o, k = _op(op), _ranks(n)
    depth = _log2_ceil(k)
    return 2 * depth if o == "all_reduce" else depth


def _cost_terms(op: str, n: int, algorithm: str) -> tuple[float, float]:
    """(alpha count, bytes sent per rank per byte of S) of one algorithm."""
    o, k = _op(op), _ranks(n)
    a = _check.choice("algorithm", algorithm, ALGORITHMS)
    if a == "ring":
        return float(ring_steps(o, k)), busbw_factor(o, k)
    depth = _log2_ceil(k)
    if o in ("broadcast", "reduce"):  # binomial tree: the whole message on each of lg n levels
        return float(depth), float(depth)
    if o == "all_reduce":  # binomial reduce, then binomial broadcast
        return 2.0 * depth, 2.0 * depth
    if o in ("all_gather", "reduce_scatter"):  # recursive doubling / halving
        return float(depth), (k - 1) / k
    return float(depth), depth / 2.0  # all_to_all: Bruck, n/2 of the buffer on each of lg n steps


def collective_time_s(
    op: str,
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    algorithm: str = "ring",
) -> float:
    """Alpha-beta time of one collective [s]: ``steps * latency_s + c * S / link_bytes_per_s``.

    ``algorithm="ring"``: ``c`` is :func:`busbw_factor` and the steps are :func:`ring_steps`
    (MPICH's ring all-gather and all-reduce, pairwise all-to-all, pipelined-chain broadcast):
    the ring moves the fewest bytes per rank, so its busbw equals the link bandwidth.

    ``algorithm="tree"``: the logarithmic algorithms of MPICH (Thakur, Rabenseifner & Gropp
    2005): binomial tree for broadcast and reduce (``lg n (alpha + S beta)``), reduce then
    broadcast for all-reduce, recursive doubling/halving for all-gather and reduce-scatter
    (``lg n alpha + (n-1)/n S beta``), Bruck for all-to-all (``lg n alpha + S/2 lg n beta``).
    Fewer steps, more bytes. ``lg n`` is ``ceil(log2 n)``.

    Parameters
    ----------
    op : str
        One of ``OPS``.
    size_bytes : float
        ``S`` by the nccl-tests convention [B], >= 0.
    n : int
        Ranks, >= 1. One rank takes no time.
    link_bytes_per_s : float
        Each rank's bandwidth per direction [B/s], > 0.
    latency_s : float
        Alpha: the fixed cost of one step [s], >= 0.
    algorithm : str
        ``"ring"`` or ``"tree"``.

    Examples
    --------
    >>> collective_time_s("all_reduce", 1e9, 8, 100e9)  # 2*7/8 * 1e9 / 1e11
    0.0175
    >>> collective_time_s("broadcast", 1e9, 8, 100e9, algorithm="tree")  # 3 levels x 10 ms
    0.03
    """
    alphas, c = _cost_terms(op, n, algorithm)
    s = _check.non_negative("size_bytes", size_bytes)
    b = _check.positive("link_bytes_per_s", link_bytes_per_s)
    lat = _check.non_negative("latency_s", latency_s)
    return alphas * lat + c * s / b


def ring_allreduce_time_s(size_bytes: float, n: int, link_bytes_per_s: float, latency_s: float = 0.0) -> float:
    """Ring all-reduce time [s]: ``2(n-1)/n * S/B + 2(n-1) * latency``.

    Each rank sends ``2(n-1)`` chunks of ``S/n`` bytes, one per step: ``n-1`` steps of
    reduce-scatter, then ``n-1`` of all-gather (Patarasuk & Yuan 2009).

    >>> round(ring_allreduce_time_s(2**30, 2, 450e9) * 1e3, 3)  # two H200s over NVLink [ms]
    2.386
    >>> round(ring_allreduce_time_s(2**30, 8, 450e9, 5e-6) * 1e3, 3)
    4.246
    """
    s = _check.non_negative("size_bytes", size_bytes)
    k = _ranks(n)
    b = _check.positive("link_bytes_per_s", link_bytes_per_s)
    lat = _check.non_negative("latency_s", latency_s)
    return 2.0 * (k - 1) / k * s / b + 2.0 * (k - 1) * lat


def ring_tree_crossover_bytes(op: str, n: int, link_bytes_per_s: float, latency_s: float) -> float:
    """The message size [B] below which the tree is faster than the ring.

    ``0.0`` when the ring is never slower, ``inf`` when the tree is never slower (all-gather
    and reduce-scatter: same bytes, fewer steps).

    >>> round(ring_tree_crossover_bytes("all_reduce", 8, 100e9, 1e-6) / 1e3, 1)  # kB
    188.2
    >>> ring_tree_crossover_bytes("all_reduce", 2, 100e9, 1e-6)
    0.0
    """
    o, k = _op(op), _ranks(n)
    b = _check.positive("link_bytes_per_s", link_bytes_per_s)
    lat = _check.non_negative("latency_s", latency_s)
    a_ring, c_ring = _cost_terms(o, k, "ring")
    a_tree, c_tree = _cost_terms(o, k, "tree")
    alpha_saved = (a_ring - a_tree) * lat  # what the tree saves in latency
    beta_extra = (c_tree - c_ring) / b  # what it costs per byte
    if alpha_saved <= 0:
        return 0.0
    if beta_extra <= 0:
        return math.inf
    return alpha_saved / beta_extra


# --------------------------------------------------------------------------------------------
# Fitting alpha and beta to measurements
# --------------------------------------------------------------------------------------------
def fit_alpha_beta(sizes_bytes, times_s) -> tuple[float, float]:
    """Fit ``t = latency + S / bytes_per_s`` to measured ``(S, t)`` pairs.

    Least squares on RELATIVE error (weights ``1/t**2``), so microsecond latencies and
    millisecond transfers both count; the latency is kept >= 0. ``bytes_per_s`` is the
    asymptotic ALGORITHM bandwidth (multiply by :func:`busbw_factor` for bus bandwidth) and
    ``latency`` is the whole call's fixed cost (divide by the step count for one step's alpha).

    Parameters
    ----------
    sizes_bytes : sequence of float
        Message sizes [B], >= 0, at least two distinct.
    times_s : sequence of float
        Measured times [s], > 0, same length.

    Returns
    -------
    (latency_s, bytes_per_s) : tuple of float

    Examples
    --------
    >>> sizes = [1e3, 1e6, 1e9]
    >>> lat, bw = fit_alpha_beta(sizes, [20e-6 + s / 300e9 for s in sizes])
    >>> round(lat * 1e6, 6), round(bw / 1e9, 6)
    (20.0, 300.0)
    """
    s = np.asarray(sizes_bytes, dtype=float).ravel()
    t = np.asarray(times_s, dtype=float).ravel()
    if s.size < 2 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"sizes_bytes must hold at least 2 finite sizes >= 0, got {sizes_bytes!r}")
    if np.unique(s).size < 2:
        raise ValueError(f"sizes_bytes must hold at least 2 distinct sizes, got {sizes_bytes!r}")
    if t.shape != s.shape:
        raise ValueError(f"times_s must have one time per size ({s.size}), got {t.size}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"times_s must hold finite times > 0, got {times_s!r}")
    w = 1.0 / t**2
    # Normal equations of min sum w (a + g s - t)^2, with g = 1/bandwidth.
    sw, sws, swss = w.sum(), (w * s).sum(), (w * s * s).sum()
    swt, swst = (w * t).sum(), (w * s * t).sum()
    det = sw * swss - sws**2
    a = (swt * swss - sws * swst) / det
    g = (sw * swst - sws * swt) / det
    if a < 0:
        a, g = 0.0, swst / swss
    if g <= 0:
        raise ValueError("times_s must grow with sizes_bytes: the fitted time per byte is not positive")
    return float(a), float(1.0 / g)


# --------------------------------------------------------------------------------------------
# The ring all-reduce, step by step
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RingTransfer:
    """One send in a ring all-reduce step: ``src`` sends its chunk ``chunk`` to ``dst``, which
    adds it to its own copy (``phase == "reduce_scatter"``) or overwrites it (``"all_gather"``)."""

    step: int
    phase: str
    src: int
    dst: int
    chunk: int


def ring_allreduce_schedule(n: int) -> list:
    """The ``2(n-1)`` steps of a ring all-reduce on ``n`` ranks, each a list of ``n`` transfers.

    Rank ``r`` always sends to ``r+1`` and receives from ``r-1`` (mod n). At step ``s`` it sends
    chunk ``(r - s) mod n``: the chunk it has just received and updated. After the ``n-1``
    reduce-scatter steps rank ``r`` holds the full sum of chunk ``(r + 1) mod n``; the ``n-1``
    all-gather steps pass the finished chunks on around the ring.

    >>> [(t.src, t.dst, t.chunk) for t in ring_allreduce_schedule(3)[0]]
    [(0, 1, 0), (1, 2, 1), (2, 0, 2)]
    >>> len(ring_allreduce_schedule(4))
    6
    """
    k = _ranks(n, minimum=2)
    steps = []
    for s in range(2 * (k - 1)):
        phase = "reduce_scatter" if s < k - 1 else "all_gather"
        steps.append([RingTransfer(s, phase, r, (r + 1) % k, (r - s) % k) for r in range(k)])
    return steps


def ring_allreduce_contributions(n: int, step: int) -> np.ndarray:
    """Which ranks' data each rank's copy of each chunk holds after ``step`` steps.

    Returns a boolean array ``[rank, chunk, source]``: ``True`` where rank's copy of chunk
    includes source rank's contribution. ``step = 0`` is the start (each rank holds only its
    own data); ``step = 2(n-1)`` is the end (every copy holds all ``n``).

    >>> int(ring_allreduce_contributions(4, 6).sum(axis=2).min())  # every chunk complete at the end
    4
    """
    k = _ranks(n, minimum=2)
    st = _check.integer("step", step, minimum=0, maximum=2 * (k - 1))
    have = np.zeros((k, k, k), dtype=bool)
    for r in range(k):
        have[r, :, r] = True
    for transfers in ring_allreduce_schedule(k)[:st]:
        sent = [(t, have[t.src, t.chunk].copy()) for t in transfers]  # all sends of a step at once
        for t, data in sent:
            if t.phase == "reduce_scatter":
                have[t.dst, t.chunk] |= data
            else:
                have[t.dst, t.chunk] = data
    return have


def simulate_ring_allreduce(chunks_per_rank) -> np.ndarray:
    """Run the ring schedule on numbers: ``chunks_per_rank[r][c]`` is rank ``r``'s chunk ``c``
    (n ranks, n chunks, each chunk an array); returns every rank's result, shape like the input.

    >>> simulate_ring_allreduce([[1, 2], [10, 20]]).tolist()
    [[11.0, 22.0], [11.0, 22.0]]
    """
    data = np.array(chunks_per_rank, dtype=float)
    if data.ndim < 2 or data.shape[0] != data.shape[1] or data.shape[0] < 2:
        raise ValueError(f"chunks_per_rank must be n x n chunks with n >= 2, got shape {data.shape}")
    for transfers in ring_allreduce_schedule(data.shape[0]):
        sent = [(t, data[t.src, t.chunk].copy()) for t in transfers]
        for t, payload in sent:
            if t.phase == "reduce_scatter":
                data[t.dst, t.chunk] += payload
            else:
                data[t.dst, t.chunk] = payload
    return data


# --------------------------------------------------------------------------------------------
# Data parallelism: bucketed all-reduce overlapped with the backward pass
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataParallelStep:
    """Where the time of one data-parallel backward pass plus gradient all-reduce goes [s]."""

    n_buckets: int
    bucket_bytes: float
    comm_per_bucket_s: float
    total_comm_s: float
    backward_s: float
    finish_s: float  # when the last bucket's all-reduce ends, from the start of backward
    exposed_comm_s: float  # finish_s - backward_s: communication not hidden behind compute

    @property
    def hidden_fraction(self) -> float:
        """Share of the communication time overlapped with the backward pass."""
        if self.total_comm_s <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - self.exposed_comm_s / self.total_comm_s))


def dp_step(
    grad_bytes: float,
    bucket_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    algorithm: str = "ring",
) -> DataParallelStep:
    """Exposed communication of data-parallel training with bucketed gradient all-reduce.

    Gradients appear at a steady rate during the backward pass; each time ``bucket_bytes`` of
    them are ready, one all-reduce of that bucket starts, as soon as the previous one has
    finished (one communication stream, as in PyTorch DDP; Li et al. 2020). What is left after
    the backward pass ends is exposed.

    Parameters
    ----------
    grad_bytes : float
        Gradient bytes per replica [B], > 0.
    bucket_bytes : float
        Bucket size [B], > 0 (PyTorch DDP's default ``bucket_cap_mb=25``); larger than
        ``grad_bytes`` means one bucket.
    backward_s : float
        Backward-pass compute time [s], >= 0.
    n, link_bytes_per_s, latency_s, algorithm
        As in :func:`collective_time_s`.

    Examples
    --------
    One bucket: nothing overlaps, all 17.5 ms of communication is exposed.

    >>> p = dp_step(1e9, 2e9, 0.1, 8, 100e9)
    >>> p.n_buckets, round(p.exposed_comm_s * 1e3, 3)
    (1, 17.5)
    >>> round(dp_step(1e9, 1e8, 0.1, 8, 100e9).exposed_comm_s * 1e3, 3)  # ten buckets
    1.75
    """
    g = _check.positive("grad_bytes", grad_bytes)
    bb = _check.positive("bucket_bytes", bucket_bytes)
    bwd = _check.non_negative("backward_s", backward_s)
    full, rest = divmod(g, bb)
    sizes = [bb] * int(full) + ([rest] if rest > 1e-9 * g else [])
    if not sizes:
        sizes = [g]
    t_end = 0.0
    ready = 0.0
    comm = []
    for size in sizes:
        ready += size
        t_ready = bwd * min(1.0, ready / g)
        c = collective_time_s("all_reduce", size, n, link_bytes_per_s, latency_s, algorithm)
        comm.append(c)
        t_end = max(t_end, t_ready) + c
    return DataParallelStep(
        n_buckets=len(sizes),
        bucket_bytes=min(bb, g),
        comm_per_bucket_s=comm[0],
        total_comm_s=float(sum(comm)),
        backward_s=bwd,
        finish_s=t_end,
        exposed_comm_s=max(0.0, t_end - bwd),
    )


def dp_timeline(
    grad_bytes: float,
    bucket_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    algorithm: str = "ring",
) -> list:
    """The buckets of :func:`dp_step` as ``(ready_s, start_s, end_s, bucket_bytes)`` tuples.

    >>> [tuple(round(x, 4) for x in b[:3]) for b in dp_timeline(1e9, 5e8, 0.1, 2, 100e9)]
    [(0.05, 0.05, 0.055), (0.1, 0.1, 0.105)]
    """
    g = _check.positive("grad_bytes", grad_bytes)
    bb = _check.positive("bucket_bytes", bucket_bytes)
    bwd = _check.non_negative("backward_s", backward_s)
    full, rest = divmod(g, bb)
    sizes = [bb] * int(full) + ([rest] if rest > 1e-9 * g else []) or [g]
    out, ready, t_end = [], 0.0, 0.0
    for size in sizes:
        ready += size
        t_ready = bwd * min(1.0, ready / g)
        start = max(t_end, t_ready)
        t_end = start + collective_time_s("all_reduce", size, n, link_bytes_per_s, latency_s, algorithm)
        out.append((t_ready, start, t_end, size))
    return out


def best_bucket_bytes(
    grad_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float,
    candidates=None,
) -> float:
    """The bucket size [B] among ``candidates`` (default: 1 MiB to 1 GiB in powers of two)
    with the least exposed communication; ties go to the larger bucket (fewer calls).

    >>> best_bucket_bytes(1e9, 0.1, 8, 100e9, 20e-6) / 2**20  # MiB
    16.0
    """
    if candidates is None:
        candidates = [2.0**k for k in range(20, 31)]
    cands = [_check.positive("candidates", c) for c in candidates]
    if not cands:
        raise ValueError(f"candidates must hold at least one bucket size, got {candidates!r}")
    scored = [(dp_step(grad_bytes, c, backward_s, n, link_bytes_per_s, latency_s).exposed_comm_s, -c) for c in cands]
    best = min(scored, key=lambda x: (round(x[0], 15), x[1]))
    return -best[1]


# --------------------------------------------------------------------------------------------
# Across nodes: hierarchical all-reduce
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HierarchicalAllReduce:
    """Times [s] of the three phases of a two-level all-reduce and of a flat ring."""

    intra_reduce_scatter_s: float
    inter_all_reduce_s: float
    intra_all_gather_s: float
    flat_ring_s: float

    @property
    def total_s(self) -> float:
        return self.intra_reduce_scatter_s + self.inter_all_reduce_s + self.intra_all_gather_s

    @property
    def speedup(self) -> float:
        """Flat ring time over hierarchical time."""
        return self.flat_ring_s / self.total_s if self.total_s > 0 else 1.0


def hierarchical_allreduce(
    size_bytes: float,
    gpus_per_node: int,
    nodes: int,
    intra_bytes_per_s: float,
    inter_bytes_per_s: float,
    intra_latency_s: float = 0.0,
    inter_latency_s: float = 0.0,
) -> HierarchicalAllReduce:
    """A two-level all-reduce: reduce-scatter inside each node (ring over NVLink), all-reduce of
    each ``S/g`` shard across nodes (``g`` rings at once, one NIC per GPU), all-gather inside the
    node. The flat ring over all ``g * nodes`` GPUs is limited by its slowest hop, the network.

    ``inter_bytes_per_s`` is one GPU's network bandwidth per direction [B/s].

    >>> h = hierarchical_allreduce(2**30, 8, 4, 450e9, 50e9)
    >>> round(h.total_s * 1e3, 2), round(h.flat_ring_s * 1e3, 2)  # ms
    (8.2, 41.61)
    """
    s = _check.non_negative("size_bytes", size_bytes)
    g = _check.integer("gpus_per_node", gpus_per_node, minimum=1)
    m = _check.integer("nodes", nodes, minimum=1)
    bi = _check.positive("intra_bytes_per_s", intra_bytes_per_s)
    be = _check.positive("inter_bytes_per_s", inter_bytes_per_s)
    ai = _check.non_negative("intra_latency_s", intra_latency_s)
    ae = _check.non_negative("inter_latency_s", inter_latency_s)
    rs = collective_time_s("reduce_scatter", s, g, bi, ai)
    ar = collective_time_s("all_reduce", s / g, m, be, ae)
    ag = collective_time_s("all_gather", s, g, bi, ai)
    slow = be if m > 1 else bi
    lat = ae if m > 1 else ai
    flat = collective_time_s("all_reduce", s, g * m, slow, lat)
    return HierarchicalAllReduce(rs, ar, ag, flat)
