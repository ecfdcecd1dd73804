"""Memory hierarchy models: the roofline, coalescing into sectors, shared-memory banks.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Units are in the names: ``bytes_moved`` [B], ``bytes_per_s`` [B/s], ``peak_flop_per_s`` [FLOP/s],
``intensity`` [FLOP/B].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check

WARP_SIZE = 32
SECTOR_BYTES = 32  # L1/L2 sector: the unit a memory request moves (CUDA Best Practices Guide, 9.2.1)
LINE_BYTES = 128  # cache line: four sectors
SMEM_BANKS = 32  # shared memory banks (CUDA C++ Programming Guide, compute capability 5.x+)
SMEM_BANK_BYTES = 4  # each bank delivers 32 bits per clock
ELEM_BYTES = (1, 2, 4, 8, 16)  # widths of one lane's load instruction


def _positive_array(name, value):
    """Accept a positive scalar or array-like; return (array, is_scalar)."""
    if np.isscalar(value):
        return np.asarray(_check.positive(name, value), dtype=float), True
    arr = np.asarray(value, dtype=float)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must contain finite numbers > 0, got {value!r}")
    return arr, False


def _out(arr, scalar):
    return float(arr) if scalar else arr


# --------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------
def arithmetic_intensity(flop: float, bytes_moved: float) -> float:
    """Arithmetic intensity: FLOP performed per byte moved [FLOP/B].

    Parameters
    ----------
    flop : float
        Floating-point operations the kernel performs [FLOP], >= 0.
    bytes_moved : float
        Bytes that cross the memory level of interest [B], > 0.

    Examples
    --------
    Adding two fp32 vectors: 1 FLOP per element, 12 bytes (two reads, one write).

    >>> arithmetic_intensity(1, 12)
    0.08333333333333333
    """
    f = _check.non_negative("flop", flop)
    b = _check.positive("bytes_moved", bytes_moved)
    return f / b


def ridge_intensity(peak_flop_per_s: float, bytes_per_s: float) -> float:
    """The ridge point of a roofline [FLOP/B]: the intensity at which memory time equals
    compute time. Below it a kernel is memory-bound, above it compute-bound.

    >>> round(ridge_intensity(989.4e12, 4.8e12), 1)  # H200, dense bf16
    206.1
    """
    p = _check.positive("peak_flop_per_s", peak_flop_per_s)
    b = _check.positive("bytes_per_s", bytes_per_s)
    return p / b


def attainable_flop_per_s(intensity, peak_flop_per_s: float, bytes_per_s: float):
    """Roofline: ``min(peak, intensity x bandwidth)`` [FLOP/s].

    ``intensity`` may be a scalar or an array [FLOP/B], every value > 0.

    >>> attainable_flop_per_s(10, 989.4e12, 4.8e12)
    48000000000000.0
    """
    i, scalar = _positive_array("intensity", intensity)
    p = _check.positive("peak_flop_per_s", peak_flop_per_s)
    b = _check.positive("bytes_per_s", bytes_per_s)
    return _out(np.minimum(p, i * b), scalar)


def roofline_time_s(flop: float, bytes_moved: float, peak_flop_per_s: float, bytes_per_s: float) -> float:
    """Lower bound on a kernel's run time [s]: the larger of compute time and memory time.

    >>> round(roofline_time_s(2 * 4096**3, 3 * 2 * 4096**2, 989.4e12, 4.8e12) * 1e6, 1)  # bf16 GEMM, H200 [us]
    138.9
    """
    f = _check.non_negative("flop", flop)
    b = _check.non_negative("bytes_moved", bytes_moved)
    p = _check.positive("peak_flop_per_s", peak_flop_per_s)
    bw = _check.positive("bytes_per_s", bytes_per_s)
    return max(f / p, b / bw)


def hierarchical_attainable_flop_per_s(peak_flop_per_s: float, levels: dict) -> tuple[float, str]:
    """Roofline over several memory levels at once.

    ``levels`` maps a level name to ``(intensity, bytes_per_s)``: the kernel's FLOP per byte
    moved at that level, and that level's bandwidth. The attainable rate is the minimum of the
    compute peak and every level's ``intensity x bandwidth``; the second value returned names
    the bound (``"compute"`` or a level name).

    >>> hierarchical_attainable_flop_per_s(100.0, {"L2": (2.0, 40.0), "HBM": (4.0, 10.0)})
    (40.0, 'HBM')
    """
    best, bound = _check.positive("peak_flop_per_s", peak_flop_per_s), "compute"
    if not levels:
        raise ValueError(f"levels must name at least one memory level, got {levels!r}")
    for name, pair in levels.items():
        try:
            intensity, bw = pair
        except (TypeError, ValueError):
            raise ValueError(f"levels[{name!r}] must be (intensity, bytes_per_s), got {pair!r}") from None
        rate = _check.positive(f"levels[{name!r}] intensity", intensity) * _check.positive(
            f"levels[{name!r}] bytes_per_s", bw
        )
        if rate < best:
            best, bound = rate, name
    return best, bound


# --------------------------------------------------------------------------------------------
# Coalescing
# --------------------------------------------------------------------------------------------
def _elem_bytes(elem_bytes) -> int:
    e = _check.integer("elem_bytes", elem_bytes)
    if e not in ELEM_BYTES:
        raise ValueError(f"elem_bytes must be one of {ELEM_BYTES}, got {elem_bytes!r}")
    return e


def warp_addresses(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> np.ndarray:
    """Byte address of each lane's element: lane ``i`` reads element ``offset + i*stride``
    of an array that starts at byte 0 (128-byte aligned)."""
    s = _check.integer("stride_elems", stride_elems, minimum=0)
    e = _elem_bytes(elem_bytes)
    o = _check.integer("offset_elems", offset_elems, minimum=0)
    return (o + np.arange(WARP_SIZE, dtype=np.int64) * s) * e


def warp_load_sectors(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0, *, sector_bytes: int = SECTOR_BYTES) -> int:
    """Number of distinct ``sector_bytes``-byte sectors (32 by default) one warp-wide load
    touches when lane ``i`` reads element ``offset_elems + i * stride_elems``.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0 (0 = every lane reads
        the same element).
    elem_bytes : int
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int
        Where lane 0 starts [elements], >= 0; the array starts 128-byte aligned.
    sector_bytes : int
        Granularity of the memory transaction [B]; 32 for a sector, 128 for a cache line.

    Examples
    --------
    >>> warp_load_sectors(1)          # 32 lanes x 4 B = 128 B: one line, four sectors
    4
    >>> warp_load_sectors(1, 4, 1)    # misaligned by one element: five sectors
    5
    >>> warp_load_sectors(8)          # 32 B apart: one sector per lane
    32
    """
    g = _check.integer("sector_bytes", sector_bytes, minimum=1)
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    e = int(elem_bytes)
    first = addr // g
    last = (addr + e - 1) // g
    touched = set()
    for a, b in zip(first.tolist(), last.tolist()):
        touched.update(range(a, b + 1))
    return len(touched)


def warp_load_lines(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> int:
    """Number of distinct 128-byte cache lines one warp-wide load touches."""
    return warp_load_sectors(stride_elems, elem_bytes, offset_elems, sector_bytes=LINE_BYTES)


@dataclass(frozen=True)
class Coalescing:
    """What one warp-wide load turns into."""

    sectors: int
    lines: int
    requested_bytes: int
    moved_bytes: int
    efficiency: float  # requested / moved, in (0, 1]


def coalescing(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> Coalescing:
    """Sectors, lines and efficiency (useful bytes / bytes moved) of one warp-wide load.

    >>> coalescing(2).efficiency  # every other float: half of each sector is wasted
    0.5
    """
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    sectors = warp_load_sectors(stride_elems, elem_bytes, offset_elems)
    requested = len(set(addr.tolist())) * int(elem_bytes)
    moved = sectors * SECTOR_BYTES
    return Coalescing(sectors, warp_load_lines(stride_elems, elem_bytes, offset_elems), requested, moved, requested / moved)


def strided_read_bytes(n_elems: int, stride_elems: int, elem_bytes: int = 4, *, granule_bytes: int = SECTOR_BYTES) -> int:
    """Bytes a grid of warps moves from memory to read ``n_elems`` elements with lane stride
    ``stride_elems`` (warp ``w`` starts at element ``32 * w * stride``), at a transfer
    granularity of ``granule_bytes`` (32 B sectors; DRAM may fetch 64 B).

    >>> strided_read_bytes(1024, 1)  # contiguous: exactly the useful bytes
    4096
    >>> strided_read_bytes(1024, 2)  # stride 2: twice
    8192
    """
    n = _check.integer("n_elems", n_elems, minimum=1)
    s = _check.integer("stride_elems", stride_elems, minimum=1)
    e = _elem_bytes(elem_bytes)
    g = _check.integer("granule_bytes", granule_bytes, minimum=1)
    full, rest = divmod(n, WARP_SIZE)
    per_warp = warp_load_sectors(s, e, 0, sector_bytes=g)
    total = full * per_warp
    if rest:
        addr = np.arange(rest, dtype=np.int64) * s * e
        total += len(set((addr // g).tolist()) | set(((addr + e - 1) // g).tolist()))
    return total * g


def strided_read_time_s(n_elems: int, stride_elems: int, bytes_per_s: float, elem_bytes: int = 4, *, granule_bytes: int = SECTOR_BYTES) -> float:
    """Time to read ``n_elems`` strided elements when memory moves whole granules at
    ``bytes_per_s`` [s]."""
    bw = _check.positive("bytes_per_s", bytes_per_s)
    return strided_read_bytes(n_elems, stride_elems, elem_bytes, granule_bytes=granule_bytes) / bw


# --------------------------------------------------------------------------------------------
# Shared memory banks
# --------------------------------------------------------------------------------------------
def shared_wavefronts(byte_addresses, elem_bytes: int = 4) -> int:
    """Wavefronts (shared-memory passes) for one warp-wide access at the given byte addresses.

    Rules (CUDA C++ Programming Guide, "Shared Memory" for compute capability 5.x and later):
    32 banks, 4 bytes wide; successive 4-byte words go to successive banks. Lanes that read the
    same word share it (broadcast). A warp's 8-byte accesses are served a half-warp at a time,
    16-byte accesses a quarter-warp at a time, so at least 2 and 4 wavefronts. Within each
    group the pass count is the largest number of distinct words any one bank must deliver.
    """
    e = _elem_bytes(elem_bytes)
    addr = np.asarray(byte_addresses, dtype=np.int64).ravel()
    if addr.size != WARP_SIZE:
        raise ValueError(f"byte_addresses must hold {WARP_SIZE} addresses, got {addr.size}")
    if np.any(addr < 0) or np.any(addr % e):
        raise ValueError(f"byte_addresses must be >= 0 and aligned to elem_bytes={e}")
    group = max(1, (SMEM_BANKS * SMEM_BANK_BYTES) // max(e, SMEM_BANK_BYTES))
    group = min(group, WARP_SIZE)
    words_per_elem = max(1, e // SMEM_BANK_BYTES)
    total = 0
    for start in range(0, WARP_SIZE, group):
        banks: dict[int, set] = {}
        for a in addr[start : start + group].tolist():
            first_word = a // SMEM_BANK_BYTES
            for w in range(first_word, first_word + words_per_elem):
                banks.setdefault(w % SMEM_BANKS, set()).add(w)
        total += max(len(words) for words in banks.values())
    return total


def bank_conflict_wavefronts(stride_elems: int, elem_bytes: int = 4) -> int:
    """Shared-memory wavefronts for one warp-wide access where lane ``i`` reads element
    ``i * stride_elems`` (as Nsight Compute counts them: 1 is conflict-free for 4-byte data,
    2 for 8-byte, 4 for 16-byte).

    >>> bank_conflict_wavefronts(1), bank_conflict_wavefronts(2), bank_conflict_wavefronts(32)
    (1, 2, 32)
    >>> bank_conflict_wavefronts(33)  # padding a 32-wide row by one word removes the conflict
    1
    """
    s = _check.integer("stride_elems", stride_elems, minimum=0)
    e = _elem_bytes(elem_bytes)
    return shared_wavefronts(np.arange(WARP_SIZE, dtype=np.int64) * s * e, e)


def ideal_wavefronts(elem_bytes: int = 4) -> int:
    """The fewest wavefronts a warp-wide access of this width can take (1, 1, 1, 2, 4)."""
    e = _elem_bytes(elem_bytes)
    return max(1, (WARP_SIZE * e) // (SMEM_BANKS * SMEM_BANK_BYTES))


def swizzled_column_wavefronts(row_elems: int = 32, column: int = 0, elem_bytes: int = 4) -> tuple[int, int]:
    """Reading one column of a ``32 x row_elems`` shared tile: wavefronts without and with an
    XOR swizzle (element ``(r, c)`` stored at column ``c ^ (r % row_elems)``).

    >>> swizzled_column_wavefronts(32)
    (32, 1)
    """
    n = _check.integer("row_elems", row_elems, minimum=WARP_SIZE)
    if n & (n - 1):
        raise ValueError(f"row_elems must be a power of two >= 32 for an XOR swizzle, got {row_elems!r}")
    c = _check.integer("column", column, minimum=0, maximum=n - 1)
    e = _elem_bytes(elem_bytes)
    rows = np.arange(WARP_SIZE, dtype=np.int64)
    plain = (rows * n + c) * e
    swizzled = (rows * n + (c ^ rows)) * e
    return shared_wavefronts(plain, e), shared_wavefronts(swizzled, e)


def smem_bytes_per_s(sms: int, clock_hz: float) -> float:
    """Aggregate shared-memory bandwidth from first principles [B/s]:
    32 banks x 4 B per clock per SM x SMs x clock.

    >>> round(smem_bytes_per_s(132, 1.98e9) / 1e12, 1)  # H100/H200 SXM
    33.5
    """
    n = _check.integer("sms", sms, minimum=1)
    f = _check.positive("clock_hz", clock_hz)
    return SMEM_BANKS * SMEM_BANK_BYTES * n * f


# --------------------------------------------------------------------------------------------
# Tiling
# --------------------------------------------------------------------------------------------
def tiled_matmul_hbm_bytes(m: int, n: int, k: int, tile: int, elem_bytes: int = 4) -> int:
    """Bytes a square-tiled matmul C[m,n] = A[m,k] B[k,n] reads and writes in device memory
    when each ``tile x tile`` block of C is computed from shared-memory tiles: every A element
    is read ``ceil(n/tile)`` times, every B element ``ceil(m/tile)`` times, C written once.

    >>> tiled_matmul_hbm_bytes(1024, 1024, 1024, 1, 4) // 2**20  # no reuse: 2*M*N*K reads
    8196
    """
    m_ = _check.integer("m", m, minimum=1)
    n_ = _check.integer("n", n, minimum=1)
    k_ = _check.integer("k", k, minimum=1)
    t = _check.integer("tile", tile, minimum=1)
    e = _check.integer("elem_bytes", elem_bytes, minimum=1)
    reads = m_ * k_ * -(-n_ // t) + k_ * n_ * -(-m_ // t)
    return (reads + m_ * n_) * e


def working_set_bytes_per_s(ws_bytes, cache_bytes: float, cache_bytes_per_s: float, mem_bytes_per_s: float):
    """Idealized bandwidth of re-reading a working set of ``ws_bytes``: a fraction
    ``min(1, cache/ws)`` of the bytes hits the cache, the rest comes from memory; time per
    byte is the weighted sum of the two levels' times per byte."""
    ws, scalar = _positive_array("ws_bytes", ws_bytes)
    c = _check.positive("cache_bytes", cache_bytes)
    cb = _check.positive("cache_bytes_per_s", cache_bytes_per_s)
    mb = _check.positive("mem_bytes_per_s", mem_bytes_per_s)
    hit = np.minimum(1.0, c / ws)
    return _out(1.0 / (hit / cb + (1 - hit) / mb), scalar)


def bank_loads(stride_elems: int, elem_bytes: int = 4) -> np.ndarray:
    """Distinct 4-byte words each of the 32 banks must deliver for one warp-wide access where
    lane ``i`` reads element ``i * stride_elems`` (summed over the warp's half- or quarter-warp
    groups for 8- and 16-byte accesses)."""
    s = _check.integer("stride_elems", stride_elems, minimum=0)
    e = _elem_bytes(elem_bytes)
    words = set()
    for a in (np.arange(WARP_SIZE, dtype=np.int64) * s * e).tolist():
        first = a // SMEM_BANK_BYTES
        words.update(range(first, first + max(1, e // SMEM_BANK_BYTES)))
    loads = np.zeros(SMEM_BANKS, dtype=int)
    for w in words:
        loads[w % SMEM_BANKS] += 1
    return loads


def sector_usage(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> dict:
    """Useful bytes in each 32-byte sector one warp-wide load touches: ``{sector: bytes}``."""
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    e = int(elem_bytes)
    used: dict[int, set] = {}
    for a in addr.tolist():
        for byte in range(a, a + e):
            used.setdefault(byte // SECTOR_BYTES, set()).add(byte)
    return {sector: len(b) for sector, b in sorted(used.items())}


@dataclass(frozen=True)
class RooflinePoint:
    """Where a kernel of a given intensity sits on one GPU's roofline for one dtype."""

    gpu: str
    dtype: str
    intensity: float
    peak_flop_per_s: float
    bytes_per_s: float
    ridge_intensity: float
    attainable_flop_per_s: float
    bound: str  # "memory" or "compute"

    @property
    def fraction_of_peak(self) -> float:
        return self.attainable_flop_per_s / self.peak_flop_per_s


def roofline_point(gpu: str, dtype: str, intensity: float) -> RooflinePoint:
    """The HBM roofline of catalog GPU ``gpu`` for ``dtype`` (dense peak) at ``intensity``.

    >>> p = roofline_point("H200-SXM", "bf16", 10)
    >>> p.bound, round(p.ridge_intensity)
    ('memory', 206)
    """
    from ..hardware import get_gpu

    g = get_gpu(gpu)
    peak = g.peak(dtype)
    bw = g.hbm_bytes_per_s
    attain = attainable_flop_per_s(intensity, peak, bw)
    ridge = ridge_intensity(peak, bw)
    return RooflinePoint(g.name, dtype.lower(), float(intensity), peak, bw, ridge, attain, "memory" if intensity < ridge else "compute")
