"""Kernels: a throughput model of each rung of the fp32 matmul ladder, and the statistics of timing a kernel.

Pure functions (numpy and the standard library). The ladder is Simon Boehm's worklog ("How to
Optimize a CUDA Matmul Kernel for cuBLAS-like Performance", 2022): naive, coalesced, shared-memory
tiles, 1D and 2D register blocking, vectorized loads, warp tiling. For one warp and one step of
the K loop the model counts, from the tiling alone, the multiply-adds, the instructions issued and
the passes the L1/shared-memory pipe makes (:func:`rung_cost`, reusing
:func:`widgets.models.memory_hierarchy.shared_wavefronts` for bank conflicts); the predicted rate
is the tightest of four ceilings (:func:`ladder_prediction`): the fp32 lanes, the issue slots, the
L1/shared-memory wavefronts and HBM, times the tail efficiency of the grid's waves (occupancy
from :func:`widgets.models.simt.occupancy`). It leaves latency, and the queues between the issue
slots and the L1 pipe, out on purpose: where a rung falls short of it, those are candidates.

Timing statistics: a confidence interval of a mean from n repeats and their spread
(:func:`mean_ci_half_width`), the repeats needed for a target interval (:func:`repeats_needed`),
a distribution-free interval for a median (:func:`median_ci_ranks`) and the error of timing a
short kernel with a host clock (:func:`host_timing_error`), and the band the spread of group means
of independent timings falls in (:func:`spread_of_means_band`).

Units are in the names: ``*_bytes`` [B], ``*_flop`` [FLOP], ``*_s`` [s], ``*_hz`` [1/s],
``*_per_s`` [1/s]. Bad input raises ``ValueError`` naming the parameter, the value and what is valid.

Explained in :ref:`kernels` > The ladder's model.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field

from .. import _check
from . import memory_hierarchy as mh
from . import simt

WARP = 32
LINE_BYTES = mh.LINE_BYTES  # 128: a cache line [B]
TAGS_PER_CLOCK = 4  # L1TEX tag stage: "4 sets x 4 sectors per cycle" on GV100 and later (NVIDIA developer forum, thread 273699/8)
# a floor: the review's Nsight Compute profile (benchmarks/h200/kernels_review_ncu_2026-12-02) measured 10.5 tag passes
# per warp and k at K = 4092 and 13.1 at K = 4064 where lines / 4 gives 8 (+1 for B); perhaps lines sharing a cache set
FP32_BYTES = 4
MAX_DIM = 1 << 20
MAX_TILE = 1024
BASE_REGS = 32  # registers besides accumulators and fragments (indices, pointers, loop): a constant chosen by hand,
# not derived or sourced, so the register rows are labelled "fit", not predictions

RUNGS = ("naive", "coalesced", "smem", "blocktile_1d", "blocktile_2d", "vectorized", "warptile")
"""The CUDA-core rungs of the ladder, in order."""

RUNG_TITLES = {
    "naive": "naive (uncoalesced)",
    "coalesced": "coalesced",
    "smem": "shared-memory tiles",
    "blocktile_1d": "1D register blocking",
    "blocktile_2d": "2D register blocking",
    "vectorized": "vectorized (float4)",
    "warptile": "warp tiling",
}

# Each rung's tile configuration in Boehm's worklog (kernels 1-6, 10) and in this book's CUDA C.
DEFAULT_TILING = {
    "naive": dict(bm=32, bn=32, bk=1, tm=1, tn=1),
    "coalesced": dict(bm=32, bn=32, bk=1, tm=1, tn=1),
    "smem": dict(bm=32, bn=32, bk=32, tm=1, tn=1),
    "blocktile_1d": dict(bm=64, bn=64, bk=8, tm=8, tn=1),
    "blocktile_2d": dict(bm=128, bn=128, bk=8, tm=8, tn=8),
    "vectorized": dict(bm=128, bn=128, bk=8, tm=8, tn=8),
    "warptile": dict(bm=128, bn=128, bk=16, tm=8, tn=4, wm=64, wn=64, wniter=4),
}


@dataclass(frozen=True)
class Tiling:
    """One rung's tile sizes: a block computes ``bm x bn`` of C in steps of ``bk``; a thread
    ``tm x tn`` (times ``wmiter x wniter`` sub-tiles in warp tiling, a warp owning ``wm x wn``).

    Attributes
    ----------
    rung : str
        One of ``RUNGS``.
    bm, bn, bk, tm, tn, wm, wn, wniter, wmiter : int
        Tile edges [elements] and sub-tile counts [-].
    threads : int
        Threads per block [-].
    """

    rung: str
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    threads: int
    wm: int = 0
    wn: int = 0
    wniter: int = 1
    wmiter: int = 1


def _dim(name, v, maximum=MAX_TILE):
    return _check.integer(name, v, minimum=1, maximum=maximum)


def tiling(rung: str, **sizes) -> Tiling:
    """A rung's tiling: its default (``DEFAULT_TILING``) with any of ``bm, bn, bk, tm, tn, wm, wn, wniter`` replaced.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str
        One of ``RUNGS``.
    **sizes : int
        Tile sizes to change [elements]; each a power of two where the kernel needs it.

    Returns
    -------
    Tiling
        The sizes, the threads per block they imply and ``wmiter`` for warp tiling.

    Raises
    ------
    ValueError
        If the rung is unknown, a size is not a positive integer, or the sizes do not tile
        (a thread's tile must divide the block's; warp tiling needs 32 threads per sub-tile).

    Examples
    --------
    >>> t = tiling("blocktile_2d")
    >>> (t.bm, t.tm, t.threads)
    (128, 8, 256)
    >>> tiling("warptile").threads, tiling("warptile").wmiter
    (128, 1)
    """
    r = _check.choice("rung", rung, RUNGS)
    p = dict(DEFAULT_TILING[r])
    for k, v in sizes.items():
        if k not in ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wniter"):
            raise ValueError(f"tiling takes bm, bn, bk, tm, tn, wm, wn, wniter; got {k!r}")
        p[k] = _dim(k, v)
    if r in ("naive", "coalesced", "smem"):
        if p["bm"] != p["bn"] or p["bm"] * p["bn"] > 1024:
            raise ValueError(f"{r} uses square tiles of at most 32 x 32 (one thread per output), got {p['bm']} x {p['bn']}")
        if r == "smem":
            p["bk"] = p["bm"]
        return Tiling(r, p["bm"], p["bn"], p["bk"], 1, 1, p["bm"] * p["bn"])
    bm, bn, bk, tm, tn = p["bm"], p["bn"], p["bk"], p["tm"], p["tn"]
    if r == "blocktile_1d":
        tn = 1
    if bm % tm or bn % tn:
        raise ValueError(f"a thread's tile must divide the block's: bm={bm} % tm={tm}, bn={bn} % tn={tn} must be 0")
    if r in ("vectorized", "warptile") and (tm % 4 or tn % 4 or bk % 4 or bn % 4):
        raise ValueError(f"{r} loads float4: tm, tn, bk and bn must be multiples of 4, got tm={tm}, tn={tn}, bk={bk}, bn={bn}")
    if r != "warptile":
        threads = (bm // tm) * (bn // tn)
        if threads > 1024 or threads < WARP:
            raise ValueError(f"bm/tm x bn/tn = {threads} threads per block; must be 32..1024")
        return Tiling(r, bm, bn, bk, tm, tn, threads)
    wm, wn, wniter = p["wm"], p["wn"], p["wniter"]
    if bm % wm or bn % wn or wn % wniter:
        raise ValueError(f"warp tiles must divide the block tile and wniter the warp tile: bm={bm}, bn={bn}, wm={wm}, wn={wn}, wniter={wniter}")
    per = WARP * tm * tn * wniter
    if (wm * wn) % per:
        raise ValueError(f"wm x wn = {wm * wn} must be a multiple of 32 x tm x tn x wniter = {per}")
    wmiter = wm * wn // per
    if wm % wmiter or (wn // wniter) % tn or ((wn // wniter) // tn) * ((wm // wmiter) // tm) != WARP:
        raise ValueError(f"a warp's 32 threads must cover one {wm // max(wmiter, 1)} x {wn // wniter} sub-tile in {tm} x {tn} pieces")
    threads = (bm // wm) * (bn // wn) * WARP
    if threads > 1024:
        raise ValueError(f"(bm/wm) x (bn/wn) warps = {threads} threads per block; at most 1024")
    return Tiling(r, bm, bn, bk, tm, tn, threads, wm, wn, wniter, wmiter)


def _wavefronts(addresses_bytes, elem_bytes) -> int:
    return mh.shared_wavefronts([int(a) for a in addresses_bytes], elem_bytes)


def _lines(addresses_bytes) -> int:
    return len({int(a) // LINE_BYTES for a in addresses_bytes})


def _global_passes(addresses_bytes) -> int:
    """L1 passes of one warp's 4-byte global load: the larger of the data stage (the 32 banks of 4 B,
    counted as for shared memory) and the tag stage (``TAGS_PER_CLOCK`` distinct lines per pass)."""
    return max(_wavefronts(addresses_bytes, 4), -(-_lines(addresses_bytes) // TAGS_PER_CLOCK))


@dataclass(frozen=True)
class RungCost:
    """What one warp does in one step of the K loop (one ``k``), from the tiling alone.

    Attributes
    ----------
    tiling : Tiling
        The tile sizes.
    fma_per_thread : int
        Multiply-adds per thread per k [-].
    instructions_per_warp : float
        Warp instructions issued per k: FFMA, loads from shared memory or global memory, and the
        tile loads into shared memory (loads and stores) amortized over ``bk`` [-].
    wavefronts_per_warp : float
        Passes of the L1/shared-memory pipe per k (bank conflicts; for the global loads of the
        untiled rungs, the larger of the data stage's bank passes and the tag stage's distinct
        lines / 4; 16-byte accesses a quarter-warp at a time) [-]. The bank rule for global loads
        fits an Nsight Compute profile of a naive kernel on an H200 (33 data passes per warp and k
        at K = 4096 and 4064, 5.4 at K = 4092: ``benchmarks/h200/kernels_review_ncu_2026-12-02``,
        the review's own build of the kernel, not yet the book's record);
        the tag rate is NVIDIA's forum answer, not a datasheet. The quarter-warp rule for 16-byte
        loads is an assumption of ``memory_hierarchy.shared_wavefronts`` with no NVIDIA source for
        Hopper; on compute capability 7.x, NVIDIA's forum reports that an LDS.128 whose addresses
        repeat across lane pairs takes 2 passes, not 4 ("Unexpected shared memory bank conflict",
        forums.developer.nvidia.com/t/77228), and the H200 record has no ncu wavefront count to
        settle it.
    smem_bytes_per_block : int
        Static shared memory of one block [B].
    regs_per_thread_estimate : int
        Accumulators + fragments + ``BASE_REGS`` [-] (the compiler's count is in the record).
    global_bytes_per_flop : float
        Bytes requested from L2 per FLOP by the block tiles: ``2 (bm + bn) / (bm bn)`` [B/FLOP]
        (for the untiled rungs, the sectors their loads touch).
    loads : tuple
        ``(what, wavefronts)`` of each warp load instruction of the inner loop.
    """

    tiling: Tiling
    fma_per_thread: int
    instructions_per_warp: float
    wavefronts_per_warp: float
    smem_bytes_per_block: int
    regs_per_thread_estimate: int
    global_bytes_per_flop: float
    loads: tuple = field(default=())

    @property
    def flop_per_warp(self) -> float:
        """FLOP one warp does per k (2 per multiply-add)."""
        return 2.0 * WARP * self.fma_per_thread


def _untiled_addresses(rung: str, k_dim: int) -> list:
    """(what, byte addresses of the 32 lanes) of the naive and coalesced rungs' two global loads in one k step,
    warp 0: A[row, k] and B[k, col], lane -> (row, col) as in the kernels."""
    lanes = range(WARP)
    rows = [ln if rung == "naive" else 0 for ln in lanes]
    cols = [0 if rung == "naive" else ln for ln in lanes]
    return [("A (global)", [FP32_BYTES * (row * k_dim) for row in rows]), ("B (global)", [FP32_BYTES * col for col in cols])]


def untiled_load_passes(rung: str = "naive", k_dim: int = 4096) -> tuple:
    """The L1 stages of each global load of the naive or coalesced rung, one warp and one step of k.

    For each load: the data stage's passes (the 32 banks of 4 B, as for shared memory), the distinct
    128-B lines, the tag stage's passes (``ceil(lines / TAGS_PER_CLOCK)``) and the larger of the two,
    which is what :func:`rung_cost` counts. Summed over the loads, the first two set beside Nsight
    Compute's data-stage and tag-stage wavefronts (``benchmarks/h200/kernels_ncu.sh``).

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str, optional
        ``"naive"`` or ``"coalesced"``.
    k_dim : int, optional
        The K dimension [elements], >= 1 (the naive rung's row stride).

    Returns
    -------
    tuple of dict
        Per load: ``load`` (its name), ``data_passes`` [-], ``lines`` [-], ``tag_passes`` [-], ``passes`` [-].

    Raises
    ------
    ValueError
        If the rung is not an untiled one or ``k_dim`` is out of range.

    Examples
    --------
    At K = 4092 the naive rung's 32 lanes read A from 8 banks (4 words each) in 32 lines:

    >>> [(d["data_passes"], d["lines"], d["tag_passes"], d["passes"]) for d in untiled_load_passes("naive", 4092)]
    [(4, 32, 8, 8), (1, 1, 1, 1)]
    """
    r = _check.choice("rung", rung, ("naive", "coalesced"))
    kd = _check.integer("k_dim", k_dim, minimum=1, maximum=MAX_DIM)
    out = []
    for what, addr in _untiled_addresses(r, max(kd, WARP)):
        data, lines = _wavefronts(addr, 4), _lines(addr)
        tag = -(-lines // TAGS_PER_CLOCK)
        out.append(dict(load=what, data_passes=data, lines=lines, tag_passes=tag, passes=_global_passes(addr)))
    return tuple(out)


def _inner_loads(t: Tiling, k_dim: int) -> list:
    """(what, wavefronts) of each warp load instruction in one k step, for warp 0 (the pattern repeats)."""
    lanes = range(WARP)
    r = t.rung
    if r in ("naive", "coalesced"):
        return [(what, _global_passes(addr)) for what, addr in _untiled_addresses(r, k_dim)]
    if r == "smem":
        tr = [ln // t.bn for ln in lanes]
        tc = [ln % t.bn for ln in lanes]
        return [("As[tr][k]", _wavefronts([FP32_BYTES * (x * t.bk) for x in tr], 4)),
                ("Bs[k][tc]", _wavefronts([FP32_BYTES * c for c in tc], 4))]
    if r == "blocktile_1d":
        tcol = [ln % t.bn for ln in lanes]
        trow = [ln // t.bn for ln in lanes]
        out = [("Bs[k][tcol]", _wavefronts([FP32_BYTES * c for c in tcol], 4))]
        out += [(f"As[trow*TM+{m}][k]", _wavefronts([FP32_BYTES * ((x * t.tm + m) * t.bk) for x in trow], 4)) for m in range(t.tm)]
        return out
    if r == "blocktile_2d":
        per_row = t.bn // t.tn
        tcol = [ln % per_row for ln in lanes]
        trow = [ln // per_row for ln in lanes]
        out = [(f"As[trow*TM+{m}][k]", _wavefronts([FP32_BYTES * ((x * t.tm + m) * t.bk) for x in trow], 4)) for m in range(t.tm)]
        out += [(f"Bs[k][tcol*TN+{n}]", _wavefronts([FP32_BYTES * (c * t.tn + n) for c in tcol], 4)) for n in range(t.tn)]
        return out
    if r == "vectorized":
        per_row = t.bn // t.tn
        tcol = [ln % per_row for ln in lanes]
        trow = [ln // per_row for ln in lanes]
        out = [(f"As[k][trow*TM+{m}:+4]", _wavefronts([FP32_BYTES * (x * t.tm + m) for x in trow], 16)) for m in range(0, t.tm, 4)]
        out += [(f"Bs[k][tcol*TN+{n}:+4]", _wavefronts([FP32_BYTES * (c * t.tn + n) for c in tcol], 16)) for n in range(0, t.tn, 4)]
        return out
    # warptile: warp 0, lane -> (trow, tcol) within a sub-tile
    wsubm, wsubn = t.wm // t.wmiter, t.wn // t.wniter
    per_row = wsubn // t.tn
    tcol = [ln % per_row for ln in lanes]
    trow = [ln // per_row for ln in lanes]
    out = []
    for wm in range(t.wmiter):
        out += [(f"As[k][{wm}*WSUBM+trow*TM+{m}:+4]", _wavefronts([FP32_BYTES * (wm * wsubm + x * t.tm + m) for x in trow], 16))
                for m in range(0, t.tm, 4)]
    for wn in range(t.wniter):
        out += [(f"Bs[k][{wn}*WSUBN+tcol*TN+{n}:+4]", _wavefronts([FP32_BYTES * (wn * wsubn + c * t.tn + n) for c in tcol], 16))
                for n in range(0, t.tn, 4)]
    return out


def _a_store_passes(t: Tiling) -> int:
    """Shared-memory passes of one scalar store of A's tile in the vector rungs (``load_vec``/``stash``), warp 0."""
    per_row = t.bk // 4
    lanes = [i if i < t.bm * t.bk // 4 else 0 for i in range(WARP)]
    return _wavefronts([FP32_BYTES * ((i % per_row) * 4 * t.bm + i // per_row) for i in lanes], 4)


def rung_cost(rung: str, k_dim: int = 4096, **sizes) -> RungCost:
    """One warp's work per step of the K loop for a rung of the ladder, counted from its tiling.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str
        One of ``RUNGS``.
    k_dim : int, optional
        The K dimension [elements], >= 1 (the naive rung's row stride).
    **sizes : int
        Tile sizes replacing the rung's defaults (see :func:`tiling`) [elements].

    Returns
    -------
    RungCost
        Multiply-adds, instructions and L1/shared-memory wavefronts per warp per k; shared
        memory and registers per block and thread; bytes from L2 per FLOP.

    Raises
    ------
    ValueError
        If the rung or a size is invalid.

    Examples
    --------
    The naive kernel's lanes read A at byte addresses 4 K apart. At K = 4096 (a multiple of 32)
    all 32 words sit in one bank: 32 passes, plus 1 for B's broadcast, for 32 multiply-adds. At
    K = 4092 they spread over 8 banks (4 data passes), and the tag stage's 32 lines / 4 = 8 bind:
    8 + 1 = 9.

    >>> c = rung_cost("naive")
    >>> c.fma_per_thread, c.wavefronts_per_warp
    (1, 33.0)
    >>> rung_cost("naive", 4092).wavefronts_per_warp
    9.0
    >>> rung_cost("coalesced").wavefronts_per_warp
    2.0
    """
    t = tiling(rung, **sizes)
    kd = _check.integer("k_dim", k_dim, minimum=1, maximum=MAX_DIM)
    return _rung_cost(t, max(kd, WARP) if t.rung in ("naive", "coalesced") else WARP)


@functools.lru_cache(maxsize=1024)
def _rung_cost(t: Tiling, kd: int) -> RungCost:
    """:func:`rung_cost` of a checked tiling (cached: calculators ask for the same tiling many times)."""
    loads = _inner_loads(t, kd)
    fma = t.tm * t.tn * t.wmiter * t.wniter
    inner_instr = len(loads)
    inner_wave = sum(w for _, w in loads)
    if t.rung in ("naive", "coalesced"):
        tile_instr = tile_wave = 0.0
        smem = 0
        # sectors (32 B) the two loads touch per multiply-add of the warp
        sectors = (WARP if t.rung == "naive" else 1) + (1 if t.rung == "naive" else 4)
        global_bpf = sectors * mh.SECTOR_BYTES / (2.0 * WARP)
    else:
        vec = 4 if t.rung in ("vectorized", "warptile") else 1
        elems = (t.bm + t.bn) * t.bk  # loaded per block per bk step
        per_thread_step = elems / t.threads
        ldg = per_thread_step / vec
        # A is transposed into shared memory by 4 scalar stores per float4 in the vector rungs
        sts = (t.bm * t.bk / t.threads) * (1 if vec == 4 else 1) + (t.bn * t.bk / t.threads) / vec
        tile_instr = (ldg + sts) / t.bk
        # A's scalar stores into shared memory (transposed in the vector rungs: lane i writes
        # As[(c + j) * bm + i / (bk / 4)], c = 4 (i % (bk / 4))) conflict when lanes share a row:
        # 2-way at bk = 8, 4-way at bk = 16 for bm a multiple of 32
        a_sts_passes = _a_store_passes(t) if vec == 4 else 1
        a_sts = t.bm * t.bk / t.threads
        tile_wave = (ldg * vec + sts * 1 + a_sts * (a_sts_passes - 1)
                     + (t.bn * t.bk / t.threads / vec) * (vec - 1)) / t.bk
        smem = (t.bm + t.bn) * t.bk * FP32_BYTES
        global_bpf = 2.0 * (t.bm + t.bn) / (t.bm * t.bn)
    regs = fma + t.tm * t.wmiter + t.tn * t.wniter + BASE_REGS
    return RungCost(t, fma, float(fma + inner_instr + tile_instr), float(inner_wave + tile_wave), int(smem),
                    min(int(regs), 255), global_bpf, tuple(loads))


@dataclass(frozen=True)
class LadderPrediction:
    """A rung's predicted rate on a GPU and what limits it.

    Attributes
    ----------
    rung : str
        The rung.
    flop : float
        2 m n k [FLOP].
    ceilings_flop_per_s : dict
        ``fp32`` (lanes), ``issue`` (4 warp instructions per clock per SM), ``l1_smem`` (one
        wavefront per clock per SM) and ``hbm`` (A, B read and C written once) [FLOP/s].
    limiter : str
        The tightest ceiling.
    tail_efficiency : float
        The share of the waves' block slots the grid fills [-] (``simt.waves``: grid / (waves x
        occupancy x SMs)), the tail effect.
    predicted_flop_per_s : float
        ``min(ceilings) x tail_efficiency`` [FLOP/s].
    predicted_s : float
        ``flop / predicted_flop_per_s`` [s].
    occupancy : ~widgets.models.simt.Occupancy
        Resident blocks and warps per SM from the SIMT chapter's model.
    cost : RungCost
        The per-warp counts behind the ceilings.
    """

    rung: str
    flop: float
    ceilings_flop_per_s: dict
    limiter: str
    tail_efficiency: float
    predicted_flop_per_s: float
    predicted_s: float
    occupancy: simt.Occupancy
    cost: RungCost


def ladder_prediction(rung: str, m: int, n: int, k: int, sms: int, clock_hz: float, hbm_bytes_per_s: float, *,
                      arch: str = "sm_90", regs_per_thread: int | None = None, fp32_lanes_per_sm: int = 128,
                      issue_per_sm_per_clock: int = 4, wavefronts_per_sm_per_clock: float = 1.0, **sizes) -> LadderPrediction:
    """Predicted fp32 GEMM rate of one rung: the tightest of four ceilings, times the waves' fill (tail effect).

    Per SM and clock: ``fp32_lanes_per_sm`` multiply-adds, ``issue_per_sm_per_clock`` warp
    instructions (four schedulers), ``wavefronts_per_sm_per_clock`` passes of the L1/shared-memory
    pipe; HBM moves A and B once and C once. Latency is not modelled.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str
        One of ``RUNGS``.
    m, n, k : int
        GEMM dimensions [elements], >= 1.
    sms : int
        SMs [-], >= 1.
    clock_hz : float
        SM clock [Hz], > 0.
    hbm_bytes_per_s : float
        Device-memory bandwidth [B/s], > 0.
    arch : str, optional
        Compute capability for the occupancy (``widgets.hardware.ARCHS``).
    regs_per_thread : int, optional
        Registers per thread as compiled [-]; default the estimate of :func:`rung_cost`.
    fp32_lanes_per_sm : int, optional
        FP32 multiply-adds per SM per clock [-] (128 from Ampere GA10x and Hopper on).
    issue_per_sm_per_clock : int, optional
        Warp instructions issued per SM per clock [-].
    wavefronts_per_sm_per_clock : float, optional
        L1/shared-memory passes per SM per clock [-].
    **sizes : int
        Tile sizes replacing the rung's defaults [elements].

    Returns
    -------
    LadderPrediction
        Ceilings, limiter, tail efficiency, predicted rate and time, occupancy.

    Raises
    ------
    ValueError
        If an input is out of range or the tiling cannot launch (0 blocks per SM).

    Examples
    --------
    >>> p = ladder_prediction("naive", 4096, 4096, 4096, 132, 1.98e9, 4.8e12)
    >>> p.limiter, round(p.predicted_flop_per_s / 1e9)
    ('l1_smem', 503)
    """
    mm = _check.integer("m", m, minimum=1, maximum=MAX_DIM)
    nn = _check.integer("n", n, minimum=1, maximum=MAX_DIM)
    kk = _check.integer("k", k, minimum=1, maximum=MAX_DIM)
    s = _check.integer("sms", sms, minimum=1, maximum=100_000)
    f = _check.in_range("clock_hz", clock_hz, 1e6, 1e11, "Hz")
    bw = _check.in_range("hbm_bytes_per_s", hbm_bytes_per_s, 1e6, 1e16, "B/s")
    lanes = _check.integer("fp32_lanes_per_sm", fp32_lanes_per_sm, minimum=1, maximum=4096)
    issue = _check.integer("issue_per_sm_per_clock", issue_per_sm_per_clock, minimum=1, maximum=64)
    wave = _check.in_range("wavefronts_per_sm_per_clock", wavefronts_per_sm_per_clock, 0.01, 64)
    cost = rung_cost(rung, kk, **sizes)
    regs = cost.regs_per_thread_estimate if regs_per_thread is None else _check.integer("regs_per_thread", regs_per_thread, minimum=1, maximum=255)
    occ = simt.occupancy(cost.tiling.threads, regs, cost.smem_bytes_per_block, arch)
    if occ.blocks_per_sm == 0:
        raise ValueError(f"{rung} with {cost.tiling.threads} threads, {regs} registers and {cost.smem_bytes_per_block} B of shared memory "
                         f"cannot launch on {arch} (limited by {occ.limiter})")
    flop = 2.0 * mm * nn * kk
    fpw = cost.flop_per_warp
    sm_clk = s * f
    ceilings = {
        "fp32": sm_clk * 2.0 * lanes,
        "issue": sm_clk * issue * fpw / cost.instructions_per_warp,
        "l1_smem": sm_clk * wave * fpw / cost.wavefronts_per_warp,
        "hbm": flop / (FP32_BYTES * (mm * kk + kk * nn + mm * nn) / bw),
    }
    limiter = min(ceilings, key=ceilings.get)
    grid = -(-mm // cost.tiling.bm) * -(-nn // cost.tiling.bn)
    _, tail = simt.waves(grid, occ.blocks_per_sm, s)
    rate = ceilings[limiter] * tail
    return LadderPrediction(cost.tiling.rung, flop, ceilings, limiter, tail, rate, flop / rate, occ, cost)


def fp32_lanes_per_sm(peak_flop_per_s: float, sms: int, clock_hz: float) -> int:
    """FP32 multiply-add lanes per SM implied by a GPU's dense fp32 peak: ``peak / (2 x SMs x clock)``, rounded.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    peak_flop_per_s : float
        Dense fp32 peak [FLOP/s], > 0.
    sms : int
        SMs [-], >= 1.
    clock_hz : float
        The clock the peak assumes [Hz], > 0.

    Returns
    -------
    int
        Lanes [-], >= 1.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> fp32_lanes_per_sm(67e12, 132, 1.98e9), fp32_lanes_per_sm(19.5e12, 108, 1.41e9)  # H200, A100
    (128, 64)
    """
    p = _check.in_range("peak_flop_per_s", peak_flop_per_s, 1e6, 1e18, "FLOP/s")
    s = _check.integer("sms", sms, minimum=1, maximum=100_000)
    f = _check.in_range("clock_hz", clock_hz, 1e6, 1e11, "Hz")
    return max(1, round(p / (2.0 * s * f)))


@dataclass(frozen=True)
class TileSummary:
    """What a tiling asks of an SM and what it buys, level by level.

    Attributes
    ----------
    tiling : Tiling
        The tile sizes.
    smem_bytes_per_block : int
        Shared memory of one block [B].
    regs_per_thread : int
        Registers per thread used for the occupancy [-].
    occupancy : ~widgets.models.simt.Occupancy
        Resident blocks and warps per SM.
    global_flop_per_byte : float
        FLOP per byte loaded from L2/HBM into shared memory by one block tile [FLOP/B].
    smem_flop_per_byte : float
        FLOP per byte read from shared memory into registers by one thread tile [FLOP/B].
    """

    tiling: Tiling
    smem_bytes_per_block: int
    regs_per_thread: int
    occupancy: simt.Occupancy
    global_flop_per_byte: float
    smem_flop_per_byte: float


def tile_summary(rung: str, arch: str = "sm_90", regs_per_thread: int | None = None, **sizes) -> TileSummary:
    """Shared memory and registers of a tiling, the occupancy they allow, and the arithmetic intensity at each level.

    A block tile ``bm x bn`` with steps of ``bk`` loads ``(bm + bn) bk`` floats for ``2 bm bn bk``
    FLOP: ``bm bn / (2 (bm + bn))`` FLOP per byte from L2/HBM. A thread tile ``tm x tn`` reads
    ``tm + tn`` floats from shared memory for ``2 tm tn`` FLOP: ``tm tn / (2 (tm + tn))`` FLOP per byte.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str
        One of ``RUNGS``.
    arch : str, optional
        Compute capability (``widgets.hardware.ARCHS``).
    regs_per_thread : int, optional
        Registers per thread [-]; default the estimate of :func:`rung_cost`.
    **sizes : int
        Tile sizes replacing the rung's defaults [elements].

    Returns
    -------
    TileSummary
        Shared memory, registers, occupancy and the two intensities.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> t = tile_summary("vectorized")
    >>> t.smem_bytes_per_block, round(t.global_flop_per_byte, 1), t.smem_flop_per_byte
    (8192, 32.0, 2.0)
    """
    cost = rung_cost(rung, **sizes)
    t = cost.tiling
    regs = cost.regs_per_thread_estimate if regs_per_thread is None else _check.integer("regs_per_thread", regs_per_thread, minimum=1, maximum=255)
    occ = simt.occupancy(t.threads, regs, cost.smem_bytes_per_block, arch)
    tm, tn = t.tm * t.wmiter, t.tn * t.wniter
    if t.rung in ("naive", "coalesced"):
        gfpb = 1.0 / cost.global_bytes_per_flop
    else:
        gfpb = 2.0 * t.bm * t.bn / (FP32_BYTES * (t.bm + t.bn))
    sfpb = 2.0 * tm * tn / (FP32_BYTES * (tm + tn))
    return TileSummary(t, cost.smem_bytes_per_block, regs, occ, gfpb, sfpb)


CONFIG_ORDER = {
    "naive": (),
    "coalesced": (),
    "smem": (),
    "blocktile_1d": ("bm", "bn", "bk", "tm"),
    "blocktile_2d": ("bm", "bn", "bk", "tm", "tn"),
    "vectorized": ("bm", "bn", "bk", "tm", "tn"),
    "warptile": ("bm", "bn", "bk", "wm", "wn", "wniter", "tm", "tn"),
}
"""The order of each rung's template parameters in the CUDA C (``widgets/experiments/kernels_cuda.py``)."""


def sizes_from_config(rung: str, config) -> dict:
    """A recorded tile configuration (the CUDA C template's integer parameters, in order) as tile sizes.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    rung : str
        One of ``RUNGS``.
    config : sequence of int
        The template parameters [elements] (warp tiling's trailing thread count is ignored).

    Returns
    -------
    dict
        ``bm``, ``bn``... as :func:`tiling` takes them.

    Raises
    ------
    ValueError
        If the rung is unknown or ``config`` is too short.

    Examples
    --------
    >>> sizes_from_config("vectorized", (128, 128, 8, 8, 8))
    {'bm': 128, 'bn': 128, 'bk': 8, 'tm': 8, 'tn': 8}
    """
    r = _check.choice("rung", rung, RUNGS)
    names = CONFIG_ORDER[r]
    values = list(config) if isinstance(config, (list, tuple)) else None
    if values is None or len(values) < len(names):
        raise ValueError(f"config must list {len(names)} integers for {r} ({', '.join(names) or 'none'}), got {config!r}")
    return {k: _dim(k, v) for k, v in zip(names, values)}


def why_not_on(gpu: str) -> str | None:
    """Why :func:`predict_on` cannot describe a catalog GPU (None when it can).

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    gpu : str
        A catalog GPU name (``widgets.hardware.gpu_names()``).

    Returns
    -------
    str or None
        The reason, or None.

    Raises
    ------
    ValueError
        If ``gpu`` is not in the catalog.

    Examples
    --------
    >>> why_not_on("H200-SXM") is None, why_not_on("MI300X")[:23]
    (True, 'MI300X is not a CUDA GP')
    """
    from ..hardware import ARCHS, get_gpu

    g = get_gpu(gpu, param="gpu")
    if g.arch not in ARCHS:
        return f"{g.name} is not a CUDA GPU ({g.arch}): the ladder's occupancy and issue model is NVIDIA's"
    if "fp32" not in g.peak_flop_per_s:
        return f"{g.name} has no fp32 peak in the catalog"
    return None


def predict_on(gpu: str, rung: str, m: int, n: int, k: int, regs_per_thread: int | None = None, **sizes) -> LadderPrediction:
    """:func:`ladder_prediction` on a catalog GPU: its SMs, fp32 clock, HBM bandwidth, arch and fp32 lanes.

    Explained in :ref:`kernels` > The ladder's model.

    Parameters
    ----------
    gpu : str
        A catalog GPU name.
    rung : str
        One of ``RUNGS``.
    m, n, k : int
        GEMM dimensions [elements], >= 1.
    regs_per_thread : int, optional
        Registers per thread as compiled [-].
    **sizes : int
        Tile sizes replacing the rung's defaults [elements].

    Returns
    -------
    LadderPrediction
        As :func:`ladder_prediction`.

    Raises
    ------
    ValueError
        If the GPU is unknown or not described by the model (:func:`why_not_on`), or an input is out of range.

    Examples
    --------
    >>> round(predict_on("H200-SXM", "naive", 4096, 4096, 4096).predicted_flop_per_s / 1e9)
    503
    """
    from ..hardware import get_gpu

    reason = why_not_on(gpu)
    if reason:
        raise ValueError(f"gpu: {reason}")
    g = get_gpu(gpu, param="gpu")
    clock = g.clock_for("fp32")
    lanes = fp32_lanes_per_sm(g.peak("fp32"), g.sms, clock)
    return ladder_prediction(rung, m, n, k, g.sms, clock, g.hbm_bytes_per_s, arch=g.arch, regs_per_thread=regs_per_thread,
                             fp32_lanes_per_sm=lanes, **sizes)


def flop_per_s(m: int, n: int, k: int, seconds: float) -> float:
    """The rate of an m x n x k GEMM that took ``seconds``: 2 m n k / seconds.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    m, n, k : int
        GEMM dimensions [elements], >= 1.
    seconds : float
        Measured time [s], > 0.

    Returns
    -------
    float
        Rate [FLOP/s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> flop_per_s(4096, 4096, 4096, 1e-3) / 1e12
    137.438953472
    """
    mm = _check.integer("m", m, minimum=1, maximum=MAX_DIM)
    nn = _check.integer("n", n, minimum=1, maximum=MAX_DIM)
    kk = _check.integer("k", k, minimum=1, maximum=MAX_DIM)
    t = _check.in_range("seconds", seconds, 1e-12, 1e6, "s")
    return 2.0 * mm * nn * kk / t


# --------------------------------------------------------------------------------------------
# Timing statistics
# --------------------------------------------------------------------------------------------
MAX_REPEATS = 10**7


def t_quantile(confidence: float, dof: int) -> float:
    """Two-sided Student-t critical value t: P(-t <= T <= t) = confidence with ``dof`` degrees of freedom.

    The normal quantile with the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5): at 95 %
    within 0.15 % of the tables from 3 degrees of freedom (0.12 % at 3), at 99 % within 0.1 % from 5
    (0.8 % at 3); exact tabulated values below 3.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    confidence : float
        Two-sided confidence [-], in (0.5, 0.9999].
    dof : int
        Degrees of freedom [-], >= 1.

    Returns
    -------
    float
        The critical value [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(t_quantile(0.95, 9), 3), round(t_quantile(0.95, 10**6), 3)
    (2.262, 1.96)
    """
    c = _check.in_range("confidence", confidence, 0.5000001, 0.9999)
    v = _check.integer("dof", dof, minimum=1, maximum=MAX_REPEATS)
    if v == 1:
        return math.tan(math.pi * c / 2)  # Cauchy: exact
    if v == 2:
        a = 1 - c
        return math.sqrt(2.0 / (a * (2 - a)) - 2.0)  # exact for 2 degrees of freedom
    z = statistics.NormalDist().inv_cdf(0.5 + c / 2)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def mean_ci_half_width(std_s: float, repeats: int, confidence: float = 0.95) -> float:
    """Half-width of the confidence interval of a mean of ``repeats`` independent timings with sample spread ``std_s``.

    ``t(confidence, repeats - 1) x std_s / sqrt(repeats)``. Independence matters: timings
    that drift (clocks ramping, a neighbour's job) make the true interval wider.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    std_s : float
        Sample standard deviation of the timings [s], >= 0.
    repeats : int
        Timed repeats [-], >= 2.
    confidence : float, optional
        Two-sided confidence [-], in (0.5, 0.9999].

    Returns
    -------
    float
        Half-width [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(mean_ci_half_width(1.0, 10), 4)  # t(0.95, 9) / sqrt(10)
    0.7154
    """
    s = _check.in_range("std_s", std_s, 0.0, 1e6, "s")
    n = _check.integer("repeats", repeats, minimum=2, maximum=MAX_REPEATS)
    return t_quantile(confidence, n - 1) * s / math.sqrt(n)


def repeats_needed(std_s: float, mean_s: float, relative_half_width: float, confidence: float = 0.95) -> int:
    """Fewest repeats whose mean has a confidence interval of ± ``relative_half_width`` x ``mean_s``.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    std_s : float
        Sample standard deviation of one timing [s], >= 0.
    mean_s : float
        Mean timing [s], > 0.
    relative_half_width : float
        Target half-width as a fraction of the mean [-], in [1e-6, 1].
    confidence : float, optional
        Two-sided confidence [-], in (0.5, 0.9999].

    Returns
    -------
    int
        Repeats [-], >= 2.

    Raises
    ------
    ValueError
        If an input is out of range or more than ``MAX_REPEATS`` repeats would be needed.

    Examples
    --------
    A 10 % spread and a ±1 % target at 95 %: about (1.96 x 10)^2 = 385 repeats, a few more for t.

    >>> repeats_needed(0.1, 1.0, 0.01)
    387
    """
    s = _check.in_range("std_s", std_s, 0.0, 1e6, "s")
    mu = _check.in_range("mean_s", mean_s, 1e-15, 1e6, "s")
    r = _check.in_range("relative_half_width", relative_half_width, 1e-6, 1.0)
    target = r * mu
    if s == 0:
        return 2
    z = statistics.NormalDist().inv_cdf(0.5 + _check.in_range("confidence", confidence, 0.5000001, 0.9999) / 2)
    n = max(2, math.ceil((z * s / target) ** 2))
    while n <= MAX_REPEATS and mean_ci_half_width(s, n, confidence) > target:
        n = max(n + 1, math.ceil(n * (t_quantile(confidence, n - 1) / z) ** 2)) if n < 50 else n + 1
    if n > MAX_REPEATS:
        raise ValueError(f"relative_half_width={relative_half_width!r} needs more than {MAX_REPEATS} repeats at this spread")
    # step back to the smallest n that meets the target
    while n > 2 and mean_ci_half_width(s, n - 1, confidence) <= target:
        n -= 1
    return n


def median_ci_ranks(repeats: int, confidence: float = 0.95) -> tuple[int, int]:
    """Ranks (1-based, sorted timings) bounding a distribution-free confidence interval of the median.

    The order statistics ``j < k`` with ``P(X_(j) <= median <= X_(k)) >= confidence`` from the
    binomial(n, 1/2) distribution (Conover, Practical Nonparametric Statistics, 3rd ed., 3.2):
    needs no assumption about the timings' distribution.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    repeats : int
        Timed repeats [-], 6..100000 (fewer cannot reach 95 %).
    confidence : float, optional
        Two-sided confidence [-], in (0.5, 0.9999].

    Returns
    -------
    j, k : int
        Lower and upper ranks [-].

    Raises
    ------
    ValueError
        If an input is out of range or ``repeats`` is too small for ``confidence``.

    Examples
    --------
    >>> median_ci_ranks(20)  # Conover's table: the 6th and 15th of 20
    (6, 15)
    """
    n = _check.integer("repeats", repeats, minimum=2, maximum=100_000)
    c = _check.in_range("confidence", confidence, 0.5000001, 0.9999)
    # cumulative binomial(n, 1/2) in log space
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(n + 1)]
    cdf, acc = [], 0.0
    for lg in logs:
        acc += math.exp(lg)
        cdf.append(acc)
    alpha = (1 - c) / 2
    j = 0  # largest j with P(B <= j - 1) <= alpha
    for i in range(1, n + 1):
        if cdf[i - 1] <= alpha:
            j = i
    if j < 1:
        raise ValueError(f"repeats={repeats!r} is too few for a {confidence!r} interval of the median")
    return j, n + 1 - j


def spread_of_means_band(groups: int, confidence: float = 0.95) -> tuple[float, float]:
    """Range of (sample SD of ``groups`` group means) / (their true SD) for independent normal timings.

    The sample variance of ``g`` values is the true variance times chi-square(g - 1) / (g - 1), so
    the ratio of standard deviations lies in ``sqrt(chi2_{a/2} / (g - 1))`` to
    ``sqrt(chi2_{1 - a/2} / (g - 1))`` with probability ``confidence``. The chi-square quantiles
    use the Wilson-Hilferty cube-root approximation (Abramowitz and Stegun 26.4.17), within 0.3 %
    of the tables from 10 degrees of freedom. A ratio outside the band says the repeats were not
    independent (or not normal); one inside it does not prove they were.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    groups : int
        Number of group means [-], >= 3.
    confidence : float, optional
        Two-sided confidence [-], in (0.5, 0.9999].

    Returns
    -------
    lo, hi : float
        Bounds of the ratio [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [round(b, 2) for b in spread_of_means_band(20)]  # chi-square(19) tables: 8.907 and 32.852
    [0.68, 1.31]
    """
    g = _check.integer("groups", groups, minimum=3, maximum=MAX_REPEATS)
    c = _check.in_range("confidence", confidence, 0.5000001, 0.9999)
    v = g - 1
    z = statistics.NormalDist().inv_cdf(0.5 + c / 2)

    def chi2(zq):
        return v * (1 - 2 / (9 * v) + zq * math.sqrt(2 / (9 * v))) ** 3

    return math.sqrt(chi2(-z) / v), math.sqrt(chi2(z) / v)


def host_timing_error(kernel_s: float, overhead_s: float) -> float:
    """Relative error of timing a kernel with a host clock around the launch and a synchronize.

    The host clock sees ``kernel_s + overhead_s`` (launch, synchronize, the clock itself), so the
    error is ``overhead_s / kernel_s``: it matters for short kernels and vanishes for long ones.

    Explained in :ref:`kernels` > Timing a kernel honestly.

    Parameters
    ----------
    kernel_s : float
        The kernel's device time [s], > 0.
    overhead_s : float
        Host-side overhead per timed call [s], >= 0.

    Returns
    -------
    float
        (wall - kernel) / kernel [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> host_timing_error(5e-6, 10e-6), host_timing_error(1e-2, 10e-6)
    (2.0, 0.001)
    """
    k = _check.in_range("kernel_s", kernel_s, 1e-12, 1e6, "s")
    o = _check.in_range("overhead_s", overhead_s, 0.0, 1e6, "s")
    return o / k
