"""The matrix transpose, measured: naive (and its control, strided reads with coalesced writes),
shared-memory tiled, tiled with padding (32 x 33) and tiled with an XOR swizzle.

numba-cuda kernels with explicit thread indices (the chapter shows them with ``literalinclude``),
after NVIDIA's transpose example: 32 x 32 tiles, thread blocks of 32 x 8 threads, each thread
moving four elements. A copy kernel with the same tiles and launch is the baseline: effective
bandwidth = (bytes read + bytes written) / time, as NVIDIA's example reports it.

On a machine without a GPU the kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``,
set here before ``numba.cuda`` is imported) on a tiny matrix: the simulator runs every thread as
a Python thread and has no banks or sectors, so it checks the kernels' results, not their speed.
Every GPU step fails soft: a failure is recorded as :class:`harness.Failed` with its reason.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch

from .. import _check
from ..accuracy import Row
from ..models import memory_hierarchy as model
from . import harness

SIMULATED = not torch.cuda.is_available()
if SIMULATED:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402

if not hasattr(np, "row_stack"):  # numba-cuda's fp16 bindings call np.row_stack (removed in NumPy 2.5)
    np.row_stack = np.vstack

from numba import cuda, float32  # noqa: E402

TOPIC = "memory_hierarchy"
TILE = 32  # tile edge: a warp covers one tile row
TILE_PADDED = 33  # a padded tile row; a module constant, so numba sees a compile-time shape (TILE + 1 is not)
BLOCK_ROWS = 8  # a block of 32 x 8 threads moves a 32 x 32 tile, four elements per thread
FLOAT_BYTES = 4
KINDS = ("copy", "copy_ilp", "naive", "naive_read", "tiled", "padded", "swizzled")
GPU_N = 16384  # 1 GiB of fp32 per matrix: far beyond the L2
CPU_N = 64  # the simulator runs each thread as a Python thread
SPACER_CYCLES = 2_000_000  # ~1 ms GPU sleep before each timed launch: hides numba's host-side launch work


@cuda.jit
def copy_kernel(src, dst):
    """The baseline: the same tiles and threads as the transposes, both accesses coalesced."""
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        dst[y + j, x] = src[y + j, x]


@cuda.jit
def copy_ilp_kernel(src, dst):
    """The copy with its four loads issued before any store: four independent loads in flight per
    thread even if the compiler cannot prove that src and dst do not overlap (a test of the bytes-
    in-flight explanation of the copy's shortfall)."""
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    a = src[y, x]
    b = src[y + BLOCK_ROWS, x]
    c = src[y + 2 * BLOCK_ROWS, x]
    d = src[y + 3 * BLOCK_ROWS, x]
    dst[y, x] = a
    dst[y + BLOCK_ROWS, x] = b
    dst[y + 2 * BLOCK_ROWS, x] = c
    dst[y + 3 * BLOCK_ROWS, x] = d


@cuda.jit
def transpose_naive_kernel(src, dst):
    """dst[x, y] = src[y, x]: a warp reads 32 neighbours of a row (coalesced) and writes them
    down a column of dst, n elements apart: one 32-byte sector per lane."""
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        dst[x, y + j] = src[y + j, x]


@cuda.jit
def transpose_naive_read_kernel(src, dst):
    """dst[y, x] = src[x, y], the control for the naive kernel: a warp reads down a column of src
    (n elements apart, one sector per lane) and writes 32 neighbours of a row of dst (coalesced).
    The block's other rows read the rest of each sector, so the L1 may serve them."""
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        dst[y + j, x] = src[x, y + j]


@cuda.jit
def transpose_tiled_kernel(src, dst):
    """Stage a 32 x 32 tile in shared memory: read rows of src, write rows of dst (both
    coalesced); the transposition happens in shared memory, where a warp reads a tile COLUMN:
    32 lanes 32 words apart, all in one bank (a 32-way conflict)."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        tile[ty + j, tx] = src[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx  # the block's tile lands at the mirrored position
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        dst[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_padded_kernel(src, dst):
    """The tiled transpose with rows of 33 words: a column's 32 words fall in 32 banks."""
    tile = cuda.shared.array((TILE, TILE_PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        tile[ty + j, tx] = src[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        dst[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_swizzled_kernel(src, dst):
    """The tiled transpose with an XOR swizzle instead of padding: element (r, c) of the 32 x 32
    tile sits at column c ^ r, so a row's and a column's 32 words both fall in 32 banks."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        tile[ty + j, tx ^ (ty + j)] = src[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        dst[y + j, x] = tile[tx, (ty + j) ^ tx]


KERNELS = {
    "copy": copy_kernel,
    "copy_ilp": copy_ilp_kernel,
    "naive": transpose_naive_kernel,
    "naive_read": transpose_naive_read_kernel,
    "tiled": transpose_tiled_kernel,
    "padded": transpose_padded_kernel,
    "swizzled": transpose_swizzled_kernel,
}


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def _device_array(t: torch.Tensor):
    """A torch tensor as a numba argument: a zero-copy device view on a GPU, NumPy in the simulator."""
    return t.numpy() if SIMULATED else cuda.as_cuda_array(t.detach())


def _spacer():
    """``setup`` for ``harness.time_fn``: a GPU sleep enqueued before the start event, so numba's
    host-side launch preparation overlaps it and the events time the kernel alone; or None (and
    why) where that is not available."""
    if SIMULATED:
        return None, "simulator: host clock around each call"
    try:
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        return None, f"torch.cuda._sleep unavailable ({_err(exc)}): launch preparation inside the events"
    return (lambda: torch.cuda._sleep(SPACER_CYCLES)), None


@dataclass(frozen=True)
class TransposeKernel(harness.Result):
    """One kernel's time [s] (median and spread of ``repeat`` launches) and whether its result was right."""

    median_s: float
    min_s: float
    max_s: float
    repeat: int
    correct: bool


@dataclass(frozen=True)
class TransposeResult(harness.Result):
    """The kernels on one ``n x n`` fp32 matrix (a :class:`harness.Failed` for one that failed)."""

    n: int
    elem_bytes: int
    device: str
    simulated: bool
    timing_note: str
    kernels: dict[str, Union[TransposeKernel, harness.Failed]]
    tile: int = TILE
    block_rows: int = BLOCK_ROWS


def _time_kernel(kind: str, s, d, grid, block, spacer, repeat: int, src, dst, expected) -> TransposeKernel:
    import warnings

    kern = KERNELS[kind][grid, block]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's low-occupancy warnings in the simulator
        t = harness.time_fn(lambda: kern(s, d), repeat=repeat, setup=spacer, warmup=0 if SIMULATED else 3)
        harness.synchronize()
    want = src if kind.startswith("copy") else expected
    return TransposeKernel(t.median_s, t.min_s, t.max_s, t.repeat, bool(torch.equal(dst, want)))


def measure_transpose(n: Optional[int] = None, kinds: Sequence[str] = KINDS, *, repeat: Optional[int] = None) -> TransposeResult:
    """Time each kernel on an ``n x n`` fp32 matrix (default 16384 on a GPU, 64 in the simulator)
    and check its result against ``torch``'s transpose; a kernel that fails is recorded as
    :class:`harness.Failed` with its error. ``repeat`` timed launches per kernel (default 10 on a
    GPU; 1 in the simulator, whose host-clock times say nothing about a GPU: there the run checks
    the kernels' indexing, one launch each, without the warm-up, which has nothing to compile:
    a CPU reader's wait went from 4 launches per kernel and 8.9 s to 1 launch and 2.1 s)."""
    if repeat is None:
        repeat = 1 if SIMULATED else 10
    if n is None:
        n = GPU_N if not SIMULATED else CPU_N
        if not SIMULATED:  # two matrices, at most 20 % of free memory
            while n > 1024 and 2 * n * n * FLOAT_BYTES > 0.2 * harness.free_device_bytes():
                n //= 2
    n = _check.integer("n", n, minimum=TILE, maximum=2**16)
    if n % TILE:
        raise ValueError(f"n must be a multiple of {TILE}, got {n!r}")
    bad = [k for k in kinds if k not in KERNELS]
    if bad:
        raise ValueError(f"kinds must be among {', '.join(KINDS)}, got {bad!r}")
    dev = harness.device()
    gen = torch.Generator(device=dev).manual_seed(0)
    src = torch.rand((n, n), generator=gen, device=dev)
    dst = torch.empty_like(src)
    s, d = _device_array(src), _device_array(dst)
    spacer, spacer_note = _spacer()
    grid, block = (n // TILE, n // TILE), (TILE, BLOCK_ROWS)
    expected = src.t().contiguous()
    kernels = {
        kind: harness.attempt(_time_kernel, kind, s, d, grid, block, spacer, repeat, src, dst, expected)
        for kind in kinds
    }
    note = spacer_note or f"a {SPACER_CYCLES:,}-cycle GPU sleep before each timed launch hides the launch's host work"
    return TransposeResult(n, FLOAT_BYTES, harness.device_name(), SIMULATED, note, kernels)


# --------------------------------------------------------------------------------------------
# Reading a record: every ratio recomputed from the raw times and today's model
# --------------------------------------------------------------------------------------------
def transpose_result(record: Mapping) -> Optional[TransposeResult]:
    """The record's transpose results, typed, or None when it has none (older records) or they failed."""
    results = record.get("results") if isinstance(record, Mapping) else None
    t = results.get("transpose") if isinstance(results, Mapping) else None
    if not isinstance(t, Mapping) or "error" in t:
        return None
    r = TransposeResult.from_record(t)
    return r if r.kernels else None


def _time(entry: Any) -> Optional[float]:
    if isinstance(entry, TransposeKernel) and entry.correct:
        v = entry.median_s
        if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
            return float(v)
    return None


def transpose_rows(record: Mapping, hbm_bytes_per_s: float, l2_bytes_per_s: float, sms: int, clock_hz: float) -> list[dict]:
    """One dict per kernel: measured time [s] and effective bandwidth [B/s], the model's cost at
    the given bandwidths and clock (``model_s``) and the measured time over it, and both as
    fractions of a copy's time. Two copies: ``model_vs_copy`` divides by the model's copy (the
    given HBM bandwidth), ``measured_vs_copy`` by the measured numba copy; ``model_here_vs_copy``
    is the model with its HBM bandwidth calibrated on that numba copy (same tiles, same launch),
    so it and ``measured_vs_copy`` share a denominator."""
    t = transpose_result(record)
    if t is None:
        return []
    n = t.n
    moved = 2 * n * n * t.elem_bytes
    copy_model = model.transpose_cost(n, "copy", hbm_bytes_per_s, l2_bytes_per_s, sms, clock_hz)
    copy_t = _time(t.kernels.get("copy"))
    copy_bw = moved / copy_t if copy_t else None
    copy_here = model.transpose_cost(n, "copy", copy_bw, l2_bytes_per_s, sms, clock_hz) if copy_bw else None
    rows = []
    for kind in KINDS:
        entry = t.kernels.get(kind)
        if entry is None:
            continue
        c = model.transpose_cost(n, kind, hbm_bytes_per_s, l2_bytes_per_s, sms, clock_hz)
        here = model.transpose_cost(n, kind, copy_bw, l2_bytes_per_s, sms, clock_hz) if copy_bw else None
        m = _time(entry)
        rows.append({
            "kind": kind, "n": n, "time_s": m, "bytes_per_s": moved / m if m else None,
            "error": entry.error if isinstance(entry, harness.Failed) else None,
            "correct": entry.correct if isinstance(entry, TransposeKernel) else None,
            "model_s": c.time_s, "model_bound": c.bound, "l2_bytes": c.l2_bytes, "smem_wavefronts": c.smem_wavefronts,
            "model_vs_copy": c.time_s / copy_model.time_s,
            "measured_vs_model": m / c.time_s if m else None,
            "model_here_vs_copy": here.time_s / copy_here.time_s if here else None,
            "measured_vs_copy": m / copy_t if m and copy_t else None,
        })
    return rows


def accuracy_rows(record: Mapping) -> list[Row]:
    """Each kernel's time (the copy's too), predicted by the per-level model, labelled
    **calibrated**: the model's HBM and L2 bandwidths are this record's Triton copy and L2 plateau
    (experiments 1 and 2, different micro-benchmarks), its SM count and clock the record's
    provenance (NVML's clock). Absolute times, so model and measurement share no denominator (a
    ratio to each side's own copy would flatter a kernel when the numba copy is slower than the
    Triton one). Falsified if a kernel's time is off by more than the tolerance (e.g. the naive
    kernel limited by something other than L2 sectors).

    The Nsight Compute counts of the same kernels (:func:`ncu_accuracy_rows`, predictions) come
    first, when their record was measured on the same GPU as ``record``."""
    from ..models.memory_hierarchy_records import device_of

    ncu = load_ncu()
    same_gpu = isinstance(ncu, Mapping) and (ncu.get("provenance") or {}).get("gpu") == device_of(record)
    out = ncu_accuracy_rows(ncu) if same_gpu else []
    constants = record_constants(record)
    if transpose_result(record) is None or constants is None:  # no transpose times, or no constants
        return out
    for r in transpose_rows(record, *constants):
        if r["time_s"] is None:
            continue
        out.append(Row(TOPIC, f"Transpose {r['n']}×{r['n']} fp32, {r['kind']}: time",
                       f"max(HBM bytes at the Triton copy's rate (experiment 1), L2 sectors at the L2 plateau (experiment 2), "
                       f"shared wavefronts at NVML's SM clock); bound: {r['model_bound']}",
                       r["model_s"], r["time_s"], "s", "calibrated", device_of(record)))
    return out


def here_rows(result: Optional[TransposeResult]) -> list[dict]:
    """The reader's own run: each kernel's time [s] and its time over the copy's (no model: the
    reader's bandwidths and clock are not known here)."""
    if result is None:
        return []
    copy_t = _time(result.kernels.get("copy"))
    out = []
    for kind in KINDS:
        entry = result.kernels.get(kind)
        t = _time(entry)
        out.append({"kind": kind, "time_s": t, "vs_copy": t / copy_t if t and copy_t else None,
                    "error": entry.error if isinstance(entry, harness.Failed) else None,
                    "correct": entry.correct if isinstance(entry, TransposeKernel) else None})
    return out


def _words(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _status_sentence(status: Mapping[str, str]) -> str:
    ok = [k for k in KINDS if status.get(k) == "measured"]
    failed = [f"{k} failed ({status[k].split(': ', 1)[1]})" for k in KINDS if str(status.get(k, "")).startswith("failed: ")]
    wrong = [k for k in KINDS if status.get(k) == "wrong result"]
    missing = [k for k in KINDS if status.get(k, "not run") == "not run"]
    parts = []
    if ok:
        parts.append(f"{_words(ok)} {'was' if len(ok) == 1 else 'were'} measured")
    parts += failed
    if wrong:
        parts.append(f"{_words(wrong)} gave a wrong result (not compared)")
    if missing:
        parts.append(f"{_words(missing)} {'is' if len(missing) == 1 else 'are'} not in the record")
    return "; ".join(parts) if parts else "no kernel is in the record"


def record_status(record: Mapping) -> dict[str, str]:
    """Each kernel of ``KINDS`` in a memory_hierarchy record: ``"measured"``, ``"wrong result"``,
    ``"failed: <error type>"`` or ``"not run"`` (absent from the record, e.g. added after it)."""
    t = transpose_result(record)
    out = {}
    for kind in KINDS:
        entry = t.kernels.get(kind) if t is not None else None
        if isinstance(entry, harness.Failed):
            out[kind] = f"failed: {str(entry.error).split(':', 1)[0].strip() or 'error'}"
        elif isinstance(entry, TransposeKernel):
            out[kind] = "measured" if _time(entry) else "wrong result"
        else:
            out[kind] = "not run"
    return out


def status_sentence(record: Mapping) -> str:
    """:func:`record_status` in words, for prose: e.g. "copy, naive and tiled were measured; padded
    failed (TypingError); naive_read and swizzled are not in the record"."""
    return _status_sentence(record_status(record))


def ncu_status(ncu_record: Optional[Mapping]) -> dict[str, str]:
    """Each kernel of ``KINDS`` in the Nsight Compute record: ``"measured"`` (counters recorded),
    ``"failed: <error type>"`` or ``"not run"``."""
    out = {kind: "not run" for kind in KINDS}
    points = ncu_record.get("points") if isinstance(ncu_record, Mapping) else None
    for p in points if isinstance(points, list) else []:
        kind = p.get("kind") if isinstance(p, Mapping) else None
        if kind not in out:
            continue
        if isinstance(p.get("metrics"), Mapping) and p["metrics"]:
            out[kind] = "measured"
        elif p.get("error"):
            out[kind] = "failed: " + (str(p["error"]).split(":", 1)[0].strip() or "error")
    return out


def ncu_status_sentence(ncu_record: Optional[Mapping]) -> str:
    """:func:`ncu_status` in words, for prose."""
    return _status_sentence(ncu_status(ncu_record))


def record_constants(record: Mapping) -> Optional[tuple[float, float, int, float]]:
    """(HBM B/s, L2 B/s, SMs, SM clock [Hz]) for the calibrated model, from a memory_hierarchy
    record: the Triton copy (experiment 1), the L2 plateau (experiment 2), the provenance's SM count
    and NVML's maximum SM clock (where the provenance lacks these two, the catalog's figures for the
    record's GPU); None where the record lacks a bandwidth or the GPU is not in the catalog."""
    from ..hardware import catalog_name_for, get_gpu
    from ..models.memory_hierarchy_records import bandwidths, device_of, l2_plateau_and_hbm_level

    try:
        hbm = bandwidths(record)["Triton copy (read + write)"]
        l2 = l2_plateau_and_hbm_level(record)[0]
    except (KeyError, TypeError, ValueError):
        return None
    prov = record.get("provenance", {}) if isinstance(record, Mapping) else {}
    name = catalog_name_for(device_of(record))
    gpu = get_gpu(name) if name else None
    sms = prov.get("sms") or (gpu.sms if gpu else None)
    clock = (prov.get("clock_power") or {}).get("max_sm_clock_hz") or (gpu.boost_clock_hz if gpu else None)
    if not sms or not clock or not l2 > 0:
        return None
    return hbm, l2, int(sms), float(clock)


# --------------------------------------------------------------------------------------------
# Hardware counters (Nsight Compute): benchmarks/h200/memory_hierarchy_transpose_ncu.py
# --------------------------------------------------------------------------------------------
NCU_FILE = "memory_hierarchy_transpose_ncu.json"
NCU_COUNTERS = (  # (counter, what it counts, the model's count: fn(kind, n))
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 sectors read by the SMs"),
    ("lts__t_sectors_srcunit_tex_op_write.sum", "L2 sectors written by the SMs"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared-memory load wavefronts"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "shared-memory store wavefronts"),
    ("dram__bytes_read.sum", "DRAM bytes read"),
    ("dram__bytes_write.sum", "DRAM bytes written"),
)


# The counters the accuracy ledger keeps (the chapter's table shows all): what each kernel is about.
LEDGER_COUNTERS = ("lts__t_sectors_srcunit_tex_op_write.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")


def model_counts(kind: str, n: int) -> dict:
    """What the sector and bank model says each counter of ``NCU_COUNTERS`` reads for one kernel on
    an ``n x n`` fp32 matrix: 4 sectors per coalesced warp access, one sector per lane for the naive
    kernel's writes, ``bank_conflict_wavefronts`` for a tile column, the matrix once in and once out
    of DRAM."""
    if kind not in KERNELS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    n = _check.integer("n", n, minimum=TILE, maximum=2**20)
    warps = n * n // 32
    coalesced = model.warp_load_sectors(1, FLOAT_BYTES)
    shared = kind in ("tiled", "padded", "swizzled")
    store, load = model.transpose_tile_wavefronts(kind) if shared else (0, 0)
    return {  # naive_read: one read sector per lane, as if the L1 kept none of them for the block's other rows
        "lts__t_sectors_srcunit_tex_op_read.sum": warps * (model.warp_load_sectors(n, FLOAT_BYTES) if kind == "naive_read" else coalesced),
        "lts__t_sectors_srcunit_tex_op_write.sum": warps * (model.warp_load_sectors(n, FLOAT_BYTES) if kind == "naive" else coalesced),
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": warps * load,
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": warps * store,
        "dram__bytes_read.sum": n * n * FLOAT_BYTES,
        "dram__bytes_write.sum": n * n * FLOAT_BYTES,
    }


def load_ncu(folder: Optional[str] = None) -> Optional[dict]:
    """The counter record the ncu script wrote (``widgets/data/h200`` by default), or None if absent."""
    import json
    from pathlib import Path

    path = Path(folder) if folder else Path(__file__).resolve().parents[1] / "data" / "h200"
    f = path / NCU_FILE
    if not f.is_file():
        return None
    return json.loads(f.read_text())


def ncu_rows(ncu_record: Optional[Mapping]) -> list[dict]:
    """Per kernel and counter: the counted value, the model's and their ratio (None where the
    counter is missing or the model puts it at 0: such counters are listed, not compared)."""
    if not isinstance(ncu_record, Mapping) or not isinstance(ncu_record.get("points"), list):
        return []
    n = int(ncu_record.get("n", 0))
    out = []
    for p in ncu_record["points"]:
        kind = p.get("kind") if isinstance(p, Mapping) else None
        if kind not in KERNELS or not isinstance(p.get("metrics"), Mapping):
            continue
        want = model_counts(kind, n)
        for counter, what in NCU_COUNTERS:
            got = p["metrics"].get(counter)
            got = float(got) if isinstance(got, (int, float)) and not isinstance(got, bool) and math.isfinite(got) else None
            m = want[counter]
            out.append({"kind": kind, "counter": counter, "what": what, "measured": got, "model": m,
                        "ratio": got / m if got is not None and m else None})
    return out


def ncu_accuracy_rows(ncu_record: Optional[Mapping]) -> list[Row]:
    """The counters against the sector and bank model, labelled **prediction**: the model's counts
    come from the access pattern alone (sectors, banks), nothing measured. Falsified by any count off
    by more than the tolerance (e.g. the naive writes merged into fewer sectors, or a tile column
    read in fewer wavefronts than the bank rule says)."""
    device = str(((ncu_record or {}).get("provenance") or {}).get("gpu") or "unknown device")
    return [
        Row(TOPIC, f"Transpose {r['kind']}: {r['what']} (Nsight Compute)", "sector / bank model of the access pattern",
            float(r["model"]), r["measured"], "count" if "bytes" not in r["counter"] else "B", "prediction", device,
            note="a count from address arithmetic (the access-pattern model), not a time: it can fail, but rarely does")
        for r in ncu_rows(ncu_record) if r["ratio"] is not None and r["counter"] in LEDGER_COUNTERS
    ]
