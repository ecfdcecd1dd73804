"""SIMT experiments: the occupancy API against the model, memory latency, bandwidth against
occupancy, warp divergence, launch overhead and CUDA graphs, Amdahl's law.

Every ``measure_*`` function runs on the current device and returns a frozen dataclass (a
``harness.Result``: ``to_record()`` is the record's JSON, ``from_record()`` reads a committed one
back typed; :class:`SimtResults` is the whole topic). Each is built from the dict the experiment
fills in, with ``strict=True``: a key the type does not declare is an error, never dropped. Without a
GPU each runs scaled down on the CPU: numba-cuda kernels in numba's simulator, the occupancy
queries through NVIDIA's occupancy calculator compiled from ``cuda_occupancy.h``, the launch and
Amdahl experiments with torch and threads on the host. The numbers then show the method, not a
GPU; the recorded H200 results (``harness.load_reference("simt")``) sit beside them in the chapter.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import torch

from ..hardware import describe_local_gpu
from ..models import simt as model
from ..units import GiB, KiB, MiB, fmt_bytes
from . import harness, simt_cluster, simt_streams, simt_warp
from . import simt_cuda as sc
from . import simt_kernels as k
from .simt_cluster import Dsmem
from .simt_streams import Overlap
from .simt_warp import Barriers, Reductions, Spills


# --------------------------------------------------------------------------------------------
# Result types (the record's layout since the first H200 run; new optional fields default to None)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OccupancyAnswer(harness.Result):
    """One launch configuration and the blocks per SM the driver (or NVIDIA's calculator) allows."""

    threads_per_block: int
    regs_per_thread: int
    regs_requested: int
    smem_per_block_bytes: int
    dynamic_smem_bytes: int
    blocks_per_sm: Optional[int]
    error: Optional[int] = None  # the CUDA error code of a refused launch


@dataclass(frozen=True)
class OccupancyApi(harness.Result):
    source: Optional[str]
    arch: str
    configs: tuple[OccupancyAnswer, ...]
    device_limits: Optional[dict] = None
    kernels: Optional[dict] = None  # register budget -> the compiled kernel's attributes (GPU only)
    model_agrees: Optional[int] = None
    model_disagrees: Optional[int] = None
    note: Optional[str] = None


@dataclass(frozen=True)
class LatencyPoint(harness.Result):
    ws_bytes: int
    hops: int
    time_s: float
    time_min_s: float
    time_max_s: float
    repeat: int
    latency_s: float
    latency_min_s: float
    latency_max_s: float


@dataclass(frozen=True)
class MemoryLatency(harness.Result):
    points: tuple[LatencyPoint, ...]
    dram_latency_s: float
    l2_latency_s: Optional[float]
    device: str


@dataclass(frozen=True)
class BandwidthPoint(harness.Result):
    dynamic_smem_bytes: int
    blocks_per_sm: int
    model_blocks_per_sm: Optional[int]
    warps_per_sm: int
    occupancy: float
    time_s: float
    time_min_s: float
    time_max_s: float
    repeat: int
    bytes_per_s: float
    sm_clock_mhz: Optional[float]
    power_w: Optional[float]
    predicted_bytes_per_s: Optional[float]


@dataclass(frozen=True)
class BandwidthVariant(harness.Result):
    regs_per_thread: Optional[int]
    bytes_per_warp_in_flight: int
    points: tuple[BandwidthPoint, ...]


@dataclass(frozen=True)
class OccupancyBandwidth(harness.Result):
    nbytes: int
    threads_per_block: int
    sms: int
    latency_s: Optional[float]
    peak_bytes_per_s: Optional[float]
    variants: dict[str, BandwidthVariant]
    device: str
    simulated: bool
    peak_source: Optional[str] = None  # where peak_bytes_per_s came from (catalog, measured copy)


@dataclass(frozen=True)
class DivergencePoint(harness.Result):
    n_paths: int
    lanes_per_path: tuple[int, ...]
    paths_taken: int
    model_slowdown: float
    simt_efficiency: float
    time_s: float
    time_min_s: float
    time_max_s: float
    repeat: int
    sm_clock_mhz: Optional[float] = None
    power_w: Optional[float] = None
    naive_predicted_time_s: Optional[float] = None
    predicted_time_s: Optional[float] = None
    measured_over_predicted: Optional[float] = None


@dataclass(frozen=True)
class Divergence(harness.Result):
    threads: int
    threads_per_block: int
    sms: int
    iters: int
    flop_per_path: int
    launch_hidden: bool
    timing: str
    fixed_time_s: float
    fixed_time_min_s: float
    fixed_time_max_s: float
    one_path_double_iters_time_s: float
    points: tuple[DivergencePoint, ...]
    device: str
    simulated: bool
    spacer_cycles: Optional[int] = None
    fixed_time_with_launch_s: Optional[float] = None
    one_path_time_with_launch_s: Optional[float] = None
    host_launch_s: Optional[float] = None
    with_launch_error: Optional[str] = None
    one_path_double_iters_sm_clock_mhz: Optional[float] = None
    sass_opcodes: Optional[dict[str, int]] = None
    sass_inner_loop: Optional[dict] = None
    regs_per_thread: Optional[int] = None
    model_warps_per_sm: Optional[int] = None
    path_s: Optional[float] = None


@dataclass(frozen=True)
class KernelBoundLoop(harness.Result):
    n_kernels: int
    nbytes: int
    host_per_launch_s: Optional[float]
    eager_s: Optional[float] = None
    graph_s: Optional[float] = None
    graph_per_kernel_s: Optional[float] = None
    predicted_eager_s: Optional[float] = None
    bound: Optional[str] = None
    eager_min_s: Optional[float] = None
    eager_max_s: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    power_w: Optional[float] = None
    error_reason: Optional[str] = None
    in_turns: Optional[bool] = None  # the eager loop and the graph replay timed in turns (older records: one after the other)
    timeline: Optional[dict] = None  # {"eager": timeline_split(...), "graph": ..., "tool": ...} (older records: none)
    timeline_error: Optional[str] = None


@dataclass(frozen=True)
class LaunchOverhead(harness.Result):
    n_kernels: int
    eager_s: float
    eager_min_s: float
    eager_max_s: float
    eager_per_kernel_s: float
    calibration_n_kernels: int
    host_per_launch_s: Optional[float]  # None when the two loops could not give a slope (calibration_error says why)
    device: str
    calibration_error: Optional[str] = None
    calibration_in_turns: Optional[str] = None  # "paired": the slope is the median of the rounds' own (older records: of two medians)
    host_per_launch_min_s: Optional[float] = None
    host_per_launch_max_s: Optional[float] = None
    calibration_short_n_kernels: Optional[int] = None
    calibration_short_s: Optional[float] = None
    calibration_long_s: Optional[float] = None
    host_fixed_s: Optional[float] = None
    rounds: Optional[int] = None
    calibration_short_min_s: Optional[float] = None
    calibration_short_max_s: Optional[float] = None
    calibration_long_min_s: Optional[float] = None
    calibration_long_max_s: Optional[float] = None
    graph_s: Optional[float] = None
    round_slopes_s: tuple[float, ...] = ()  # each round's own slope and eager loop, in order (older records: none)
    round_eager_s: tuple[float, ...] = ()
    graph_min_s: Optional[float] = None
    graph_max_s: Optional[float] = None
    graph_per_kernel_s: Optional[float] = None
    speedup: Optional[float] = None
    predicted_eager_s: Optional[float] = None
    label: Optional[str] = None
    kernel_bound: Optional[KernelBoundLoop] = None


@dataclass(frozen=True)
class AmdahlPoint(harness.Result):
    workers: int
    time_s: float
    time_min_s: float
    time_max_s: float
    repeat: int
    serial_s: float
    serial_min_s: float
    serial_max_s: float
    parallel_s: float
    serial_samples_s: tuple[float, ...] = ()
    device_event_s: Optional[float] = None
    speedup: Optional[float] = None
    predicted_speedup: Optional[float] = None
    measured_over_predicted: Optional[float] = None
    ceiling_same_run: Optional[float] = None
    speedup_low: Optional[float] = None  # the law's range, the serial part anywhere the one-worker steps saw it
    speedup_high: Optional[float] = None
    parallel_over_law: Optional[float] = None  # the parallel part over the law's P / n
    parallel_excess_s: Optional[float] = None  # the parallel part minus P / n


@dataclass(frozen=True)
class Amdahl(harness.Result):
    worker: str
    units: int
    serial_iters: int
    timing: str
    points: tuple[AmdahlPoint, ...]
    device: str
    spin_iters: Optional[int] = None
    spin_sass_inner_loop: Optional[dict] = None
    serial_s: Optional[float] = None
    parallel_one_worker_s: Optional[float] = None
    parallel_fraction: Optional[float] = None
    ceiling: Optional[float] = None
    ceiling_reason: Optional[str] = None
    worker_order: Optional[str] = None  # "balanced" (round_orders), "rotated" by one; older records: one order every round
    round_orders: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class SimtResults(harness.Result):
    """The topic's record (``widgets/data/h200/simt.json``'s ``results``), typed; an experiment
    that failed is a ``harness.Failed`` holding its traceback."""

    occupancy_api: Union[OccupancyApi, harness.Failed]
    memory_latency: Union[MemoryLatency, harness.Failed]
    occupancy_bandwidth: Union[OccupancyBandwidth, harness.Failed]
    divergence: Union[Divergence, harness.Failed]
    launch_overhead: Union[LaunchOverhead, harness.Failed]
    amdahl: Union[Amdahl, harness.Failed]
    # the depth pass (widgets/experiments/simt_warp.py, simt_streams.py); None in older records
    reductions: Union[Reductions, harness.Failed, None] = None
    barriers: Union[Barriers, harness.Failed, None] = None
    spills: Union[Spills, harness.Failed, None] = None
    overlap: Union[Overlap, harness.Failed, None] = None
    dsmem: Union[Dsmem, harness.Failed, None] = None

    def ok(self, name: str):
        """The experiment ``name``, or None where it failed."""
        r = getattr(self, name)
        return None if isinstance(r, harness.Failed) else r


RESULTS = SimtResults  # the topic's result type (widgets.book.setup reads the record with it)


REG_BUDGETS = (24, 32, 37, 40, 48, 56, 64, 65, 72, 80, 96, 128, 136, 168, 200, 232, 255)
BLOCK_SIZES = (32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024)
SMEM_BYTES = (1000, 12345, 24576, 49152, 65536, 100000, 116736, 150000, 232448)
SMEM_SWEEP_REGS = (32, 64, 128)


def _quietly(fn):
    """Run ``fn`` with numba's low-occupancy warnings silenced."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with k.quiet():
            return fn(*args, **kwargs)

    return wrapper


def _host_time(fn, repeat: int = 5) -> float:
    """Median host wall time of ``fn()`` [s] (for steps that include their own synchronization)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def gpu_clock_power() -> dict:
    """The SM clock [MHz] and board power [W] NVML reports now (``torch.cuda.clock_rate`` and
    ``power_draw``, which need pynvml); None for each on a CPU or where NVML is missing."""
    out = {"sm_clock_mhz": None, "power_w": None}
    if not harness.on_gpu():
        return out
    try:
        out["sm_clock_mhz"] = float(torch.cuda.clock_rate())
    except Exception:  # no pynvml, or NVML refused: record null
        pass
    try:
        out["power_w"] = float(torch.cuda.power_draw()) / 1000.0  # NVML reports mW
    except Exception:
        pass
    return out


def _spread(t) -> dict:
    """Median and spread of a ``harness.Timing``."""
    return {"time_s": t.median_s, "time_min_s": t.min_s, "time_max_s": t.max_s, "repeat": t.repeat}


# --------------------------------------------------------------------------------------------
# 1. The occupancy API against the model
# --------------------------------------------------------------------------------------------
def occupancy_configs(arch: str = "sm_90") -> list[tuple]:
    """(register budget, threads per block, dynamic shared memory [B]) to ask about: every
    register budget with every block size, a shared-memory sweep for three budgets, and a few
    launches that must fail (too much shared memory, too many threads)."""
    optin = model.arch_limits(arch).smem_per_block_optin_bytes if arch in model.ARCHS else 232448
    configs = [(r, t, 0) for r in REG_BUDGETS for t in BLOCK_SIZES]
    configs += [(r, t, s) for r in SMEM_SWEEP_REGS for t in BLOCK_SIZES for s in SMEM_BYTES if s <= optin]
    configs += [(32, 256, optin + 1), (32, 128, optin + 1024), (32, 1056, 0), (24, 2048, 0)]
    return configs


def measure_occupancy_api(configs: Optional[Sequence[tuple]] = None) -> OccupancyApi:
    """Blocks per SM as the CUDA driver's occupancy calculator reports them, for real kernels.

    On a GPU: one kernel is compiled per register budget (``--maxrregcount``) from a body that
    needs far more registers than any budget, its ACTUAL register count is read back
    (``CU_FUNC_ATTRIBUTE_NUM_REGS``), it opts in to the largest dynamic shared memory and the
    largest carve-out, and ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` is asked about each
    (threads per block, dynamic shared memory). Without a GPU the same questions go to NVIDIA's
    occupancy calculator compiled from ``cuda_occupancy.h`` (register counts as requested).
    """
    if harness.on_gpu():
        return OccupancyApi.from_record(_occupancy_api_gpu(configs), strict=True)
    arch = "sm_90"
    configs = list(configs or occupancy_configs(arch))
    if not sc.header_available():
        return OccupancyApi(source=None, arch=arch, configs=(), note="no GPU, and no cuda_occupancy.h or C compiler here")
    answers = sc.header_occupancy([(t, r, s) for r, t, s in configs], arch)
    rows = [
        dict(threads_per_block=t, regs_per_thread=r, regs_requested=r, smem_per_block_bytes=s, dynamic_smem_bytes=s,
             blocks_per_sm=a["blocks_per_sm"] if a["error"] == 0 else None, error=a["error"] or None)
        for (r, t, s), a in zip(configs, answers)
    ]
    where = "Triton's NVIDIA backend" if "triton" in str(sc.occupancy_header_path()) else "the CUDA toolkit"
    return OccupancyApi.from_record({"source": f"cudaOccMaxActiveBlocksPerMultiprocessor, cuda_occupancy.h from {where} (no GPU here)",
                                     "arch": arch, "device_limits": None, "configs": rows, **_agreement(rows, arch)}, strict=True)


def _occupancy_api_gpu(configs) -> dict:
    drv = sc.Driver()
    arch = drv.arch()
    limits = drv.device_limits()
    configs = list(configs or occupancy_configs(arch))
    kernels = {}
    for budget in sorted({r for r, _, _ in configs}):
        func = drv.load(sc.compile_cubin(sc.REGS_KERNEL, arch, maxrregcount=budget, defines={"NVALS": 256}), "regs_kernel")
        kernels[budget] = dict(
            func=func,
            num_regs=drv.func_attribute(func, "num_regs"),
            static_smem_bytes=drv.func_attribute(func, "shared_size_bytes"),
            max_threads_per_block=drv.func_attribute(func, "max_threads_per_block"),
            local_bytes=drv.func_attribute(func, "local_size_bytes"),
            max_dynamic_smem_bytes=drv.opt_in_max_shared_memory(func),
        )
    rows = []
    for budget, threads, dyn in configs:
        kern = kernels[budget]
        try:
            blocks, err = drv.max_active_blocks(kern["func"], threads, dyn), None
        except sc.CudaError as exc:
            blocks, err = None, exc.code
        rows.append(dict(threads_per_block=threads, regs_per_thread=kern["num_regs"], regs_requested=budget,
                         smem_per_block_bytes=kern["static_smem_bytes"] + dyn, dynamic_smem_bytes=dyn,
                         blocks_per_sm=blocks, error=err))
    kernel_info = {str(b): {kk: v for kk, v in kern.items() if kk != "func"} for b, kern in kernels.items()}
    return {"source": "cuOccupancyMaxActiveBlocksPerMultiprocessor (CUDA driver API)", "arch": arch, "device_limits": limits,
            "kernels": kernel_info, "configs": rows, **_agreement(rows, arch)}


def _agreement(rows: list, arch: str) -> dict:
    """How many answers the model reproduces (a launch refused counts as 0 blocks)."""
    if arch not in model.ARCHS:
        return {"model_agrees": None, "model_disagrees": None}
    bad = [r for r in rows if model.occupancy(r["threads_per_block"], r["regs_per_thread"], r["smem_per_block_bytes"], arch).blocks_per_sm
           != (r["blocks_per_sm"] or 0)]
    return {"model_agrees": len(rows) - len(bad), "model_disagrees": len(bad)}


# --------------------------------------------------------------------------------------------
# 2. Memory latency: a pointer chase
# --------------------------------------------------------------------------------------------
def _random_cycle(n: int, seed: int = 0) -> torch.Tensor:
    """``nxt`` with one cycle through all ``n`` entries in random order (int64)."""
    dev = harness.device()
    g = torch.Generator(device=dev.type).manual_seed(seed)
    perm = torch.randperm(n, generator=g, device=dev)
    nxt = torch.empty(n, dtype=torch.int64, device=dev)
    nxt[perm] = perm.roll(-1)
    return nxt


@_quietly
def measure_memory_latency(ws_bytes: Optional[Sequence[int]] = None, *, hops: Optional[int] = None, repeat: int = 5) -> MemoryLatency:
    """Time per dependent load [s] for working sets inside and far beyond the L2.

    One thread follows a random cycle; every launch continues where the last stopped, so
    repeats do not find the previous launch's addresses in the cache.
    """
    if ws_bytes is None:
        # the far working set: 1 GiB where free memory allows (building the cycle holds about three
        # copies of it), less on a GPU that is busy with other work (found on the H200 with several
        # notebooks sharing it: a fixed 1 GiB ran out of memory)
        far = harness.choose_bytes(1 * GiB, 0, max_fraction_of_free=0.08) // 8 * 8
        ws_bytes = [4 * MiB, far] if harness.on_gpu() else [32 * KiB]
    hops = hops or (20000 if harness.on_gpu() else 200)
    points = []
    for ws in ws_bytes:
        n = int(ws) // 8
        nxt = _random_cycle(n)
        pos = torch.zeros(1, dtype=torch.int64, device=nxt.device)
        nxt.sum()  # touch the whole buffer once (a small one is then L2-resident)
        nd, pd = k.device_array(nxt), k.device_array(pos)
        t = harness.time_fn(lambda nd=nd, pd=pd: k.pointer_chase_kernel[1, 1](nd, hops, pd), warmup=2, repeat=repeat)
        points.append(dict(ws_bytes=n * 8, hops=hops, **_spread(t), latency_s=t.median_s / hops,
                           latency_min_s=t.min_s / hops, latency_max_s=t.max_s / hops))
        del nxt, pos, nd, pd
    big = max(points, key=lambda p: p["ws_bytes"])
    small = min(points, key=lambda p: p["ws_bytes"])
    return MemoryLatency.from_record({"points": points, "dram_latency_s": big["latency_s"],
                                      "l2_latency_s": small["latency_s"] if len(points) > 1 else None,
                                      "device": harness.device_name()}, strict=True)


# --------------------------------------------------------------------------------------------
# 3. Bandwidth against occupancy
# --------------------------------------------------------------------------------------------
STREAM_VARIANTS = {"float x1": dict(VEC=1, UNROLL=1), "float4 x4": dict(VEC=4, UNROLL=4)}
TARGET_BLOCKS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)


def hbm_bytes_per_s_here(nbytes: Optional[int] = None) -> tuple[Optional[float], str]:
    """The HBM bandwidth the Little's-law prediction is capped at on this GPU [B/s], and where it
    came from: the catalog's datasheet figure for a GPU it knows; else a device-to-device copy
    measured now (bytes read + written over the time); on the CPU ``None``, said so."""
    if not harness.on_gpu():
        return None, "no GPU: no HBM to cap the prediction"
    gpu = describe_local_gpu()
    if gpu is not None and gpu.hbm_bytes_per_s:
        return float(gpu.hbm_bytes_per_s), f"datasheet ({gpu.name}, widgets.hardware catalog)"
    nbytes = nbytes or harness.choose_bytes(1 * GiB, 0, max_fraction_of_free=0.1) // 4 * 4
    src = torch.rand(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    t = harness.time_fn(lambda: dst.copy_(src), repeat=10)
    src = dst = None  # free the buffers before the experiment allocates its own
    return 2 * nbytes / t.median_s, (f"measured: device-to-device copy of {nbytes / GiB:.2f} GiB "
                                     f"({harness.device_name()} is not in the catalog)")


def measure_occupancy_bandwidth(latency_s: Optional[float] = None, *, threads_per_block: int = 128,
                                repeat: int = 10) -> OccupancyBandwidth:
    """Read a buffer far larger than the L2 with a memory-bound kernel whose occupancy is set by
    the dynamic shared memory each block asks for (and never uses); one full wave of blocks, so
    every block stays resident. Two variants: one 4-byte load in flight per thread, and four
    independent 16-byte loads. The prediction is Little's law with the measured latency.
    """
    if not harness.on_gpu():
        return _occupancy_bandwidth_cpu(repeat=min(repeat, 3))
    drv = sc.Driver()
    arch = drv.arch()
    sms = drv.device_attribute("multiprocessor_count")
    peak, peak_source = hbm_bytes_per_s_here()
    latency_s = latency_s or measure_memory_latency().dram_latency_s
    nbytes = harness.choose_bytes(2 * GiB, 0, max_fraction_of_free=0.2) // 64 * 64
    x = torch.rand(nbytes // 4, device="cuda")
    out = torch.zeros(1, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    results = {}
    for name, defines in STREAM_VARIANTS.items():
        func = drv.load(sc.compile_cubin(sc.STREAM_READ_KERNEL, arch, defines=defines), "stream_read")
        drv.opt_in_max_shared_memory(func)
        regs = drv.func_attribute(func, "num_regs")
        n = nbytes // (4 * defines["VEC"])
        per_warp = model.WARP_SIZE * 4 * defines["VEC"] * defines["UNROLL"]
        points = []
        for b in TARGET_BLOCKS:
            smem = model.smem_per_block_for(b, arch) if arch in model.ARCHS else 0
            blocks = drv.max_active_blocks(func, threads_per_block, smem)
            grid = blocks * sms
            t = harness.time_fn(
                lambda: drv.launch(func, grid, threads_per_block, smem, [x.data_ptr(), out.data_ptr(), ctypes.c_longlong(n)], stream),
                repeat=repeat,
            )
            nvml = gpu_clock_power()  # read right after the timed launches, the GPU still warm
            occ = model.occupancy(threads_per_block, regs, smem, arch) if arch in model.ARCHS else None
            warps = blocks * (threads_per_block // model.WARP_SIZE)
            points.append(dict(
                dynamic_smem_bytes=smem, blocks_per_sm=blocks, model_blocks_per_sm=occ.blocks_per_sm if occ else None,
                warps_per_sm=warps, occupancy=warps / (drv.device_attribute("max_threads_per_multiprocessor") // 32),
                **_spread(t), bytes_per_s=nbytes / t.median_s, **nvml,
                predicted_bytes_per_s=float(model.littles_law_bytes_per_s(warps, sms, per_warp, latency_s, peak)),
            ))
        results[name] = dict(regs_per_thread=regs, bytes_per_warp_in_flight=per_warp, points=points)
    return OccupancyBandwidth.from_record({"nbytes": nbytes, "threads_per_block": threads_per_block, "sms": sms, "latency_s": latency_s,
                                           "peak_bytes_per_s": peak, "peak_source": peak_source, "variants": results,
                                           "device": harness.device_name(), "simulated": False}, strict=True)


@_quietly
def _occupancy_bandwidth_cpu(repeat: int = 3) -> OccupancyBandwidth:
    """The numba twin of ``stream_read`` in the simulator: one 'SM', 32-thread blocks."""
    n = 4096
    x = torch.rand(n)
    out = torch.zeros(1)
    xd, od = k.device_array(x), k.device_array(out)
    points = []
    for b in (1, 2, 4):
        t = harness.time_fn(lambda: k.stream_read_kernel[b, 32](xd, od), warmup=1, repeat=repeat)
        points.append(dict(dynamic_smem_bytes=0, blocks_per_sm=b, model_blocks_per_sm=None, warps_per_sm=b, occupancy=b / 64,
                           **_spread(t), bytes_per_s=n * 4 / t.median_s, sm_clock_mhz=None, power_w=None, predicted_bytes_per_s=None))
    return OccupancyBandwidth.from_record({"nbytes": n * 4, "threads_per_block": 32, "sms": 1, "latency_s": None, "peak_bytes_per_s": None,
                                           "peak_source": "no GPU: no HBM to cap the prediction",
                                           "variants": {"float x1": dict(regs_per_thread=None, bytes_per_warp_in_flight=128, points=points)},
                                           "device": harness.device_name(), "simulated": True}, strict=True)


# --------------------------------------------------------------------------------------------
# 4. Divergence
# --------------------------------------------------------------------------------------------
# A GPU sleep enqueued before each timed call's start event (``harness.time_fn``'s ``setup``): the
# host prepares the numba launch (~50 us on an H200 host) while the GPU still sleeps, so the
# CUDA events see the kernel only. ~1 ms at 2 GHz, far longer than the host preparation.
SPACER_CYCLES = 2_000_000


def _gpu_spacer():
    """A ``setup`` for ``harness.time_fn`` that keeps the GPU busy while the host prepares the
    launch, or None (and why) where ``torch.cuda._sleep`` is missing or this is not a GPU."""
    if not harness.on_gpu():
        return None, "no GPU: host clock around each call"
    try:
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
    except Exception as exc:  # a torch without _sleep: time with the launch inside the events
        return None, f"torch.cuda._sleep unavailable ({exc!r}): launch preparation inside the events"
    return (lambda: torch.cuda._sleep(SPACER_CYCLES)), None


@_quietly
def measure_divergence(n_paths: Sequence[int] = (1, 2, 4, 8, 16, 32), *, iters: Optional[int] = None, repeat: int = 10) -> Divergence:
    """Time the same work with the lanes of every warp spread over ``n`` paths (lane % n).

    On a GPU every timed launch is preceded by a spacer kernel (a GPU sleep) enqueued before the
    start event: the host's launch preparation (numba's argument handling, ~50 us) happens while
    the GPU is still busy, so the CUDA events time the kernel alone (``launch_hidden``). The
    no-work kernel and the one-path kernel are also timed the plain way (launch inside the
    events) and the host time of one numba launch is recorded, to show what the launch adds.

    The kernel is also timed with no work on its path (``iters = 0``): what the kernel's set-up
    and stores cost whatever the number of paths. The model, calibrated on that run and on the
    one-path run, is ``t(n) = fixed + n x (t(1) - fixed)`` (``model.divergent_kernel_time_s``);
    the naive ``n x t(1)`` is recorded beside it.
    """
    if harness.on_gpu():
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        block, grid = 256, sms * 16  # two full waves at 2048 threads per SM
        iters = iters or 1024
    else:
        sms = 1
        block, grid, iters, repeat = 32, 1, iters or 8, min(repeat, 3)
    out = torch.zeros(block * grid, device=harness.device())
    lane_paths = torch.zeros(model.WARP_SIZE, dtype=torch.int32, device=harness.device())
    od, ld = k.device_array(out), k.device_array(lane_paths)
    spacer, spacer_note = _gpu_spacer()

    def launch(n, it):
        return lambda: k.divergent_kernel[grid, block](od, n, it, ld)

    fixed_t = harness.time_fn(launch(1, 0), warmup=2, repeat=repeat, setup=spacer)
    points = []
    for n in n_paths:
        t = harness.time_fn(launch(n, iters), warmup=2, repeat=repeat, setup=spacer)
        nvml = gpu_clock_power()
        harness.synchronize()
        lanes = np.bincount(lane_paths.cpu().numpy(), minlength=n)[:n]
        d = model.warp_divergence(lanes.tolist(), [1.0] * n)
        points.append(dict(n_paths=int(n), lanes_per_path=lanes.tolist(), paths_taken=d.paths_taken, model_slowdown=d.slowdown,
                           simt_efficiency=d.simt_efficiency, **_spread(t), **nvml))
    # One path with twice the iterations: the slope is the time per iteration, free of the fixed part.
    double_t = harness.time_fn(launch(1, 2 * iters), warmup=1, repeat=repeat, setup=spacer)
    double_nvml = gpu_clock_power()
    # The same kernels with the launch preparation inside the events (no spacer), and the host
    # time of one launch (GPU idle at its start): what the plain CUDA-event timing would add.
    with_launch = {"fixed_time_with_launch_s": None, "one_path_time_with_launch_s": None, "host_launch_s": None}
    if spacer is not None:
        try:
            with_launch["fixed_time_with_launch_s"] = harness.time_fn(launch(1, 0), warmup=1, repeat=repeat).median_s
            with_launch["one_path_time_with_launch_s"] = harness.time_fn(launch(1, iters), warmup=1, repeat=repeat).median_s
            with_launch["host_launch_s"] = _enqueue_time(launch(1, iters), repeat=repeat)
        except Exception as exc:  # optional readings: record null and why
            with_launch["with_launch_error"] = repr(exc)
    gpu = harness.on_gpu()
    result = {"threads": block * grid, "threads_per_block": block, "sms": sms, "iters": iters, "flop_per_path": 2 * 4 * iters * block * grid,
              "launch_hidden": spacer is not None, "spacer_cycles": SPACER_CYCLES if spacer is not None else None,
              "timing": ("CUDA events after a GPU-sleep spacer (host launch preparation hidden)" if spacer is not None
                         else spacer_note),
              "fixed_time_s": fixed_t.median_s, "fixed_time_min_s": fixed_t.min_s, "fixed_time_max_s": fixed_t.max_s,
              **with_launch,
              "one_path_double_iters_time_s": double_t.median_s, "one_path_double_iters_sm_clock_mhz": double_nvml["sm_clock_mhz"],
              "sass_opcodes": _sass_opcodes(k.divergent_kernel) if gpu else None,
              "sass_inner_loop": _sass_inner_loop_of(k.divergent_kernel) if gpu else None,
              **_kernel_occupancy(k.divergent_kernel, block),
              "points": points, "device": harness.device_name(), "simulated": k.SIMULATED}
    result.update(divergence_predictions(result))
    return Divergence.from_record(result, strict=True)


def _kernel_occupancy(kernel, threads_per_block: int) -> dict:
    """Registers per thread of a compiled numba kernel and the warps per SM the occupancy model
    gives it (None for each on a CPU or where numba cannot say)."""
    out = {"regs_per_thread": None, "model_warps_per_sm": None}
    if not harness.on_gpu():
        return out
    try:
        regs = kernel.get_regs_per_thread()
        regs = max(regs.values()) if isinstance(regs, dict) else int(regs)
        out["regs_per_thread"] = int(regs)
        arch = harness.capabilities().arch
        if arch in model.ARCHS:
            out["model_warps_per_sm"] = model.occupancy(threads_per_block, max(int(regs), 1), 0, arch).warps_per_sm
    except Exception:  # an older numba-cuda: record null
        pass
    return out


def _sass_opcodes(kernel) -> Optional[dict]:
    """Opcode counts of a compiled numba kernel's SASS (``inspect_sass``, which needs ``nvdisasm``);
    None where that is not available. Whole kernel, every specialization it was compiled for."""
    import re
    from collections import Counter

    try:
        sass = kernel.inspect_sass()
    except Exception:  # no nvdisasm, or an older numba-cuda: record null
        return None
    text = "\n".join(sass.values()) if isinstance(sass, dict) else str(sass)
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)", text)
    return dict(Counter(ops).most_common()) or None


_SASS_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)([^;]*);")
_SASS_LABEL = re.compile(r"^\s*(\.L_[A-Za-z0-9_]+):")
_SASS_TARGET = re.compile(r"`?\(\s*(\.L_[A-Za-z0-9_]+)\s*\)|(0x[0-9a-f]+)")


def sass_loops(sass: str) -> list[dict]:
    """Every loop of one SASS listing (``nvdisasm`` text): a backward ``BRA`` to a label (or
    address) earlier in the listing closes a loop whose body runs from that label to the branch.
    One dict per loop: ``start``/``end`` (instruction indices), ``instructions`` (in the body,
    the branch included), ``ffma`` (FFMAs in the body), ``opcodes`` (counts) and ``innermost``
    (no other loop inside it)."""
    insns, labels, addr_index = [], {}, {}
    for line in str(sass).splitlines():
        m = _SASS_LABEL.match(line)
        if m:
            labels[m.group(1)] = len(insns)
            continue
        m = _SASS_INSN.search(line)
        if m:
            addr_index[int(m.group(1), 16)] = len(insns)
            insns.append((m.group(2), m.group(3)))
    loops = []
    for i, (op, rest) in enumerate(insns):
        if op != "BRA":
            continue
        t = _SASS_TARGET.search(rest)
        if not t:
            continue
        start = labels.get(t.group(1)) if t.group(1) else addr_index.get(int(t.group(2), 16))
        if start is None or start > i:
            continue
        body = [o for o, _ in insns[start:i + 1]]
        loops.append(dict(start=start, end=i, instructions=len(body), ffma=body.count("FFMA"),
                          opcodes=dict(Counter(body).most_common())))
    for lp in loops:
        lp["innermost"] = not any(o is not lp and lp["start"] <= o["start"] and o["end"] <= lp["end"] for o in loops)
    return loops


def sass_inner_loop(sass: str, ffma_per_iteration: int = 4) -> Optional[dict]:
    """The inner FMA loop of a SASS listing: the innermost loop with the most FFMAs (an unrolled
    main body beats its remainder loop), with its ``instructions_per_iteration`` (instructions
    in the body x ``ffma_per_iteration`` / FFMAs in it: the body may be unrolled). None when the
    listing has no loop with an FFMA."""
    loops = [lp for lp in sass_loops(sass) if lp["innermost"] and lp["ffma"] > 0]
    if not loops:
        return None
    lp = max(loops, key=lambda x: (x["ffma"], -x["start"]))
    return {"instructions": lp["instructions"], "ffma": lp["ffma"], "iterations_per_body": lp["ffma"] / ffma_per_iteration,
            "instructions_per_iteration": lp["instructions"] * ffma_per_iteration / lp["ffma"], "opcodes": lp["opcodes"]}


def _sass_inner_loop_of(kernel) -> Optional[dict]:
    """``sass_inner_loop`` of a compiled numba kernel (its first specialization); None where the
    SASS is not available (no nvdisasm) or has no FMA loop: an optional reading never fails."""
    try:
        sass = kernel.inspect_sass()
        text = next(iter(sass.values())) if isinstance(sass, dict) else str(sass)
        return sass_inner_loop(text)
    except Exception:
        return None


def divergence_predictions(res: dict) -> dict:
    """Recompute the divergence model's times from a ``measure_divergence`` result (or record):
    ``path_s`` = t(1) - fixed, and per point the calibrated ``predicted_time_s`` and the naive
    ``n x t(1)``."""
    one = next((p for p in res["points"] if p["paths_taken"] == 1), None)
    if one is None:
        return {"path_s": None}
    fixed = res["fixed_time_s"]
    path_s = max(one["time_s"] - fixed, 0.0)
    for p in res["points"]:
        p["naive_predicted_time_s"] = one["time_s"] * p["model_slowdown"]
        p["predicted_time_s"] = model.divergent_kernel_time_s(p["paths_taken"], path_s, fixed)
        p["measured_over_predicted"] = p["time_s"] / p["predicted_time_s"]
    return {"path_s": path_s}


# --------------------------------------------------------------------------------------------
# 5. Launch overhead and CUDA graphs
# --------------------------------------------------------------------------------------------
# The loops of a calibration round, and of the next: the order flips, so no loop always runs first
CALIBRATION_ORDER = (("short", "long", "eager"), ("eager", "long", "short"))


def measure_launch_overhead(n_kernels: Optional[int] = None, *, calibration_kernels: Optional[int] = None,
                            repeat: int = 10) -> LaunchOverhead:
    """``n_kernels`` tiny kernels (``x.add_(1)`` on one element): launched one by one from Python,
    and replayed from a CUDA graph that captured the same launches.

    The eager time is predicted from two constants, each measured by its own micro-benchmark
    (so the comparison is labelled *calibrated*): the host time per launch, and the GPU time per
    kernel, from the graph replay. Neither is taken from the eager loop it predicts. The host
    time per launch is the slope between two separate loops of launches, each started with the
    GPU idle and timed on the host clock: ``calibration_kernels`` launches and a tenth as many,
    (long - short) / (launches long - launches short), so that what a loop pays once at its start
    (the intercept, ``host_fixed_s``) is not spread over its launches. The host's own speed drifts
    over time, so the two loops and the eager loop run in turns, one of each per round over
    ``repeat`` rounds (5 at least), in the order short, long, eager and back in the next round: a
    drift then reaches all three alike (the book's first records timed one 200-launch loop before
    the eager loop, and it came out well above the eager loop's time per launch). The slope is the
    median of the rounds' own slopes (each round's long loop against its short one), with their
    range (``host_per_launch_min_s``, ``..._max_s``); each loop's median and range are recorded too.
    Where the long loops are not longer than the short ones, or the slope is outside half to twice
    the long loop's own time per launch (a very noisy host), the host time per launch is ``None``,
    ``calibration_error`` says why and nothing is predicted; the rest still stands.
    """
    n = _int_arg("n_kernels", (1000 if harness.on_gpu() else 200) if n_kernels is None else n_kernels)
    c = _int_arg("calibration_kernels", (2000 if harness.on_gpu() else 200) if calibration_kernels is None else calibration_kernels)
    if c < 10:
        raise ValueError(f"calibration_kernels must be 10 or more (its short loop is a tenth as long), got {c}")
    short = c // 10
    dev = harness.device()
    x = torch.zeros(1, device=dev)

    def launches(count):
        for _ in range(count):
            x.add_(1.0)

    launches(c)  # warm-up: allocator, dispatcher caches
    harness.synchronize()
    loop_s = _enqueue_time if harness.on_gpu() else _host_time
    rounds = max(_int_arg("repeat", repeat), 5)  # medians of 5 or more: one hiccup of a busy host cannot decide them
    shorts, longs, eagers = [], [], []
    steps = {"short": lambda: shorts.append(loop_s(lambda: launches(short), repeat=1)),
             "long": lambda: longs.append(loop_s(lambda: launches(c), repeat=1)),
             "eager": lambda: eagers.append(harness.time_fn(lambda: launches(n), warmup=0, repeat=1).median_s)}
    for i in range(rounds):  # in turns: a drift of the host's speed reaches the three loops alike
        for name in CALIBRATION_ORDER[i % 2]:
            steps[name]()
    harness.synchronize()
    host_short, host_long, eager_s = (float(np.median(v)) for v in (shorts, longs, eagers))
    slopes = [(lo - sh) / (c - short) for sh, lo in zip(shorts, longs)]  # each round's own slope
    # A host too noisy for a slope is a reading that failed, said why, not an exception (the eager loop
    # and the graph still stand): a long loop no slower than the short one, or a slope outside half to
    # twice the long loop's own time per launch (the slope only removes a cost paid once per loop, which
    # cannot exceed the short loop's time; a slope far from the long loop's rate is noise, not launches).
    slope = float(np.median(slopes))
    if host_long <= host_short:
        unreadable = (f"the {c}-launch loop took {host_long:.3g} s, no longer than the {short}-launch loop's {host_short:.3g} s "
                      f"(medians of {rounds} rounds): this host's time per launch cannot be read from them")
    elif slope <= 0:
        unreadable = (f"the rounds' own slopes between the {short}- and {c}-launch loops have a median of {slope:.3g} s per launch "
                      f"({rounds} rounds): this host's time per launch cannot be read from them")
    elif not 0.5 <= slope / (host_long / c) <= 2.0:
        unreadable = (f"the slope between the {short}- and {c}-launch loops, {slope:.3g} s per launch, is "
                      f"{slope / (host_long / c):.2f} times the {c}-launch loop's own time per launch (medians of {rounds} "
                      "rounds): too far from it to be the launches' cost, so the host's time per launch is not read from them")
    else:
        unreadable = None
    per_launch = None if unreadable else slope
    result = {"n_kernels": n, "eager_s": eager_s, "eager_min_s": min(eagers), "eager_max_s": max(eagers),
              "eager_per_kernel_s": eager_s / n, "calibration_n_kernels": c, "host_per_launch_s": per_launch,
              "calibration_short_n_kernels": short, "calibration_short_s": host_short, "calibration_long_s": host_long,
              "host_fixed_s": None if unreadable else host_short - short * per_launch, "rounds": rounds,
              "calibration_in_turns": "paired",
              "calibration_error": unreadable,
              "host_per_launch_min_s": None if unreadable else min(slopes), "host_per_launch_max_s": None if unreadable else max(slopes),
              "round_slopes_s": [float(v) for v in slopes], "round_eager_s": [float(v) for v in eagers],
              "calibration_short_min_s": min(shorts), "calibration_short_max_s": max(shorts),
              "calibration_long_min_s": min(longs), "calibration_long_max_s": max(longs),
              "graph_s": None, "graph_per_kernel_s": None, "speedup": None, "predicted_eager_s": None, "device": harness.device_name()}
    if harness.on_gpu():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            launches(n)  # warm up on a side stream, as torch.cuda.graphs recommends
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            launches(n)
        x.zero_()
        graph.replay()
        torch.cuda.synchronize()
        if x.item() != n:
            raise RuntimeError(f"graph replay ran {x.item()} of {n} kernels")
        graph_t = harness.time_fn(graph.replay, warmup=2, repeat=repeat)
        per_kernel = graph_t.median_s / n
        result.update(graph_s=graph_t.median_s, graph_min_s=graph_t.min_s, graph_max_s=graph_t.max_s, graph_per_kernel_s=per_kernel,
                      speedup=eager_s / graph_t.median_s)
    result["kernel_bound"] = _kernel_bound_loop(result["host_per_launch_s"], repeat=repeat)
    result.update(launch_prediction(result))
    return LaunchOverhead.from_record(result, strict=True)


KERNEL_BOUND_BYTES = 64 * MiB  # x.add_(1) reads and writes it: ~30 us per kernel on an H200, longer than a launch


def _kernel_bound_loop(host_per_launch_s: float, *, n_kernels: Optional[int] = None, repeat: int = 10) -> dict:
    """The launch model's other regime: an eager loop whose kernels (``add_`` on a 64 MiB
    tensor) outlast the host's launch time. Predicted as ``n x max(GPU time per kernel from a
    graph replay of the same launches, host time per launch from the tiny-kernel loop)``. On the
    CPU (no graph, no asynchrony) only the eager loop runs, on a small tensor; on a GPU the eager
    loop and the graph replay are timed in turns, the order flipped every round. An optional
    reading: a failure records null eager and prediction and why, never an exception."""
    gpu = harness.on_gpu()
    n = n_kernels or (200 if gpu else 20)
    nbytes = KERNEL_BOUND_BYTES if gpu else 4 * MiB
    out = {"n_kernels": n, "nbytes": nbytes, "eager_s": None, "graph_s": None, "graph_per_kernel_s": None,
           "host_per_launch_s": host_per_launch_s, "predicted_eager_s": None, "bound": None}
    try:
        y = torch.zeros(nbytes // 4, device=harness.device())

        def launches(count):
            for _ in range(count):
                y.add_(1.0)

        launches(2)
        harness.synchronize()
        if not gpu:
            eager_t = harness.time_fn(lambda: launches(n), warmup=1, repeat=repeat)
            out.update(eager_s=eager_t.median_s, eager_min_s=eager_t.min_s, eager_max_s=eager_t.max_s, **gpu_clock_power())
        if gpu:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                launches(n)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                launches(n)
            launches(n)  # warm-up of both, then the eager loop and the replay in turns (the order flips each round):
            graph.replay()  # a drift of the clock or the memory between them reaches both alike
            eagers, replays = [], []
            for i in range(repeat):
                pair = ((eagers, lambda: launches(n)), (replays, graph.replay))
                for times, fn in pair if i % 2 == 0 else pair[::-1]:
                    times.append(harness.time_fn(fn, warmup=0, repeat=1).median_s)
            out.update(eager_s=float(np.median(eagers)), eager_min_s=min(eagers), eager_max_s=max(eagers), in_turns=True,
                       **gpu_clock_power())
            per_kernel = float(np.median(replays)) / n
            out.update(graph_s=float(np.median(replays)), graph_per_kernel_s=per_kernel)
            if host_per_launch_s is not None:  # no prediction without the tiny-kernel loop's host time
                out.update(predicted_eager_s=model.launch_bound_time_s(n, per_kernel, host_per_launch_s),
                           bound="kernel" if per_kernel >= host_per_launch_s else "host")
            try:  # after the timings, so the profiler cannot slow them: where the eager loop's extra time per kernel goes
                def then(first, fn):  # one profiler session: a warm-up run, then the run kept (its last n kernels)
                    return lambda: (first(), harness.synchronize(), fn())

                out["timeline"] = {"eager": timeline_split(harness.gpu_kernel_spans(then(lambda: launches(n), lambda: launches(n)))[-n:]),
                                   "graph": timeline_split(harness.gpu_kernel_spans(then(graph.replay, graph.replay))[-n:]),
                                   "tool": f"torch.profiler {torch.__version__} (CUPTI kernel records)"}
            except Exception as exc:  # optional: the timings above stand without it
                out["timeline_error"] = repr(exc)[:300]
    except Exception as exc:  # optional reading: null and why
        out["error_reason"] = repr(exc)
    return out


def timeline_split(spans: Sequence[tuple]) -> dict:
    """Split a run of back-to-back kernels into the time each kernel ran and the gaps between
    them, from a timeline's ``(name, start_s, end_s)`` spans (``harness.gpu_kernel_spans``). Only
    the most frequent kernel name counts (the loop's own kernel, not a stray one). Returns its
    ``name``, ``n`` kernels, the median ``kernel_s`` (with ``kernel_min_s``/``kernel_max_s``), the
    median ``gap_s`` from one kernel's end to the next one's start (with ``gap_min_s``/
    ``gap_max_s``), ``per_kernel_s``, the first start to the last end over ``n``, and the sums that
    add up to it: ``kernel_sum_s`` + ``gap_sum_s`` = first start to last end; ``long_gaps`` counts the
    gaps over ten times the median (``long_gap_sum_s`` their sum, ``longest_gap_index`` where the
    longest one lies, 0 = after the first kernel). A gap may read below 0: one timestamp step
    (-32 ns on an H200) in a run alone on the GPU, more under four pytest workers sharing it (the
    cause not established); ``negative_gaps`` counts them, and an overlap of more than half a
    kernel is refused as not one stream's back-to-back kernels.

    >>> timeline_split([("k", 0.0, 3e-6), ("k", 4e-6, 7e-6), ("k", 9e-6, 12e-6)])["gap_s"] * 1e6
    1.5
    """
    if not isinstance(spans, (list, tuple)):
        raise ValueError(f"spans must be a list of (name, start_s, end_s), got {type(spans).__name__}")
    for sp in spans:
        if not (isinstance(sp, (list, tuple)) and len(sp) == 3):
            raise ValueError(f"each span must be (name, start_s, end_s), got {sp!r:.80}")
        if not (np.isfinite(sp[1]) and np.isfinite(sp[2]) and sp[2] >= sp[1]):
            raise ValueError(f"a span must end at or after its start (finite seconds), got {sp!r:.80}")
    names = [sp[0] for sp in spans]
    if not names:
        raise ValueError("spans is empty: the timeline recorded no kernel")
    name = max(set(names), key=names.count)
    own = sorted((sp[1], sp[2]) for sp in spans if sp[0] == name)
    if len(own) < 2:
        raise ValueError(f"need at least two {name!r} kernels for a gap, got {len(own)}")
    runs = [end - start for start, end in own]
    gaps = [b[0] - a[1] for a, b in zip(own, own[1:])]
    if min(gaps) < -0.5 * float(np.median(runs)):  # a few ns either way is the timestamps' own; half a kernel is not
        raise ValueError("two kernels of the run overlap by more than half a kernel: not one stream's back-to-back kernels")
    gap_s = float(np.median(gaps))
    long = [g for g in gaps if g > 10 * max(gap_s, 0.0)]
    return {"name": str(name)[:120], "n": len(own), "kernel_s": float(np.median(runs)), "kernel_min_s": min(runs),
            "kernel_max_s": max(runs), "gap_s": gap_s, "gap_min_s": min(gaps), "gap_max_s": max(gaps),
            "per_kernel_s": (own[-1][1] - own[0][0]) / len(own), "kernel_sum_s": float(sum(runs)),
            "gap_sum_s": float(sum(gaps)), "long_gaps": len(long), "long_gap_sum_s": float(sum(long)),
            "longest_gap_index": int(np.argmax(gaps)), "negative_gaps": sum(g < 0 for g in gaps)}


def calibration_source(res: dict) -> str:
    """Where a ``measure_launch_overhead`` record's host time per launch came from, in words: the
    slope between two separate loops, or (records made before it) one separate loop."""
    if res.get("calibration_short_n_kernels"):
        return (f"host time per launch from the slope between two separate loops of {res['calibration_short_n_kernels']:,} and "
                f"{res['calibration_n_kernels']:,} launches")
    return f"host time per launch from a separate {res['calibration_n_kernels']:,}-launch loop"


def launch_prediction(res: dict) -> dict:
    """The eager time the launch model predicts from a ``measure_launch_overhead`` result (or
    record): ``n x max(GPU time per kernel, host time per launch)``; None without a graph run.
    *Calibrated*: the host time comes from a separate launch loop, the kernel time from the graph."""
    if res.get("graph_per_kernel_s") is None or res.get("host_per_launch_s") is None:
        return {"predicted_eager_s": None, "label": None}
    pred = model.launch_bound_time_s(res["n_kernels"], res["graph_per_kernel_s"], res["host_per_launch_s"])
    return {"predicted_eager_s": pred, "label": "calibrated"}


def launch_round_ratios(res: dict) -> Optional[list]:
    """Each round's eager loop over what the launch model predicts from that round's own slope,
    ``eager_i / (n x max(graph time per kernel, slope_i))``: the drift-free form of the launch
    test, since a round's loops ran next to each other. None for records without the rounds'
    lists or without a graph.

    >>> launch_round_ratios({"n_kernels": 10, "graph_per_kernel_s": 1e-6, "round_slopes_s": [1e-5, 2e-5],
    ...                      "round_eager_s": [1.1e-4, 1.9e-4]})
    [1.1, 0.95]
    """
    slopes, eagers = res.get("round_slopes_s") or (), res.get("round_eager_s") or ()
    if not slopes or len(slopes) != len(eagers) or res.get("graph_per_kernel_s") is None:
        return None
    n, kernel = res["n_kernels"], res["graph_per_kernel_s"]
    return [round(e / model.launch_bound_time_s(n, kernel, sl), 12) if sl > 0 else None for sl, e in zip(slopes, eagers)]


def _int_arg(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise ValueError(f"{name} must be an integer in [1, 1000000], got {value!r}")
    return value


def _enqueue_time(fn, repeat: int = 5) -> float:
    """Host time to enqueue ``fn``'s launches, the GPU idle at the start of each [s]."""
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return float(np.median(times))


# --------------------------------------------------------------------------------------------
# 6. Amdahl: a pipeline with a serial host part
# --------------------------------------------------------------------------------------------
def serial_host_work(n: int) -> int:
    """The serial part: plain Python on one CPU core (it holds the interpreter lock)."""
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


@_quietly
def measure_amdahl(workers: Optional[Sequence[int]] = None, *, serial_iters: Optional[int] = None,
                   repeat: Optional[int] = None) -> Amdahl:
    """A step = serial host work, then a parallel part split over ``workers``; speed-up of the
    whole step against one worker, measured and predicted by Amdahl's law.

    Every step is timed in its parts on one clock (the host's): the serial part, the parallel
    part (up to the device's synchronization) and the whole, in the same runs, the worker counts
    interleaved, in orders balanced for what comes before (``balanced_orders``: over a cycle of
    rounds every count follows every other equally often; a record of round 18, in one order every
    round, had its serial part faster right after the longest step, the mechanism not established;
    the record says ``worker_order`` and ``round_orders``). The serial part is the same work at every worker count, and the host's time
    for it swings between runs (6.5 to 14 ms in the first in-run H200 record), so its estimate
    is the median over the one-worker steps' serial parts (``serial_samples_s``); the parallel
    part is the one-worker steps' too. The law then predicts the speed-ups of the whole steps at
    2 and more workers (labelled *calibrated*: ``p`` comes from the one-worker steps' parts,
    not from the steps whose speed-ups it predicts). On a GPU the CUDA-event time of each step is recorded
    beside it (``device_event_s``), to show what a device clock sees of host work.

    On a GPU a worker is an SM: the parallel part is a fixed amount of arithmetic split over
    ``workers`` blocks of 1024 threads (one block per SM). On the CPU a worker is a thread
    running NumPy on its share of an array.
    """
    repeat = repeat or (9 if harness.on_gpu() else 3)
    if harness.on_gpu():
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        workers = sorted({1, *(workers or [w for w in (1, 2, 4, 8, 16, 32, 64, 128) if w <= sms])})
        units = int(np.lcm.reduce(workers))
        serial_iters = serial_iters or 100_000
        out = torch.zeros(max(workers) * 1024, device="cuda")
        od = k.device_array(out)
        iters = 32768  # about 70 ms of FMAs for one SM

        def parallel(w):
            k.spin_kernel[w, 1024](od, units // w, iters)

        parallel(1)  # compile
    else:
        cores = os.cpu_count() or 1
        workers = sorted({1, *(workers or [2, min(4, cores)])})
        units = int(np.lcm.reduce(workers))
        serial_iters = serial_iters or 100_000
        data = np.random.default_rng(0).random(units * 1_000_000)
        buf = np.empty_like(data)
        from concurrent.futures import ThreadPoolExecutor

        pools = {w: ThreadPoolExecutor(max_workers=w) for w in workers}
        bounds = {w: np.linspace(0, data.size, w + 1).astype(int) for w in workers}

        def chunk(w, i):
            a, b = bounds[w][i], bounds[w][i + 1]
            np.sin(data[a:b], out=buf[a:b])  # NumPy releases the interpreter lock here

        def parallel(w):
            list(pools[w].map(lambda i: chunk(w, i), range(w)))

    def step_parts(w):
        """One step, timed in its parts on the host clock: (serial, parallel, whole, device events)."""
        if harness.on_gpu():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        serial_host_work(serial_iters)
        t1 = time.perf_counter()
        parallel(w)
        harness.synchronize()
        t2 = time.perf_counter()
        event_s = None
        if harness.on_gpu():
            end.record()
            end.synchronize()
            event_s = start.elapsed_time(end) * 1e-3  # CUDA events around the same step, for comparison
        return t1 - t0, t2 - t1, t2 - t0, event_s

    for w in workers:
        step_parts(w)  # warm-up
    runs = {w: [] for w in workers}
    orders = balanced_orders(len(workers), repeat)  # interleaved, and every count follows every other equally often
    for order in orders:
        for i in order:
            runs[workers[i]].append(step_parts(workers[i]))
    points = []
    for w in workers:
        serial, par, whole, events = (list(v) for v in zip(*runs[w]))
        points.append(dict(workers=int(w), time_s=float(np.median(whole)), time_min_s=min(whole), time_max_s=max(whole), repeat=repeat,
                           serial_s=float(np.median(serial)), serial_min_s=min(serial), serial_max_s=max(serial),
                           serial_samples_s=[float(v) for v in serial], parallel_s=float(np.median(par)),
                           device_event_s=float(np.median(events)) if events[0] is not None else None))
    if not harness.on_gpu():
        for pool in pools.values():
            pool.shutdown()
    result = {"worker": "SM (one 1024-thread block each)" if harness.on_gpu() else "CPU thread", "units": units,
              "spin_iters": iters if harness.on_gpu() else None,
              "spin_sass_inner_loop": _sass_inner_loop_of(k.spin_kernel) if harness.on_gpu() else None,
              "serial_iters": serial_iters, "timing": "host clock around each part of every step (in-run parts)",
              "worker_order": "balanced", "round_orders": [[int(workers[i]) for i in o] for o in orders],
              "points": points, "device": harness.device_name()}
    result.update(amdahl_predictions(result))
    return Amdahl.from_record(result, strict=True)


AMDAHL_LAW_BAND = (0.9, 1.05)  # measured over predicted speed-up, set in round 10 before the records it checks


def balanced_orders(k: int, rounds: int) -> list[list[int]]:
    """``rounds`` orders of the indices ``0..k-1``, from a Williams design: the base order
    0, 1, k-1, 2, k-2, ... shifted by one each round (mod k), and for odd k each order followed by
    its reverse. Within a cycle of k rounds (2k for odd k) every index comes right after every
    other equally often (once; twice for odd k) and takes every place equally often, so a cost
    that depends on the step before (a host that is faster after a long wait) reaches every count
    alike.

    >>> balanced_orders(4, 4)
    [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    """
    k, rounds = _int_arg("k", k), _int_arg("rounds", rounds)
    base, lo, hi = [0], 1, k - 1
    while len(base) < k:
        base.append(lo)
        lo += 1
        if len(base) < k:
            base.append(hi)
            hi -= 1
    cycle = [[(b + r) % k for b in base] for r in range(k)]
    if k % 2:
        cycle = [o for pair in zip(cycle, [o[::-1] for o in cycle]) for o in pair]
    return [list(cycle[r % len(cycle)]) for r in range(rounds)]


def amdahl_predictions(res: dict) -> dict:
    """Recompute the Amdahl comparison of a ``measure_amdahl`` result (or record).

    New records time the serial and parallel parts inside every step: ``p`` comes from the
    one-worker steps alone (the median of their serial part, the samples where recorded, and their
    parallel part), so the speed-ups at 2 and more workers are predicted from runs they are not
    part of (*calibrated* on the one-worker steps, not fitted in-sample); each point gets its speed-up, the law's prediction and
    the ceiling of its own run, ``T(1) / serial part of the steps at n workers`` (a step can never
    be shorter than its serial part, so the measured speed-up can never exceed it), and the law's
    range ``speedup_low``/``speedup_high`` with the serial part anywhere the one-worker steps saw
    it, chosen independently for the one-worker step and for the step compared (the widest such
    range: tight at few workers, loose where the curve bends toward its ceiling), and the
    parallel part against the law's ``P / n`` (``parallel_over_law``, ``parallel_excess_s``: the
    law's one assumption about it, free of the serial part's noise).
    """
    pts = res["points"]
    one = next(p for p in pts if p["workers"] == 1)
    # the serial part is the same work at every n; it is taken from the one-worker steps only, so
    # the points compared (n >= 2) contribute nothing to p
    samples = list(one.get("serial_samples_s") or [one["serial_s"]])
    serial_s, parallel_s = float(np.median(samples)), one["parallel_s"]
    p = model.parallel_fraction_from_times(serial_s, parallel_s)
    s_lo, s_hi = min(samples), max(samples)
    for pt in pts:
        pt["speedup"] = one["time_s"] / pt["time_s"]
        pt["predicted_speedup"] = model.amdahl_speedup(p, pt["workers"])
        pt["measured_over_predicted"] = pt["speedup"] / pt["predicted_speedup"]
        pt["ceiling_same_run"] = one["time_s"] / pt["serial_s"] if pt["serial_s"] > 0 else None
        # the law's range when the serial part may take any time the one-worker steps saw, chosen
        # independently for the one-worker step and for the step compared (the parallel part the law's P / n)
        pt["speedup_low"] = (s_lo + parallel_s) / (s_hi + parallel_s / pt["workers"])
        pt["speedup_high"] = (s_hi + parallel_s) / (s_lo + parallel_s / pt["workers"])
        # the law's one assumption about the parallel part, with no serial noise in it: it takes P / n
        pt["parallel_over_law"] = pt["parallel_s"] * pt["workers"] / parallel_s
        pt["parallel_excess_s"] = pt["parallel_s"] - parallel_s / pt["workers"]
    out = {"serial_s": serial_s, "parallel_one_worker_s": parallel_s, "parallel_fraction": p}
    if p < 1:
        out["ceiling"] = model.amdahl_ceiling(p)
    else:  # no serial time measured: the model has no finite ceiling (null, not Infinity, in JSON)
        out["ceiling"], out["ceiling_reason"] = None, model.NO_CEILING
    return out


# --------------------------------------------------------------------------------------------
def run_all() -> SimtResults:
    """Every SIMT experiment (see ``python -m widgets.measure``). An experiment that fails is
    recorded as ``harness.Failed`` with its traceback (``{"error": ...}``) so the others still count."""
    results = {}

    def run(name, fn):
        print(f"  simt: {name} ...", flush=True)
        t0 = time.time()
        try:
            results[name] = fn()
        except Exception:
            traceback.print_exc()
            results[name] = harness.Failed(traceback.format_exc())
        print(f"  simt: {name} done in {time.time() - t0:.1f} s", flush=True)

    run("occupancy_api", measure_occupancy_api)
    run("memory_latency", measure_memory_latency)
    lat = results["memory_latency"].get("dram_latency_s")  # None when the pointer chase failed
    run("occupancy_bandwidth", lambda: measure_occupancy_bandwidth(lat))
    run("divergence", measure_divergence)
    run("launch_overhead", measure_launch_overhead)
    run("amdahl", measure_amdahl)
    run("reductions", simt_warp.measure_reductions)  # the depth pass: reductions, barriers, spills, streams
    run("barriers", simt_warp.measure_barriers)
    run("spills", simt_warp.measure_spills)
    run("overlap", simt_streams.measure_overlap)
    run("dsmem", simt_cluster.measure_dsmem)
    failed = [name for name, r in results.items() if isinstance(r, harness.Failed)]
    if failed:
        print(f"  simt: FAILED {failed}", file=sys.stderr, flush=True)
    return SimtResults(**results)


# --------------------------------------------------------------------------------------------
# The accuracy ledger (book/accuracy.ipynb)
# --------------------------------------------------------------------------------------------
BANDWIDTH_LEDGER_WARPS = (4, 16, 64)


def _divergence_issue_row(d: dict, path_s, gpu, device: str):
    """The divergent kernel's time per path (one-path run less the no-work run) predicted from its SASS
    inner loop's instructions per iteration and the catalog's boost clock, one warp-instruction per
    scheduler per clock: a *prediction* (a count and a datasheet figure; the clock NVML read during the
    run is a measured behaviour, so it only checks that the GPU held its boost clock, in the note and
    the slot count). The chapter's section 2 says it (``m.issue_time_s``, same inputs); None where the
    record lacks the SASS count or the catalog the GPU."""
    from ..accuracy import Row

    lp = d.get("sass_inner_loop")
    mhz = d.get("one_path_double_iters_sm_clock_mhz") or d["points"][0].get("sm_clock_mhz")
    boost_hz = gpu.boost_clock_hz if gpu else None
    clock_hz = mhz * 1e6 if mhz else boost_hz  # the clock the slots were spent at (the note's count)
    sms = d.get("sms") or (gpu.sms if gpu else None)
    if not lp or not path_s or not boost_hz or not sms:
        return None
    warps, per_iter = d["threads"] // 32, lp["instructions_per_iteration"]
    pred = model.issue_time_s(per_iter, d["iters"], sms, warps, boost_hz)
    clock = f"the catalog's {boost_hz / 1e6:,.0f} MHz boost clock"
    note = "an issue floor (one warp-instruction per scheduler per clock, no stall)"
    if mhz:
        note += f"; NVML read the SM clock at {mhz:,.0f} MHz during the run"
    if d.get("one_path_double_iters_time_s"):  # the slope over iterations: the slots the kernel did spend
        one = next(p for p in d["points"] if p["paths_taken"] == 1)
        slots = model.issue_slots_per_iteration(max(d["one_path_double_iters_time_s"] - one["time_s"], 0.0) / d["iters"],
                                                clock_hz, sms, warps)
        note += (f": the one-path kernel run with twice the iterations spent {slots:.1f} issue slots per warp per iteration, "
                 f"{per_iter / slots:.0%} of them the count's instructions")
    note += ("; in the rest no warp had an instruction ready (a dependency, the uniform datapath that runs the counter, a "
             "pipeline), which only a profiler's warp states (Nsight Compute) can tell apart")
    return Row("simt", "time per path of the divergent kernel (one-path run less the no-work run)",
               f"issue: SASS inner loop of {per_iter:g} instructions per iteration × {d['iters']:,} iterations × {warps:,} warps "
               f"over {sms} SMs, one warp-instruction per scheduler per clock at {clock}",
               pred, path_s, "s", "prediction", device, note)


def _amdahl_issue_row(a: dict, gpu, device: str):
    """Amdahl's parallel part on one SM (the one-worker steps' median) predicted from the spin kernel's
    SASS inner loop and the catalog's boost clock (its SM clock is not recorded), one warp-instruction per
    scheduler per clock: a *prediction*. The chapter's section 5 says it (``m.issue_time_s``, same
    inputs); None where the record lacks the SASS count or the block size in ``worker``."""
    from ..accuracy import Row

    spin = a.get("spin_sass_inner_loop")
    block = re.search(r"(\d+)-thread block", a.get("worker") or "")
    one = next((p for p in a["points"] if p["workers"] == 1), None)
    if not spin or not a.get("spin_iters") or not block or gpu is None or one is None:
        return None
    threads = int(block.group(1))
    iters, per_iter = a["spin_iters"] * a["units"], spin["instructions_per_iteration"]
    pred = model.issue_time_s(per_iter, iters, 1, threads // 32, gpu.boost_clock_hz)
    return Row("simt", "Amdahl's parallel part on one SM (median of the one-worker steps)",
               f"issue: SASS inner loop of {per_iter:g} instructions per iteration × {iters:,} iterations × {threads // 32} warps "
               f"(one {threads:,}-thread block) on 1 SM, one warp-instruction per scheduler per clock at the catalog's "
               f"{gpu.boost_clock_hz / 1e6:,.0f} MHz boost clock",
               pred, one["parallel_s"], "s", "prediction", device,
               "an issue floor at the boost clock (the SM clock of these steps is not recorded): stalls in which no warp has an "
               "instruction ready add to it")


def _host_per_launch_source(res: dict) -> str:
    """Where a ``measure_launch_overhead`` record's host time per launch comes from, as the ledger's
    inputs say it (from the record's fields): the slope between the two separate loops, over how many
    rounds, run in turns with the eager loop; records before the slope, one separate loop.

    >>> _host_per_launch_source({"calibration_short_n_kernels": 200, "calibration_n_kernels": 2000, "rounds": 10,
    ...                          "calibration_in_turns": "paired"})
    'host time per launch: slope between separate loops of 200 and 2,000 launches (10 rounds, in turns)'
    """
    if not res.get("calibration_short_n_kernels"):
        return f"host time per launch: a separate loop of {res['calibration_n_kernels']:,} launches"
    rounds = [f"{res['rounds']} rounds"] if res.get("rounds") else []
    detail = ", ".join(rounds + (["in turns"] if res.get("calibration_in_turns") else []))
    return (f"host time per launch: slope between separate loops of {res['calibration_short_n_kernels']:,} and "
            f"{res['calibration_n_kernels']:,} launches" + (f" ({detail})" if detail else ""))


def accuracy_rows(record: dict) -> list:
    """Every comparison the SIMT chapter makes, recomputed from the raw measurements of
    ``record`` (a ``python -m widgets.measure --topic simt`` record) with today's models.

    Labels: the occupancy counts are a *prediction* (counting rules only, nothing measured goes
    in); bandwidth against occupancy is *calibrated* (the latency comes from the pointer chase);
    divergence is *calibrated* on the one-path and no-work runs, and its time per path, like Amdahl's
    parallel part on one SM, a *prediction* from the SASS inner loop's instruction count and the clock
    (:func:`_divergence_issue_row`, :func:`_amdahl_issue_row`); launch overhead is *calibrated*
    on two separate launch loops (their slope) and the graph replay, in both regimes (host-bound tiny kernels,
    kernel-bound large ones); Amdahl is *calibrated* on the one-worker steps' serial and parallel
    parts (the rows compare 2 and more workers only).
    """
    import copy

    from ..accuracy import Row

    res = record["results"]
    prov = record.get("provenance", {})
    device = prov.get("gpu") or prov.get("device") or "unknown"
    from ..hardware import catalog_name_for, get_gpu

    name = catalog_name_for(device) if device != "unknown" else None
    gpu = get_gpu(name) if name else None  # the catalog's figures for the issue predictions (boost clock, SMs)
    rows = []

    def ok(name):
        r = res.get(name)
        return r if isinstance(r, dict) and "error" not in r else None

    occ = ok("occupancy_api")
    if occ and occ.get("configs") and occ.get("arch") in model.ARCHS:
        cfg = occ["configs"]
        agree = sum(model.occupancy(r["threads_per_block"], r["regs_per_thread"], r["smem_per_block_bytes"], occ["arch"]).blocks_per_sm
                    == (r["blocks_per_sm"] or 0) for r in cfg)
        rows.append(Row("simt", "occupancy: launches whose blocks per SM the model gets exactly",
                        f"{len(cfg)} launches ({occ['arch']}), thread/register/shared-memory counts; the driver's calculator answers",
                        float(len(cfg)), float(agree), "launches", "fit", device,
                        "measured = launches where the model equals cuOccupancyMaxActiveBlocksPerMultiprocessor "
                        "(NVIDIA's occupancy calculator in the driver, not a hardware reading); the model is ported rule "
                        "for rule from NVIDIA's calculator (cuda_occupancy.h), so they agree by construction unless a rule "
                        "was ported wrong: a check of the port, not a prediction of the hardware"))

    bw = ok("occupancy_bandwidth")
    if bw and bw.get("latency_s") and bw.get("peak_bytes_per_s"):
        for name, v in bw["variants"].items():
            for p in v["points"]:
                if p["warps_per_sm"] not in BANDWIDTH_LEDGER_WARPS:
                    continue
                pred = float(model.littles_law_bytes_per_s(p["warps_per_sm"], bw["sms"], v["bytes_per_warp_in_flight"], bw["latency_s"],
                                                           bw["peak_bytes_per_s"]))
                rows.append(Row("simt", f"read bandwidth, {name}, {p['warps_per_sm']} warps/SM",
                                f"Little's law: pointer-chase latency {bw['latency_s'] * 1e9:.0f} ns, "
                                f"{v['bytes_per_warp_in_flight']} B per warp in flight, datasheet HBM peak",
                                pred, p["bytes_per_s"], "B/s", "calibrated", device, "latency from the pointer-chase micro-benchmark"))

    div = ok("divergence")
    if div and div.get("points"):
        d = copy.deepcopy(div)
        path_s = divergence_predictions(d)["path_s"]
        for p in d["points"]:
            if p["paths_taken"] < 2:
                continue
            rows.append(Row("simt", f"divergent kernel time, {p['paths_taken']} paths",
                            "fixed + n × (t(1) − fixed), fixed part from the no-work run",
                            p["predicted_time_s"], p["time_s"], "s", "calibrated", device,
                            "calibrated on the one-path and no-work runs" + (", launch hidden behind a GPU sleep"
                                                                            if d.get("launch_hidden") else "")))
        issue = _divergence_issue_row(d, path_s, gpu, device)
        if issue:
            rows.append(issue)

    lo = ok("launch_overhead")
    if lo:
        lp = launch_prediction(lo)
        if lp["predicted_eager_s"] is not None:
            rows.append(Row("simt", f"{lo['n_kernels']:,} tiny kernels launched eagerly",
                            f"n × max(GPU time per kernel from the graph replay, host time per launch); {_host_per_launch_source(lo)}",
                            lp["predicted_eager_s"], lo["eager_s"], "s", lp["label"], device,
                            calibration_source(lo)))

        kb = lo.get("kernel_bound") or {}
        if kb.get("eager_s") is not None and kb.get("graph_per_kernel_s") is not None and kb.get("host_per_launch_s") is not None:
            pred = model.launch_bound_time_s(kb["n_kernels"], kb["graph_per_kernel_s"], kb["host_per_launch_s"])
            rows.append(Row("simt", f"{kb['n_kernels']:,} add_ kernels on {fmt_bytes(kb['nbytes'])} launched eagerly",
                            "n × max(GPU time per kernel from the graph replay, host time per launch); "
                            f"{_host_per_launch_source(lo)}, as for the tiny kernels",
                            pred, kb["eager_s"], "s", "calibrated", device,
                            "kernel-bound regime: each kernel outlasts the host's launch"))

    am = ok("amdahl")
    if am and am.get("points"):
        a = copy.deepcopy(am)
        info = amdahl_predictions(a)
        for p in a["points"]:
            if p["workers"] < 2:
                continue
            rows.append(Row("simt", f"Amdahl speed-up on {p['workers']} {'SMs' if 'SM' in a['worker'] else 'workers'}",
                            f"p = {info['parallel_fraction']:.4f} from the one-worker steps' serial and parallel parts",
                            p["predicted_speedup"], p["speedup"], "x", "calibrated", device,
                            "parts timed inside the one-worker steps, which are not among the rows compared"))
        issue = _amdahl_issue_row(a, gpu, device)
        if issue:
            rows.append(issue)
    rows += simt_warp.accuracy_rows(res, device) + simt_streams.accuracy_rows(res, device)  # the depth pass
    rows += simt_cluster.accuracy_rows(res, device, gpu.boost_clock_hz if gpu else None)
    return rows
