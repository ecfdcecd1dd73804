"""SIMT execution models: occupancy, warp divergence, latency hiding (Little's law), launch
overhead and Amdahl's law.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

The occupancy model reproduces CUDA's own occupancy calculator, ``cudaOccMaxActiveBlocksPerMultiprocessor``
in the CUDA header ``cuda_occupancy.h`` (CUDA 12.x and 13.0), rule for rule, for a kernel that opted in
to the largest dynamic shared memory and asked for the largest shared-memory carve-out, and that uses
one block barrier (``__syncthreads`` only) and no virtual resources: the header's two further limits,
block barriers (compute capability 9.0 and later: 2 per block slot on sm_90 and sm_100, 1 on sm_120,
divided by the kernel's named barriers) and virtual resources (compute capability 10.x to 12.x), cannot
bind such a kernel and are not modelled. Registers are
allocated per warp in units of 256 and per SM sub-partition; shared memory in units of 128 B
(256 B on compute capability 7.x), plus 1 KiB the driver reserves for every block (compute
capability 8.0 and later; none on sm_75). The per-SM limits of each compute capability, sm_75 to
sm_120, are the catalog's (``widgets.hardware.ARCHS``, each figure with its source).

Units are in the names: ``smem_per_block_bytes`` [B], ``latency_s`` [s], ``bytes_per_s`` [B/s].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..hardware import ARCHS as HW_ARCHS
from ..hardware import Arch
from . import _check

WARP_SIZE = 32
KiB = 1024
MAX_THREADS_PER_BLOCK = 1024  # every architecture since compute capability 2.0
LIMITERS = ("warps", "registers", "shared_memory", "blocks")  # cuda_occupancy.h bit order
NO_LIMIT = 2**31 - 1  # a resource that limits nothing (cuda_occupancy.h reports INT_MAX)


# --------------------------------------------------------------------------------------------
# Architectures: the catalog's (widgets.hardware.ARCHS), one record per compute capability
# --------------------------------------------------------------------------------------------
ArchLimits = Arch  # the per-SM limits of one compute capability, with a source for every figure
ARCHS: Mapping[str, ArchLimits] = HW_ARCHS


def _int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer count (``True``/``False`` are not counts)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return _check.integer(name, value, minimum=minimum, maximum=maximum)


def _finite(value: float, names: str) -> float:
    """``value`` if finite; else a ValueError naming the inputs whose size overflowed a float."""
    if not math.isfinite(value):
        raise ValueError(f"{names} too large: the result overflows a float ({value!r})")
    return value


def arch_limits(arch: str = "sm_90") -> ArchLimits:
    """The per-SM limits of one compute capability, as the catalog holds them.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Parameters
    ----------
    arch : str, optional
        A compute capability of the catalog (``widgets.hardware.ARCHS``): ``"sm_75"`` (T4),
        ``"sm_80"`` (A100), ``"sm_86"``, ``"sm_89"`` (L4, RTX 4090), ``"sm_90"`` (H100, H200),
        ``"sm_100"`` (B200) or ``"sm_120"`` (RTX 5090).

    Returns
    -------
    ~widgets.hardware.Arch
        Warp, block, register and shared-memory limits of one SM and their allocation
        granularities, each with its source (``widgets.hardware.Arch``).

    Raises
    ------
    ValueError
        If ``arch`` is not in the catalog.

    Examples
    --------
    >>> arch_limits("sm_90").max_warps_per_sm
    64
    """
    return ARCHS[_check.choice("arch", arch, ARCHS)]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _carveout_bytes(limits: ArchLimits, wanted_bytes: int) -> int | None:
    """The smallest configurable shared-memory size >= ``wanted_bytes`` (None if none is)."""
    for size in limits.smem_carveouts_bytes:
        if size >= wanted_bytes:
            return size
    return None


# --------------------------------------------------------------------------------------------
# Occupancy
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Occupancy:
    """How many blocks of a kernel one SM holds at once, and why no more.

    ``limiter`` is the resource whose limit equals ``blocks_per_sm`` (ties broken in the order
    warps, registers, shared_memory, blocks: the bit order of ``cudaOccLimitingFactor``);
    ``limiters`` lists every resource that binds. A block that cannot launch at all gives
    ``blocks_per_sm == 0`` and the resource that refused it as ``limiter``.

    Attributes
    ----------
    arch : str
        The compute capability, e.g. ``"sm_90"``.
    threads_per_block, regs_per_thread : int
        The launch's inputs [-].
    smem_per_block_bytes : int
        Shared memory per block asked for [B].
    blocks_per_sm, warps_per_sm : int
        Resident blocks and warps per SM [-].
    max_warps_per_sm : int
        Warp slots of the SM [-].
    occupancy : float
        ``warps_per_sm / max_warps_per_sm`` [-], in [0, 1].
    limiter : str
        ``"warps"``, ``"registers"``, ``"shared_memory"`` or ``"blocks"``.
    limiters : tuple of str
        Every resource whose limit equals ``blocks_per_sm``.
    blocks_limit_warps, blocks_limit_registers, blocks_limit_shared_memory, blocks_limit_blocks : int
        Blocks per SM each resource alone allows [-].
    warps_per_block : int
        Warps of one block [-].
    regs_per_warp_allocated, regs_per_block_allocated : int
        Registers allocated, after rounding to the allocation unit [-].
    smem_per_block_allocated_bytes : int
        Shared memory allocated per block, the driver's reservation included [B].
    smem_per_sm_bytes : int
        The shared-memory carve-out the calculation used [B].
    """

    arch: str
    threads_per_block: int
    regs_per_thread: int
    smem_per_block_bytes: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # active warps / max warps, in [0, 1]
    limiter: str
    limiters: tuple
    blocks_limit_warps: int
    blocks_limit_registers: int
    blocks_limit_shared_memory: int
    blocks_limit_blocks: int
    warps_per_block: int
    regs_per_warp_allocated: int
    regs_per_block_allocated: int
    smem_per_block_allocated_bytes: int
    smem_per_sm_bytes: int  # the carve-out the calculation used

    @property
    def threads_per_sm(self) -> int:
        return self.blocks_per_sm * self.threads_per_block


def _regs_limit(lim: ArchLimits, warps_per_block: int, regs_per_thread: int) -> tuple[int, int, int]:
    """Blocks per SM allowed by the register file (cudaOccMaxBlocksPerSMRegsLimit), and the
    registers allocated per warp and per block."""
    per_warp = _round_up(regs_per_thread * WARP_SIZE, lim.reg_alloc_unit)
    per_block = per_warp * warps_per_block
    # The hardware checks the per-block limit as if warps were spread over all sub-partitions.
    assumed = per_warp * _round_up(warps_per_block, lim.sub_partitions)
    if assumed > lim.regs_per_block or per_block > lim.regs_per_block or regs_per_thread > lim.max_regs_per_thread:
        return 0, per_warp, per_block
    # Each sub-partition has its own quarter of the register file and holds whole warps.
    warps_per_sub_partition = (lim.regs_per_sm // lim.sub_partitions) // per_warp
    return (warps_per_sub_partition * lim.sub_partitions) // warps_per_block, per_warp, per_block


def _smem_limit(lim: ArchLimits, smem_per_block_bytes: int, carveout_percent: int) -> tuple[int, int, int]:
    """Blocks per SM allowed by shared memory (cudaOccMaxBlocksPerSMSmemLimit) for a kernel that
    opted in to the largest dynamic shared memory; also the bytes allocated per block and the
    SM's shared-memory size used."""
    allocated = _round_up(smem_per_block_bytes + lim.smem_reserved_per_block_bytes, lim.smem_alloc_unit_bytes)
    # Opt-in limit plus the reservation (cudaOccSMemPerBlock); equivalently smem <= opt-in.
    if smem_per_block_bytes > lim.smem_per_block_optin_bytes:
        return 0, allocated, lim.smem_per_sm_bytes
    preferred = _carveout_bytes(lim, carveout_percent * lim.smem_per_sm_bytes // 100)
    sm_bytes = preferred if preferred >= allocated else _carveout_bytes(lim, allocated)
    if allocated == 0:  # sm_75 reserves nothing: a block without shared memory is not limited by it
        return NO_LIMIT, allocated, sm_bytes
    return sm_bytes // allocated, allocated, sm_bytes


def occupancy(
    threads_per_block: int,
    regs_per_thread: int,
    smem_per_block_bytes: int = 0,
    arch: str = "sm_90",
    *,
    smem_carveout_percent: int = 100,
) -> Occupancy:
    """Resident blocks and warps per SM for a kernel launch, as CUDA's occupancy calculator computes them.

    The calculator is ``cudaOccMaxActiveBlocksPerMultiprocessor`` in ``cuda_occupancy.h``; this
    model reproduces its warp, register, shared-memory and block-slot limits rule for rule, which
    are the whole calculator for a kernel with one block barrier (``__syncthreads`` only) and no
    virtual resources. A kernel using several named barriers (``bar.sync`` with ids) can be limited
    further on compute capability 9.0 and later (the header's block-barrier limit), which this
    model does not compute.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Parameters
    ----------
    threads_per_block : int
        Threads in one block [-], >= 1. More than 1024 cannot launch (0 blocks, limiter ``"warps"``).
    regs_per_thread : int
        Registers per thread as compiled (``ptxas -v``, ``cudaFuncAttributes.numRegs``) [-], >= 1.
        More than 255 cannot launch (0 blocks, limiter ``"registers"``).
    smem_per_block_bytes : int, optional
        Shared memory per block, static plus dynamic [B], >= 0, not counting the 1 KiB the driver
        reserves per block (added here). More than the opt-in limit cannot launch (0 blocks,
        limiter ``"shared_memory"``).
    arch : str, optional
        A compute capability of the catalog (``widgets.hardware.ARCHS``): ``"sm_75"`` (T4),
        ``"sm_80"`` (A100), ``"sm_86"``, ``"sm_89"`` (L4, RTX 4090), ``"sm_90"`` (H100, H200),
        ``"sm_100"`` (B200) or ``"sm_120"`` (RTX 5090).
    smem_carveout_percent : int, optional
        Preferred shared-memory carve-out of the unified L1/shared memory [%], 0..100; 100
        (the default) asks for the most shared memory, like ``cudaSharedmemCarveoutMaxShared``.

    Returns
    -------
    Occupancy
        ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (fraction of the SM's warp slots),
        ``limiter`` and the limit of every resource.

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``arch`` is not in the catalog.

    Examples
    --------
    The CUDA Best Practices Guide's example: 37 registers per thread give 75 % occupancy with
    128-thread blocks but 62.5 % ("63 %") with 320-thread blocks.

    >>> occupancy(128, 37).occupancy, occupancy(320, 37).occupancy
    (0.75, 0.625)
    >>> o = occupancy(256, 32, 48 * 1024)
    >>> o.blocks_per_sm, o.limiter
    (4, 'shared_memory')
    """
    lim = arch_limits(arch)
    t = _int("threads_per_block", threads_per_block, minimum=1)
    r = _int("regs_per_thread", regs_per_thread, minimum=1)
    s = _int("smem_per_block_bytes", smem_per_block_bytes, minimum=0)
    c = _int("smem_carveout_percent", smem_carveout_percent, minimum=0, maximum=100)

    warps_per_block = -(-t // WARP_SIZE)
    by_warps = 0 if t > lim.max_threads_per_block else lim.max_warps_per_sm // warps_per_block
    by_regs, regs_warp, regs_block = _regs_limit(lim, warps_per_block, r)
    by_smem, smem_alloc, smem_sm = _smem_limit(lim, s, c)
    by_blocks = lim.max_blocks_per_sm

    limits = dict(zip(LIMITERS, (by_warps, by_regs, by_smem, by_blocks)))
    blocks = min(limits.values())
    binding = tuple(name for name in LIMITERS if limits[name] == blocks)
    warps = blocks * warps_per_block
    return Occupancy(
        arch=lim.arch,
        threads_per_block=t,
        regs_per_thread=r,
        smem_per_block_bytes=s,
        blocks_per_sm=blocks,
        warps_per_sm=warps,
        max_warps_per_sm=lim.max_warps_per_sm,
        occupancy=warps / lim.max_warps_per_sm,
        limiter=binding[0],
        limiters=binding,
        blocks_limit_warps=by_warps,
        blocks_limit_registers=by_regs,
        blocks_limit_shared_memory=by_smem,
        blocks_limit_blocks=by_blocks,
        warps_per_block=warps_per_block,
        regs_per_warp_allocated=regs_warp,
        regs_per_block_allocated=regs_block,
        smem_per_block_allocated_bytes=smem_alloc,
        smem_per_sm_bytes=smem_sm,
    )


SWEEPABLE = ("threads_per_block", "regs_per_thread", "smem_per_block_bytes")
MAX_SWEEP = 100_000  # values per sweep: a calculator's curve, never an unbounded loop


def occupancy_sweep(parameter: str, values: Sequence[int], *, threads_per_block: int = 256, regs_per_thread: int = 32,
                    smem_per_block_bytes: int = 0, arch: str = "sm_90") -> list:
    """:func:`occupancy` for each value of one input, the others held fixed.

    These are the curves of NVIDIA's occupancy calculator.

    Explained in :ref:`simt` > Calculator: occupancy.

    Parameters
    ----------
    parameter : str
        The input swept: ``"threads_per_block"``, ``"regs_per_thread"`` or ``"smem_per_block_bytes"``.
    values : sequence of int
        Its values [-] (threads or registers) or [B] (shared memory), 1 to 100,000 of them.
    threads_per_block : int, optional
        Threads per block when not swept [-].
    regs_per_thread : int, optional
        Registers per thread when not swept [-].
    smem_per_block_bytes : int, optional
        Shared memory per block when not swept [B].
    arch : str, optional
        A compute capability of the catalog (``widgets.hardware.ARCHS``): ``"sm_75"`` (T4),
        ``"sm_80"`` (A100), ``"sm_86"``, ``"sm_89"`` (L4, RTX 4090), ``"sm_90"`` (H100, H200),
        ``"sm_100"`` (B200) or ``"sm_120"`` (RTX 5090).

    Returns
    -------
    list of Occupancy
        One result per value, in order.

    Raises
    ------
    ValueError
        If ``parameter`` is not sweepable, ``values`` is empty or too long, or any input is out of range.

    Examples
    --------
    >>> [o.blocks_per_sm for o in occupancy_sweep("regs_per_thread", [32, 64, 128])]
    [8, 4, 2]
    """
    p = _check.choice("parameter", parameter, SWEEPABLE)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"values must be a sequence of {p} values, got {values!r}")
    vals = list(values)
    if not 1 <= len(vals) <= MAX_SWEEP:
        raise ValueError(f"values must hold 1 to {MAX_SWEEP:,} {p} values, got {len(vals):,}")
    minimum = 0 if p == "smem_per_block_bytes" else 1
    vals = [_int(f"values[{i}] ({p})", v, minimum=minimum) for i, v in enumerate(vals)]
    base = dict(threads_per_block=threads_per_block, regs_per_thread=regs_per_thread, smem_per_block_bytes=smem_per_block_bytes, arch=arch)
    occupancy(**base)  # the fixed inputs are checked too, the swept one included
    return [occupancy(**{**base, p: v}) for v in vals]


def max_regs_per_thread_for(threads_per_block: int, blocks_per_sm: int, arch: str = "sm_90") -> int:
    """The most registers per thread that still let a number of blocks reside on one SM.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Parameters
    ----------
    threads_per_block : int
        Threads in one block [-], >= 1.
    blocks_per_sm : int
        Blocks that must fit on one SM [-], >= 1.
    arch : str, optional
        A compute capability of the catalog (``widgets.hardware.ARCHS``): ``"sm_75"`` (T4),
        ``"sm_80"`` (A100), ``"sm_86"``, ``"sm_89"`` (L4, RTX 4090), ``"sm_90"`` (H100, H200),
        ``"sm_100"`` (B200) or ``"sm_120"`` (RTX 5090).

    Returns
    -------
    int
        Registers per thread [-]; 0 if no register count lets that many blocks reside.

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``arch`` is not in the catalog.

    Examples
    --------
    >>> max_regs_per_thread_for(256, 8)  # full occupancy on an H100/H200 with 256-thread blocks
    32
    """
    lim = arch_limits(arch)
    _int("threads_per_block", threads_per_block, minimum=1)
    b = _int("blocks_per_sm", blocks_per_sm, minimum=1)
    best = 0
    for r in range(1, lim.max_regs_per_thread + 1):
        if occupancy(threads_per_block, r, 0, arch).blocks_limit_registers >= b:
            best = r
    return best


def smem_per_block_for(blocks_per_sm: int, arch: str = "sm_90") -> int:
    """The most shared memory per block that still lets a number of blocks share one SM.

    Computed at the largest carve-out; this is the way to *lower* occupancy on purpose.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Parameters
    ----------
    blocks_per_sm : int
        Blocks that must fit on one SM [-], 1 to the architecture's block limit.
    arch : str, optional
        A compute capability of the catalog (``widgets.hardware.ARCHS``): ``"sm_75"`` (T4),
        ``"sm_80"`` (A100), ``"sm_86"``, ``"sm_89"`` (L4, RTX 4090), ``"sm_90"`` (H100, H200),
        ``"sm_100"`` (B200) or ``"sm_120"`` (RTX 5090).

    Returns
    -------
    int
        Shared memory per block, static plus dynamic [B].

    Raises
    ------
    ValueError
        If ``blocks_per_sm`` is out of range or ``arch`` is not in the catalog.

    Examples
    --------
    >>> s = smem_per_block_for(4)
    >>> s, occupancy(128, 32, s).blocks_per_sm, occupancy(128, 32, s + 1).blocks_per_sm
    (57344, 4, 3)
    """
    lim = arch_limits(arch)
    b = _int("blocks_per_sm", blocks_per_sm, minimum=1, maximum=lim.max_blocks_per_sm)
    allocated = (lim.smem_per_sm_bytes // b) // lim.smem_alloc_unit_bytes * lim.smem_alloc_unit_bytes
    return min(allocated - lim.smem_reserved_per_block_bytes, lim.smem_per_block_optin_bytes)


# --------------------------------------------------------------------------------------------
# Divergence
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Divergence:
    """One warp running a branch whose paths its lanes split across.

    Times are in the unit of ``cost_per_path`` (cycles, instructions or seconds).

    Attributes
    ----------
    lanes_per_path : tuple of int
        Lanes on each path [-].
    cost_per_path : tuple of float
        Time of each path [cycles, instructions or s].
    paths_taken : int
        Paths with at least one lane [-].
    warp_time : float
        Serialized time: every taken path runs, one after another [unit of the costs].
    ideal_time : float
        The slowest path: the time if the lanes ran independently [unit of the costs].
    slowdown : float
        ``warp_time / ideal_time`` [-].
    simt_efficiency : float
        Useful lane-time over ``32 x warp_time``: average active lanes / 32 [-].
    """

    lanes_per_path: tuple
    cost_per_path: tuple
    paths_taken: int  # paths with at least one lane
    warp_time: float  # serialized: every taken path runs, one after another
    ideal_time: float  # if the lanes could run their paths independently: the slowest path
    slowdown: float  # warp_time / ideal_time
    simt_efficiency: float  # useful lane-time / (32 x warp_time): average active lanes / 32


def _sequence(name: str, value, check) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a sequence of numbers, got {value!r}")
    items = tuple(value)
    if not items:
        raise ValueError(f"{name} must hold at least one path, got {value!r}")
    return tuple(check(f"{name}[{i}]", v) for i, v in enumerate(items))


def warp_divergence(lanes_per_path: Sequence[int], cost_per_path: Sequence[float]) -> Divergence:
    """Cost of a divergent branch in one warp (SIMT: a warp issues one path at a time).

    Explained in :ref:`simt` > SIMT and branch divergence.

    Parameters
    ----------
    lanes_per_path : sequence of int
        Lanes of the warp on each path [-], each >= 0, summing to 1..32 (fewer = inactive lanes).
    cost_per_path : sequence of float
        Time each path takes when a warp runs it, each > 0, in any unit [cycles, instructions or s].

    Returns
    -------
    Divergence
        Paths taken, the warp's serialized time and the ideal time (in the unit of
        ``cost_per_path``), the slowdown and the SIMT efficiency.

    Raises
    ------
    ValueError
        If the sequences differ in length, a value is out of range or more than 32 lanes are given.

    Examples
    --------
    Half the lanes on each of two equally long paths: the warp runs both, so it takes twice as
    long and every lane idles half the time.

    >>> d = warp_divergence([16, 16], [100, 100])
    >>> d.warp_time, d.slowdown, d.simt_efficiency
    (200.0, 2.0, 0.5)
    """
    lanes = _sequence("lanes_per_path", lanes_per_path, lambda n, v: _int(n, v, minimum=0, maximum=WARP_SIZE))
    costs = _sequence("cost_per_path", cost_per_path, _check.positive)
    if len(lanes) != len(costs):
        raise ValueError(f"lanes_per_path and cost_per_path must have the same length, got {len(lanes)} and {len(costs)}")
    if sum(lanes) > WARP_SIZE:
        raise ValueError(f"lanes_per_path must sum to at most {WARP_SIZE} lanes, got {sum(lanes)}")
    if sum(lanes) == 0:
        raise ValueError(f"lanes_per_path must put at least one lane on a path, got {lanes_per_path!r}")
    taken = [(n, c) for n, c in zip(lanes, costs) if n > 0]
    warp_time = float(sum(c for _, c in taken))
    ideal = float(max(c for _, c in taken))
    useful = float(sum(n * c for n, c in taken))
    return Divergence(lanes, costs, len(taken), warp_time, ideal, warp_time / ideal, useful / (WARP_SIZE * warp_time))


def lanes_round_robin(n_paths: int) -> tuple:
    """Lanes per path when lane ``i`` of a warp takes path ``i % n_paths``.

    Explained in :ref:`simt` > SIMT and branch divergence.

    Parameters
    ----------
    n_paths : int
        Paths [-], 1 to 32.

    Returns
    -------
    tuple of int
        Lanes on each path [-], summing to 32.

    Raises
    ------
    ValueError
        If ``n_paths`` is not an integer in 1..32.

    Examples
    --------
    >>> lanes_round_robin(3)
    (11, 11, 10)
    """
    n = _int("n_paths", n_paths, minimum=1, maximum=WARP_SIZE)
    return tuple(len(range(p, WARP_SIZE, n)) for p in range(n))


def random_branch_time(p_taken: float, cost_taken: float, cost_not_taken: float, lanes: int = WARP_SIZE) -> float:
    """Expected time of an ``if/else`` whose condition is true in each lane independently.

    Each side runs unless no lane needs it:
    ``cost_taken x (1 - (1-p)^lanes) + cost_not_taken x (1 - p^lanes)``.

    Explained in :ref:`simt` > SIMT and branch divergence.

    Parameters
    ----------
    p_taken : float
        Probability that the condition is true in one lane [-], 0..1.
    cost_taken : float
        Time of the ``if`` side, > 0, in any unit [cycles, instructions or s].
    cost_not_taken : float
        Time of the ``else`` side, > 0, in the same unit [cycles, instructions or s].
    lanes : int, optional
        Active lanes of the warp [-], 1..32.

    Returns
    -------
    float
        Expected time of the branch, in the unit of the costs [cycles, instructions or s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(random_branch_time(0.5, 10, 10), 6)  # both sides almost always run
    20.0
    >>> random_branch_time(0.0, 10, 10)
    10.0
    """
    p = _check.fraction("p_taken", p_taken)
    a = _check.positive("cost_taken", cost_taken)
    b = _check.positive("cost_not_taken", cost_not_taken)
    n = _int("lanes", lanes, minimum=1, maximum=WARP_SIZE)
    return _check.finite_result(
        "random_branch_time",
        a * (1 - (1 - p) ** n) + b * (1 - p**n),
        p_taken=p_taken,
        cost_taken=cost_taken,
        cost_not_taken=cost_not_taken,
    )


MAX_PATHS = 1 << 20  # a bound on path counts (a warp has 32 lanes; kernels loop over far fewer)


def divergent_kernel_time_s(paths_taken: int, path_s: float, fixed_s: float = 0.0) -> float:
    """Time of a kernel whose warps each issue several equally long paths one after another.

    ``fixed_s + paths_taken x path_s``: the fixed part does not depend on the paths (the kernel's
    set-up and stores, and the host's launch preparation too when it falls inside the timing
    window). Divergence multiplies only the per-path work: a kernel timed as ``t1`` with one path
    is ``fixed_s + path_s``; with ``n`` paths it takes ``n x t1`` only when ``fixed_s`` is 0.

    Explained in :ref:`simt` > 2. Divergence.

    Parameters
    ----------
    paths_taken : int
        Distinct paths each warp issues [-], 1..2**20.
    path_s : float
        Time the whole kernel spends on one path [s], >= 0.
    fixed_s : float, optional
        Time that does not grow with the paths [s], >= 0.

    Returns
    -------
    float
        Kernel time [s].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> round(divergent_kernel_time_s(32, 2e-4, 1e-4), 9)  # 0.1 ms fixed + 32 x 0.2 ms
    0.0065
    >>> round(divergent_kernel_time_s(32, 2e-4, 1e-4) / divergent_kernel_time_s(1, 2e-4, 1e-4), 3)  # not 32x
    21.667
    """
    n = _int("paths_taken", paths_taken, minimum=1, maximum=MAX_PATHS)
    q = _check.non_negative("path_s", path_s)
    f = _check.non_negative("fixed_s", fixed_s)
    return _finite(f + n * q, "fixed_s + paths_taken x path_s is")


def issue_slots_per_iteration(per_iteration_s: float, clock_hz: float, sms: int, warps: int, schedulers_per_sm: int = 4) -> float:
    """Issue slots one warp spends per loop iteration, from a measured time.

    ``warps`` warps, spread over ``sms`` SMs of ``schedulers_per_sm`` schedulers (each issuing one
    warp-instruction per clock), take ``per_iteration_s`` per iteration all together:
    ``per_iteration_s x clock x schedulers x sms / warps``. For an issue-bound loop this is its
    instruction count per iteration; more means the schedulers also waited (latency, memory).

    Explained in :ref:`simt` > 2. Divergence.

    Parameters
    ----------
    per_iteration_s : float
        Time per loop iteration of the whole grid [s], >= 0.
    clock_hz : float
        SM clock [Hz], > 0.
    sms : int
        SMs [-], >= 1.
    warps : int
        Warps of the grid [-], >= 1.
    schedulers_per_sm : int, optional
        Warp schedulers per SM [-], 1..64.

    Returns
    -------
    float
        Issue slots per warp per iteration [-].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> issue_slots_per_iteration(1e-9 * 16896 / (4 * 132), 1e9, 132, 16896)  # 1 instruction per iteration
    1.0
    """
    t = _check.non_negative("per_iteration_s", per_iteration_s)
    c = _check.positive("clock_hz", clock_hz)
    n = _int("sms", sms, minimum=1, maximum=1 << 20)
    w = _int("warps", warps, minimum=1)
    k = _int("schedulers_per_sm", schedulers_per_sm, minimum=1, maximum=64)
    return _finite(t * c * k * n / w, "per_iteration_s x clock_hz is")


def issue_time_s(instructions_per_iteration: float, iterations: float, sms: int, warps: int, clock_hz: float,
                 schedulers_per_sm: int = 4) -> float:
    """The time an issue-bound loop takes.

    ``warps`` warps spread over ``sms`` SMs of ``schedulers_per_sm`` schedulers, each scheduler
    issuing one warp-instruction per clock, each warp running ``iterations`` iterations of
    ``instructions_per_iteration`` instructions:
    ``instructions x iterations x warps / (sms x schedulers x clock)``. The inverse of
    :func:`issue_slots_per_iteration`; it assumes the warps are spread evenly (whole waves) and
    that no pipe takes more than one clock per warp-instruction: true of FP32 on GPUs with 32 FP32
    lanes per sub-partition (sm_86 and later), not on sm_75 and sm_80, where an FFMA holds the 16
    lanes for two clocks.

    Explained in :ref:`simt` > 2. Divergence.

    Parameters
    ----------
    instructions_per_iteration : float
        Warp-instructions per iteration [-], >= 0.
    iterations : float
        Iterations each warp runs [-], >= 0.
    sms : int
        SMs [-], >= 1.
    warps : int
        Warps of the grid [-], >= 1.
    clock_hz : float
        SM clock [Hz], > 0.
    schedulers_per_sm : int, optional
        Warp schedulers per SM [-], 1..64.

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> issue_time_s(10, 1, 132, 16896, 1e9)  # 32 warps per scheduler x 10 instructions at 1 GHz
    3.2e-07
    """
    ins = _check.non_negative("instructions_per_iteration", instructions_per_iteration)
    it = _check.non_negative("iterations", iterations)
    n = _int("sms", sms, minimum=1, maximum=1 << 20)
    w = _int("warps", warps, minimum=1)
    c = _check.positive("clock_hz", clock_hz)
    k = _int("schedulers_per_sm", schedulers_per_sm, minimum=1, maximum=64)
    return _finite(ins * it * w / (n * k * c), "instructions_per_iteration x iterations / clock_hz is")


def fp32_issue_time_s(flop: float, sms: int, clock_hz: float, fp32_lanes_per_sm: int = 128) -> float:
    """The shortest time some FP32 fused multiply-adds can take.

    Every FP32 lane of every SM completes one FMA (2 FLOP) each clock:
    ``flop / (2 x sms x lanes x clock)``. A kernel slower than this is bound by something other
    than FMA issue (other instructions, latency, memory, launch).

    Explained in :ref:`simt` > 2. Divergence.

    Parameters
    ----------
    flop : float
        FP32 work [FLOP], >= 0.
    sms : int
        SMs [-], >= 1.
    clock_hz : float
        SM clock [Hz], > 0.
    fp32_lanes_per_sm : int, optional
        FP32 lanes per SM [-]: 128 on sm_86, sm_89, sm_90, sm_100 and sm_120; 64 on sm_75 and sm_80
        (A100: 108 x 64 x 2 x 1.41 GHz = 19.5 TFLOP/s), where an FFMA warp-instruction holds its
        sub-partition's 16 FP32 lanes for two clocks.

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> round(fp32_issue_time_s(66.9e12, 132, 1.98e9) * 1e3, 1)  # 1 s of the H200's FP32 peak [ms]
    999.9
    """
    w = _check.non_negative("flop", flop)
    n = _int("sms", sms, minimum=1, maximum=1 << 20)
    c = _check.positive("clock_hz", clock_hz)
    lanes = _int("fp32_lanes_per_sm", fp32_lanes_per_sm, minimum=1, maximum=1 << 16)
    return _finite(w / (2.0 * n * lanes * c), "flop / (sms x fp32_lanes_per_sm x clock_hz) is")


# --------------------------------------------------------------------------------------------
# Latency hiding: Little's law
# --------------------------------------------------------------------------------------------
def littles_law_in_flight(latency_s: float, throughput_per_s: float) -> float:
    """Little's law: the work that must be in flight to sustain a throughput across a latency.

    ``latency x throughput``, in the unit of the throughput's numerator (items, bytes or
    instructions).

    Explained in :ref:`simt` > Latency hiding: Little's law.

    Parameters
    ----------
    latency_s : float
        Latency of one item [s], > 0.
    throughput_per_s : float
        Throughput to sustain [1/s] (items, bytes or instructions per second), > 0.

    Returns
    -------
    float
        Items in flight [-] (bytes when the throughput is in B/s).

    Raises
    ------
    ValueError
        If an input is not positive or the result overflows.

    Examples
    --------
    >>> littles_law_in_flight(500e-9, 4.8e12)  # bytes in flight to stream HBM at 4.8 TB/s
    2400000.0
    """
    lat = _check.positive("latency_s", latency_s)
    thr = _check.positive("throughput_per_s", throughput_per_s)
    return _finite(lat * thr, "latency_s x throughput_per_s is")


@dataclass(frozen=True)
class LatencyHiding:
    """What it takes to keep memory busy across its latency.

    Attributes
    ----------
    bytes_in_flight : float
        Bytes that must be in flight, whole device [B].
    bytes_in_flight_per_sm : float
        The same per SM [B].
    bytes_per_warp_in_flight : int
        One warp's outstanding loads [B].
    warps_needed_per_sm : int
        Warps per SM needed at ``loads_in_flight_per_thread`` [-].
    occupancy_needed : float
        ``warps_needed_per_sm`` over the SM's warp slots [-] (above 1: impossible).
    loads_per_thread_needed : int
        Independent loads in flight per thread needed at the SM's maximum warps [-].
    achievable_fraction : float
        Fraction of the bandwidth reachable at the SM's maximum warps and the given loads [-].
    """

    bytes_in_flight: float  # whole device [B]
    bytes_in_flight_per_sm: float  # [B]
    bytes_per_warp_in_flight: int  # one warp's outstanding loads [B]
    warps_needed_per_sm: int  # at loads_in_flight_per_thread
    occupancy_needed: float  # warps_needed / max warps (may exceed 1: impossible)
    loads_per_thread_needed: int  # in flight per thread, at the SM's max warps
    achievable_fraction: float  # of the bandwidth, at the SM's max warps and the given loads


def latency_hiding(
    latency_s: float,
    bytes_per_s: float,
    sms: int,
    *,
    bytes_per_load: int = 4,
    loads_in_flight_per_thread: int = 1,
    max_warps_per_sm: int = 64,
) -> LatencyHiding:
    """Warps, or independent loads per thread, an SM needs in flight to sustain a bandwidth.

    Every load takes ``latency_s``; by Little's law ``latency_s x bytes_per_s`` bytes must be in
    flight, shared by the SMs.

    Explained in :ref:`simt` > Latency hiding: Little's law.

    Parameters
    ----------
    latency_s : float
        Memory latency [s], > 0.
    bytes_per_s : float
        Bandwidth to sustain, whole device [B/s], > 0.
    sms : int
        SMs sharing that bandwidth [-], >= 1.
    bytes_per_load : int, optional
        Bytes one thread's load instruction moves [B]: 4 (float), 8, or 16 (float4).
    loads_in_flight_per_thread : int, optional
        Independent loads each thread has outstanding at once [-], >= 1.
    max_warps_per_sm : int, optional
        Warp slots per SM [-] (64 on sm_80/sm_90, 48 on sm_86/sm_89).

    Returns
    -------
    LatencyHiding
        Bytes in flight (device and per SM), warps needed per SM, the occupancy that needs, loads
        per thread needed at full occupancy, and the fraction of the bandwidth reachable.

    Raises
    ------
    ValueError
        If an input is out of range or the product overflows.

    Examples
    --------
    >>> h = latency_hiding(500e-9, 4.8e12, 132)
    >>> h.warps_needed_per_sm, h.loads_per_thread_needed
    (143, 3)
    """
    lat = _check.positive("latency_s", latency_s)
    bw = _check.positive("bytes_per_s", bytes_per_s)
    in_flight = _finite(lat * bw, "latency_s x bytes_per_s is")
    n = _int("sms", sms, minimum=1)
    e = _int("bytes_per_load", bytes_per_load, minimum=1)
    u = _int("loads_in_flight_per_thread", loads_in_flight_per_thread, minimum=1)
    w = _int("max_warps_per_sm", max_warps_per_sm, minimum=1)
    per_sm = in_flight / n
    per_warp_load = WARP_SIZE * e
    per_warp = per_warp_load * u
    warps = math.ceil(per_sm / per_warp)
    loads = math.ceil(per_sm / (w * per_warp_load))
    return LatencyHiding(
        bytes_in_flight=in_flight,
        bytes_in_flight_per_sm=per_sm,
        bytes_per_warp_in_flight=per_warp,
        warps_needed_per_sm=warps,
        occupancy_needed=warps / w,
        loads_per_thread_needed=loads,
        achievable_fraction=1.0 if per_sm == 0 else min(1.0, w * per_warp / per_sm),
    )


def littles_law_bytes_per_s(warps_per_sm, sms: int, bytes_per_warp_in_flight: float, latency_s: float, peak_bytes_per_s: float):
    """Bandwidth a memory-bound kernel reaches with a number of resident warps.

    Each warp keeps ``bytes_per_warp_in_flight`` outstanding:
    ``min(peak, warps x SMs x bytes / latency)``.

    Explained in :ref:`simt` > 3. Bandwidth against occupancy.

    Parameters
    ----------
    warps_per_sm : float or array_like of float
        Resident warps per SM [-], each >= 0: a number or an array.
    sms : int
        SMs [-], >= 1.
    bytes_per_warp_in_flight : float
        Bytes one warp has outstanding [B], > 0.
    latency_s : float
        Memory latency [s], > 0.
    peak_bytes_per_s : float
        The memory's peak bandwidth [B/s], > 0.

    Returns
    -------
    float or numpy.ndarray
        Bandwidth [B/s]: a float for a scalar ``warps_per_sm``, an array otherwise.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> littles_law_bytes_per_s(8, 132, 128, 500e-9, 4.8e12) / 1e12  # 8 warps of float loads
    0.270336
    """
    n = _int("sms", sms, minimum=1)
    b = _check.positive("bytes_per_warp_in_flight", bytes_per_warp_in_flight)
    lat = _check.positive("latency_s", latency_s)
    peak = _check.positive("peak_bytes_per_s", peak_bytes_per_s)
    if np.isscalar(warps_per_sm):
        return min(peak, _check.non_negative("warps_per_sm", warps_per_sm) * n * b / lat)
    w = np.asarray(warps_per_sm, dtype=float)
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"warps_per_sm must contain finite numbers >= 0, got {warps_per_sm!r}")
    return np.minimum(peak, w * n * b / lat)


# --------------------------------------------------------------------------------------------
# Launch overhead
# --------------------------------------------------------------------------------------------
def launch_bound_time_s(n_kernels: int, kernel_s: float, launch_overhead_s: float) -> float:
    """Time for back-to-back kernels when the host must issue each one.

    The host needs ``launch_overhead_s`` to issue each kernel and the GPU ``kernel_s`` to run it:
    the slower of the two sets the pace, ``n_kernels x max(kernel_s, launch_overhead_s)``.

    Explained in :ref:`simt` > When the CPU is the bottleneck: launch overhead.

    Parameters
    ----------
    n_kernels : int
        Kernels launched [-], >= 1.
    kernel_s : float
        GPU time of one kernel [s], >= 0.
    launch_overhead_s : float
        Host time to issue one kernel [s], >= 0.

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> launch_bound_time_s(1000, 2e-6, 8e-6)  # host-bound: the GPU idles 3/4 of the time
    0.008
    """
    n = _int("n_kernels", n_kernels, minimum=1)
    k = _check.non_negative("kernel_s", kernel_s)
    h = _check.non_negative("launch_overhead_s", launch_overhead_s)
    return _finite(n * max(k, h), "n_kernels x kernel_s or launch_overhead_s is")


# --------------------------------------------------------------------------------------------
# Amdahl's law
# --------------------------------------------------------------------------------------------
def amdahl_speedup(parallel_fraction: float, workers: float) -> float:
    """Amdahl's law: speed-up of a job whose parallel part is spread over workers.

    ``1 / ((1 - p) + p / n)``, with ``p`` the parallel fraction of the run time on one worker.
    ``workers`` may be any speed-up factor of the parallel part (>= 1 for "more workers"; a
    fraction models a slower device).

    Explained in :ref:`simt` > Amdahl's law: bound the speed-up before you start.

    Parameters
    ----------
    parallel_fraction : float
        Parallel fraction ``p`` of the one-worker run time [-], 0..1.
    workers : float
        Workers, or speed-up of the parallel part [-], > 0.

    Returns
    -------
    float
        Speed-up [-].

    Raises
    ------
    ValueError
        If ``parallel_fraction`` is outside [0, 1] or ``workers`` is not positive.

    Examples
    --------
    >>> round(amdahl_speedup(0.95, 132), 2)
    17.48
    """
    p = _check.fraction("parallel_fraction", parallel_fraction)
    n = _check.positive("workers", workers)
    return 1.0 / ((1.0 - p) + p / n)


NO_CEILING = ("parallel_fraction = 1 has no finite ceiling: with no serial part the speed-up grows with the workers; "
              "valid: [0, 1)")


def amdahl_ceiling(parallel_fraction: float) -> float:
    """The speed-up with infinitely many workers, ``1 / (1 - p)``.

    With ``p = 1`` there is no serial part and no finite ceiling: that raises ``ValueError`` (no
    model returns inf for finite input).

    Explained in :ref:`simt` > Amdahl's law: bound the speed-up before you start.

    Parameters
    ----------
    parallel_fraction : float
        Parallel fraction ``p`` of the one-worker run time [-], in [0, 1).

    Returns
    -------
    float
        Largest possible speed-up [-].

    Raises
    ------
    ValueError
        If ``parallel_fraction`` is outside [0, 1), including exactly 1.

    Examples
    --------
    >>> round(amdahl_ceiling(0.95), 6)
    20.0
    """
    p = _check.fraction("parallel_fraction", parallel_fraction)
    if p == 1.0:
        raise ValueError(NO_CEILING)
    return 1.0 / (1.0 - p)


def parallel_fraction_from_times(serial_s: float, parallel_s: float) -> float:
    """The parallel fraction of a run, from its serial and parallel times on one worker.

    Explained in :ref:`simt` > Amdahl's law: bound the speed-up before you start.

    Parameters
    ----------
    serial_s : float
        Time that cannot be spread over workers [s], >= 0.
    parallel_s : float
        Time that can [s], >= 0; not both 0.

    Returns
    -------
    float
        ``parallel_s / (serial_s + parallel_s)`` [-].

    Raises
    ------
    ValueError
        If a time is negative or both are 0.

    Examples
    --------
    >>> parallel_fraction_from_times(5e-3, 95e-3)
    0.95
    """
    s = _check.non_negative("serial_s", serial_s)
    q = _check.non_negative("parallel_s", parallel_s)
    if s + q == 0:
        raise ValueError("serial_s and parallel_s must not both be 0")
    return q / (s + q)


def parallel_fraction_needed(speedup: float, workers: float) -> float:
    """The parallel fraction a job needs to reach a speed-up on some workers (Amdahl inverted).

    Explained in :ref:`simt` > Amdahl's law: bound the speed-up before you start.

    Parameters
    ----------
    speedup : float
        Speed-up wanted [-], between 1 and ``workers``.
    workers : float
        Workers, or speed-up of the parallel part [-], > 0.

    Returns
    -------
    float
        Parallel fraction [-], 0..1.

    Raises
    ------
    ValueError
        If ``speedup`` is not between 1 and ``workers`` or an input is not positive.

    Examples
    --------
    >>> round(parallel_fraction_needed(10, 132), 4)
    0.9069
    """
    s = _check.positive("speedup", speedup)
    n = _check.positive("workers", workers)
    lo, hi = min(1.0, n), max(1.0, n)
    if not lo <= s <= hi:
        raise ValueError(f"speedup must lie between 1 and workers ({lo!r} to {hi!r}): Amdahl's law gives no other, got {speedup!r}")
    if n == 1:
        return 1.0 if s == 1 else 0.0
    if n > 1:  # 1 <= s <= n: no term overflows
        p = (1.0 - 1.0 / s) / (1.0 - 1.0 / n)
    else:  # n < 1 <= ... : n <= s <= 1, rearranged so that tiny s and n give no inf/inf
        p = (n * (1.0 - s)) / (s * (1.0 - n))
    return min(1.0, max(0.0, p))


# --------------------------------------------------------------------------------------------
# Reductions and atomics; streams and copy/compute overlap; waves and the tail
# --------------------------------------------------------------------------------------------
def reduction_time_s(bytes_read: float, read_bytes_per_s: float, same_address_atomics: float = 0.0,
                     atomics_per_s: float | None = None) -> float:
    """Time of a reduction: the larger of reading its input and its atomics to one address.

    A reduction does one add per element loaded, far too little arithmetic to matter, so it is
    memory-bound: at best it reads ``bytes_read`` at the read bandwidth. Atomics to the *same*
    address are serialized at the memory that owns it (one L2 slice), so ``same_address_atomics``
    of them take at least ``same_address_atomics / atomics_per_s``. The two proceed concurrently,
    so the time is their maximum: a kernel slower than both is limited by something else
    (barriers, too few loads in flight).

    Explained in :ref:`simt` > Reductions: warp shuffles, votes and atomics.

    Parameters
    ----------
    bytes_read : float
        Bytes of input read once [B], >= 0.
    read_bytes_per_s : float
        Read bandwidth [B/s], > 0: a device-to-device copy's bytes *moved* (read + written) per
        second, which is what the memory delivers and a reduction spends on reads alone, or the
        datasheet's bandwidth.
    same_address_atomics : float, optional
        Atomic operations to one address that the kernel issues [count], >= 0.
    atomics_per_s : float or None, optional
        Throughput of atomics to one address [1/s]; None when the kernel issues none.

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range, or ``atomics_per_s`` is None while ``same_address_atomics > 0``.

    Examples
    --------
    >>> reduction_time_s(1 << 30, 4e12)  # 1 GiB at 4 TB/s
    0.000268435456
    >>> reduction_time_s(64 << 20, 4e12, same_address_atomics=1 << 24, atomics_per_s=2e9)  # atomic-bound
    0.008388608
    """
    b = _check.non_negative("bytes_read", bytes_read)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    a = _check.non_negative("same_address_atomics", same_address_atomics)
    if atomics_per_s is None:
        if a > 0:
            raise ValueError(f"atomics_per_s is needed when same_address_atomics > 0 (got {same_address_atomics!r} atomics)")
        atomic_s = 0.0
    else:
        atomic_s = a / _check.positive("atomics_per_s", atomics_per_s)
    return _check.finite_result("reduction time", max(b / bw, atomic_s), bytes_read=bytes_read, read_bytes_per_s=read_bytes_per_s,
                                same_address_atomics=same_address_atomics, atomics_per_s=atomics_per_s)


def reduction_atomics(n_elems: int, per: str, threads_per_block: int = 256, grid_blocks: int | None = None) -> int:
    """Same-address atomics a one-pass reduction issues, with one atomic per thread, per warp or per block.

    ``n_elems`` elements, one per thread; a grid-stride kernel passes ``grid_blocks``, its fixed
    number of blocks.

    Explained in :ref:`simt` > Reductions: warp shuffles, votes and atomics.

    Parameters
    ----------
    n_elems : int
        Elements summed [count], >= 1.
    per : str
        ``"thread"``, ``"warp"`` or ``"block"``.
    threads_per_block : int, optional
        Threads per block [count], 32 to 1024.
    grid_blocks : int or None, optional
        Blocks of a grid-stride launch [count]; None: one element per thread.

    Returns
    -------
    int
        Atomic operations [count].

    Raises
    ------
    ValueError
        If an input is out of range or ``per`` is not one of the three.

    Examples
    --------
    >>> reduction_atomics(1 << 24, "thread"), reduction_atomics(1 << 24, "warp"), reduction_atomics(1 << 24, "block")
    (16777216, 524288, 65536)
    >>> reduction_atomics(1 << 28, "block", grid_blocks=528)
    528
    """
    n = _check.integer("n_elems", n_elems, minimum=1)
    per = _check.choice("per", per, ("thread", "warp", "block"))
    t = _check.integer("threads_per_block", threads_per_block, minimum=WARP_SIZE, maximum=MAX_THREADS_PER_BLOCK)
    if grid_blocks is not None:
        g = _check.integer("grid_blocks", grid_blocks, minimum=1)
        return {"thread": g * t, "warp": g * -(-t // WARP_SIZE), "block": g}[per]
    return {"thread": n, "warp": -(-n // WARP_SIZE), "block": -(-n // t)}[per]


def pipeline_time_s(stage_s: Sequence[float], chunks: int, per_chunk_overhead_s: float = 0.0) -> float:
    """Time to push a job through stages that each have their own engine, split into chunks.

    The stages are, e.g., the host-to-device copy engine, the SMs and the device-to-host copy
    engine; the job is split into ``chunks`` equal pieces on enough streams that every stage can
    work on a different chunk. ``stage_s`` holds each stage's time for the WHOLE job in one piece.
    The first chunk passes every stage (fill), after which the slowest stage finishes one chunk per
    step: ``(sum + (chunks - 1) x max) / chunks``, plus ``per_chunk_overhead_s`` per chunk and stage.
    One chunk is the serial time ``sum(stage_s)``; many chunks approach ``max(stage_s)``. With two
    stages and copy time tT >= compute time tE this is tT + tE / chunks, the CUDA Best Practices
    Guide's estimate for staged concurrent copy and execute.

    Explained in :ref:`simt` > Streams and copy/compute overlap.

    Parameters
    ----------
    stage_s : sequence of float
        Each stage's time for the whole job [s], each >= 0; 1 to 64 stages.
    chunks : int
        Pieces the job is split into [count], 1 to 2**20.
    per_chunk_overhead_s : float, optional
        Extra time per chunk per stage (launch, copy set-up) [s], >= 0.

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
    >>> pipeline_time_s([0.004, 0.004, 0.004], 1)
    0.012
    >>> round(pipeline_time_s([0.004, 0.004, 0.004], 8), 6)  # (12 + 7 x 4) / 8 ms
    0.005
    """
    stages = _check.numbers_list("stage_s", stage_s, min_len=1, max_len=64, check=_check.non_negative)
    k = _check.integer("chunks", chunks, minimum=1, maximum=1 << 20)
    o = _check.non_negative("per_chunk_overhead_s", per_chunk_overhead_s)
    per = [s / k + o for s in stages]
    return _check.finite_result("pipeline time", sum(per) + (k - 1) * max(per), stage_s=stage_s, chunks=chunks,
                                per_chunk_overhead_s=per_chunk_overhead_s)


def waves(grid_blocks: int, blocks_per_sm: int, sms: int) -> tuple[int, float]:
    """Waves a grid runs in, and the tail efficiency: the share of the SMs' block slots it fills.

    ``(ceil(grid / (blocks_per_sm x sms)), grid / (waves x blocks_per_sm x sms))``.

    Explained in :ref:`simt` > Persistent and grid-stride kernels.

    Parameters
    ----------
    grid_blocks : int
        Blocks launched [count], >= 1.
    blocks_per_sm : int
        Blocks resident per SM (the occupancy) [count], >= 1.
    sms : int
        SMs [count], >= 1.

    Returns
    -------
    waves : int
        Waves [count].
    tail_efficiency : float
        Fraction of the block slots of all waves that hold a block [-], in (0, 1].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> waves(132, 1, 132), waves(133, 1, 132)
    ((1, 1.0), (2, 0.5037878787878788))
    """
    g = _check.integer("grid_blocks", grid_blocks, minimum=1)
    b = _check.integer("blocks_per_sm", blocks_per_sm, minimum=1)
    s = _check.integer("sms", sms, minimum=1)
    slots = b * s
    w = -(-g // slots)
    return w, g / (w * slots)


def pipeline_schedule(stage_s: Sequence[float], chunks: int) -> list[tuple[int, int, float, float]]:
    """The timeline :func:`pipeline_time_s` assumes, chunk by chunk and stage by stage.

    Every stage has its own engine, and a stage starts a chunk as soon as its engine is free and
    the chunk has left the previous stage. The last end is ``pipeline_time_s(stage_s, chunks)``.

    Explained in :ref:`simt` > Streams and copy/compute overlap.

    Parameters
    ----------
    stage_s : sequence of float
        Each stage's time for the whole job [s], each >= 0; 1 to 64 stages.
    chunks : int
        Pieces the job is split into [count] (at most 4,096: a timeline to draw).

    Returns
    -------
    list of tuple
        ``(chunk, stage, start_s, end_s)`` for every chunk and stage: indices [count], times [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [(c, s, round(a, 3), round(b, 3)) for c, s, a, b in pipeline_schedule([2.0, 1.0], 2)]
    [(0, 0, 0.0, 1.0), (0, 1, 1.0, 1.5), (1, 0, 1.0, 2.0), (1, 1, 2.0, 2.5)]
    """
    stages = _check.numbers_list("stage_s", stage_s, min_len=1, max_len=64, check=_check.non_negative)
    k = _check.integer("chunks", chunks, minimum=1, maximum=4096)
    free = [0.0] * len(stages)  # when each stage's engine is next free
    out = []
    for c in range(k):
        ready = 0.0  # when chunk c has left the previous stage
        for s, total in enumerate(stages):
            start = max(free[s], ready)
            end = start + total / k
            out.append((c, s, start, end))
            free[s] = ready = end
    return out


def atomic_throughput_per_s(addresses: int, same_address_per_s: float, max_per_s: float) -> float:
    """Atomics per second when a kernel's atomics are spread evenly over several addresses.

    If each address applied its atomics one after another at ``same_address_per_s``, independently
    of the others, the addresses would add up until the memory system's own atomic throughput
    ``max_per_s`` caps them: ``min(addresses x same_address_per_s, max_per_s)``. That is an upper
    bound, not a law: on the H200 the measured rate grows more slowly than the number of addresses
    (the chapter's contention sweep). Spreading (privatizing) a counter is still the cure for same-address contention.

    Explained in :ref:`simt` > Reductions: warp shuffles, votes and atomics.

    Parameters
    ----------
    addresses : int
        Distinct addresses the atomics go to, evenly [count], 1 to 2**40.
    same_address_per_s : float
        Throughput of atomics to one address [1/s], > 0.
    max_per_s : float
        Throughput of atomics over the whole memory system [1/s], > 0.

    Returns
    -------
    float
        Atomics per second [1/s].

    Raises
    ------
    ValueError
        If an input is out of range or the result overflows.

    Examples
    --------
    >>> atomic_throughput_per_s(1, 5e8, 1e11), atomic_throughput_per_s(32, 5e8, 1e11), atomic_throughput_per_s(4096, 5e8, 1e11)
    (500000000.0, 16000000000.0, 100000000000.0)
    """
    k = _check.integer("addresses", addresses, minimum=1, maximum=1 << 40)
    r = _check.positive("same_address_per_s", same_address_per_s)
    cap = _check.positive("max_per_s", max_per_s)
    return _check.finite_result("atomic throughput", min(k * r, cap), addresses=addresses, same_address_per_s=same_address_per_s,
                                max_per_s=max_per_s)
