"""Collective communication models: bus bandwidth, the alpha-beta cost of ring and tree
algorithms, the ring all-reduce schedule, data-parallel overlap, hierarchical all-reduce.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Notes
-----
- ``n`` is the number of ranks (one GPU each).
- ``size_bytes`` is the size ``S`` that nccl-tests prints and divides by the time: the size of the
  WHOLE buffer (NVIDIA nccl-tests, doc/PERFORMANCE.md and ``src/*.cu``). For ``all_reduce``,
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

from ..hardware import NICS, get_gpu
from . import _check

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")
ALGORITHMS = ("ring", "tree")

# Bounds on counts, so that no call loops or allocates without limit.
MAX_RANKS = 2**20  # alpha-beta formulas (about a million GPUs)
MAX_LISTED_RANKS = 64  # functions that list every rank's pieces or every transfer
MAX_BUCKETS = 100_000  # buckets of one data-parallel step
MAX_CHUNKS = 2**30  # pipeline chunks of a chain broadcast
MAX_POINTS = 100_000  # points given to fit_alpha_beta

# The default latencies: NCCL's own cost model (NVIDIA/nccl tag v2.28.9-1, src/graph/tuning.cc,
# tables ``baseLatencies`` and ``hwLatencies``) for the ring algorithm with the LL PROTOCOL, the one NCCL
# picks for small messages: a fixed 6.6 us per call, plus 0.6 us per step between GPUs on NVLink and 2.7 us
# per step that crosses the network. They are protocol-specific: LL's bandwidth is capped (half the link's
# bus bandwidth, at most ``llMaxBws``), and LL128 and Simple, which NCCL picks for larger messages, have
# higher latencies (``NCCL_BASE_LATENCY_S``, ``NCCL_NVLINK_HW_LATENCY_S``, ``NCCL_NET_HW_LATENCY_S`` below;
# :func:`nccl_ring_allreduce_time_s` takes latency and bandwidth from the same protocol). Paired with the
# full link bandwidth they suit latency-bound messages, and cost a large message only a negligible
# latency error. These are the values of NCCL 2.18 and later (NCCL 2.17 and earlier had 3.6 us and
# 0.47 us); the reference record ran NCCL 2.28.9. For a ring all-reduce on 8 GPUs of one node that is
# 6.6 + 14 x 0.6 = 15.0 us per call, on 2 GPUs 6.6 + 2 x 0.6 = 7.8 us. Across nodes NCCL >= 2.18 also
# raises each intra-node step to a per-step network overhead (``netOverhead``, ``NCCL_NET_OVERHEAD_S``)
# and multiplies a Simple-protocol ring all-reduce's latency by 1.4 (its "plateau effect of ring",
# Ampere and later) once the message is large; the alpha-beta functions leave both out,
# :func:`nccl_ring_allreduce_time_s` applies them. These are the latencies of NCCL's device kernels; a
# call from Python through torch.distributed costs more (the chapter measures how much).
NCCL_CALL_LATENCY_S = 6.6e-6
NCCL_NVLINK_STEP_LATENCY_S = 0.6e-6
NCCL_NET_STEP_LATENCY_S = 2.7e-6
DEFAULT_CALL_LATENCY_S = NCCL_CALL_LATENCY_S
DEFAULT_STEP_LATENCY_S = NCCL_NVLINK_STEP_LATENCY_S
# Across nodes NCCL multiplies a large Simple-protocol ring all-reduce's latency by this on Ampere and later
# (tuning.cc, ncclTopoGetAlgoTime, "Plateau effect of ring": 1.4 for compute capability >= 8.0, 1.9 below;
# only for algorithm ring, protocol Simple, all-reduce, more than one node and S / (channels x ranks) >= 64 B).
# Only :func:`nccl_ring_allreduce_time_s` applies it.
NCCL_RING_PLATEAU_FACTOR = 1.4
# NCCL's cost model credits NVLink SHARP (NVLS) with this share of the NVLink bandwidth on Hopper
# (NVIDIA/nccl v2.28.9-1, src/graph/tuning.cc, ``nvlsEfficiency``: 0.85 Hopper, 0.74 Blackwell).
NCCL_NVLS_EFFICIENCY_HOPPER = 0.85

# Network links per GPU, per direction [B/s] (one NIC per GPU, as in DGX/HGX H100 and H200 nodes):
# the catalog's NICS (widgets.hardware), as name -> (bytes per second, source).
NETWORK_LINKS = {name: (link.bytes_per_s, link.source) for name, link in NICS.items()}


# Physical bounds on inputs, so that finite input always gives a finite result.
MAX_BYTES = 2.0**60  # 1 EiB
MIN_RATE, MAX_RATE = 1e-3, 1e30  # bytes per second (the upper end admits any busbw a measured time gives)
MAX_SECONDS = 1e6  # a latency or compute time
MIN_TIME_S, MAX_TIME_S = 1e-12, 1e9  # a measured time


def _bytes(name: str, value, positive: bool = False) -> float:
    v = _check.positive(name, value) if positive else _check.non_negative(name, value)
    if v > MAX_BYTES:
        raise ValueError(f"{name} must be <= 2**60 B (1 EiB), got {value!r}")
    return v


def _rate(name: str, value) -> float:
    _check.positive(name, value)
    return _check.in_range(name, value, MIN_RATE, MAX_RATE, "B/s")


def _seconds(name: str, value) -> float:
    _check.non_negative(name, value)
    return _check.in_range(name, value, 0, MAX_SECONDS, "s")


def _duration(name: str, value) -> float:
    _check.positive(name, value)
    return _check.in_range(name, value, MIN_TIME_S, MAX_TIME_S, "s")


def _op(op) -> str:
    return _check.choice("op", op, OPS)


def _ranks(n, minimum: int = 1, maximum: int = MAX_RANKS, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], got {n!r}")
    return _check.integer(name, n, minimum=minimum, maximum=maximum)


def _log2_ceil(n: int) -> int:
    return (n - 1).bit_length()  # ceil(log2 n) for n >= 1


# --------------------------------------------------------------------------------------------
# What each collective does
# --------------------------------------------------------------------------------------------
def collective_semantics(op: str, n: int) -> tuple[list, list]:
    """Who holds what before and after a collective (root 0 for broadcast and reduce).

    Each rank's pieces are written ``x3`` (rank 3's whole input), ``x3[1]`` (piece 1 of it),
    ``sum`` (the element-wise sum of all inputs), ``sum[1]`` (piece 1 of the sum); ``-`` means
    nothing defined.

    Explained in :ref:`collectives` > The six collectives.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks [-], 1 to ``MAX_LISTED_RANKS`` (64).

    Returns
    -------
    before : list of list of str
        The pieces each rank holds before.
    after : list of list of str
        The pieces each rank holds after.

    Raises
    ------
    ValueError
        If ``op`` is unknown or ``n`` is out of range.

    Examples
    --------
    >>> collective_semantics("reduce_scatter", 2)
    ([['x0'], ['x1']], [['sum[0]'], ['sum[1]']])
    >>> collective_semantics("all_to_all", 2)[1]
    [['x0[0]', 'x1[0]'], ['x0[1]', 'x1[1]']]
    """
    o, k = _op(op), _ranks(n, maximum=MAX_LISTED_RANKS)
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
    ``broadcast``, ``reduce``: 1 (NVIDIA nccl-tests, doc/PERFORMANCE.md, "Summary"). It is also the
    bandwidth term of the ring algorithm: the bytes each rank must send per byte of ``S``.

    Explained in :ref:`collectives` > Algorithm bandwidth and bus bandwidth.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.

    Returns
    -------
    float
        The factor [-].

    Raises
    ------
    ValueError
        If ``op`` is unknown or ``n`` is out of range.

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
    """Algorithm bandwidth ``S / t`` (nccl-tests, doc/PERFORMANCE.md).

    Explained in :ref:`collectives` > Algorithm bandwidth and bus bandwidth.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    time_s : float
        Measured time of the collective [s], 1e-12 to 1e9.

    Returns
    -------
    float
        Algorithm bandwidth [B/s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(algbw_bytes_per_s(2**30, 3.25e-3) / 1e9, 1)  # 1 GiB in 3.25 ms [GB/s]
    330.4
    """
    s = _bytes("size_bytes", size_bytes)
    t = _duration("time_s", time_s)
    return s / t


def busbw_bytes_per_s(op: str, n: int, size_bytes: float, time_s: float) -> float:
    """Bus bandwidth ``busbw_factor(op, n) * S / t``.

    Comparable with a link's per-direction bandwidth whatever the number of ranks (nccl-tests,
    doc/PERFORMANCE.md).

    Explained in :ref:`collectives` > Algorithm bandwidth and bus bandwidth.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    time_s : float
        Measured time of the collective [s], 1e-12 to 1e9.

    Returns
    -------
    float
        Bus bandwidth [B/s].

    Raises
    ------
    ValueError
        If an input is out of range or ``op`` is unknown.

    Examples
    --------
    >>> round(busbw_bytes_per_s("all_reduce", 8, 2**30, 6e-3) / 1e9, 1)
    313.2
    """
    return busbw_factor(op, n) * algbw_bytes_per_s(size_bytes, time_s)


def time_from_busbw_s(op: str, n: int, size_bytes: float, busbw: float) -> float:
    """The time a collective takes at a given bus bandwidth (the converse of :func:`busbw_bytes_per_s`).

    Explained in :ref:`collectives` > Algorithm bandwidth and bus bandwidth.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    busbw : float
        Bus bandwidth [B/s], > 0.

    Returns
    -------
    float
        Time [s]; ``inf`` when the factor is 0 (one rank moves nothing, so busbw says nothing).

    Raises
    ------
    ValueError
        If an input is out of range or ``op`` is unknown.

    Examples
    --------
    >>> round(time_from_busbw_s("all_reduce", 8, 2**30, 450e9) * 1e3, 3)  # ms
    4.176
    """
    s = _bytes("size_bytes", size_bytes)
    b = _rate("busbw", busbw)
    f = busbw_factor(op, n)
    return f * s / b if f > 0 else math.inf


def nccl_tests_size_bytes(op: str, n: int, rank_buffer_bytes: float) -> float:
    """The size ``S`` nccl-tests prints, from the tensor each rank passes to torch.

    ``rank_buffer_bytes`` is the input of ``all_gather_into_tensor`` (one shard), the output of
    ``reduce_scatter_tensor`` (one shard), the tensor of ``all_reduce``, ``broadcast`` and
    ``reduce``, or the input of ``all_to_all_single``. For ``all_gather`` and ``reduce_scatter``
    nccl-tests reports ``count * typesize * nranks`` (src/all_gather.cu, src/reduce_scatter.cu):
    the whole, n-shard buffer.

    Explained in :ref:`collectives` > The six collectives.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    rank_buffer_bytes : float
        Bytes of the tensor one rank passes [B], >= 0.

    Returns
    -------
    float
        ``S`` [B].

    Raises
    ------
    ValueError
        If an input is out of range or ``op`` is unknown.

    Examples
    --------
    >>> nccl_tests_size_bytes("all_gather", 8, 2**20) == 8 * 2**20
    True
    >>> nccl_tests_size_bytes("all_reduce", 8, 2**20) == 2**20
    True
    """
    o, k = _op(op), _ranks(n)
    b = _bytes("rank_buffer_bytes", rank_buffer_bytes)
    return b * k if o in ("all_gather", "reduce_scatter") else b


# --------------------------------------------------------------------------------------------
# Alpha-beta cost: ring and tree
# --------------------------------------------------------------------------------------------
def ring_steps(op: str, n: int) -> int:
    """Sequential steps (alpha terms) of the ring algorithm.

    ``2(n-1)`` for all-reduce (a reduce-scatter then an all-gather), ``n-1`` for all-gather,
    reduce-scatter and all-to-all (pairwise exchange), and ``n-1`` for broadcast and reduce sent as
    ONE chunk down the chain (with ``k`` pipelined chunks the chain takes ``n+k-2`` steps:
    :func:`pipelined_chain_time_s`).

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.

    Returns
    -------
    int
        Steps [-].

    Raises
    ------
    ValueError
        If ``op`` is unknown or ``n`` is out of range.

    Examples
    --------
    >>> ring_steps("all_reduce", 4), ring_steps("all_gather", 4)
    (6, 3)
    """
    o, k = _op(op), _ranks(n)
    return 2 * (k - 1) if o == "all_reduce" else k - 1


def tree_steps(op: str, n: int) -> int:
    """Sequential steps of the logarithmic algorithms of MPICH: ``ceil(log2 n)`` for every op.

    Recursive doubling for all-reduce and all-gather, recursive halving for reduce-scatter,
    binomial tree for broadcast and reduce, Bruck for all-to-all (Thakur, Rabenseifner & Gropp
    2005).

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.

    Returns
    -------
    int
        Steps [-].

    Raises
    ------
    ValueError
        If ``op`` is unknown or ``n`` is out of range.

    Examples
    --------
    >>> tree_steps("all_reduce", 8), tree_steps("broadcast", 8), tree_steps("broadcast", 9)
    (3, 3, 4)
    """
    _op(op)
    return _log2_ceil(_ranks(n))


def optimal_chain_chunks(size_bytes: float, n: int, link_bytes_per_s: float, latency_s: float) -> int:
    """The number of chunks that minimises a pipelined chain broadcast's time.

    The time is ``(n+k-2)(alpha + S/(kB))``; the best ``k`` is near ``sqrt((n-2) S / (B alpha))``,
    at least 1, at most ``MAX_CHUNKS`` (which it is when alpha is 0: more chunks are then always
    better).

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float
        Alpha: the fixed cost of one step [s], >= 0.

    Returns
    -------
    int
        Chunks ``k`` [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> optimal_chain_chunks(2**30, 8, 100e9, 1e-6)  # sqrt(6 x 2**30 / 1e5)
    254
    >>> optimal_chain_chunks(2**30, 2, 100e9, 1e-6)  # two ranks: one hop, nothing to pipeline
    1
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    if k <= 2 or s == 0:
        return 1
    if lat == 0:
        return MAX_CHUNKS
    q = (k - 2) * (s / b) / lat
    best = float(MAX_CHUNKS) if not math.isfinite(q) or q >= float(MAX_CHUNKS) ** 2 else math.sqrt(q)
    cands = {min(MAX_CHUNKS, max(1, int(math.floor(best)))), min(MAX_CHUNKS, max(1, int(math.ceil(best))))}
    return min(cands, key=lambda c: ((k + c - 2) * (lat + s / (c * b)), -c))


def pipelined_chain_time_s(size_bytes: float, n: int, link_bytes_per_s: float, latency_s: float = 0.0, chunks=None) -> float:
    """Broadcast (or reduce) down a chain of ranks in chunks: ``(n + k - 2) (alpha + S / (k B))``.

    The first chunk needs ``n-1`` steps to reach the last rank, and the other ``k-1`` follow one
    step apart. ``k = 1`` is the unpipelined chain, ``(n-1)(alpha + S/B)``; as ``k`` grows the time
    tends to ``S/B`` (every link busy) plus ``(n+k-2)`` latencies.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float, optional
        Alpha: the fixed cost of one step [s], >= 0.
    chunks : int or None, optional
        Pipeline chunks ``k`` [-], 1 to ``MAX_CHUNKS``; None takes :func:`optimal_chain_chunks`.

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(pipelined_chain_time_s(1e9, 8, 100e9, 0.0, chunks=1) * 1e3, 3)  # 7 hops of 10 ms
    70.0
    >>> round(pipelined_chain_time_s(1e9, 8, 100e9, 0.0, chunks=100) * 1e3, 3)  # 106 steps of 0.1 ms
    10.6
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    c = optimal_chain_chunks(s, k, b, lat) if chunks is None else _ranks(chunks, maximum=MAX_CHUNKS, name="chunks")
    if k == 1:
        return 0.0
    return (k + c - 2) * (lat + s / (c * b))


def _linear_terms(op: str, n: int, algorithm: str) -> tuple[float, float]:
    """(alpha count, bytes sent per rank per byte of S) of every algorithm except the
    pipelined chain (ring broadcast and reduce)."""
    o, k = _op(op), _ranks(n)
    a = _check.choice("algorithm", algorithm, ALGORITHMS)
    if a == "ring":
        return float(ring_steps(o, k)), busbw_factor(o, k)
    depth = _log2_ceil(k)
    if o in ("broadcast", "reduce", "all_reduce"):  # binomial tree; recursive doubling
        return float(depth), float(depth)
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
    call_latency_s: float = 0.0,
    chunks=None,
    nodes: int = 1,
    inter_latency_s=None,
) -> float:
    """Alpha-beta time of one collective: ``call_latency_s + steps * latency_s + c * S / B``.

    ``algorithm="ring"``: ``c`` is :func:`busbw_factor` and the steps are :func:`ring_steps`
    (ring all-reduce and all-gather, pairwise all-to-all): the ring moves the fewest bytes per
    rank, so its busbw equals the link bandwidth. Broadcast and reduce go down a pipelined chain
    of ``chunks`` chunks, ``(n+k-2)(alpha + S/(kB))`` (:func:`pipelined_chain_time_s`; ``None``:
    the best ``k``).

    ``algorithm="tree"``: the logarithmic algorithms MPICH uses for short messages (Thakur,
    Rabenseifner & Gropp 2005): recursive doubling for all-reduce (``lg n (alpha + S beta)``),
    binomial tree for broadcast and reduce (``lg n (alpha + S beta)``), recursive doubling/halving
    for all-gather and reduce-scatter (``lg n alpha + (n-1)/n S beta``), Bruck for all-to-all
    (``lg n alpha + S/2 lg n beta``). Fewer steps, more bytes. ``lg n`` is ``ceil(log2 n)``.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks [-], 1 to ``MAX_RANKS``. One rank takes no time.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float, optional
        Alpha: the fixed cost of one step [s], >= 0.
    algorithm : str, optional
        ``"ring"`` or ``"tree"``.
    call_latency_s : float, optional
        A fixed cost per call [s], >= 0 (NCCL's is ``NCCL_CALL_LATENCY_S``).
    chunks : int or None, optional
        Pipeline chunks of the ring broadcast and reduce [-] (ignored by the other ops).
    nodes : int, optional
        Nodes the ``n`` ranks span (ranks numbered node by node) [-], 1 to ``n``. Steps that cross
        the network pay ``inter_latency_s`` instead of ``latency_s``: of a ring's steps,
        ``2(nodes-1)`` for all-reduce and ``nodes-1`` for all-gather and reduce-scatter (NCCL's
        tuning model, ``nInterSteps``), every step of the pairwise all-to-all (each step has some
        pair in different nodes) and every step of the chain broadcast and reduce (NCCL's model
        charges them all at the network latency once the ranks span nodes); of a logarithmic
        algorithm's steps, ``ceil(log2 nodes)``.
    inter_latency_s : float or None, optional
        Alpha of a step across the network [s], >= 0 (None: ``latency_s``).

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range or ``op``/``algorithm`` is unknown.

    Examples
    --------
    >>> collective_time_s("all_reduce", 1e9, 8, 100e9)  # 2*7/8 * 1e9 / 1e11
    0.0175
    >>> collective_time_s("broadcast", 1e9, 8, 100e9, algorithm="tree")  # 3 levels x 10 ms
    0.03
    >>> collective_time_s("all_reduce", 1e9, 8, 100e9, algorithm="tree")  # recursive doubling
    0.03
    """
    o, k = _op(op), _ranks(n)
    a = _check.choice("algorithm", algorithm, ALGORITHMS)
    s = _bytes("size_bytes", size_bytes)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    call = _seconds("call_latency_s", call_latency_s)
    m = _ranks(nodes, maximum=k, name="nodes")
    ae = lat if inter_latency_s is None else _seconds("inter_latency_s", inter_latency_s)
    if chunks is not None:
        _ranks(chunks, maximum=MAX_CHUNKS, name="chunks")
    if k == 1:
        return 0.0
    if a == "ring" and o in ("broadcast", "reduce"):
        return call + pipelined_chain_time_s(s, k, b, lat if m == 1 else ae, chunks)
    alphas, c = _linear_terms(o, k, a)
    inter = _inter_node_steps(o, k, m, a)
    return call + (alphas - inter) * lat + inter * ae + c * s / b


def _inter_node_steps(op: str, n: int, nodes: int, algorithm: str) -> int:
    """Steps of ``op`` (not the chain broadcast and reduce) that cross the network when ``n``
    ranks span ``nodes`` nodes, numbered node by node (see :func:`collective_time_s`)."""
    if nodes == 1:
        return 0
    if algorithm == "tree":
        return min(_log2_ceil(nodes), _log2_ceil(n))
    if op == "all_reduce":
        return 2 * (nodes - 1)
    if op in ("all_gather", "reduce_scatter"):
        return nodes - 1
    return n - 1  # pairwise all-to-all


def ring_allreduce_time_s(
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = DEFAULT_STEP_LATENCY_S,
    call_latency_s: float = DEFAULT_CALL_LATENCY_S,
) -> float:
    """Ring all-reduce time: ``call_latency_s + 2(n-1) latency_s + 2(n-1)/n * S/B``.

    The book's one all-reduce cost (the serving chapter's tensor-parallel all-reduce uses it too).
    Each rank sends ``2(n-1)`` chunks of ``S/n`` bytes, one per step: ``n-1`` steps of
    reduce-scatter, then ``n-1`` of all-gather (Patarasuk & Yuan 2009). The default latencies are
    NCCL's own (``NCCL_CALL_LATENCY_S`` per call, ``NCCL_NVLINK_STEP_LATENCY_S`` per step:
    NVIDIA/nccl src/graph/tuning.cc); pass 0 and 0 for the bandwidth bound alone.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float, optional
        Alpha of one step [s], >= 0.
    call_latency_s : float, optional
        Fixed cost per call [s], >= 0.

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(ring_allreduce_time_s(2**30, 2, 450e9, 0, 0) * 1e3, 3)  # two H200s over NVLink [ms]
    2.386
    >>> round(ring_allreduce_time_s(64 * 8192 * 2, 8, 450e9) * 1e6, 2)  # 1 MiB, 8 H200s [us]: 15.0 + 4.08
    19.08
    >>> ring_allreduce_time_s(2**30, 1, 450e9)  # one GPU: nothing to do
    0.0
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    call = _seconds("call_latency_s", call_latency_s)
    if k == 1:
        return 0.0
    return call + 2.0 * (k - 1) * lat + 2.0 * (k - 1) / k * s / b


def in_network_allreduce_time_s(size_bytes: float, n: int, link_bytes_per_s: float, latency_s: float = 0.0, efficiency: float = 1.0) -> float:
    """All-reduce with the reduction done in the switch (NVLink SHARP "NVLS", InfiniBand SHARP).

    Each rank sends its ``S`` bytes once and receives the ``S``-byte sum once, so the time tends to
    ``S / (efficiency B)`` instead of the ring's ``2(n-1)/n S/B``; ``latency_s`` is paid once. NCCL's
    own cost model takes ``NCCL_NVLS_EFFICIENCY_HOPPER`` = 0.85 for NVLS on Hopper (NVIDIA/nccl
    v2.28.9-1 src/graph/tuning.cc, ``nvlsEfficiency``), so on 8 GPUs NVLS is about 1.5 times as
    fast as the ring, not 1.75.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float, optional
        Alpha: the fixed cost of one step [s], >= 0.
    efficiency : float, optional
        Share of the link the switch reduction reaches [-], 0.001 to 1 (1 is the ideal).

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(in_network_allreduce_time_s(2**30, 8, 450e9) * 1e3, 3)  # [ms]; the ring: 4.176
    2.386
    >>> round(in_network_allreduce_time_s(2**30, 8, 450e9, efficiency=0.85) * 1e3, 3)
    2.807
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    e = _check.fraction("efficiency", efficiency, open_low=True)
    if e < 1e-3:
        raise ValueError(f"efficiency must be in [0.001, 1], got {efficiency!r}")
    return 0.0 if k == 1 else lat + s / (e * b)


def rabenseifner_allreduce_time_s(
    size_bytes: float, n: int, link_bytes_per_s: float, latency_s: float = 0.0, call_latency_s: float = 0.0
) -> float:
    """Rabenseifner's all-reduce: reduce-scatter by recursive halving, then all-gather by recursive doubling.

    Thakur, Rabenseifner & Gropp 2005, s.4.4. For ``n`` a power of two:
    ``2 log2(n) alpha + 2(n-1)/n S/B``: the ring's bytes in ``2 log2 n`` steps instead of
    ``2(n-1)``, so on a full crossbar (every pair of ranks at the full link rate, as this model
    assumes) it is never slower than the ring. Otherwise the ``n - p'`` ranks beyond the largest
    power of two ``p'`` first hand their buffer to a partner and get the result back at the end:
    two more steps of ``alpha + S/B``, ``(2 log2(p') + 2) alpha + (2(p'-1)/p' + 2) S/B``.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float, optional
        Alpha: the fixed cost of one step [s], >= 0.
    call_latency_s : float, optional
        Fixed cost per call [s], >= 0.

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(rabenseifner_allreduce_time_s(1e9, 8, 100e9) * 1e3, 3)  # the ring's bytes [ms]
    17.5
    >>> round(rabenseifner_allreduce_time_s(0, 8, 100e9, 1e-6) * 1e6, 3)  # 2 x 3 steps [us]
    6.0
    >>> round(rabenseifner_allreduce_time_s(0, 6, 100e9, 1e-6) * 1e6, 3)  # p' = 4: 2 x 2 + 2 steps
    6.0
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    call = _seconds("call_latency_s", call_latency_s)
    if k == 1:
        return 0.0
    p = 1 << (k.bit_length() - 1)  # the largest power of two <= n
    steps = 2 * (p.bit_length() - 1)
    factor = 2.0 * (p - 1) / p
    if p != k:
        steps += 2
        factor += 2.0
    return call + steps * lat + factor * s / b


def ring_tree_crossover_bytes(op: str, n: int, link_bytes_per_s: float, latency_s: float) -> float:
    """The message size below which the tree is faster than the ring.

    For broadcast and reduce (the ring is a pipelined chain) it is found by bisection on the two
    time functions.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    op : str
        One of ``OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
        ``"all_to_all"``, ``"broadcast"``, ``"reduce"``.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        Each rank's bandwidth to the rest, per direction [B/s], > 0.
    latency_s : float
        Alpha: the fixed cost of one step [s], >= 0.

    Returns
    -------
    float
        Size ``S`` [B]; 0.0 when the ring is never slower, ``inf`` when the tree is never slower
        (all-gather and reduce-scatter: same bytes, fewer steps).

    Raises
    ------
    ValueError
        If an input is out of range or ``op`` is unknown.

    Examples
    --------
    >>> round(ring_tree_crossover_bytes("all_reduce", 8, 100e9, 1e-6) / 1e3, 1)  # kB
    880.0
    >>> ring_tree_crossover_bytes("all_reduce", 2, 100e9, 1e-6)  # one exchange beats two steps
    inf
    >>> ring_tree_crossover_bytes("all_gather", 1, 100e9, 1e-6)
    0.0
    """
    o, k = _op(op), _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    lat = _seconds("latency_s", latency_s)
    if k == 1:
        return 0.0
    if o in ("broadcast", "reduce"):
        def tree_minus_ring(s):
            return collective_time_s(o, s, k, b, lat, "tree") - collective_time_s(o, s, k, b, lat, "ring")

        lo, hi = 0.0, MAX_BYTES
        if tree_minus_ring(lo) >= 0:
            return 0.0
        if tree_minus_ring(hi) < 0:
            return math.inf
        for _ in range(200):  # bounded bisection (the difference changes sign once)
            mid = 0.5 * (lo + hi)
            if tree_minus_ring(mid) < 0:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-9 * hi:
                break
        return hi
    a_ring, c_ring = _linear_terms(o, k, "ring")
    a_tree, c_tree = _linear_terms(o, k, "tree")
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
def _real_list(name: str, values) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}")
    if len(values) > MAX_POINTS:
        raise ValueError(f"{name} must hold at most {MAX_POINTS} values, got {len(values)}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} must hold real numbers, got {v!r} at index {i}")
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"{name} must hold finite numbers, got {v!r} at index {i}")
        out.append(f)
    return out


def fit_alpha_beta(sizes_bytes, times_s) -> tuple[float, float]:
    """Fit ``t = latency + S / bytes_per_s`` to measured ``(S, t)`` pairs.

    Least squares on RELATIVE error (weights ``1/t**2``), so microsecond latencies and
    millisecond transfers both count; the latency is kept >= 0. ``bytes_per_s`` is the
    asymptotic ALGORITHM bandwidth (multiply by :func:`busbw_factor` for bus bandwidth) and
    ``latency`` is the whole call's fixed cost (divide by the step count for one step's alpha).
    Both are FITTED: the line's asymptote is reached only as ``S`` grows without bound, so it
    can lie above every measured bandwidth.

    Explained in :ref:`collectives` > 3. Alpha and beta from the sweep.

    Parameters
    ----------
    sizes_bytes : sequence of float
        Message sizes [B], >= 0, at least two distinct.
    times_s : sequence of float
        Measured times [s], > 0, same length.

    Returns
    -------
    latency_s : float
        Fitted fixed cost of one call [s], >= 0.
    bytes_per_s : float
        Fitted asymptotic algorithm bandwidth [B/s].

    Raises
    ------
    ValueError
        If the sequences are too short, differ in length, hold bad values, or cannot be fitted.

    Examples
    --------
    >>> sizes = [1e3, 1e6, 1e9]
    >>> lat, bw = fit_alpha_beta(sizes, [20e-6 + s / 300e9 for s in sizes])
    >>> round(lat * 1e6, 6), round(bw / 1e9, 6)
    (20.0, 300.0)
    """
    s = np.array(_real_list("sizes_bytes", sizes_bytes))
    t = np.array(_real_list("times_s", times_s))
    if s.size < 2 or np.any(s < 0):
        raise ValueError(f"sizes_bytes must hold at least 2 finite sizes >= 0, got {sizes_bytes!r}")
    if np.unique(s).size < 2:
        raise ValueError(f"sizes_bytes must hold at least 2 distinct sizes, got {sizes_bytes!r}")
    if t.shape != s.shape:
        raise ValueError(f"times_s must have one time per size in sizes_bytes ({s.size}), got {t.size}")
    if np.any(t < MIN_TIME_S) or np.any(t > MAX_TIME_S):
        raise ValueError(f"times_s must hold times in [{MIN_TIME_S:g}, {MAX_TIME_S:g}] s, got {times_s!r}")
    if np.any(s > MAX_BYTES):
        raise ValueError(f"sizes_bytes must hold sizes <= 2**60 B, got {sizes_bytes!r}")
    # Scaled, centred least squares (no normal equations: they cancel for sizes like 1e12, 1e12+1024).
    t_scale, s_scale = float(np.max(t)), float(np.max(s))
    tn = t / t_scale
    s0 = float(np.mean(s))
    x = (s - s0) / s_scale  # centred sizes, |x| <= 1
    if np.ptp(x) == 0:
        raise ValueError(f"sizes_bytes must hold at least 2 distinct sizes, got {sizes_bytes!r}")
    design = np.stack([1.0 / tn, x / tn], axis=1)  # relative residuals: (a' + g' x) / tn - 1
    (a_c, g_n), *_ = np.linalg.lstsq(design, np.ones_like(tn), rcond=None)
    g = g_n * t_scale / s_scale  # seconds per byte
    a = (a_c - g_n * s0 / s_scale) * t_scale  # latency at S = 0
    if not (math.isfinite(a) and math.isfinite(g)):
        raise ValueError("times_s cannot be fitted by latency + size / bandwidth (the fit is not finite)")
    if a < 0:  # refit through the origin: min sum ((g s - t)/t)^2
        r = s / t
        denom = float(np.sum(r * r))
        a, g = 0.0, (float(np.sum(r)) / denom if denom > 0 else 0.0)
    if g <= 0 or not math.isfinite(1.0 / g):
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

    Explained in :ref:`collectives` > The ring all-reduce, step by step.

    Parameters
    ----------
    n : int
        Ranks [-], 2 to 64.

    Returns
    -------
    list of list of RingTransfer
        One list of transfers per step.

    Raises
    ------
    ValueError
        If ``n`` is out of range.

    Examples
    --------
    >>> [(t.src, t.dst, t.chunk) for t in ring_allreduce_schedule(3)[0]]
    [(0, 1, 0), (1, 2, 1), (2, 0, 2)]
    >>> len(ring_allreduce_schedule(4))
    6
    """
    k = _ranks(n, minimum=2, maximum=MAX_LISTED_RANKS)
    steps = []
    for s in range(2 * (k - 1)):
        phase = "reduce_scatter" if s < k - 1 else "all_gather"
        steps.append([RingTransfer(s, phase, r, (r + 1) % k, (r - s) % k) for r in range(k)])
    return steps


def ring_allreduce_contributions(n: int, step: int) -> np.ndarray:
    """Which ranks' data each rank's copy of each chunk holds after some steps of a ring all-reduce.

    Explained in :ref:`collectives` > The ring all-reduce, step by step.

    Parameters
    ----------
    n : int
        Ranks [-], 2 to 64.
    step : int
        Steps done [-], 0 (the start: each rank holds only its own data) to ``2(n-1)`` (the end:
        every copy holds all ``n``).

    Returns
    -------
    numpy.ndarray
        Booleans ``[rank, chunk, source]``: True where rank's copy of chunk includes source rank's
        contribution.

    Raises
    ------
    ValueError
        If ``n`` or ``step`` is out of range.

    Examples
    --------
    >>> int(ring_allreduce_contributions(4, 6).sum(axis=2).min())  # every chunk complete at the end
    4
    """
    k = _ranks(n, minimum=2, maximum=MAX_LISTED_RANKS)
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
    """Run the ring all-reduce schedule on numbers and return every rank's result.

    Explained in :ref:`collectives` > The ring all-reduce, step by step.

    Parameters
    ----------
    chunks_per_rank : array_like of float
        ``chunks_per_rank[r][c]`` is rank ``r``'s chunk ``c`` [-]: n ranks x n chunks (2 <= n <= 64),
        each chunk a number or an array; at most 1e7 finite numbers.

    Returns
    -------
    numpy.ndarray
        Every rank's chunks after the all-reduce [-], shaped like the input (every rank holds the sum).

    Raises
    ------
    ValueError
        If the input is not n x n chunks of finite numbers.

    Examples
    --------
    >>> simulate_ring_allreduce([[1, 2], [10, 20]]).tolist()
    [[11.0, 22.0], [11.0, 22.0]]
    """
    try:
        data = np.array(chunks_per_rank, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"chunks_per_rank must be n x n chunks of numbers, got {chunks_per_rank!r}") from None
    if data.ndim < 2 or data.shape[0] != data.shape[1] or not 2 <= data.shape[0] <= MAX_LISTED_RANKS:
        raise ValueError(f"chunks_per_rank must be n x n chunks with 2 <= n <= {MAX_LISTED_RANKS}, got shape {data.shape}")
    if data.size > 10**7 or not np.all(np.isfinite(data)):
        raise ValueError("chunks_per_rank must hold at most 1e7 finite numbers")
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
    """Where the time of one data-parallel backward pass plus gradient all-reduce goes.

    Attributes
    ----------
    n_buckets : int
        Buckets [-].
    bucket_bytes : float
        Size of the first (full) bucket [B].
    comm_per_bucket_s : float
        All-reduce time of that bucket [s].
    total_comm_s : float
        All-reduce time of every bucket [s].
    backward_s : float
        Backward-pass compute time [s].
    finish_s : float
        When the last bucket's all-reduce ends, from the start of the backward pass [s].
    exposed_comm_s : float
        ``finish_s - backward_s``: communication not hidden behind compute [s].
    protocol : str
        NCCL's protocol for the first bucket's all-reduce (``""``: the alpha-beta latencies given).
    """

    n_buckets: int
    bucket_bytes: float
    comm_per_bucket_s: float
    total_comm_s: float
    backward_s: float
    finish_s: float  # when the last bucket's all-reduce ends, from the start of backward
    exposed_comm_s: float  # finish_s - backward_s: communication not hidden behind compute
    protocol: str = ""  # NCCL's protocol for the first bucket ("" with the alpha-beta latencies)

    @property
    def hidden_fraction(self) -> float:
        """Share of the communication time overlapped with the backward pass."""
        if self.total_comm_s <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - self.exposed_comm_s / self.total_comm_s))


def _buckets(grad_bytes, bucket_bytes, backward_s) -> tuple:
    """(gradient bytes, backward time, bucket sizes), at most ``MAX_BUCKETS`` buckets."""
    g = _bytes("grad_bytes", positive=True, value=grad_bytes)
    bb = _bytes("bucket_bytes", positive=True, value=bucket_bytes)
    bwd = _seconds("backward_s", backward_s)
    if g / bb > MAX_BUCKETS:
        raise ValueError(f"bucket_bytes must be at least grad_bytes / {MAX_BUCKETS} = {g / MAX_BUCKETS:.6g} B, got {bucket_bytes!r}")
    full, rest = divmod(g, bb)
    sizes = [bb] * int(full) + ([rest] if rest > 1e-9 * g else [])
    return g, bwd, sizes or [g]


def _allreduce_costs(n, link_bytes_per_s, latency_s, algorithm, call_latency_s, nodes, inter_latency_s):
    """Checked inputs of one bucket's all-reduce: ``(ranks, B, fixed latency [s], bytes factor)``.

    The fixed latency is ``call + intra_steps * latency_s + inter_steps * inter_latency_s``: a ring
    all-reduce over ``nodes`` nodes takes ``2(n-1)`` steps, ``2(nodes-1)`` of them across the network
    (NCCL's tuning model, as in :func:`cross_node_allreduce`); recursive doubling takes
    ``ceil(log2 n)``, ``ceil(log2 nodes)`` of them across the network (ranks numbered node by node)."""
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    ai = _seconds("latency_s", latency_s)
    a = _check.choice("algorithm", algorithm, ALGORITHMS)
    call = _seconds("call_latency_s", call_latency_s)
    m = _ranks(nodes, maximum=k, name="nodes")
    ae = ai if inter_latency_s is None else _seconds("inter_latency_s", inter_latency_s)
    if k == 1:
        return k, b, 0.0, 0.0
    steps, factor = _linear_terms("all_reduce", k, a)
    inter = _inter_node_steps("all_reduce", k, m, a)
    return k, b, call + (steps - inter) * ai + inter * ae, factor


DP_PROTOCOLS = ("auto", "LL", "LL128", "Simple")  # "auto" and PROTOCOLS (defined with NCCL's tuner model below)


def _bucket_cost(n, link_bytes_per_s, latency_s, algorithm, call_latency_s, nodes, inter_latency_s, protocol):
    """A function of a bucket's bytes -> ``(its all-reduce time [s], NCCL's protocol or "")``.

    ``protocol=None``: the alpha-beta latencies given, at ``link_bytes_per_s``; otherwise NCCL's ring
    with latency and bandwidth of the same protocol (``"auto"``: the one NCCL's model picks among the ring's protocols for that
    bucket), and the latencies given must be left at their defaults."""
    if protocol is None:
        k, b, fixed, factor = _allreduce_costs(n, link_bytes_per_s, latency_s, algorithm, call_latency_s, nodes, inter_latency_s)
        return lambda size: (fixed + factor * size / b if k > 1 else 0.0, "")
    if not isinstance(protocol, str) or protocol not in DP_PROTOCOLS:
        raise ValueError(f"protocol must be None or one of {DP_PROTOCOLS}, got {protocol!r}")
    k = _ranks(n)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    m = _ranks(nodes, maximum=k, name="nodes")
    for name, value in (("latency_s", latency_s), ("call_latency_s", call_latency_s)):
        if _seconds(name, value) != 0:
            raise ValueError(f"{name} must be 0 when protocol is given (NCCL's tables set the latencies), got {value!r}")
    if inter_latency_s is not None:
        raise ValueError(f"inter_latency_s must be None when protocol is given (NCCL's tables set it), got {inter_latency_s!r}")
    if _check.choice("algorithm", algorithm, ALGORITHMS) != "ring":
        raise ValueError(f"algorithm must be 'ring' when protocol is given (NCCL's ring model), got {algorithm!r}")
    if k == 1:
        return lambda size: (0.0, "")
    if protocol == "auto":
        def cost(size):
            c = nccl_ring_allreduce_choice(size, k, b, m)
            return c.time_s, c.protocol
        return cost
    return lambda size: (nccl_ring_allreduce_time_s(size, k, b, protocol, m), protocol)


def dp_step(
    grad_bytes: float,
    bucket_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    algorithm: str = "ring",
    call_latency_s: float = 0.0,
    nodes: int = 1,
    inter_latency_s=None,
    protocol=None,
) -> DataParallelStep:
    """Exposed communication of data-parallel training with bucketed gradient all-reduce.

    Gradients appear at a steady rate during the backward pass; each time ``bucket_bytes`` of
    them are ready, one all-reduce of that bucket starts, as soon as the previous one has
    finished (one communication stream, as in PyTorch DDP; Li et al. 2020). What is left after
    the backward pass ends is exposed. Each bucket's all-reduce costs either the alpha-beta time
    with the latencies given or, with ``protocol``, NCCL's ring estimate with latency and bandwidth
    of one protocol (LL's cheap steps come with a capped bandwidth, so a MiB-sized bucket is not
    costed with LL's latencies at the full link).

    Explained in :ref:`collectives` > Hiding communication behind computation.

    Parameters
    ----------
    grad_bytes : float
        Gradient bytes per replica [B], > 0.
    bucket_bytes : float
        Bucket size [B], > 0 (PyTorch DDP's default ``bucket_cap_mb=25``); larger than
        ``grad_bytes`` means one bucket.
    backward_s : float
        Backward-pass compute time [s], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        The bus bandwidth the all-reduce reaches [B/s], > 0.
    latency_s : float, optional
        Alpha of a step inside a node (NVLink) [s], >= 0.
    algorithm : str, optional
        ``"ring"`` or ``"tree"`` (recursive doubling).
    call_latency_s : float, optional
        Fixed cost of each bucket's all-reduce call [s], >= 0 (NCCL's kernel: ``NCCL_CALL_LATENCY_S``;
        from Python add the host's launch cost).
    nodes : int, optional
        Nodes the ``n`` ranks span [-], 1 to ``n``: ``2(nodes-1)`` of a ring's ``2(n-1)`` steps cross
        the network and pay ``inter_latency_s`` (NCCL's tuning model).
    inter_latency_s : float or None, optional
        Alpha of a step across the network [s] (None: ``latency_s``).
    protocol : str or None, optional
        None: the alpha-beta latencies above at ``link_bytes_per_s``. One of ``DP_PROTOCOLS``: NCCL's
        ring, each bucket costed by :func:`nccl_ring_allreduce_time_s` with latency and bandwidth of
        that protocol (``"auto"``: the one NCCL's model picks among the ring's protocols for the bucket's size, as with ``NCCL_ALGO=Ring``;
        :func:`nccl_ring_allreduce_choice`); ``link_bytes_per_s`` is then the Simple bus bandwidth and
        the three latencies must be left at their defaults.

    Returns
    -------
    DataParallelStep
        Buckets, communication per bucket and in total, the backward time, when the last
        all-reduce ends and the exposed communication [s].

    Raises
    ------
    ValueError
        If an input is out of range or there would be more than ``MAX_BUCKETS`` buckets.

    Notes
    -----
    Overlapped NCCL kernels are not free: they occupy SMs and HBM bandwidth that the backward pass
    would otherwise use, which this model leaves out (it treats the backward time as fixed).

    Examples
    --------
    One bucket: nothing overlaps, all 17.5 ms of communication is exposed.

    >>> p = dp_step(1e9, 2e9, 0.1, 8, 100e9)
    >>> p.n_buckets, round(p.exposed_comm_s * 1e3, 3)
    (1, 17.5)
    >>> round(dp_step(1e9, 1e8, 0.1, 8, 100e9).exposed_comm_s * 1e3, 3)  # ten buckets
    1.75
    >>> dp_step(1e9, 1e8, 0.1, 8, 100e9, protocol="auto").protocol  # NCCL's choice for a 100 MB bucket
    'Simple'
    """
    g, bwd, sizes = _buckets(grad_bytes, bucket_bytes, backward_s)
    cost = _bucket_cost(n, link_bytes_per_s, latency_s, algorithm, call_latency_s, nodes, inter_latency_s, protocol)
    timeline, comm = _bucket_timeline(g, bwd, sizes, cost)
    t_end = timeline[-1][2]
    return DataParallelStep(
        n_buckets=len(sizes),
        bucket_bytes=sizes[0],
        comm_per_bucket_s=comm[0],
        total_comm_s=float(sum(comm)),
        backward_s=bwd,
        finish_s=t_end,
        exposed_comm_s=max(0.0, t_end - bwd),
        protocol=cost(sizes[0])[1],
    )


def _bucket_timeline(g, bwd, sizes, cost) -> tuple:
    """``(ready_s, start_s, end_s, bucket_bytes)`` per bucket, and each bucket's all-reduce time [s].

    A bucket is ready when its last gradient is, at a steady rate over the backward pass; the last
    bucket exactly when the pass ends (its ready time is not left to the rounding of a running sum
    of sizes, which put it a few 1e-13 s early and the exposed time that much off)."""
    out, comm, ready, t_end = [], [], 0.0, 0.0
    for i, size in enumerate(sizes):
        ready += size
        t_ready = bwd if i == len(sizes) - 1 else bwd * min(1.0, ready / g)
        c = cost(size)[0]
        start = max(t_end, t_ready)
        t_end = start + c
        comm.append(c)
        out.append((t_ready, start, t_end, size))
    return out, comm


def dp_timeline(
    grad_bytes: float,
    bucket_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    algorithm: str = "ring",
    call_latency_s: float = 0.0,
    nodes: int = 1,
    inter_latency_s=None,
    protocol=None,
) -> list:
    """The buckets of :func:`dp_step`, each with when it is ready, starts and ends.

    Explained in :ref:`collectives` > Hiding communication behind computation.

    Parameters
    ----------
    grad_bytes : float
        Gradient bytes per replica [B], > 0.
    bucket_bytes : float
        Bucket size [B], > 0 (PyTorch DDP's default ``bucket_cap_mb=25``); larger than
        ``grad_bytes`` means one bucket.
    backward_s : float
        Backward-pass compute time [s], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        The bus bandwidth the all-reduce reaches [B/s], > 0.
    latency_s : float, optional
        Alpha of a step inside a node (NVLink) [s], >= 0.
    algorithm : str, optional
        ``"ring"`` or ``"tree"`` (recursive doubling).
    call_latency_s : float, optional
        Fixed cost of each bucket's all-reduce call [s], >= 0 (NCCL's kernel: ``NCCL_CALL_LATENCY_S``;
        from Python add the host's launch cost).
    nodes : int, optional
        Nodes the ``n`` ranks span [-], 1 to ``n``: ``2(nodes-1)`` of a ring's ``2(n-1)`` steps cross
        the network and pay ``inter_latency_s`` (NCCL's tuning model).
    inter_latency_s : float or None, optional
        Alpha of a step across the network [s] (None: ``latency_s``).
    protocol : str or None, optional
        None (the alpha-beta latencies) or one of ``DP_PROTOCOLS`` (NCCL's ring; see :func:`dp_step`).

    Returns
    -------
    list of tuple
        ``(ready_s, start_s, end_s, bucket_bytes)`` per bucket: times [s] from the start of the
        backward pass and the bucket's size [B].

    Raises
    ------
    ValueError
        If an input is out of range or there would be more than ``MAX_BUCKETS`` buckets.

    Examples
    --------
    >>> [tuple(round(x, 4) for x in b[:3]) for b in dp_timeline(1e9, 5e8, 0.1, 2, 100e9)]
    [(0.05, 0.05, 0.055), (0.1, 0.1, 0.105)]
    """
    g, bwd, sizes = _buckets(grad_bytes, bucket_bytes, backward_s)
    cost = _bucket_cost(n, link_bytes_per_s, latency_s, algorithm, call_latency_s, nodes, inter_latency_s, protocol)
    return _bucket_timeline(g, bwd, sizes, cost)[0]


def best_bucket_bytes(
    grad_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s: float,
    latency_s: float = 0.0,
    candidates=None,
    call_latency_s: float = 0.0,
    nodes: int = 1,
    inter_latency_s=None,
    protocol=None,
) -> float:
    """The bucket size with the least exposed communication (ties go to the larger bucket).

    The latencies are those of :func:`dp_step` (ring all-reduce): the alpha-beta ones given, or with
    ``protocol`` NCCL's for that protocol (``"auto"``: the one its model picks among the ring's protocols for each bucket).

    Explained in :ref:`collectives` > Hiding communication behind computation.

    Parameters
    ----------
    grad_bytes : float
        Gradient bytes per replica [B], > 0.
    backward_s : float
        Backward-pass compute time [s], >= 0.
    n : int
        Ranks (one GPU each) [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        The bus bandwidth the all-reduce reaches [B/s], > 0.
    latency_s : float, optional
        Alpha of a step inside a node [s], >= 0 (0 with ``protocol``).
    candidates : sequence of float or None, optional
        Bucket sizes to try [B], at most 1000; default 1 MiB to 1 GiB in powers of two.
    call_latency_s : float, optional
        Fixed cost of each bucket's all-reduce call [s], >= 0.
    nodes : int, optional
        Nodes the ``n`` ranks span [-], 1 to ``n``.
    inter_latency_s : float or None, optional
        Alpha of a step across the network [s] (None: ``latency_s``).
    protocol : str or None, optional
        None (the alpha-beta latencies) or one of ``DP_PROTOCOLS`` (NCCL's ring; see :func:`dp_step`).

    Returns
    -------
    float
        Bucket size [B].

    Raises
    ------
    ValueError
        If an input is out of range or no candidate is usable.

    Examples
    --------
    >>> best_bucket_bytes(1e9, 0.1, 8, 100e9, 20e-6) / 2**20  # MiB
    16.0
    """
    if candidates is None:
        candidates = [2.0**k for k in range(20, 31)]
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__len__") or len(candidates) > 1000:
        raise ValueError(f"candidates must be a list of at most 1000 bucket sizes, got {candidates!r}")
    cands = [_bytes("candidates", positive=True, value=c) for c in candidates]
    if not cands:
        raise ValueError(f"candidates must hold at least one bucket size, got {candidates!r}")
    g = _bytes("grad_bytes", positive=True, value=grad_bytes)
    cands = [c for c in cands if g / c <= MAX_BUCKETS]
    if not cands:
        raise ValueError(f"candidates must hold a bucket size >= grad_bytes / {MAX_BUCKETS}, got {candidates!r}")
    scored = [(dp_step(g, c, backward_s, n, link_bytes_per_s, latency_s, "ring", call_latency_s, nodes, inter_latency_s,
                       protocol).exposed_comm_s, -c) for c in cands]
    best = min(scored, key=lambda x: (round(x[0], 15), x[1]))
    return -best[1]


# --------------------------------------------------------------------------------------------
# Across nodes: NCCL's rings and trees over every NIC, and the hierarchical all-reduce
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CrossNodeAllReduce:
    """An all-reduce across nodes by NCCL's ring and tree, each node's NICs all in use.

    ``ring_s``: NCCL's ring, at least one channel per NIC: each ring passes through the GPUs of a node on
    NVLink and leaves it through its own NIC, so the node's NICs all work at once. ``tree_s``:
    NCCL's tree: a chain inside each node, two complementary binary trees across the nodes (the
    double binary tree). ``single_nic_ring_s``: a ring whose every byte crosses ONE NIC per node
    (what a flat ring would take if only one channel were used): the naive estimate, shown for
    comparison.

    Attributes
    ----------
    size_bytes : float
        ``S`` [B].
    ranks : int
        GPUs [-].
    ring_s, tree_s, single_nic_ring_s : float
        Times of the three [s].
    """

    size_bytes: float
    ranks: int
    ring_s: float
    tree_s: float
    single_nic_ring_s: float

    @property
    def best_s(self) -> float:
        return min(self.ring_s, self.tree_s)

    @property
    def algorithm(self) -> str:
        """The faster of the two by this model ("ring" on a tie)."""
        return "tree" if self.tree_s < self.ring_s else "ring"

    def busbw_bytes_per_s(self, time_s: float) -> float:
        """nccl-tests bus bandwidth of an all-reduce of this size taking ``time_s``."""
        return busbw_bytes_per_s("all_reduce", self.ranks, self.size_bytes, time_s)


def tree_inter_node_bytes_factor(nodes: int) -> float:
    """Bytes each node sends over its NICs per byte of ``S`` in NCCL's double-binary-tree all-reduce.

    Each of the two trees carries half the data; a node is an inner node in one tree and a leaf in
    the other. With two nodes each tree is one edge: a node sends ``S/2`` up one tree and ``S/2``
    down the other: ``1``. With more nodes an inner node with two children and a parent sends
    ``S/2`` up and ``2 x S/2`` down, plus ``S/2`` as a leaf: ``2``, as much as a ring's
    ``2(N-1)/N``. One node: ``0``. It receives as many.

    Explained in :ref:`collectives` > Across nodes: rings and trees over every adapter.

    Parameters
    ----------
    nodes : int
        Nodes [-], 1 to ``MAX_RANKS``.

    Returns
    -------
    float
        Bytes per byte of ``S`` [-]: 0, 1 or 2.

    Raises
    ------
    ValueError
        If ``nodes`` is out of range.

    Examples
    --------
    >>> tree_inter_node_bytes_factor(2), tree_inter_node_bytes_factor(16)
    (1.0, 2.0)
    """
    m = _ranks(nodes, name="nodes")
    return 0.0 if m == 1 else (1.0 if m == 2 else 2.0)


def cross_node_allreduce(
    size_bytes: float,
    gpus_per_node: int,
    nodes: int,
    intra_bytes_per_s: float,
    nic_bytes_per_s: float,
    nics_per_node=None,
    intra_latency_s: float = NCCL_NVLINK_STEP_LATENCY_S,
    inter_latency_s: float = NCCL_NET_STEP_LATENCY_S,
    call_latency_s: float = NCCL_CALL_LATENCY_S,
) -> CrossNodeAllReduce:
    """NCCL's ring and tree all-reduce across nodes, each node's NICs all in use.

    With ``N = gpus_per_node * nodes`` ranks and ``B_node = nics_per_node * nic_bytes_per_s``:

    - ring: ``2(N-1)/N * S / min(B_intra, B_node)``: a node's traffic ``2(N-1)/N S`` leaves it
      through all its NICs at once (at least one channel per NIC), and each GPU moves the same bytes on
      NVLink. Latency: ``2(N-1)`` steps, ``2(nodes-1)`` of them across the network.
    - tree: ``max(2S / B_intra, f S / B_node)`` with ``f`` from
      :func:`tree_inter_node_bytes_factor` (1 at two nodes: half the ring's network bytes);
      latency ``2((g-1) alpha_intra + lg(nodes) alpha_inter)`` (NCCL's tuning model).

    Latencies default to NCCL's ring LL constants (``NCCL_*_LATENCY_S``, the small-message
    protocol); every latency is paid once per call. NCCL >= 2.18 also raises each intra-node step of
    an inter-node ring to a network overhead (``netOverhead``) and multiplies a large Simple-protocol
    ring all-reduce's latency by 1.4 across nodes (tuning.cc, "plateau effect of ring"); both are
    left out here (:func:`nccl_ring_allreduce_time_s` has them). The tree's bandwidth term assumes point-to-point transfers
    (no NVLS-Tree, no CollNet/SHARP).

    Explained in :ref:`collectives` > Across nodes: rings and trees over every adapter.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    gpus_per_node : int
        GPUs (ranks) per node [-], >= 1; ``gpus_per_node * nodes <= MAX_RANKS``.
    nodes : int
        Nodes [-], >= 1.
    intra_bytes_per_s : float
        Each GPU's NVLink (or PCIe) bandwidth per direction [B/s], > 0.
    nic_bytes_per_s : float
        One NIC's bandwidth per direction [B/s], > 0.
    nics_per_node : int or None, optional
        NICs per node used by NCCL [-], 1 to 1024 (``None``: one per GPU, as in DGX/HGX H100 and
        H200 nodes).
    intra_latency_s : float, optional
        Alpha of a step inside a node [s], >= 0.
    inter_latency_s : float, optional
        Alpha of a step across the network [s], >= 0.
    call_latency_s : float, optional
        Fixed cost per call [s], >= 0.

    Returns
    -------
    CrossNodeAllReduce
        The ring, tree and single-NIC ring times [s], with the faster algorithm and a busbw helper.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    Two A3 Mega nodes (8 H100 each, 8 x 200 Gb/s NICs: 200 GB/s per node), 1 GiB, no latency:

    >>> x = cross_node_allreduce(2**30, 8, 2, 450e9, 25e9, intra_latency_s=0, inter_latency_s=0, call_latency_s=0)
    >>> round(x.busbw_bytes_per_s(x.ring_s) / 1e9), round(x.busbw_bytes_per_s(x.tree_s) / 1e9), x.algorithm
    (200, 375, 'tree')
    >>> round(x.busbw_bytes_per_s(x.single_nic_ring_s) / 1e9)  # one NIC per ring crossing
    25
    """
    s = _bytes("size_bytes", size_bytes)
    g = _ranks(gpus_per_node, name="gpus_per_node")
    m = _ranks(nodes, name="nodes")
    if g * m > MAX_RANKS:
        raise ValueError(f"gpus_per_node * nodes must be <= {MAX_RANKS}, got {g} * {m}")
    bi = _rate("intra_bytes_per_s", intra_bytes_per_s)
    nic = _rate("nic_bytes_per_s", nic_bytes_per_s)
    k = g if nics_per_node is None else _ranks(nics_per_node, name="nics_per_node", maximum=1024)
    ai = _seconds("intra_latency_s", intra_latency_s)
    ae = _seconds("inter_latency_s", inter_latency_s)
    call = _seconds("call_latency_s", call_latency_s)
    n = g * m
    if n == 1:
        return CrossNodeAllReduce(s, 1, 0.0, 0.0, 0.0)
    factor = 2.0 * (n - 1) / n
    inter_steps = 2 * (m - 1)
    ring_lat = call + (2 * (n - 1) - inter_steps) * ai + inter_steps * ae
    node_bw = k * nic
    ring_bw = bi if m == 1 else min(bi, node_bw)
    single_bw = bi if m == 1 else min(bi, nic)
    ring = ring_lat + factor * s / ring_bw
    single = ring_lat + factor * s / single_bw
    tree_lat = call + 2.0 * ((g - 1) * ai + _log2_ceil(m) * ae)
    intra_t = 2.0 * s / bi if g > 1 else 0.0
    inter_t = tree_inter_node_bytes_factor(m) * s / node_bw
    tree = tree_lat + max(intra_t, inter_t)
    return CrossNodeAllReduce(s, n, ring, tree, single)


@dataclass(frozen=True)
class HierarchicalAllReduce:
    """Times of the three phases of a two-level all-reduce, and of NCCL's flat ring and tree.

    The flat ring and tree run over the same GPUs (:func:`cross_node_allreduce`). ``total_s``: the
    phases as three separate calls, one after another; ``pipelined_s``: the phases overlapped chunk
    by chunk, so the slowest one sets the time (what NCCL's NVLS-Tree and CollNet algorithms do
    inside one call; NCCL's tree is no such hierarchy: a chain inside each node, no intra-node
    reduce-scatter, and beyond two nodes ``2 S`` per node across the network).

    Attributes
    ----------
    intra_reduce_scatter_s, inter_all_reduce_s, intra_all_gather_s : float
        The three phases [s].
    flat_ring_s, nccl_tree_s : float
        NCCL's flat ring and tree over every NIC [s].
    """

    intra_reduce_scatter_s: float
    inter_all_reduce_s: float
    intra_all_gather_s: float
    flat_ring_s: float
    nccl_tree_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.intra_reduce_scatter_s + self.inter_all_reduce_s + self.intra_all_gather_s

    @property
    def pipelined_s(self) -> float:
        """The three phases overlapped chunk by chunk, so the slowest phase sets the time [s]."""
        return max(self.intra_reduce_scatter_s, self.inter_all_reduce_s, self.intra_all_gather_s)

    @property
    def speedup(self) -> float:
        """NCCL's flat ring time over the three-call (serialized) time [-]; below 1 the calls are slower."""
        return self.flat_ring_s / self.total_s if self.total_s > 0 else 1.0

    @property
    def pipelined_speedup(self) -> float:
        """NCCL's flat ring time over the pipelined time [-]; above 1 the pipelined hierarchy is faster."""
        return self.flat_ring_s / self.pipelined_s if self.pipelined_s > 0 else 1.0


def hierarchical_allreduce(
    size_bytes: float,
    gpus_per_node: int,
    nodes: int,
    intra_bytes_per_s: float,
    inter_bytes_per_s: float,
    intra_latency_s: float = 0.0,
    inter_latency_s: float = 0.0,
    nics_per_node=None,
) -> HierarchicalAllReduce:
    """A two-level all-reduce in three calls, beside NCCL's flat ring and tree over the same GPUs.

    As Horovod's hierarchical all-reduce does: reduce-scatter inside each node (ring over NVLink),
    all-reduce of each ``S/g`` shard across nodes (``g`` rings at once, each GPU on ``1/g`` of the
    node's NICs), all-gather inside the node. The flat ring and tree are NCCL's, with the same
    NICs and latencies (:func:`cross_node_allreduce`).

    Per adapter, the cross-node phase sends ``2(m-1)/m * S/g``, FEWER bytes than NCCL's flat ring
    over every NIC (``2(N-1)/N * S/g``, ``N = g m``). Done as three separate calls, one after
    another (``total_s``), it still loses to the flat ring (``speedup`` below 1) because the NVLink
    phases and the network phase do not overlap; pipelined chunk by chunk (``pipelined_s``, the
    slowest phase: what NCCL's NVLS-Tree and CollNet do inside one call) it beats the flat ring.
    NCCL's tree (``nccl_tree_s``) is not this hierarchy: it chains the GPUs of a node (no intra-node
    reduce-scatter) and beyond two nodes sends ``2 S`` per node across the network.

    Explained in :ref:`collectives` > Across nodes: rings and trees over every adapter.

    Parameters
    ----------
    size_bytes : float
        ``S`` by the nccl-tests convention (the whole buffer; see the module's conventions) [B], >= 0.
    gpus_per_node : int
        GPUs per node ``g`` [-], >= 1.
    nodes : int
        Nodes ``m`` [-], >= 1.
    intra_bytes_per_s : float
        Each GPU's NVLink bandwidth per direction [B/s], > 0.
    inter_bytes_per_s : float
        ONE NIC's bandwidth per direction [B/s], > 0.
    intra_latency_s : float, optional
        Alpha of a step inside a node [s], >= 0.
    inter_latency_s : float, optional
        Alpha of a step across the network [s], >= 0.
    nics_per_node : int or None, optional
        NICs per node [-], 1 to 1024; default one per GPU.

    Returns
    -------
    HierarchicalAllReduce
        The three phases' times, NCCL's flat ring and tree times [s], with the serialized and
        pipelined totals and speed-ups.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> h = hierarchical_allreduce(2**30, 8, 4, 450e9, 50e9)
    >>> round(h.total_s * 1e3, 2), round(h.pipelined_s * 1e3, 2), round(h.flat_ring_s * 1e3, 2)  # ms
    (8.2, 4.03, 5.2)
    """
    s = _bytes("size_bytes", size_bytes)
    g = _ranks(gpus_per_node, name="gpus_per_node")
    m = _ranks(nodes, name="nodes")
    bi = _rate("intra_bytes_per_s", intra_bytes_per_s)
    be = _rate("inter_bytes_per_s", inter_bytes_per_s)
    ai = _seconds("intra_latency_s", intra_latency_s)
    ae = _seconds("inter_latency_s", inter_latency_s)
    k = g if nics_per_node is None else _ranks(nics_per_node, name="nics_per_node", maximum=1024)
    x = cross_node_allreduce(s, g, m, bi, be, k, ai, ae, 0.0)
    rs = collective_time_s("reduce_scatter", s, g, bi, ai)
    ar = collective_time_s("all_reduce", s / g, m, k * be / g, ae)
    ag = collective_time_s("all_gather", s, g, bi, ai)
    return HierarchicalAllReduce(rs, ar, ag, x.ring_s, x.tree_s)


def bandwidth_ladder(gpu) -> list:
    """The links one GPU's bytes can cross, from the GPU outward, each per direction with its source.

    Its GPU-to-GPU link (NVLink/NVSwitch, or AMD's Infinity Fabric) and its PCIe link to the host
    from the catalog, then the network links of ``NETWORK_LINKS`` (one NIC per GPU, as in DGX/HGX
    nodes). A GPU without a GPU-to-GPU link starts at PCIe.

    Explained in :ref:`collectives` > The bandwidth ladder.

    Parameters
    ----------
    gpu : str or ~widgets.hardware.GPU
        A catalog GPU (name or record).

    Returns
    -------
    list of tuple
        ``(link name, bytes_per_s, source)``: bandwidth per GPU per direction [B/s].

    Raises
    ------
    ValueError
        If ``gpu`` is not in the catalog.

    Examples
    --------
    >>> [(name, bw / 1e9) for name, bw, _ in bandwidth_ladder("H200-SXM")][:2]
    [('NVLink / NVSwitch', 450.0), ('PCIe (to the host)', 64.0)]
    """
    g = get_gpu(gpu, param="gpu")
    rows = []
    if g.interconnect_bytes_per_s:
        name = "NVLink / NVSwitch" if g.vendor == "NVIDIA" else "Infinity Fabric"
        rows.append((name, g.interconnect_bytes_per_s, g.sources.get("interconnect_bytes_per_s", "")))
    rows.append(("PCIe (to the host)", g.host_bytes_per_s, g.sources.get("host_bytes_per_s", "")))
    rows += [(name, bw, src) for name, (bw, src) in NETWORK_LINKS.items()]
    return rows


# --------------------------------------------------------------------------------------------
# Communication against computation: a roofline per parallelism (the scaling book's derivation)
# --------------------------------------------------------------------------------------------
PARALLELISMS = ("data", "fsdp", "tensor", "pipeline")
MAX_WIDTH = 2**24  # d_model and d_ff bound (16 M)
MAX_TOKENS = 2.0**40  # tokens per GPU bound
MAX_PEAK_FLOP_PER_S = 1e21  # a zettaFLOP/s: any GPU of this century
ROOFLINE_SCOPES = ("node", "network")


@dataclass(frozen=True)
class LayerRoofline:
    """Compute and communication of one MLP layer under one parallelism, in the pass where they must overlap.

    Attributes
    ----------
    parallelism : str
        One of ``PARALLELISMS``.
    phase : str
        ``"backward"`` (data, fsdp: the pass whose weight-gradient matmuls the collectives hide
        behind) or ``"forward"`` (tensor, pipeline: the backward has twice the FLOP and the same
        bytes, so the forward is the tighter pass).
    compute_s : float
        Matmul time of that pass at the peak [s].
    comm_s : float
        Collective (or send) time of that pass at the link's bandwidth [s].
    comm_bytes : float
        Bytes each GPU sends in that pass [B].
    """

    parallelism: str
    phase: str
    compute_s: float
    comm_s: float
    comm_bytes: float

    @property
    def ratio(self) -> float:
        """Communication time over compute time [-]; above 1 the layer is communication-bound."""
        return self.comm_s / self.compute_s if self.compute_s > 0 else math.inf

    @property
    def comm_bound(self) -> bool:
        """True when the communication takes longer than the compute it could hide behind."""
        return self.comm_s > self.compute_s

    @property
    def time_s(self) -> float:
        """The pass's time with perfect overlap, the larger of the two [s]."""
        return max(self.compute_s, self.comm_s)


def _width(name: str, value) -> int:
    return _check.integer(name, value, minimum=1, maximum=MAX_WIDTH)


def _peak(name: str, value) -> float:
    _check.positive(name, value)
    return _check.in_range(name, value, 1e6, MAX_PEAK_FLOP_PER_S, "FLOP/s")


def _elem(value) -> float:
    return _check.in_range("bytes_per_elem", value, 0.125, 8, "B")


def layer_roofline(
    parallelism: str,
    tokens: float,
    d_model: int,
    d_ff: int,
    peak_flop_per_s: float,
    link_bytes_per_s: float,
    ranks: int = 8,
    bytes_per_elem: float = 2.0,
    layers_per_stage: int = 1,
) -> LayerRoofline:
    """Compute against communication for one MLP layer (``W_in[D, F]``, ``W_out[F, D]``) under one parallelism.

    The layer of the scaling book's derivation (Austin et al. 2025, "How to Parallelize a
    Transformer for Training" and "How to Think About GPUs" > Rooflines for LLM scaling on GPUs):
    attention and the gate matrix are left out; a matmul of ``t`` tokens by a ``D x F`` matrix is
    ``2 t D F`` FLOP; each collective is a ring at ``link_bytes_per_s`` bus bandwidth
    (:func:`collective_time_s`, latency 0), so it costs ``(r-1)/r`` or ``2(r-1)/r`` of its bytes.

    - ``"data"``: backward, ``8 t D F / C`` (dX and dW of both matrices) against an all-reduce of
      the ``2 D F`` gradient elements.
    - ``"fsdp"`` (ZeRO-3): backward, the same compute against an all-gather of the weights and a
      reduce-scatter of the gradients (the forward's all-gather against ``4 t D F / C`` has the
      same ratio).
    - ``"tensor"`` (Megatron with sequence parallelism): forward, ``4 t D F / (r C)`` against an
      all-gather and a reduce-scatter of the ``t x D`` activations (without sequence parallelism
      one all-reduce of them: the same time). ``t`` is the tokens of the tensor-parallel group.
    - ``"pipeline"``: forward, ``4 t D F L / C`` for a stage of ``L`` layers against one send of the
      ``t x D`` activations to the next stage at the link's bandwidth (``ranks`` is not used).

    Explained in :ref:`collectives` > Communication against computation: a roofline per parallelism.

    Parameters
    ----------
    parallelism : str
        One of ``PARALLELISMS``: ``"data"``, ``"fsdp"``, ``"tensor"``, ``"pipeline"``.
    tokens : float
        Tokens per GPU per step (data, fsdp), per tensor-parallel group (tensor) or per
        micro-batch (pipeline) [-], > 0.
    d_model : int
        Model width ``D`` [-], 1 to ``MAX_WIDTH``.
    d_ff : int
        Feed-forward width ``F`` [-], 1 to ``MAX_WIDTH``.
    peak_flop_per_s : float
        The GPU's matmul rate ``C`` [FLOP/s] (the dense peak, or a measured rate).
    link_bytes_per_s : float
        Bus bandwidth of the collectives ``W`` (per direction; for pipeline the point-to-point link)
        [B/s], > 0.
    ranks : int, optional
        GPUs sharing the collective ``r`` [-], 1 to ``MAX_RANKS``.
    bytes_per_elem : float, optional
        Bytes per communicated element [B], 0.125 to 8 (2 for bf16).
    layers_per_stage : int, optional
        Layers per pipeline stage [-], 1 to 100,000 (pipeline only).

    Returns
    -------
    LayerRoofline
        The pass, its compute and communication times [s] and bytes sent [B], with their ratio.

    Raises
    ------
    ValueError
        If an input is out of range or ``parallelism`` is unknown.

    Examples
    --------
    H100 numbers as the scaling book rounds them (990 TFLOP/s, 450 GB/s NVLink), 8-way data parallel:

    >>> r = layer_roofline("data", 2200, 8192, 28672, 990e12, 450e9, ranks=8)
    >>> round(r.ratio, 3)  # (8-1)/8 x (990e12/450e9) / 2200
    0.875
    >>> round(layer_roofline("tensor", 4096, 8192, 28672, 990e12, 450e9, ranks=8).ratio, 3)  # (r-1) C / (F W)
    0.537
    """
    p = _check.choice("parallelism", parallelism, PARALLELISMS)
    t = _check.in_range("tokens", _check.positive("tokens", tokens), 1e-9, MAX_TOKENS)
    d, f = _width("d_model", d_model), _width("d_ff", d_ff)
    c = _peak("peak_flop_per_s", peak_flop_per_s)
    w = _rate("link_bytes_per_s", link_bytes_per_s)
    r = _ranks(ranks, name="ranks")
    e = _elem(bytes_per_elem)
    stage = _check.integer("layers_per_stage", layers_per_stage, minimum=1, maximum=100_000)
    weights = 2.0 * d * f * e  # both matrices [B]
    acts = t * d * e  # one [t, D] activation [B]
    if p == "data":
        comm = collective_time_s("all_reduce", weights, r, w)
        return LayerRoofline(p, "backward", 8.0 * t * d * f / c, comm, busbw_factor("all_reduce", r) * weights)
    if p == "fsdp":
        comm = collective_time_s("all_gather", weights, r, w) + collective_time_s("reduce_scatter", weights, r, w)
        return LayerRoofline(p, "backward", 8.0 * t * d * f / c, comm, 2.0 * busbw_factor("all_gather", r) * weights)
    if p == "tensor":
        comm = collective_time_s("all_gather", acts, r, w) + collective_time_s("reduce_scatter", acts, r, w)
        return LayerRoofline(p, "forward", 4.0 * t * d * f / (r * c), comm, 2.0 * busbw_factor("all_gather", r) * acts)
    return LayerRoofline(p, "forward", 4.0 * t * d * f * stage / c, acts / w, acts)


def critical_tokens_per_gpu(peak_flop_per_s: float, link_bytes_per_s: float, ranks: int = MAX_RANKS, bytes_per_elem: float = 2.0,
                            experts_ratio: float = 1.0) -> float:
    """Tokens per GPU above which data parallelism and FSDP (ZeRO-3) hide their collectives: ``(r-1)/r (e/2) (E/k) C / W``.

    Set the backward pass's ``8 t D F / C`` equal to a ring all-reduce of ``2 D F e`` bytes (or the
    all-gather plus reduce-scatter of FSDP, the same bytes): the widths cancel, and what is left is
    the GPU's FLOP per byte of link, ``C / W``. The scaling book's rule ``B/X > C/W`` (Austin et al.
    2025) is the many-rank limit with bf16 (``e = 2``). In a mixture of experts each token runs
    ``k`` of the ``E`` experts but every expert's weights are synchronized, so the compute per byte
    falls by ``k/E`` and the critical batch grows by ``E/k`` (the book's ``B/X > (E/k) C/W``).

    Explained in :ref:`collectives` > Communication against computation: a roofline per parallelism.

    Parameters
    ----------
    peak_flop_per_s : float
        The GPU's matmul rate ``C`` [FLOP/s].
    link_bytes_per_s : float
        Bus bandwidth of the collective ``W`` [B/s], > 0.
    ranks : int, optional
        Data-parallel GPUs ``r`` [-], 1 to ``MAX_RANKS`` (default: the many-rank limit).
    bytes_per_elem : float, optional
        Bytes per communicated gradient or weight element [B], 0.125 to 8.
    experts_ratio : float, optional
        Experts over experts per token ``E/k`` of a mixture of experts [-], 1 to 1024 (1: dense).

    Returns
    -------
    float
        Tokens per GPU per step [-]; 0 for one rank (nothing to communicate).

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(critical_tokens_per_gpu(990e12, 450e9))  # the scaling book's H100 in a node: 2200
    2200
    >>> round(critical_tokens_per_gpu(990e12, 400e9))  # across nodes, 8 x 400 Gb/s per node: 2475
    2475
    >>> round(critical_tokens_per_gpu(990e12, 400e9, experts_ratio=128 / 4))  # the book's gpt-oss: 79,200
    79200
    """
    c = _peak("peak_flop_per_s", peak_flop_per_s)
    w = _rate("link_bytes_per_s", link_bytes_per_s)
    r = _ranks(ranks, name="ranks")
    e = _elem(bytes_per_elem)
    m = _check.in_range("experts_ratio", experts_ratio, 1, 1024)
    return (r - 1) / r * (e / 2.0) * m * c / w


def tensor_parallel_max_ranks(d_ff: int, peak_flop_per_s: float, link_bytes_per_s: float, bytes_per_elem: float = 2.0) -> float:
    """The tensor-parallel degree at which a layer's collectives take as long as its matmuls: ``1 + (2/e) F W / C``.

    Forward pass: ``4 t D F / (r C)`` against an all-gather and a reduce-scatter of ``t D e`` bytes,
    ``2 (r-1)/r t D e / W``: the tokens and ``D`` cancel, so only the feed-forward width decides.
    The scaling book writes ``Y < F W / C`` (it drops the ring's ``(r-1)/r``, which adds the one).
    Unlike data parallelism these collectives sit on the critical path: the ratio holds only if
    they are overlapped with the matmuls (asynchronous tensor parallelism, collective matmul).

    Explained in :ref:`collectives` > Communication against computation: a roofline per parallelism.

    Parameters
    ----------
    d_ff : int
        Feed-forward width ``F`` [-], 1 to ``MAX_WIDTH``.
    peak_flop_per_s : float
        The GPU's matmul rate ``C`` [FLOP/s].
    link_bytes_per_s : float
        Bus bandwidth of the collectives ``W`` [B/s], > 0.
    bytes_per_elem : float, optional
        Bytes per activation element [B], 0.125 to 8.

    Returns
    -------
    float
        Ranks [-] (not rounded: a degree below it is compute-bound).

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(tensor_parallel_max_ranks(28000, 990e12, 400e9) - 1, 1)  # the book: about 11-way
    11.3
    """
    f = _width("d_ff", d_ff)
    c = _peak("peak_flop_per_s", peak_flop_per_s)
    w = _rate("link_bytes_per_s", link_bytes_per_s)
    e = _elem(bytes_per_elem)
    return 1.0 + (2.0 / e) * f * w / c


def roofline_link_bytes_per_s(gpu, scope: str = "node", gpus_per_node: int = 8, nic: str = "InfiniBand NDR / 400 GbE RoCE") -> float:
    """The bus bandwidth ``W`` a parallelism's collectives get, from the catalog.

    ``"node"``: the GPU's NVLink (or Infinity Fabric) per direction, or its PCIe link where it has
    none. ``"network"``: NCCL's ring over every adapter of the node, the smaller of that link and
    ``gpus_per_node`` adapters (:func:`cross_node_allreduce`); the scaling book's "node egress"
    (400 GB/s for eight 400 Gb/s adapters).

    Explained in :ref:`collectives` > Communication against computation: a roofline per parallelism.

    Parameters
    ----------
    gpu : str or ~widgets.hardware.GPU
        A catalog GPU.
    scope : str, optional
        ``"node"`` or ``"network"``.
    gpus_per_node : int, optional
        GPUs and network adapters per node [-], 1 to 1024.
    nic : str, optional
        One of the catalog's ``NICS``.

    Returns
    -------
    float
        Bandwidth [B/s].

    Raises
    ------
    ValueError
        If ``gpu``, ``scope`` or ``nic`` is unknown or ``gpus_per_node`` is out of range.

    Examples
    --------
    >>> roofline_link_bytes_per_s("H200-SXM") / 1e9, roofline_link_bytes_per_s("H200-SXM", "network") / 1e9
    (450.0, 400.0)
    """
    g = get_gpu(gpu, param="gpu")
    s = _check.choice("scope", scope, ROOFLINE_SCOPES)
    k = _ranks(gpus_per_node, maximum=1024, name="gpus_per_node")
    link = NICS[_check.choice("nic", nic, tuple(NICS))].bytes_per_s
    intra = g.interconnect_bytes_per_s or g.host_bytes_per_s
    return intra if s == "node" else min(intra, k * link)


# --------------------------------------------------------------------------------------------
# ZeRO-1/2/3 and FSDP: the collectives of one step
# --------------------------------------------------------------------------------------------
ZERO_COLLECTIVES = {
    0: (("all_reduce", "gradients"),),
    1: (("reduce_scatter", "gradients"), ("all_gather", "updated weights")),
    2: (("reduce_scatter", "gradients"), ("all_gather", "updated weights")),
    3: (("all_gather", "weights, forward"), ("all_gather", "weights, backward"), ("reduce_scatter", "gradients")),
}


def zero_step_comm_s(params: float, gpus: int, stage: int, busbw_bytes_per_s: float, bytes_per_elem: float = 2.0) -> float:
    """Data-parallel communication time of one step under ZeRO stage 0 to 3 (FSDP ``FULL_SHARD`` is 3).

    Each collective of ``ZERO_COLLECTIVES[stage]`` moves the whole model (``S = params x
    bytes_per_elem``) by the ring model (:func:`collective_time_s`, latency 0): stage 0 (plain
    DDP) one all-reduce; stages 1 and 2 the same bytes as a reduce-scatter of the gradients and an
    all-gather of the updated weights; stage 3 one more all-gather, because the weights are
    gathered again for the backward pass. Per GPU that is ``2 Psi`` and ``3 Psi`` elements
    (Rajbhandari et al. 2020, Section 7; ``widgets.models.training_memory.zero_comm_bytes_per_gpu``),
    times ``(n-1)/n`` for the ring, over the bus bandwidth.

    Explained in :ref:`collectives` > ZeRO and FSDP: the bytes of each stage.

    Parameters
    ----------
    params : float
        Parameters ``Psi`` [-], > 0.
    gpus : int
        Data-parallel GPUs [-], 1 to ``MAX_RANKS``.
    stage : int
        ZeRO stage [-], 0 to 3.
    busbw_bytes_per_s : float
        Bus bandwidth of the collectives [B/s], > 0.
    bytes_per_elem : float, optional
        Bytes per communicated element [B], 0.125 to 8 (2 for bf16).

    Returns
    -------
    float
        Time [s]; 0 for one GPU.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [round(zero_step_comm_s(7e9, 8, s, 450e9) * 1e3, 2) for s in range(4)]  # ms
    [54.44, 54.44, 54.44, 81.67]
    """
    from .training_memory import _params

    p = _params(params)
    n = _ranks(gpus, name="gpus")
    k = _check.integer("stage", stage, minimum=0, maximum=3)
    w = _rate("busbw_bytes_per_s", busbw_bytes_per_s)
    e = _elem(bytes_per_elem)
    s = _bytes("params x bytes_per_elem", p * e)
    return sum(collective_time_s(op, s, n, w) for op, _ in ZERO_COLLECTIVES[k])


# --------------------------------------------------------------------------------------------
# NCCL's protocols and its choice of algorithm: the tuner's cost model on one node
# --------------------------------------------------------------------------------------------
PROTOCOLS = ("LL", "LL128", "Simple")
# NVIDIA/nccl tag v2.28.9-1, src/graph/tuning.cc, ncclTunerConstantsDefaults: baseLatencies and
# hwLatencies[NVLINK] [s], per algorithm and protocol (LL, LL128, Simple).
NCCL_BASE_LATENCY_S = {"tree": {"LL": 6.8e-6, "LL128": 14.0e-6, "Simple": 8.4e-6},
                       "ring": {"LL": 6.6e-6, "LL128": 14.0e-6, "Simple": 8.4e-6}}
NCCL_NVLINK_HW_LATENCY_S = {"tree": {"LL": 0.6e-6, "LL128": 1.25e-6, "Simple": 4.0e-6},
                            "ring": {"LL": 0.6e-6, "LL128": 1.9e-6, "Simple": 3.4e-6}}
# NVLS (NVLink SHARP), which this model leaves out: baseLatencies 0 and hwLatencies[NVLINK][NVLS][Simple]
# 25 us per call (same file), the latency NCCL weighs against the ring's when NVLink multicast is on.
NCCL_NVLS_NVLINK_LATENCY_S = 25.0e-6
# Share of the bus bandwidth each protocol keeps (tuning.cc, "Various model refinements"): LL sends
# 4 bytes of data with a 4-byte flag in each 8-byte store (0.5); LL128 keeps 120 of every 128 bytes
# (NCCL rounds it to 0.92); Simple sends data and flags separately (1, but with memory fences: the
# higher per-step latency above). The tree all-reduce also loses 0.92, and its LL and LL128 keep
# 1/3.8 and 7/9 on one node.
NCCL_RING_PROTOCOL_FACTOR = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}
NCCL_TREE_PROTOCOL_FACTOR = {"LL": 1.0 / 3.8, "LL128": 7.0 / 9.0, "Simple": 1.0}
NCCL_TREE_ALLREDUCE_FACTOR = 0.92
# The most LL reaches on one node, Hopper (tuning.cc llMaxBws, Hopper-N1: 141 GB/s; Ampere 87.7,
# Blackwell 282).
NCCL_LL_MAX_BYTES_PER_S_HOPPER = 141.0e9
# What NCCL counts per NVLink link when it sizes its rings (src/graph/topo.h, SM90_NVLINK_BW 20.6 GB/s;
# SM100 40.1): 18 links of an H100/H200 are 370.8 GB/s to NCCL, not the datasheet's 450.
NCCL_NVLINK_BYTES_PER_S_PER_LINK = {"sm_80": 20.0e9, "sm_86": 12.0e9, "sm_90": 20.6e9, "sm_100": 40.1e9}
# tuning.cc treeCorrectionFactor[protocol][log2(bytes / 64)], for the tree all-reduce below 512 MiB.
NCCL_TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
NCCL_MODEL_OPS = ("all_reduce", "all_gather", "reduce_scatter")
# Across nodes (same file, v2.28.9-1): hwLatencies[NET] [s], a step that crosses the network (NCCL uses the
# tree's entry for the ring too when each node holds one rank).
NCCL_NET_HW_LATENCY_S = {"tree": {"LL": 5.0e-6, "LL128": 8.5e-6, "Simple": 14.0e-6},
                         "ring": {"LL": 2.7e-6, "LL128": 4.0e-6, "Simple": 14.0e-6}}
# llMaxBws across nodes: NCCL takes that row by the host CPU, not the GPU; Intel x86 (and other non-AMD)
# hosts: 39.0 GB/s on two nodes, 20.4 GB/s on more (AMD hosts: 22.5 and 19.0).
NCCL_LL_MAX_BYTES_PER_S_TWO_NODES = 39.0e9
NCCL_LL_MAX_BYTES_PER_S_MORE_NODES = 20.4e9
# getNetOverhead: across nodes each intra-node ring step costs at least this (1 us on Intel x86 and non-x86
# hosts, 2 us on AMD), three times it with Simple (NCCL 2.18 and later).
NCCL_NET_OVERHEAD_S = 1.0e-6
# The plateau factor starts at S / (channels x ranks) >= 64 B; the channel count only moves that threshold
# (NCCL runs 16 to 32 channels on an 8-NIC H100/H200 node).
NCCL_ASSUMED_CHANNELS = 16


@dataclass(frozen=True)
class NcclChoice:
    """The algorithm and protocol NCCL's cost model picks for one call, and every candidate's time.

    Attributes
    ----------
    algorithm : str
        ``"ring"`` or ``"tree"``.
    protocol : str
        One of ``PROTOCOLS``.
    time_s : float
        The modelled time of that choice [s].
    times : tuple
        ``(algorithm, protocol, time [s])`` of every candidate, in NCCL's order.
    """

    algorithm: str
    protocol: str
    time_s: float
    times: tuple


def _ring_bus_bytes_per_s(link: float, protocol: str, ll_max: float) -> float:
    """The ring's bus bandwidth with ``protocol`` in NCCL's model: the link's times the protocol's
    share (``NCCL_RING_PROTOCOL_FACTOR``), LL's capped at ``ll_max`` (``llMaxBw``)."""
    bus = link * NCCL_RING_PROTOCOL_FACTOR[protocol]
    return min(bus, ll_max) if protocol == "LL" else bus


def _protocols(protocols) -> list:
    """``protocols`` checked: a non-empty sequence drawn from ``PROTOCOLS``."""
    if isinstance(protocols, str) or not hasattr(protocols, "__iter__"):
        raise ValueError(f"protocols must be a non-empty list drawn from {PROTOCOLS}, got {protocols!r}")
    protos = [_check.choice("protocols", q, PROTOCOLS) for q in protocols]
    if not protos:
        raise ValueError(f"protocols must be a non-empty list drawn from {PROTOCOLS}, got {protocols!r}")
    return protos


def _fastest(times: tuple) -> NcclChoice:
    """The first strictly fastest of ``(algorithm, protocol, time)`` candidates, as NCCL keeps it."""
    best = times[0]
    for cand in times[1:]:
        if cand[2] < best[2]:
            best = cand
    return NcclChoice(best[0], best[1], best[2], times)


def nccl_model_time_s(
    op: str,
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    algorithm: str = "ring",
    protocol: str = "Simple",
    ll_max_bytes_per_s: float = NCCL_LL_MAX_BYTES_PER_S_HOPPER,
) -> float:
    """NCCL's own estimate of a collective's time on one node, for one algorithm and protocol.

    Follows ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` (NVIDIA/nccl v2.28.9-1,
    src/graph/tuning.cc) for ranks on one NVLink node: latency ``base + steps x hw`` (ring:
    ``2(n-1)`` steps for all-reduce, ``n-1`` for all-gather and reduce-scatter; tree all-reduce:
    ``2(n-1)``), bandwidth the link's times the protocol's share (``NCCL_RING_PROTOCOL_FACTOR``,
    LL capped at ``ll_max_bytes_per_s``; the tree's ``NCCL_TREE_*`` factors and its size
    correction), turned into algorithm bandwidth (ring: ``n / steps``; tree: ``1/2``). Left out:
    NCCL's per-channel caps (which bind only with few channels), everything across nodes, and the
    algorithms NVLS, CollNet and PAT: on an NVSwitch node with NVLink multicast NCCL also weighs NVLS
    (``NCCL_NVLS_NVLINK_LATENCY_S``, 25 us per call in its model) and takes it for large
    all-reduces, so this model is NCCL's with ``NCCL_NVLS_ENABLE=0``.

    Explained in :ref:`collectives` > NCCL's protocols and how it picks one.

    Parameters
    ----------
    op : str
        One of ``NCCL_MODEL_OPS``: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``.
    size_bytes : float
        ``S`` by the nccl-tests convention (what NCCL itself counts) [B], >= 0.
    n : int
        Ranks on the node [-], 1 to 1024.
    link_bytes_per_s : float
        The ring's bus bandwidth with the Simple protocol (NCCL: channels x per-channel bandwidth)
        [B/s], > 0.
    algorithm : str, optional
        ``"ring"`` or ``"tree"`` (tree: all-reduce only).
    protocol : str, optional
        One of ``PROTOCOLS``.
    ll_max_bytes_per_s : float, optional
        The most the LL protocol reaches [B/s], > 0 (``NCCL_LL_MAX_BYTES_PER_S_HOPPER``).

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range, or the tree is asked for another op than all-reduce.

    Examples
    --------
    1 MiB on 8 H200s, with the 370.8 GB/s NCCL counts for 18 NVLink 4 links:

    >>> round(nccl_model_time_s("all_reduce", 2**20, 8, 370.8e9, "ring", "LL") * 1e6, 2)  # us
    28.01
    >>> round(nccl_model_time_s("all_reduce", 2**20, 8, 370.8e9, "ring", "Simple") * 1e6, 2)
    60.95
    """
    o = _check.choice("op", op, NCCL_MODEL_OPS)
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n, maximum=1024)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    a = _check.choice("algorithm", algorithm, ALGORITHMS)
    p = _check.choice("protocol", protocol, PROTOCOLS)
    llmax = _rate("ll_max_bytes_per_s", ll_max_bytes_per_s)
    if a == "tree" and o != "all_reduce":
        raise ValueError(f"algorithm must be 'ring' for {o} (NCCL runs only the all-reduce as a tree), got 'tree'")
    if k == 1:
        return 0.0
    steps = 2 * (k - 1) if o == "all_reduce" else k - 1
    lat = NCCL_BASE_LATENCY_S[a][p] + steps * NCCL_NVLINK_HW_LATENCY_S[a][p]
    if a == "ring":
        alg = _ring_bus_bytes_per_s(b, p, llmax) * k / steps
    else:
        bus = b * NCCL_TREE_ALLREDUCE_FACTOR * NCCL_TREE_PROTOCOL_FACTOR[p]
        if p == "LL":
            bus = min(bus, llmax)
        alg = bus * 0.5
        chunks = int(s) >> 6
        if chunks >= 1:
            log_size = chunks.bit_length() - 1
            if log_size < 23:
                alg *= NCCL_TREE_CORRECTION[p][log_size]
    return lat + s / alg


def nccl_model_choice(
    op: str,
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    protocols=PROTOCOLS,
    ll_max_bytes_per_s: float = NCCL_LL_MAX_BYTES_PER_S_HOPPER,
) -> NcclChoice:
    """The ring or tree and protocol with the least modelled time, as NCCL picks them with NVLS, CollNet and PAT off.

    NCCL loops over algorithms (tree before ring) and protocols (LL, LL128, Simple) and keeps the
    first strictly fastest (``ncclTopoGetAlgoInfo``, src/enqueue.cc); this does the same with
    :func:`nccl_model_time_s`. ``NCCL_ALGO`` and ``NCCL_PROTO`` narrow the candidates.

    Explained in :ref:`collectives` > NCCL's protocols and how it picks one.

    Parameters
    ----------
    op : str
        One of ``NCCL_MODEL_OPS``.
    size_bytes : float
        ``S`` [B], >= 0.
    n : int
        Ranks on the node [-], 2 to 1024.
    link_bytes_per_s : float
        The ring's Simple bus bandwidth [B/s], > 0.
    protocols : sequence of str, optional
        The enabled protocols, a non-empty subset of ``PROTOCOLS``.
    ll_max_bytes_per_s : float, optional
        The most LL reaches [B/s], > 0.

    Returns
    -------
    NcclChoice
        The chosen algorithm, protocol and time [s], and every candidate's time.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> c = nccl_model_choice("all_reduce", 16 * 2**20, 8, 370.8e9)
    >>> c.algorithm, c.protocol
    ('ring', 'LL128')
    """
    _check.choice("op", op, NCCL_MODEL_OPS)
    _ranks(n, minimum=2, maximum=1024)
    protos = _protocols(protocols)
    algos = ("tree", "ring") if op == "all_reduce" else ("ring",)
    times = tuple((a, q, nccl_model_time_s(op, size_bytes, n, link_bytes_per_s, a, q, ll_max_bytes_per_s))
                  for a in algos for q in PROTOCOLS if q in protos)
    return _fastest(times)


def nccl_model_switch_bytes(op: str, n: int, link_bytes_per_s: float, protocols=PROTOCOLS,
                            ll_max_bytes_per_s: float = NCCL_LL_MAX_BYTES_PER_S_HOPPER) -> list:
    """The message sizes where NCCL's cost model changes its choice, from 1 B to 64 GiB.

    Explained in :ref:`collectives` > NCCL's protocols and how it picks one.

    Parameters
    ----------
    op : str
        One of ``NCCL_MODEL_OPS``.
    n : int
        Ranks on the node [-], 2 to 1024.
    link_bytes_per_s : float
        The ring's Simple bus bandwidth [B/s], > 0.
    protocols : sequence of str, optional
        The enabled protocols.
    ll_max_bytes_per_s : float, optional
        The most LL reaches [B/s], > 0.

    Returns
    -------
    list of tuple
        ``(size [B], algorithm, protocol)``: from that size up (to the next entry) the choice is
        that one; the first entry is at 1 B.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [(round(s / 2**10), a, p) for s, a, p in nccl_model_switch_bytes("all_reduce", 8, 370.8e9)]  # KiB
    [(0, 'ring', 'LL'), (3433, 'ring', 'LL128'), (36645, 'ring', 'Simple')]
    """
    def pick(s):
        c = nccl_model_choice(op, s, n, link_bytes_per_s, protocols, ll_max_bytes_per_s)
        return c.algorithm, c.protocol

    grid = [2.0**k for k in range(0, 37)]
    out = [(1.0, *pick(1.0))]
    prev = out[0][1:]
    for lo, hi in zip(grid, grid[1:]):
        now = pick(hi)
        while now != prev:  # the choice changes in (lo, hi]: bisect on whole bytes (again if it changes twice)
            a, b = lo, hi
            while b - a > 1:
                mid = math.floor((a + b) / 2)
                if pick(mid) == prev:
                    a = mid
                else:
                    b = mid
            prev = pick(b)
            out.append((float(b), *prev))
            lo = b
    return out


def _ring_allreduce_protocol_terms(n: int, nodes: int, link: float, protocol: str, ll_max) -> tuple:
    """``(latency [s] before the plateau factor, bus bandwidth [B/s])`` of NCCL's ring all-reduce, one protocol."""
    steps = 2 * (n - 1)
    inter = 2 * (nodes - 1)
    overhead = 0.0 if nodes == 1 else NCCL_NET_OVERHEAD_S * (3 if protocol == "Simple" else 1)
    intra = max(NCCL_NVLINK_HW_LATENCY_S["ring"][protocol], overhead)
    net = NCCL_NET_HW_LATENCY_S["tree" if n == nodes else "ring"][protocol]
    lat = NCCL_BASE_LATENCY_S["ring"][protocol] + (steps - inter) * intra + inter * net
    if ll_max is None:
        ll_max = (NCCL_LL_MAX_BYTES_PER_S_HOPPER if nodes == 1 else NCCL_LL_MAX_BYTES_PER_S_TWO_NODES if nodes == 2
                  else NCCL_LL_MAX_BYTES_PER_S_MORE_NODES)
    return lat, _ring_bus_bytes_per_s(link, protocol, ll_max)


def nccl_ring_allreduce_time_s(
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    protocol: str = "Simple",
    nodes: int = 1,
    ll_max_bytes_per_s=None,
    channels: int = NCCL_ASSUMED_CHANNELS,
) -> float:
    """NCCL's estimate of one ring all-reduce with one protocol, on one node or across nodes.

    Latency and bandwidth come from the SAME protocol (NVIDIA/nccl v2.28.9-1, src/graph/tuning.cc,
    ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``). Latency: ``base + (2(n-1) - k) x
    max(hw_NVLink, overhead) + k x hw_net`` with ``k = 2(nodes-1)`` steps across the network
    (``NCCL_BASE_LATENCY_S``, ``NCCL_NVLINK_HW_LATENCY_S``, ``NCCL_NET_HW_LATENCY_S``; ``overhead``:
    ``NCCL_NET_OVERHEAD_S`` across nodes, three times it for Simple); for Simple across nodes it is
    multiplied by ``NCCL_RING_PLATEAU_FACTOR`` once ``S / (channels x n) >= 64`` B, and only then.
    Bus bandwidth: the link's times the protocol's share (``NCCL_RING_PROTOCOL_FACTOR``: 0.5, 0.92,
    1), LL's capped at ``llMaxBw`` (141 GB/s on one Hopper node; across nodes NCCL's figures for
    Intel hosts, 39 GB/s on two nodes and 20.4 GB/s on more); algorithm bandwidth
    ``bus x n / (2(n-1))``. On one node this is :func:`nccl_model_time_s` for the ring all-reduce.
    Left out: NCCL's per-channel LL128 cap, the graph's extra network latency (0 on InfiniBand), the
    tree, NVLS and CollNet.

    Explained in :ref:`collectives` > Hiding communication behind computation.

    Parameters
    ----------
    size_bytes : float
        ``S``, the buffer all-reduced [B], >= 0.
    n : int
        Ranks [-], 1 to ``MAX_RANKS``.
    link_bytes_per_s : float
        The ring's bus bandwidth with the Simple protocol [B/s], > 0 (across nodes: the smaller of
        NVLink and the node's adapters, as in :func:`cross_node_allreduce`).
    protocol : str, optional
        One of ``PROTOCOLS``.
    nodes : int, optional
        Nodes the ``n`` ranks span [-], 1 to ``n``.
    ll_max_bytes_per_s : float or None, optional
        LL's bus-bandwidth cap [B/s], > 0 (None: NCCL's for this node count, as above).
    channels : int, optional
        NCCL's channels [-], 1 to 1024: they only set where the plateau factor starts.

    Returns
    -------
    float
        Time [s]; 0 for one rank.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    A 25 MiB bucket on 16 GPUs in two nodes, 400 GB/s bus bandwidth (us):

    >>> [round(nccl_ring_allreduce_time_s(25 * 2**20, 16, 400e9, p, nodes=2) * 1e6, 1) for p in PROTOCOLS]
    [1300.3, 208.8, 307.1]
    """
    s = _bytes("size_bytes", size_bytes)
    k = _ranks(n)
    m = _ranks(nodes, maximum=k, name="nodes")
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    p = _check.choice("protocol", protocol, PROTOCOLS)
    llmax = None if ll_max_bytes_per_s is None else _rate("ll_max_bytes_per_s", ll_max_bytes_per_s)
    ch = _ranks(channels, maximum=1024, name="channels")
    if k == 1:
        return 0.0
    lat, bus = _ring_allreduce_protocol_terms(k, m, b, p, llmax)
    if p == "Simple" and m > 1 and s / (ch * k) >= 64:
        lat *= NCCL_RING_PLATEAU_FACTOR
    return lat + s / (bus * k / (2 * (k - 1)))


def nccl_ring_allreduce_choice(
    size_bytes: float,
    n: int,
    link_bytes_per_s: float,
    nodes: int = 1,
    protocols=PROTOCOLS,
    ll_max_bytes_per_s=None,
    channels: int = NCCL_ASSUMED_CHANNELS,
) -> NcclChoice:
    """The protocol NCCL's cost model picks for a ring all-reduce (``NCCL_ALGO=Ring``), on one node or across nodes.

    The first strictly fastest of :func:`nccl_ring_allreduce_time_s` in NCCL's order (LL, LL128,
    Simple), as ``ncclTopoGetAlgoInfo`` keeps it. LL128 counts as enabled unless ``protocols`` leaves
    it out: NCCL enables it on Hopper only when every GPU reaches its adapter and the other GPUs
    directly (``PATH_PXN`` and ``PATH_NVB`` at most, as on an HGX node) and all GPUs are of one
    compute capability; its per-channel bandwidth cap (``perChMaxRingLL128Bw``, 36.7 GB/s on Hopper)
    is not modelled, which holds while ``channels`` x 36.7 GB/s exceeds 0.92 of ``link_bytes_per_s``.

    Explained in :ref:`collectives` > Hiding communication behind computation.

    Parameters
    ----------
    size_bytes : float
        ``S`` [B], >= 0.
    n : int
        Ranks [-], 2 to ``MAX_RANKS``.
    link_bytes_per_s : float
        The ring's Simple bus bandwidth [B/s], > 0.
    nodes : int, optional
        Nodes [-], 1 to ``n``.
    protocols : sequence of str, optional
        The enabled protocols, a non-empty subset of ``PROTOCOLS``.
    ll_max_bytes_per_s : float or None, optional
        LL's bus-bandwidth cap [B/s] (None: NCCL's for this node count).
    channels : int, optional
        NCCL's channels [-] (where the plateau factor starts).

    Returns
    -------
    NcclChoice
        ``"ring"``, the protocol and its time [s], and every candidate's time.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [nccl_ring_allreduce_choice(s, 16, 400e9, nodes=2).protocol for s in (2**10, 2**20, 2**30)]
    ['LL', 'LL128', 'Simple']
    """
    _ranks(n, minimum=2)
    protos = _protocols(protocols)
    times = tuple(("ring", q, nccl_ring_allreduce_time_s(size_bytes, n, link_bytes_per_s, q, nodes, ll_max_bytes_per_s, channels))
                  for q in PROTOCOLS if q in protos)
    return _fastest(times)


# --------------------------------------------------------------------------------------------
# Topology and expert parallelism: fat trees, oversubscription, the all-to-all of a MoE layer
# --------------------------------------------------------------------------------------------
def fat_tree_max_endpoints(switch_ports: int, levels: int = 2) -> int:
    """Endpoints (NICs) a non-blocking fat tree of ``levels`` switch levels connects: ``2 (k/2)^levels``.

    Every switch but the top level gives half its ``k`` ports to the level below and half to the
    level above, so each level multiplies the reach by ``k/2``; the top level gives all ``k`` down.
    Two levels (leaf-spine): ``k^2/2``; three levels: ``k^3/4`` (Al-Fares, Loukissas & Vahdat 2008:
    48-port switches connect 27,648 hosts). A rail-optimized cluster builds one such tree per rail
    (per GPU index in the node), so its GPUs number ``rails`` times this.

    Explained in :ref:`collectives` > Topology: fat trees, rails and the all-to-all of experts.

    Parameters
    ----------
    switch_ports : int
        Ports per switch ``k`` [-], even, 2 to 4096.
    levels : int, optional
        Switch levels [-], 1 to 5.

    Returns
    -------
    int
        Endpoints [-].

    Raises
    ------
    ValueError
        If an input is out of range or ``switch_ports`` is odd.

    Examples
    --------
    >>> fat_tree_max_endpoints(48, 3), fat_tree_max_endpoints(64, 2)
    (27648, 2048)
    """
    k = _check.integer("switch_ports", switch_ports, minimum=2, maximum=4096)
    if k % 2:
        raise ValueError(f"switch_ports must be even (half down, half up), got {switch_ports!r}")
    m = _check.integer("levels", levels, minimum=1, maximum=5)
    return 2 * (k // 2) ** m


def oversubscribed_bytes_per_s(nic_bytes_per_s: float, down_ports: int, up_ports: int) -> float:
    """What each endpoint can send out of its leaf switch when all do at once: ``nic x min(1, up / down)``.

    A leaf with ``down_ports`` endpoints and ``up_ports`` links to the spine (same speed) is
    oversubscribed ``down:up``; traffic that leaves the leaf (an all-to-all across the cluster, a
    ring that crosses leaves) shares the uplinks. The bisection bandwidth of the cluster scales the
    same way.

    Explained in :ref:`collectives` > Topology: fat trees, rails and the all-to-all of experts.

    Parameters
    ----------
    nic_bytes_per_s : float
        One endpoint's link, per direction [B/s], > 0.
    down_ports : int
        Endpoints per leaf [-], 1 to 4096.
    up_ports : int
        Uplinks per leaf [-], 1 to 4096.

    Returns
    -------
    float
        Bandwidth per endpoint for traffic leaving the leaf [B/s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> oversubscribed_bytes_per_s(50e9, 32, 32) / 1e9, oversubscribed_bytes_per_s(50e9, 32, 16) / 1e9
    (50.0, 25.0)
    """
    b = _rate("nic_bytes_per_s", nic_bytes_per_s)
    d = _check.integer("down_ports", down_ports, minimum=1, maximum=4096)
    u = _check.integer("up_ports", up_ports, minimum=1, maximum=4096)
    return b * min(1.0, u / d)


def moe_all_to_all_time_s(
    tokens: float,
    d_model: int,
    experts_per_token: float,
    link_bytes_per_s: float,
    dispatch_bytes_per_elem: float = 1.0,
    combine_bytes_per_elem: float = 2.0,
    remote_fraction: float = 1.0,
) -> float:
    """Dispatch plus combine of one MoE layer's tokens, bound by one GPU's link: ``t k D (e_d + e_c) f / B``.

    Each of the ``t`` tokens a GPU holds goes to ``k`` experts (its hidden vector, ``D`` elements
    of ``e_d`` bytes: DeepSeek-V3 dispatches in FP8) and comes back as ``k`` outputs (``e_c``
    bytes: BF16); the share ``f`` whose expert lives on another GPU crosses the link. Zhao et al.
    2025 (Insights into DeepSeek-V3, ISCA) bound decoding speed with this formula: 32 tokens, 9
    experts (8 routed and the shared one), ``D`` ~ 7K, 50 GB/s of InfiniBand, two micro-batches over
    61 layers: about 67 tokens/s (about 1,200 on GB200 NVL72, 900 GB/s), a communication-only
    upper bound.

    Explained in :ref:`collectives` > Topology: fat trees, rails and the all-to-all of experts.

    Parameters
    ----------
    tokens : float
        Tokens per GPU in the layer [-], > 0.
    d_model : int
        Hidden size ``D`` [-], 1 to ``MAX_WIDTH``.
    experts_per_token : float
        Experts each token is sent to ``k`` [-], 0 to 1024.
    link_bytes_per_s : float
        The GPU's share of the link the all-to-all crosses, per direction [B/s], > 0.
    dispatch_bytes_per_elem : float, optional
        Bytes per element sent to the experts [B], 0.125 to 8.
    combine_bytes_per_elem : float, optional
        Bytes per element sent back [B], 0.125 to 8.
    remote_fraction : float, optional
        Share of the copies whose expert is on another GPU [-], 0 to 1 (``(n-1)/n`` for uniform
        routing over ``n`` GPUs).

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(1 / (2 * 61 * moe_all_to_all_time_s(32, 7000, 9, 50e9)), 1)  # tokens/s; Zhao et al. 2025: ~67
    67.8
    """
    t = _check.in_range("tokens", _check.positive("tokens", tokens), 1e-9, MAX_TOKENS)
    d = _width("d_model", d_model)
    k = _check.in_range("experts_per_token", experts_per_token, 0, 1024)
    b = _rate("link_bytes_per_s", link_bytes_per_s)
    ed = _check.in_range("dispatch_bytes_per_elem", dispatch_bytes_per_elem, 0.125, 8, "B")
    ec = _check.in_range("combine_bytes_per_elem", combine_bytes_per_elem, 0.125, 8, "B")
    f = _check.fraction("remote_fraction", remote_fraction)
    return t * k * d * (ed + ec) * f / b
