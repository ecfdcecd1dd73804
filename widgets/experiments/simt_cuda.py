"""CUDA plumbing for the SIMT experiments: NVIDIA's occupancy calculator compiled from its
header, CUDA C kernels compiled with ``nvcc`` (or NVRTC), and the driver API through ctypes.

- ``header_occupancy``: runs ``cudaOccMaxActiveBlocksPerMultiprocessor`` from ``cuda_occupancy.h``
  (shipped with CUDA and with Triton's NVIDIA backend) compiled by the host's C compiler. Works
  without a GPU: the CPU stand-in for the runtime's occupancy API.
- ``Driver``: the few CUDA driver calls the experiments need (load a cubin, read and set function
  attributes, ask the occupancy API, launch on torch's current stream). Needs a GPU.
- ``compile_cubin``: CUDA C source -> cubin for the local GPU, with ``--maxrregcount``.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Optional

from ..models import simt as model

# --------------------------------------------------------------------------------------------
# NVIDIA's occupancy calculator, compiled from cuda_occupancy.h
# --------------------------------------------------------------------------------------------
_OCC_C = r"""
#include <stdio.h>
#include <string.h>
#include "cuda_occupancy.h"
/* One query per input line: major minor threadsPerSM smemPerSM smemOptin reservedSmem
   blockSize numRegs dynamicSmem carveoutPercent. A kernel with no static shared memory that
   opted in to the largest dynamic shared memory (FUNC_SHMEM_LIMIT_OPTIN), one block barrier. */
int main(void) {
    int major, minor, threads_sm, threads, regs, carve;
    unsigned long smem_sm, optin, reserved, smem;
    while (scanf("%d %d %d %lu %lu %lu %d %d %lu %d", &major, &minor, &threads_sm, &smem_sm, &optin,
                 &reserved, &threads, &regs, &smem, &carve) == 10) {
        cudaOccDeviceProp p; cudaOccFuncAttributes a; cudaOccDeviceState s; cudaOccResult r;
        memset(&p, 0, sizeof p); memset(&a, 0, sizeof a); memset(&s, 0, sizeof s); memset(&r, 0, sizeof r);
        p.computeMajor = major; p.computeMinor = minor; p.maxThreadsPerBlock = 1024;
        p.maxThreadsPerMultiprocessor = threads_sm; p.regsPerBlock = 65536; p.regsPerMultiprocessor = 65536;
        p.warpSize = 32; p.sharedMemPerBlock = 48 * 1024; p.sharedMemPerMultiprocessor = smem_sm;
        p.numSms = 1; p.sharedMemPerBlockOptin = optin; p.reservedSharedMemPerBlock = reserved;
        a.maxThreadsPerBlock = 1024; a.numRegs = regs; a.sharedSizeBytes = 0;
        a.partitionedGCConfig = PARTITIONED_GC_OFF; a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        a.maxDynamicSharedSizeBytes = optin; a.numBlockBarriers = 1;
        s.cacheConfig = CACHE_PREFER_NONE; s.carveoutConfig = carve;
        int e = (int)cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, threads, smem);
        printf("%d %d %u %d %d %d %d\n", e, r.activeBlocksPerMultiprocessor, r.limitingFactors,
               r.blockLimitWarps, r.blockLimitRegs, r.blockLimitSharedMem, r.blockLimitBlocks);
    }
    return 0;
}
"""

_LIMIT_BITS = {"warps": 0x01, "registers": 0x02, "shared_memory": 0x04, "blocks": 0x08}


def occupancy_header_path() -> Optional[Path]:
    """``cuda_occupancy.h`` from Triton's NVIDIA backend or a CUDA toolkit, or None."""
    candidates = []
    try:
        import importlib.util

        spec = importlib.util.find_spec("triton")
        if spec and spec.origin:
            candidates.append(Path(spec.origin).parent / "backends" / "nvidia" / "include")
    except Exception:
        pass
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(Path(os.environ[env]) / "include")
    candidates += [Path("/usr/local/cuda/include")] + sorted(Path("/usr/local").glob("cuda-*/include"), reverse=True)
    for folder in candidates:
        if (folder / "cuda_occupancy.h").is_file():
            return folder / "cuda_occupancy.h"
    return None


@functools.lru_cache(maxsize=1)
def _occupancy_exe() -> Optional[str]:
    header = occupancy_header_path()
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if header is None or cc is None:
        return None
    key = hashlib.sha1((str(header) + _OCC_C).encode()).hexdigest()[:12]
    exe = Path(tempfile.gettempdir()) / f"gpubook_cuda_occ_{key}_{os.getuid() if hasattr(os, 'getuid') else 0}"
    if not exe.exists():
        src = exe.with_suffix(".c")
        src.write_text(_OCC_C)
        done = subprocess.run([cc, "-O1", "-I", str(header.parent), str(src), "-o", str(exe)], capture_output=True, text=True)
        if done.returncode != 0:
            return None
    return str(exe)


def header_available() -> bool:
    """True when ``cuda_occupancy.h`` and a C compiler are both here."""
    return _occupancy_exe() is not None


def header_occupancy(configs: Iterable[tuple], arch: str = "sm_90", *, carveout_percent: int = 100) -> list[dict]:
    """Ask NVIDIA's occupancy calculator (``cudaOccMaxActiveBlocksPerMultiprocessor``, compiled
    from ``cuda_occupancy.h``) about each ``(threads_per_block, regs_per_thread,
    smem_per_block_bytes)``.

    The device is described by the model's ``ArchLimits`` for ``arch`` (the figures a device of
    that compute capability reports); the kernel opted in to the largest dynamic shared memory.
    Returns one dict per config: ``blocks_per_sm``, ``limiters`` (names of the bits set),
    ``error`` (the header's status, 0 = success) and the per-resource limits.
    """
    exe = _occupancy_exe()
    if exe is None:
        raise RuntimeError("cuda_occupancy.h or a C compiler is missing: cannot run NVIDIA's occupancy calculator")
    lim = model.arch_limits(arch)
    configs = [tuple(int(v) for v in c) for c in configs]
    major, minor = lim.compute_capability
    lines = [
        f"{major} {minor} {lim.max_threads_per_sm} {lim.smem_per_sm_bytes} {lim.smem_per_block_optin_bytes} "
        f"{lim.smem_reserved_per_block_bytes} {t} {r} {s} {int(carveout_percent)}"
        for t, r, s in configs
    ]
    out = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout.split("\n")
    results = []
    for (t, r, s), line in zip(configs, out):
        err, blocks, bits, lw, lr, ls, lb = (int(v) for v in line.split())
        results.append(
            dict(
                threads_per_block=t,
                regs_per_thread=r,
                smem_per_block_bytes=s,
                error=err,
                blocks_per_sm=blocks,
                limiters=[name for name, bit in _LIMIT_BITS.items() if bits & bit],
                blocks_limit_warps=lw,
                blocks_limit_registers=lr,
                blocks_limit_shared_memory=ls,
                blocks_limit_blocks=lb,
            )
        )
    if len(results) != len(configs):
        raise RuntimeError(f"the occupancy calculator answered {len(results)} of {len(configs)} queries")
    return results


# --------------------------------------------------------------------------------------------
# CUDA C kernels
# --------------------------------------------------------------------------------------------
REGS_KERNEL = r"""
// Keeps NVALS floats live in every thread, so the compiler uses every register it is allowed
// (--maxrregcount) and spills the rest: the register count is chosen at compile time.
extern "C" __global__ void regs_kernel(float* __restrict__ out, const float* __restrict__ in, int iters) {
    extern __shared__ float smem[];
    float v[NVALS];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) v[i] = in[(t + i) & 1023];
    for (int k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < NVALS; ++i) v[i] = fmaf(v[i], v[(i + 1) % NVALS], 1.0f);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NVALS; ++i) s += v[i];
    smem[threadIdx.x] = s;
    __syncthreads();
    out[t] = smem[(threadIdx.x + 1) % blockDim.x];
}
"""

STREAM_READ_KERNEL = r"""
// Reads n VEC-float elements once (grid-stride), UNROLL independent loads in flight per thread.
// The dynamic shared memory is never touched: it only limits how many blocks fit on an SM.
#if VEC == 4
typedef float4 elem_t;
__device__ __forceinline__ float fold(elem_t a) { return a.x + a.y + a.z + a.w; }
#else
typedef float elem_t;
__device__ __forceinline__ float fold(elem_t a) { return a; }
#endif
extern "C" __global__ void stream_read(const elem_t* __restrict__ x, float* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
#pragma unroll 1
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {  // not unrolled: UNROLL loads in flight, no more
        elem_t a[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) a[u] = x[i + u * stride];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc += fold(a[u]);
    }
#pragma unroll 1
    for (; i < n; i += stride) acc += fold(x[i]);
    if (acc == -1.0f) out[0] = acc;  // never true for the data used: keeps the loads alive
}
"""


def _nvcc() -> Optional[str]:
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for cand in (os.environ.get("NVCC"), shutil.which("nvcc"), os.path.join(cuda_home, "bin", "nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def compile_cubin(source: str, arch: str, *, maxrregcount: Optional[int] = None, defines: Optional[dict] = None) -> bytes:
    """Compile CUDA C ``source`` for ``arch`` (e.g. ``"sm_90"``) to a cubin, with nvcc if it is on
    this machine, else NVRTC (``cuda.bindings``)."""
    flags = [f"-D{k}={v}" for k, v in (defines or {}).items()]
    if maxrregcount is not None:
        flags.append(f"--maxrregcount={int(maxrregcount)}")
    nvcc = _nvcc()
    if nvcc:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
            src.write_text(source)
            subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", *flags, "-o", str(out), str(src)], check=True, capture_output=True, text=True)
            return out.read_bytes()
    from cuda.bindings import nvrtc  # NVRTC when nvcc is absent

    def ok(res):
        err, *rest = res
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC failed: {err}")
        return rest[0] if len(rest) == 1 else rest

    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), b"k.cu", 0, [], []))
    opts = [f"--gpu-architecture={arch}".encode()] + [f.encode() for f in flags]
    res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError("NVRTC compile failed:\n" + log.decode(errors="replace"))
    size = ok(nvrtc.nvrtcGetCUBINSize(prog))
    cubin = b" " * size
    ok(nvrtc.nvrtcGetCUBIN(prog, cubin))
    return bytes(cubin)


# --------------------------------------------------------------------------------------------
# The CUDA driver API through ctypes
# --------------------------------------------------------------------------------------------
# Enum values from cuda.h (CUDA 13.0).
FUNC_ATTR = dict(
    max_threads_per_block=0,
    shared_size_bytes=1,
    local_size_bytes=3,
    num_regs=4,
    max_dynamic_shared_size_bytes=8,
    preferred_shared_memory_carveout=9,
)
DEVICE_ATTR = dict(
    max_threads_per_block=1,
    max_shared_memory_per_block=8,
    warp_size=10,
    max_registers_per_block=12,
    multiprocessor_count=16,
    max_threads_per_multiprocessor=39,
    compute_capability_major=75,
    compute_capability_minor=76,
    max_shared_memory_per_multiprocessor=81,
    max_registers_per_multiprocessor=82,
    max_shared_memory_per_block_optin=97,
    max_blocks_per_multiprocessor=106,
    reserved_shared_memory_per_block=111,
)


class CudaError(RuntimeError):
    def __init__(self, call: str, code: int):
        super().__init__(f"{call} failed with CUresult {code}")
        self.code = code


class Driver:
    """The CUDA driver API (libcuda) for the primary context of ``device``: the context torch uses."""

    def __init__(self, device: int = 0):
        import torch

        torch.cuda.init()
        torch.cuda.set_device(device)
        torch.zeros(1, device=f"cuda:{device}")  # make torch create (and make current) its context
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._call("cuInit", ctypes.c_uint(0))
        dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(device))
        self.device = dev
        ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self._call("cuCtxSetCurrent", ctx)
        self.ctx = ctx
        self._modules = []

    def _call(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise CudaError(name, code)

    def device_attribute(self, name: str) -> int:
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), ctypes.c_int(DEVICE_ATTR[name]), self.device)
        return value.value

    def device_limits(self) -> dict:
        """Every device attribute the occupancy calculation depends on."""
        return {name: self.device_attribute(name) for name in DEVICE_ATTR}

    def arch(self) -> str:
        return f"sm_{self.device_attribute('compute_capability_major')}{self.device_attribute('compute_capability_minor')}"

    def load(self, cubin: bytes, name: str) -> ctypes.c_void_p:
        """Load a cubin and return the function ``name`` (a ``CUfunction``)."""
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        buf = ctypes.create_string_buffer(cubin, len(cubin))
        self._call("cuModuleLoadData", ctypes.byref(module), buf)
        self._modules.append(module)
        self._call("cuModuleGetFunction", ctypes.byref(func), module, name.encode())
        return func

    def func_attribute(self, func, name: str) -> int:
        value = ctypes.c_int()
        self._call("cuFuncGetAttribute", ctypes.byref(value), ctypes.c_int(FUNC_ATTR[name]), func)
        return value.value

    def set_func_attribute(self, func, name: str, value: int) -> None:
        self._call("cuFuncSetAttribute", func, ctypes.c_int(FUNC_ATTR[name]), ctypes.c_int(int(value)))

    def opt_in_max_shared_memory(self, func) -> int:
        """Let ``func`` use the largest dynamic shared memory and prefer the largest carve-out;
        returns the dynamic limit set [B]."""
        static = self.func_attribute(func, "shared_size_bytes")
        limit = self.device_attribute("max_shared_memory_per_block_optin") - static
        self.set_func_attribute(func, "max_dynamic_shared_size_bytes", limit)
        self.set_func_attribute(func, "preferred_shared_memory_carveout", 100)
        return limit

    def max_active_blocks(self, func, threads_per_block: int, dynamic_smem_bytes: int) -> int:
        """``cuOccupancyMaxActiveBlocksPerMultiprocessor``: raises ``CudaError`` if refused."""
        blocks = ctypes.c_int()
        self._call(
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            ctypes.byref(blocks),
            func,
            ctypes.c_int(int(threads_per_block)),
            ctypes.c_size_t(int(dynamic_smem_bytes)),
        )
        return blocks.value

    def launch(self, func, grid: int, block: int, dynamic_smem_bytes: int, args: Sequence, stream: int = 0) -> None:
        """``cuLaunchKernel`` with ctypes-typed ``args`` on ``stream`` (a CUstream handle)."""
        holders = [a if isinstance(a, ctypes._SimpleCData) else ctypes.c_void_p(int(a)) for a in args]
        params = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        self._call(
            "cuLaunchKernel",
            func,
            ctypes.c_uint(int(grid)), ctypes.c_uint(1), ctypes.c_uint(1),
            ctypes.c_uint(int(block)), ctypes.c_uint(1), ctypes.c_uint(1),
            ctypes.c_uint(int(dynamic_smem_bytes)),
            ctypes.c_void_p(int(stream)),
            params,
            None,
        )
