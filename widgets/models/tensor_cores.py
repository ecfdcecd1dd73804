"""Tensor-core models: where a datasheet peak comes from, what a GEMM costs on a GPU made of
SMs (tiles, waves, memory), and how accurate each number format is.

Pure functions of physical quantities (standard library and numpy only). Every public function
rejects non-physical input with a ``ValueError`` naming the parameter, the value and what is valid.

Units are in the names: ``clock_hz`` [Hz], ``flop_per_clock_per_sm`` [FLOP per clock per SM],
``peak_flop_per_s`` [FLOP/s], ``bytes_per_s`` [B/s], ``time_s`` [s].

Sources of the per-SM rates (dense, FP32 accumulation):

- A100 (sm_80): 1024 dense FP16/BF16 FMA per clock per SM = 2048 FLOP; TF32 half of that; 64 FP32
  lanes per SM. NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), tensor-core section and
  Table 1.
- H100/H200 (sm_90): twice the A100 SM clock for clock (4096 dense FP16/BF16 FLOP per clock per SM),
  FP8 twice FP16, TF32 half; 128 FP32 lanes per SM. NVIDIA H100 Tensor Core GPU Architecture
  whitepaper (2022), SM section. No NVIDIA document prints the clock the tensor-core peaks assume:
  1830 MHz on the SXM5 board and 1620 MHz on the PCIe board are derived from the datasheet peaks
  (989.4 TFLOP/s / (132 x 4096) and 756.5 TFLOP/s / (114 x 4096); the catalog's
  ``datasheet_clock_hz``), below the 1980 MHz maximum boost, the commonly reported figure (the
  datasheet prints no clock), that the FP32 peak assumes. A peak rebuilt from a clock derived from
  it gives it back by construction (:attr:`PeakCheck.by_construction`).
- Ada (sm_89): NVIDIA Ada GPU Architecture whitepaper, Appendix A (RTX 4090: 512 FP16 FLOP per clock
  per SM with FP32 accumulation, the GeForce half rate) and the L4 datasheet (full rate, 1024).
- MI300X (gfx942): AMD CDNA 3 architecture white paper, peak FLOP per clock per CU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..hardware import TENSOR_CORE_MIN_CC, get_gpu, gpus
from . import _check

# --------------------------------------------------------------------------------------------
# Peak from first principles
# --------------------------------------------------------------------------------------------
# Dense FLOP per clock per SM (an FMA counts 2), keyed by catalog name: the catalog's
# ``GPU.flop_per_clock_per_sm`` (widgets.hardware, each with its source) for every GPU whose vendor
# publishes per-SM rates.
FLOP_PER_CLOCK_PER_SM = {g.name: dict(g.flop_per_clock_per_sm) for g in gpus() if g.flop_per_clock_per_sm}

# The clock each datasheet figure assumes [Hz], where it differs from the maximum boost clock (the
# catalog's ``GPU.datasheet_clock_hz``). H100/H200 SXM: tensor-core peaks at 1830 MHz (derived from
# those peaks: NVIDIA prints no clock), the FP32 (non-tensor) peak at the 1980 MHz maximum boost.
DATASHEET_CLOCK_HZ = {
    name: {d: g.clock_for(d) for d in rates}
    for name, rates in FLOP_PER_CLOCK_PER_SM.items()
    if (g := get_gpu(name)).datasheet_clock_hz
}


MAX_SMS = 10**6
MAX_CLOCK_HZ = 1e11
MAX_FLOP_PER_CLOCK_PER_SM = 1e9
MAX_FLOP_PER_S = 1e30  # far above any machine; keeps every derived figure finite
MAX_ELEMENTS = 100_000  # longest array the vectorized helpers accept
MAX_K = 2**40  # longest dot product the error models accept (no loop depends on it)
MAX_LAM = 1e3  # the probabilistic bound's lambda (a few units in practice)


def _bounded(name: str, value, maximum: float, minimum: float = 0.0) -> float:
    """A finite number in (0, maximum] (and >= ``minimum`` where one is given)."""
    v = _check.positive(name, value)
    if v > maximum or v < minimum:
        low = f"[{minimum:g}" if minimum else "(0"
        raise ValueError(f"{name} must be in {low}, {maximum:g}], got {value!r}")
    return v


def _int_array(name: str, value, *, minimum: int = 1) -> np.ndarray:
    """``value`` (an int or an array-like of ints) as an object array of exact Python ints, each
    checked like a scalar; at most :data:`MAX_ELEMENTS` of them."""
    if isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"{name} must be an integer or an array of integers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=object)
    except Exception as exc:  # ragged nesting and the like
        raise ValueError(f"{name} must be an integer or an array of integers, got {value!r}") from exc
    if arr.size == 0 or arr.size > MAX_ELEMENTS:
        raise ValueError(f"{name} must hold 1 to {MAX_ELEMENTS} integers, got {arr.size}")
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(arr.shape):
        out[idx] = _check.integer(name, arr[idx], minimum=minimum)
    return out


def matmul_flop(m: int, n: int, k: int) -> int:
    """FLOP of ``C[m,n] = A[m,k] @ B[k,n]``: ``2*m*n*k`` (one multiply and one add per term).

    Explained in :ref:`tensor_cores` > The cost of a GEMM.

    Parameters
    ----------
    m, n, k : int
        Rows of A and C, columns of B and C, and the reduction length [-]; each >= 1.

    Returns
    -------
    int
        Floating-point operations [FLOP].

    Raises
    ------
    ValueError
        If a dimension is not an integer >= 1.

    Examples
    --------
    >>> matmul_flop(8192, 8192, 8192)
    1099511627776
    """
    m_ = _check.integer("m", m, minimum=1)
    n_ = _check.integer("n", n, minimum=1)
    k_ = _check.integer("k", k, minimum=1)
    return 2 * m_ * n_ * k_


def peak_flop_per_s(sms: int, clock_hz: float, flop_per_clock_per_sm: float) -> float:
    """Dense peak from first principles: SMs x clock x FLOP per clock per SM.

    Explained in :ref:`tensor_cores` > Peak from first principles.

    Parameters
    ----------
    sms : int
        Streaming multiprocessors (compute units on AMD) [-], 1 to ``MAX_SMS`` (10**6).
    clock_hz : float
        The clock the figure assumes [Hz], 1 Hz to ``MAX_CLOCK_HZ`` (100 GHz).
    flop_per_clock_per_sm : float
        Dense FLOP one SM completes per clock for the data type [FLOP] (an FMA counts 2),
        10**-6 to ``MAX_FLOP_PER_CLOCK_PER_SM`` (10**9).

    Returns
    -------
    float
        Dense peak [FLOP/s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    H100/H200 SXM, dense bf16: 132 SMs x 1830 MHz x 4096 FLOP.

    >>> round(peak_flop_per_s(132, 1.83e9, 4096) / 1e12, 1)
    989.4
    """
    s = _check.integer("sms", sms, minimum=1, maximum=MAX_SMS)
    f = _bounded("clock_hz", clock_hz, MAX_CLOCK_HZ, minimum=1.0)
    r = _bounded("flop_per_clock_per_sm", flop_per_clock_per_sm, MAX_FLOP_PER_CLOCK_PER_SM, minimum=1e-6)
    return s * f * r


def implied_clock_hz(peak_flop_per_s: float, sms: int, flop_per_clock_per_sm: float) -> float:
    """The clock a published peak implies: peak / (SMs x FLOP per clock per SM).

    Explained in :ref:`tensor_cores` > Peak from first principles.

    Parameters
    ----------
    peak_flop_per_s : float
        The published dense peak [FLOP/s], > 0.
    sms : int
        Streaming multiprocessors [-], 1 to 10**6.
    flop_per_clock_per_sm : float
        Dense FLOP one SM completes per clock [FLOP], 10**-6 to 10**9.

    Returns
    -------
    float
        Clock [Hz].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(implied_clock_hz(989.4e12, 132, 4096) / 1e6)   # H100 SXM bf16: the tensor clock
    1830
    >>> round(implied_clock_hz(67e12, 132, 256) / 1e6)       # FP32: the 1980 MHz maximum boost
    1983

    (67 TFLOP/s is rounded to two digits; the published maximum boost clock is 1980 MHz.)
    """
    p = _bounded("peak_flop_per_s", peak_flop_per_s, MAX_FLOP_PER_S)
    s = _check.integer("sms", sms, minimum=1, maximum=MAX_SMS)
    r = _bounded("flop_per_clock_per_sm", flop_per_clock_per_sm, MAX_FLOP_PER_CLOCK_PER_SM, minimum=1e-6)
    return p / (s * r)


def sparse_flop_per_s(dense_flop_per_s: float) -> float:
    """The 2:4 structured-sparsity figure a datasheet prints: twice the dense peak.

    Half of the operands are zeros the hardware skips; it is never a peak for dense work.

    Explained in :ref:`tensor_cores` > Peak from first principles.

    Parameters
    ----------
    dense_flop_per_s : float
        Dense peak [FLOP/s], > 0.

    Returns
    -------
    float
        The sparsity figure [FLOP/s].

    Raises
    ------
    ValueError
        If ``dense_flop_per_s`` is not positive or is out of range.

    Examples
    --------
    >>> sparse_flop_per_s(989.4e12) / 1e12
    1978.8
    """
    return 2.0 * _bounded("dense_flop_per_s", dense_flop_per_s, MAX_FLOP_PER_S)


@dataclass(frozen=True)
class PeakCheck:
    """A peak rebuilt from SMs, clock and per-SM rate, beside the catalog's datasheet figure.

    Attributes
    ----------
    gpu, dtype : str
        Catalog name and dtype.
    sms : int
        SMs [-].
    clock_hz : float
        The clock used [Hz].
    flop_per_clock_per_sm : int
        Dense FLOP per clock per SM [FLOP].
    peak_flop_per_s : float
        The rebuilt peak [FLOP/s].
    catalog_flop_per_s : float
        The catalog's (datasheet) peak [FLOP/s].
    ratio : float
        ``peak_flop_per_s / catalog_flop_per_s`` [-].
    implied_clock_hz : float
        The clock the catalog figure implies at this per-SM rate [Hz].
    by_construction : str
        Why the rebuilt peak equals the catalog's by construction (one of SMs, clock or per-SM rate
        was derived from this very peak: the catalog's ``sources["derived_from_peaks"]``), or ``""``
        where the three inputs are published separately and the rebuild is a check.
    """

    gpu: str
    dtype: str
    sms: int
    clock_hz: float
    flop_per_clock_per_sm: int
    peak_flop_per_s: float
    catalog_flop_per_s: float
    ratio: float  # first principles / catalog
    implied_clock_hz: float  # the clock the catalog figure implies at this per-SM rate
    by_construction: str = ""  # why the rebuild equals the catalog by construction; "" for a real check

    @property
    def agreement(self) -> str:
        """``"consistent by construction"``, ``"match"`` (within ``PEAK_MATCH_REL``, the rounding of
        printed figures) or ``"differs by +1.2%"`` (first principles against the catalog)."""
        if self.by_construction:
            return "consistent by construction"
        if abs(self.ratio - 1) <= PEAK_MATCH_REL:
            return "match"
        return f"differs by {self.ratio - 1:+.1%}"


# Printed peaks carry two to four significant digits (the T4's FP32 "8.1 TFLOPS" is 0.5% below
# 40 x 1590 MHz x 128): a rebuild within 1% of the printed figure matches it.
PEAK_MATCH_REL = 0.01


def _derived_from_peaks(g) -> dict:
    """{dtype: why} for the peaks of ``g`` that one of its SMs, clock or per-SM rate was derived from
    (the catalog's ``sources["derived_from_peaks"]``: ``"fp32, tf32: why"``); {} where none was."""
    text = g.sources.get("derived_from_peaks", "")
    head, _, why = text.partition(": ")
    return {d.strip(): why for d in head.split(",") if d.strip()} if why else {}


def peak_check(gpu, dtype: str) -> PeakCheck:
    """Rebuild a catalog GPU's dense peak from first principles and compare it with the catalog.

    The clock is the catalog's datasheet clock for that figure where it has one
    (``DATASHEET_CLOCK_HZ``; on the H100/H200 derived from the peak itself, as NVIDIA prints none),
    else the boost clock. Where an input was derived from the peak, the rebuild gives the peak back
    by construction and checks nothing (``PeakCheck.by_construction``, ``PeakCheck.agreement``).

    Explained in :ref:`tensor_cores` > Calculator: the peak.

    Parameters
    ----------
    gpu : str or ~widgets.hardware.GPU
        A catalog name or a :class:`widgets.hardware.GPU`.
    dtype : str
        A dtype with a per-SM rate for that GPU, e.g. ``"bf16"``.

    Returns
    -------
    PeakCheck
        SMs, clock and per-SM rate, the rebuilt peak, the catalog's figure, their ratio, the
        clock the catalog figure implies, and why the two agree by construction (if they do).

    Raises
    ------
    ValueError
        If ``gpu`` has no per-SM rates or ``dtype`` is not one of them.

    Examples
    --------
    >>> c = peak_check("H200-SXM", "bf16")
    >>> round(c.peak_flop_per_s / 1e12, 1), round(c.ratio, 3), c.agreement
    (989.4, 1.0, 'consistent by construction')
    >>> peak_check("A100-SXM-80GB", "bf16").agreement
    'match'
    """
    try:
        g = get_gpu(gpu)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"gpu must be one of {', '.join(map(repr, FLOP_PER_CLOCK_PER_SM))}; got {gpu!r}") from exc
    rates = FLOP_PER_CLOCK_PER_SM.get(g.name)
    if rates is None:
        raise ValueError(f"gpu must be one of {', '.join(map(repr, FLOP_PER_CLOCK_PER_SM))}; got {g.name!r} "
                         f"({g.why_no_rate('bf16')})")
    if isinstance(dtype, str) and dtype in ("fp32", *TENSOR_CORE_MIN_CC) and dtype not in rates:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, rates))} for {g.name}; got {dtype!r} "
                         f"({g.why_no_rate(dtype)})")
    d = _check.choice("dtype", dtype, list(rates))
    clock = DATASHEET_CLOCK_HZ.get(g.name, {}).get(d, g.boost_clock_hz)
    peak = peak_flop_per_s(g.sms, clock, rates[d])
    catalog = g.peak(d)
    return PeakCheck(
        g.name, d, g.sms, clock, rates[d], peak, catalog, peak / catalog, implied_clock_hz(catalog, g.sms, rates[d]),
        _derived_from_peaks(g).get(d, ""),
    )


# --------------------------------------------------------------------------------------------
# GEMM cost: bytes, tiles, waves
# --------------------------------------------------------------------------------------------
def gemm_bytes(m: int, n: int, k: int, in_bytes: int = 2, out_bytes: int | None = None) -> int:
    """Fewest bytes a GEMM moves through device memory: read A and B once, write C once.

    Explained in :ref:`tensor_cores` > The cost of a GEMM.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [-], each >= 1.
    in_bytes : int, optional
        Element size of A and B [B], >= 1.
    out_bytes : int or None, optional
        Element size of C [B], >= 1; default ``in_bytes``.

    Returns
    -------
    int
        ``(m*k + k*n) * in_bytes + m*n * out_bytes`` [B].

    Raises
    ------
    ValueError
        If an input is not an integer >= 1.

    Examples
    --------
    >>> gemm_bytes(8192, 8192, 8192, 2) // 2**20   # bf16: three 128 MiB matrices
    384
    """
    m_ = _check.integer("m", m, minimum=1)
    n_ = _check.integer("n", n, minimum=1)
    k_ = _check.integer("k", k, minimum=1)
    i = _check.integer("in_bytes", in_bytes, minimum=1)
    o = i if out_bytes is None else _check.integer("out_bytes", out_bytes, minimum=1)
    return (m_ * k_ + k_ * n_) * i + m_ * n_ * o


def gemm_intensity(m: int, n: int, k: int, in_bytes: int = 2, out_bytes: int | None = None) -> float:
    """Arithmetic intensity of a GEMM at its fewest bytes.

    Explained in :ref:`tensor_cores` > The cost of a GEMM.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [-], each >= 1.
    in_bytes : int, optional
        Element size of A and B [B], >= 1.
    out_bytes : int or None, optional
        Element size of C [B], >= 1; default ``in_bytes``.

    Returns
    -------
    float
        ``matmul_flop / gemm_bytes`` [FLOP/B].

    Raises
    ------
    ValueError
        If an input is not an integer >= 1.

    Examples
    --------
    >>> round(gemm_intensity(4096, 4096, 4096, 2), 1)   # bf16: 2MNK / (2 x 3 N^2) = N/3
    1365.3
    """
    return matmul_flop(m, n, k) / gemm_bytes(m, n, k, in_bytes, out_bytes)


def tile_efficiency(m: int, n: int, tile_m: int, tile_n: int) -> float:
    """Useful fraction of the padded tile area of a GEMM's output.

    ``m*n / (ceil(m/tile_m)*tile_m * ceil(n/tile_n)*tile_n)``: tiles on the bottom and right edges
    are computed whole even when they hang over the matrix; the overhanging part is wasted work.

    Explained in :ref:`tensor_cores` > Tiles and waves.

    Parameters
    ----------
    m, n : int
        Rows and columns of the output C [-], >= 1.
    tile_m, tile_n : int
        Output tile one SM (one thread block) computes [-], >= 1.

    Returns
    -------
    float
        Useful fraction [-], in (0, 1].

    Raises
    ------
    ValueError
        If an input is not an integer >= 1.

    Examples
    --------
    >>> tile_efficiency(8192, 8192, 128, 256)
    1.0
    >>> round(tile_efficiency(8192, 8193, 128, 256), 3)   # one extra column costs a whole tile column
    0.97
    """
    m_ = _check.integer("m", m, minimum=1)
    n_ = _check.integer("n", n, minimum=1)
    tm = _check.integer("tile_m", tile_m, minimum=1)
    tn = _check.integer("tile_n", tile_n, minimum=1)
    return (m_ * n_) / (-(-m_ // tm) * tm * -(-n_ // tn) * tn)


def gemm_waves(m: int, n: int, tile_m: int, tile_n: int, sms: int) -> tuple[int, int, float]:
    """Tiles, waves and wave efficiency of a GEMM with one output tile per SM at a time.

    ``tiles = ceil(m/tile_m) * ceil(n/tile_n)``; ``waves = ceil(tiles / sms)`` counts a partial last
    wave as a whole one, since it takes as long; ``wave_efficiency = tiles / (waves * sms)`` is the
    fraction of SM-slots that do work.

    Explained in :ref:`tensor_cores` > Tiles and waves.

    Parameters
    ----------
    m, n : int
        Rows and columns of the output C [-], >= 1.
    tile_m, tile_n : int
        Output tile one SM (one thread block) computes [-], >= 1.
    sms : int
        SMs that run tiles at once (one tile each) [-], >= 1.

    Returns
    -------
    tiles : int
        Output tiles [-].
    waves : int
        Waves [-].
    wave_efficiency : float
        Fraction of SM-slots that do work [-], in (0, 1].

    Raises
    ------
    ValueError
        If an input is not an integer >= 1.

    Examples
    --------
    >>> gemm_waves(8192, 8192, 128, 256, 132)   # 2048 tiles: 15 full waves and 68 tiles over
    (2048, 16, 0.9696969696969697)
    """
    m_ = _check.integer("m", m, minimum=1)
    n_ = _check.integer("n", n, minimum=1)
    tm = _check.integer("tile_m", tile_m, minimum=1)
    tn = _check.integer("tile_n", tile_n, minimum=1)
    s = _check.integer("sms", sms, minimum=1)
    tiles = -(-m_ // tm) * -(-n_ // tn)
    waves = -(-tiles // s)
    return tiles, waves, tiles / (waves * s)


def is_aligned(dim: int, elem_bytes: int, align_bytes: int = 16) -> bool:
    """Whether a row of ``dim`` elements is a multiple of ``align_bytes``.

    16 B is the alignment the tensor-memory accelerator (TMA) and vectorized loads need; cuBLAS
    documents that leading dimensions that are multiples of 16 bytes are needed for its fastest
    kernels.

    Explained in :ref:`tensor_cores` > 2. Shapes: alignment and waves.

    Parameters
    ----------
    dim : int
        Elements in a row (the leading dimension) [-], >= 1.
    elem_bytes : int
        Bytes per element [B], >= 1.
    align_bytes : int, optional
        Alignment required [B], >= 1.

    Returns
    -------
    bool
        True when ``dim * elem_bytes`` is a multiple of ``align_bytes``.

    Raises
    ------
    ValueError
        If an input is not an integer >= 1.

    Examples
    --------
    >>> is_aligned(8192, 2), is_aligned(8191, 2), is_aligned(8200, 2)
    (True, False, True)
    """
    d = _check.integer("dim", dim, minimum=1)
    e = _check.integer("elem_bytes", elem_bytes, minimum=1)
    a = _check.integer("align_bytes", align_bytes, minimum=1)
    return (d * e) % a == 0


@dataclass(frozen=True)
class GemmEstimate:
    """What the tile-and-wave model predicts for one GEMM.

    Attributes
    ----------
    flop : int
        ``2*m*n*k`` [FLOP].
    bytes_moved : int
        Fewest bytes through device memory [B].
    tiles, waves : int
        Output tiles and waves [-].
    wave_efficiency, tile_efficiency : float
        Fractions of SM-slots and of tile area that do useful work [-].
    compute_time_s : float
        Waves x one tile's time on one SM [s].
    memory_time_s : float
        Fewest bytes over the bandwidth [s].
    time_s : float
        ``max(compute_time_s, memory_time_s)`` [s].
    flop_per_s : float
        Useful FLOP over ``time_s`` [FLOP/s].
    bound : str
        ``"compute"`` or ``"memory"``.
    aligned : bool
        Every leading dimension a multiple of 16 B.
    """

    flop: int
    bytes_moved: int
    tiles: int
    waves: int
    wave_efficiency: float
    tile_efficiency: float
    compute_time_s: float  # waves x one tile's time on one SM
    memory_time_s: float  # fewest bytes / bandwidth
    time_s: float  # max(compute, memory)
    flop_per_s: float  # useful FLOP / time
    bound: str  # "compute" or "memory"
    aligned: bool  # every leading dimension a multiple of 16 B


def gemm_estimate(
    m: int,
    n: int,
    k: int,
    peak_flop_per_s: float,
    bytes_per_s: float,
    sms: int,
    *,
    tile_m: int = 128,
    tile_n: int = 256,
    in_bytes: int = 2,
    out_bytes: int | None = None,
) -> GemmEstimate:
    """Predicted time and throughput of ``C[m,n] = A[m,k] @ B[k,n]`` on a GPU of ``sms`` SMs.

    Each SM computes one ``tile_m x tile_n`` output tile at a time at ``peak/sms``; a tile costs
    ``2*tile_m*tile_n*k`` FLOP however much of it hangs over the edge. Compute time is
    ``waves x`` one tile's time; memory time is the fewest bytes over the bandwidth; the GEMM takes
    the larger. Equivalently, throughput = peak x wave efficiency x tile efficiency when
    compute-bound. Misaligned shapes (a row not a multiple of 16 B) are flagged, not modelled:
    libraries fall back to slower kernels for them.

    Explained in :ref:`tensor_cores` > Calculator: the GEMM estimator.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [-], each >= 1.
    peak_flop_per_s : float
        Dense peak for the data type [FLOP/s], > 0.
    bytes_per_s : float
        Device-memory bandwidth [B/s], > 0.
    sms : int
        SMs [-], >= 1.
    tile_m, tile_n : int, optional
        Output tile of one SM [-], >= 1.
    in_bytes : int, optional
        Element size of A and B [B], >= 1.
    out_bytes : int or None, optional
        Element size of C [B]; default ``in_bytes``.

    Returns
    -------
    GemmEstimate
        FLOP, bytes, tiles, waves, both efficiencies, compute, memory and total time [s],
        throughput [FLOP/s], the bound and whether the shape is aligned.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    H200, bf16, 8192^3 with 128 x 256 tiles: 16 waves of which the last is about half full.

    >>> e = gemm_estimate(8192, 8192, 8192, 989.4e12, 4.8e12, 132)
    >>> e.waves, round(e.flop_per_s / 1e12), e.bound
    (16, 959, 'compute')
    """
    flop = matmul_flop(m, n, k)
    p = _bounded("peak_flop_per_s", peak_flop_per_s, MAX_FLOP_PER_S, minimum=1.0)
    bw = _bounded("bytes_per_s", bytes_per_s, MAX_FLOP_PER_S, minimum=1.0)
    tiles, waves, weff = gemm_waves(m, n, tile_m, tile_n, sms)
    teff = tile_efficiency(m, n, tile_m, tile_n)
    moved = gemm_bytes(m, n, k, in_bytes, out_bytes)
    per_tile_s = 2.0 * int(tile_m) * int(tile_n) * int(k) / (p / int(sms))
    compute = waves * per_tile_s
    memory = moved / bw
    t = max(compute, memory)
    e = int(in_bytes)
    aligned = all(is_aligned(d, e) for d in (k, n)) and is_aligned(n, int(out_bytes or e))
    return GemmEstimate(
        flop, moved, tiles, waves, weff, teff, compute, memory, t, flop / t,
        "compute" if compute >= memory else "memory", aligned,
    )


def predicted_flop_per_s(
    m, n, k, peak_flop_per_s: float, bytes_per_s: float, sms: int, *, tile_m: int = 128, tile_n: int = 256, in_bytes: int = 2
) -> np.ndarray:
    """:func:`gemm_estimate`'s throughput over arrays of shapes (broadcast).

    Explained in :ref:`tensor_cores` > 2. Shapes: alignment and waves.

    Parameters
    ----------
    m, n, k : int or array_like of int
        Matrix dimensions [-], each >= 1; broadcast together (at most ``MAX_ELEMENTS`` shapes).
    peak_flop_per_s : float
        Dense peak for the data type [FLOP/s], > 0.
    bytes_per_s : float
        Device-memory bandwidth [B/s], > 0.
    sms : int
        SMs [-], >= 1.
    tile_m, tile_n : int, optional
        Output tile of one SM [-], >= 1.
    in_bytes : int, optional
        Element size of A, B and C [B], >= 1.

    Returns
    -------
    numpy.ndarray
        Predicted throughput per shape [FLOP/s], of the broadcast shape.

    Raises
    ------
    ValueError
        If an input is out of range or the shapes do not broadcast.

    Examples
    --------
    >>> predicted_flop_per_s(2048, [4096, 4224], 8192, 989.4e12, 4.8e12, 132).round(-12) / 1e12
    array([959., 660.])
    """
    try:
        mm, nn, kk = np.broadcast_arrays(_int_array("m", m), _int_array("n", n), _int_array("k", k))
    except ValueError as exc:
        if str(exc).split(" ")[0] in ("m", "n", "k"):
            raise
        raise ValueError(f"m, n and k must broadcast to one shape, got {np.shape(m)}, {np.shape(n)}, {np.shape(k)}") from exc
    if mm.size > MAX_ELEMENTS:
        raise ValueError(f"m, n and k must broadcast to at most {MAX_ELEMENTS} shapes, got {mm.size}")
    out = np.empty(mm.shape, dtype=float)
    for idx in np.ndindex(mm.shape):
        out[idx] = gemm_estimate(
            mm[idx], nn[idx], kk[idx], peak_flop_per_s, bytes_per_s, sms,
            tile_m=tile_m, tile_n=tile_n, in_bytes=in_bytes,
        ).flop_per_s
    return out


def gemm_estimate_for(m: int, n: int, k: int, dtype: str = "bf16", gpu="H200-SXM", tile_m: int = 128,
                      tile_n: int = 256) -> GemmEstimate:
    """:func:`gemm_estimate` on a catalog GPU, from the catalog's figures and the dtype registry.

    The GPU's dense ``dtype`` peak, its memory bandwidth and SM count
    (:mod:`widgets.hardware`), the element size of ``dtype`` (:mod:`widgets.dtypes`; tf32
    is stored as fp32), and a 16-bit result for fp8 inputs (fp8 GEMMs write bf16 or fp16).

    Explained in :ref:`tensor_cores` > Calculator: the GEMM estimator.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions [-], each >= 1.
    dtype : str, optional
        Input format, one of the catalog's peak-rate keys (``"fp32"``, ``"tf32"``, ``"bf16"``,
        ``"fp16"``, ``"fp8"``) that ``gpu`` has a dense peak for.
    gpu : str or ~widgets.hardware.GPU, optional
        A catalog GPU (name or record).
    tile_m, tile_n : int, optional
        Output tile of one SM [-], >= 1.

    Returns
    -------
    GemmEstimate
        As :func:`gemm_estimate`: time [s], throughput [FLOP/s], waves, efficiencies, the bound.

    Raises
    ------
    ValueError
        If ``gpu`` is not in the catalog, ``dtype`` is not a peak-rate key or the GPU has no
        peak for it, or a dimension is out of range.

    Examples
    --------
    >>> e = gemm_estimate_for(8192, 8192, 8192, "bf16", "H200-SXM")
    >>> e.waves, round(e.flop_per_s / 1e12)
    (16, 959)
    >>> gemm_estimate_for(8192, 8192, 8192, "fp8").bytes_moved == 2 * 8192**2 * 1 + 8192**2 * 2  # A, B: 1 B; C: 2 B
    True
    """
    d = _check.choice("dtype", dtype, dtypes.PEAK_DTYPES)
    try:
        g = get_gpu(gpu)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"gpu must be a catalog GPU (name or record); got {gpu!r}") from exc
    e = int(dtypes.bytes_per_element(d))
    out = 2 if dtypes.get_dtype(d).bits == 8 else e
    return gemm_estimate(m, n, k, g.peak(d, param="dtype"), g.hbm_bytes_per_s, g.sms, tile_m=tile_m, tile_n=tile_n,
                         in_bytes=e, out_bytes=out)


# --------------------------------------------------------------------------------------------
# Number formats and the accuracy of a dot product
# --------------------------------------------------------------------------------------------
# The floating-point formats the precision models cover, from the registry of number formats
# (widgets.dtypes: layout, range and unit roundoff with their sources; IEEE 754-2019, bfloat16, TF32,
# OCP OFP8 E4M3/E5M2). "fp8" alone (as in the catalog's peaks) means E4M3, the forward-pass format.
FORMATS = {name: dtypes.get_dtype(name) for name in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")}
_ALIASES = {a: n for a, n in dtypes.ALIASES.items() if n in FORMATS}  # the registry's short names

# Mean square relative error of rounding to nearest, in units of u^2, for significands spread
# log-uniformly over a binade (Benford): the absolute error is uniform on [-ulp/2, ulp/2] and
# E[(2^e/x)^2] = 3/(8 ln 2); so E[delta^2] = u^2 / (8 ln 2).
ROUNDING_VARIANCE = 1.0 / (8.0 * math.log(2.0))


def number_format(dtype: str) -> dtypes.DType:
    """The :class:`widgets.dtypes.DType` of a number format (``"fp8"`` means E4M3).

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    dtype : str
        A number format: ``"fp64"``, ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
        (E4M3), ``"fp8_e4m3"`` or ``"fp8_e5m2"`` (case-insensitive).

    Returns
    -------
    widgets.dtypes.DType
        Exponent and fraction bits, with the unit roundoff and range as properties.

    Raises
    ------
    ValueError
        If ``dtype`` is not a known format.

    Examples
    --------
    >>> number_format("fp16").max_normal, number_format("fp8").max_normal
    (65504.0, 448.0)
    """
    return _format(dtype, "dtype")


def _format(dtype, name: str) -> dtypes.DType:
    """:func:`number_format`, with ``name`` (the caller's parameter) in the error."""
    if isinstance(dtype, str) and dtype.lower() in _ALIASES:
        dtype = _ALIASES[dtype.lower()]
    return FORMATS[_check.choice(name, dtype, list(FORMATS) + list(_ALIASES))]


def unit_roundoff(dtype: str) -> float:
    """Unit roundoff ``u`` of a number format: the largest relative error of rounding to nearest.

    fp32 2^-24, tf32 2^-11, bf16 2^-8, fp16 2^-11, E4M3 2^-4, E5M2 2^-3.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    dtype : str
        A number format: ``"fp64"``, ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
        (E4M3), ``"fp8_e4m3"`` or ``"fp8_e5m2"`` (case-insensitive).

    Returns
    -------
    float
        ``2^-(man_bits + 1)`` [-].

    Raises
    ------
    ValueError
        If ``dtype`` is not a known format.

    Examples
    --------
    >>> unit_roundoff("bf16") == 2**-8
    True
    """
    return number_format(dtype).unit_roundoff


def input_rounding_error(dtype: str) -> float:
    """Typical (rms) relative error of a dot product due to rounding its two inputs alone.

    Products and sums are exact: each input carries a rounding error of variance
    ``u^2 / (8 ln 2)`` (``ROUNDING_VARIANCE``), and a product carries both, so
    ``sqrt(2 u^2 / (8 ln 2))``. The floor under :func:`dot_error`'s typical error, whatever ``k``.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    dtype : str
        A number format of ``FORMATS`` (``"fp8"`` means E4M3).

    Returns
    -------
    float
        Relative error [-].

    Raises
    ------
    ValueError
        If ``dtype`` is not a known format.

    Examples
    --------
    >>> round(input_rounding_error("bf16") / 2**-8, 3)  # 0.6 u
    0.601
    """
    return math.sqrt(2.0 * ROUNDING_VARIANCE) * number_format(dtype).unit_roundoff


@dataclass(frozen=True)
class DotError:
    """Expected and bounded error of a dot product with rounded inputs and accumulated sums.

    Attributes
    ----------
    dtype, accumulate : str
        Input and accumulation formats.
    k : int
        Length of the dot product [-].
    u_in, u_acc : float
        Unit roundoffs of the inputs and of the sums [-].
    deterministic_bound : float
        Worst-case error relative to ``sum |x_i y_i|`` [-].
    probabilistic_bound : float
        Error relative to ``sum |x_i y_i|`` that holds with ``probability`` (Higham & Mary 2019) [-].
    typical_error : float
        Rms relative error, normwise, for random zero-mean inputs [-].
    max_normal, min_normal, min_subnormal : float
        Range of the input format [-].
    lam : float
        The lambda of the probabilistic bound [-].
    probability : float
        Probability (at least) that the probabilistic bound holds [-].
    """

    dtype: str
    k: int
    accumulate: str
    u_in: float
    u_acc: float
    deterministic_bound: float  # relative to sum |x_i y_i|
    probabilistic_bound: float  # relative to sum |x_i y_i|, Higham & Mary (2019), holds with `probability`
    typical_error: float  # rms relative error, normwise, for random zero-mean inputs
    max_normal: float
    min_normal: float
    min_subnormal: float
    lam: float  # the lambda of the probabilistic bound
    probability: float  # the probability (at least) that the probabilistic bound holds, Q(lam, n)


def bound_probability(lam: float = 1.0, n: int = 1, u: float = 2.0**-24) -> float:
    """Probability that Higham and Mary's probabilistic rounding-error bound holds.

    Higham & Mary (2019, SISC 41(5), Theorem 3.1): a computation with ``n`` independent mean-zero
    rounding errors of size at most ``u`` stays within ``lam sqrt(n) u`` (first order) with
    probability at least ``Q(lam, n) = 1 - 2 n exp(-lam^2 (1-u)^2 / 2)``, clipped at 0 (nothing
    guaranteed). The n-free form ``1 - 2 exp(-lam^2/2)`` is Connolly, Higham & Mary (2021, SISC
    43(1)), which needs mean independence, not independence, of the errors.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    lam : float, optional
        The bound's multiplier lambda [-], > 0.
    n : int, optional
        Rounding errors [-], >= 1.
    u : float, optional
        Unit roundoff [-], in (0, 0.5].

    Returns
    -------
    float
        Probability [-], 0..1.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(bound_probability(1.0, 1, 2**-24), 3)   # lambda = 1 guarantees nothing
    0.0
    >>> round(bound_probability(lam_for_probability(0.99, 4096, 2**-24), 4096, 2**-24), 6)
    0.99
    """
    lam_ = _bounded("lam", lam, MAX_LAM)
    nn = _check.integer("n", n, minimum=1, maximum=MAX_K)
    uu = _bounded("u", u, 0.5)
    return max(0.0, 1.0 - 2.0 * nn * math.exp(-(lam_**2) * (1.0 - uu) ** 2 / 2.0))


def lam_for_probability(probability: float = 0.99, n: int = 1, u: float = 2.0**-24) -> float:
    """The lambda for which Higham and Mary's bound holds with at least a given probability.

    ``lam = sqrt(2 ln(2n / (1 - probability))) / (1 - u)`` over ``n`` rounding errors of size ``u``:
    the inverse of :func:`bound_probability`.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    probability : float, optional
        Probability wanted [-], in (0, 1).
    n : int, optional
        Rounding errors [-], >= 1.
    u : float, optional
        Unit roundoff [-], in (0, 0.5].

    Returns
    -------
    float
        lambda [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(lam_for_probability(0.99, 4096, 2**-24), 2)
    5.22
    """
    pr = _bounded("probability", probability, 1.0 - 1e-12, minimum=1e-12)
    nn = _check.integer("n", n, minimum=1, maximum=MAX_K)
    uu = _bounded("u", u, 0.5)
    return math.sqrt(2.0 * math.log(2.0 * nn / (1.0 - pr))) / (1.0 - uu)


def dot_error(
    k: int, dtype: str, accumulate: str = "fp32", *, output: str | None = None, lam: float | None = None,
    probability: float = 0.99, input_rounding: bool = True
) -> DotError:
    """How accurate is a dot product of length ``k`` in ``dtype`` with ``accumulate`` sums?

    Three numbers, all first order in the unit roundoffs ``u_in`` (inputs) and ``u_acc`` (sums):

    - deterministic bound (Higham 2002, Sec. 3.1): ``2 u_in + k u_acc`` of ``sum |x_i y_i|``. The
      inputs are rounded once each; a recursive sum of ``k`` terms commits ``k`` roundings.
    - probabilistic bound (Higham & Mary 2019, Theorem 3.1): rounding errors that are independent
      and of mean zero grow like ``sqrt(k)``: ``2 u_in + lam sqrt(k) u_acc`` holds with probability
      at least ``Q = 1 - 2 k exp(-lam^2 (1-u_acc)^2 / 2)`` (:func:`bound_probability`). By default
      ``lam`` is chosen so that ``Q = probability`` (0.99: ``lam`` = 5.2 for k = 4096,
      :func:`lam_for_probability`); a ``lam`` given instead is kept and ``probability`` reports its
      ``Q`` (0 for lam = 1: nothing is guaranteed).
    - typical error: the rms of ``|c_hat - c| / |c|`` for random independent zero-mean inputs
      (normwise over many dot products). Each rounding error has variance ``u^2 / (8 ln 2)``; the
      two input roundings add ``2 u_in^2``; the recursive sum's partial sums grow like
      ``sqrt(j)``, so its errors add ``k u_acc^2 / 2`` relative to ``c^2 ~ k``:
      ``sqrt((2 u_in^2 + k u_acc^2 / 2) / (8 ln 2))``.

    Products of two fp16/bf16/tf32/fp8 numbers are exact in fp32, so tensor cores add no product
    rounding.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    k : int
        Length of the dot product [-], 1 to ``MAX_K``.
    dtype : str
        A number format: ``"fp64"``, ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
        (E4M3), ``"fp8_e4m3"`` or ``"fp8_e5m2"`` (case-insensitive).
        The inputs are rounded to it.
    accumulate : str, optional
        The format of the partial sums (same names as ``dtype``).
    output : str or None, optional
        A format the result is rounded to at the end (one more rounding: ``u_out`` in the bounds,
        ``u_out^2`` in the typical variance); ``None`` keeps it in ``accumulate``.
    lam : float or None, optional
        The probabilistic bound's lambda [-], > 0; default: chosen from ``probability``.
    probability : float, optional
        Probability the probabilistic bound must hold with [-], in (0, 1).
    input_rounding : bool, optional
        False leaves the inputs exact (the error of the accumulation alone).

    Returns
    -------
    DotError
        The unit roundoffs, the deterministic and probabilistic bounds and the typical error
        (relative) [-], the input format's range and the lambda and probability used.

    Raises
    ------
    ValueError
        If a format is unknown or a number is out of range.

    Examples
    --------
    >>> e = dot_error(4096, "bf16")            # tensor cores: bf16 inputs, fp32 sums
    >>> round(e.typical_error, 5), round(e.deterministic_bound, 5)
    (0.00235, 0.00806)
    """
    kk = _check.integer("k", k, minimum=1, maximum=MAX_K)
    fin = _format(dtype, "dtype")
    facc = _format(accumulate, "accumulate")
    u_out = 0.0 if output is None else _format(output, "output").unit_roundoff
    if not isinstance(input_rounding, bool):
        raise ValueError(f"input_rounding must be True or False, got {input_rounding!r}")
    u_in = fin.unit_roundoff if input_rounding else 0.0
    u_acc = facc.unit_roundoff
    if lam is None:
        lam_ = lam_for_probability(probability, kk, u_acc)
    else:
        lam_ = _bounded("lam", lam, MAX_LAM)
        _bounded("probability", probability, 1.0 - 1e-12, minimum=1e-12)
    q = bound_probability(lam_, kk, u_acc)
    det = 2 * u_in + kk * u_acc + u_out
    prob = min(det, 2 * u_in + lam_ * math.sqrt(kk) * u_acc + u_out)  # the deterministic one always holds
    typical = math.sqrt((2 * u_in**2 + kk * u_acc**2 / 2 + u_out**2) * ROUNDING_VARIANCE)
    return DotError(fin.name, kk, facc.name, u_in, u_acc, det, prob, typical, fin.max_normal, fin.min_normal,
                    fin.min_subnormal, lam_, q)


def typical_dot_error(k, dtype: str, accumulate: str = "fp32", *, output: str | None = None, input_rounding: bool = True):
    """:func:`dot_error`'s typical error over an array of lengths (scalar in, scalar out).

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    k : int or array_like of int
        Lengths of the dot product [-], each >= 1.
    dtype : str
        A number format: ``"fp64"``, ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
        (E4M3), ``"fp8_e4m3"`` or ``"fp8_e5m2"`` (case-insensitive).
    accumulate : str, optional
        The format of the partial sums.
    output : str or None, optional
        A format the result is rounded to at the end; ``None`` keeps it in ``accumulate``.
    input_rounding : bool, optional
        False leaves the inputs exact.

    Returns
    -------
    float or numpy.ndarray
        Typical (rms) relative error [-]: a float for a scalar ``k``, an array otherwise.

    Raises
    ------
    ValueError
        If a format is unknown or a length is out of range.

    Examples
    --------
    >>> typical_dot_error([256, 65536], "fp32", "fp32").round(9)
    array([2.890e-07, 4.582e-06])
    """
    ks = np.atleast_1d(_int_array("k", k))
    out = np.array([dot_error(x, dtype, accumulate, output=output, input_rounding=input_rounding).typical_error for x in ks.ravel()])
    out = out.reshape(ks.shape)
    return float(out[0]) if np.ndim(k) == 0 else out


# --------------------------------------------------------------------------------------------
# One instruction: which tensor core runs it, and for how many clocks
# --------------------------------------------------------------------------------------------
# Tensor cores per SM: four, one per SM sub-partition (processing block), on Ampere and Hopper
# (A100 whitepaper, "four third-generation Tensor Cores per SM"; H100 whitepaper, "four
# fourth-generation Tensor Cores per SM"). Volta and Turing had eight per SM, two per processing
# block (V100 whitepaper: 640 in 80 SMs). A warp lives on one sub-partition and its mma.sync runs
# on that sub-partition's tensor core(s) only; a Hopper warpgroup (four warps, one per
# sub-partition) drives all four with one wgmma.
TENSOR_CORES_PER_SM = 4


def instruction_clocks(m: int, n: int, k: int, flop_per_clock_per_sm: float, *, tensor_cores_used: int = 1,
                       tensor_cores_per_sm: int = TENSOR_CORES_PER_SM) -> float:
    """Fewest clocks one ``m x n x k`` matrix instruction occupies its tensor cores.

    ``2*m*n*k`` FLOP at ``tensor_cores_used / tensor_cores_per_sm`` of the SM's dense rate. A warp's
    ``mma.sync`` uses ONE tensor core (its sub-partition's), so it takes at least four times as long
    as the SM-wide arithmetic suggests; a Hopper ``wgmma`` is issued by a warpgroup of four warps
    and uses all four. This is a lower bound: on Hopper, ``mma.sync`` does not reach the ``wgmma``
    rate, and the SM's datasheet peak is reachable only through the asynchronous ``wgmma`` (whose
    benefit Luo et al. 2025 measure).

    Explained in :ref:`tensor_cores` > What a tensor core does.

    Parameters
    ----------
    m, n, k : int
        The instruction shape [-], each 1 to 2**20.
    flop_per_clock_per_sm : float
        The SM's dense FLOP per clock for the data type [FLOP], 10**-6 to 10**9.
    tensor_cores_used : int, optional
        Tensor cores the instruction runs on [-], 1 to ``tensor_cores_per_sm``.
    tensor_cores_per_sm : int, optional
        Tensor cores in one SM [-], 1 to 64.

    Returns
    -------
    float
        Clocks [clock].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    H100/H200, bf16 (4096 FLOP per clock per SM):

    >>> instruction_clocks(16, 8, 16, 4096)                          # mma.sync, one warp
    4.0
    >>> instruction_clocks(64, 256, 16, 4096, tensor_cores_used=4)   # wgmma, one warpgroup
    128.0
    """
    m_ = _check.integer("m", m, minimum=1, maximum=2**20)
    n_ = _check.integer("n", n, minimum=1, maximum=2**20)
    k_ = _check.integer("k", k, minimum=1, maximum=2**20)
    r = _bounded("flop_per_clock_per_sm", flop_per_clock_per_sm, MAX_FLOP_PER_CLOCK_PER_SM, minimum=1e-6)
    per_sm = _check.integer("tensor_cores_per_sm", tensor_cores_per_sm, minimum=1, maximum=64)
    used = _check.integer("tensor_cores_used", tensor_cores_used, minimum=1, maximum=per_sm)
    return 2.0 * m_ * n_ * k_ / (r * used / per_sm)


# --------------------------------------------------------------------------------------------
# What the tensor cores' adder really does: accumulators narrower than fp32
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Accumulator:
    """The effective precision of a tensor-core accumulation path.

    ``significand_bits`` p (implicit bit included; fp32 has 24) sets the unit roundoff ``2^-p`` of
    each addition (``2^-(p-1)`` if the adder truncates); ``promote_every_k`` is the number of
    products summed in that precision before the partial sum is added into an fp32 register
    (``None``: never, the whole sum stays in the narrow accumulator); ``block`` is the number of
    products added per rounding (per truncation, if the adder truncates). ``source`` says where the
    figures come from and ``label`` how a comparison that uses them must be labelled.
    """

    name: str
    significand_bits: int
    promote_every_k: int | None
    truncate: bool
    source: str
    label: str  # "prediction" or "calibrated"
    block: int = 1


# The hardware's accumulators (sm_90, Hopper). Keys: (input dtype, fast_accum).
ACCUMULATORS = {
    # Hopper fp8 wgmma keeps partial sums in about 14 bits (DeepSeek-V3 Technical Report,
    # Sec. 3.3, "Increasing Accumulation Precision": "limited to retaining around 14 bits", measured
    # on H800 with K = 4096). torch._scaled_mm(use_fast_accum=True) sets cuBLASLt's
    # CUBLASLT_MATMUL_DESC_FAST_ACCUM, whose precision NVIDIA does not document; the model takes it to
    # leave the whole K loop there (an assumption).
    ("fp8", True): Accumulator(
        "Hopper fp8, fast accumulation", 14, None, False,
        "DeepSeek-V3 report, Sec. 3.3 (Increasing Accumulation Precision): ~14 bits retained (measured on H800)",
        "calibrated"),
    # Precise mode promotes the partial sums to fp32 every few wgmma; the interval is not documented
    # for cuBLAS; DeepSeek's own kernels promote every N_C = 128 elements (4 WGMMAs), the figure used here.
    ("fp8", False): Accumulator(
        "Hopper fp8, promoted to fp32 every 128", 14, 128, False,
        "DeepSeek-V3 report, Sec. 3.3 (Increasing Accumulation Precision): ~14 bits, promotion interval N_C = 128",
        "calibrated"),
    # fp16/bf16/tf32 inputs accumulate in fp32 registers (PTX ISA, mma/wgmma .f32 accumulators; fp16
    # inputs may also use .f16 accumulators, which cuBLAS's fp32-compute GEMMs do not). Inside the
    # instruction the adder aligns and normalizes by truncation: Fasi, Higham, Mikaitis and Pranesh
    # (2021) on V100/T4/A100, Khattak and Mikaitis (2025, arXiv:2512.07004) on H100 and B200. The model
    # takes a truncating fp32 adder, u = 2^-23, with independent errors: the truncation is measured
    # by others, so comparisons that use it are calibrated. One truncation per instruction step: the
    # wgmma K of the type (16 products for fp16/bf16, 8 for tf32; PTX ISA) are added, aligned to the
    # largest exponent, and the sum truncated into the accumulator (an assumption of this model).
    ("bf16", False): Accumulator(
        "fp32 accumulator, truncating adder, one truncation per 16 products", 24, None, True,
        "PTX ISA (.f32 accumulator; wgmma k = 16 for bf16); Fasi et al. 2021, Khattak & Mikaitis 2025 (truncation)",
        "calibrated", 16),
    ("fp16", False): Accumulator(
        "fp32 accumulator, truncating adder, one truncation per 16 products", 24, None, True,
        "PTX ISA (.f32 accumulator; wgmma k = 16 for fp16); Fasi et al. 2021, Khattak & Mikaitis 2025 (truncation)",
        "calibrated", 16),
    ("tf32", False): Accumulator(
        "fp32 accumulator, truncating adder, one truncation per 8 products", 24, None, True,
        "PTX ISA (.f32 accumulator; wgmma k = 8 for tf32); Fasi et al. 2021, Khattak & Mikaitis 2025 (truncation)",
        "calibrated", 8),
    ("fp32", False): Accumulator("fp32 (FFMA, no tensor cores)", 24, None, False, "IEEE 754 binary32", "prediction"),
}



def accumulator(dtype: str, fast_accum: bool = False) -> Accumulator:
    """The :class:`Accumulator` of a Hopper GEMM with ``dtype`` inputs (from ``ACCUMULATORS``).

    Explained in :ref:`tensor_cores` > 3. Precision against an fp64 reference.

    Parameters
    ----------
    dtype : str
        Input format: ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"`` or ``"fp8"`` (either fp8 format).
    fast_accum : bool, optional
        cuBLAS's fast accumulation (fp8 only).

    Returns
    -------
    Accumulator
        Significand bits, promotion interval, truncation, block, source and label.

    Raises
    ------
    ValueError
        If ``dtype`` is unknown or ``fast_accum`` is True for a format other than fp8.

    Examples
    --------
    >>> accumulator("fp8", fast_accum=True).significand_bits
    14
    """
    if not isinstance(fast_accum, bool):
        raise ValueError(f"fast_accum must be True or False, got {fast_accum!r}")
    valid = sorted({key[0] for key in ACCUMULATORS})
    if not isinstance(dtype, str):
        raise ValueError(f"dtype must be one of {', '.join(map(repr, valid))}; got {dtype!r}")
    d = _ALIASES.get(dtype.lower(), dtype)
    d = "fp8" if d in ("fp8_e4m3", "fp8_e5m2") else d  # both fp8 formats use the same accumulator
    d = _check.choice("dtype", d, valid)
    if (d, fast_accum) not in ACCUMULATORS:
        raise ValueError(f"fast_accum=True exists only for fp8; got dtype={dtype!r}")
    return ACCUMULATORS[(d, fast_accum)]


@dataclass(frozen=True)
class AccumulationError:
    """Error of the accumulation alone (inputs exact) of a length-``k`` dot product, relative to
    ``sum |x_i y_i|`` (bounds) or normwise for random zero-mean inputs (typical)."""

    k: int
    significand_bits: int
    promote_every_k: int | None
    u_acc: float  # unit roundoff of one addition in the narrow accumulator
    chunks: int  # partial sums added in fp32
    typical_error: float
    probabilistic_bound: float  # holds with `probability` (Higham & Mary 2019)
    deterministic_bound: float
    lam: float
    probability: float


def accumulation_error(k: int, significand_bits: int, *, promote_every_k: int | None = None, truncate: bool = False,
                       block: int = 1, lam: float | None = None, probability: float = 0.99) -> AccumulationError:
    """Error of summing ``k`` products in a narrow accumulator, promoted to fp32 every so often.

    With ``u = 2^-p`` (``2^-(p-1)`` if ``truncate``), chunks of ``c = min(k, promote_every_k)``
    products summed in the narrow accumulator and ``ceil(k / c)`` chunk sums added in fp32
    (``u32 = 2^-24``), first order:

    - deterministic bound (Higham 2002, Sec. 3.1, applied twice): ``c u + ceil(k/c) u32``;
    - probabilistic bound (Higham & Mary 2019): ``lam (sqrt(c) u + sqrt(ceil(k/c)) u32)``, with
      ``lam`` chosen so that it holds with ``probability`` over the ``c + ceil(k/c)`` roundings
      (:func:`lam_for_probability`), unless given;
    - typical rms relative error, independent zero-mean rounding errors of variance
      ``u^2 / (8 ln 2)`` on partial sums that grow like ``sqrt(j)``:
      ``sqrt((c u^2 + (k/c) u32^2) / (16 ln 2))`` (the second term only when promoted).

    Without promotion the error grows like ``sqrt(k)``; with it, it stops growing at
    ``u sqrt(c / (16 ln 2))``: what Hopper's fp8 "precise" mode shows.

    ``block`` products are added per rounding, so a chunk of ``c`` products is rounded
    ``m = ceil(c / block)`` times (``m`` replaces ``c`` above).

    ``truncate``: the adder chops toward zero, so each rounding has a relative error ``theta`` in
    ``[0, 2^-(p-1))`` (``u_acc = 2^-(p-1)``) of mean ``mu = 2^-p / (2 ln 2)`` and variance
    ``s2 = 2^-2p (1/(2 ln 2) - 1/(4 ln^2 2))`` (log-uniform significands), always against the
    sign of the partial sum ``s_i``. The error is ``-sum_i s_i theta_i``; with partial sums a random
    walk, ``E[(sum_i s_i)^2] = block m (m+1)(2m+1)/6`` and ``sum_i E[s_i^2] = block m (m+1)/2``, so
    relative to ``c^2 ~ c``: ``sqrt(mu^2 (m+1)(2m+1)/6 + s2 (m+1)/2)``. The bias term grows like
    ``k``, not ``sqrt(k)``. The probabilistic bound needs mean-zero errors, so for a truncating adder
    it is the deterministic one (``probability`` 1).

    Explained in :ref:`tensor_cores` > 3. Precision against an fp64 reference.

    Parameters
    ----------
    k : int
        Products summed [-], 1 to ``MAX_K``.
    significand_bits : int
        Significand bits p of the accumulator, implicit bit included [bit], 2 to 64 (fp32: 24).
    promote_every_k : int or None, optional
        Products summed before the partial sum is added into fp32 [-]; None: never.
    truncate : bool, optional
        The adder truncates (chops toward zero) instead of rounding to nearest.
    block : int, optional
        Products added per rounding [-], >= 1.
    lam : float or None, optional
        The probabilistic bound's lambda [-]; default: chosen from ``probability``.
    probability : float, optional
        Probability the probabilistic bound must hold with [-], in (0, 1).

    Returns
    -------
    AccumulationError
        The unit roundoff, chunks, typical error and both bounds (relative) [-], lambda and
        probability.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    fp32 (24 bits), K = 4096: the accumulation part of :func:`dot_error`.

    >>> round(accumulation_error(4096, 24).typical_error, 9)
    1.145e-06
    >>> e = accumulation_error(65536, 14, promote_every_k=128)   # Hopper fp8, precise
    >>> e.chunks, round(e.typical_error, 6)
    (512, 0.000207)
    >>> round(accumulation_error(65536, 24, truncate=True, block=16).typical_error, 6)   # bf16 on Hopper
    0.000102
    """
    kk = _check.integer("k", k, minimum=1, maximum=MAX_K)
    p = _check.integer("significand_bits", significand_bits, minimum=2, maximum=64)
    if not isinstance(truncate, bool):
        raise ValueError(f"truncate must be True or False, got {truncate!r}")
    blk = _check.integer("block", block, minimum=1, maximum=MAX_K)
    u = 2.0 ** -(p - 1) if truncate else 2.0**-p
    u32 = 2.0**-24
    if promote_every_k is None:
        c, chunks, hi = kk, 1, 0.0
    else:
        c = min(kk, _check.integer("promote_every_k", promote_every_k, minimum=1, maximum=MAX_K))
        chunks = -(-kk // c)
        hi = u32
    m = -(-c // blk)  # roundings per chunk
    n_round = m + (chunks if promote_every_k is not None else 0)
    if lam is None:
        lam_ = lam_for_probability(probability, n_round, min(u, 0.25))
    else:
        lam_ = _bounded("lam", lam, MAX_LAM)
        _bounded("probability", probability, 1.0 - 1e-12, minimum=1e-12)
    q = bound_probability(lam_, n_round, min(u, 0.25))
    det = m * u + chunks * hi
    if truncate:
        mu, s2 = 2.0**-p / (2 * math.log(2)), 4.0**-p * (1 / (2 * math.log(2)) - 1 / (4 * math.log(2) ** 2))
        typical = math.sqrt(mu**2 * (m + 1) * (2 * m + 1) / 6 + s2 * (m + 1) / 2 + chunks * hi**2 * ROUNDING_VARIANCE / 2)
        typical = min(typical, det)
        prob, q = det, 1.0  # biased errors: Higham & Mary's bound does not apply
    else:
        typical = math.sqrt((m * u**2 + chunks * hi**2) * ROUNDING_VARIANCE / 2)
        prob = min(det, lam_ * (math.sqrt(m) * u + math.sqrt(chunks) * hi))  # the deterministic one always holds
    return AccumulationError(kk, p, None if promote_every_k is None else c, u, chunks, typical, prob, det, lam_, q)


def tensor_core_accumulation_error(k: int, dtype: str, fast_accum: bool = False) -> AccumulationError:
    """:func:`accumulation_error` with the Hopper accumulator of ``dtype`` (``ACCUMULATORS``).

    Explained in :ref:`tensor_cores` > 3. Precision against an fp64 reference.

    Parameters
    ----------
    k : int
        Products summed [-], >= 1.
    dtype : str
        Input format: ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"`` or ``"fp8"``.
    fast_accum : bool, optional
        cuBLAS's fast accumulation (fp8 only).

    Returns
    -------
    AccumulationError
        As :func:`accumulation_error` returns it.

    Raises
    ------
    ValueError
        If ``dtype`` is unknown, ``fast_accum`` does not apply or ``k`` is out of range.

    Examples
    --------
    >>> round(tensor_core_accumulation_error(65536, "fp8", fast_accum=True).typical_error, 5)
    0.00469
    """
    a = accumulator(dtype, fast_accum)
    return accumulation_error(k, a.significand_bits, promote_every_k=a.promote_every_k, truncate=a.truncate, block=a.block)


def fit_significand_bits(k: int, typical_error: float, *, promote_every_k: int | None = None) -> float:
    """The accumulator precision that makes :func:`accumulation_error`'s typical error equal a measured one.

    The inverse of the model, for a **fit**; the result may be fractional.

    Explained in :ref:`tensor_cores` > 3. Precision against an fp64 reference.

    Parameters
    ----------
    k : int
        Products summed [-], >= 1.
    typical_error : float
        Measured rms relative error of the accumulation [-], in (0, 1].
    promote_every_k : int or None, optional
        Products summed before promotion to fp32 [-]; None: never.

    Returns
    -------
    float
        Significand bits p [bit].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(fit_significand_bits(4096, accumulation_error(4096, 14).typical_error), 6)
    14.0
    """
    kk = _check.integer("k", k, minimum=1, maximum=MAX_K)
    err = _bounded("typical_error", typical_error, 1.0, minimum=1e-30)
    c = kk if promote_every_k is None else min(kk, _check.integer("promote_every_k", promote_every_k, minimum=1, maximum=MAX_K))
    # err^2 = c u^2 RV / 2 (the fp32 part neglected)  ->  u = err / sqrt(c RV / 2)
    u = err / math.sqrt(c * ROUNDING_VARIANCE / 2)
    return -math.log2(u)


# --------------------------------------------------------------------------------------------
# Systolic arrays (TPU matrix units): the edge of one square array, where a source gives it
# --------------------------------------------------------------------------------------------
SYSTOLIC_ARRAY_EDGE = {
    "TPU v1": 256,  # Jouppi et al. 2017 (ISCA): one 256 x 256 8-bit MAC array
    "TPU v4": 128,  # Jouppi et al. 2023 (ISCA): four 128 x 128 MXUs per TensorCore
    "TPU v6e": 256,  # Google Cloud TPU documentation, "TPU v6e" (Trillium): 256 x 256 MXUs
}


def tensor_core_dot_error(k: int, dtype: str, fast_accum: bool = False) -> float:
    """Typical relative error of a Hopper tensor-core dot product against the exact one.

    Inputs rounded to ``dtype`` (``2 u_in^2`` of variance, as in :func:`dot_error`) plus the
    accumulation of :func:`tensor_core_accumulation_error`.

    Explained in :ref:`tensor_cores` > 3. Precision against an fp64 reference.

    Parameters
    ----------
    k : int
        Length of the dot product [-], >= 1.
    dtype : str
        Input format: ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"`` or ``"fp8"``.
    fast_accum : bool, optional
        cuBLAS's fast accumulation (fp8 only).

    Returns
    -------
    float
        Typical (rms) relative error [-].

    Raises
    ------
    ValueError
        If ``dtype`` is unknown, ``fast_accum`` does not apply or ``k`` is out of range.

    Examples
    --------
    >>> round(tensor_core_dot_error(4096, "bf16"), 5)                  # input rounding dominates
    0.00235
    >>> round(tensor_core_dot_error(65536, "fp8", fast_accum=True), 4)  # E4M3 inputs dominate still
    0.0378
    """
    fin = number_format(dtype)
    acc = tensor_core_accumulation_error(k, dtype, fast_accum).typical_error
    return math.sqrt(2 * fin.unit_roundoff**2 * ROUNDING_VARIANCE + acc**2)


# --------------------------------------------------------------------------------------------
# The GEMM tile hierarchy: the intensity each level needs (explained in :ref:`tensor_cores` >
# The GEMM tile hierarchy)
# --------------------------------------------------------------------------------------------
def _elem_bytes_arg(name: str, value) -> float:
    """An element size [B]: a number in [1/8, 16], or a number format's name (``"bf16"``, ``"nvfp4"``)."""
    if isinstance(value, str):
        return float(dtypes.bytes_per_element(value, param=name))
    return _check.in_range(name, value, 0.125, 16.0, "B")


def _catalog_gpu(gpu):
    try:
        return get_gpu(gpu)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"gpu must be a catalog GPU (name or record); got {gpu!r}") from exc


def tile_intensity_flop_per_byte(bm: int, bn: int, bk: int, bytes_per_elem=2) -> float:
    """FLOP per byte a ``bm x bn`` tile does on the operands it loads, one ``bk`` step at a time.

    Each step loads a ``bm x bk`` slice of A and a ``bk x bn`` slice of B and does ``2 bm bn bk``
    FLOP with them, so the intensity is ``2 bm bn / ((bm + bn) b)``: ``bk`` cancels, and only a
    bigger (and squarer) tile raises it. Applied to a thread-block tile it is the intensity of the
    loads from global memory (L2) into shared memory; applied to a warp tile (``mma.sync``) or to
    a ``wgmma`` instruction's ``64 x N`` tile, that of the reads from shared memory.

    Explained in :ref:`tensor_cores` > The GEMM tile hierarchy.

    Parameters
    ----------
    bm, bn, bk : int
        Tile rows, columns and depth of one step [-], each 1 to 2**16.
    bytes_per_elem : float or str, optional
        Element size of A and B [B] (1/8 to 16), or a number format's name (``"bf16"``).

    Returns
    -------
    float
        Arithmetic intensity [FLOP/B].

    Raises
    ------
    ValueError
        If a tile side is out of range or the element size is unknown.

    Examples
    --------
    >>> tile_intensity_flop_per_byte(128, 256, 64, 2)   # a Hopper block tile in bf16
    85.33333333333333
    >>> tile_intensity_flop_per_byte(64, 64, 16, "bf16")  # a 64 x 64 warp tile
    32.0
    """
    m_ = _check.integer("bm", bm, minimum=1, maximum=2**16)
    n_ = _check.integer("bn", bn, minimum=1, maximum=2**16)
    k_ = _check.integer("bk", bk, minimum=1, maximum=2**16)
    b = _elem_bytes_arg("bytes_per_elem", bytes_per_elem)
    return 2.0 * m_ * n_ * k_ / ((m_ * k_ + k_ * n_) * b)


def smem_ridge_flop_per_byte(flop_per_clock_per_sm: float) -> float:
    """FLOP per shared-memory byte an SM must do to keep its tensor cores busy.

    The SM's dense FLOP per clock over the bytes its shared memory delivers per clock (32 banks of
    4 B: ``SMEM_BANKS x SMEM_BANK_BYTES`` of :mod:`widgets.models.memory_hierarchy`). The clock
    cancels: the ridge is a property of the SM's design, whatever clock it runs at.

    Explained in :ref:`tensor_cores` > The GEMM tile hierarchy.

    Parameters
    ----------
    flop_per_clock_per_sm : float
        Dense FLOP per clock per SM for the data type [FLOP], 10**-6 to 10**9.

    Returns
    -------
    float
        Ridge intensity against shared memory [FLOP/B].

    Raises
    ------
    ValueError
        If the rate is out of range.

    Examples
    --------
    >>> smem_ridge_flop_per_byte(4096)   # H100/H200 bf16: 4096 FLOP vs 128 B per clock
    32.0
    >>> smem_ridge_flop_per_byte(2048)   # A100 bf16
    16.0
    """
    from .memory_hierarchy import SMEM_BANK_BYTES, SMEM_BANKS

    r = _bounded("flop_per_clock_per_sm", flop_per_clock_per_sm, MAX_FLOP_PER_CLOCK_PER_SM, minimum=1e-6)
    return r / (SMEM_BANKS * SMEM_BANK_BYTES)


def wave_intensity_flop_per_byte(bm: int, bn: int, bytes_per_elem=2, sms: int = 132, group_m: int = 8) -> float:
    """FLOP per byte of one wave of tiles, counting each row of A and column of B it needs once.

    A wave is ``sms`` tiles running at once. Programs numbered in groups of ``group_m`` tile-rows
    (the chapter's Triton kernel) cover ``group_m`` tile-rows and ``ceil(sms / group_m)``
    tile-columns, so if the L2 keeps what one tile loads for its neighbours, the wave reads
    ``group_m bm + ceil(sms/group_m) bn`` rows and columns from memory per step of K: the
    intensity the HBM sees. A lower bound on reuse would be the single tile
    (:func:`tile_intensity_flop_per_byte`); an upper bound, the whole GEMM's.

    Explained in :ref:`tensor_cores` > The GEMM tile hierarchy.

    Parameters
    ----------
    bm, bn : int
        Block tile [-], each 1 to 2**16.
    bytes_per_elem : float or str, optional
        Element size of A and B [B] (1/8 to 16), or a number format's name.
    sms : int, optional
        Tiles in one wave (one per SM) [-], 1 to 10**6.
    group_m : int, optional
        Tile-rows per group of the program order [-], 1 to ``sms``.

    Returns
    -------
    float
        Arithmetic intensity of the wave's HBM traffic [FLOP/B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(wave_intensity_flop_per_byte(128, 256, 2, 132, 8))   # 8 x 17 tiles share their rows and columns
    805
    """
    m_ = _check.integer("bm", bm, minimum=1, maximum=2**16)
    n_ = _check.integer("bn", bn, minimum=1, maximum=2**16)
    b = _elem_bytes_arg("bytes_per_elem", bytes_per_elem)
    s = _check.integer("sms", sms, minimum=1, maximum=MAX_SMS)
    g = _check.integer("group_m", group_m, minimum=1, maximum=s)
    cols = -(-s // g)
    return 2.0 * s * m_ * n_ / ((g * m_ + cols * n_) * b)


def smem_read_tile(bm: int, bn: int, warps: int = 8, wgmma: bool = True) -> tuple[int, int]:
    """The tile whose operands one instruction stream reads from shared memory.

    With ``wgmma`` (Hopper) a warpgroup's instruction is ``64 x N`` with N up to 256, both operands
    read from shared memory: ``(min(64, bm), min(bn, 256))`` (each warpgroup of a block reads its
    own). With ``mma.sync`` each warp loads its warp tile into registers once per step (``ldmatrix``);
    the block's warps are laid out 2 x (warps/2) over the tile (as CUTLASS's and Triton's default
    layouts do for 4 and 8 warps): ``(bm / 2, bn / (warps / 2))``; one warp takes the whole tile.

    Explained in :ref:`tensor_cores` > The GEMM tile hierarchy.

    Parameters
    ----------
    bm, bn : int
        Block tile [-], each 1 to 2**12.
    warps : int, optional
        Warps per block [-], 1 to 32.
    wgmma : bool, optional
        Hopper's warpgroup instruction (True) or ``mma.sync`` warp tiles (False).

    Returns
    -------
    tuple of int
        Rows and columns of the tile read per instruction stream [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> smem_read_tile(128, 256, 8), smem_read_tile(128, 256, 8, wgmma=False)
    ((64, 256), (64, 64))
    """
    m_ = _check.integer("bm", bm, minimum=1, maximum=2**12)
    n_ = _check.integer("bn", bn, minimum=1, maximum=2**12)
    w = _check.integer("warps", warps, minimum=1, maximum=32)
    if _check.flag("wgmma", wgmma):
        return min(64, m_), min(n_, 256)
    if w == 1:
        return m_, n_
    return max(1, m_ // 2), max(1, n_ // (w // 2))


@dataclass(frozen=True)
class PipelineStages:
    """How many shared-memory stages a tile's main loop needs to hide the load latency."""

    step_s: float  # time the tensor cores spend on one K step of the tile [s]
    bytes_per_s: float  # bytes per second one SM's loads must deliver [B/s]
    in_flight_bytes: float  # Little's law: bytes per SM requested and not yet arrived [B]
    stage_bytes: float  # bytes one stage holds (one K step of A and B) [B]
    stages_needed: int  # stages loading + the one being read + those held by MMAs in flight


def pipeline_stages(bm: int, bn: int, bk: int, bytes_per_elem, flop_per_s_per_sm: float,
                    latency_s: float, mma_in_flight: int = 1) -> PipelineStages:
    """Shared-memory stages a GEMM main loop needs (Little's law).

    One K step of a ``bm x bn`` tile does ``2 bm bn bk`` FLOP on a stage of ``(bm + bn) bk``
    elements; at ``flop_per_s_per_sm`` it lasts ``step_s``, so the SM consumes
    ``stage_bytes / step_s`` bytes per second. To sustain that at ``latency_s`` the loads must keep
    ``bytes_per_s x latency_s`` bytes in flight (:func:`widgets.models.memory_hierarchy.littles_law_bytes_in_flight`):
    ``ceil`` of that over ``stage_bytes`` stages being filled, plus the stages the consumers hold: the one
    being read and ``mma_in_flight`` more still read by asynchronous ``wgmma`` instructions not yet retired.
    A Hopper main loop keeps one ``wgmma`` in flight and releases a stage only after the next one is
    issued and the older one retired (CUTLASS ``sm90_mma_tma_gmma_ss_warpspecialized``:
    ``warpgroup_wait<K_PIPE_MMAS>()`` with ``K_PIPE_MMAS = 1``, the release pointer lagging the read
    pointer by it), so ``stages = 1 + mma_in_flight + ceil(in_flight / stage)``; ``mma_in_flight = 0``
    is a synchronous loop (``mma.sync``).

    Explained in :ref:`tensor_cores` > Feeding the tensor cores: TMA, mbarriers, warp specialization.

    Parameters
    ----------
    bm, bn, bk : int
        Block tile and K step [-], each 1 to 2**16.
    bytes_per_elem : float or str
        Element size of A and B [B] (1/8 to 16), or a number format's name.
    flop_per_s_per_sm : float
        Rate one SM's tensor cores run the tile at [FLOP/s], > 0.
    latency_s : float
        Load latency under load [s], > 0 and at most 1 s.
    mma_in_flight : int
        Stages still read by MMAs issued and not yet retired [-], 0 to 8 (1 for a Hopper ``wgmma`` loop).

    Returns
    -------
    PipelineStages
        Step time [s], bytes per second [B/s], bytes in flight [B], stage bytes [B], stages [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    H200 bf16 at the datasheet rate (989.4 TFLOP/s over 132 SMs), 128 x 256 x 64 tiles, 600 ns:

    >>> p = pipeline_stages(128, 256, 64, 2, 989.4e12 / 132, 600e-9)
    >>> round(p.step_s * 1e9), round(p.in_flight_bytes / 1024, 1), p.stages_needed
    (560, 51.5, 4)
    >>> pipeline_stages(128, 256, 64, 2, 989.4e12 / 132, 600e-9, mma_in_flight=0).stages_needed
    3
    """
    from .memory_hierarchy import littles_law_bytes_in_flight

    m_ = _check.integer("bm", bm, minimum=1, maximum=2**16)
    n_ = _check.integer("bn", bn, minimum=1, maximum=2**16)
    k_ = _check.integer("bk", bk, minimum=1, maximum=2**16)
    b = _elem_bytes_arg("bytes_per_elem", bytes_per_elem)
    rate = _bounded("flop_per_s_per_sm", flop_per_s_per_sm, MAX_FLOP_PER_S, minimum=1e-6)
    lat = _bounded("latency_s", latency_s, 1.0)
    held = _check.integer("mma_in_flight", mma_in_flight, minimum=0, maximum=8)
    stage = (m_ + n_) * k_ * b
    step = 2.0 * m_ * n_ * k_ / rate
    bw = stage / step
    flight = littles_law_bytes_in_flight(bw, lat)
    return PipelineStages(step, bw, flight, stage, 1 + held + math.ceil(flight / stage - 1e-12))


@dataclass(frozen=True)
class TileHierarchy:
    """A tiled GEMM's intensity at each level of the memory hierarchy against that level's ridge."""

    block_intensity: float  # per block tile: loads from L2 into shared memory [FLOP/B]
    smem_intensity: float  # per warp (or wgmma) tile: reads from shared memory [FLOP/B]
    wave_intensity: float  # per wave, rows and columns loaded once from HBM [FLOP/B]
    hbm_ridge: float  # peak / HBM bandwidth [FLOP/B]
    l2_ridge: float | None  # peak / L2 bandwidth, where an L2 bandwidth is given [FLOP/B]
    smem_ridge: float  # FLOP per clock per SM / 128 B per clock per SM [FLOP/B]
    peak_flop_per_s: float  # dense peak [FLOP/s]
    wave_efficiency: float  # of the m x n x k GEMM with this tile [-]
    level_flop_per_s: dict  # level -> intensity x bandwidth (and "compute": peak x wave efficiency) [FLOP/s]
    attainable_flop_per_s: float  # the smallest of them [FLOP/s]
    bound: str  # the level that sets it
    smem_bytes: int  # stages x (bm + bn) x bk x element size [B]
    smem_limit_bytes: int | None  # shared memory one block may opt in to (None: arch not described) [B]
    acc_registers_per_thread: float  # fp32 accumulators of the tile over the block's threads [-]

    @property
    def fits(self) -> bool:
        """Whether the stages fit the block's shared memory and the accumulators 255 registers."""
        smem_ok = self.smem_limit_bytes is None or self.smem_bytes <= self.smem_limit_bytes
        return smem_ok and self.acc_registers_per_thread <= 255


def tile_hierarchy(gpu, dtype: str, bm: int = 128, bn: int = 256, bk: int = 64, wm: int = 64, wn: int = 256,
                   stages: int = 3, warps: int = 8, *, m: int = 4096, n: int = 4096, k: int = 4096,
                   group_m: int = 8, l2_bytes_per_s: float | None = None) -> TileHierarchy:
    """The roofline of a tiled GEMM at each level: HBM, L2 (where given), shared memory, compute.

    Levels and their intensities: **HBM** sees a wave's rows and columns once
    (:func:`wave_intensity_flop_per_byte`); **L2** feeds each block tile's loads
    (:func:`tile_intensity_flop_per_byte` of ``bm x bn``); **shared memory** feeds the tensor cores
    one warp tile (``mma.sync``) or one ``wgmma`` tile (``wm x wn``, both operands read from shared
    memory) at a time, against a bandwidth of 128 B per clock per SM at the clock the datasheet
    peak assumes (:func:`widgets.models.memory_hierarchy.smem_bytes_per_s`). Compute is the peak
    times the wave efficiency of the ``m x n`` output. The attainable rate is the smallest
    (:func:`widgets.models.memory_hierarchy.hierarchical_attainable_flop_per_s`). The catalog
    publishes no L2 bandwidth: pass a measured one to include that level.

    Explained in :ref:`tensor_cores` > The GEMM tile hierarchy.

    Parameters
    ----------
    gpu : str or ~widgets.hardware.GPU
        A catalog GPU with a dense ``dtype`` peak.
    dtype : str
        Input format, a catalog peak key (``"bf16"``, ``"fp8"``...).
    bm, bn, bk : int, optional
        Block tile and K step [-], each 1 to 2**12.
    wm, wn : int, optional
        Warp tile (or wgmma tile) [-], each 1 to 2**12, at most the block tile.
    stages : int, optional
        Shared-memory stages [-], 1 to 16.
    warps : int, optional
        Warps per block [-], 1 to 32.
    m, n, k : int, optional
        The GEMM's shape for the wave efficiency [-], each 1 to 2**24.
    group_m : int, optional
        Tile-rows per group of the program order [-], 1 to the SM count.
    l2_bytes_per_s : float or None, optional
        A measured L2 bandwidth [B/s], > 0; None leaves the L2 level out.

    Returns
    -------
    TileHierarchy
        Intensities and ridges [FLOP/B], the rate each level allows and the bound [FLOP/s],
        shared memory [B] and accumulator registers per thread [-].

    Raises
    ------
    ValueError
        If the GPU or data type is unknown, or an input is out of range.

    Examples
    --------
    >>> h = tile_hierarchy("H200-SXM", "bf16")              # 128 x 256 block, 64 x 256 wgmma tile
    >>> round(h.block_intensity), round(h.smem_intensity, 1), h.smem_ridge, h.bound
    (85, 51.2, 32.0, 'compute')
    >>> tile_hierarchy("H200-SXM", "bf16", 64, 64, 64, 64, 64, 4, 4).smem_intensity   # at the ridge
    32.0
    """
    from .memory_hierarchy import hierarchical_attainable_flop_per_s, smem_bytes_per_s

    g = _catalog_gpu(gpu)
    d = _check.choice("dtype", dtype, dtypes.PEAK_DTYPES)
    peak = g.peak(d, param="dtype")
    b = float(dtypes.bytes_per_element(d))
    bm_ = _check.integer("bm", bm, minimum=1, maximum=2**12)
    bn_ = _check.integer("bn", bn, minimum=1, maximum=2**12)
    bk_ = _check.integer("bk", bk, minimum=1, maximum=2**12)
    wm_ = _check.integer("wm", wm, minimum=1, maximum=bm_)
    wn_ = _check.integer("wn", wn, minimum=1, maximum=bn_)
    st = _check.integer("stages", stages, minimum=1, maximum=16)
    w = _check.integer("warps", warps, minimum=1, maximum=32)
    m_ = _check.integer("m", m, minimum=1, maximum=2**24)
    n_ = _check.integer("n", n, minimum=1, maximum=2**24)
    _check.integer("k", k, minimum=1, maximum=2**24)
    gm = _check.integer("group_m", group_m, minimum=1, maximum=g.sms)
    l2 = None if l2_bytes_per_s is None else _bounded("l2_bytes_per_s", l2_bytes_per_s, MAX_FLOP_PER_S, minimum=1.0)
    rate = g.flop_per_clock_per_sm.get(d) or peak / (g.sms * g.clock_for(d))
    block_i = tile_intensity_flop_per_byte(bm_, bn_, bk_, b)
    smem_i = tile_intensity_flop_per_byte(wm_, wn_, bk_, b)
    wave_i = wave_intensity_flop_per_byte(bm_, bn_, b, g.sms, gm)
    smem_bw = smem_bytes_per_s(g.sms, g.clock_for(d))
    weff = gemm_waves(m_, n_, bm_, bn_, g.sms)[2]
    levels = {"HBM": (wave_i, g.hbm_bytes_per_s)}
    if l2 is not None:
        levels["L2"] = (block_i, l2)
    levels["shared memory"] = (smem_i, smem_bw)
    rates = {name: i * bw for name, (i, bw) in levels.items()}
    rates["compute"] = peak * weff
    best, bound = hierarchical_attainable_flop_per_s(peak * weff, levels)
    lim = g.arch_limits
    return TileHierarchy(
        block_i, smem_i, wave_i, peak / g.hbm_bytes_per_s, None if l2 is None else peak / l2,
        smem_ridge_flop_per_byte(rate), peak, weff, rates, best, bound,
        int(round(st * (bm_ + bn_) * bk_ * b)), lim.smem_per_block_optin_bytes if lim else None,
        bm_ * bn_ / (w * 32),
    )


# --------------------------------------------------------------------------------------------
# Epilogue fusion (explained in :ref:`tensor_cores` > Feeding the tensor cores: TMA, mbarriers,
# warp specialization)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpilogueEstimate:
    """A GEMM followed by elementwise ops, eagerly (each op one pass over C) and fused."""

    gemm_s: float  # the GEMM alone (gemm_estimate) [s]
    epilogue_bytes: int  # what the eager ops read and write [B]
    epilogue_s: float  # their memory time plus one launch each [s]
    eager_s: float  # GEMM + eager ops [s]
    fused_s: float  # the GEMM with the ops in its epilogue (same bytes as the GEMM) [s]
    speedup: float  # eager_s / fused_s [-]


def epilogue_fusion_estimate(m: int, n: int, k: int, peak_flop_per_s: float, bytes_per_s: float, sms: int, *,
                             n_ops: int = 2, out_bytes: int = 2, launch_s: float = 0.0, tile_m: int = 128,
                             tile_n: int = 256) -> EpilogueEstimate:
    """Time saved by fusing ``n_ops`` elementwise ops (bias, activation) into a GEMM's epilogue.

    Eagerly each op reads C and writes it back
    (:func:`widgets.models.memory_hierarchy.elementwise_chain_bytes`) and costs a launch; fused,
    the ops run on the fp32 tile in registers before the one store the GEMM makes anyway, so they
    cost no bytes (their FLOP are negligible beside ``2MNK``).

    Explained in :ref:`tensor_cores` > Feeding the tensor cores: TMA, mbarriers, warp specialization.

    Parameters
    ----------
    m, n, k : int
        GEMM shape [-], each >= 1.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.
    bytes_per_s : float
        Memory bandwidth [B/s], > 0.
    sms : int
        SMs [-], >= 1.
    n_ops : int, optional
        Elementwise ops after the GEMM [-], 1 to 64.
    out_bytes : int, optional
        Element size of C [B]: 1, 2, 4 or 8.
    launch_s : float, optional
        Cost of one extra kernel launch [s], 0 to 1.
    tile_m, tile_n : int, optional
        The GEMM's tile [-], each >= 1.

    Returns
    -------
    EpilogueEstimate
        GEMM, epilogue, eager and fused times [s], the epilogue's bytes [B], the speed-up [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    H200 bf16, 8192 x 8192 x 1024 with bias and GELU: the two eager passes move 512 MiB.

    >>> e = epilogue_fusion_estimate(8192, 8192, 1024, 989.4e12, 4.8e12, 132)
    >>> e.epilogue_bytes // 2**20, round(e.speedup, 2)
    (512, 1.78)
    """
    from .memory_hierarchy import elementwise_chain_bytes

    ops = _check.integer("n_ops", n_ops, minimum=1, maximum=64)
    ob = _check.integer("out_bytes", out_bytes, minimum=1, maximum=8)
    if ob not in (1, 2, 4, 8):
        raise ValueError(f"out_bytes must be 1, 2, 4 or 8, got {out_bytes!r}")
    launch = _check.in_range("launch_s", launch_s, 0.0, 1.0, "s")
    g = gemm_estimate(m, n, k, peak_flop_per_s, bytes_per_s, sms, tile_m=tile_m, tile_n=tile_n,
                      in_bytes=2, out_bytes=ob)
    eb = elementwise_chain_bytes(int(m) * int(n), ops, ob)
    ep = eb / float(bytes_per_s) + ops * launch
    return EpilogueEstimate(g.time_s, eb, ep, g.time_s + ep, g.time_s, (g.time_s + ep) / g.time_s)


# --------------------------------------------------------------------------------------------
# Power and data dependence (explained in :ref:`tensor_cores` > Power and data dependence)
# --------------------------------------------------------------------------------------------
DATA_KINDS = ("zeros", "ones", "randn", "sparse")


def bf16_bit_patterns(values) -> np.ndarray:
    """The bf16 encodings (16-bit patterns) of ``values``, rounded to nearest even.

    The top 16 bits of each value's fp32 encoding after adding the round-to-nearest-even bias.

    Explained in :ref:`tensor_cores` > Power and data dependence.

    Parameters
    ----------
    values : array_like of float
        Finite values [-], at most ``MAX_ELEMENTS * 100`` of them.

    Returns
    -------
    numpy.ndarray
        uint16 patterns [-], the shape of ``values``.

    Raises
    ------
    ValueError
        If ``values`` is empty, too long or holds a non-finite number.

    Examples
    --------
    >>> [hex(b) for b in bf16_bit_patterns([1.0, -2.0, 0.0])]
    ['0x3f80', '0xc000', '0x0']
    """
    if isinstance(values, (str, bytes)) or values is None or isinstance(values, bool):
        raise ValueError(f"values must be an array of finite numbers, got {values!r:.80}")
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be an array of finite numbers, got {values!r:.80}") from exc
    if x.size == 0 or x.size > MAX_ELEMENTS * 100 or not np.all(np.isfinite(x)) or np.abs(x).max() > 3.3e38:
        raise ValueError(f"values must hold 1 to {MAX_ELEMENTS * 100} finite numbers within bf16's range, "
                         f"got {x.size} (or one out of range)")
    x = x.astype(np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype(np.uint16)


def bit_toggle_fraction(values, bits: int = 16) -> float:
    """Mean fraction of bits that flip from one word to the next in a stream of ``bits``-bit words.

    The switching activity of a multiplier input fed the stream: dynamic power is proportional to
    it (``P = a C V^2 f`` with activity ``a``), which is why a GEMM on random data draws more power
    than the same GEMM on zeros or on a constant.

    Explained in :ref:`tensor_cores` > Power and data dependence.

    Parameters
    ----------
    values : array_like of int
        Encodings [-], two or more, each 0 to 2**bits - 1 (the last axis is the stream).
    bits : int, optional
        Word width [bit], 1 to 64.

    Returns
    -------
    float
        Fraction of bits toggled per word [-], 0 to 1.

    Raises
    ------
    ValueError
        If fewer than two words, a word out of range or ``bits`` out of range.

    Examples
    --------
    >>> bit_toggle_fraction([0, 0, 0, 0])
    0.0
    >>> bit_toggle_fraction([0x0000, 0xFFFF, 0x0000])
    1.0
    """
    w = _check.integer("bits", bits, minimum=1, maximum=64)
    if isinstance(values, (str, bytes)) or values is None or isinstance(values, bool):
        raise ValueError(f"values must be an array of integers, got {values!r:.80}")
    try:
        p = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be an array of integers, got {values!r:.80}") from exc
    if p.ndim == 0 or p.shape[-1] < 2 or p.size > MAX_ELEMENTS * 100 or not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"values must be an array of at least two integers along its last axis, got {values!r:.80}")
    if p.min() < 0 or (w < 64 and int(p.max()) >= 2**w):
        raise ValueError(f"values must be integers in [0, 2**{w}), got values from {p.min()} to {p.max()}")
    x = p.astype(np.uint64)
    diff = x[..., 1:] ^ x[..., :-1]
    flips = np.zeros(diff.shape, dtype=np.float64)
    for i in range(w):
        flips += (diff >> np.uint64(i)) & np.uint64(1)
    return float(flips.mean() / w)


def operand_toggle_fraction(kind: str, zero_fraction: float = 0.75, n: int = 4096, seed: int = 0) -> float:
    """bf16 bit-toggle fraction along K of one kind of GEMM operand (as the data-dependence experiment makes it).

    ``"zeros"`` and ``"ones"`` never toggle; ``"randn"`` is standard normal; ``"sparse"`` is
    standard normal with ``zero_fraction`` of its entries set to zero at random places.

    Explained in :ref:`tensor_cores` > Power and data dependence.

    Parameters
    ----------
    kind : str
        ``"zeros"``, ``"ones"``, ``"randn"`` or ``"sparse"``.
    zero_fraction : float, optional
        Share of zeros in ``"sparse"`` [-], 0 to 1.
    n : int, optional
        Values drawn [-], 2 to 10**6.
    seed : int, optional
        Random seed [-], >= 0.

    Returns
    -------
    float
        Fraction of the 16 bits that flip between neighbours [-].

    Raises
    ------
    ValueError
        If ``kind`` is unknown or a number is out of range.

    Examples
    --------
    >>> operand_toggle_fraction("ones"), round(operand_toggle_fraction("randn"), 2)
    (0.0, 0.35)
    """
    kd = _check.choice("kind", kind, DATA_KINDS)
    z = _check.fraction("zero_fraction", zero_fraction)
    size = _check.integer("n", n, minimum=2, maximum=10**6)
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0, maximum=2**63 - 1))
    if kd == "zeros":
        x = np.zeros(size)
    elif kd == "ones":
        x = np.ones(size)
    else:
        x = rng.standard_normal(size)
        if kd == "sparse":
            x = x * (rng.random(size) >= z)
    return bit_toggle_fraction(bf16_bit_patterns(x))


# --------------------------------------------------------------------------------------------
# Block-scaled formats (explained in :ref:`tensor_cores` > Block-scaled formats and what
# Blackwell changes)
# --------------------------------------------------------------------------------------------
BLOCK_SCALED = ("mxfp8", "mxfp4", "nvfp4")


def _round_to_format(x: np.ndarray, fmt: dtypes.DType) -> np.ndarray:
    """``x`` rounded to nearest (even) in ``fmt`` (normals and subnormals), saturated at its largest value."""
    emin = 1 - fmt.bias
    mag = np.abs(x)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    e = np.maximum(e, emin)
    q = np.exp2(e - fmt.man_bits)
    y = np.round(x / q) * q
    return np.clip(y, -fmt.max_finite, fmt.max_finite)


def block_scaled_quantize(values, fmt: str) -> np.ndarray:
    """``values`` quantized to a block-scaled format and back (what a GEMM on them would see).

    ``"mxfp8"``/``"mxfp4"`` (OCP MX v1.0, section 6.3): per block of 32, a power-of-two scale
    ``X = 2^(floor(log2 max|v|) - emax_elem)`` (E8M0), elements ``v / X`` rounded to E4M3 or E2M1
    and saturated. ``"nvfp4"`` (NVIDIA): per block of 16 an E4M3 scale ``max|v| / 6`` (rounded
    to E4M3, after a per-tensor fp32 scale that brings the block scales into E4M3's range), E2M1
    elements. Blocks run along the last axis, whose length must be a multiple of the block size.

    Explained in :ref:`tensor_cores` > Block-scaled formats and what Blackwell changes.

    Parameters
    ----------
    values : array_like of float
        Finite values [-]; last axis a multiple of the block size; at most ``MAX_ELEMENTS * 100``.
    fmt : str
        ``"mxfp8"``, ``"mxfp4"`` or ``"nvfp4"``.

    Returns
    -------
    numpy.ndarray
        The dequantized values [-], float64.

    Raises
    ------
    ValueError
        If the format is unknown or the values are not finite or do not fill whole blocks.

    Examples
    --------
    >>> block_scaled_quantize([0.1, 1.0, 2.9, 7.0] * 8, "mxfp4")[:4]   # scale 2^(2-2) = 1: the E2M1 grid
    array([0., 1., 3., 6.])
    """
    f = dtypes.get_dtype(_check.choice("fmt", fmt, BLOCK_SCALED), param="fmt")
    if isinstance(values, (str, bytes)) or values is None or isinstance(values, bool):
        raise ValueError(f"values must be an array of finite numbers, got {values!r:.80}")
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be an array of finite numbers, got {values!r:.80}") from exc
    bs = f.block_size
    if (x.ndim == 0 or x.size == 0 or x.size > MAX_ELEMENTS * 100 or x.shape[-1] % bs
            or not np.all(np.isfinite(x)) or np.abs(x).max() > 1e30):
        raise ValueError(f"values must be finite numbers (|v| <= 1e30) filling whole blocks of {bs} along the last "
                         f"axis, got shape {x.shape}")
    elem = dtypes.get_dtype(f.element)
    blocks = x.reshape(-1, bs)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    if f.name == "nvfp4":
        e4m3 = dtypes.get_dtype("fp8_e4m3")
        t_amax = float(np.abs(x).max())
        tensor_scale = t_amax / (e4m3.max_finite * elem.max_finite) if t_amax > 0 else 1.0
        s = _round_to_format(amax / elem.max_finite / tensor_scale, e4m3) * tensor_scale
    else:
        emax_elem = math.floor(math.log2(elem.max_finite))
        with np.errstate(divide="ignore"):
            e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - emax_elem
        s = np.exp2(np.clip(e, -127, 127))
    s = np.where(s > 0, s, 1.0)
    q = _round_to_format(blocks / s, elem) * s
    return q.reshape(x.shape)


def quantization_error(fmt: str, n: int = 32768, seed: int = 0) -> float:
    """Relative rms error of standard-normal data quantized to ``fmt``, ``||q - x|| / ||x||``.

    Block-scaled formats through :func:`block_scaled_quantize`; plain formats (``"bf16"``,
    ``"fp8_e4m3"``...) with one per-tensor scale that maps the largest value to the format's
    largest (as ``torch._scaled_mm`` users do for fp8).

    Explained in :ref:`tensor_cores` > Block-scaled formats and what Blackwell changes.

    Parameters
    ----------
    fmt : str
        ``"mxfp8"``, ``"mxfp4"``, ``"nvfp4"``, or a plain float format of the registry.
    n : int, optional
        Values drawn [-], 256 to 10**6, a multiple of 32.
    seed : int, optional
        Random seed [-], >= 0.

    Returns
    -------
    float
        Relative error [-].

    Raises
    ------
    ValueError
        If the format is unknown (or an integer format) or ``n`` is out of range.

    Examples
    --------
    >>> round(quantization_error("bf16"), 4), round(quantization_error("mxfp8"), 3)
    (0.0017, 0.029)
    """
    size = _check.integer("n", n, minimum=256, maximum=10**6)
    if size % 32:
        raise ValueError(f"n must be a multiple of 32, got {n!r}")
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0, maximum=2**63 - 1))
    x = rng.standard_normal(size)
    if isinstance(fmt, str) and fmt.lower() in BLOCK_SCALED:
        q = block_scaled_quantize(x, fmt.lower())
    else:
        f = dtypes.get_dtype(fmt, param="fmt")
        if f.kind != "float" or f.block_size != 1:
            raise ValueError(f"fmt must be a float format or one of {BLOCK_SCALED}, got {fmt!r}")
        scale = np.abs(x).max() / f.max_finite
        q = _round_to_format(x / scale, f) * scale
    return float(np.linalg.norm(q - x) / np.linalg.norm(x))


# --------------------------------------------------------------------------------------------
# 2:4 sparsity and grouped GEMM (explained in :ref:`tensor_cores` > 2:4 sparsity and grouped GEMM)
# --------------------------------------------------------------------------------------------
SPARSE_2_4_INDEX_BITS = 2  # per kept value: its position among 4 (Mishra et al. 2021, section 3)


def sparse_2_4_bytes(rows: int, cols: int, bytes_per_elem=2) -> float:
    """Bytes of a 2:4-sparse matrix as the sparse tensor cores read it.

    Half the values plus a 2-bit index per kept value.

    Explained in :ref:`tensor_cores` > 2:4 sparsity and grouped GEMM.

    Parameters
    ----------
    rows, cols : int
        Matrix shape [-], each >= 1; ``cols`` a multiple of 4 (the groups run along it).
    bytes_per_elem : float or str, optional
        Element size [B] (1/8 to 16), or a number format's name.

    Returns
    -------
    float
        Values plus metadata [B].

    Raises
    ------
    ValueError
        If a dimension is out of range or ``cols`` is not a multiple of 4.

    Examples
    --------
    >>> sparse_2_4_bytes(8192, 8192, 2) / (8192 * 8192 * 2)   # 16 + 2 bits of every 32: 0.5625
    0.5625
    """
    r = _check.integer("rows", rows, minimum=1, maximum=2**31)
    c = _check.integer("cols", cols, minimum=4, maximum=2**31)
    if c % 4:
        raise ValueError(f"cols must be a multiple of 4 for 2:4 groups, got {cols!r}")
    b = _elem_bytes_arg("bytes_per_elem", bytes_per_elem)
    kept = r * c // 2
    return kept * b + kept * SPARSE_2_4_INDEX_BITS / 8


def sparse_2_4_speedup(m: int, n: int, k: int, peak_flop_per_s: float, bytes_per_s: float, sms: int, *,
                       in_bytes: int = 2, tile_m: int = 128, tile_n: int = 256) -> float:
    """Predicted speed-up of a GEMM whose A (``m x k``) is 2:4 sparse, over the dense GEMM.

    The sparse tensor cores skip the zeros, so the math runs at twice the dense peak
    (:func:`sparse_flop_per_s`) with the same tiles and waves, and A's bytes shrink to
    :func:`sparse_2_4_bytes`; each GEMM takes the larger of its compute and memory time
    (:func:`gemm_estimate`). At most 2 where compute-bound; where A (the weights, with few tokens
    in ``n``) dominates the bytes, ``1 / 0.5625`` in bf16 from the bytes alone.

    Explained in :ref:`tensor_cores` > 2:4 sparsity and grouped GEMM.

    Parameters
    ----------
    m, n, k : int
        GEMM shape [-], each >= 1; ``k`` a multiple of 4.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.
    bytes_per_s : float
        Memory bandwidth [B/s], > 0.
    sms : int
        SMs [-], >= 1.
    in_bytes : int, optional
        Element size of A, B and C [B], 1 to 8.
    tile_m, tile_n : int, optional
        Output tile [-], each >= 1.

    Returns
    -------
    float
        Dense time over sparse time [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(sparse_2_4_speedup(8192, 8192, 8192, 989.4e12, 4.8e12, 132), 2)   # compute-bound: 2x
    2.0
    >>> round(sparse_2_4_speedup(8192, 16, 8192, 989.4e12, 4.8e12, 132, tile_n=16), 2)  # 16 tokens: bytes-bound
    1.77
    """
    b = _check.integer("in_bytes", in_bytes, minimum=1, maximum=8)
    dense = gemm_estimate(m, n, k, peak_flop_per_s, bytes_per_s, sms, in_bytes=b, tile_m=tile_m, tile_n=tile_n)
    kk = _check.integer("k", k, minimum=4)
    if kk % 4:
        raise ValueError(f"k must be a multiple of 4 for 2:4 groups along K, got {k!r}")
    sparse_peak = sparse_flop_per_s(peak_flop_per_s)
    fast = gemm_estimate(m, n, k, sparse_peak, bytes_per_s, sms, in_bytes=b, tile_m=tile_m, tile_n=tile_n)
    moved = dense.bytes_moved - int(m) * kk * b + sparse_2_4_bytes(int(m), kk, b)
    sparse_t = max(fast.compute_time_s, moved / float(bytes_per_s))
    return dense.time_s / sparse_t


@dataclass(frozen=True)
class GroupedGemmEstimate:
    """``groups`` equal GEMMs (MoE experts): one launch each, against one grouped launch."""

    per_group_s: float  # one group's GEMM on the whole GPU (gemm_estimate) [s]
    loop_s: float  # groups x max(per group, one launch) [s]
    grouped_s: float  # every group's tiles in one launch: waves over all tiles, + one launch [s]
    loop_wave_efficiency: float  # of one group alone [-]
    grouped_wave_efficiency: float  # of all groups' tiles together [-]
    speedup: float  # loop_s / grouped_s [-]


def grouped_gemm_estimate(groups: int, m: int, n: int, k: int, peak_flop_per_s: float, bytes_per_s: float, sms: int,
                          *, launch_s: float = 5e-6, tile_m: int = 128, tile_n: int = 256,
                          in_bytes: int = 2) -> GroupedGemmEstimate:
    """Many small GEMMs (``groups`` of ``m x n x k``, MoE experts) launched one by one or grouped.

    One by one, each GEMM is its own grid: its few tiles fill a fraction of a wave, and each costs
    at least a launch (the host issues launches about ``launch_s`` apart). Grouped (CUTLASS's
    grouped GEMM, ``torch._grouped_mm``) one grid runs all groups' tiles, so the waves are counted
    over ``groups x tiles`` and there is one launch.

    Explained in :ref:`tensor_cores` > 2:4 sparsity and grouped GEMM.

    Parameters
    ----------
    groups : int
        Number of GEMMs [-], 1 to 10**5.
    m, n, k : int
        Each GEMM's shape [-], each >= 1.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.
    bytes_per_s : float
        Memory bandwidth [B/s], > 0.
    sms : int
        SMs [-], >= 1.
    launch_s : float, optional
        Time between two launches from the host [s], 0 to 1.
    tile_m, tile_n : int, optional
        Output tile [-], each >= 1.
    in_bytes : int, optional
        Element size [B], 1 to 8.

    Returns
    -------
    GroupedGemmEstimate
        Per-group, loop and grouped times [s], both wave efficiencies and the speed-up [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    64 experts of 256 tokens, K = 2048, N = 1536 on an H200: 12 tiles each, a tenth of a wave.

    >>> e = grouped_gemm_estimate(64, 256, 1536, 2048, 989.4e12, 4.8e12, 132)
    >>> round(e.loop_wave_efficiency, 3), round(e.grouped_wave_efficiency, 3), round(e.speedup, 1)
    (0.091, 0.97, 10.1)
    """
    g = _check.integer("groups", groups, minimum=1, maximum=10**5)
    launch = _check.in_range("launch_s", launch_s, 0.0, 1.0, "s")
    b = _check.integer("in_bytes", in_bytes, minimum=1, maximum=8)
    one = gemm_estimate(m, n, k, peak_flop_per_s, bytes_per_s, sms, tile_m=tile_m, tile_n=tile_n, in_bytes=b)
    per_tile_s = one.compute_time_s / one.waves
    total_tiles = g * one.tiles
    waves = -(-total_tiles // int(sms))
    grouped = max(waves * per_tile_s, g * one.memory_time_s) + launch
    loop = g * max(one.time_s, launch)
    return GroupedGemmEstimate(one.time_s, loop, grouped, one.wave_efficiency, total_tiles / (waves * int(sms)),
                               loop / grouped)
