"""Kernels experiments: the fp32 matmul ladder, timing a kernel honestly, and the cubin record.

- ``measure_ladder``: the CUDA-core rungs of ``kernels_cuda`` (naive, coalesced, shared-memory
  tiles, 1D and 2D register blocking, float4 loads, warp tiling), each compiled at run time
  (``simt_cuda.compile_cubin``: nvcc, else NVRTC), loaded through the driver API
  (``simt_cuda.Driver``) and launched on torch's stream; every tile configuration of a rung is
  checked against an fp64 reference at ragged sizes (127 x 131 x 129, 260 x 132 x 68) and timed with
  CUDA events at 4096^3 (also checked there). Registers, spills (local memory) and static shared
  memory per kernel from ``cuFuncGetAttribute``, resident blocks from
  ``cuOccupancyMaxActiveBlocksPerMultiprocessor``. Then the tensor-core rung (the tensor-cores
  chapter's Triton GEMM on fp32 inputs: ``tl.dot`` rounds them to TF32; and on bf16 inputs) and
  cuBLAS through ``torch.matmul`` in fp32 with TF32 off (and on). The SM clock and board power
  before and after. On a CPU: the tiling of every rung emulated in numpy at small sizes (zero
  padding included), which checks the algorithm, not the CUDA C, and times nothing.
- ``measure_timing``: CUDA events against the host clock (``time.perf_counter`` around the call
  and ``torch.cuda.synchronize``) for a short kernel at several sizes, what an idle
  ``torch.cuda.synchronize`` costs, launches back to back, a copy with and without flushing the L2
  first, and 400 timed repeats of one kernel for the statistics of a mean (spread, confidence
  interval, repeats needed).

Every step is fail-soft (``harness.attempt``; one failed configuration is recorded with its error).
"""

from __future__ import annotations

import ctypes
import math
import re
import statistics
import time
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import torch

from ..accuracy import Row
from ..models import kernels as model
from ..units import fmt_bytes
from . import harness
from . import kernels_cuda as kc
from .ncu import STALL_METRIC, ncu_count

BIG = (4096, 4096, 4096)
RAGGED = ((127, 131, 129), (260, 132, 68))
CPU_SIZE = (33, 35, 37)
REL_TOL = 2e-4  # max |C - C_fp64| / max |C_fp64| for an fp32 kernel (K <= 4096); TF32 and bf16 are not held to it
REPEATS = {"naive": 2, "coalesced": 3}
DEFAULT_REPEATS = 10
CPU_NOTE = "CPU: the tiling of each rung emulated in numpy at a small size (zero padding included); no CUDA C ran, nothing timed"


# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelConfig(harness.Result):
    """One tile configuration of one rung, as compiled and measured."""

    kernel: str
    config: tuple[int, ...]
    threads_per_block: int
    tile_m: int
    tile_n: int
    regs_per_thread: Optional[int] = None
    local_bytes_per_thread: Optional[int] = None  # spills land in local memory
    static_smem_bytes: Optional[int] = None
    blocks_per_sm: Optional[int] = None  # cuOccupancyMaxActiveBlocksPerMultiprocessor
    ragged_rel_err: Optional[float] = None  # worst over the ragged sizes
    big_rel_err: Optional[float] = None
    correct: Optional[bool] = None
    time_s: Optional[float] = None  # median at BIG
    min_time_s: Optional[float] = None
    repeats: int = 0
    gflop_per_s: Optional[float] = None
    error: str = ""


@dataclass(frozen=True)
class RungResult(harness.Result):
    """Every configuration of one rung; ``best`` indexes the fastest correct one (None: none)."""

    name: str
    title: str
    configs: tuple[KernelConfig, ...]
    best: Optional[int] = None
    compile_s: Optional[float] = None
    error: str = ""

    @property
    def best_config(self) -> Optional[KernelConfig]:
        return None if self.best is None else self.configs[self.best]


@dataclass(frozen=True)
class LibraryGemm(harness.Result):
    """A library or Triton GEMM at BIG: what ran, its time, rate and error against fp64."""

    name: str
    precision: str
    time_s: Optional[float] = None
    gflop_per_s: Optional[float] = None
    rel_err: Optional[float] = None
    ragged_rel_err: Optional[float] = None
    config: str = ""
    error: str = ""


@dataclass(frozen=True)
class LadderResult(harness.Result):
    device: str
    arch: Optional[str]
    size: tuple[int, int, int]
    ragged: tuple[tuple[int, int, int], ...]
    rungs: tuple[RungResult, ...]
    libraries: tuple[LibraryGemm, ...] = ()
    clock_power_before: Optional[dict] = None
    clock_power_after: Optional[dict] = None
    sms: Optional[int] = None
    compiler: str = ""
    note: str = ""

    def rung(self, name: str) -> Optional[RungResult]:
        return next((r for r in self.rungs if r.name == name), None)

    def library(self, name: str) -> Optional[LibraryGemm]:
        return next((g for g in self.libraries if g.name == name), None)


@dataclass(frozen=True)
class ShortKernelPoint(harness.Result):
    """One size of the short kernel: event and host-clock medians and spreads over ``repeats``."""

    n_elems: int
    bytes_moved: int
    event_median_s: Optional[float]
    event_std_s: Optional[float]
    wall_median_s: float
    wall_std_s: float
    batched_event_per_call_s: Optional[float]  # events around `batch` launches back to back, divided
    batch: int
    repeats: int


@dataclass(frozen=True)
class TimingResult(harness.Result):
    device: str
    points: tuple[ShortKernelPoint, ...]
    sync_idle_median_s: float
    sync_idle_p90_s: float
    flush_bytes: int = 0
    copy_bytes: int = 0
    copy_warm_median_s: Optional[float] = None
    copy_cold_median_s: Optional[float] = None
    copy_warm_std_s: Optional[float] = None
    copy_cold_std_s: Optional[float] = None
    samples_n_elems: int = 0
    samples_s: tuple[float, ...] = ()  # the repeats of one kernel, in order, event-timed on a GPU
    clock_power: Optional[dict] = None
    note: str = ""


@dataclass(frozen=True)
class KernelsResults(harness.Result):
    ladder: Union[LadderResult, harness.Failed, None] = None
    timing: Union[TimingResult, harness.Failed, None] = None


RESULTS = KernelsResults


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def rel_err(c: torch.Tensor, ref: torch.Tensor) -> float:
    """max |c - ref| / max |ref| (ref in fp64)."""
    denom = float(ref.abs().max())
    return float((c.double() - ref).abs().max()) / (denom if denom > 0 else 1.0)


def _operands(m: int, n: int, k: int, seed: int = 0, device=None):
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = (torch.rand((m, k), generator=g) * 2 - 1).to(device or harness.device())
    b = (torch.rand((k, n), generator=g) * 2 - 1).to(device or harness.device())
    return a.contiguous(), b.contiguous()


def _reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double() @ b.double()


def emulate_tiled(a: np.ndarray, b: np.ndarray, bm: int, bn: int, bk: int) -> np.ndarray:
    """What a tiled kernel computes, block by block: each BM x BN tile of C accumulates
    (BM x BK) @ (BK x BN) products of zero-padded tiles, and only the part inside C is stored.
    The CPU stand-in for the ladder (it checks the tiling and the padding, not the CUDA C)."""
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n), np.nan, dtype=np.float32)
    for r0 in range(0, m, bm):
        for c0 in range(0, n, bn):
            acc = np.zeros((bm, bn), dtype=np.float32)
            for k0 in range(0, k, bk):
                at = np.zeros((bm, bk), dtype=np.float32)
                bt = np.zeros((bk, bn), dtype=np.float32)
                blk_a = a[r0:r0 + bm, k0:k0 + bk]
                blk_b = b[k0:k0 + bk, c0:c0 + bn]
                at[: blk_a.shape[0], : blk_a.shape[1]] = blk_a
                bt[: blk_b.shape[0], : blk_b.shape[1]] = blk_b
                acc += at @ bt
            c[r0:r0 + bm, c0:c0 + bn] = acc[: min(bm, m - r0), : min(bn, n - c0)]
    return c


def _tile_k(rung: kc.Rung, config: tuple) -> int:
    p = dict(zip(rung.params, config))
    return p.get("BK", kc.PLAIN_TILE if rung.name == "smem" else 1)


def _cpu_ladder() -> LadderResult:
    m, n, k = CPU_SIZE
    a, b = _operands(m, n, k, device="cpu")
    ref = _reference(a, b)
    rungs = []
    for rung in kc.RUNGS:
        configs = []
        for config in rung.configs:
            bm, bn = kc.tile(rung, config)
            c = emulate_tiled(a.numpy(), b.numpy(), bm, bn, _tile_k(rung, config))
            err = rel_err(torch.from_numpy(c), ref) if np.isfinite(c).all() else float("inf")
            configs.append(KernelConfig(kc.kernel_name(rung, config), tuple(config), kc.threads_per_block(rung, config), bm, bn,
                                        ragged_rel_err=err, correct=err < REL_TOL))
        rungs.append(RungResult(rung.name, rung.title, tuple(configs)))
    return LadderResult(harness.device_name(), None, CPU_SIZE, (CPU_SIZE,), tuple(rungs), note=CPU_NOTE)


def _timed(fn, repeat: int) -> harness.Timing:
    return harness.time_fn(fn, warmup=1, repeat=repeat)


def _flop(size) -> float:
    m, n, k = size
    return 2.0 * m * n * k


# --------------------------------------------------------------------------------------------
# The ladder on a GPU
# --------------------------------------------------------------------------------------------
class _Launcher:
    """Launch a compiled ladder kernel on torch's current stream."""

    def __init__(self, drv, func, rung: kc.Rung, config: tuple):
        self.drv, self.func = drv, func
        self.threads = kc.threads_per_block(rung, config)
        self.bm, self.bn = kc.tile(rung, config)

    def __call__(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        m, k = a.shape
        n = b.shape[1]
        gx = -(-n // self.bn)
        gy = -(-m // self.bm)
        vec = int(k % 4 == 0 and n % 4 == 0 and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0 and c.data_ptr() % 16 == 0)
        stream = torch.cuda.current_stream().cuda_stream
        self.drv.launch(self.func, gx * gy, self.threads, 0,
                        [a.data_ptr(), b.data_ptr(), c.data_ptr(), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k),
                         ctypes.c_int(gx), ctypes.c_int(vec)], stream=stream)


def _measure_config(drv, module_funcs, rung, config, ragged_ops, big) -> KernelConfig:
    name = kc.kernel_name(rung, config)
    bm, bn = kc.tile(rung, config)
    base = dict(kernel=name, config=tuple(config), threads_per_block=kc.threads_per_block(rung, config), tile_m=bm, tile_n=bn)
    info = {}
    try:
        func = module_funcs(name)
        info = dict(regs_per_thread=drv.func_attribute(func, "num_regs"),
                    local_bytes_per_thread=drv.func_attribute(func, "local_size_bytes"),
                    static_smem_bytes=drv.func_attribute(func, "shared_size_bytes"))
        try:
            info["blocks_per_sm"] = drv.max_active_blocks(func, base["threads_per_block"], 0)
        except Exception:  # noqa: BLE001
            pass
        launch = _Launcher(drv, func, rung, config)
        worst = 0.0
        for a, b, ref in ragged_ops:
            c = torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device)
            launch(a, b, c)
            torch.cuda.synchronize()
            worst = max(worst, rel_err(c, ref) if torch.isfinite(c).all() else float("inf"))
        a, b, ref = big
        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device)
        launch(a, b, c)
        torch.cuda.synchronize()
        big_err = rel_err(c, ref) if torch.isfinite(c).all() else float("inf")
        repeat = REPEATS.get(rung.name, DEFAULT_REPEATS)
        t = _timed(lambda: launch(a, b, c), repeat)
        correct = worst < REL_TOL and big_err < REL_TOL
        return KernelConfig(**base, **info, ragged_rel_err=worst, big_rel_err=big_err, correct=correct,
                            time_s=t.median_s, min_time_s=t.min_s, repeats=t.repeat,
                            gflop_per_s=_flop((a.shape[0], b.shape[1], a.shape[1])) / t.median_s / 1e9)
    except Exception as exc:  # noqa: BLE001 - one configuration's failure is recorded, not raised
        return KernelConfig(**base, **info, error=harness.Failed.of(exc).error)


def _measure_rung(drv, arch: str, rung: kc.Rung, ragged_ops, big) -> RungResult:
    t0 = time.perf_counter()
    try:
        from .simt_cuda import compile_cubin

        cubin = compile_cubin(kc.source(rung), arch)
    except Exception as exc:  # noqa: BLE001
        err = harness.Failed.of(exc).error
        configs = tuple(KernelConfig(kc.kernel_name(rung, c), tuple(c), kc.threads_per_block(rung, c), *kc.tile(rung, c), error=err)
                        for c in rung.configs)
        return RungResult(rung.name, rung.title, configs, None, None, "compile failed: " + err)
    compile_s = time.perf_counter() - t0
    configs = tuple(_measure_config(drv, lambda name: drv.load(cubin, name), rung, c, ragged_ops, big) for c in rung.configs)
    ok = [i for i, c in enumerate(configs) if c.correct and c.gflop_per_s]
    best = max(ok, key=lambda i: configs[i].gflop_per_s) if ok else None
    return RungResult(rung.name, rung.title, configs, best, compile_s)


def _library(name: str, precision: str, fn, big, ragged_ops, config=lambda: "") -> LibraryGemm:
    try:
        a, b, ref = big
        out = fn(a, b)
        torch.cuda.synchronize()
        err = rel_err(out.float(), ref)
        rerr = max(rel_err(fn(x, y).float(), r) for x, y, r in ragged_ops)
        t = _timed(lambda: fn(a, b), DEFAULT_REPEATS)
        flop = _flop((a.shape[0], b.shape[1], a.shape[1]))
        return LibraryGemm(name, precision, t.median_s, flop / t.median_s / 1e9, err, rerr, config())
    except Exception as exc:  # noqa: BLE001
        return LibraryGemm(name, precision, error=harness.Failed.of(exc).error)


def _optional(module: str):
    """A sibling module that needs Triton, imported only when a GPU run asks for it: Triton is optional
    for this chapter (its tensor-core rung fails soft without it; the doctor does not require it)."""
    import importlib

    return importlib.import_module(f"{__package__}.{module}")


def _cublas(tf32: bool):
    def run(a, b):
        with _optional("tensor_cores").tf32_enabled(tf32):
            return a @ b

    return run


def _triton(dtype, cast_once: bool = False):
    """The chapter's Triton GEMM on ``dtype`` inputs. By default the casts are inside the timed call:
    for bf16 each call also converts both fp32 operands (two reads of 4 bytes and writes of 2 per
    element, two more launches). ``cast_once``: the operands are converted on the first call for them
    (the warm-up) and reused, so the timed calls are the GEMM alone."""
    cache: dict = {}

    def run(a, b):
        if not cast_once:
            return _optional("tensor_cores_triton").matmul(a.to(dtype), b.to(dtype))
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        if key not in cache:
            cache[key] = (a.to(dtype), b.to(dtype))
        return _optional("tensor_cores_triton").matmul(*cache[key])

    return run


LADDER_TIMEOUT_S = 600


def measure_ladder(size=BIG, isolate: bool = True) -> LadderResult:
    """The whole ladder (see the module docstring); a CPU runs the numpy emulation.

    On a GPU it runs in a fresh Python process (``isolate``): a hand-written kernel that faults
    leaves a sticky CUDA error in its context, which must not take the caller's (the other
    topics of ``python -m widgets.measure``, a notebook) down with it."""
    if not harness.on_gpu() or harness.capabilities().vendor != "NVIDIA":
        return _cpu_ladder()
    if isolate:
        return _ladder_in_subprocess(tuple(int(v) for v in size))
    from .simt_cuda import Driver, _nvcc

    cap = harness.capabilities()
    drv = Driver()
    arch = drv.arch()
    ragged_ops = []
    for i, (m, n, k) in enumerate(RAGGED):
        a, b = _operands(m, n, k, seed=i + 1)
        ragged_ops.append((a, b, _reference(a, b)))
    a, b = _operands(*size, seed=0)
    big = (a, b, _reference(a, b))
    before = harness.gpu_clock_power()
    rungs = tuple(_measure_rung(drv, arch, rung, ragged_ops, big) for rung in kc.RUNGS)
    libs = [_library("cuBLAS fp32 (TF32 off)", "fp32", _cublas(False), big, ragged_ops),
            _library("cuBLAS fp32 inputs, TF32 on", "tf32", _cublas(True), big, ragged_ops)]
    if cap.tensor_cores("bf16"):
        def config():
            return str(_optional("tensor_cores_triton").best_config())

        libs.append(_library("Triton tl.dot, fp32 inputs (TF32)", "tf32", _triton(torch.float32), big, ragged_ops, config))
        libs.append(_library("Triton tl.dot, bf16 inputs", "bf16", _triton(torch.bfloat16), big, ragged_ops, config))
        libs.append(_library("Triton tl.dot, bf16 inputs, cast before timing", "bf16", _triton(torch.bfloat16, cast_once=True),
                             big, ragged_ops, config))
    after = harness.gpu_clock_power()
    props = torch.cuda.get_device_properties(0)
    return LadderResult(harness.device_name(), arch, tuple(size), RAGGED, rungs, tuple(libs), before, after,
                        props.multi_processor_count, "nvcc" if _nvcc() else "NVRTC")


def _ladder_in_subprocess(size) -> LadderResult:
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ladder.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(harness.REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        cmd = [sys.executable, "-m", "widgets.experiments.kernels", "ladder", str(out), *map(str, size)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=LADDER_TIMEOUT_S, cwd=str(harness.REPO_ROOT), env=env)
        if p.returncode != 0 or not out.exists():
            raise RuntimeError(f"the ladder's process exited with {p.returncode}: {(p.stderr or p.stdout)[-800:]}")
        return LadderResult.from_record(json.loads(out.read_text()))


# --------------------------------------------------------------------------------------------
# Timing a kernel
# --------------------------------------------------------------------------------------------
SHORT_SIZES = (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 25)
CPU_SHORT_SIZES = (1 << 10, 1 << 14, 1 << 18)
SHORT_REPEATS = 50
BATCH = 100
SAMPLES = 400
SAMPLES_ELEMS = 1 << 22


def _events_once(fn) -> float:
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e-3


def _wall_once(fn) -> float:
    harness.synchronize()
    t0 = time.perf_counter()
    fn()
    harness.synchronize()
    return time.perf_counter() - t0


def _std(xs) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def measure_timing() -> TimingResult:
    """Events against the host clock for a short kernel (``torch.add`` of n fp32 elements, out of
    place) at several sizes; the idle cost of a synchronize; a copy with and without an L2 flush;
    ``SAMPLES`` repeats of one size, in order."""
    gpu = harness.on_gpu()
    sizes = SHORT_SIZES if gpu else CPU_SHORT_SIZES
    repeats = SHORT_REPEATS if gpu else 5
    dev = harness.device()
    points = []
    for n in sizes:
        x = torch.rand(n, device=dev)
        y = torch.empty_like(x)

        def fn(x=x, y=y):
            torch.add(x, 1.0, out=y)

        for _ in range(3):
            fn()
        harness.synchronize()
        ev = [_events_once(fn) for _ in range(repeats)] if gpu else None
        wall = [_wall_once(fn) for _ in range(repeats)]
        batched = None
        if gpu:
            def many(fn=fn):
                for _ in range(BATCH):
                    fn()
            batched = statistics.median(_events_once(many) for _ in range(5)) / BATCH
        points.append(ShortKernelPoint(n, 8 * n, statistics.median(ev) if ev else None, _std(ev) if ev else None,
                                       statistics.median(wall), _std(wall), batched, BATCH if gpu else 0, repeats))
    syncs = []
    for _ in range(200 if gpu else 20):
        t0 = time.perf_counter()
        harness.synchronize()
        syncs.append(time.perf_counter() - t0)
    syncs.sort()
    # A copy that fits in L2, with and without writing a buffer twice the L2 between repeats.
    l2 = harness.l2_bytes()
    warm = cold = warm_s = cold_s = None
    copy_bytes = flush_bytes = 0
    if gpu and l2 > 0:
        src = torch.rand(l2 // 8 // 4, device=dev)  # an eighth of L2 in, the same out
        dst = torch.empty_like(src)
        flush = torch.empty(2 * l2 // 4, device=dev)
        copy_bytes, flush_bytes = 2 * src.numel() * 4, flush.numel() * 4
        warm_t = [_events_once(lambda: dst.copy_(src)) for _ in range(30)]
        cold_t = []
        for _ in range(30):
            flush.zero_()
            cold_t.append(_events_once(lambda: dst.copy_(src)))
        warm, cold, warm_s, cold_s = statistics.median(warm_t), statistics.median(cold_t), _std(warm_t), _std(cold_t)
    n = SAMPLES_ELEMS if gpu else 1 << 14
    x = torch.rand(n, device=dev)
    y = torch.empty_like(x)
    for _ in range(5):
        torch.add(x, 1.0, out=y)
    samples = [(_events_once if gpu else _wall_once)(lambda: torch.add(x, 1.0, out=y)) for _ in range(SAMPLES if gpu else 40)]
    return TimingResult(harness.device_name(), tuple(points), statistics.median(syncs), syncs[int(0.9 * (len(syncs) - 1))],
                        flush_bytes, copy_bytes, warm, cold, warm_s, cold_s, n, tuple(samples), harness.gpu_clock_power(),
                        "" if gpu else "CPU: host clock only (no events); the method, not a GPU's numbers")


def run_all() -> KernelsResults:
    """Every kernels experiment (fail-soft)."""
    timing = harness.attempt(measure_timing)
    ladder = harness.attempt(measure_ladder)
    return KernelsResults(ladder=ladder, timing=timing)


# --------------------------------------------------------------------------------------------
# Model accuracy
# --------------------------------------------------------------------------------------------
GROUP = 20  # repeats per group in the confidence-interval check


def ci_check(samples) -> Optional[tuple[float, float]]:
    """(predicted, measured) spread of a mean of ``GROUP`` repeats, from the disjoint groups of ``GROUP``:
    predicted as the pooled within-group standard deviation over ``sqrt(GROUP)`` (every group's own
    spread, many degrees of freedom), measured as the standard deviation of the group means. For
    independent repeats the two are independent estimates of the same number, and their ratio falls in
    ``model.spread_of_means_band(groups)``. None with fewer than 4 groups."""
    xs = list(samples)
    groups = [xs[i:i + GROUP] for i in range(0, len(xs) - GROUP + 1, GROUP)]
    if len(groups) < 4:
        return None
    predicted = math.sqrt(statistics.fmean(statistics.variance(g) for g in groups)) / math.sqrt(GROUP)
    measured = statistics.stdev(statistics.fmean(g) for g in groups)
    return predicted, measured


def _sweep_range(rung_result, gpu: str, size) -> str:
    """``; measured / model over the sweep a to b`` for a rung's correct configurations ('' if under two)."""
    ratios = []
    for c in rung_result.configs:
        if c.correct and c.gflop_per_s and c.regs_per_thread:
            try:
                p = model.predict_on(gpu, rung_result.name, *size, regs_per_thread=c.regs_per_thread,
                                     **model.sizes_from_config(rung_result.name, c.config))
            except ValueError:
                continue
            ratios.append(c.gflop_per_s / (p.predicted_flop_per_s / 1e9))
    return f" (measured / model over them {min(ratios):.2f} to {max(ratios):.2f})" if len(ratios) > 1 else ""


def accuracy_rows(record: dict) -> list:
    """Every comparison of the kernels chapter, recomputed from ``record``'s raw measurements.

    Labels (``widgets.accuracy.LABEL_RULES``): each rung's rate is a **prediction** (tiling counts, the
    datasheet, and the registers ptxas gave the build: a condition of the run); the register estimate
    a **fit** (its constant of 32 was chosen by hand); the host-clock times **calibrated** (the add's
    event-timed median and the idle synchronize, each from its own repeats); the spread of the mean a
    **fit** (its model is the spread of the very repeats compared)."""
    from ..hardware import catalog_name_for

    res = KernelsResults.from_record(record["results"])
    rows: list = []
    prov = record.get("provenance", {})
    ladder = res.ladder
    gpu = catalog_name_for(prov.get("gpu") or "") if prov.get("gpu") else None
    if isinstance(ladder, LadderResult) and gpu and model.why_not_on(gpu) is None and ladder.arch:
        device = prov.get("gpu") or ladder.device
        m, n, k = ladder.size
        for r in ladder.rungs:
            b = r.best_config
            if b is None or not b.gflop_per_s or b.regs_per_thread is None:
                continue
            sizes = model.sizes_from_config(r.name, b.config)
            p = model.predict_on(gpu, r.name, m, n, k, regs_per_thread=b.regs_per_thread, **sizes)
            title = re.sub(r"(?<=\d) x (?=\d)", " × ", r.title)  # the record's "tiles 32 x 32", with a times sign
            rows.append(Row("kernels", f"{title} ({b.kernel}) at {m}×{n}×{k}, fp32",
                            f"tiling counts + {gpu} datasheet (SMs, clock, lanes) + the compiled registers of this run",
                            p.predicted_flop_per_s / 1e9, b.gflop_per_s, "GFLOP/s", "prediction", device,
                            f"limiter {p.limiter}; "
                            + (f"the fastest of {len(r.configs)} configurations measured{_sweep_range(r, gpu, (m, n, k))}; "
                               if len(r.configs) > 1 else "")
                            + "latency, queues and cache misses are not modelled: a rung can fall below it (the record holds no stall reasons)"))
            est = model.rung_cost(r.name, k, **sizes).regs_per_thread_estimate
            rows.append(Row("kernels", f"registers per thread, {b.kernel}", "accumulators + fragments + 32 (a constant chosen by hand, no source)",
                            est, b.regs_per_thread, "registers", "fit", device,
                            "a rough estimate, not a prediction: the 32 for address and loop registers was not derived"))
            # No row for resident blocks per SM: the record's count is the driver's occupancy calculator
            # (cuOccupancyMaxActiveBlocksPerMultiprocessor) on the same inputs as simt.occupancy, which
            # reproduces it rule for rule; it holds by construction (a consistency check, in the tests).
    timing = res.timing
    if isinstance(timing, TimingResult) and timing.points and timing.points[0].event_median_s:
        device = prov.get("gpu") or timing.device
        for p in timing.points:
            if not p.event_median_s:
                continue
            pred = p.event_median_s * (1 + model.host_timing_error(p.event_median_s, timing.sync_idle_median_s))
            rows.append(Row("kernels", f"host-clock time of an add moving {fmt_bytes(p.bytes_moved)} (launch + synchronize)",
                            "the add's event-timed median (its own repeats) + the idle cost of torch.cuda.synchronize",
                            pred, p.wall_median_s, "s", "calibrated", device,
                            "the overhead constant is measured on the idle-synchronize micro-benchmark; launch cost is not in it"))
        check = ci_check(timing.samples_s)
        if check:
            ng = len(timing.samples_s) // GROUP
            lo, hi = model.spread_of_means_band(ng)
            what = (f"spread of the mean of {GROUP} repeats ({len(timing.samples_s)} repeats of an add moving "
                    f"{fmt_bytes(timing.samples_n_elems * 8)})")  # fp32 in and out: 8 B per element
            # A fit (LABEL_RULES): the model's one parameter, the spread within the groups, comes from the very
            # repeats whose group means it is compared with. It tests whether the repeats are independent (the
            # band below), not a model of the GPU, so it cannot count as a prediction.
            rows.append(Row("kernels", what,
                            f"spread within the groups of the same repeats (pooled s) / √{GROUP}", check[0], check[1], "s", "fit",
                            device,
                            f"a check of independence on the data compared, not a prediction: for independent repeats measured / "
                            f"model lies in {lo:.3f} to {hi:.3f} (95%, {ng - 1} degrees of freedom), here {check[1] / check[0]:.3f}, "
                            f"{'inside' if lo <= check[1] / check[0] <= hi else 'outside'}; outside it the repeats drift or "
                            "are correlated; each repeat is one launch on an idle GPU, so the spread is mostly the launch path's "
                            "jitter, not the kernel's"))
    return rows


def ncu_passes(record: dict) -> list:
    """The L1 passes Nsight Compute counted for the book's untiled rungs, beside the model's, per (rung, K).

    ``record`` is ``widgets/data/h200/kernels_ncu.json`` as ``benchmarks/h200/kernels_ncu.sh`` writes it;
    pure (no torch, no I/O). The measured passes are recomputed from the raw counters, per warp and
    step of k (W = the warps launched): data stage = ``l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld``
    / (W K), or where ncu had no such counter ``l1tex__data_pipe_lsu_wavefronts`` less its shared-memory
    part; tag stage = ``l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld`` / (W K). Beside them, from
    ``model.untiled_load_passes``, summed over the two loads: the model's data passes (banks), tag passes
    (distinct lines / ``model.TAGS_PER_CLOCK``), the old rule (one pass per distinct line) and the model's
    count, ``model.rung_cost(rung, K).wavefronts_per_warp`` (per load the larger of data and tag).

    Returns a list of dicts: ``rung``, ``k``, ``data_passes``, ``tag_passes``, ``measured_passes`` (the
    larger of the two: the stage that binds), ``model_passes``, ``model_data_passes``,
    ``model_tag_passes``, ``line_passes`` (the old rule), ``sm_cycles`` (SM cycles per warp per k,
    over all SMs; None without the SM count) and ``requests`` (L1 requests per warp per k; 2 for these
    kernels). Raises ValueError naming the field when the record is malformed.
    """
    rows = record.get("rows") if isinstance(record, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError("kernels_ncu record field 'rows' must be a non-empty list")
    out = []
    for i, row in enumerate(rows):
        where = f"rows[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("launch"), dict) or not isinstance(row.get("metrics"), dict):
            raise ValueError(f"kernels_ncu record field {where} must hold 'launch' and 'metrics' dicts")
        rung, k, launch, metrics = row.get("rung"), row.get("k"), row["launch"], row["metrics"]
        if rung not in ("naive", "coalesced"):
            raise ValueError(f"kernels_ncu record field {where}.rung must be 'naive' or 'coalesced', got {rung!r}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= model.MAX_DIM:
            raise ValueError(f"kernels_ncu record field {where}.k must be an integer in [1, {model.MAX_DIM}], got {k!r}")
        warps = launch.get("warps")
        if isinstance(warps, bool) or not isinstance(warps, int) or warps < 1:
            raise ValueError(f"kernels_ncu record field {where}.launch.warps must be a positive integer, got {warps!r}")
        wk = float(warps) * k
        glob = ncu_count(metrics, "l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum", where, "kernels_ncu")
        total = ncu_count(metrics, "l1tex__data_pipe_lsu_wavefronts.sum", where, "kernels_ncu")
        shared = ncu_count(metrics, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", where, "kernels_ncu") or 0.0
        data = glob if glob is not None else (None if total is None else total - shared)
        tag = ncu_count(metrics, "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum", where, "kernels_ncu")
        if data is None or tag is None:
            raise ValueError(f"kernels_ncu record field {where}.metrics has no data-stage or tag-stage wavefront count")
        cycles = ncu_count(metrics, "sm__cycles_elapsed.avg", where, "kernels_ncu")
        requests = ncu_count(metrics, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", where, "kernels_ncu")
        sms = launch.get("sms")
        loads = model.untiled_load_passes(rung, k)
        out.append(dict(
            rung=rung, k=k, data_passes=data / wk, tag_passes=tag / wk, measured_passes=max(data, tag) / wk,
            model_passes=model.rung_cost(rung, k).wavefronts_per_warp,
            model_data_passes=float(sum(d["data_passes"] for d in loads)),
            model_tag_passes=float(sum(d["tag_passes"] for d in loads)),
            line_passes=float(sum(d["lines"] for d in loads)),
            sm_cycles=None if cycles is None or not isinstance(sms, int) or sms < 1 else cycles * sms / wk,
            requests=None if requests is None else requests / wk,
        ))
    return out


_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def warp_states(record: dict) -> list:
    """Where each rung's warps spent their cycles, by Nsight Compute, from the raw counters of
    ``widgets/data/h200/kernels_stalls.json`` (``benchmarks/h200/kernels_stalls.sh``); pure.

    Per rung (its fastest configuration in the ladder record, at 4096^3): ``states``, reason ->
    warp cycles in that state per issued instruction (``smsp__average_warps_issue_stalled_<reason>_
    per_issue_active.ratio``; every reason but ``selected``, largest first); ``cycles_per_issue``,
    their sum with ``selected`` (the warp cycles between two instructions of a warp; ncu's own
    ``smsp__average_warp_latency_per_inst_issued.ratio`` is kept beside it as ``ncu_cycles_per_issue``);
    ``shared_passes_per_load``, the L1 data-stage passes (wavefronts) per warp-level shared-memory
    load instruction (1 for a conflict-free 32-bit load; 4 for a conflict-free 128-bit load whose 32
    lanes read distinct addresses, 512 B at 128 B per pass, fewer when lanes share addresses; None
    for a kernel without shared memory); ``sm_clock_hz`` (the SM clock during
    the profiled launch, clocks left alone), ``time_s``, ``issue_per_cycle`` (instructions per
    scheduler per active cycle, at most 1), ``occupancy_pct`` (achieved), ``warps_per_scheduler`` (active
    warps per scheduler per active cycle), ``eligible_per_scheduler`` (of those, ready to issue),
    ``replay_passes`` (how many times ncu replayed the launch) and ``fma_pipe_pct`` (the FMA pipes,
    FP32 and integer multiply-add, as a share of their peak issue rate over active cycles).

    Raises ValueError naming the field when the record is malformed.
    """
    rows = record.get("rows") if isinstance(record, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError("kernels_stalls record field 'rows' must be a non-empty list")
    out = []
    for i, row in enumerate(rows):
        where = f"rows[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("metrics"), dict) or not isinstance(row.get("rung"), str):
            raise ValueError(f"kernels_stalls record field {where} must hold 'rung' and a 'metrics' dict")
        m, units = row["metrics"], row.get("units") or {}

        def count(name, _m=m, _where=where):
            return ncu_count(_m, name, _where, "kernels_stalls")

        states = {}
        for name in m:
            hit = STALL_METRIC.match(name)
            if hit and count(name) is not None:
                states[hit.group(1)] = count(name)
        if not states:
            raise ValueError(f"kernels_stalls record field {where}.metrics has no warp-state counter")
        waiting = dict(sorted(((k, v) for k, v in states.items() if k != "selected"), key=lambda kv: -kv[1]))
        loads = count("smsp__inst_executed_op_shared_ld.sum")
        passes = count("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
        hz = count("sm__cycles_elapsed.avg.per_second")
        hz_unit = (units.get("sm__cycles_elapsed.avg.per_second") or "hz").lower()
        t = count("gpu__time_duration.sum")
        t_unit = (units.get("gpu__time_duration.sum") or "ns").lower()
        if hz is not None and hz_unit not in _HZ:
            raise ValueError(f"kernels_stalls record field {where}.units: unknown clock unit {hz_unit!r}")
        if t is not None and t_unit not in ("ns", "nsecond", "us", "usecond", "ms", "msecond", "s", "second"):
            raise ValueError(f"kernels_stalls record field {where}.units: unknown time unit {t_unit!r}")
        out.append(dict(
            rung=row["rung"], kernel=row.get("kernel"), states=waiting, cycles_per_issue=sum(states.values()),
            ncu_cycles_per_issue=count("smsp__average_warp_latency_per_inst_issued.ratio"),
            shared_passes_per_load=passes / loads if loads and passes is not None else None,
            sm_clock_hz=None if hz is None else hz * _HZ[hz_unit],
            time_s=None if t is None else t * {"n": 1e-9, "u": 1e-6, "m": 1e-3, "s": 1.0}[t_unit[0]],
            issue_per_cycle=count("smsp__issue_active.avg.per_cycle_active"),
            occupancy_pct=count("sm__warps_active.avg.pct_of_peak_sustained_active"),
            warps_per_scheduler=count("smsp__warps_active.avg.per_cycle_active"),
            eligible_per_scheduler=count("smsp__warps_eligible.avg.per_cycle_active"),
            replay_passes=count("profiler__replayer_passes"),
            fma_pipe_pct=count("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        ))
    return out


def _main(argv) -> int:
    """``python -m widgets.experiments.kernels ladder OUT.json M N K``: the ladder in this process, as JSON."""
    import json
    from pathlib import Path

    if len(argv) != 5 or argv[0] != "ladder":
        print("usage: python -m widgets.experiments.kernels ladder OUT.json M N K")
        return 2
    res = measure_ladder(tuple(int(v) for v in argv[2:5]), isolate=False)
    Path(argv[1]).write_text(json.dumps(res.to_record()))
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(_main(sys.argv[1:]))
