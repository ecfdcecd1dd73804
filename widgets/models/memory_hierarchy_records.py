"""What the memory-hierarchy chapter compares, recomputed from a record's raw measurements.

Torch-free (standard library and numpy; it lives in ``widgets.models`` so that importing it never
starts torch or Triton, unlike ``widgets.experiments``): the chapter, the tests and the book's
accuracy ledger read records through these functions, so every ratio comes from the measured
times and today's models, never from a number stored in the record.

Labels follow the book's rule (``widgets.accuracy``):

- **prediction**: the model's inputs are datasheet figures (the HBM bandwidth of the catalog),
  independent of what is measured;
- **calibrated**: the strided-read model with 32-byte sectors at the bandwidth experiment 1's
  Triton read reached (``triton_read_bytes_per_s``, a different, named micro-benchmark);
- **fit**: the same model with the 64-byte DRAM granule, at that bandwidth: the granule comes from
  the Nsight Compute counters of the same strided kernel at the same strides
  (``memory_hierarchy_ncu.json``, see ``ncu_granule_bytes``), so it is taken from the data compared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from ..accuracy import Row
from . import memory_hierarchy as model

TOPIC = "memory_hierarchy"
FLOAT_BYTES = 4
MiB = 2**20

# The L2 plateau: working sets from 16 MiB to 0.95 x the L2 (smaller ones read faster still, see
# ``small_working_set_rates``; near the L2's size the rate depends on the visiting order).
PLATEAU_MIN_BYTES = 16 * MiB
PLATEAU_MAX_FRACTION_OF_L2 = 0.95
SMALL_WS_MAX_BYTES = 8 * MiB
NEAR_L2_FRACTIONS = (0.9, 1.25)  # the window around the L2's size where the cliff falls
# The DRAM granule the Nsight Compute run measured on the H200 (memory_hierarchy_ncu.json: 16 DRAM
# bytes per 4-B float at strides >= 16, i.e. 64 B per lane); ``ncu_granule_bytes`` recomputes it.
NCU_GRANULE_BYTES = 64

# The counters the Nsight Compute script reads (benchmarks/h200/memory_hierarchy_ncu.sh).
NCU_METRICS = (
    "dram__sectors_read.sum",
    "dram__bytes_read.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors.sum",
)


def _field(mapping: Any, key: str, where: str):
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise ValueError(f"record field {where}{key!r} is missing")
    return mapping[key]


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"record field {where} must be a finite number > 0, got {value!r}")
    return float(value)


def _results(record: Mapping) -> Mapping:
    results = _field(record, "results", "")
    if not isinstance(results, Mapping):
        raise ValueError(f"record field 'results' must be a dict, got {type(results).__name__}")
    return results


def device_of(record: Mapping) -> str:
    """The device a record was measured on, as its provenance names it.

    Never raises: anything but a record with a provenance gives ``"unknown device"``.

    Explained in :ref:`memory_hierarchy` > Predict, then measure.

    Parameters
    ----------
    record : Mapping
        A measurement record.

    Returns
    -------
    str
        ``provenance.gpu`` or ``provenance.device``, else ``"unknown device"``.

    Examples
    --------
    >>> device_of({"provenance": {"gpu": "NVIDIA H200"}}), device_of({})
    ('NVIDIA H200', 'unknown device')
    """
    prov = record.get("provenance", {}) if isinstance(record, Mapping) else {}
    return str(prov.get("gpu") or prov.get("device") or "unknown device")


# ---------------------------------------------------------------------------------------------
# 1. HBM bandwidth
# ---------------------------------------------------------------------------------------------
BANDWIDTH_KERNELS = (
    ("triton_copy_bytes_per_s", "Triton copy (read + write)"),
    ("torch_copy_bytes_per_s", "torch copy_ (read + write)"),
    ("triton_read_bytes_per_s", "Triton read (reduction)"),
    ("torch_sum_bytes_per_s", "torch sum"),
)


def bandwidths(record: Mapping) -> dict:
    """The measured bandwidth of each of the four HBM kernels.

    Explained in :ref:`memory_hierarchy` > 1. HBM bandwidth: copy and read.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    dict
        ``{label: bandwidth [B/s]}`` for the Triton and torch copies, the Triton read and torch's sum.

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field).
    """
    bw = _field(_results(record), "hbm_bandwidth", "results.")
    return {
        label: _positive(_field(bw, key, "results.hbm_bandwidth."), f"hbm_bandwidth.{key}")
        for key, label in BANDWIDTH_KERNELS
    }


def bandwidth_spreads(record: Mapping) -> dict:
    """The slowest and fastest bandwidth of each HBM kernel over its repeats.

    Computed from the recorded times (``results.hbm_bandwidth.timings``); kernels without a
    recorded spread are left out.

    Explained in :ref:`memory_hierarchy` > 1. HBM bandwidth: copy and read.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    dict
        ``{label: (slowest [B/s], fastest [B/s])}``.

    Raises
    ------
    ValueError
        If ``results.hbm_bandwidth`` is missing.
    """
    bw = _field(_results(record), "hbm_bandwidth", "results.")
    timings = bw.get("timings") or {}
    nbytes = bw.get("nbytes")
    out = {}
    if not isinstance(timings, Mapping) or not isinstance(nbytes, (int, float)) or isinstance(nbytes, bool):
        return out
    keys = {"triton_copy": 2, "torch_copy": 2, "triton_read": 1, "torch_sum": 1}  # bytes moved per byte of buffer
    for (_key, label), name in zip(BANDWIDTH_KERNELS, keys):
        t = timings.get(name)
        if isinstance(t, Mapping):
            spread = spread_s(t)
            if spread and nbytes > 0:
                moved = keys[name] * nbytes
                out[label] = (moved / spread[1], moved / spread[0])
    return out


def copy_vs_torch(record: Mapping) -> float:
    """Triton copy bandwidth over torch's copy, from the two measured rates.

    Explained in :ref:`memory_hierarchy` > 1. HBM bandwidth: copy and read.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    float
        The ratio [-].

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field).
    """
    b = bandwidths(record)
    return b["Triton copy (read + write)"] / b["torch copy_ (read + write)"]


# The operand data of the GEMMs the measured roofline takes as its compute ceiling: random normal.
# The tensor_cores record also holds a GEMM on all-zero operands ("data": "zeros"), which draws
# less power and runs faster (866.6 against 767.6 TFLOP/s on the H200): not a ceiling for real data.
GEMM_OPERAND_DATA = "randn"
# The measured bandwidth the measured roofline uses (experiment 1): a copy, half reads and half
# writes, the mix of an elementwise kernel.
MEASURED_ROOFLINE_BANDWIDTH = "Triton copy (read + write)"


def measured_gemm_flop_per_s(record_tc: Mapping, dtype: str = "bf16") -> Optional[float]:
    """The fastest GEMM on random operands a tensor_cores record holds for one data type.

    Never raises: a malformed record or row counts as no row.

    Rows of ``results.throughput`` with ``"data"`` other than ``"randn"`` (all-zero operands, which
    toggle no bits and draw less power) are left out; rows without ``"data"`` are random, the
    experiment's default.

    Explained in :ref:`memory_hierarchy` > The measured ceilings.

    Parameters
    ----------
    record_tc : Mapping
        The tensor_cores chapter's record (``widgets/data/h200/tensor_cores.json``).
    dtype : str, optional
        The data type, e.g. ``"bf16"``.

    Returns
    -------
    float or None
        The largest ``flop_per_s`` [FLOP/s] of a random-operand row of ``dtype``; None if there is none.
    """
    rows = (record_tc.get("results") or {}).get("throughput") if isinstance(record_tc, Mapping) else None
    rates = [
        r.get("flop_per_s")
        for r in rows or []
        if isinstance(r, Mapping) and r.get("dtype") == dtype and r.get("data", GEMM_OPERAND_DATA) == GEMM_OPERAND_DATA
    ]
    rates = [float(r) for r in rates if isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0]
    return max(rates) if rates else None


def measured_ridge(record_tc: Mapping, record_mh: Mapping, dtype: str = "bf16",
                   kernel: str = MEASURED_ROOFLINE_BANDWIDTH) -> Optional[float]:
    """The ridge point of the measured roofline: the best random-operand GEMM over a measured bandwidth.

    Explained in :ref:`memory_hierarchy` > The measured ceilings.

    Parameters
    ----------
    record_tc : Mapping
        The tensor_cores chapter's record (``widgets/data/h200/tensor_cores.json``).
    record_mh : Mapping
        This chapter's record (``widgets/data/h200/memory_hierarchy.json``).
    dtype : str, optional
        The GEMM's data type.
    kernel : str, optional
        Which of :func:`bandwidths` divides: the Triton copy by default, ``"Triton read (reduction)"``
        for a read-only kernel.

    Returns
    -------
    float or None
        The ridge point [FLOP/B]; None if either record lacks its figure.

    Raises
    ------
    KeyError
        If ``kernel`` is not one of :func:`bandwidths`'s labels.
    """
    peak = measured_gemm_flop_per_s(record_tc, dtype)
    try:
        bw = bandwidths(record_mh)
    except ValueError:
        return None
    return None if peak is None else model.ridge_intensity(peak, bw[kernel])


# ---------------------------------------------------------------------------------------------
# 2. Working-set sweep
# ---------------------------------------------------------------------------------------------
def sweep_points(record: Mapping) -> tuple[list, list, int]:
    """The working-set sweep: sizes, bandwidths (bytes read / median time) and the L2 size.

    Explained in :ref:`memory_hierarchy` > 2. The L2-to-HBM cliff.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    ws_bytes : list of int
        Working-set sizes [B].
    bytes_per_s : list of float
        Bandwidth at each size [B/s].
    l2_bytes : int
        The L2's size [B]; 0 when the run had no L2 (a CPU run).

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field), or the sweep is empty.
    """
    sweep = _field(_results(record), "working_set_sweep", "results.")
    l2_raw = _field(sweep, "l2_bytes", "results.working_set_sweep.")
    l2 = 0 if l2_raw in (0, None) else int(_positive(l2_raw, "working_set_sweep.l2_bytes"))  # 0/None: no L2 (a CPU run)
    ws, bw = [], []
    points = _field(sweep, "points", "results.working_set_sweep.")
    if not isinstance(points, list):
        raise ValueError(f"record field results.working_set_sweep.points must be a list, got {type(points).__name__}")
    for i, p in enumerate(points):
        ws.append(int(_positive(_field(p, "ws_bytes", f"points[{i}]."), f"points[{i}].ws_bytes")))
        read = _positive(_field(p, "bytes_read", f"points[{i}]."), f"points[{i}].bytes_read")
        bw.append(read / _positive(_field(p, "time_s", f"points[{i}]."), f"points[{i}].time_s"))
    if not ws:
        raise ValueError("record field results.working_set_sweep.points is empty")
    return ws, bw, l2


def _median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _l2_of(record: Mapping) -> int:
    l2 = sweep_points(record)[2]
    if not l2:
        raise ValueError(
            "record field results.working_set_sweep.l2_bytes is 0: the run had no L2 to measure (a CPU run)"
        )
    return l2


def l2_plateau_and_hbm_level(record: Mapping) -> tuple[float, float]:
    """The sweep's median bandwidth on the L2 plateau and at HBM working sets.

    The plateau is working sets from 16 MiB to 0.95 x the L2 (smaller working sets are still
    faster, so they are left out); HBM is working sets of 8 L2s or more.

    Explained in :ref:`memory_hierarchy` > 2. The L2-to-HBM cliff.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    l2_bytes_per_s : float
        Median bandwidth on the L2 plateau [B/s].
    hbm_bytes_per_s : float
        Median bandwidth at 8 x the L2 or more [B/s].

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field), the run had no L2, or either range has no point.
    """
    ws, bw, _ = sweep_points(record)
    l2 = _l2_of(record)
    inside = [b for w, b in zip(ws, bw) if PLATEAU_MIN_BYTES <= w <= PLATEAU_MAX_FRACTION_OF_L2 * l2]
    beyond = [b for w, b in zip(ws, bw) if w >= 8 * l2]
    if not inside or not beyond:
        raise ValueError("the working-set sweep needs points between 16 MiB and 0.95x the L2 and at 8x the L2 or more")
    return _median(inside), _median(beyond)


def small_working_set_rates(record: Mapping) -> list[tuple[int, float]]:
    """The sweep's working sets of 8 MiB or less (read faster than the plateau on the H200).

    Explained in :ref:`memory_hierarchy` > 2. The L2-to-HBM cliff.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    list of tuple
        ``(ws_bytes [B], bytes_per_s [B/s])`` per point.

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field).
    """
    ws, bw, _ = sweep_points(record)
    return [(w, b) for w, b in zip(ws, bw) if w <= SMALL_WS_MAX_BYTES]


def near_l2_points(record: Mapping) -> list[dict]:
    """The sweep's points from 0.9 x to 1.25 x the L2, in both visiting orders where the record has them.

    ``order`` is "coprime step" (the sweep; older records: "grid stride") or "grid stride"
    (``order_points``: step = number of programs).

    Explained in :ref:`memory_hierarchy` > 2. The L2-to-HBM cliff.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    list of dict
        ``{"ws_bytes" [B], "bytes_per_s" [B/s], "order"}`` per point, by size then order.

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field) or the run had no L2.
    """
    l2 = _l2_of(record)
    lo, hi = NEAR_L2_FRACTIONS
    sweep = _field(_results(record), "working_set_sweep", "results.")
    out = []
    for key in ("points", "order_points"):
        pts = sweep.get(key) or []
        if not isinstance(pts, list):
            raise ValueError(f"record field results.working_set_sweep.{key} must be a list, got {type(pts).__name__}")
        for i, p in enumerate(pts):
            if not isinstance(p, Mapping) or "time_s" not in p:  # an optional reading that failed
                continue
            w = int(_positive(_field(p, "ws_bytes", f"{key}[{i}]."), f"{key}[{i}].ws_bytes"))
            if not lo * l2 <= w <= hi * l2:
                continue
            rate = _positive(_field(p, "bytes_read", f"{key}[{i}]."), f"{key}[{i}].bytes_read") / _positive(
                p["time_s"], f"{key}[{i}].time_s"
            )
            step, programs = p.get("step"), p.get("programs")
            coprime = key == "points" and step is not None and step != programs
            out.append({"ws_bytes": w, "bytes_per_s": rate, "order": "coprime step" if coprime else "grid stride"})
    return sorted(out, key=lambda r: (r["ws_bytes"], r["order"]))


def ladder(record: Mapping, gpu) -> list[dict]:
    """The bandwidth of each rung of the hierarchy, where it comes from, and how much faster it is than the next.

    Shared memory is derived (32 banks x 4 B x SMs x boost clock), L2 and HBM are measured in
    ``record``, the host link comes from the catalog.

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).
    gpu : str or ~widgets.hardware.GPU
        A catalog name or record (:func:`widgets.hardware.get_gpu`).

    Returns
    -------
    list of dict
        ``{"level", "bytes_per_s" [B/s], "source", "times_next" [-] or None}`` per rung, fastest
        first.

    Raises
    ------
    ValueError
        If ``gpu`` is not in the catalog, or a field it reads is missing or not a positive finite number (the message names the field).
    """
    from ..hardware import get_gpu

    gpu = get_gpu(gpu)  # a catalog name or a GPU record; ValueError naming the valid ones
    plateau, hbm = l2_plateau_and_hbm_level(record)
    rungs = [
        (
            "shared memory (all SMs)",
            model.smem_bytes_per_s(gpu.sms, gpu.boost_clock_hz),
            "peak, derived: 32 banks x 4 B per clock at boost clock",
        ),
        ("L2", plateau, "measured: one kernel re-reading 16 MiB to 0.95x the L2"),
        ("HBM", hbm, "measured: the same kernel, working set ≥ 8× the L2"),
        (
            "host link (each way)",
            gpu.host_bytes_per_s,
            "peak: PCIe link rate (catalog); pinned-memory copies reach less, pageable copies less still",
        ),
    ]
    out = []
    for i, (name, rate, source) in enumerate(rungs):
        below = rungs[i + 1][1] if i + 1 < len(rungs) else None
        out.append(
            {"level": name, "bytes_per_s": rate, "source": source, "times_next": rate / below if below else None}
        )
    return out


# ---------------------------------------------------------------------------------------------
# 3. Strided reads
# ---------------------------------------------------------------------------------------------
def strided_points(record: Mapping, *, granule_bytes: int = NCU_GRANULE_BYTES) -> list[dict]:
    """Each stride's measurement and the three models' times, recomputed.

    - ``predicted_s``: 32-byte sectors at the datasheet HBM bandwidth (``hbm_bytes_per_s`` of
      the catalog GPU named in the provenance, else the H200's);
    - ``calibrated_s``: 32-byte sectors at the bandwidth experiment 1's Triton read reached
      (``results.hbm_bandwidth.triton_read_bytes_per_s``: a different, named micro-benchmark);
    - ``granule64_s``: DRAM granules of ``granule_bytes`` (64 B: what the ncu counter run measured,
      :func:`ncu_granule_bytes`) at that same bandwidth (a fit: the granule comes from the
      counters of this kernel at these strides).

    ``stride1_bytes_per_s`` is the strided kernel's own stride-1 bandwidth, for comparison.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).
    granule_bytes : int, optional
        DRAM granule of the third model [B].

    Returns
    -------
    list of dict
        Per stride: ``stride`` [-], ``n_elems`` [-], ``time_s`` [s], the three model times [s] and
        the bandwidths used [B/s].

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field), or there is no stride-1 point.
    """
    pts = _field(_results(record), "strided_access", "results.")
    if not isinstance(pts, list) or not pts:
        raise ValueError("record field results.strided_access must be a non-empty list")
    rows = []
    for i, p in enumerate(pts):
        s = model._int(
            f"strided_access[{i}].stride_elems",
            _field(p, "stride_elems", f"strided_access[{i}]."),
            minimum=1,
            maximum=model.MAX_INDEX,
        )
        n = model._int(
            f"strided_access[{i}].n_elems",
            _field(p, "n_elems", f"strided_access[{i}]."),
            minimum=1,
            maximum=model.MAX_INDEX,
        )
        t = _positive(_field(p, "time_s", f"strided_access[{i}]."), f"strided_access[{i}].time_s")
        rows.append(
            {
                "stride": int(s),
                "n_elems": int(n),
                "time_s": t,
                "min_s": p.get("time_min_s"),
                "max_s": p.get("time_max_s"),
            }
        )
    one = [r for r in rows if r["stride"] == 1]
    if not one:
        raise ValueError("record field results.strided_access has no stride-1 point to calibrate on")
    bw_stride1 = model.strided_read_bytes(one[0]["n_elems"], 1) / one[0]["time_s"]
    bw_read = calibration_bytes_per_s(record)
    datasheet = _datasheet_hbm(record)
    for r in rows:
        n, s = r["n_elems"], r["stride"]
        r["useful_bytes_per_s"] = n * FLOAT_BYTES / r["time_s"]
        r["predicted_s"] = model.strided_read_time_s(n, s, datasheet)
        r["calibrated_s"] = model.strided_read_time_s(n, s, bw_read)
        r["granule64_s"] = model.strided_read_time_s(n, s, bw_read, granule_bytes=granule_bytes)
        r["datasheet_bytes_per_s"] = datasheet
        r["calibration_bytes_per_s"] = bw_read
        r["stride1_bytes_per_s"] = bw_stride1
    return rows


def calibration_bytes_per_s(record: Mapping) -> float:
    """The strided model's calibration: experiment 1's Triton read bandwidth.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    float
        Bandwidth [B/s].

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field).
    """
    bw = _field(_results(record), "hbm_bandwidth", "results.")
    return _positive(
        _field(bw, "triton_read_bytes_per_s", "results.hbm_bandwidth."), "hbm_bandwidth.triton_read_bytes_per_s"
    )


def _datasheet_hbm(record: Mapping) -> float:
    from ..hardware import catalog_name_for, get_gpu

    name = catalog_name_for(device_of(record)) or "H200-SXM"
    return get_gpu(name).hbm_bytes_per_s


# ---------------------------------------------------------------------------------------------
# Accuracy ledger
# ---------------------------------------------------------------------------------------------
def accuracy_rows(record: Mapping) -> list[Row]:
    """Every comparison the chapter makes, recomputed from a record, as rows of the accuracy ledger.

    Old and new record formats: only the raw fields ``*_bytes_per_s``, ``bytes_read``/``time_s``
    and ``stride_elems``/``n_elems``/``time_s`` are read.

    Explained in :doc:`/book/accuracy` > Model accuracy.

    Parameters
    ----------
    record : Mapping
        The chapter's measurement record (``widgets/data/h200/memory_hierarchy.json`` or one
        written by ``python -m widgets.measure``).

    Returns
    -------
    list of ~widgets.accuracy.Row
        Each with its quantity, reference, model value, measured value, unit and label
        (prediction, calibrated or fit).

    Raises
    ------
    ValueError
        If a field it reads is missing or not a positive finite number (the message names the field).
    """
    device = device_of(record)
    datasheet = _datasheet_hbm(record)
    ds = f"datasheet HBM {datasheet / 1e12:.3g} TB/s"
    rows = [
        Row(TOPIC, f"HBM bandwidth: {label}", ds, datasheet, measured, "B/s", "prediction", device)
        for label, measured in bandwidths(record).items()
    ]
    if sweep_points(record)[2]:  # a GPU run (a CPU run records no L2)
        _, hbm_level = l2_plateau_and_hbm_level(record)
        rows.append(
            Row(
                TOPIC,
                "HBM bandwidth: re-read kernel, working set ≥ 8× L2",
                ds,
                datasheet,
                hbm_level,
                "B/s",
                "prediction",
                device,
            )
        )
    for p in strided_points(record):
        s = p["stride"]
        rows.append(
            Row(
                TOPIC,
                f"strided read time, stride {s}",
                f"32-B sectors, {ds}",
                p["predicted_s"],
                p["time_s"],
                "s",
                "prediction",
                device,
                note=""
                if s * FLOAT_BYTES < NCU_GRANULE_BYTES
                else (
                    "lanes 64 B or more apart: the ncu counters show the L2 fetching 64 B from DRAM per missed "
                    "32-B sector, twice the sector model's bytes"
                ),
            )
        )
    cal = "Triton read (experiment 1)"
    for p in strided_points(record):
        rows.append(
            Row(
                TOPIC,
                f"strided read time, stride {p['stride']}",
                f"32-B sectors at the {cal} bandwidth",
                p["calibrated_s"],
                p["time_s"],
                "s",
                "calibrated",
                device,
            )
        )
    for p in strided_points(record):
        if p["stride"] * FLOAT_BYTES >= NCU_GRANULE_BYTES:
            rows.append(
                Row(
                    TOPIC,
                    f"strided read time, stride {p['stride']}",
                    f"{NCU_GRANULE_BYTES}-B DRAM granule (from the ncu counters of this kernel at these strides) "
                    f"at the {cal} bandwidth",
                    p["granule64_s"],
                    p["time_s"],
                    "s",
                    "fit",
                    device,
                    note="equal DRAM bytes at strides 16 and 32; the rest of the gap is not modelled (candidates, "
                    "not measured: DRAM row locality, TLB reach of the doubled footprint)",
                )
            )
    return rows


# ---------------------------------------------------------------------------------------------
# Hardware counters (Nsight Compute): benchmarks/h200/memory_hierarchy_ncu.sh writes the record
# ---------------------------------------------------------------------------------------------
def ncu_comparison(ncu_record: Mapping) -> list[dict]:
    """Model bytes against the bytes Nsight Compute counted, per stride.

    The record looks like::

        {"provenance": {...}, "elem_bytes": 4,
         "points": [{"stride": 1, "n_elems": N, "metrics": {"dram__sectors_read.sum": ..., ...}}, ...]}

    Each row gives, per byte the kernel requested (``n_elems x 4``): the bytes the 32-byte sector
    model and the 64-byte DRAM-granule model predict, the L2 sectors read by the SMs x 32
    (``lts__t_sectors_srcunit_tex_op_read``), and the DRAM bytes read (``dram__bytes_read``; also
    ``dram__sectors_read`` x 32).

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    ncu_record : Mapping
        The JSON ``benchmarks/h200/memory_hierarchy_ncu.sh`` writes.

    Returns
    -------
    list of dict
        Per stride, sorted: ``stride`` [-], ``n_elems`` [-], ``requested_bytes`` [B] and the
        byte ratios [-] (None where a counter could not be collected).

    Raises
    ------
    ValueError
        If ``elem_bytes`` is not 4, ``points`` is empty, or a field or counter is missing or invalid.
    """
    elem = ncu_record.get("elem_bytes", FLOAT_BYTES) if isinstance(ncu_record, Mapping) else None
    if elem != FLOAT_BYTES:
        raise ValueError(
            f"ncu record field 'elem_bytes' must be {FLOAT_BYTES} (the strided kernel reads floats), got {elem!r}"
        )
    points = _field(ncu_record, "points", "")
    if not isinstance(points, list) or not points:
        raise ValueError("ncu record field 'points' must be a non-empty list")
    rows = []
    for i, p in enumerate(points):
        s = model._int(f"points[{i}].stride", _field(p, "stride", f"points[{i}]."), minimum=1, maximum=model.MAX_INDEX)
        n = model._int(
            f"points[{i}].n_elems", _field(p, "n_elems", f"points[{i}]."), minimum=1, maximum=model.MAX_INDEX
        )
        metrics = _field(p, "metrics", f"points[{i}].")
        m = {k: _counter(metrics, k, f"points[{i}].metrics.") for k in NCU_METRICS}
        requested = int(n) * FLOAT_BYTES
        rows.append(
            {
                "stride": int(s),
                "n_elems": int(n),
                "requested_bytes": requested,
                "sector_model": model.strided_read_bytes(int(n), int(s)) / requested,
                "granule64_model": model.strided_read_bytes(int(n), int(s), granule_bytes=64) / requested,
                "l2_read_from_sms": None
                if m["lts__t_sectors_srcunit_tex_op_read.sum"] is None
                else 32 * m["lts__t_sectors_srcunit_tex_op_read.sum"] / requested,
                "l2_all_sectors": None if m["lts__t_sectors.sum"] is None else 32 * m["lts__t_sectors.sum"] / requested,
                "dram_bytes": None if m["dram__bytes_read.sum"] is None else m["dram__bytes_read.sum"] / requested,
                "dram_sectors_x32": None
                if m["dram__sectors_read.sum"] is None
                else 32 * m["dram__sectors_read.sum"] / requested,
            }
        )
    return sorted(rows, key=lambda r: r["stride"])


def ncu_granule_bytes(ncu_record: Mapping) -> Optional[float]:
    """The L2's DRAM fetch granule as the counters see it.

    The DRAM bytes moved per lane where lanes are 64 B or more apart (each lane then misses its own
    32-B sector), median over those strides.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    ncu_record : Mapping
        The JSON ``benchmarks/h200/memory_hierarchy_ncu.sh`` writes.

    Returns
    -------
    float or None
        Bytes per lane [B]; None when the record has no such stride or no DRAM counter.

    Raises
    ------
    ValueError
        If the record is invalid (as :func:`ncu_comparison`).
    """
    per_lane = [
        r["dram_bytes"] * FLOAT_BYTES
        for r in ncu_comparison(ncu_record)
        if r["stride"] * FLOAT_BYTES >= NCU_GRANULE_BYTES and r["dram_bytes"] is not None
    ]
    return _median(per_lane) if per_lane else None


def _counter(metrics: Mapping, key: str, where: str) -> Optional[float]:
    """A counter's value; None when the record says it could not be collected (null)."""
    if not isinstance(metrics, Mapping):
        raise ValueError(
            f"ncu record field {where.rstrip('.')} must be a dict of counters, got {type(metrics).__name__}"
        )
    if key not in metrics:
        raise ValueError(f"ncu record field {where}{key!r} is missing")
    v = metrics[key]
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"ncu record field {where}{key!r} must be a finite number >= 0 or null, got {v!r}")
    return float(v)


# ---------------------------------------------------------------------------------------------
# Clock and power seen during a run (NVML), and the spread of repeated timings
# ---------------------------------------------------------------------------------------------
def monitor_line(monitor: Any) -> Optional[str]:
    """One sentence on the SM clock and board power NVML saw during a run.

    Never raises: anything but a mapping of readings gives None.

    Explained in :ref:`memory_hierarchy` > 1. HBM bandwidth: copy and read.

    Parameters
    ----------
    monitor : Mapping or None
        A record's ``monitor`` field: ``sm_clock_hz`` [Hz] and ``power_w`` [W], each with ``median``,
        ``min`` and ``max``, and ``samples``.

    Returns
    -------
    str or None
        The sentence, or None when the record has no readings (old records, CPU runs).

    Examples
    --------
    >>> monitor_line({"power_w": {"median": 650, "min": 600, "max": 700}})
    'During these runs NVML read board power 650 W (600 to 700).'
    """
    if not isinstance(monitor, Mapping):
        return None
    clock, power = monitor.get("sm_clock_hz"), monitor.get("power_w")
    parts = []
    if isinstance(clock, Mapping) and all(isinstance(clock.get(k), (int, float)) for k in ("median", "min", "max")):
        parts.append(
            f"SM clock {clock['median'] / 1e6:,.0f} MHz (median; {clock['min'] / 1e6:,.0f} to {clock['max'] / 1e6:,.0f})"
        )
    if isinstance(power, Mapping) and all(isinstance(power.get(k), (int, float)) for k in ("median", "min", "max")):
        parts.append(f"board power {power['median']:,.0f} W ({power['min']:,.0f} to {power['max']:,.0f})")
    if not parts:
        return None
    n = monitor.get("samples")
    return "During these runs NVML read " + " and ".join(parts) + (f", {n} samples." if isinstance(n, int) else ".")


def spread_s(point: Mapping) -> Optional[tuple[float, float]]:
    """The fastest and slowest of a point's repeated timings, when the record has them.

    Explained in :ref:`memory_hierarchy` > 3. Strided access against the sector model.

    Parameters
    ----------
    point : Mapping
        One measured point, with ``time_min_s``/``time_max_s`` (or ``min_s``/``max_s``) [s] in newer
        records.

    Returns
    -------
    tuple of float or None
        ``(fastest [s], slowest [s])``, or None when the point has no valid spread.

    Raises
    ------
    AttributeError
        If ``point`` is not a mapping (a mapping without the fields gives None).

    Examples
    --------
    >>> spread_s({"time_min_s": 1e-3, "time_max_s": 2e-3}), spread_s({})
    ((0.001, 0.002), None)
    """
    lo, hi = point.get("time_min_s") or point.get("min_s"), point.get("time_max_s") or point.get("max_s")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 < lo <= hi and math.isfinite(hi):
        return float(lo), float(hi)
    return None
