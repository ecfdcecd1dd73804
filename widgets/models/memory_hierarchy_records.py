"""What the memory-hierarchy chapter compares, recomputed from a record's raw measurements.

Torch-free (standard library and numpy; it lives in ``widgets.models`` so that importing it never
starts torch or Triton, unlike ``widgets.experiments``): the chapter, the tests and the book's
accuracy ledger read records through these functions, so every ratio comes from the measured
times and today's models, never from a number stored in the record.

Labels follow the book's rule (``widgets.accuracy``):

- **prediction**: the model's inputs are datasheet figures (the HBM bandwidth of the catalog),
  independent of what is measured;
- **calibrated**: the strided-read model at the bandwidth the same kernel reached with stride 1
  (a different run of the micro-benchmark, named in the row);
- **fit**: the 64-byte DRAM granule, a hypothesis chosen after seeing the strided data.
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
    """``{label: measured B/s}`` of the four HBM kernels."""
    bw = _field(_results(record), "hbm_bandwidth", "results.")
    return {
        label: _positive(_field(bw, key, "results.hbm_bandwidth."), f"hbm_bandwidth.{key}")
        for key, label in BANDWIDTH_KERNELS
    }


def copy_vs_torch(record: Mapping) -> float:
    """Triton copy bandwidth over torch's copy, from the two measured rates."""
    b = bandwidths(record)
    return b["Triton copy (read + write)"] / b["torch copy_ (read + write)"]


# ---------------------------------------------------------------------------------------------
# 2. Working-set sweep
# ---------------------------------------------------------------------------------------------
def sweep_points(record: Mapping) -> tuple[list, list, int]:
    """``(ws_bytes, bytes_per_s, l2_bytes)`` of the working-set sweep, bandwidth recomputed as
    bytes read / median time."""
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


def l2_plateau_and_hbm_level(record: Mapping) -> tuple[float, float]:
    """Median bandwidth of the sweep for working sets from 4 MiB to half the L2 (the L2 plateau)
    and for working sets of 8 L2s or more (HBM) [B/s]."""
    ws, bw, l2 = sweep_points(record)
    if not l2:
        raise ValueError(
            "record field results.working_set_sweep.l2_bytes is 0: the run had no L2 to measure (a CPU run)"
        )
    inside = sorted(b for w, b in zip(ws, bw) if 4 * MiB <= w <= l2 // 2)
    beyond = sorted(b for w, b in zip(ws, bw) if w >= 8 * l2)
    if not inside or not beyond:
        raise ValueError("the working-set sweep needs points between 4 MiB and half the L2 and at 8x the L2 or more")

    def median(xs):
        m = len(xs) // 2
        return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2

    return median(inside), median(beyond)


def ladder(record: Mapping, gpu) -> list[dict]:
    """The bandwidth of each rung, where it comes from, and how much faster it is than the rung
    below: shared memory (derived: 32 banks x 4 B x SMs x boost clock), L2 and HBM (measured in
    ``record``), host link (catalog)."""
    from ..hardware import get_gpu

    gpu = get_gpu(gpu)  # a catalog name or a GPU record; ValueError naming the valid ones
    plateau, hbm = l2_plateau_and_hbm_level(record)
    rungs = [
        (
            "shared memory (all SMs)",
            model.smem_bytes_per_s(gpu.sms, gpu.boost_clock_hz),
            "derived: 32 banks x 4 B per clock",
        ),
        ("L2", plateau, "measured: working set inside the L2"),
        ("HBM", hbm, "measured: working set >= 8x the L2"),
        ("host link (each way)", gpu.host_bytes_per_s, "catalog: PCIe"),
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
def strided_points(record: Mapping) -> list[dict]:
    """Each stride's measurement and the three models' times [s], recomputed:

    - ``predicted_s``: 32-byte sectors at the datasheet HBM bandwidth (``hbm_bytes_per_s`` of
      the catalog GPU named in the provenance, else the H200's);
    - ``calibrated_s``: 32-byte sectors at the bandwidth this kernel reached with stride 1;
    - ``granule64_s``: 64-byte DRAM granules at that same bandwidth (the fit).
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
    datasheet = _datasheet_hbm(record)
    for r in rows:
        n, s = r["n_elems"], r["stride"]
        r["useful_bytes_per_s"] = n * FLOAT_BYTES / r["time_s"]
        r["predicted_s"] = model.strided_read_time_s(n, s, datasheet)
        r["calibrated_s"] = model.strided_read_time_s(n, s, bw_stride1)
        r["granule64_s"] = model.strided_read_time_s(n, s, bw_stride1, granule_bytes=64)
        r["datasheet_bytes_per_s"] = datasheet
        r["stride1_bytes_per_s"] = bw_stride1
    return rows


def _datasheet_hbm(record: Mapping) -> float:
    from ..hardware import catalog_name_for, get_gpu

    name = catalog_name_for(device_of(record)) or "H200-SXM"
    return get_gpu(name).hbm_bytes_per_s


# ---------------------------------------------------------------------------------------------
# Accuracy ledger
# ---------------------------------------------------------------------------------------------
def accuracy_rows(record: Mapping) -> list[Row]:
    """Every comparison the chapter makes, recomputed from ``record`` (old and new record formats:
    only the raw fields ``*_bytes_per_s``, ``bytes_read``/``time_s`` and ``stride_elems``/
    ``n_elems``/``time_s`` are read)."""
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
                "HBM bandwidth: re-read kernel, working set >= 8x L2",
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
                if s < 16
                else "lanes 64 B or more apart: about twice the 32-B sector model; a 64-B DRAM granule fits it (a fit; see the ncu counters)",
            )
        )
    for p in strided_points(record):
        if p["stride"] == 1:
            continue  # equal by construction
        rows.append(
            Row(
                TOPIC,
                f"strided read time, stride {p['stride']}",
                "32-B sectors at this kernel's stride-1 bandwidth",
                p["calibrated_s"],
                p["time_s"],
                "s",
                "calibrated",
                device,
            )
        )
    for p in strided_points(record):
        if p["stride"] >= 16:
            rows.append(
                Row(
                    TOPIC,
                    f"strided read time, stride {p['stride']}",
                    "64-B DRAM granule at stride-1 bandwidth (hypothesis chosen after the data)",
                    p["granule64_s"],
                    p["time_s"],
                    "s",
                    "fit",
                    device,
                )
            )
    return rows


# ---------------------------------------------------------------------------------------------
# Hardware counters (Nsight Compute): benchmarks/h200/memory_hierarchy_ncu.sh writes the record
# ---------------------------------------------------------------------------------------------
def ncu_comparison(ncu_record: Mapping) -> list[dict]:
    """Model bytes against counted bytes, per stride, from the JSON that
    ``benchmarks/h200/memory_hierarchy_ncu.sh`` writes::

        {"provenance": {...}, "elem_bytes": 4,
         "points": [{"stride": 1, "n_elems": N, "metrics": {"dram__sectors_read.sum": ..., ...}}, ...]}

    Each row gives, per byte the kernel requested (``n_elems x 4``): the bytes the 32-byte sector
    model and the 64-byte DRAM-granule model predict, the L2 sectors read by the SMs x 32
    (``lts__t_sectors_srcunit_tex_op_read``), and the DRAM bytes read (``dram__bytes_read``; also
    ``dram__sectors_read`` x 32).
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
    """One sentence on the SM clock and board power NVML saw during a run, or None when the record
    has none (old records, CPU runs)."""
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
    """(fastest, slowest) of a point's repeats [s], when the record has them (newer records)."""
    lo, hi = point.get("time_min_s") or point.get("min_s"), point.get("time_max_s") or point.get("max_s")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 < lo <= hi and math.isfinite(hi):
        return float(lo), float(hi)
    return None
