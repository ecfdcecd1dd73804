"""Memory hierarchy models: the roofline, coalescing into sectors, shared-memory banks.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Units are in the names: ``bytes_moved`` [B], ``bytes_per_s`` [B/s], ``peak_flop_per_s`` [FLOP/s],
``intensity`` [FLOP/B].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import _check

WARP_SIZE = 32
SECTOR_BYTES = 32  # L1/L2 sector: the unit a memory request moves (CUDA Best Practices Guide, 9.2.1)
LINE_BYTES = 128  # cache line: four sectors
SMEM_BANKS = 32  # shared memory banks (CUDA C++ Programming Guide, compute capability 5.x+)
SMEM_BANK_BYTES = 4  # each bank delivers 32 bits per clock
ELEM_BYTES = (1, 2, 4, 8, 16)  # widths of one lane's load instruction
SWIZZLE_CHUNK_BYTES = 16  # TMA / CuTe swizzles permute 16-byte chunks (see tma_swizzle_offset)
SWIZZLE_MODES = (32, 64, 128)  # CU_TENSOR_MAP_SWIZZLE_32B / 64B / 128B: the span the chunks move in

# Combined L1 data cache + shared memory per SM [B], by architecture (one SRAM array, split at run
# time). Registers are a separate 256 KiB (64K x 32 bit) array per SM on every one of these.
L1_SHARED_BYTES_PER_SM = {
    "sm_80": 192 * 1024,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 192 KB combined per SM
    "sm_89": 128 * 1024,  # NVIDIA Ada Tuning Guide, "Increased L1 capacity": 128 KB unified L1/shared per SM
    "sm_90": 256 * 1024,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 256 KB combined per SM
    "sm_100": 256 * 1024,  # CUDA C++ Programming Guide, compute capability 10.0: unified data cache of 256 KB per SM
}

# A last-level cache between the L2 and device memory that the table's L2 column does not show [B].
MEMORY_SIDE_CACHE_BYTES = {
    "gfx942": 256 * 2**20,  # AMD CDNA 3 architecture white paper (MI300X): 256 MB AMD Infinity Cache
}

# Bounds on inputs (documented so that no call overflows, wraps around or loops without limit).
MIN_QUANTITY = 1e-12  # smallest positive physical quantity accepted (FLOP, B, B/s, FLOP/s, FLOP/B)
MAX_QUANTITY = 1e30  # largest: products and quotients of two such values stay finite
MAX_INDEX = 2**48  # largest element count, stride, offset or byte address (256 Ti elements)
MAX_DIM = 2**31  # largest matrix dimension or tile edge
MAX_SMS = 10**6
MAX_GRANULE_BYTES = 4096


def _quantity(name, value, *, allow_zero=False) -> float:
    """A finite real in [MIN_QUANTITY, MAX_QUANTITY] (or exactly 0 with ``allow_zero``)."""
    v = _check.number(name, value)
    if allow_zero and v == 0:
        return 0.0
    if v < MIN_QUANTITY or v > MAX_QUANTITY:
        valid = f"{'0 or ' if allow_zero else ''}between {MIN_QUANTITY:g} and {MAX_QUANTITY:g}"
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    return v


def _int(name, value, *, minimum, maximum) -> int:
    """An exact integer (Python or numpy int, not bool, not float) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], got {value!r}")
    v = int(value)
    if v < minimum or v > maximum:
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], got {value!r}")
    return v


def _positive_array(name, value):
    """Accept a positive scalar or a non-empty 1-D sequence/array; return (array, is_scalar).

    Every entry must be a real number (not bool) in [MIN_QUANTITY, MAX_QUANTITY]."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, bool) or np.isscalar(value):
        return np.asarray(_quantity(name, value), dtype=float), True
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiu" or value.ndim != 1 or value.size == 0:
            raise ValueError(f"{name} must be a number or a non-empty 1-D array of numbers, got {value!r}")
        arr = value.astype(float)
        if not np.all(np.isfinite(arr)) or np.any(arr < MIN_QUANTITY) or np.any(arr > MAX_QUANTITY):
            raise ValueError(
                f"{name} must contain numbers between {MIN_QUANTITY:g} and {MAX_QUANTITY:g}, got {value!r}"
            )
        return arr, False
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"{name} must be a number or a non-empty sequence of numbers, got {value!r}") from None
    if not items:
        raise ValueError(f"{name} must be a number or a non-empty sequence of numbers, got {value!r}")
    return np.asarray([_quantity(f"{name}[{i}]", x) for i, x in enumerate(items)], dtype=float), False


def _out(arr, scalar):
    return float(arr) if scalar else arr


# --------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------
def arithmetic_intensity(flop: float, bytes_moved: float) -> float:
    """Arithmetic intensity: FLOP performed per byte moved.

    Explained in :ref:`memory_hierarchy` > Arithmetic intensity and the roofline.

    Parameters
    ----------
    flop : float
        Floating-point operations the kernel performs [FLOP], >= 0.
    bytes_moved : float
        Bytes that cross the memory level of interest [B], > 0.

    Returns
    -------
    float
        The intensity [FLOP/B].

    Raises
    ------
    ValueError
        If an input is not a finite number in range (``flop`` may be 0).

    Examples
    --------
    Adding two fp32 vectors: 1 FLOP per element, 12 bytes (two reads, one write).

    >>> arithmetic_intensity(1, 12)
    0.08333333333333333
    """
    f = _quantity("flop", flop, allow_zero=True)
    b = _quantity("bytes_moved", bytes_moved)
    return f / b


def ridge_intensity(peak_flop_per_s: float, bytes_per_s: float) -> float:
    """The ridge point of a roofline: the intensity at which memory time equals compute time.

    Below it a kernel is memory-bound, above it compute-bound.

    Explained in :ref:`memory_hierarchy` > Arithmetic intensity and the roofline.

    Parameters
    ----------
    peak_flop_per_s : float
        Compute peak (dense) [FLOP/s], > 0.
    bytes_per_s : float
        Bandwidth of the memory level [B/s], > 0.

    Returns
    -------
    float
        Ridge intensity ``peak_flop_per_s / bytes_per_s`` [FLOP/B].

    Raises
    ------
    ValueError
        If an input is not a positive finite number.

    Examples
    --------
    >>> round(ridge_intensity(989.4e12, 4.8e12), 1)  # H200, dense bf16
    206.1
    """
    p = _quantity("peak_flop_per_s", peak_flop_per_s)
    b = _quantity("bytes_per_s", bytes_per_s)
    return p / b


def attainable_flop_per_s(intensity, peak_flop_per_s: float, bytes_per_s: float):
    """The roofline: ``min(peak, intensity x bandwidth)``.

    Explained in :ref:`memory_hierarchy` > Arithmetic intensity and the roofline.

    Parameters
    ----------
    intensity : float or array_like of float
        Arithmetic intensity of the kernel [FLOP/B]: a number or a 1-D array, every value > 0.
    peak_flop_per_s : float
        Compute peak (dense) [FLOP/s], > 0.
    bytes_per_s : float
        Bandwidth of the memory level [B/s], > 0.

    Returns
    -------
    float or numpy.ndarray
        Attainable rate [FLOP/s]: a float for a scalar ``intensity``, an array otherwise.

    Raises
    ------
    ValueError
        If an input is not positive and finite, or ``intensity`` is not a number or a 1-D array.

    Examples
    --------
    >>> attainable_flop_per_s(10, 989.4e12, 4.8e12)
    48000000000000.0
    """
    i, scalar = _positive_array("intensity", intensity)
    p = _quantity("peak_flop_per_s", peak_flop_per_s)
    b = _quantity("bytes_per_s", bytes_per_s)
    return _out(np.minimum(p, i * b), scalar)


def roofline_time_s(flop: float, bytes_moved: float, peak_flop_per_s: float, bytes_per_s: float) -> float:
    """Lower bound on a kernel's run time: the larger of compute time and memory time.

    Explained in :ref:`memory_hierarchy` > Arithmetic intensity and the roofline.

    Parameters
    ----------
    flop : float
        Floating-point operations [FLOP], >= 0.
    bytes_moved : float
        Bytes moved through the memory level [B], >= 0.
    peak_flop_per_s : float
        Compute peak (dense) [FLOP/s], > 0.
    bytes_per_s : float
        Bandwidth of the memory level [B/s], > 0.

    Returns
    -------
    float
        ``max(flop / peak_flop_per_s, bytes_moved / bytes_per_s)`` [s].

    Raises
    ------
    ValueError
        If an input is not a finite number in range.

    Examples
    --------
    >>> round(roofline_time_s(2 * 4096**3, 3 * 2 * 4096**2, 989.4e12, 4.8e12) * 1e6, 1)  # bf16 GEMM, H200 [us]
    138.9
    """
    f = _quantity("flop", flop, allow_zero=True)
    b = _quantity("bytes_moved", bytes_moved, allow_zero=True)
    p = _quantity("peak_flop_per_s", peak_flop_per_s)
    bw = _quantity("bytes_per_s", bytes_per_s)
    return max(f / p, b / bw)


def hierarchical_attainable_flop_per_s(peak_flop_per_s: float, levels: dict) -> tuple[float, str]:
    """Roofline over several memory levels at once, and the level that bounds it.

    The attainable rate is the minimum of the compute peak and every level's
    ``intensity x bandwidth``.

    Explained in :ref:`memory_hierarchy` > One roofline per level.

    Parameters
    ----------
    peak_flop_per_s : float
        Compute peak (dense) [FLOP/s], > 0.
    levels : dict
        Maps a level name (str) to ``(intensity, bytes_per_s)``: the kernel's FLOP per byte moved
        at that level [FLOP/B] and that level's bandwidth [B/s]; 1 to 64 levels.

    Returns
    -------
    rate : float
        Attainable rate [FLOP/s].
    bound : str
        ``"compute"`` or the name of the level that bounds the rate.

    Raises
    ------
    ValueError
        If ``levels`` is empty, not a dict of pairs, or a number is not positive.

    Examples
    --------
    >>> hierarchical_attainable_flop_per_s(100.0, {"L2": (2.0, 40.0), "HBM": (4.0, 10.0)})
    (40.0, 'HBM')
    """
    best, bound = _quantity("peak_flop_per_s", peak_flop_per_s), "compute"
    if not isinstance(levels, Mapping) or not levels:
        raise ValueError(f"levels must be a dict naming at least one memory level, got {levels!r}")
    if len(levels) > 64:
        raise ValueError(f"levels must name at most 64 memory levels, got {len(levels)}")
    for name, pair in levels.items():
        if not isinstance(name, str):
            raise ValueError(f"levels keys must be level names (str), got {name!r}")
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"levels[{name!r}] must be (intensity, bytes_per_s), got {pair!r}")
        intensity, bw = pair
        rate = _quantity(f"levels[{name!r}] intensity", intensity) * _quantity(f"levels[{name!r}] bytes_per_s", bw)
        if rate < best:
            best, bound = rate, name
    return best, bound


# --------------------------------------------------------------------------------------------
# Coalescing
# --------------------------------------------------------------------------------------------
def _elem_bytes(elem_bytes) -> int:
    e = _int("elem_bytes", elem_bytes, minimum=1, maximum=16)
    if e not in ELEM_BYTES:
        raise ValueError(f"elem_bytes must be one of {ELEM_BYTES}, got {elem_bytes!r}")
    return e


def warp_addresses(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> np.ndarray:
    """Byte address of each lane's element in one warp-wide load.

    Lane ``i`` reads element ``offset_elems + i * stride_elems`` of an array that starts at byte 0
    (128-byte aligned).

    Explained in :ref:`memory_hierarchy` > Coalescing: what a warp's 32 addresses turn into.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int, optional
        Element lane 0 reads [elements], >= 0.

    Returns
    -------
    numpy.ndarray
        32 byte addresses, one per lane [B].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> warp_addresses(2)[:4].tolist()
    [0, 8, 16, 24]
    """
    s = _int("stride_elems", stride_elems, minimum=0, maximum=MAX_INDEX)
    e = _elem_bytes(elem_bytes)
    o = _int("offset_elems", offset_elems, minimum=0, maximum=MAX_INDEX)
    return (o + np.arange(WARP_SIZE, dtype=np.int64) * s) * e


def warp_load_sectors(
    stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0, *, sector_bytes: int = SECTOR_BYTES
) -> int:
    """Number of distinct sectors one warp-wide load touches.

    Lane ``i`` reads element ``offset_elems + i * stride_elems``; a sector is ``sector_bytes``
    (32 by default, the L1/L2 unit of the CUDA Best Practices Guide).

    Explained in :ref:`memory_hierarchy` > Coalescing: what a warp's 32 addresses turn into.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0 (0 = every lane reads
        the same element).
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int, optional
        Where lane 0 starts [elements], >= 0; the array starts 128-byte aligned.
    sector_bytes : int, optional
        Granularity of the memory transaction [B]; 32 for a sector, 128 for a cache line.

    Returns
    -------
    int
        Sectors touched [-].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> warp_load_sectors(1)          # 32 lanes x 4 B = 128 B: one line, four sectors
    4
    >>> warp_load_sectors(1, 4, 1)    # misaligned by one element: five sectors
    5
    >>> warp_load_sectors(8)          # 32 B apart: one sector per lane
    32
    """
    g = _int("sector_bytes", sector_bytes, minimum=1, maximum=MAX_GRANULE_BYTES)
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    e = int(elem_bytes)
    first = addr // g
    last = (addr + e - 1) // g
    touched = set()
    for a, b in zip(first.tolist(), last.tolist()):
        touched.update(range(a, b + 1))
    return len(touched)


def warp_load_lines(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> int:
    """Number of distinct 128-byte cache lines one warp-wide load touches.

    Explained in :ref:`memory_hierarchy` > Coalescing: what a warp's 32 addresses turn into.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int, optional
        Where lane 0 starts [elements], >= 0.

    Returns
    -------
    int
        Cache lines touched [-].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> warp_load_lines(1), warp_load_lines(32)
    (1, 32)
    """
    return warp_load_sectors(stride_elems, elem_bytes, offset_elems, sector_bytes=LINE_BYTES)


@dataclass(frozen=True)
class Coalescing:
    """What one warp-wide load turns into.

    Attributes
    ----------
    sectors : int
        32-byte sectors touched [-].
    lines : int
        128-byte cache lines touched [-].
    requested_bytes : int
        Distinct bytes the lanes asked for [B].
    moved_bytes : int
        Bytes the sectors move [B].
    efficiency : float
        ``requested_bytes / moved_bytes`` [-], in (0, 1].
    """

    sectors: int
    lines: int
    requested_bytes: int
    moved_bytes: int
    efficiency: float  # requested / moved, in (0, 1]


def coalescing(stride_elems: int, elem_bytes: int = 4, offset_elems: int = 0) -> Coalescing:
    """Sectors, lines and efficiency of one warp-wide load.

    Explained in :ref:`memory_hierarchy` > Coalescing: what a warp's 32 addresses turn into.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int, optional
        Where lane 0 starts [elements], >= 0.

    Returns
    -------
    Coalescing
        Sectors and lines touched, bytes requested and moved, and the efficiency
        ``requested_bytes / moved_bytes`` in (0, 1].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> coalescing(2).efficiency  # every other float: half of each sector is wasted
    0.5
    """
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    sectors = warp_load_sectors(stride_elems, elem_bytes, offset_elems)
    requested = len(set(addr.tolist())) * int(elem_bytes)
    moved = sectors * SECTOR_BYTES
    return Coalescing(
        sectors, warp_load_lines(stride_elems, elem_bytes, offset_elems), requested, moved, requested / moved
    )


def strided_read_bytes(
    n_elems: int, stride_elems: int, elem_bytes: int = 4, *, granule_bytes: int = SECTOR_BYTES
) -> int:
    """Bytes a grid of warps moves from memory to read elements with a lane stride.

    Warp ``w`` starts at element ``32 * w * stride_elems``. The transfer granularity is
    ``granule_bytes``: 32 B sectors (the L1/L2 unit, CUDA Best Practices Guide), or 64 B to model
    the hypothesis, fitted to the H200's strided data, that DRAM moves pairs of sectors.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    n_elems : int
        Elements read [elements], >= 1.
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 1.
    elem_bytes : int, optional
        Width of each element [B]: 1, 2, 4, 8 or 16.
    granule_bytes : int, optional
        Transfer granularity [B], 1 to 4096.

    Returns
    -------
    int
        Bytes moved [B], a whole number of granules.

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> strided_read_bytes(1024, 1)  # contiguous: exactly the useful bytes
    4096
    >>> strided_read_bytes(1024, 2)  # stride 2: twice
    8192
    """
    n = _int("n_elems", n_elems, minimum=1, maximum=MAX_INDEX)
    s = _int("stride_elems", stride_elems, minimum=1, maximum=MAX_INDEX)
    e = _elem_bytes(elem_bytes)
    g = _int("granule_bytes", granule_bytes, minimum=1, maximum=MAX_GRANULE_BYTES)
    full, rest = divmod(n, WARP_SIZE)
    per_warp = warp_load_sectors(s, e, 0, sector_bytes=g)
    total = full * per_warp
    if rest:
        addr = np.arange(rest, dtype=np.int64) * s * e
        total += len(set((addr // g).tolist()) | set(((addr + e - 1) // g).tolist()))
    return total * g


def strided_read_time_s(
    n_elems: int, stride_elems: int, bytes_per_s: float, elem_bytes: int = 4, *, granule_bytes: int = SECTOR_BYTES
) -> float:
    """Time to read strided elements when memory moves whole granules at a given bandwidth.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    n_elems : int
        Elements read [elements], >= 1.
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 1.
    bytes_per_s : float
        Bandwidth of the memory level [B/s], > 0.
    elem_bytes : int, optional
        Width of each element [B]: 1, 2, 4, 8 or 16.
    granule_bytes : int, optional
        Transfer granularity [B], 1 to 4096.

    Returns
    -------
    float
        ``strided_read_bytes(...) / bytes_per_s`` [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> strided_read_time_s(1024, 2, 8192.0)
    1.0
    """
    bw = _quantity("bytes_per_s", bytes_per_s)
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

    Explained in :ref:`memory_hierarchy` > Shared memory and bank conflicts.

    Parameters
    ----------
    byte_addresses : sequence of int
        The 32 lanes' byte addresses [B], each >= 0 and a multiple of ``elem_bytes``.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.

    Returns
    -------
    int
        Wavefronts [-].

    Raises
    ------
    ValueError
        If there are not 32 integer addresses, one is misaligned or out of range, or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> shared_wavefronts([4 * i for i in range(32)]), shared_wavefronts([128 * i for i in range(32)])
    (1, 32)
    """
    e = _elem_bytes(elem_bytes)
    if isinstance(byte_addresses, (str, bytes)) or not hasattr(byte_addresses, "__len__"):
        raise ValueError(
            f"byte_addresses must be a sequence of {WARP_SIZE} integer byte addresses, got {byte_addresses!r}"
        )
    flat = (
        np.asarray(byte_addresses, dtype=object).ravel().tolist()
        if isinstance(byte_addresses, np.ndarray)
        else list(byte_addresses)
    )
    if len(flat) != WARP_SIZE:
        raise ValueError(f"byte_addresses must hold {WARP_SIZE} addresses, got {len(flat)}")
    addrs = [_int(f"byte_addresses[{i}]", a, minimum=0, maximum=MAX_INDEX) for i, a in enumerate(flat)]
    if any(a % e for a in addrs):
        raise ValueError(f"byte_addresses must be >= 0 and aligned to elem_bytes={e}, got {flat!r}")
    addr = np.asarray(addrs, dtype=np.int64)
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
    """Shared-memory wavefronts for one warp-wide access with a lane stride.

    Lane ``i`` reads element ``i * stride_elems``. Counted as Nsight Compute counts them: 1 is
    conflict-free for 4-byte data, 2 for 8-byte, 4 for 16-byte.

    Explained in :ref:`memory_hierarchy` > Shared memory and bank conflicts.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.

    Returns
    -------
    int
        Wavefronts [-].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> bank_conflict_wavefronts(1), bank_conflict_wavefronts(2), bank_conflict_wavefronts(32)
    (1, 2, 32)
    >>> bank_conflict_wavefronts(33)  # padding a 32-wide row by one word removes the conflict
    1
    """
    s = _int("stride_elems", stride_elems, minimum=0, maximum=MAX_INDEX)
    e = _elem_bytes(elem_bytes)
    return shared_wavefronts(np.arange(WARP_SIZE, dtype=np.int64) * s * e, e)


def ideal_wavefronts(elem_bytes: int = 4) -> int:
    """The fewest wavefronts a warp-wide shared-memory access of this width can take.

    Explained in :ref:`memory_hierarchy` > Shared memory and bank conflicts.

    Parameters
    ----------
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.

    Returns
    -------
    int
        1, 1, 1, 2 or 4 wavefronts [-].

    Raises
    ------
    ValueError
        If ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> [ideal_wavefronts(e) for e in (1, 2, 4, 8, 16)]
    [1, 1, 1, 2, 4]
    """
    e = _elem_bytes(elem_bytes)
    return max(1, (WARP_SIZE * e) // (SMEM_BANKS * SMEM_BANK_BYTES))


def swizzled_column_wavefronts(row_elems: int = 32, column: int = 0, elem_bytes: int = 4) -> tuple[int, int]:
    """Wavefronts to read one column of a shared tile, without and with an element-wise XOR swizzle.

    The tile is ``32 x row_elems``; the swizzle stores element ``(r, c)`` at column
    ``c ^ (r % row_elems)``. This is a software swizzle at the granularity of one element, as
    hand-written transposes of fp32 tiles use. The hardware's (TMA) swizzle modes and CuTe's GMMA
    layouts permute 16-byte chunks instead: see :func:`tma_swizzle_offset`.

    Explained in :ref:`memory_hierarchy` > Shared memory and bank conflicts.

    Parameters
    ----------
    row_elems : int, optional
        Row length of the tile [elements]: a power of two >= 32.
    column : int, optional
        The column read [-], 0 to ``row_elems - 1``.
    elem_bytes : int, optional
        Width of each element [B]: 1, 2, 4, 8 or 16.

    Returns
    -------
    plain : int
        Wavefronts without the swizzle [-].
    swizzled : int
        Wavefronts with the swizzle [-].

    Raises
    ------
    ValueError
        If ``row_elems`` is not a power of two >= 32 or another input is out of range.

    Examples
    --------
    >>> swizzled_column_wavefronts(32)
    (32, 1)
    """
    n = _int("row_elems", row_elems, minimum=WARP_SIZE, maximum=2**20)
    if n & (n - 1):
        raise ValueError(f"row_elems must be a power of two >= 32 for an XOR swizzle, got {row_elems!r}")
    c = _int("column", column, minimum=0, maximum=n - 1)
    e = _elem_bytes(elem_bytes)
    rows = np.arange(WARP_SIZE, dtype=np.int64)
    plain = (rows * n + c) * e
    swizzled = (rows * n + (c ^ rows)) * e
    return shared_wavefronts(plain, e), shared_wavefronts(swizzled, e)


def _swizzle_mode(swizzle_bytes) -> int:
    # the type first: comparing an array with 0 would raise numpy's "truth value is ambiguous"
    if isinstance(swizzle_bytes, (int, np.integer)) and not isinstance(swizzle_bytes, bool) and swizzle_bytes == 0:
        return 0
    if (
        isinstance(swizzle_bytes, bool)
        or not isinstance(swizzle_bytes, (int, np.integer))
        or int(swizzle_bytes) not in SWIZZLE_MODES
    ):
        raise ValueError(f"swizzle_bytes must be one of 0 (none), 32, 64 or 128, got {swizzle_bytes!r}")
    return int(swizzle_bytes)


def tma_swizzle_offset(byte_offset: int, swizzle_bytes: int = 128) -> int:
    """Where the TMA's swizzle puts the byte at ``byte_offset`` of a shared-memory tile.

    The swizzle permutes **16-byte chunks**, never single elements: within each
    ``swizzle_bytes`` span (32, 64 or 128 B), the chunk index (address bits 4 and up) is XORed
    with the row index taken from bits 7 and up, so the pattern repeats every 8 rows of
    128 B for the 128-byte mode. This is CuTe's ``Swizzle<B, 4, 3>`` with ``B = log2(swizzle_bytes
    / 16)`` (``Swizzle<3,4,3>`` for 128 B), the layout Hopper's ``wgmma`` reads (CUTLASS
    ``cute/atom/mma_traits_sm90_gmma.hpp``; CUDA C++ Programming Guide, TMA swizzle: "swizzle
    16B chunks within a 128B span"). The 16 bytes inside a chunk keep their order.

    Explained in :ref:`memory_hierarchy` > Calculator: the TMA swizzle.

    Parameters
    ----------
    byte_offset : int
        Offset of the byte in the unswizzled tile [B], >= 0.
    swizzle_bytes : int, optional
        Swizzle mode [B]: 0 (none), 32, 64 or 128.

    Returns
    -------
    int
        Offset of the byte in the swizzled tile [B].

    Raises
    ------
    ValueError
        If ``byte_offset`` is not an integer in range or ``swizzle_bytes`` is not a mode.

    Examples
    --------
    >>> [tma_swizzle_offset(128 * r) for r in range(8)]  # chunk 0 of rows 0..7
    [0, 144, 288, 432, 576, 720, 864, 1008]
    >>> tma_swizzle_offset(128 + 5)  # byte 5 of that chunk stays byte 5 of the moved chunk
    149
    """
    o = _int("byte_offset", byte_offset, minimum=0, maximum=MAX_INDEX)
    mode = _swizzle_mode(swizzle_bytes)
    if mode == 0:
        return o
    mask = mode // SWIZZLE_CHUNK_BYTES - 1  # 1, 3 or 7: how many chunk bits are permuted
    return o ^ (((o >> 7) & mask) << 4)


def tma_column_wavefronts(swizzle_bytes: int = 128, row_bytes: int | None = None, chunk: int = 0) -> int:
    """Wavefronts for a warp reading one 16-byte chunk of each row of a TMA-swizzled tile.

    Lane ``i`` reads chunk number ``chunk`` of row ``i`` of a shared tile whose rows are
    ``row_bytes`` wide, laid out by the TMA with ``swizzle_bytes`` (0 = none). This is the access
    pattern of ``ldmatrix`` on a tile of 16-bit values. The ideal for 16-byte accesses is 4
    wavefronts (a quarter-warp per pass). The TMA requires a swizzled box's inner dimension to fit
    in the swizzle span (``cuTensorMapEncodeTiled``), so ``row_bytes <= swizzle_bytes`` when
    swizzling.

    Explained in :ref:`memory_hierarchy` > Calculator: the TMA swizzle.

    Parameters
    ----------
    swizzle_bytes : int, optional
        Swizzle mode [B]: 0 (none), 32, 64 or 128.
    row_bytes : int or None, optional
        Row width of the tile [B], a multiple of 16 from 16 to 1024; default the swizzle span
        (128 B without swizzle).
    chunk : int, optional
        The 16-byte chunk each lane reads [-], 0 to ``row_bytes / 16 - 1``.

    Returns
    -------
    int
        Wavefronts [-].

    Raises
    ------
    ValueError
        If an input is out of range, or ``row_bytes`` exceeds the swizzle span.

    Examples
    --------
    >>> [tma_column_wavefronts(0, 128), tma_column_wavefronts(128)]  # 8-way conflict, then none
    [32, 4]
    >>> [tma_column_wavefronts(0, 64), tma_column_wavefronts(64)]
    [16, 4]
    """
    mode = _swizzle_mode(swizzle_bytes)
    default_row = mode or 128
    r = default_row if row_bytes is None else _int("row_bytes", row_bytes, minimum=16, maximum=1024)
    if r % SWIZZLE_CHUNK_BYTES:
        raise ValueError(f"row_bytes must be a multiple of {SWIZZLE_CHUNK_BYTES}, got {row_bytes!r}")
    if mode and r > mode:
        raise ValueError(
            f"row_bytes must be <= swizzle_bytes={mode} (the TMA's inner box dimension fits the span), got {row_bytes!r}"
        )
    c = _int("chunk", chunk, minimum=0, maximum=r // SWIZZLE_CHUNK_BYTES - 1)
    addrs = [tma_swizzle_offset(r * lane + SWIZZLE_CHUNK_BYTES * c, mode) for lane in range(WARP_SIZE)]
    return shared_wavefronts(addrs, SWIZZLE_CHUNK_BYTES)


def smem_bytes_per_s(sms: int, clock_hz: float) -> float:
    """Aggregate shared-memory bandwidth from first principles.

    32 banks x 4 B per clock per SM x SMs x clock.

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    sms : int
        Streaming multiprocessors [-], >= 1.
    clock_hz : float
        SM clock [Hz], > 0.

    Returns
    -------
    float
        Shared-memory bandwidth of the whole GPU [B/s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(smem_bytes_per_s(132, 1.98e9) / 1e12, 1)  # H100/H200 SXM
    33.5
    """
    n = _int("sms", sms, minimum=1, maximum=MAX_SMS)
    f = _quantity("clock_hz", clock_hz)
    return SMEM_BANKS * SMEM_BANK_BYTES * n * f


# PCIe line coding: generations 1 and 2 send 10 bits per byte (8b/10b), generations 3 to 5 130 bits
# per 128 (128b/130b) (PCI Express Base Specification 3.0, section 4.2.2; unchanged in 4.0 and 5.0).
PCIE_ENCODING_EFFICIENCY = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130}


def pcie_encoded_bytes_per_s(raw_bytes_per_s: float, pcie_gen: int) -> float:
    """The data rate of a PCIe link after its line coding, from the raw rate (transfers x lanes / 8).

    The catalog's ``host_bytes_per_s`` is the raw rate per direction (64 GB/s for PCIe 5.0 x16);
    the line code takes its share before any packet overhead (TLP headers, flow control), which
    this function does not count.

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    raw_bytes_per_s : float
        Raw link rate per direction [B/s], > 0.
    pcie_gen : int
        PCIe generation [-], 1 to 5 (PCIe 6.0's FLIT mode codes differently and is not modelled).

    Returns
    -------
    float
        Rate after the line coding [B/s].

    Raises
    ------
    ValueError
        If ``raw_bytes_per_s`` is not positive or ``pcie_gen`` is not 1 to 5.

    Examples
    --------
    >>> round(pcie_encoded_bytes_per_s(64e9, 5) / 1e9, 1)  # PCIe 5.0 x16
    63.0
    """
    raw = _quantity("raw_bytes_per_s", raw_bytes_per_s)
    gen = _int("pcie_gen", pcie_gen, minimum=1, maximum=5)
    return raw * PCIE_ENCODING_EFFICIENCY[gen]


# --------------------------------------------------------------------------------------------
# Tiling
# --------------------------------------------------------------------------------------------
def tiled_matmul_global_bytes(m: int, n: int, k: int, tile: int, elem_bytes: int = 4) -> int:
    """Global-memory traffic of a square-tiled matmul ``C[m,n] = A[m,k] B[k,n]``.

    Each ``tile x tile`` block of C is computed from shared-memory tiles: every A element is loaded
    ``ceil(n/tile)`` times, every B element ``ceil(m/tile)`` times, C stored once. These are the
    bytes the SMs request from the memory system (global loads and stores), not the bytes HBM
    delivers: the L2 serves re-reads of a tile that another thread block fetched recently, so HBM
    traffic lies between :func:`matmul_compulsory_bytes` and this figure.

    Explained in :ref:`memory_hierarchy` > Tiling: re-use what you fetched.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [elements], >= 1.
    tile : int
        Edge of the square tile [elements], >= 1.
    elem_bytes : int, optional
        Bytes per element [B], 1 to 16.

    Returns
    -------
    int
        Bytes loaded and stored [B].

    Raises
    ------
    ValueError
        If an input is not an integer in range.

    Examples
    --------
    >>> tiled_matmul_global_bytes(1024, 1024, 1024, 1, 4) // 2**20  # no reuse: 2*M*N*K loads
    8196
    """
    m_ = _int("m", m, minimum=1, maximum=MAX_DIM)
    n_ = _int("n", n, minimum=1, maximum=MAX_DIM)
    k_ = _int("k", k, minimum=1, maximum=MAX_DIM)
    t = _int("tile", tile, minimum=1, maximum=MAX_DIM)
    e = _int("elem_bytes", elem_bytes, minimum=1, maximum=16)
    reads = m_ * k_ * -(-n_ // t) + k_ * n_ * -(-m_ // t)
    return (reads + m_ * n_) * e


def matmul_compulsory_bytes(m: int, n: int, k: int, elem_bytes: int = 4) -> int:
    """The least HBM traffic of ``C[m,n] = A[m,k] B[k,n]``: A and B read once, C written once.

    This is what remains when a cache absorbs every re-read.

    Explained in :ref:`memory_hierarchy` > Tiling: re-use what you fetched.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [elements], >= 1.
    elem_bytes : int, optional
        Bytes per element [B], 1 to 16.

    Returns
    -------
    int
        ``(m*k + k*n + m*n) * elem_bytes`` [B].

    Raises
    ------
    ValueError
        If an input is not an integer in range.

    Examples
    --------
    >>> matmul_compulsory_bytes(1024, 1024, 1024, 2) // 2**20  # three 2 MiB bf16 matrices
    6
    """
    m_ = _int("m", m, minimum=1, maximum=MAX_DIM)
    n_ = _int("n", n, minimum=1, maximum=MAX_DIM)
    k_ = _int("k", k, minimum=1, maximum=MAX_DIM)
    e = _int("elem_bytes", elem_bytes, minimum=1, maximum=16)
    return (m_ * k_ + k_ * n_ + m_ * n_) * e


def working_set_bytes_per_s(ws_bytes, cache_bytes: float, cache_bytes_per_s: float, mem_bytes_per_s: float):
    """Idealized bandwidth of re-reading a working set that partly fits a cache.

    A fraction ``min(1, cache_bytes / ws_bytes)`` of the bytes hits the cache, the rest comes from
    memory; the time per byte is the weighted sum of the two levels' times per byte.

    Explained in :ref:`memory_hierarchy` > 2. The L2-to-HBM cliff.

    Parameters
    ----------
    ws_bytes : float or array_like of float
        Working-set size [B]: a number or a 1-D array, every value > 0.
    cache_bytes : float
        Cache capacity [B], > 0.
    cache_bytes_per_s : float
        Bandwidth when the bytes come from the cache [B/s], > 0.
    mem_bytes_per_s : float
        Bandwidth when they come from memory [B/s], > 0.

    Returns
    -------
    float or numpy.ndarray
        Effective bandwidth [B/s]: a float for a scalar ``ws_bytes``, an array otherwise.

    Raises
    ------
    ValueError
        If an input is not positive and finite.

    Examples
    --------
    >>> working_set_bytes_per_s(2.0, 1.0, 10.0, 1.0)  # half from each level
    1.8181818181818181
    """
    ws, scalar = _positive_array("ws_bytes", ws_bytes)
    c = _quantity("cache_bytes", cache_bytes)
    cb = _quantity("cache_bytes_per_s", cache_bytes_per_s)
    mb = _quantity("mem_bytes_per_s", mem_bytes_per_s)
    hit = np.minimum(1.0, c / ws)
    return _out(1.0 / (hit / cb + (1 - hit) / mb), scalar)


def bank_loads(stride_elems: int, elem_bytes: int = 4) -> np.ndarray:
    """Distinct 4-byte words each of the 32 banks must deliver for one warp-wide strided access.

    Lane ``i`` reads element ``i * stride_elems``; for 8- and 16-byte accesses the words are summed
    over the warp's half- or quarter-warp groups.

    Explained in :ref:`memory_hierarchy` > Shared memory and bank conflicts.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.

    Returns
    -------
    numpy.ndarray
        32 counts of words, one per bank [-].

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> bank_loads(32)[:3].tolist()  # every lane in bank 0
    [32, 0, 0]
    """
    s = _int("stride_elems", stride_elems, minimum=0, maximum=MAX_INDEX)
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
    """Useful bytes in each 32-byte sector one warp-wide load touches.

    Explained in :ref:`memory_hierarchy` > Coalescing: what a warp's 32 addresses turn into.

    Parameters
    ----------
    stride_elems : int
        Distance between consecutive lanes' elements [elements], >= 0.
    elem_bytes : int, optional
        Width of each lane's access [B]: 1, 2, 4, 8 or 16.
    offset_elems : int, optional
        Where lane 0 starts [elements], >= 0.

    Returns
    -------
    dict
        ``{sector index: useful bytes [B]}``, in sector order.

    Raises
    ------
    ValueError
        If an input is not an integer in range or ``elem_bytes`` is not a load width.

    Examples
    --------
    >>> sector_usage(2)[0]  # every other float: 16 of 32 bytes used
    16
    """
    addr = warp_addresses(stride_elems, elem_bytes, offset_elems)
    e = int(elem_bytes)
    used: dict[int, set] = {}
    for a in addr.tolist():
        for byte in range(a, a + e):
            used.setdefault(byte // SECTOR_BYTES, set()).add(byte)
    return {sector: len(b) for sector, b in sorted(used.items())}


@dataclass(frozen=True)
class RooflinePoint:
    """Where a kernel of a given intensity sits on one GPU's roofline for one dtype.

    Attributes
    ----------
    gpu : str
        Catalog name of the GPU.
    dtype : str
        The dtype of the peak.
    intensity : float
        The kernel's arithmetic intensity [FLOP/B].
    peak_flop_per_s : float
        Dense peak [FLOP/s].
    bytes_per_s : float
        HBM bandwidth [B/s].
    ridge_intensity : float
        Ridge point [FLOP/B].
    attainable_flop_per_s : float
        The roofline at ``intensity`` [FLOP/s].
    bound : str
        ``"memory"`` or ``"compute"``.
    """

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
    """Where a kernel of a given intensity sits on a catalog GPU's HBM roofline for one dtype.

    The peak is the dense peak of :mod:`widgets.hardware`'s record of ``gpu``.

    Explained in :ref:`memory_hierarchy` > Arithmetic intensity and the roofline.

    Parameters
    ----------
    gpu : str
        A catalog GPU name (``widgets.hardware.gpu_names()``), case-insensitive.
    dtype : str
        A dtype with a peak for that GPU, e.g. ``"bf16"``.
    intensity : float
        Arithmetic intensity of the kernel [FLOP/B], > 0.

    Returns
    -------
    RooflinePoint
        Peak, bandwidth, ridge, attainable rate and the bound (``"memory"`` or ``"compute"``).

    Raises
    ------
    ValueError
        If ``gpu`` or ``dtype`` is unknown or ``intensity`` is not positive.

    Examples
    --------
    >>> p = roofline_point("H200-SXM", "bf16", 10)
    >>> p.bound, round(p.ridge_intensity)
    ('memory', 206)
    """
    from ..hardware import get_gpu, gpu_names

    if not isinstance(gpu, str) or gpu.lower() not in {n.lower() for n in gpu_names()}:
        raise ValueError(f"gpu must be one of {', '.join(gpu_names())}; got {gpu!r}")
    g = get_gpu(gpu)
    if not isinstance(dtype, str) or dtype.lower() not in g.peak_flop_per_s:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, g.peak_flop_per_s))} for {g.name}; got {dtype!r}")
    i = _quantity("intensity", intensity)
    peak = g.peak(dtype)
    bw = g.hbm_bytes_per_s
    attain = attainable_flop_per_s(i, peak, bw)
    ridge = ridge_intensity(peak, bw)
    return RooflinePoint(g.name, dtype.lower(), i, peak, bw, ridge, attain, "memory" if i < ridge else "compute")


# --------------------------------------------------------------------------------------------
# Kernel fusion (explained in :ref:`memory_hierarchy` > Kernel fusion)
# --------------------------------------------------------------------------------------------
MAX_CHAIN_OPS = 4096  # longest elementwise chain the fusion model accepts


@dataclass(frozen=True)
class FusionEstimate:
    """Bytes and time of an elementwise chain run eagerly (one kernel per op) and fused (one kernel)."""

    n_elems: int
    n_ops: int
    eager_bytes: int
    fused_bytes: int
    eager_s: float
    fused_s: float
    eager_launches: int
    fused_launches: int

    @property
    def speedup(self) -> float:
        """Eager time over fused time."""
        return self.eager_s / self.fused_s


def elementwise_chain_bytes(n_elems: int, n_ops: int, elem_bytes: int = 4, *, fused: bool = False) -> int:
    """HBM bytes of a chain of ``n_ops`` unary elementwise ops (scalar operands) on ``n_elems`` elements.

    Eager execution (one kernel per op, as PyTorch runs ``gelu(x * a + b) * c``) reads its input
    and writes its output once per op: ``n_ops x 2 x n_elems x elem_bytes``. A fused kernel keeps
    the intermediates in registers: one read and one write, ``2 x n_elems x elem_bytes``, whatever
    the chain's length.

    Explained in :ref:`memory_hierarchy` > Kernel fusion: the main lever for memory-bound work.

    Parameters
    ----------
    n_elems : int
        Elements of the tensor [elements], >= 1.
    n_ops : int
        Ops in the chain [-], 1 to 4096.
    elem_bytes : int
        Bytes per element [B]: 1, 2, 4, 8 or 16.
    fused : bool
        True for one fused kernel, False for one kernel per op.

    Returns
    -------
    int
        Bytes read plus bytes written [B].

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> elementwise_chain_bytes(2**20, 4) // 2**20, elementwise_chain_bytes(2**20, 4, fused=True) // 2**20
    (32, 8)
    """
    n = _int("n_elems", n_elems, minimum=1, maximum=MAX_INDEX)
    k = _int("n_ops", n_ops, minimum=1, maximum=MAX_CHAIN_OPS)
    e = _elem_bytes(elem_bytes)
    if not isinstance(fused, (bool, np.bool_)):
        raise ValueError(f"fused must be True or False, got {fused!r}")
    return 2 * n * e * (1 if fused else k)


def fusion_estimate(
    n_elems: int, n_ops: int, bytes_per_s: float, elem_bytes: int = 4, *, launch_s: float = 0.0
) -> FusionEstimate:
    """Time of an elementwise chain eager and fused: bytes over bandwidth plus a fixed cost per launch.

    Each kernel is memory-bound (an elementwise op performs a few FLOP per element, far below the
    ridge point), so its time is ``bytes / bytes_per_s + launch_s``. Adding the launches to the
    byte time is an upper bound: launches are asynchronous, so the host prepares the next kernel
    while one runs and the eager time lies between ``max(k launches, first launch + bytes /
    bandwidth)`` and this sum (the two differ most, up to about 2x, where the launch and byte
    times are equal; at large or small tensors one term dominates). Explained in
    :ref:`memory_hierarchy` > Kernel fusion: the main lever for memory-bound work.

    Parameters
    ----------
    n_elems : int
        Elements of the tensor [elements], >= 1.
    n_ops : int
        Ops in the chain [-], 1 to 4096.
    bytes_per_s : float
        Memory bandwidth [B/s], > 0: the datasheet's (a prediction) or a measured copy's (calibrated).
    elem_bytes : int
        Bytes per element [B]: 1, 2, 4, 8 or 16.
    launch_s : float
        Fixed cost of one kernel launch [s], >= 0 (0: bandwidth only).

    Returns
    -------
    FusionEstimate
        Bytes [B], times [s] and launches of both ways; ``speedup`` = eager / fused.

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> f = fusion_estimate(2**28, 4, 4.8e12)  # 1 GiB of fp32, four ops, H200 datasheet bandwidth
    >>> round(f.eager_s * 1e3, 3), round(f.fused_s * 1e3, 3), f.speedup
    (1.79, 0.447, 4.0)
    """
    eager = elementwise_chain_bytes(n_elems, n_ops, elem_bytes)
    fused = elementwise_chain_bytes(n_elems, n_ops, elem_bytes, fused=True)
    bw = _quantity("bytes_per_s", bytes_per_s)
    launch = _quantity("launch_s", launch_s, allow_zero=True)
    k = int(n_ops)
    return FusionEstimate(int(n_elems), k, eager, fused, eager / bw + k * launch, fused / bw + launch, k, 1)


# --------------------------------------------------------------------------------------------
# Matrix transpose (explained in :ref:`memory_hierarchy` > The matrix transpose)
# --------------------------------------------------------------------------------------------
TRANSPOSE_TILE = 32  # tile edge: one warp spans a tile row
TRANSPOSE_KINDS = ("copy", "copy_ilp", "naive", "naive_read", "tiled", "padded", "swizzled")


@dataclass(frozen=True)
class TransposeCost:
    """What one kernel moving an ``n x n`` matrix costs at each level, and the time each level needs."""

    kind: str
    n: int
    hbm_bytes: int  # compulsory DRAM traffic: every element read once and written once
    l2_bytes: int  # bytes of the 32-byte sectors the SMs' loads and stores request from the L2
    smem_wavefronts: int  # shared-memory passes of the whole kernel (0 without shared memory)
    hbm_s: float
    l2_s: float
    smem_s: float

    @property
    def time_s(self) -> float:
        """The slowest level's time [s] (the levels overlap)."""
        return max(self.hbm_s, self.l2_s, self.smem_s)

    @property
    def bound(self) -> str:
        """The level that sets the time, ``"HBM"``, ``"L2"`` or ``"shared memory"``."""
        return max((self.hbm_s, "HBM"), (self.l2_s, "L2"), (self.smem_s, "shared memory"))[1]


def transpose_tile_wavefronts(kind: str, row: int = 5, column: int = 7) -> tuple[int, int]:
    """Shared-memory wavefronts of a transpose tile's row store and column load [-].

    One warp stores a row of the 32 x 32 fp32 tile, one warp loads a column of it, as the
    ``tiled``, ``padded`` and ``swizzled`` transposes lay it out. Lane ``i`` stores element
    ``(row, i)`` and loads element ``(i, column)``. ``tiled``: rows of 32 words; ``padded``: rows
    of 33; ``swizzled``: rows of 32 with element ``(r, c)`` at column ``c XOR r``. The counts
    follow :func:`shared_wavefronts` (32 banks of 4 B) and do not depend on which row or column.
    Explained in :ref:`memory_hierarchy` > The matrix transpose.

    Parameters
    ----------
    kind : str
        ``"tiled"``, ``"padded"`` or ``"swizzled"``.
    row : int
        Tile row the storing warp writes [-], 0 to 31.
    column : int
        Tile column the loading warp reads [-], 0 to 31.

    Returns
    -------
    store : int
        Wavefronts of the row store [-].
    load : int
        Wavefronts of the column load [-].

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> [transpose_tile_wavefronts(k) for k in ("tiled", "padded", "swizzled")]
    [(1, 32), (1, 1), (1, 1)]
    """
    if not isinstance(kind, str) or kind.lower() not in ("tiled", "padded", "swizzled"):
        raise ValueError(f"kind must be one of tiled, padded, swizzled, got {kind!r}")
    k = kind.lower()
    r = _int("row", row, minimum=0, maximum=TRANSPOSE_TILE - 1)
    c = _int("column", column, minimum=0, maximum=TRANSPOSE_TILE - 1)
    width = TRANSPOSE_TILE + (1 if k == "padded" else 0)
    lanes = range(WARP_SIZE)

    def col(rr, cc):
        return cc ^ rr if k == "swizzled" else cc

    store = [(r * width + col(r, i)) * 4 for i in lanes]
    load = [(i * width + col(i, c)) * 4 for i in lanes]
    return shared_wavefronts(store, 4), shared_wavefronts(load, 4)


def transpose_cost(
    n: int,
    kind: str,
    hbm_bytes_per_s: float,
    l2_bytes_per_s: float,
    sms: int,
    clock_hz: float,
    elem_bytes: int = 4,
) -> TransposeCost:
    """Bytes, shared-memory wavefronts and time of transposing an ``n x n`` row-major matrix.

    Every warp covers 32 consecutive columns of one row of a 32 x 32 tile (CUDA C++ Best
    Practices Guide, "Shared Memory in Matrix Multiplication"; NVIDIA's transpose example):

    - ``copy``: reads and writes one row of 32 elements per warp: both coalesced; ``copy_ilp`` is the
      same copy with its loads issued before its stores (the model does not see the difference);
    - ``naive``: ``out[x, y] = in[y, x]``: coalesced reads, but each warp's 32 writes land ``n``
      elements apart, one sector per lane (:func:`warp_load_sectors` with stride ``n``);
    - ``naive_read``: ``out[y, x] = in[x, y]``, the control: strided reads (one sector per lane),
      coalesced writes. The model charges the L2 every read sector, as if the L1 kept none of
      them; the other rows of the block read the rest of each sector, so an L1 that keeps them
      makes this kernel faster than the model (that is what measuring it tests);
    - ``tiled``: the tile is staged in shared memory, so both global accesses are coalesced;
      writing a tile row is conflict-free, reading a tile column has stride 32: a 32-way bank
      conflict (:func:`bank_conflict_wavefronts`);
    - ``padded``: the same with rows of 33 elements: the column read is conflict-free;
    - ``swizzled``: the same 32 x 32 tile, element ``(r, c)`` stored at column ``c XOR r``:
      conflict-free without the padding's extra memory (:func:`transpose_tile_wavefronts`).

    The model's HBM moves ``2 n^2 e`` bytes in every case: it assumes the L2 merges the partial
    sectors of one tile's writes before they reach DRAM. That is a lower bound: partial sectors
    evicted before they are complete cost DRAM more (the naive kernel's counted DRAM bytes exceed
    it), and a kernel's last dirty lines may still sit in the L2 when it ends (counted writes a
    little under it). The L2 sees whole sectors; the shared-memory pipe of each SM
    passes one wavefront per clock. The levels overlap, so the time is the slowest level's.
    Explained in :ref:`memory_hierarchy` > The matrix transpose.

    Parameters
    ----------
    n : int
        Rows = columns of the matrix [elements], a multiple of 32, 32 to 2**20.
    kind : str
        ``"copy"``, ``"copy_ilp"``, ``"naive"``, ``"naive_read"``, ``"tiled"``, ``"padded"`` or
        ``"swizzled"``.
    hbm_bytes_per_s : float
        HBM bandwidth [B/s], > 0.
    l2_bytes_per_s : float
        L2 bandwidth for the SMs' sectors [B/s], > 0.
    sms : int
        Streaming multiprocessors [-], >= 1.
    clock_hz : float
        SM clock [Hz], > 0.
    elem_bytes : int
        Bytes per element [B]: 4 (the model's bank rules assume 4-byte elements).

    Returns
    -------
    TransposeCost
        Bytes [B], wavefronts and per-level times [s]; ``time_s`` and ``bound``.

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> c = transpose_cost(1024, "naive", 4.8e12, 9.6e12, 132, 1.98e9)
    >>> c.l2_bytes // (1024 * 1024 * 4)  # 1 x for the reads, 8 x for the stride-n writes
    9
    >>> transpose_cost(1024, "tiled", 4.8e12, 9.6e12, 132, 1.98e9).smem_wavefronts // (1024 * 1024 // 32)
    33
    """
    n_ = _int("n", n, minimum=TRANSPOSE_TILE, maximum=2**20)
    if n_ % TRANSPOSE_TILE:
        raise ValueError(f"n must be a multiple of {TRANSPOSE_TILE}, got {n!r}")
    if not isinstance(kind, str) or kind.lower() not in TRANSPOSE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(TRANSPOSE_KINDS)}, got {kind!r}")
    k = kind.lower()
    hbm = _quantity("hbm_bytes_per_s", hbm_bytes_per_s)
    l2 = _quantity("l2_bytes_per_s", l2_bytes_per_s)
    s = _int("sms", sms, minimum=1, maximum=MAX_SMS)
    f = _quantity("clock_hz", clock_hz)
    e = _int("elem_bytes", elem_bytes, minimum=4, maximum=4)
    warps = n_ * n_ // WARP_SIZE  # warp-wide accesses per direction (read or write)
    coalesced = warp_load_sectors(1, e)
    write_sectors = warp_load_sectors(n_, e) if k == "naive" else coalesced
    read_sectors = warp_load_sectors(n_, e) if k == "naive_read" else coalesced
    l2_bytes = warps * (read_sectors + write_sectors) * SECTOR_BYTES
    smem = warps * sum(transpose_tile_wavefronts(k)) if k in ("tiled", "padded", "swizzled") else 0
    hbm_bytes = 2 * n_ * n_ * e
    return TransposeCost(k, n_, hbm_bytes, l2_bytes, smem, hbm_bytes / hbm, l2_bytes / l2, smem / (s * f))


# --------------------------------------------------------------------------------------------
# Bytes in flight: Little's law, asynchronous copies (explained in :ref:`memory_hierarchy` >
# Asynchronous copies and bytes in flight)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BytesInFlight:
    """What it takes to keep a memory busy: Little's law per SM, and two ways to provide it."""

    needed_per_sm_bytes: float  # bandwidth x latency / SMs
    register_path_bytes: float  # warps x 32 lanes x bytes per load x independent loads per thread
    stages_needed: int  # asynchronous-copy stages of ``stage_bytes`` each that cover the need
    stage_bytes: int
    smem_per_sm_bytes: int

    @property
    def register_fraction(self) -> float:
        """Share of the needed bytes in flight that plain loads into registers provide (capped at 1)."""
        return min(1.0, self.register_path_bytes / self.needed_per_sm_bytes)

    @property
    def stages_fit(self) -> bool:
        """Whether the stages fit in the SM's shared memory."""
        return self.stages_needed * self.stage_bytes <= self.smem_per_sm_bytes


def littles_law_bytes_in_flight(bytes_per_s: float, latency_s: float) -> float:
    """Little's law for memory: the bytes in flight that sustain a bandwidth at a latency [B].

    The bytes that must be requested and not yet returned to sustain ``bytes_per_s`` when each
    request takes ``latency_s``.

    Explained in :ref:`memory_hierarchy` > Asynchronous copies and bytes in flight.

    Parameters
    ----------
    bytes_per_s : float
        Bandwidth to sustain [B/s], > 0.
    latency_s : float
        Time from a load's issue to its data's arrival [s], > 0.

    Returns
    -------
    float
        Bytes in flight [B].

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> round(littles_law_bytes_in_flight(4.8e12, 600e-9) / 2**20, 2)  # H200 datasheet rate, 600 ns [MiB]
    2.75
    """
    bw = _quantity("bytes_per_s", bytes_per_s)
    lat = _quantity("latency_s", latency_s)
    return bw * lat


def bytes_in_flight(
    bytes_per_s: float,
    latency_s: float,
    sms: int,
    *,
    warps_per_sm: int = 64,
    load_bytes_per_thread: int = 16,
    loads_in_flight_per_thread: int = 1,
    stage_bytes: int = 32 * 1024,
    smem_per_sm_bytes: int = 228 * 1024,
) -> BytesInFlight:
    """Bytes in flight each SM needs, what plain loads provide, and how many async-copy stages do it.

    A load into registers holds its destination registers until the data returns, so the bytes a
    warp keeps in flight are its lanes' load widths times the independent loads it issues before
    using the first (instruction-level parallelism). ``cp.async`` and the TMA copy into shared
    memory instead: a kernel keeps ``stages`` buffers of ``stage_bytes`` in flight while it
    computes on another (double or multi-buffering), without registers. Explained in
    :ref:`memory_hierarchy` > Asynchronous copies and bytes in flight.

    Parameters
    ----------
    bytes_per_s : float
        Bandwidth to sustain [B/s], > 0.
    latency_s : float
        Memory latency under load [s], > 0.
    sms : int
        Streaming multiprocessors sharing the bandwidth [-], >= 1.
    warps_per_sm : int
        Resident warps per SM [-], 1 to 64.
    load_bytes_per_thread : int
        Width of each thread's load [B]: 1, 2, 4, 8 or 16.
    loads_in_flight_per_thread : int
        Independent loads each thread issues before it waits [-], 1 to 64.
    stage_bytes : int
        Bytes one asynchronous-copy stage moves per SM [B], 128 to 2**20.
    smem_per_sm_bytes : int
        Shared memory an SM can give the stages [B], >= 0.

    Returns
    -------
    BytesInFlight
        Needed bytes per SM [B], bytes plain loads provide [B], stages needed.

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> b = bytes_in_flight(4.8e12, 600e-9, 132)  # H200, 64 warps x 32 lanes x 16 B
    >>> round(b.needed_per_sm_bytes / 1024, 1), b.register_path_bytes / 1024, b.stages_needed
    (21.3, 32.0, 1)
    """
    need = littles_law_bytes_in_flight(bytes_per_s, latency_s) / _int("sms", sms, minimum=1, maximum=MAX_SMS)
    w = _int("warps_per_sm", warps_per_sm, minimum=1, maximum=64)
    lb = _int("load_bytes_per_thread", load_bytes_per_thread, minimum=1, maximum=16)
    if lb not in ELEM_BYTES:
        raise ValueError(f"load_bytes_per_thread must be one of {ELEM_BYTES}, got {load_bytes_per_thread!r}")
    ilp = _int("loads_in_flight_per_thread", loads_in_flight_per_thread, minimum=1, maximum=64)
    st = _int("stage_bytes", stage_bytes, minimum=128, maximum=2**20)
    smem = _int("smem_per_sm_bytes", smem_per_sm_bytes, minimum=0, maximum=2**30)
    return BytesInFlight(need, float(w * WARP_SIZE * lb * ilp), max(1, int(np.ceil(need / st))), st, smem)


# --------------------------------------------------------------------------------------------
# The L2 persistence window (explained in :ref:`memory_hierarchy` > The L2 persistence window)
# --------------------------------------------------------------------------------------------
def l2_persisting_hit_fraction(
    working_set_bytes: float, window_bytes: float, carveout_bytes: float, hit_ratio: float = 1.0
) -> float:
    """Idealized share of a re-read working set that stays in the L2's persisting carve-out.

    A ``cudaAccessPolicyWindow`` marks ``hit_ratio`` of the accesses to ``window_bytes`` (the
    part of the working set the window covers) as persisting; the carve-out
    (``cudaLimitPersistingL2CacheSize``, at most ``persistingL2CacheMaxSize``) keeps at most
    ``carveout_bytes`` of them. The CUDA C++ Programming Guide's rule of thumb sets
    ``hit_ratio = carveout / window`` when the window is the larger, so that the marked lines fit
    and do not thrash. Idealized: every byte kept is re-read from the L2, the rest from HBM.
    Explained in :ref:`memory_hierarchy` > L1, read-only data and the L2 persistence window.

    Parameters
    ----------
    working_set_bytes : float
        Bytes the kernel re-reads [B], > 0.
    window_bytes : float
        ``num_bytes`` of the access policy window [B], > 0.
    carveout_bytes : float
        L2 set aside for persisting accesses [B], >= 0.
    hit_ratio : float
        ``hitRatio`` of the window [-], in [0, 1].

    Returns
    -------
    float
        Fraction of the working set's bytes kept in the L2 [0-1].

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> l2_persisting_hit_fraction(64 * 2**20, 64 * 2**20, 48 * 2**20, hit_ratio=0.75)  # H100/H200 max
    0.75
    """
    ws = _quantity("working_set_bytes", working_set_bytes)
    win = _quantity("window_bytes", window_bytes)
    carve = _quantity("carveout_bytes", carveout_bytes, allow_zero=True)
    hr = _check.in_range("hit_ratio", hit_ratio, 0.0, 1.0)
    marked = hr * min(win, ws)
    return min(marked, carve) / ws


# --------------------------------------------------------------------------------------------
# Register spills (explained in :ref:`memory_hierarchy` > Register spills)
# --------------------------------------------------------------------------------------------
def spill_traffic_bytes(
    threads: int, spill_store_bytes: int, spill_load_bytes: int, executions_per_thread: int = 1
) -> int:
    """Local-memory bytes a kernel's register spills move [B].

    What ``ptxas -v`` reports per thread (``N bytes spill stores, M bytes spill loads``) times the
    threads and the times each thread runs that code (a spill inside a loop runs once per
    iteration).

    Local memory lives in device memory and is cached in L1 and L2: these bytes cost the L1's
    bandwidth while they hit there, and the L2's or HBM's when they do not. Explained in
    :ref:`memory_hierarchy` > Register spills.

    Parameters
    ----------
    threads : int
        Threads of the grid [-], >= 1.
    spill_store_bytes : int
        Spill stores per thread, as ``ptxas -v`` reports them [B], >= 0.
    spill_load_bytes : int
        Spill loads per thread [B], >= 0.
    executions_per_thread : int
        Times each thread runs the spilling code [-], >= 1.

    Returns
    -------
    int
        Bytes moved to and from local memory [B].

    Raises
    ------
    ValueError
        If an input is outside the range given above (the message names it).

    Examples
    --------
    >>> spill_traffic_bytes(132 * 2048, 8, 8, 1000) / 1e9  # 16 B per pass, 1000 passes, full H200
    4.325376
    """
    t = _int("threads", threads, minimum=1, maximum=MAX_INDEX)
    st = _int("spill_store_bytes", spill_store_bytes, minimum=0, maximum=2**20)
    ld = _int("spill_load_bytes", spill_load_bytes, minimum=0, maximum=2**20)
    ex = _int("executions_per_thread", executions_per_thread, minimum=1, maximum=2**40)
    return t * (st + ld) * ex
