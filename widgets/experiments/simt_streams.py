"""Streams and copy/compute overlap: a job of host-to-device copy, kernel and device-to-host copy
run serially on one stream, then split into chunks over several streams so that the copy engines
and the SMs work on different chunks at once. Pinned (page-locked) host memory throughout: a
copy from pageable memory is staged by the driver and does not overlap.

CUDA events recorded on every stream around every stage give the timeline that the chapter
draws (start and end of each stage of each chunk, relative to one start event). Needs an NVIDIA
GPU; without one the experiment records why (the model and its calculator run anywhere).
"""

from __future__ import annotations

import ctypes
import statistics
from dataclasses import dataclass
from typing import Optional, Union

import torch

from ..hardware import describe_local_gpu
from ..models import simt as model
from ..units import MiB
from . import harness
from . import simt_cuda as sc
from .simt_warp import compile_with_report, cuda_ok

COMPUTE_SOURCE = r"""
// ITERS dependent FMAs per element: a kernel whose time is set by arithmetic, not memory.
extern "C" __global__ void compute_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, int iters) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
#pragma unroll 4
    for (int k = 0; k < iters; ++k) v = fmaf(v, 0.9999f, 0.0001f);
    y[i] = v;
}
"""

STAGES = ("h2d", "compute", "d2h")
THREADS = 256


@dataclass(frozen=True)
class Span(harness.Result):
    """One stage of one chunk on the timeline [s from the start event]."""

    chunk: int
    stage: str
    stream: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class PipelineRun(harness.Result):
    """One run of the whole job: ``chunks`` pieces over ``streams`` streams."""

    chunks: int
    streams: int
    total_s: float                      # first start event to the last end event
    spans: tuple[Span, ...]
    totals_s: tuple[float, ...] = ()    # every repeat's total (the spans are the median run's)


@dataclass(frozen=True)
class Overlap(harness.Result):
    device: str
    simulated: bool
    nbytes: int = 0
    iters: int = 0
    note: str = ""
    host_bytes_per_s: Optional[float] = None   # the catalog's host link, per direction
    serial: Union[PipelineRun, harness.Failed, None] = None
    overlapped: Union[PipelineRun, harness.Failed, None] = None
    output_ok: Optional[bool] = None           # the overlapped output equals the serial one, bit for bit


def measure_overlap(nbytes: Optional[int] = None, *, chunks: int = 8, streams: int = 3, iters: int = 0,
                    repeat: int = 3) -> Overlap:
    """Time the job ``h2d -> compute -> d2h`` on ``nbytes`` of floats: serially (one chunk, one
    stream) and as ``chunks`` chunks round-robin over ``streams`` streams. The kernel's FMA count
    per element (``iters``; 0: chosen so the kernel takes about as long as one copy) is set once,
    then both runs use it. Every stage of every chunk is bracketed by CUDA events."""
    ok, why = cuda_ok()
    if not ok:
        return Overlap(device=harness.device_name(), simulated=True, note=why)
    drv = sc.Driver()
    cubin, _, _ = compile_with_report(COMPUTE_SOURCE, drv.arch())
    func = drv.load(cubin, "compute_kernel")
    nbytes = nbytes or harness.choose_bytes(256 * MiB, 0, max_fraction_of_free=0.1)
    n = nbytes // 4 // chunks * chunks
    host_in = torch.rand(n, pin_memory=True)
    host_out = torch.empty(n, pin_memory=True)
    dev_in = torch.empty(n, device="cuda")
    dev_out = torch.empty(n, device="cuda")
    gpu = describe_local_gpu()
    link = getattr(gpu, "host_bytes_per_s", None) if gpu else None
    pool = [torch.cuda.Stream() for _ in range(max(streams, 1))]

    def launch(lo, hi, stream, it):
        drv.launch(func, -(-(hi - lo) // THREADS), THREADS, 0,
                   [dev_in.data_ptr() + 4 * lo, dev_out.data_ptr() + 4 * lo, ctypes.c_longlong(hi - lo), ctypes.c_int(it)],
                   stream.cuda_stream)

    if iters <= 0:  # match the kernel to one copy: time both on the whole buffer
        h2d = harness.time_fn(lambda: dev_in.copy_(host_in, non_blocking=True), repeat=3).median_s
        probe = 256
        k = harness.time_fn(lambda: launch(0, n, torch.cuda.current_stream(), probe), repeat=3).median_s
        iters = int(max(16, min(1 << 16, probe * h2d / k)))

    def one_run(k_chunks, n_streams) -> PipelineRun:
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        for s in pool[:n_streams]:
            s.wait_event(start)
        marks = []
        step = n // k_chunks
        for c in range(k_chunks):
            s = pool[c % n_streams]
            lo, hi = c * step, (c + 1) * step
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            with torch.cuda.stream(s):
                ev[0].record(s)
                dev_in[lo:hi].copy_(host_in[lo:hi], non_blocking=True)
                ev[1].record(s)
                launch(lo, hi, s, iters)
                ev[2].record(s)
                host_out[lo:hi].copy_(dev_out[lo:hi], non_blocking=True)
                ev[3].record(s)
            marks.append((c, c % n_streams, ev))
        torch.cuda.synchronize()
        spans = []
        for c, si, ev in marks:
            t = [start.elapsed_time(e) * 1e-3 for e in ev]
            spans += [Span(c, st, si, t[j], t[j + 1]) for j, st in enumerate(STAGES)]
        return PipelineRun(k_chunks, n_streams, max(sp.end_s for sp in spans), tuple(spans))

    def best_of(k_chunks, n_streams) -> PipelineRun:
        one_run(k_chunks, n_streams)  # warm-up
        runs = [one_run(k_chunks, n_streams) for _ in range(repeat)]
        totals = [r.total_s for r in runs]
        med = sorted(runs, key=lambda r: r.total_s)[len(runs) // 2]
        return PipelineRun(med.chunks, med.streams, statistics.median(totals), med.spans, tuple(totals))

    serial = harness.attempt(best_of, 1, 1)
    reference = host_out.clone() if isinstance(serial, PipelineRun) else None
    host_out.zero_()
    overlapped = harness.attempt(best_of, chunks, streams)
    same = bool(torch.equal(reference, host_out)) if reference is not None and isinstance(overlapped, PipelineRun) else None
    dev_in = dev_out = None
    torch.cuda.empty_cache()
    return Overlap(device=harness.device_name(), simulated=False, nbytes=n * 4, iters=iters, host_bytes_per_s=link,
                   serial=serial, overlapped=overlapped, output_ok=same)


def stage_totals_s(run: PipelineRun) -> dict[str, float]:
    """Each stage's summed time over the chunks of ``run`` [s] (the serial run: the stage times
    of the whole job)."""
    return {st: sum(sp.end_s - sp.start_s for sp in run.spans if sp.stage == st) for st in STAGES}


@dataclass(frozen=True)
class OverlapPrediction:
    predicted_s: Optional[float]       # model.pipeline_time_s on the serial run's stage times
    measured_s: Optional[float]
    ratio: Optional[float]
    h2d_predicted_s: Optional[float]   # the serial H2D copy from the catalog's host link
    h2d_measured_s: Optional[float]


def overlap_prediction(res: Overlap) -> OverlapPrediction:
    """The overlapped time from the serial run's stage times (``model.pipeline_time_s``: a
    *calibrated* comparison), and the serial H2D copy time from the catalog's host link (a
    *prediction*)."""
    if not isinstance(res.serial, PipelineRun):
        return OverlapPrediction(None, None, None, None, None)
    totals = stage_totals_s(res.serial)
    h2d_pred = res.nbytes / res.host_bytes_per_s if res.host_bytes_per_s else None
    if not isinstance(res.overlapped, PipelineRun):
        return OverlapPrediction(None, None, None, h2d_pred, totals["h2d"])
    pred = model.pipeline_time_s([totals[s] for s in STAGES], res.overlapped.chunks)
    meas = res.overlapped.total_s
    return OverlapPrediction(pred, meas, meas / pred, h2d_pred, totals["h2d"])


def accuracy_rows(results, device: str) -> list:
    """The overlap comparisons of a SIMT record's ``results``: the overlapped time from the
    serial run's stage times (``model.pipeline_time_s``, *calibrated*), and the serial
    host-to-device copy from the catalog's host link (a *prediction*)."""
    from ..accuracy import Row

    raw = results.get("overlap") if hasattr(results, "get") else None
    if raw is None or (isinstance(raw, dict) and "error" in raw):
        return []
    res = raw if isinstance(raw, Overlap) else Overlap.from_record(raw)
    p = overlap_prediction(res)
    rows = []
    if p.predicted_s is not None:
        rows.append(Row("simt", f"copy in, compute, copy out of {res.nbytes / MiB:.0f} MiB in {res.overlapped.chunks} chunks "
                                f"on {res.overlapped.streams} streams",
                        "(sum + (chunks − 1) × max) / chunks of the serial run's three stage times",
                        p.predicted_s, p.measured_s, "s", "calibrated", device,
                        "stage times from the one-stream run; pinned host memory"))
    if p.h2d_predicted_s is not None and p.h2d_measured_s:
        rows.append(Row("simt", f"host-to-device copy of {res.nbytes / MiB:.0f} MiB (pinned)",
                        "bytes / the catalog's host link per direction", p.h2d_predicted_s, p.h2d_measured_s, "s", "prediction",
                        device, "PCIe's datasheet rate; packet and protocol overheads make every real copy slower"))
    return rows
