"""Memory-hierarchy experiments: HBM bandwidth, the L2-to-HBM cliff, strided access.

Every ``measure_*`` function times real kernels (Triton, see ``memory_hierarchy_kernels``) on the
current device and returns a frozen dataclass (a ``harness.Result``: ``to_record()`` writes the
record, ``from_record()`` reads the committed one back typed; :class:`MemoryHierarchyResults` is
the whole topic). On a machine without a GPU the kernels run through
Triton's interpreter at small sizes: the numbers then show the method, not a GPU.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import torch

from ..models import memory_hierarchy as model
from ..units import GiB, KiB, MiB
from . import harness
from .memory_hierarchy_fusion import FusionResult, measure_fusion
from .memory_hierarchy_kernels import copy_kernel, read_kernel, reread_kernel, strided_read_kernel
from .memory_hierarchy_transpose import TransposeResult, measure_transpose

FLOAT_BYTES = 4


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class GpuMonitor:
    """SM clock [Hz] and board power [W] sampled through NVML in a background thread while the
    ``with`` block runs (pynvml if present, else ``torch.cuda.clock_rate``/``power_draw``).

    ``summary()`` is ``None`` on a CPU or where NVML cannot be read, so records hold null there.
    """

    def __init__(self, interval_s: float = 0.002):
        self.interval_s = interval_s
        self.clock_hz: list = []
        self.power_w: list = []
        self._read = self._reader() if harness.on_gpu() else None
        self._stop = threading.Event()
        self._thread = None

    @staticmethod
    def _reader():
        """A function returning (SM clock [Hz], power [W]), or None. torch's helpers come first:
        they map the CUDA device to its NVML index (CUDA_VISIBLE_DEVICES); raw pynvml next."""
        try:

            def read_torch():
                return torch.cuda.clock_rate() * 1e6, torch.cuda.power_draw() / 1e3

            read_torch()
            return read_torch
        except Exception:
            pass
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())  # assumes no device remapping

            def read_nvml():
                return (
                    pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM) * 1e6,
                    pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
                )

            read_nvml()
            return read_nvml
        except Exception:
            return None

    def _sample(self):
        try:
            clock, power = self._read()
            self.clock_hz.append(float(clock))
            self.power_w.append(float(power))
        except Exception:
            pass

    def _loop(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval_s)

    def __enter__(self):
        if self._read is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        return False

    def summary(self) -> Optional[dict]:
        if not self.clock_hz:
            return None

        def stats(xs):
            return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}

        return {"sm_clock_hz": stats(self.clock_hz), "power_w": stats(self.power_w), "samples": len(self.clock_hz)}


def _spread(t: harness.Timing) -> dict:
    """Median and spread of a timing's repeats [s]."""
    return {"median_s": t.median_s, "min_s": t.min_s, "max_s": t.max_s, "repeat": t.repeat}


def _random(n: int) -> torch.Tensor:
    """``n`` random floats in [0, 1) on the current device, seeded (never zeros: they can flatter)."""
    g = torch.Generator(device=harness.device()).manual_seed(0)
    return torch.rand(n, generator=g, device=harness.device())


# --------------------------------------------------------------------------------------------
# 1. HBM bandwidth: copy and read
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BandwidthResult(harness.Result):
    """Bandwidths [B/s] of a copy (bytes read + written) and a read-only pass over ``nbytes``."""

    nbytes: int
    triton_copy_bytes_per_s: float
    torch_copy_bytes_per_s: float
    triton_read_bytes_per_s: float
    torch_sum_bytes_per_s: float
    copy_block: int
    device: str
    timings: dict = field(default_factory=dict)  # name -> median and spread of the repeats [s]
    gpu_monitor: Optional[dict] = None  # SM clock and power during the runs (NVML), None on a CPU

    @property
    def copy_vs_torch(self) -> float:
        return self.triton_copy_bytes_per_s / self.torch_copy_bytes_per_s


def measure_hbm_bandwidth(nbytes: Optional[int] = None, *, repeat: int = 20) -> BandwidthResult:
    """Copy ``nbytes`` from one buffer to another with Triton and with ``torch``'s own copy, and
    read it once with a Triton reduction and ``torch.sum``. Buffers are far larger than L2 on a
    GPU (default: 4 GiB each, at most a quarter of free memory)."""
    if nbytes is None:
        nbytes = harness.choose_bytes(4 * GiB, 1 * MiB, max_fraction_of_free=0.2)
    n = int(nbytes) // FLOAT_BYTES
    if n < 1024:
        raise ValueError(f"nbytes must be at least 4096, got {nbytes!r}")
    src = _random(n)
    dst = torch.empty_like(src)
    moved = 2 * n * FLOAT_BYTES

    # A few block sizes; the best is reported (and which it was).
    timings = {}
    with GpuMonitor() as monitor:
        best_copy, best_block = 0.0, 0
        blocks = (1024, 4096, 8192) if harness.on_gpu() else (4096,)
        for block in blocks:
            grid = (_cdiv(n, block),)
            t = harness.time_fn(lambda: copy_kernel[grid](src, dst, n, BLOCK=block), repeat=repeat)
            if moved / t.median_s > best_copy:
                best_copy, best_block, timings["triton_copy"] = moved / t.median_s, block, _spread(t)
        if not torch.equal(dst, src):
            raise RuntimeError("Triton copy produced a wrong result")
        t_torch = harness.time_fn(lambda: dst.copy_(src), repeat=repeat)

        block = 4096
        partial = torch.empty(_cdiv(n, block), device=src.device, dtype=torch.float32)
        t_read = harness.time_fn(lambda: read_kernel[(partial.numel(),)](src, partial, n, BLOCK=block), repeat=repeat)
        t_sum = harness.time_fn(lambda: src.sum(), repeat=repeat)
    expected = src.double().sum().item()
    if abs(partial.double().sum().item() - expected) > 1e-3 * abs(expected):
        raise RuntimeError("Triton read kernel produced a wrong sum")
    timings.update(torch_copy=_spread(t_torch), triton_read=_spread(t_read), torch_sum=_spread(t_sum))
    read = n * FLOAT_BYTES
    return BandwidthResult(
        nbytes=n * FLOAT_BYTES,
        triton_copy_bytes_per_s=best_copy,
        torch_copy_bytes_per_s=moved / t_torch.median_s,
        triton_read_bytes_per_s=read / t_read.median_s,
        torch_sum_bytes_per_s=read / t_sum.median_s,
        copy_block=best_block,
        device=harness.device_name(),
        timings=timings,
        gpu_monitor=monitor.summary(),
    )


# --------------------------------------------------------------------------------------------
# 2. Working-set sweep: the L2-to-HBM cliff
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkingSetPoint(harness.Result):
    ws_bytes: int
    bytes_read: int
    time_s: float  # median of the repeats
    time_min_s: float = 0.0
    time_max_s: float = 0.0
    repeat: int = 0
    step: int = 0  # chunks between a program's successive reads (see reread_step)
    programs: int = 0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_read / self.time_s

    def to_record(self) -> dict:
        return {**super().to_record(), "bytes_per_s": self.bytes_per_s}  # derived, kept for readers of the JSON


@dataclass(frozen=True)
class FailedPoint(harness.Result):
    """A re-read of ``ws_bytes`` that did not run, and why."""

    ws_bytes: int
    error: str


@dataclass(frozen=True)
class WorkingSetSweep(harness.Result):
    points: tuple[WorkingSetPoint, ...] = ()
    l2_bytes: int = 0
    device: str = ""
    gpu_monitor: Optional[dict] = None
    # The same sizes near the L2's capacity re-read in the grid-strided order (step = number of
    # programs): how much the visiting order alone moves the rate near the cliff.
    order_points: tuple[WorkingSetPoint | FailedPoint, ...] = ()

    def as_arrays(self):
        return [p.ws_bytes for p in self.points], [p.bytes_per_s for p in self.points]


def default_working_sets() -> list[int]:
    if harness.on_gpu():
        near_l2 = (60, 62, 64, 66, 68, 72)  # around the H200's 60 MiB L2: the cliff's position
        sizes = (2, 4, 8, 16, 24, 32, 40, 48, 56, *near_l2, 80, 96, 128, 192, 256, 512, 1024)
        return [s * MiB for s in sizes]
    return [s * KiB for s in (64, 256, 1024)]


def reread_step(n_chunks: int, n_programs: int) -> int:
    """The smallest step >= ``n_programs`` that is coprime to ``n_chunks``: each program of
    ``reread_kernel`` then visits every chunk of the working set (a full cycle), so the order does
    not depend on ``n_chunks`` mod ``n_programs``."""
    n_chunks, n_programs = int(n_chunks), int(n_programs)
    if n_chunks < 1 or n_programs < 1:
        raise ValueError(f"n_chunks and n_programs must be >= 1, got {n_chunks!r}, {n_programs!r}")
    step = n_programs
    while math.gcd(step, n_chunks) != 1:
        step += 1
    return step


def _near_l2(sizes: Sequence[int], l2: int) -> list[int]:
    """The sizes between 0.9x and 1.25x the L2 (on the CPU, where l2 is 0: the largest)."""
    if l2 <= 0:
        return [max(sizes)]
    return [s for s in sizes if 0.9 * l2 <= s <= 1.25 * l2]


def measure_working_set_sweep(
    ws_bytes: Optional[Sequence[int]] = None, *, read_per_launch_bytes: Optional[int] = None, repeat: int = 10
) -> WorkingSetSweep:
    """Bandwidth of re-reading working sets of each size inside one launch.

    Each launch reads ``read_per_launch_bytes`` in total (default 4 GiB on a GPU), sweeping its
    working set many times, so launch overhead is negligible and a working set that fits in L2
    is served from L2.
    """
    sizes = list(ws_bytes) if ws_bytes is not None else default_working_sets()
    total = read_per_launch_bytes or (4 * GiB if harness.on_gpu() else 1 * MiB)
    block = 4096 if harness.on_gpu() else 1024
    programs = (torch.cuda.get_device_properties(0).multi_processor_count * 8) if harness.on_gpu() else 16
    largest = max(sizes)
    buf = _random(_cdiv(largest, FLOAT_BYTES * block) * block)
    partial = torch.empty(programs, device=buf.device, dtype=torch.float32)
    l2 = harness.l2_bytes()
    iters = max(1, _cdiv(int(total), programs * block * FLOAT_BYTES))

    def point(ws, step=None):
        n_chunks = max(1, int(ws) // (FLOAT_BYTES * block))
        step = reread_step(n_chunks, programs) if step is None else step
        t = harness.time_fn(
            lambda: reread_kernel[(programs,)](buf, partial, n_chunks, iters, step, BLOCK=block),
            repeat=repeat,
        )
        return WorkingSetPoint(
            n_chunks * block * FLOAT_BYTES,
            programs * iters * block * FLOAT_BYTES,
            t.median_s,
            t.min_s,
            t.max_s,
            t.repeat,
            step,
            programs,
        )

    points, order_points = [], []
    with GpuMonitor() as monitor:
        for ws in sizes:
            points.append(point(ws))
        for ws in _near_l2(sizes, l2):
            try:  # an optional reading: never lose the sweep for it
                order_points.append(point(ws, step=programs))
            except Exception as e:  # pragma: no cover - GPU-only failure path
                order_points.append(FailedPoint(int(ws), f"{type(e).__name__}: {e}"))
    return WorkingSetSweep(points=tuple(points), l2_bytes=l2, device=harness.device_name(),
                           gpu_monitor=monitor.summary(), order_points=tuple(order_points))


# --------------------------------------------------------------------------------------------
# 3. Strided access against the sector model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StridedPoint(harness.Result):
    stride_elems: int
    n_elems: int
    time_s: float  # median of the repeats
    sector_model_time_s: float  # fit at stride 1: 32-byte sectors at this run's own stride-1 bandwidth
    granule64_model_time_s: float  # fit: DRAM moves pairs of sectors (64 B, the granule ncu counted on this kernel), same bandwidth
    block: int = 0  # launch configuration used (the best for stride 1)
    num_warps: int = 0
    time_min_s: float = 0.0
    time_max_s: float = 0.0
    repeat: int = 0

    @property
    def useful_bytes_per_s(self) -> float:
        return self.n_elems * FLOAT_BYTES / self.time_s

    @property
    def ratio(self) -> float:
        """Measured time over the sector model's time."""
        return self.time_s / self.sector_model_time_s


@dataclass(frozen=True)
class StridedAccess(harness.Result):
    """One strided read per stride, and the SM clock and power while they ran (None on a CPU)."""

    points: tuple[StridedPoint, ...]
    gpu_monitor: Optional[dict] = None

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, key):
        """``r[0]``, ``r[-5:]``: the points; ``r["points"]``: the field (as every Result)."""
        return super().__getitem__(key) if isinstance(key, str) else self.points[key]


def measure_strided_access(
    strides: Sequence[int] = (1, 2, 4, 8, 16, 32), n_elems: Optional[int] = None, *, repeat: int = 20
) -> StridedAccess:
    """Read ``n_elems`` floats with each lane stride and time each (median and spread of repeats).

    The points carry the sector model *fit at stride 1* (bandwidth: this kernel's own stride-1 run,
    in its best launch configuration, so stride 1 matches by construction) and the 64-byte-granule
    model (a *fit*: the granule from the Nsight Compute counters of this kernel's DRAM bytes at
    these strides, the same bandwidth); the chapter's *prediction* uses the datasheet bandwidth
    instead, its *calibrated* model experiment 1's Triton read
    (``widgets.models.memory_hierarchy_records.strided_points``).
    """
    strides = [int(s) for s in strides]
    if not strides or min(strides) < 1:
        raise ValueError(f"strides must be integers >= 1, got {strides!r}")
    if n_elems is None:
        budget = harness.choose_bytes(32 * GiB, 2 * MiB, max_fraction_of_free=0.25)
        n_elems = budget // (FLOAT_BYTES * max(strides))
    n = int(n_elems)
    src = _random(n * max(strides))
    configs = [(1024, 4), (4096, 8), (8192, 8)] if harness.on_gpu() else [(1024, 4)]
    # The stride-1 run reads more elements (up to 24x, below 2**31) so that it lasts over a
    # millisecond on a GPU (1 GiB took 256 us on the H200, under-reading the bandwidth); the
    # kernel does not specialise ``stride``, so stride 1 is the same machine code as the others.
    n_of = {s: n for s in strides}
    if harness.on_gpu():
        n_of[1] = min(src.numel(), 24 * n, 2**31 - 1)

    def run(stride, block, warps):
        m = n_of.get(stride, n)
        partial = torch.empty(_cdiv(m, block), device=src.device, dtype=torch.float32)
        grid = (partial.numel(),)
        return harness.time_fn(
            lambda: strided_read_kernel[grid](src, partial, m, stride, BLOCK=block, num_warps=warps), repeat=repeat
        )

    # The model's bandwidth here (a fit at stride 1): the same kernel's best contiguous (stride-1) read over
    # a few launch configurations; that configuration is then used for every stride. (The chapter
    # calibrates on experiment 1's Triton read instead; see ``memory_hierarchy_records``.)
    n_of[1] = n_of.get(1, n)
    with GpuMonitor() as monitor:
        best = min(((t := run(1, b, w)).median_s, i, t) for i, (b, w) in enumerate(configs))
        block, warps = configs[best[1]]
        timings = {1: best[2]}
        for s in strides:
            if s not in timings:
                timings[s] = run(s, block, warps)
    bw = model.strided_read_bytes(n_of[1], 1) / timings[1].median_s
    points = [
        StridedPoint(
            stride_elems=s,
            n_elems=n_of[s],
            time_s=timings[s].median_s,
            sector_model_time_s=model.strided_read_time_s(n_of[s], s, bw),
            granule64_model_time_s=model.strided_read_time_s(n_of[s], s, bw, granule_bytes=64),
            block=block,
            num_warps=warps,
            time_min_s=timings[s].min_s,
            time_max_s=timings[s].max_s,
            repeat=timings[s].repeat,
        )
        for s in strides
    ]
    return StridedAccess(points=tuple(points), gpu_monitor=monitor.summary())


def l2_fetch_granularity_bytes() -> Optional[int]:
    """The runtime's L2 fetch granularity hint (``cudaLimitMaxL2FetchGranularity``) [B], read
    through CuPy where available; ``None`` otherwise."""
    if not harness.on_gpu():
        return None
    try:
        import cupy

        return int(cupy.cuda.runtime.deviceGetLimit(0x05))  # cudaLimitMaxL2FetchGranularity
    except Exception:
        return None


@dataclass(frozen=True)
class MemoryHierarchyResults(harness.Result):
    """The topic's record (``widgets/data/h200/memory_hierarchy.json``'s ``results``), typed.

    The strided points and their monitor sit at the top level (the record's layout since the first
    H200 run); :attr:`strided` gives them back as one :class:`StridedAccess`."""

    hbm_bandwidth: BandwidthResult
    working_set_sweep: WorkingSetSweep
    strided_access: tuple[StridedPoint, ...]
    strided_gpu_monitor: Optional[dict] = None
    l2_fetch_granularity_bytes: Optional[int] = None
    fusion: FusionResult | harness.Failed | None = None  # memory_hierarchy_fusion (kernel fusion)
    transpose: TransposeResult | harness.Failed | None = None  # memory_hierarchy_transpose

    @property
    def strided(self) -> StridedAccess:
        return StridedAccess(self.strided_access, self.strided_gpu_monitor)


RESULTS = MemoryHierarchyResults  # the topic's result type (widgets.book.setup reads the record with it)


def run_all() -> MemoryHierarchyResults:
    """Every memory-hierarchy experiment (see ``python -m widgets.measure``)."""
    bw = measure_hbm_bandwidth()
    sweep = measure_working_set_sweep()
    strided = measure_strided_access()
    return MemoryHierarchyResults(
        hbm_bandwidth=bw,
        working_set_sweep=sweep,
        strided_access=strided.points,
        strided_gpu_monitor=strided.gpu_monitor,
        l2_fetch_granularity_bytes=l2_fetch_granularity_bytes(),
        fusion=harness.attempt(measure_fusion),
        transpose=harness.attempt(measure_transpose),
    )


def accuracy_rows(record: dict) -> list:
    """The chapter's comparisons, recomputed from ``record`` (see ``memory_hierarchy_records``)."""
    from ..models.memory_hierarchy_records import accuracy_rows as rows
    from .memory_hierarchy_fusion import accuracy_rows as fusion_rows
    from .memory_hierarchy_transpose import accuracy_rows as transpose_rows

    return rows(record) + fusion_rows(record) + transpose_rows(record)
