"""Hopper thread-block clusters: read bandwidth from a block's own shared memory, from the other
block of its cluster (distributed shared memory, DSMEM) and from an L2-resident global array read
with ``__ldcg`` (``ld.global.cg``: cached in the L2 only, so the reads cannot hit in the SM's L1).

One CUDA C kernel (``DSMEM_SOURCE``) compiled three times (``MODE`` 0, 1, 2) for the local GPU and
launched through the driver API with its compile-time cluster size of 2. Needs compute capability
9.0; elsewhere the experiment records why it did not run. Every step fails soft.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Optional

import torch

from . import harness
from . import simt_cuda as sc
from .simt_warp import _err, _sm_clock_hz, compile_with_report, cuda_ok

DSMEM_SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Clusters of two blocks. Every block fills a 4 KiB shared array, the cluster synchronizes, then
// every thread makes `iters` 4-byte reads from MODE 0: its own block's shared memory, MODE 1: the
// other block's (distributed shared memory), MODE 2: the block's own 4 KiB of a global array, read
// with __ldcg (ld.global.cg: cached in the L2 only, never in the L1, so MODE 2 measures L2 hits).
// Thread 0 of each block records the SM it ran on (%smid), to check that the two blocks of a
// cluster sat on different SMs (then MODE 1 crossed the SM-to-SM network).
#if MODE == 2
#define LOAD(p) __ldcg(p)
#else
#define LOAD(p) (*(p))
#endif
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_read(const float* __restrict__ g, float* out, int iters,
                                                                unsigned* smid) {
    __shared__ float buf[1024];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) buf[i] = (float)(i + rank);
    if (threadIdx.x == 0) {
        unsigned id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        smid[blockIdx.x] = id;
    }
    cluster.sync();
#if MODE == 0
    const float* src = buf;
#elif MODE == 1
    const float* src = cluster.map_shared_rank(buf, rank ^ 1);
#else
    const float* src = g + 1024 * (size_t)blockIdx.x;
#endif
    float acc = 0.0f;
    int idx = threadIdx.x & 1023;
#pragma unroll 4
    for (int k = 0; k < iters; ++k) {
        acc += LOAD(src + idx);
        idx = (idx + 32) & 1023;
    }
    cluster.sync();  // the other block's shared memory must outlive every read of it
    if (acc == -1.0f) out[0] = acc;
}
"""

MODES = ("own shared memory", "other block's shared memory (DSMEM)", "global memory, L2 only (__ldcg)")
SMEM_BYTES_PER_CLOCK_PER_SM = 128  # 32 banks x 4 B per clock (CUDA C++ Programming Guide, shared memory)


@dataclass(frozen=True)
class DsmemPoint(harness.Result):
    source: str
    time_s: Optional[float] = None
    bytes_per_s: Optional[float] = None
    error: str = ""


@dataclass(frozen=True)
class Dsmem(harness.Result):
    """Read bandwidth of ``dsmem_read`` from each source."""

    device: str
    simulated: bool
    note: str = ""
    sms: Optional[int] = None
    grid: int = 0
    threads_per_block: int = 0
    iters: int = 0
    bytes_read: int = 0
    points: tuple[DsmemPoint, ...] = ()
    sm_clock_hz: Optional[float] = None
    clusters: int = 0  # clusters launched (grid / 2)
    clusters_split: Optional[int] = None  # of those, how many had their two blocks on different SMs (%smid, DSMEM run)


def measure_dsmem(*, iters: int = 4096, threads_per_block: int = 1024, blocks_per_sm: int = 2, repeat: int = 10) -> Dsmem:
    """Time ``dsmem_read`` reading from its own shared memory, the other block's and an L2-resident
    global array (``__ldcg``, 4 KiB per block), with ``blocks_per_sm`` x SMs blocks of ``threads_per_block`` (clusters of two),
    each thread making ``iters`` coalesced 4-byte reads."""
    ok, why = cuda_ok()
    if ok and torch.cuda.get_device_capability(0) < (9, 0):
        ok, why = False, "thread-block clusters need compute capability 9.0"
    if not ok:
        return Dsmem(device=harness.device_name(), simulated=True, note=why)
    drv = sc.Driver()
    arch = drv.arch()
    sms = drv.device_attribute("multiprocessor_count")
    stream = torch.cuda.current_stream().cuda_stream
    out = torch.zeros(1, device="cuda")
    grid = blocks_per_sm * sms
    grid += grid % 2  # whole clusters
    g = torch.rand(grid * 1024, device="cuda")  # 4 KiB per block, 1 MiB in all on an H200: L2-resident
    smid = torch.full((grid,), -1, dtype=torch.int32, device="cuda")
    split = None
    nbytes = grid * threads_per_block * iters * 4
    points = []
    for mode, source in enumerate(MODES):
        try:
            cubin, _, _ = compile_with_report(DSMEM_SOURCE, arch, {"MODE": mode})
            f = drv.load(cubin, "dsmem_read")
            args = [g.data_ptr(), out.data_ptr(), ctypes.c_int(iters), smid.data_ptr()]
            t = harness.time_fn(lambda f=f: drv.launch(f, grid, threads_per_block, 0, args, stream), repeat=repeat)
            if mode == 1:
                torch.cuda.synchronize()
                ids = smid.view(-1, 2).cpu()
                if bool((ids >= 0).all()):
                    split = int((ids[:, 0] != ids[:, 1]).sum())
            points.append(DsmemPoint(source, t.median_s, nbytes / t.median_s))
        except Exception as exc:  # noqa: BLE001 - recorded
            points.append(DsmemPoint(source, error=_err(exc)))
    return Dsmem(device=harness.device_name(), simulated=False, sms=sms, grid=grid, threads_per_block=threads_per_block, iters=iters,
                 bytes_read=nbytes, points=tuple(points), sm_clock_hz=_sm_clock_hz(), clusters=grid // 2, clusters_split=split)


def smem_peak_bytes_per_s(sms: int, clock_hz: float) -> float:
    """Shared-memory read bandwidth of the whole GPU if every SM reads 128 B per clock [B/s]."""
    return sms * SMEM_BYTES_PER_CLOCK_PER_SM * clock_hz


def accuracy_rows(results, device: str, boost_clock_hz: float | None = None) -> list:
    """Own-shared-memory bandwidth against 128 B per clock per SM at the catalog's boost clock
    (``boost_clock_hz``): a *prediction* (datasheet figures only; the clock NVML reported during the run
    is a measured behaviour, named in the note as a check). No row without the catalog's clock."""
    from ..accuracy import Row

    raw = results.get("dsmem") if hasattr(results, "get") else None
    if raw is None or (isinstance(raw, dict) and "error" in raw):
        return []
    res = raw if isinstance(raw, Dsmem) else Dsmem.from_record(raw)
    own = next((p for p in res.points if p.source == MODES[0] and p.bytes_per_s), None)
    if own is None or not res.sms or not boost_clock_hz:
        return []
    seen = f"; NVML read the SM clock at {res.sm_clock_hz / 1e6:,.0f} MHz during the run" if res.sm_clock_hz else ""
    return [Row("simt", "shared-memory read bandwidth, every SM reading its own",
                f"SMs × 128 B per clock (32 banks × 4 B) × the catalog's {boost_clock_hz / 1e6:,.0f} MHz boost clock",
                smem_peak_bytes_per_s(res.sms, boost_clock_hz), own.bytes_per_s, "B/s", "prediction", device,
                "a ceiling: loop overhead and the cluster barriers keep the kernel below it" + seen)]
