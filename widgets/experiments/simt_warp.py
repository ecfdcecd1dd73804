"""SIMT experiments at warp level: a reduction written five ways (atomics per thread, per warp,
a shared-memory tree, warp shuffles, grid-stride), the throughput of atomics to one address,
the cost of ``__syncthreads``, and what ``__launch_bounds__`` and register spilling cost.

The kernels are CUDA C (below), compiled for the local GPU with ``nvcc`` (NVRTC where nvcc is
missing) with ``-Xptxas -v``, whose register/spill report is kept in the record, and launched
through the driver API (``simt_cuda.Driver``) on torch's stream, timed with CUDA events.

Without an NVIDIA GPU: the reduction experiment times the same question on the host (torch's
``sum`` against a copy, a scaled-down buffer), the spill experiment still compiles the kernels
and records the ptxas report where ``nvcc`` is installed (no timing), and the barrier experiment
records why it did not run. Every GPU step fails soft: a step that raises records ``None`` and
the error string, and the other steps still run.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch

from ..hardware import describe_local_gpu
from ..models import simt as model
from ..units import MiB, fmt_bytes
from . import harness
from . import simt_cuda as sc

# --------------------------------------------------------------------------------------------
# The kernels (shown in the chapter with ``print``; compiled as they are here)
# --------------------------------------------------------------------------------------------
REDUCE_SOURCE = r"""
// Five ways to sum n floats into *out (zeroed before the launch), and two helpers.
#define FULL 0xffffffffu

// chapter-helpers-begin
__device__ __forceinline__ float warp_sum(float v) {
    // A tree inside one warp: 5 shuffles, no shared memory, no barrier. Lane 0 ends with the sum.
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    return v;
}

__device__ __forceinline__ float block_sum_shfl(float v) {
    __shared__ float partial[32];           // one slot per warp of the block
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();                        // the only barrier
    v = (threadIdx.x < (blockDim.x >> 5)) ? partial[lane] : 0.0f;
    if (warp == 0) v = warp_sum(v);
    return v;                               // thread 0 holds the block's sum
}
// chapter-helpers-end

// 1. One atomic per thread: n atomics to one address.
extern "C" __global__ void reduce_atomic_thread(const float* __restrict__ x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

// 2. One atomic per warp: 5 shuffles, then lane 0 adds the warp's sum (n / 32 atomics).
extern "C" __global__ void reduce_atomic_warp(const float* __restrict__ x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = warp_sum(i < n ? x[i] : 0.0f);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

// 3. Shared-memory tree ("sequential addressing"): log2(block) halving steps with a barrier
//    after each, one atomic per block (n / blockDim atomics).
extern "C" __global__ void reduce_smem_tree(const float* __restrict__ x, float* out, long long n) {
    extern __shared__ float s[];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}

// 4. Warp shuffles, then one warp combines the warps' sums: one barrier, one atomic per block.
extern "C" __global__ void reduce_shfl_block(const float* __restrict__ x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = block_sum_shfl(i < n ? x[i] : 0.0f);
    if (threadIdx.x == 0) atomicAdd(out, v);
}

// chapter-grid-stride-begin
// 5. Grid-stride: a few blocks per SM; each thread first sums many float4s in a register, then
//    the block combines with shuffles: one atomic per block for the whole array.
extern "C" __global__ void reduce_grid_stride(const float4* __restrict__ x, float* out, long long n4) {
    float acc = 0.0f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 a = x[i];
        acc += (a.x + a.y) + (a.z + a.w);
    }
    acc = block_sum_shfl(acc);
    if (threadIdx.x == 0) atomicAdd(out, acc);
}
// chapter-grid-stride-end

// Calibration: every thread adds 1 to the same address `iters` times (no loads).
extern "C" __global__ void atomic_same_address(float* out, int iters) {
    for (int k = 0; k < iters; ++k) atomicAdd(out, 1.0f);
}

// Calibration: only lane 0 of every warp adds (the pattern of one atomic per warp or per block).
extern "C" __global__ void atomic_one_lane(float* out, int iters) {
    if ((threadIdx.x & 31) == 0)
        for (int k = 0; k < iters; ++k) atomicAdd(out, 1.0f);
}

// Contention: thread i adds 1 to address i % addrs, `iters` times; addresses 128 B apart (each on
// its own L2 line). addrs = 1 is atomic_same_address; many addresses spread the atomics over the L2.
extern "C" __global__ void atomic_spread(float* out, int iters, int addrs) {
    const int a = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) % addrs);
    float* p = out + 32 * a;
    for (int k = 0; k < iters; ++k) atomicAdd(p, 1.0f);
}

// Votes: per warp, how many lanes hold a value above a threshold (__ballot_sync + __popc) and
// whether any does (__any_sync). Two ints per warp.
extern "C" __global__ void vote_count(const float* __restrict__ x, int* counts, long long n, float threshold) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    bool hit = i < n && x[i] > threshold;
    unsigned mask = __ballot_sync(FULL, hit);
    int any = __any_sync(FULL, hit);
    if ((threadIdx.x & 31) == 0) {
        long long w = i >> 5;
        counts[2 * w] = __popc(mask);
        counts[2 * w + 1] = any;
    }
}
"""

BARRIER_SOURCE = r"""
// `iters` iterations of one dependent FMA; with BARRIERS=1 each iteration also ends with a
// __syncthreads(): the difference per iteration is what a barrier costs the block.
extern "C" __global__ void barrier_loop(float* out, int iters) {
    float v = (float)threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < iters; ++k) {
        v = fmaf(v, 0.999f, 1.0f);
#if BARRIERS
        __syncthreads();
#endif
    }
    if (v == -1.0f) out[0] = v;  // never true: keeps the loop alive
}
"""

BARRIER_LATENCY_SOURCE = r"""
// One block alone on the GPU: `reps` back-to-back __syncthreads with nothing between them, timed
// with clock64() (SM clock cycles) in thread 0. Cycles per barrier = the latency of a barrier that
// no other work overlaps (straight-line code pays this; barrier_loop measures what one adds to a loop).
extern "C" __global__ void barrier_latency(long long* out, int reps) {
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 16
    for (int k = 0; k < reps; ++k) {
        __syncthreads();
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) out[0] = t1 - t0;
}
"""

SPILL_SOURCE = r"""
// NVALS values live in every thread for the whole loop. Without bounds the compiler keeps them
// all in registers; __launch_bounds__(THREADS, MIN_BLOCKS) promises at most THREADS threads per
// block and asks for MIN_BLOCKS blocks per SM, so it caps the registers at about
// 65,536 / (THREADS x MIN_BLOCKS) per thread, and the rest spill to local memory.
#if BOUNDS
#define BOUNDS_ATTR __launch_bounds__(THREADS, MIN_BLOCKS)
#else
#define BOUNDS_ATTR
#endif
extern "C" __global__ void BOUNDS_ATTR spill_kernel(float* __restrict__ out, const float* __restrict__ in, int iters) {
    float v[NVALS];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) v[i] = in[(t + 33 * i) & 4095];
#pragma unroll 1
    for (int k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < NVALS; ++i) v[i] = fmaf(v[i], v[(i + 1) % NVALS], 0.5f);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) s += v[i];
    out[t] = s;
}
"""

GATHER_SOURCE = r"""
// The latency-bound counterpart of spill_kernel: NVALS values per thread are loaded, stay live
// across a chain of `iters` dependent loads from a large random permutation (each load waits for
// the previous one: memory latency, not arithmetic, sets the time), and are summed at the end.
// All lanes of a warp follow the same chain (one 32-byte sector per hop per warp), so even a full
// SM keeps only a few hundred KiB in flight GPU-wide: far from saturating HBM, purely latency-bound.
// Without bounds the values sit in registers and few warps fit; with __launch_bounds__ they spill
// once before the chain and are reloaded once after it, while more warps keep more loads in flight.
#if BOUNDS
#define BOUNDS_ATTR __launch_bounds__(THREADS, MIN_BLOCKS)
#else
#define BOUNDS_ATTR
#endif
extern "C" __global__ void BOUNDS_ATTR gather_kernel(float* __restrict__ out, const float* __restrict__ in,
                                                     const int* __restrict__ next, int n_next, int iters) {
    float v[NVALS];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) v[i] = in[(t + 33 * i) & 4095];
    int j = (int)(((long long)(t >> 5) * 2654435761LL) % n_next);  // one chain per warp
#pragma unroll 1
    for (int k = 0; k < iters; ++k) j = next[j];
    float s = (float)j;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) s = fmaf(s, 0.5f, v[i]);
    out[t] = s;
}
"""
GATHER_ELEMS = 1 << 24  # 64 MiB of int32 indices: far larger than the L2, so every hop goes to HBM

REDUCE_VARIANTS = ("atomic_thread", "atomic_warp", "smem_tree", "shfl_block", "grid_stride")
REDUCE_THREADS = 256
GRID_STRIDE_BLOCKS_PER_SM = 4
ATOMIC_THREAD_ELEMS = 1 << 24  # 0/1 data: every partial sum below 2**24 is exact in float32
BARRIER_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
SPILL_THREADS, SPILL_NVALS = 256, 64
SPILL_CONFIGS = (("no bounds", 0, None), ("__launch_bounds__(256, 4)", 1, 4), ("__launch_bounds__(256, 8)", 1, 8))

Failed = harness.Failed


# --------------------------------------------------------------------------------------------
# Results (frozen dataclasses: ``to_record()`` is the record's JSON, ``from_record`` reads it back)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PtxasKernel(harness.Result):
    """One kernel's line of an ``-Xptxas -v`` report."""

    kernel: str
    registers: Optional[int] = None
    stack_frame_bytes: Optional[int] = None
    spill_store_bytes: Optional[int] = None
    spill_load_bytes: Optional[int] = None
    barriers: Optional[int] = None


@dataclass(frozen=True)
class CopyRate(harness.Result):
    """A device-to-device copy or torch's ``sum`` of the same buffer."""

    time_s: float
    bytes_per_s: float              # bytes moved (a copy: read + written) per second
    read_bytes_per_s: float         # bytes read per second


@dataclass(frozen=True)
class AtomicRate(harness.Result):
    """``atomic_same_address`` (every lane of every warp adds 1.0 to one float ``iters`` times)
    or ``atomic_one_lane`` (only lane 0 of each warp does)."""

    atomics: int
    time_s: float
    atomics_per_s: float
    result_ok: bool                 # the float sum came out exactly equal to the count
    sm_clock_hz: Optional[float] = None
    pattern: str = "every lane"     # or "one lane per warp"


@dataclass(frozen=True)
class ReductionRun(harness.Result):
    """One reduction kernel on ``n_elems`` floats."""

    variant: str
    n_elems: int
    bytes_read: int
    grid: int
    threads_per_block: int
    atomics: int                    # same-address atomicAdds the kernel issues
    time_s: float
    time_min_s: float
    time_max_s: float
    bytes_per_s: float              # bytes read per second
    result: float
    expected: float                 # torch's float64 sum of the same elements
    rel_error: float
    sm_clock_hz: Optional[float] = None


@dataclass(frozen=True)
class ContentionPoint(harness.Result):
    """``atomic_spread`` with the atomics of a full grid spread over ``addresses`` addresses."""

    addresses: int
    atomics: int
    time_s: float
    atomics_per_s: float
    result_ok: bool                 # every address holds exactly its share


@dataclass(frozen=True)
class Contention(harness.Result):
    points: tuple[ContentionPoint, ...]


@dataclass(frozen=True)
class Votes(harness.Result):
    """``vote_count`` on four warps with known answers: per warp, popc(ballot) and any."""

    popc: tuple[int, ...]
    any: tuple[int, ...]
    expected_popc: tuple[int, ...]
    expected_any: tuple[int, ...]
    ok: bool


@dataclass(frozen=True)
class Reductions(harness.Result):
    """A reduction written five ways, against a copy of the same buffer."""

    n_elems: int
    nbytes: int
    device: str
    simulated: bool
    threads_per_block: int = REDUCE_THREADS
    sms: Optional[int] = None
    arch: Optional[str] = None
    hbm_bytes_per_s: Optional[float] = None   # the catalog's (datasheet) memory bandwidth of this GPU
    note: str = ""
    ptxas_command: str = ""
    ptxas: tuple[PtxasKernel, ...] = ()
    copy: Union[CopyRate, Failed, None] = None
    torch_sum: Union[CopyRate, Failed, None] = None
    atomic_rate: Union[AtomicRate, Failed, None] = None           # every lane of a warp adds
    atomic_rate_one_lane: Union[AtomicRate, Failed, None] = None  # one lane per warp adds
    variants: dict[str, Union[ReductionRun, Failed]] = field(default_factory=dict)
    votes: Union[Votes, Failed, None] = None
    contention: Union[Contention, Failed, None] = None


@dataclass(frozen=True)
class BarrierPoint(harness.Result):
    """``barrier_loop`` with and without a ``__syncthreads`` per iteration."""

    threads_per_block: int
    blocks_per_sm: int
    grid: int
    iters: int
    time_no_barrier_s: Optional[float] = None
    time_barrier_s: Optional[float] = None
    barrier_s: Optional[float] = None          # extra time per iteration = one barrier [s]
    barrier_cycles: Optional[float] = None     # the same in SM clock cycles (NVML's clock)
    loop_cycles_no_barrier: Optional[float] = None
    sm_clock_hz: Optional[float] = None
    error: str = ""


@dataclass(frozen=True)
class BarrierLatencyPoint(harness.Result):
    """``barrier_latency``: one block, back-to-back barriers timed with ``clock64()``."""

    threads_per_block: int
    reps: int
    cycles_per_barrier: Optional[float] = None  # SM clock cycles between two consecutive barriers
    error: str = ""


@dataclass(frozen=True)
class Barriers(harness.Result):
    points: tuple[BarrierPoint, ...]
    device: str
    simulated: bool
    sms: Optional[int] = None
    ptxas: tuple[PtxasKernel, ...] = ()
    note: str = ""
    latency: tuple[BarrierLatencyPoint, ...] = ()  # back-to-back barriers, one block (empty in older records)


@dataclass(frozen=True)
class SpillConfig(harness.Result):
    """``spill_kernel`` compiled one way: the ptxas report and (on a GPU) its time."""

    label: str
    min_blocks: Optional[int]
    threads_per_block: int
    nvals: int
    ptxas_command: str = ""
    ptxas_report: str = ""
    registers: Optional[int] = None
    stack_frame_bytes: Optional[int] = None
    spill_store_bytes: Optional[int] = None
    spill_load_bytes: Optional[int] = None
    num_regs: Optional[int] = None             # what the driver reports for the loaded kernel
    local_bytes: Optional[int] = None
    blocks_per_sm: Optional[int] = None        # the driver's occupancy answer at 256 threads
    model_blocks_per_sm: Optional[int] = None
    grid: Optional[int] = None
    iters: Optional[int] = None
    time_s: Optional[float] = None
    time_min_s: Optional[float] = None
    time_max_s: Optional[float] = None
    flop_per_s: Optional[float] = None
    sm_clock_hz: Optional[float] = None
    error: str = ""


@dataclass(frozen=True)
class Spills(harness.Result):
    configs: tuple[SpillConfig, ...]
    device: str
    simulated: bool
    arch: Optional[str] = None
    sms: Optional[int] = None
    note: str = ""
    gather: tuple[SpillConfig, ...] = ()  # the latency-bound gather_kernel, same three compilations (empty in older records)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def cuda_ok() -> tuple[bool, str]:
    """(True, "") when an NVIDIA GPU that runs these kernels is here (warp ``*_sync``
    intrinsics need compute capability 3.0; launched through the driver API); else (False, why)."""
    caps = harness.capabilities()
    if caps.vendor != "NVIDIA" or not caps.arch:
        return False, f"needs an NVIDIA GPU (this device: {caps.device})"
    major, minor = torch.cuda.get_device_capability(0)
    if major < 3:
        return False, f"compute capability {major}.{minor} < 3.0"
    return True, ""


def ptxas_summary(report: str) -> tuple[PtxasKernel, ...]:
    """Parse an ``-Xptxas -v`` report: one :class:`PtxasKernel` per kernel, in the report's order.

    >>> r = ("ptxas info    : Function properties for k\\n"
    ...      "    280 bytes stack frame, 516 bytes spill stores, 520 bytes spill loads\\n"
    ...      "ptxas info    : Used 32 registers, used 0 barriers, 280 bytes cumulative stack size\\n")
    >>> k = ptxas_summary(r)[0]
    >>> k.registers, k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes, k.barriers
    (32, 280, 516, 520, 0)
    """
    rows: list[dict] = []
    for line in report.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            rows.append({"kernel": m.group(1)})
            continue
        if not rows:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            rows[-1].update(zip(("stack_frame_bytes", "spill_store_bytes", "spill_load_bytes"), (int(g) for g in m.groups())))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            rows[-1]["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            if b:
                rows[-1]["barriers"] = int(b.group(1))
    return tuple(PtxasKernel(**r) for r in rows)


def compile_with_report(source: str, arch: str, defines: Optional[dict] = None) -> tuple[bytes, str, str]:
    """Compile CUDA C for ``arch`` with the ptxas report on: ``(cubin, report text, command)``;
    nvcc where it is installed, else NVRTC (``--ptxas-options=-v``: the report is in its log)."""
    flags = [f"-D{k}={v}" for k, v in (defines or {}).items()]
    nvcc = sc._nvcc()
    if nvcc:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
            src.write_text(source)
            cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", *flags, "-o", str(out), str(src)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"nvcc failed:\n{done.stderr[-3000:]}")
            shown = " ".join(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", *flags, "k.cu"])
            return out.read_bytes(), done.stderr + done.stdout, shown
    from cuda.bindings import nvrtc

    prog = nvrtc.nvrtcCreateProgram(source.encode(), b"k.cu", 0, [], [])[1]
    opts = [f"--gpu-architecture={arch}", "--ptxas-options=-v", *flags]
    res = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    text = log.decode(errors="replace").rstrip("\x00")
    if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError("NVRTC compile failed:\n" + text[-3000:])
    size = nvrtc.nvrtcGetCUBINSize(prog)[1]
    cubin = b" " * size
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    return bytes(cubin), text, "NVRTC " + " ".join(opts)


def _arch() -> str:
    if harness.on_gpu():
        major, minor = torch.cuda.get_device_capability(0)
        return f"sm_{major}{minor}"
    return "sm_90"


def _sm_clock_hz() -> Optional[float]:
    cp = harness.gpu_clock_power() if harness.on_gpu() else None
    return (cp or {}).get("sm_clock_hz")


# --------------------------------------------------------------------------------------------
# 1. A reduction written five ways, against the copy bandwidth
# --------------------------------------------------------------------------------------------
def measure_reductions(nbytes: Optional[int] = None, *, repeat: int = 10) -> Reductions:
    """Sum a float buffer five ways and time each against a device-to-device copy of it.

    The data are 0s and 1s, so sums below 2**24 = 16,777,216 are exact in float32; the 1 GiB runs
    total about 1.3e8, above it, so their float32 results are rounded (and, with float atomics, depend
    on the order of the adds). Every result is compared with torch's float64 sum and the relative
    error recorded (``rel_error``; recorded, not asserted). The atomic-per-thread run (8.4e6 ones)
    and ``atomic_same_address`` stay below 2**24 and are exact. The one-atomic-per-thread kernel sums only the first
    ``ATOMIC_THREAD_ELEMS`` elements (64 MiB: its 16 M same-address atomics already take
    milliseconds). Also times ``atomic_same_address`` (every thread adds to one address, no loads),
    the atomic rate the model uses, and checks a vote kernel against torch.
    """
    ok, why = cuda_ok()
    if not ok:
        return _reductions_cpu(why)
    drv = sc.Driver()
    arch = drv.arch()
    sms = drv.device_attribute("multiprocessor_count")
    stream = torch.cuda.current_stream().cuda_stream
    nbytes = nbytes or harness.choose_bytes(1 << 30, 0, max_fraction_of_free=0.2)
    n = max(nbytes // 16 * 4, 4 * REDUCE_THREADS)  # whole float4s
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randint(0, 2, (n,), generator=g, device="cuda").float()
    out = torch.zeros(1, device="cuda")
    gpu = describe_local_gpu()
    base = dict(n_elems=n, nbytes=n * 4, device=harness.device_name(), simulated=False, sms=sms, arch=arch,
                hbm_bytes_per_s=(gpu.hbm_bytes_per_s or None) if gpu else None)
    try:
        cubin, report, cmd = compile_with_report(REDUCE_SOURCE, arch)
        funcs = {name: drv.load(cubin, name) for name in
                 [f"reduce_{v}" for v in REDUCE_VARIANTS] + ["atomic_same_address", "atomic_one_lane", "atomic_spread", "vote_count"]}
    except Exception as exc:  # noqa: BLE001 - recorded
        return Reductions(**base, note=f"compile or load failed: {_err(exc)}")

    def copy_rate():
        y = torch.empty_like(x)
        t = harness.time_fn(lambda: y.copy_(x), repeat=repeat)
        return CopyRate(t.median_s, 2 * n * 4 / t.median_s, n * 4 / t.median_s)

    def sum_rate():
        t = harness.time_fn(lambda: x.sum(), repeat=repeat)
        return CopyRate(t.median_s, n * 4 / t.median_s, n * 4 / t.median_s)

    def atomic_rate(one_lane: bool):
        grid = sms * 8
        iters = 256 if one_lane else 32  # counts below 2**24: exact in float32
        count = grid * (REDUCE_THREADS // 32 if one_lane else REDUCE_THREADS) * iters
        f = funcs["atomic_one_lane" if one_lane else "atomic_same_address"]

        def run():
            out.zero_()
            drv.launch(f, grid, REDUCE_THREADS, 0, [out.data_ptr(), ctypes.c_int(iters)], stream)

        t = harness.time_fn(run, repeat=repeat)
        hz = _sm_clock_hz()
        return AtomicRate(count, t.median_s, count / t.median_s, float(out.item()) == float(count), hz,
                          "one lane per warp" if one_lane else "every lane")

    copy = harness.attempt(copy_rate)
    torch_sum = harness.attempt(sum_rate)
    rate = harness.attempt(atomic_rate, False)
    rate_one = harness.attempt(atomic_rate, True)
    variants = {v: harness.attempt(_time_reduction, drv, funcs[f"reduce_{v}"], v, x, out, n, sms, stream, repeat)
                for v in REDUCE_VARIANTS}
    votes = harness.attempt(_votes, drv, funcs["vote_count"], stream)
    contention = harness.attempt(_contention, drv, funcs["atomic_spread"], sms, stream, repeat)
    x = None
    torch.cuda.empty_cache()
    return Reductions(**base, ptxas_command=cmd, ptxas=ptxas_summary(report), copy=copy, torch_sum=torch_sum, atomic_rate=rate,
                      atomic_rate_one_lane=rate_one, variants=variants, votes=votes, contention=contention)


def _time_reduction(drv, func, variant, x, out, n, sms, stream, repeat) -> ReductionRun:
    threads = REDUCE_THREADS
    n_used = min(n, ATOMIC_THREAD_ELEMS) if variant == "atomic_thread" else n
    if variant == "grid_stride":
        grid = sms * GRID_STRIDE_BLOCKS_PER_SM
        atomics = grid
        args = [x.data_ptr(), out.data_ptr(), ctypes.c_longlong(n // 4)]
    else:
        grid = -(-n_used // threads)
        atomics = {"atomic_thread": n_used, "atomic_warp": -(-n_used // 32)}.get(variant, grid)
        args = [x.data_ptr(), out.data_ptr(), ctypes.c_longlong(n_used)]
    smem = threads * 4 if variant == "smem_tree" else 0

    def run():
        out.zero_()  # a 4-byte memset, part of every variant's time alike
        drv.launch(func, grid, threads, smem, args, stream)

    run()
    torch.cuda.synchronize()
    got = float(out.item())
    exact = float(x[:n_used].double().sum())
    t = harness.time_fn(run, repeat=repeat)
    return ReductionRun(variant, n_used, n_used * 4, grid, threads, atomics, t.median_s, t.min_s, t.max_s, n_used * 4 / t.median_s,
                        got, exact, abs(got - exact) / max(exact, 1.0), _sm_clock_hz())


CONTENTION_ADDRESSES = (1, 4, 32, 256, 4096, 65536)


def _contention(drv, func, sms, stream, repeat) -> Contention:
    """``atomic_spread`` over 1 to 65,536 addresses: every thread of a full grid adds 1 to its address
    32 times (each address's count stays below 2**24, exact in float32, and is checked)."""
    grid, iters = sms * 8, 32
    threads = grid * REDUCE_THREADS
    count = threads * iters
    buf = torch.zeros(32 * max(CONTENTION_ADDRESSES), device="cuda")
    points = []
    for addrs in CONTENTION_ADDRESSES:
        def run(addrs=addrs):
            buf.zero_()
            drv.launch(func, grid, REDUCE_THREADS, 0, [buf.data_ptr(), ctypes.c_int(iters), ctypes.c_int(addrs)], stream)

        t = harness.time_fn(run, repeat=repeat)
        per = buf.view(-1, 32)[:addrs, 0].double()
        want = torch.bincount(torch.arange(threads, device="cuda") % addrs, minlength=addrs).double() * iters
        ok = bool(torch.equal(per, want)) and float(buf.double().sum()) == float(count)
        points.append(ContentionPoint(addrs, count, t.median_s, count / t.median_s, ok))
    return Contention(tuple(points))


def _votes(drv, func, stream) -> Votes:
    """Ballot and any on four warps with known answers, checked against torch."""
    n = 128
    x = torch.zeros(n, device="cuda")
    x[0:32:2] = 1.0   # warp 0: 16 lanes above the threshold
    x[40] = 1.0       # warp 1: one lane
    x[96:128] = 1.0   # warp 3: all 32 (warp 2: none)
    counts = torch.full((2 * (n // 32),), -1, dtype=torch.int32, device="cuda")
    drv.launch(func, 1, n, 0, [x.data_ptr(), counts.data_ptr(), ctypes.c_longlong(n), ctypes.c_float(0.5)], stream)
    torch.cuda.synchronize()
    got = counts.view(-1, 2).tolist()
    want = (x.view(-1, 32) > 0.5).sum(1).tolist()
    popc, anyv = tuple(int(a) for a, _ in got), tuple(int(b) for _, b in got)
    exp_popc, exp_any = tuple(int(c) for c in want), tuple(int(c > 0) for c in want)
    return Votes(popc, anyv, exp_popc, exp_any, popc == exp_popc and anyv == exp_any)


def _reductions_cpu(why: str, repeat: int = 3) -> Reductions:
    """No GPU: the memory-bound claim on the host, scaled down: torch's ``sum`` of 64 MiB against
    a copy of it (the kernels need a GPU)."""
    n = harness.choose_bytes(0, 64 * MiB) // 4
    x = torch.randint(0, 2, (n,), generator=torch.Generator().manual_seed(0)).float()
    y = torch.empty_like(x)
    tc = harness.time_fn(lambda: y.copy_(x), repeat=repeat)
    ts = harness.time_fn(lambda: x.sum(), repeat=repeat)
    return Reductions(n_elems=n, nbytes=n * 4, device=harness.device_name(), simulated=True,
                      note=f"{why}: torch's sum against a copy on the host instead (64 MiB)",
                      copy=CopyRate(tc.median_s, 2 * n * 4 / tc.median_s, n * 4 / tc.median_s),
                      torch_sum=CopyRate(ts.median_s, n * 4 / ts.median_s, n * 4 / ts.median_s))


@dataclass(frozen=True)
class ReductionPrediction:
    variant: str
    predicted_time_s: Optional[float]
    ratio: Optional[float]           # measured / model
    bound: Optional[str]             # "memory" or "atomics": the larger term of the model


def reduction_predictions(res: Reductions) -> dict[str, ReductionPrediction]:
    """For each variant of a :func:`measure_reductions` result, the model's time
    (``model.reduction_time_s``: the larger of reading the bytes at the rate the copy moved bytes
    (read + written: the memory's throughput, which a reduction spends on reads alone) and the
    same-address atomics at the rate of the calibration kernel with the *other* pattern, both
    measured in the same run: ``atomic_one_lane`` (one lane per warp adds) for one atomic per
    thread, ``atomic_same_address`` (every lane adds) for the others; a *calibrated* comparison)
    and measured / model.

    Each calibration kernel is nearly its own variant's twin (``atomic_same_address`` is
    ``reduce_atomic_thread`` without the load; ``atomic_one_lane`` issues the atomics of
    ``reduce_atomic_warp``), so calibrating a variant on its twin would make measured / model about
    1 by construction. Crossed, the comparison tests the claim it supports: same-address atomics
    run at one rate whichever lanes issue them. Where ``atomic_one_lane`` is missing (older
    records), one atomic per thread falls back to the every-lane rate, its twin's."""
    out = {}
    copy = res.copy.bytes_per_s if isinstance(res.copy, CopyRate) else None  # the memory's rate: read + written
    every = res.atomic_rate.atomics_per_s if isinstance(res.atomic_rate, AtomicRate) else None
    one = res.atomic_rate_one_lane.atomics_per_s if isinstance(res.atomic_rate_one_lane, AtomicRate) else None
    for name, v in res.variants.items():
        rate = (one or every) if name == "atomic_thread" else every
        if not copy or not rate or not isinstance(v, ReductionRun):
            out[name] = ReductionPrediction(name, None, None, None)
            continue
        pred = model.reduction_time_s(v.bytes_read, copy, v.atomics, rate)
        bound = "atomics" if v.atomics / rate > v.bytes_read / copy else "memory"
        out[name] = ReductionPrediction(name, pred, v.time_s / pred, bound)
    return out


def contention_predictions(res: Reductions) -> list[tuple[ContentionPoint, Optional[float]]]:
    """Each contention point with ``model.atomic_throughput_per_s`` fitted to the same sweep's two
    ends (a *fit*, not a calibration): the rate at one address and the highest rate measured (the
    memory system's cap);
    ``[]`` when the sweep did not run."""
    if not isinstance(res.contention, Contention) or not res.contention.points:
        return []
    pts = res.contention.points
    one = next((p.atomics_per_s for p in pts if p.addresses == 1), None)
    cap = max(p.atomics_per_s for p in pts)
    return [(p, model.atomic_throughput_per_s(p.addresses, one, cap) if one else None) for p in pts]


def warps_stalled_per_cycle(point: dict) -> dict[str, float]:
    """A profiled kernel's stall reasons as warps in each state in an average cycle of a
    sub-partition, from one point of the Nsight Compute record (``widgets/data/h200/simt_ncu.json``).

    Nsight Compute's ``smsp__average_warps_issue_stalled_<reason>_per_issue_active`` divides the
    warps stalled for a reason by the instructions issued, so two kernels that issue different
    numbers of instructions per cycle cannot be compared on it. Multiplied by the instructions
    issued per active cycle (``smsp__issue_active.avg.per_cycle_active``) it becomes the warps
    stalled for that reason per cycle; summed over every state it is the resident warps per
    scheduler (``smsp__warps_active.avg.per_cycle_active``). Empty where the point lacks either.

    >>> warps_stalled_per_cycle({"stalls_per_issued_instruction": {"barrier": 10.0},
    ...                          "metrics": {"smsp__issue_active.avg.per_cycle_active": 0.5}})
    {'barrier': 5.0}
    """
    stalls = point.get("stalls_per_issued_instruction") or {}
    issue = (point.get("metrics") or {}).get("smsp__issue_active.avg.per_cycle_active")
    if not stalls or issue is None:
        return {}
    return {reason: v * issue for reason, v in stalls.items()}


# --------------------------------------------------------------------------------------------
# 2. The cost of __syncthreads
# --------------------------------------------------------------------------------------------
def measure_barriers(block_sizes=BARRIER_BLOCK_SIZES, *, iters: int = 20000, repeat: int = 5) -> Barriers:
    """Time ``barrier_loop`` with and without a ``__syncthreads`` per iteration, with one block
    per SM and with a full SM (2,048 threads), for each block size: the difference per iteration
    is what one barrier costs the block [s], and in SM clock cycles (NVML's clock, read after)."""
    ok, why = cuda_ok()
    if not ok:
        return Barriers(points=(), device=harness.device_name(), simulated=True, note=why)
    drv = sc.Driver()
    arch = drv.arch()
    sms = drv.device_attribute("multiprocessor_count")
    max_threads = drv.device_attribute("max_threads_per_multiprocessor")
    max_blocks = drv.device_attribute("max_blocks_per_multiprocessor")
    stream = torch.cuda.current_stream().cuda_stream
    out = torch.zeros(1, device="cuda")
    funcs, report = {}, ""
    for b in (0, 1):
        cubin, rep, _ = compile_with_report(BARRIER_SOURCE, arch, {"BARRIERS": b})
        funcs[b] = drv.load(cubin, "barrier_loop")
        report += rep
    points = []
    for threads in block_sizes:
        for per_sm in sorted({1, min(max_threads // threads, max_blocks)}):
            grid = sms * per_sm
            try:
                times = {}
                for b in (0, 1):
                    t = harness.time_fn(lambda f=funcs[b]: drv.launch(f, grid, threads, 0, [out.data_ptr(), ctypes.c_int(iters)], stream),
                                        repeat=repeat)
                    times[b] = t.median_s
                hz = _sm_clock_hz()
                per = (times[1] - times[0]) / iters
                points.append(BarrierPoint(threads, per_sm, grid, iters, times[0], times[1], per, per * hz if hz else None,
                                           times[0] / iters * hz if hz else None, hz))
            except Exception as exc:  # noqa: BLE001 - recorded
                points.append(BarrierPoint(threads, per_sm, grid, iters, error=_err(exc)))
    return Barriers(points=tuple(points), device=harness.device_name(), simulated=False, sms=sms, ptxas=ptxas_summary(report),
                    latency=_barrier_latency(drv, arch, block_sizes, stream))


def _barrier_latency(drv, arch: str, block_sizes, stream, reps: int = 4096) -> tuple[BarrierLatencyPoint, ...]:
    """``barrier_latency`` for each block size (one block, on one SM); every step fails soft."""
    try:
        cubin, _, _ = compile_with_report(BARRIER_LATENCY_SOURCE, arch)
        func = drv.load(cubin, "barrier_latency")
    except Exception as exc:  # noqa: BLE001 - recorded
        return tuple(BarrierLatencyPoint(t, reps, error=_err(exc)) for t in block_sizes)
    out = torch.zeros(1, dtype=torch.int64, device="cuda")
    points = []
    for threads in block_sizes:
        try:
            best = None
            for _ in range(5):  # the least of five: the run least disturbed
                drv.launch(func, 1, threads, 0, [out.data_ptr(), ctypes.c_int(reps)], stream)
                torch.cuda.synchronize()
                cyc = int(out.item()) / reps
                best = cyc if best is None else min(best, cyc)
            points.append(BarrierLatencyPoint(threads, reps, best))
        except Exception as exc:  # noqa: BLE001 - recorded
            points.append(BarrierLatencyPoint(threads, reps, error=_err(exc)))
    return tuple(points)


# --------------------------------------------------------------------------------------------
# 3. __launch_bounds__ and spilling
# --------------------------------------------------------------------------------------------
def measure_spills(*, iters: int = 2000, waves: int = 4, repeat: int = 5) -> Spills:
    """Compile ``spill_kernel`` without bounds and with two ``__launch_bounds__``, keep each
    ptxas report (registers, stack frame, spill bytes) and, on a GPU, time each at 256 threads
    per block over ``waves`` x (blocks that fit per SM) x SMs blocks. Without a GPU: the reports
    only (where nvcc is installed)."""
    arch = _arch()
    on = cuda_ok()[0]
    if not on and not sc._nvcc():
        return Spills(configs=(), device=harness.device_name(), simulated=True, note="no NVIDIA GPU and no nvcc here")
    drv = sc.Driver() if on else None
    sms = drv.device_attribute("multiprocessor_count") if on else None
    stream = torch.cuda.current_stream().cuda_stream if on else None
    inp = torch.rand(4096, device="cuda") if on else None
    configs = []
    for label, bounds, min_blocks in SPILL_CONFIGS:
        defines = {"NVALS": SPILL_NVALS, "THREADS": SPILL_THREADS, "BOUNDS": bounds, "MIN_BLOCKS": min_blocks or 1}
        base = dict(label=label, min_blocks=min_blocks, threads_per_block=SPILL_THREADS, nvals=SPILL_NVALS)
        try:
            cubin, report, cmd = compile_with_report(SPILL_SOURCE, arch, defines)
        except Exception as exc:  # noqa: BLE001 - recorded
            configs.append(SpillConfig(**base, error=f"compile: {_err(exc)}"))
            continue
        summ = ptxas_summary(report)
        rep = dict(ptxas_command=cmd,
                   ptxas_report="\n".join(line.rstrip() for line in report.splitlines() if "ptxas" in line or "bytes" in line),
                   **({k: getattr(summ[0], k) for k in ("registers", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes")}
                      if summ else {}))
        if not on:
            configs.append(SpillConfig(**base, **rep))
            continue
        try:
            func = drv.load(cubin, "spill_kernel")
            regs = drv.func_attribute(func, "num_regs")
            blocks = drv.max_active_blocks(func, SPILL_THREADS, 0)
            grid = blocks * sms * waves
            outb = torch.empty(grid * SPILL_THREADS, device="cuda")
            t = harness.time_fn(lambda: drv.launch(func, grid, SPILL_THREADS, 0, [outb.data_ptr(), inp.data_ptr(), ctypes.c_int(iters)],
                                                   stream), repeat=repeat)
            flop = 2.0 * grid * SPILL_THREADS * iters * SPILL_NVALS
            configs.append(SpillConfig(
                **base, **rep, num_regs=regs, local_bytes=drv.func_attribute(func, "local_size_bytes"), blocks_per_sm=blocks,
                model_blocks_per_sm=model.occupancy(SPILL_THREADS, regs, 0, arch).blocks_per_sm if arch in model.ARCHS else None,
                grid=grid, iters=iters, time_s=t.median_s, time_min_s=t.min_s, time_max_s=t.max_s, flop_per_s=flop / t.median_s,
                sm_clock_hz=_sm_clock_hz()))
            outb = None
        except Exception as exc:  # noqa: BLE001 - recorded
            configs.append(SpillConfig(**base, **rep, error=_err(exc)))
    gather = _gather_spills(arch, on, drv, sms, stream, inp)
    return Spills(configs=tuple(configs), device=harness.device_name(), simulated=not on, arch=arch, sms=sms,
                  note="" if on else "compiled only (no GPU here): the ptxas reports, no timings", gather=gather)


def speed_same_work(config: SpillConfig, base: SpillConfig) -> Optional[float]:
    """How many times faster ``config`` ran than ``base`` per block of work [-]; None where either
    has no time or grid.

    :func:`measure_spills` launches ``waves`` full waves, so its grid (and its total work) grows
    with the blocks per SM each compilation allows: the times of two configurations are not for
    the same work, and their plain ratio is not a speed-up. Each block does the same work, so the
    speed is ``(base.time_s / base.grid) / (config.time_s / config.grid)``.

    >>> a = SpillConfig("no bounds", None, 256, 64, grid=792, time_s=174e-6)
    >>> b = SpillConfig("__launch_bounds__(256, 8)", 8, 256, 64, grid=2112, time_s=252e-6)
    >>> round(speed_same_work(b, a), 2)  # 2.67 times the blocks in 1.45 times the time
    1.84
    """
    if not (config.time_s and config.grid and base.time_s and base.grid):
        return None
    return (base.time_s / base.grid) / (config.time_s / config.grid)


def _gather_spills(arch, on, drv, sms, stream, inp, *, iters: int = 256, waves: int = 2, repeat: int = 5) -> tuple[SpillConfig, ...]:
    """``gather_kernel`` compiled as ``SPILL_CONFIGS``: the ptxas reports and, on a GPU, the time
    of ``iters`` dependent loads per thread over ``waves`` full waves. Every step fails soft."""
    configs = []
    nxt = None
    if on:
        try:
            nxt = torch.randperm(GATHER_ELEMS, device="cuda", dtype=torch.int64).to(torch.int32)
        except Exception as exc:  # noqa: BLE001 - recorded
            return tuple(SpillConfig(label=label, min_blocks=mb, threads_per_block=SPILL_THREADS, nvals=SPILL_NVALS,
                                     error=f"permutation: {_err(exc)}") for label, _, mb in SPILL_CONFIGS)
    for label, bounds, min_blocks in SPILL_CONFIGS:
        defines = {"NVALS": SPILL_NVALS, "THREADS": SPILL_THREADS, "BOUNDS": bounds, "MIN_BLOCKS": min_blocks or 1}
        base = dict(label=label, min_blocks=min_blocks, threads_per_block=SPILL_THREADS, nvals=SPILL_NVALS)
        try:
            cubin, report, cmd = compile_with_report(GATHER_SOURCE, arch, defines)
            summ = ptxas_summary(report)
            rep = dict(ptxas_command=cmd,
                       **({k: getattr(summ[0], k) for k in ("registers", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes")}
                          if summ else {}))
        except Exception as exc:  # noqa: BLE001 - recorded
            configs.append(SpillConfig(**base, error=f"compile: {_err(exc)}"))
            continue
        if not on:
            configs.append(SpillConfig(**base, **rep))
            continue
        try:
            func = drv.load(cubin, "gather_kernel")
            regs = drv.func_attribute(func, "num_regs")
            blocks = drv.max_active_blocks(func, SPILL_THREADS, 0)
            grid = blocks * sms * waves
            outb = torch.empty(grid * SPILL_THREADS, device="cuda")
            args = [outb.data_ptr(), inp.data_ptr(), nxt.data_ptr(), ctypes.c_int(GATHER_ELEMS), ctypes.c_int(iters)]
            t = harness.time_fn(lambda: drv.launch(func, grid, SPILL_THREADS, 0, args, stream), repeat=repeat)
            configs.append(SpillConfig(
                **base, **rep, num_regs=regs, local_bytes=drv.func_attribute(func, "local_size_bytes"), blocks_per_sm=blocks,
                model_blocks_per_sm=model.occupancy(SPILL_THREADS, regs, 0, arch).blocks_per_sm if arch in model.ARCHS else None,
                grid=grid, iters=iters, time_s=t.median_s, time_min_s=t.min_s, time_max_s=t.max_s, sm_clock_hz=_sm_clock_hz()))
            outb = None
        except Exception as exc:  # noqa: BLE001 - recorded
            configs.append(SpillConfig(**base, **rep, error=_err(exc)))
    return tuple(configs)


# --------------------------------------------------------------------------------------------
# The accuracy ledger (called by ``simt.accuracy_rows``)
# --------------------------------------------------------------------------------------------
GRID_STRIDE_FAIL_RATIO = 1.25  # measured / floor above this: the best reduction did not get near the memory's peak


def accuracy_rows(results, device: str) -> list:
    """The reduction comparisons of a SIMT record's ``results``: every variant's time against
    ``model.reduction_time_s`` *calibrated* on the copy's read rate and the same-address atomic
    rate of the same run; the atomic contention sweep against ``model.atomic_throughput_per_s``, a
    *fit* (both constants, the one-address rate and the cap, come from the same sweep); and the
    grid-stride kernel against the datasheet's memory bandwidth, a *prediction* of a floor that
    counts as failed when measured / floor exceeds ``GRID_STRIDE_FAIL_RATIO`` (the kernel reads at
    less than 80 % of the datasheet peak)."""
    from ..accuracy import Row

    raw = results.get("reductions") if hasattr(results, "get") else None
    if raw is None or (isinstance(raw, dict) and "error" in raw):
        return []
    res = raw if isinstance(raw, Reductions) else Reductions.from_record(raw)
    rows = []
    for name, p in reduction_predictions(res).items():
        v = res.variants.get(name)
        if p.predicted_time_s is None or not isinstance(v, ReductionRun):
            continue
        rows.append(Row("simt", f"reduction, {name.replace('_', ' ')}: {fmt_bytes(v.bytes_read)}, {v.atomics:,} atomics",
                        "max(bytes / copy's bytes moved per s, same-address atomics / the other pattern's calibration rate), same run",
                        p.predicted_time_s, v.time_s, "s", "calibrated", device,
                        f"{p.bound}-bound in the model; memory rate from a device-to-device copy (read + written), atomic rate from a kernel "
                        "that only adds to one address with the other pattern (one lane per warp for one atomic per thread, every lane "
                        "for the rest), so the atomic-bound rows test one rate whichever lanes add"))
    pairs = contention_predictions(res)
    top = max((p.atomics_per_s for p, _ in pairs), default=None)
    for p, pred in pairs:
        if pred is None or p.addresses == 1 or p.atomics_per_s == top:
            continue  # the two calibration points compare with themselves
        rows.append(Row("simt", f"atomics spread over {p.addresses:,} addresses, per second",
                        "min(addresses × the one-address rate, the highest rate of the sweep), same sweep",
                        pred, p.atomics_per_s, "1/s", "fit", device,
                        "atomic_spread: each address on its own 128-B line; a fit: both constants (one-address rate, cap) "
                        "come from the same sweep"))
    gs = res.variants.get("grid_stride")
    if isinstance(gs, ReductionRun) and res.hbm_bytes_per_s:
        rows.append(Row("simt", f"reduction, grid stride: {fmt_bytes(gs.bytes_read)} at the datasheet's memory bandwidth",
                        "bytes / datasheet HBM bandwidth (catalog)", gs.bytes_read / res.hbm_bytes_per_s, gs.time_s, "s",
                        "prediction", device,
                        f"a floor (no kernel reads faster than the memory's peak): the prediction fails if measured / floor > "
                        f"{GRID_STRIDE_FAIL_RATIO:g}, i.e. below {1 / GRID_STRIDE_FAIL_RATIO:.0%} of the datasheet peak "
                        "(a threshold stated after the first H200 record)"
                        + (f". It fails here for two reasons together: the device-to-device copy in the same run moved "
                           f"{res.copy.bytes_per_s / res.hbm_bytes_per_s:.0%} of the datasheet rate (read + written) and the kernel "
                           f"read at {gs.bytes_per_s / res.copy.bytes_per_s:.1%} of the copy's, {gs.bytes_per_s / res.hbm_bytes_per_s:.0%} "
                           "of the datasheet's"
                           if isinstance(res.copy, CopyRate) and gs.time_s > GRID_STRIDE_FAIL_RATIO * gs.bytes_read / res.hbm_bytes_per_s
                           else "")))
    return rows
