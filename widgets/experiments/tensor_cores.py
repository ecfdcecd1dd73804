"""Tensor-core experiments: GEMM throughput per data type, a shape sweep (alignment and wave
quantization), the error of each data type against an fp64 reference, and a Triton GEMM against
cuBLAS.

On a GPU the sizes are the real ones (8192^3 and friends, capped by free memory); on a CPU every
experiment runs scaled down in seconds (Triton through its interpreter), which shows the method,
not GPU performance.

What runs is chosen from the device's capabilities (``harness.capabilities()``), never its name:
:func:`dtype_plan` measures each data type the device has tensor-core math for (a T4, sm_75:
fp32 and fp16; bf16 and tf32 are left out with "need sm_80", fp8 with "needs sm_89"), and the
shape sweep and the Triton GEMMs run in :func:`gemm_dtype` (bf16 where the device has bf16
tensor cores, else fp16). The Triton steps fail soft (``harness.Failed`` with the error) where
Triton cannot compile for the arch.

Every ``measure_*`` returns a frozen ``harness.Result``; :class:`TensorCoresResults` is the topic's
record, read back typed with ``TensorCoresResults.from_record``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import warnings
from dataclasses import dataclass, replace
from typing import Optional, Union

import torch

from ..capabilities import Capabilities
from ..dtypes import bytes_per_element, to_torch
from ..hardware import catalog_name_for, get_gpu
from ..models import tensor_cores as model
from . import harness
from .tensor_cores_depth import DepthResults, run_depth

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")  # the record's labels; "fp8" is E4M3 (widgets.dtypes)


def _torch_dtype(dtype: str) -> torch.dtype:
    """The storage dtype of a GEMM in ``dtype`` (tf32 is stored as fp32; widgets.dtypes for the rest)."""
    return torch.float32 if dtype == "tf32" else to_torch(dtype)


def _elem_bytes(dtype: str) -> int:
    return int(bytes_per_element(dtype))


# --------------------------------------------------------------------------------------------
# What this device runs (capabilities, never names)
# --------------------------------------------------------------------------------------------
def has_fp8(cap: Optional[Capabilities] = None) -> bool:
    """fp8 GEMMs through ``torch._scaled_mm`` need fp8 tensor cores (compute capability 8.9 or later)."""
    cap = cap or harness.capabilities()
    return cap.fp8 and hasattr(torch, "_scaled_mm")


def dtype_plan(cap: Optional[Capabilities] = None) -> dict[str, Optional[str]]:
    """For each of :data:`DTYPES`: ``None`` where this device measures it, else why not (the row's
    note). On the CPU: everything but tf32 and fp8 (the method, scaled down). On an NVIDIA GPU: fp32,
    and each format it has tensor-core math for (``widgets.capabilities``: fp16 from sm_70, bf16 and
    tf32 from sm_80, fp8 from sm_89). On another vendor's GPU: everything but fp8.

    >>> from widgets.capabilities import Capabilities
    >>> t4 = Capabilities("Tesla T4", "NVIDIA", "sm_75", 15 * 2**30, 15 * 2**30, 1, True)
    >>> [d for d, why in dtype_plan(t4).items() if why is None]
    ['fp32', 'fp16']
    >>> dtype_plan(t4)["bf16"]
    'bf16 tensor cores need sm_80; this GPU (Tesla T4) is sm_75'
    """
    cap = cap or harness.capabilities()
    plan: dict[str, Optional[str]] = {}
    for d in DTYPES:
        if d == "fp32":
            plan[d] = None
        elif d == "fp8":
            plan[d] = None if has_fp8(cap) else (
                cap.why_not("fp8") if cap.nvidia and not cap.fp8 else
                "no fp8 GEMM on this device (torch._scaled_mm needs fp8 tensor cores, compute capability >= 8.9)")
        elif not cap.gpu:
            plan[d] = "no TF32 on a CPU" if d == "tf32" else None
        elif cap.nvidia:
            plan[d] = cap.why_not(d)
        else:
            plan[d] = None
    return plan


def gemm_dtype(cap: Optional[Capabilities] = None) -> str:
    """The 16-bit format of the shape sweep and the Triton GEMMs on a GPU: bf16 where the device
    has bf16 tensor cores, else fp16 (a T4). (On the CPU the interpreted Triton kernels use fp16.)"""
    cap = cap or harness.capabilities()
    return "fp16" if cap.nvidia and not cap.tensor_cores("bf16") else "bf16"


# --------------------------------------------------------------------------------------------
# Result types (the record's layout since the first H200 run; later fields default to None)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SustainedRun(harness.Result):
    """Back-to-back GEMMs for ``windows`` windows of at least ``seconds_per_window`` each."""

    seconds_per_window: float
    calls_per_window: int
    windows: int
    window_flop_per_s: tuple[float, ...]
    flop_per_s: float
    min_flop_per_s: float
    max_flop_per_s: float
    sm_clock_mhz: Optional[dict] = None
    power_w: Optional[dict] = None
    nvml: Optional[str] = None
    nvml_reason: Optional[str] = None
    power_kind: Optional[str] = None


@dataclass(frozen=True)
class GemmRun(harness.Result):
    """One ``n^3`` GEMM in ``dtype``: a burst and a sustained run; or, where the device cannot run
    the format, ``None`` times and the reason in ``note``."""

    dtype: str
    n: int
    data: str = "randn"
    time_s: Optional[float] = None
    min_s: Optional[float] = None
    max_s: Optional[float] = None
    repeat: Optional[int] = None
    flop_per_s: Optional[float] = None
    rest_s_before_burst: Optional[float] = None
    burst_sm_clock_mhz: Optional[dict] = None
    burst_power_w: Optional[dict] = None
    nvml: Optional[str] = None
    nvml_reason: Optional[str] = None
    power_kind: Optional[str] = None
    sustained: Optional[SustainedRun] = None
    copies: Optional[int] = None
    note: str = ""
    fast_accum: Optional[bool] = None
    peak_flop_per_s: Optional[float] = None
    fraction_of_peak: Optional[float] = None


@dataclass(frozen=True)
class DtypeThroughput(harness.Result):
    """One :class:`GemmRun` per data type (fp8 twice where it runs: fast and precise
    accumulation; bf16 once more on zeros on a GPU). Iterating gives the rows."""

    rows: tuple[GemmRun, ...]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key):
        """``r[0]``, ``r[-5:]``: the rows; ``r["rows"]``: the field (as every Result)."""
        return super().__getitem__(key) if isinstance(key, str) else self.rows[key]


@dataclass(frozen=True)
class SweepPoint(harness.Result):
    n: int
    time_s: float
    min_s: float
    max_s: float
    flop_per_s: float


@dataclass(frozen=True)
class NSweep(harness.Result):
    m: int
    k: int
    torch: tuple[SweepPoint, ...]
    torch_nvml: Optional[dict] = None
    triton: Optional[tuple[SweepPoint, ...]] = None
    triton_nvml: Optional[dict] = None
    triton_config: Optional[tuple[int, ...]] = None
    triton_error: Optional[str] = None  # the Triton sweep could not run here (arch, compiler)


@dataclass(frozen=True)
class ShapeSweep(harness.Result):
    dtype: str
    alignment: tuple[SweepPoint, ...]
    n_sweep: NSweep
    alignment_nvml: Optional[dict] = None


@dataclass(frozen=True)
class PrecisionRow(harness.Result):
    dtype: str
    k: int
    m: int
    n: int
    sample: int
    method: str
    fast_accum: bool
    out_dtype: str
    repeats: int
    total: float
    total_min: float
    total_max: float
    accumulation: float
    accumulation_min: float
    accumulation_max: float
    max_componentwise: float
    kernels: Optional[tuple[str, ...]] = None
    kernels_reason: str = ""


@dataclass(frozen=True)
class Precision(harness.Result):
    """One :class:`PrecisionRow` per (data type, accumulation mode, K). Iterating gives the rows."""

    rows: tuple[PrecisionRow, ...]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key):
        """``r[0]``, ``r[-5:]``: the rows; ``r["rows"]``: the field (as every Result)."""
        return super().__getitem__(key) if isinstance(key, str) else self.rows[key]


@dataclass(frozen=True)
class TritonPrecisionRow(harness.Result):
    k: int
    total: float
    total_min: float
    total_max: float
    accumulation: float
    accumulation_min: float
    accumulation_max: float
    max_componentwise: float


@dataclass(frozen=True)
class PrecisionTriton(harness.Result):
    dtype: str
    m: int
    n: int
    sample: int
    repeats: int
    config: tuple[int, ...]
    out_dtype: str
    interpreted: bool
    method: str
    rows: tuple[TritonPrecisionRow, ...]


@dataclass(frozen=True)
class TritonVsTorch(harness.Result):
    n: int
    dtype: str  # torch's name (bfloat16, float16)
    relative_error_vs_torch: float
    data: str
    config: tuple[int, ...]
    interpreted: bool
    interleaved: bool
    repeat: int
    triton_times_s: tuple[float, ...]
    torch_times_s: tuple[float, ...]
    triton_time_s: float
    torch_time_s: float
    triton_flop_per_s: float
    torch_flop_per_s: float
    ratio: float
    pair_ratio_median: float
    pair_ratio_min: float
    pair_ratio_max: float
    sm_clock_mhz: Optional[dict] = None
    power_w: Optional[dict] = None
    nvml: Optional[str] = None
    nvml_reason: Optional[str] = None
    power_kind: Optional[str] = None


@dataclass(frozen=True)
class TensorCoresResults(harness.Result):
    """The topic's record (``widgets/data/h200/tensor_cores.json``'s ``results``), typed. The
    throughput and precision rows sit in lists at the top level (the record's layout)."""

    catalog_gpu: Optional[str]
    throughput: tuple[GemmRun, ...]
    shape_sweep: ShapeSweep
    precision: tuple[PrecisionRow, ...]
    triton: Union[TritonVsTorch, harness.Failed]
    precision_triton: Union[PrecisionTriton, harness.Failed, None] = None
    plan: Optional[dict[str, Optional[str]]] = None  # dtype -> None (measured) or why not, on this device
    depth: Union[DepthResults, harness.Failed, None] = None  # tensor_cores_depth: tiles, epilogue, data, 2:4, grouped


RESULTS = TensorCoresResults  # the topic's result type (widgets.book.setup reads the record with it)


@contextlib.contextmanager
def tf32_enabled(enabled: bool = True):
    """Let fp32 matmuls use TF32 tensor cores inside the block (restored afterwards), through
    ``torch.backends.cuda.matmul.allow_tf32`` (``torch.set_float32_matmul_precision`` where a
    torch build refuses the legacy switch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = enabled
            legacy = True
        except RuntimeError:
            old = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high" if enabled else "highest")
            legacy = False
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if legacy:
                torch.backends.cuda.matmul.allow_tf32 = old
            else:
                torch.set_float32_matmul_precision(old)


def _randn(shape, dtype, gen):
    return torch.randn(shape, generator=gen, device=harness.device(), dtype=torch.float32).to(dtype)


def _to_fp8(x: torch.Tensor):
    """Per-tensor scaled E4M3: returns (x8, scale) with x ~ x8 * scale and max |x8| = 448."""
    amax = x.abs().max().clamp(min=1e-12).float()
    scale = amax / torch.finfo(torch.float8_e4m3fn).max
    return (x / scale).to(torch.float8_e4m3fn), scale


def _gemm_fn(dtype: str, m: int, n: int, k: int, copies: int, gen, *, fast_accum: bool = True, data: str = "randn"):
    """A zero-argument GEMM call that cycles through ``copies`` independent operand pairs (so that
    the working set exceeds the L2 cache where caching would flatter), and a setup that advances it."""
    if data not in ("randn", "zeros"):
        raise ValueError(f"data must be 'randn' or 'zeros', got {data!r}")
    make = _randn if data == "randn" else (lambda shape, dt, g: torch.zeros(shape, device=harness.device(), dtype=dt))
    pairs = []
    for _ in range(copies):
        if dtype == "fp8":
            a8, sa = _to_fp8(make((m, k), torch.float32, gen))
            b8, sb = _to_fp8(make((n, k), torch.float32, gen))
            pairs.append((a8, b8.t(), sa, sb))  # B column-major, as _scaled_mm requires
        else:
            t = _torch_dtype(dtype)
            pairs.append((make((m, k), t, gen), make((k, n), t, gen)))
    state = {"i": 0}

    def advance():
        state["i"] = (state["i"] + 1) % copies

    if dtype == "fp8":

        def fn():
            a, b, sa, sb = pairs[state["i"]]
            return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)

    else:

        def fn():
            a, b = pairs[state["i"]]
            return a @ b

    return fn, advance


def _copies(bytes_per_pair: int) -> int:
    """Operand pairs to rotate through so that they add up to at least twice the L2 (1 on a CPU)."""
    l2 = harness.l2_bytes()
    if not l2:
        return 1
    return max(1, min(8, math.ceil(2 * l2 / bytes_per_pair)))


def _nvml_field_value(v) -> float:
    """The number in an NVML ``nvmlFieldValue_t`` (its union member chosen by ``valueType``)."""
    members = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(v.value, members.get(int(getattr(v, "valueType", 1)), "uiVal")))


class GpuSampler:
    """Samples the SM clock [MHz] and board power [W] every ``interval_s`` in a background thread
    while the ``with`` block runs, and once more as it ends (so that even a block shorter than the
    interval has a sample taken under load). NVML through ``pynvml`` where installed, else torch's
    ``torch.cuda.clock_rate``/``power_draw`` (NVML too), else ``nvidia-smi``. Without a GPU, or
    without any of them, it samples nothing and :meth:`summary` gives ``None`` with the reason.

    Power: on Ampere and later ``nvmlDeviceGetPowerUsage`` (and torch's ``power_draw``, and
    nvidia-smi's ``power.draw``) is an average over the last second, so a burst of ~30 ms reads
    mostly the rest before it. Through pynvml the sampler reads the instantaneous field
    ``NVML_FI_DEV_POWER_INSTANT`` (``nvmlDeviceGetFieldValues``) where the driver has it, and says
    which it read in ``power_kind``. The sample counts are kept: a median of a handful of samples
    does not resolve a short block."""

    def __init__(self, interval_s: float = 0.01):
        self.interval_s = interval_s
        self.clock_mhz: list[float] = []
        self.power_w: list[float] = []
        self.power_kind = None
        self.source, self.reason = self._reader()

    def _reader(self):
        if not harness.on_gpu():
            return None, "no GPU"
        try:
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
            self._read = lambda: (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                                  pynvml.nvmlDeviceGetPowerUsage(h) / 1e3)
            self._read()
            self.power_kind = "1-s average (nvmlDeviceGetPowerUsage)"
            try:  # the instantaneous power field, where this pynvml and driver have it
                field = pynvml.NVML_FI_DEV_POWER_INSTANT

                def read_instant():
                    v = pynvml.nvmlDeviceGetFieldValues(h, [field])[0]
                    if int(getattr(v, "nvmlReturn", 0)) != 0:
                        raise RuntimeError(f"NVML field {field}: return {v.nvmlReturn}")
                    return pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), _nvml_field_value(v) / 1e3

                c, w = read_instant()
                if not (0 < w < 5000):
                    raise RuntimeError(f"implausible instant power {w} W")
                self._read = read_instant
                self.power_kind = "instant (NVML_FI_DEV_POWER_INSTANT)"
            except Exception as exc:
                self.power_kind += f"; no instant field: {type(exc).__name__}"
            return "pynvml", ""
        except Exception as exc:  # no pynvml, or NVML refuses
            first = f"pynvml: {type(exc).__name__}"
        try:
            self._read = lambda: (float(torch.cuda.clock_rate()), torch.cuda.power_draw() / 1e3)
            self._read()
            self.power_kind = "1-s average (torch.cuda.power_draw)"
            return "torch.cuda", ""
        except Exception as exc:
            second = f"torch.cuda.clock_rate: {type(exc).__name__}"
        try:
            import subprocess

            idx = str(torch.cuda.current_device())
            cmd = ["nvidia-smi", "-i", idx, "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"]

            def read():
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True).stdout
                clock, power = (float(x) for x in out.strip().splitlines()[0].split(","))
                return clock, power

            self._read = read
            self._read()
            self.interval_s = max(self.interval_s, 0.1)  # a process per sample
            self.power_kind = "1-s average (nvidia-smi power.draw)"
            return "nvidia-smi", ""
        except Exception as exc:
            return None, f"{first}; {second}; nvidia-smi: {type(exc).__name__}"

    def __enter__(self):
        import threading

        self._stop = threading.Event()
        self._thread = None
        if self.source:
            def loop():
                while not self._stop.is_set():
                    try:
                        c, w = self._read()
                        self.clock_mhz.append(float(c))
                        self.power_w.append(float(w))
                    except Exception:
                        pass
                    self._stop.wait(self.interval_s)

            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()
            try:  # one sample as the block ends, the GPU still at its loaded clock
                c, w = self._read()
                self.clock_mhz.append(float(c))
                self.power_w.append(float(w))
            except Exception:
                pass
        return False

    @staticmethod
    def _stats(xs):
        if not xs:
            return None
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "samples": len(xs)}

    def summary(self) -> dict:
        """``{"sm_clock_mhz": {median, min, max, samples} | None, "power_w": ... | None, "source",
        "power_kind", "reason"}``."""
        return {"sm_clock_mhz": self._stats(self.clock_mhz), "power_w": self._stats(self.power_w),
                "source": self.source, "power_kind": self.power_kind if self.power_w else None,
                "reason": self.reason if not self.clock_mhz else ""}


def _time_gemm(dtype: str, m: int, n: int, k: int, *, repeat: int, fast_accum: bool = True, seed: int = 0,
               data: str = "randn") -> dict:
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    e = _elem_bytes(dtype)
    copies = _copies((m * k + k * n) * e)
    fn, advance = _gemm_fn(dtype, m, n, k, copies, gen, fast_accum=fast_accum, data=data)
    with tf32_enabled(dtype == "tf32"):
        t = harness.time_fn(fn, warmup=3, repeat=repeat, setup=advance)
    flop = model.matmul_flop(m, n, k)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "time_s": t.median_s, "min_s": t.min_s, "max_s": t.max_s,
            "repeat": t.repeat, "flop_per_s": flop / t.median_s, "copies": copies}


def _time_sustained(fn, advance, flop: int, *, seconds: float, per_call_s: float, windows: int) -> dict:
    """Run ``fn`` back to back for ``windows`` windows of at least ``seconds`` each (device time
    between two events on a GPU), sampling clock and power; FLOP/s per window and their median."""
    calls = max(1, min(100_000, math.ceil(seconds / max(per_call_s, 1e-9))))
    per_window = []
    with GpuSampler() as sampler:
        for _ in range(windows):
            if harness.on_gpu():
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(calls):
                    advance()
                    fn()
                end.record()
                end.synchronize()
                elapsed = start.elapsed_time(end) * 1e-3
            else:
                import time

                t0 = time.perf_counter()
                for _ in range(calls):
                    advance()
                    fn()
                elapsed = time.perf_counter() - t0
            per_window.append(flop * calls / elapsed)
    s = sampler.summary()
    return {"seconds_per_window": seconds, "calls_per_window": calls, "windows": windows,
            "window_flop_per_s": per_window, "flop_per_s": statistics.median(per_window),
            "min_flop_per_s": min(per_window), "max_flop_per_s": max(per_window),
            "sm_clock_mhz": s["sm_clock_mhz"], "power_w": s["power_w"], "nvml": s["source"], "nvml_reason": s["reason"],
            "power_kind": s["power_kind"]}


def measure_gemm(dtype: str, n: int, *, repeat: int, fast_accum: bool = True, sustained_s: float | None = None,
                 windows: int | None = None, data: str = "randn", seed: int = 0) -> GemmRun:
    """One ``n^3`` GEMM: a **burst** (after a 1-s rest on a GPU, ``repeat`` calls of about a
    millisecond each, timed one by one; median and spread) and a **sustained** run (back to back for ``windows`` x at least
    ``sustained_s`` seconds: 2 s on a GPU), with the SM clock and board power sampled (NVML) during
    each. ``data`` is ``"randn"`` (standard normal) or ``"zeros"``: the power a tensor core draws
    depends on the bits it multiplies."""
    gpu = harness.on_gpu()
    sustained_s = sustained_s if sustained_s is not None else (2.0 if gpu else 0.05)
    windows = windows or (3 if gpu else 1)
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    e = _elem_bytes(dtype)
    copies = _copies(2 * n * n * e)
    fn, advance = _gemm_fn(dtype, n, n, n, copies, gen, fast_accum=fast_accum, data=data)
    flop = model.matmul_flop(n, n, n)
    rest_s = 1.0 if gpu else 0.0  # let the clock recover from the previous sustained run first
    if rest_s:
        import time

        harness.synchronize()
        time.sleep(rest_s)
    with tf32_enabled(dtype == "tf32"):
        with GpuSampler() as sampler:
            t = harness.time_fn(fn, warmup=3, repeat=repeat, setup=advance)
        burst = sampler.summary()
        sustained = _time_sustained(fn, advance, flop, seconds=sustained_s, per_call_s=t.median_s, windows=windows)
    return GemmRun.from_record({
        "dtype": dtype, "n": n, "data": data, "time_s": t.median_s, "min_s": t.min_s, "max_s": t.max_s,
        "repeat": t.repeat, "flop_per_s": flop / t.median_s, "rest_s_before_burst": rest_s,
        "burst_sm_clock_mhz": burst["sm_clock_mhz"], "burst_power_w": burst["power_w"],
        "nvml": burst["source"], "nvml_reason": burst["reason"], "power_kind": burst["power_kind"], "sustained": sustained,
        "copies": copies}, strict=True)


def reference_gpu():
    """The catalog record of this machine's GPU, or None (CPU, or a GPU the catalog lacks)."""
    if not harness.on_gpu():
        return None
    name = catalog_name_for(torch.cuda.get_device_name())
    return get_gpu(name) if name else None


# --------------------------------------------------------------------------------------------
# 1. Throughput per data type at a large size
# --------------------------------------------------------------------------------------------
def measure_dtype_throughput(n: int | None = None, *, repeat: int | None = None, sustained_s: float | None = None,
                             windows: int | None = None, zeros: bool | None = None) -> DtypeThroughput:
    """Time an ``n x n x n`` GEMM in each data type, burst and sustained (:func:`measure_gemm`), on
    standard-normal data; the catalog's dense peak beside each. With ``zeros``, bf16 runs once
    more on all-zero matrices (same work, less switching: more clock under the same power cap; by
    default on a GPU only).

    GPU: ``n = 8192`` (capped so three fp32 matrices fit in a quarter of free memory: smaller on a
    15 GiB T4); fp8 through ``torch._scaled_mm`` (per-tensor scales, bf16 output) where the GPU has
    it, with and without fast accumulation. CPU: ``n = 256``. A data type the device has no
    tensor-core math for (:func:`dtype_plan`: tf32 and fp8 on a CPU; bf16, tf32 and fp8 on a T4) is
    recorded with ``null`` times and the reason.
    """
    cap = harness.capabilities()
    gpu = cap.gpu
    if n is None:
        n = 8192 if gpu else 256
        if gpu:
            side = int(math.sqrt(cap.size_bytes(3 * 4 * 8192**2, 0) / (3 * 4)))
            n = min(n, max(1024, side // 256 * 256))
    repeat = repeat or (20 if gpu else 3)
    spec = reference_gpu()
    plan = dtype_plan(cap)
    out = []
    for d in DTYPES:
        if plan[d] is not None:
            out.append(GemmRun(dtype=d, n=n, note=plan[d]))
            continue
        peak = spec.peak_flop_per_s.get(d) if spec else None
        for fast in (True, False) if d == "fp8" else (True,):
            r = measure_gemm(d, n, repeat=repeat, fast_accum=fast, sustained_s=sustained_s, windows=windows)
            out.append(replace(r, note=f"torch._scaled_mm, per-tensor scales, use_fast_accum={fast}" if d == "fp8" else "",
                               fast_accum=fast if d == "fp8" else None, peak_flop_per_s=peak,
                               fraction_of_peak=r.flop_per_s / peak if peak else None))
    if zeros if zeros is not None else gpu:
        d = gemm_dtype(cap)
        r = measure_gemm(d, n, repeat=repeat, sustained_s=sustained_s, windows=windows, data="zeros")
        peak = spec.peak_flop_per_s.get(d) if spec else None
        out.append(replace(r, note="all-zero operands", fast_accum=None, peak_flop_per_s=peak,
                           fraction_of_peak=r.flop_per_s / peak if peak else None))
    return DtypeThroughput(tuple(out))


# --------------------------------------------------------------------------------------------
# 2. Shape sweep: alignment, and N at fixed M, K (wave quantization)
# --------------------------------------------------------------------------------------------
def alignment_sizes(gpu: bool | None = None) -> list[int]:
    """Square sizes near multiples of 8, 64 and 128."""
    gpu = harness.on_gpu() if gpu is None else gpu
    bases = (4096, 8192) if gpu else (256,)
    offsets = (-1, 0, 1, 8, 16, 64, 128)
    return [b + o for b in bases for o in offsets]


def n_sweep_shape(gpu: bool | None = None) -> tuple[int, int, list[int]]:
    """(M, K, list of N) for the wave-quantization sweep."""
    gpu = harness.on_gpu() if gpu is None else gpu
    if gpu:
        return 2048, 8192, list(range(256, 16384 + 1, 256))
    return 64, 128, list(range(32, 256 + 1, 32))


def measure_shape_sweep(*, repeat: int | None = None, triton_sweep: bool = True) -> ShapeSweep:
    """bf16 GEMMs across shapes (:func:`gemm_dtype`: fp16 on a GPU without bf16 tensor cores; the
    Triton kernel in fp16 on a CPU, where bf16 Triton is not interpretable).

    ``alignment``: square ``n^3`` for n near multiples of 8/64/128, through torch (cuBLAS).
    ``n_sweep``: ``M x N x K`` at fixed M, K across N, through torch and through the Triton kernel
    with ONE fixed tile (128 x 256 on a GPU): the Triton kernel runs exactly the schedule the
    tile-and-wave model assumes; cuBLAS picks its own tiles per shape. Each block records the SM
    clock and power sampled while it ran (``*_nvml``; ``None`` values without a GPU). The Triton
    sweep fails soft: where Triton cannot compile for the arch, ``triton_error`` says why.
    """
    cap = harness.capabilities()
    gpu = cap.gpu
    repeat = repeat or (15 if gpu else 2)
    dtype = gemm_dtype(cap)
    align = []
    with GpuSampler() as s_align:
        for s in alignment_sizes(gpu):
            r = _time_gemm(dtype, s, s, s, repeat=repeat)
            align.append({"n": s, "time_s": r["time_s"], "min_s": r["min_s"], "max_s": r["max_s"], "flop_per_s": r["flop_per_s"]})
    m, k, ns = n_sweep_shape(gpu)
    torch_pts = []
    with GpuSampler() as s_torch:
        for n in ns:
            r = _time_gemm(dtype, m, n, k, repeat=repeat)
            torch_pts.append({"n": n, "time_s": r["time_s"], "min_s": r["min_s"], "max_s": r["max_s"], "flop_per_s": r["flop_per_s"]})
    out = {"dtype": dtype, "alignment": align, "alignment_nvml": s_align.summary(),
           "n_sweep": {"m": m, "k": k, "torch": torch_pts, "torch_nvml": s_torch.summary()}}
    if triton_sweep:
        from . import tensor_cores_triton as tt

        cfg = tt.GPU_CONFIGS[0] if gpu else tt.CPU_CONFIG
        tdtype = _torch_dtype(dtype) if gpu else torch.float16
        gen = torch.Generator(device=harness.device()).manual_seed(1)
        a = _randn((m, k), tdtype, gen)
        pts = []
        try:
            with GpuSampler() as s_triton:
                for n in ns:
                    b = _randn((k, n), tdtype, gen)
                    c = torch.empty((m, n), device=a.device, dtype=tdtype)
                    t = harness.time_fn(lambda: tt.matmul(a, b, config=cfg, out=c), warmup=2 if gpu else 1, repeat=repeat)
                    pts.append({"n": n, "time_s": t.median_s, "min_s": t.min_s, "max_s": t.max_s,
                                "flop_per_s": model.matmul_flop(m, n, k) / t.median_s})
            out["n_sweep"]["triton"] = pts
            out["n_sweep"]["triton_nvml"] = s_triton.summary()
            out["n_sweep"]["triton_config"] = list(cfg)
        except Exception as exc:  # Triton cannot compile for this arch (or runs out of shared memory): say so
            out["n_sweep"]["triton_error"] = harness.Failed.of(exc).error + (
                "" if cap.triton_tested else f" (Triton's tested path is sm_80 and newer; this GPU is {cap.arch})")
    return ShapeSweep.from_record(out, strict=True)


# --------------------------------------------------------------------------------------------
# 3. Numerical error against an fp64 reference as K grows
# --------------------------------------------------------------------------------------------
def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 fraction bits) to nearest even, kept in fp32 (for CPU emulation)."""
    bits = x.float().contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    bits = (bits + 0x0FFF + lsb) & ~0x1FFF
    return bits.view(torch.float32)


def _lowp_matmul(dtype: str, a64: torch.Tensor, b64: torch.Tensor, *, fast_accum: bool = False):
    """``a @ b`` in ``dtype`` from fp64 operands.

    Returns (result in fp64, rounded A in fp64, rounded B in fp64, method, output dtype). The
    result is kept in fp32 where the library allows it, so that the error is the inputs' and the
    accumulation's, not the rounding of the output. On a CPU, tensor-core GEMMs are emulated: the
    inputs are rounded to ``dtype`` and multiplied in fp32.
    """
    gpu = a64.is_cuda
    why_not = None
    if gpu and dtype in ("tf32", "bf16", "fp16"):
        cap = harness.capabilities()
        why_not = cap.why_not(dtype) if cap.nvidia else None
        gpu = why_not is None  # no tensor-core path for it here: emulate, and say why
    if dtype == "fp8":
        a8, sa = _to_fp8(a64.float())
        b8, sb = _to_fp8(b64.float())
        ar, br = a8.double() * sa.double(), b8.double() * sb.double()
        if has_fp8():
            b8t = b8.t().contiguous().t()  # column-major B, as _scaled_mm requires
            method = "torch._scaled_mm" + (", use_fast_accum" if fast_accum else "")
            try:
                c = torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.float32, use_fast_accum=fast_accum)
                return c.double(), ar, br, method, "fp32"
            except RuntimeError:  # a build that only writes 16-bit outputs
                c = torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
                return c.double(), ar, br, method, "bf16"
        c = (a8.float() * sa) @ (b8.float() * sb)
        return c.double(), ar, br, "emulated: E4M3 inputs, fp32 matmul", "fp32"
    if dtype == "tf32":
        ar, br = _round_tf32(a64.float()), _round_tf32(b64.float())
        if gpu:
            with tf32_enabled(True):
                c = a64.float() @ b64.float()
            return c.double(), ar.double(), br.double(), "cuBLAS, allow_tf32", "fp32"
        ar, br = ar.to(a64.device), br.to(a64.device)
        return ((ar @ br).double(), ar.double(), br.double(),
                "emulated: TF32-rounded inputs, fp32 matmul" + (f" ({why_not})" if why_not else ""), "fp32")
    t = _torch_dtype(dtype)
    a, b = a64.to(t), b64.to(t)
    if t == torch.float32:
        with tf32_enabled(False):
            return (a @ b).double(), a.double(), b.double(), "torch.mm", "fp32"
    if not gpu:
        return ((a.float() @ b.float()).double(), a.double(), b.double(),
                f"emulated: {dtype} inputs, fp32 matmul" + (f" ({why_not})" if why_not else ""), "fp32")
    try:
        c = torch.mm(a, b, out_dtype=torch.float32)
        return c.double(), a.double(), b.double(), "torch.mm(out_dtype=float32)", "fp32"
    except (TypeError, RuntimeError):
        return (a @ b).double(), a.double(), b.double(), "torch.mm", dtype


def precision_ks(gpu: bool | None = None) -> list[int]:
    gpu = harness.on_gpu() if gpu is None else gpu
    return [2**p for p in range(8, 17)] if gpu else [2**p for p in range(6, 12, 1)]


def precision_shape(gpu: bool | None = None) -> tuple[int, int]:
    """(size, sample) of the precision experiment: the ``size x size`` product computed in the data
    type and the ``sample x sample`` block of it compared with fp64. On a GPU 2048 (128 output
    tiles of 128 x 256 for 132 SMs: no split-K needed to fill the GPU) and a 256 x 256 block; on
    a CPU 64, all of it."""
    gpu = harness.on_gpu() if gpu is None else gpu
    return (2048, 256) if gpu else (64, 64)


def _gpu_kernel_names(fn) -> tuple[list[str] | None, str]:
    """Names of the GPU kernels ``fn()`` launches (torch.profiler), PyTorch's own elementwise and
    reduction kernels (dtype conversions, scales) left out; (None, reason) where that fails or
    there is no GPU. Tells which cuBLAS kernel ran and whether it split K (a ``splitK``/``reduce``
    kernel after the GEMM)."""
    if not harness.on_gpu():
        return None, "no GPU"
    try:
        names = []
        for name, _, _ in harness.gpu_kernel_spans(fn):
            if "at::native" in name:
                continue
            if name[:200] not in names:
                names.append(name[:200])
        return names, ""
    except Exception as exc:  # an optional reading: never fail the experiment over it
        return None, f"torch.profiler: {type(exc).__name__}: {str(exc)[:120]}"


def _precision_args(gpu: bool, ks, size, sample, repeats) -> tuple[list, int, int]:
    """The K values, matrix size and compared block of a precision run (defaults by device)."""
    ks = list(ks or precision_ks(gpu))
    size0, sample0 = precision_shape(gpu)
    size = size or size0
    sample = min(size, sample or (sample0 if size == size0 else size))
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
        raise ValueError(f"repeats must be an integer in [1, 100], got {repeats!r}")
    return ks, size, sample


def measure_precision(ks=None, *, size: int | None = None, sample: int | None = None, seed: int = 0,
                      repeats: int = 3, kernels: bool = True) -> Precision:
    """Relative error of ``A[size,K] @ B[K,size]`` in each data type against fp64, as K grows.

    Inputs: standard normal in fp64, ``repeats`` independent draws (seeds ``seed``,
    ``seed + 1``, ...). The whole ``size x size`` product is computed in the data type (on a GPU
    ``size = 2048``: 128 output tiles of 128 x 256, about one per SM, so cuBLAS has no reason to
    split K and each output is one accumulator walking all of K; the kernels that ran are recorded
    per K in ``kernels`` to check that), and its top-left ``sample x sample`` block (256 x 256 on a
    GPU; the whole product on a CPU) is compared with fp64. Per dtype and K, the median over the
    draws (and the spread, ``*_min`` and ``*_max``) of ``total`` = ||C_dtype - C_exact||_F /
    ||C_exact||_F (inputs rounded to the dtype, then the product) and ``accumulation`` = the same
    against the fp64 product of the ROUNDED inputs (the GEMM's own error); ``max_componentwise`` =
    the largest |c_hat - c| / (|A| |B|) of any draw, to compare with the deterministic bound. fp8 is
    E4M3 with per-tensor scales. A format without tensor-core math on this device (bf16 and tf32 on
    a T4, fp8 below sm_89) is emulated: inputs rounded to it, an fp32 product; ``method`` says so.
    """
    import statistics as stats

    gpu = harness.on_gpu()
    ks, size, sample = _precision_args(gpu, ks, size, sample, repeats)
    if has_fp8():  # torch._scaled_mm needs every GEMM dimension divisible by 16
        if size % 16:
            raise ValueError(f"size must be a multiple of 16 where fp8 runs through torch._scaled_mm, got {size!r}")
        if any(k % 16 for k in ks):
            raise ValueError(f"ks must be multiples of 16 where fp8 runs through torch._scaled_mm, got {ks!r}")
    dev = harness.device()
    gens = [torch.Generator(device=dev).manual_seed(seed + r) for r in range(repeats)]
    out = []
    variants = [("fp32", False), ("tf32", False), ("bf16", False), ("fp16", False), ("fp8", False)]
    if has_fp8():
        variants.append(("fp8", True))
    for k in ks:
        runs = {v: [] for v in variants}
        meta = {}
        names = {}
        for g, gen in enumerate(gens):
            a = torch.randn((size, k), generator=gen, device=dev, dtype=torch.float64)
            b = torch.randn((k, size), generator=gen, device=dev, dtype=torch.float64)
            exact = a[:sample] @ b[:, :sample]
            for d, fast in variants:
                c, ar, br, method, out_dtype = _lowp_matmul(d, a, b, fast_accum=fast)
                if g == 0 and kernels:
                    names[(d, fast)] = _gpu_kernel_names(functools.partial(_lowp_matmul, d, a, b, fast_accum=fast))
                c, ar, br = c[:sample, :sample], ar[:sample], br[:, :sample]
                exact_r = ar @ br
                absab = ar.abs() @ br.abs()
                meta[(d, fast)] = (method, out_dtype)
                runs[(d, fast)].append((
                    float(torch.linalg.norm(c - exact) / torch.linalg.norm(exact)),
                    float(torch.linalg.norm(c - exact_r) / torch.linalg.norm(exact_r)),
                    float(((c - exact_r).abs() / absab).max()),
                ))
                del c, ar, br, exact_r, absab
            del a, b
        for (d, fast), vals in runs.items():
            tot, acc, comp = zip(*vals)
            method, out_dtype = meta[(d, fast)]
            kn, why = names.get((d, fast), (None, "not recorded"))
            out.append({
                "dtype": d, "k": k, "m": size, "n": size, "sample": sample, "method": method, "fast_accum": fast,
                "out_dtype": out_dtype, "repeats": repeats,
                "total": stats.median(tot), "total_min": min(tot), "total_max": max(tot),
                "accumulation": stats.median(acc), "accumulation_min": min(acc), "accumulation_max": max(acc),
                "max_componentwise": max(comp), "kernels": kn, "kernels_reason": why,
            })
    return Precision(tuple(PrecisionRow.from_record(r, strict=True) for r in out))


def measure_precision_triton(ks=None, *, size: int | None = None, sample: int | None = None, seed: int = 0,
                             repeats: int = 3) -> PrecisionTriton:
    """The book's own Triton GEMM (:mod:`.tensor_cores_triton`, ONE fixed tile, so each output is
    ONE fp32 accumulator walking all of K in steps of BLOCK_K: no split-K, no library choice), with
    an fp32 output, against fp64 as K grows: the accumulation error of a known schedule. Same
    inputs, shapes and statistics as :func:`measure_precision`. bf16 on a GPU (128 x 256 x 64
    tiles; fp16 on a GPU without bf16 tensor cores); fp16 on a CPU, where the interpreter runs the
    kernel (bf16 is not interpretable)."""
    import statistics as stats

    from . import tensor_cores_triton as tt

    gpu = harness.on_gpu()
    ks, size, sample = _precision_args(gpu, ks, size, sample, repeats)
    cfg = tt.GPU_CONFIGS[0] if gpu else tt.CPU_CONFIG
    dtype = gemm_dtype() if gpu else "fp16"
    dev = harness.device()
    gens = [torch.Generator(device=dev).manual_seed(seed + r) for r in range(repeats)]
    rows = []
    for k in ks:
        vals = []
        for gen in gens:
            a = torch.randn((size, k), generator=gen, device=dev, dtype=torch.float64)
            b = torch.randn((k, size), generator=gen, device=dev, dtype=torch.float64)
            a_r, b_r = a.to(_torch_dtype(dtype)), b.to(_torch_dtype(dtype))
            c = torch.empty((size, size), device=dev, dtype=torch.float32)
            tt.matmul(a_r, b_r, config=cfg, out=c)
            ar, br = a_r[:sample].double(), b_r[:, :sample].double()
            cs, exact, exact_r = c[:sample, :sample].double(), a[:sample] @ b[:, :sample], ar @ br
            vals.append((
                float(torch.linalg.norm(cs - exact) / torch.linalg.norm(exact)),
                float(torch.linalg.norm(cs - exact_r) / torch.linalg.norm(exact_r)),
                float(((cs - exact_r).abs() / (ar.abs() @ br.abs())).max()),
            ))
            del a, b, a_r, b_r, c
        tot, acc, comp = zip(*vals)
        rows.append({"k": k, "total": stats.median(tot), "total_min": min(tot), "total_max": max(tot),
                     "accumulation": stats.median(acc), "accumulation_min": min(acc), "accumulation_max": max(acc),
                     "max_componentwise": max(comp)})
    return PrecisionTriton.from_record({
        "dtype": dtype, "m": size, "n": size, "sample": sample, "repeats": repeats, "config": list(cfg),
        "out_dtype": "fp32", "interpreted": tt.INTERPRETED,
        "method": f"Triton kernel, {cfg[0]}x{cfg[1]} tile, BLOCK_K={cfg[2]}, one fp32 accumulator per output",
        "rows": rows}, strict=True)


# --------------------------------------------------------------------------------------------
# 4. A Triton GEMM against cuBLAS
# --------------------------------------------------------------------------------------------
def measure_triton_vs_torch(n: int | None = None, *, repeat: int | None = None, seed: int = 0) -> TritonVsTorch:
    """Time the Triton kernel (autotuned on a GPU) and torch's GEMM (cuBLAS) on the same ``n^3``
    problem, after checking that the two agree. The calls are **interleaved** (Triton, torch,
    torch, Triton, ...: the order alternates each round) in one run, so both see the same clock
    and power state; the ratio is computed from this run only. bf16 on a GPU (n = 8192; fp16 on a
    GPU without bf16 tensor cores); fp16 at n = 64 on a CPU, where the interpreter runs the kernel."""
    from . import tensor_cores_triton as tt

    gpu = harness.on_gpu()
    n = n or (8192 if gpu else 64)
    repeat = repeat or (30 if gpu else 2)
    dtype = _torch_dtype(gemm_dtype()) if gpu else torch.float16
    gen = torch.Generator(device=harness.device()).manual_seed(seed)
    a = _randn((n, n), dtype, gen)
    b = _randn((n, n), dtype, gen)
    ref = (a.float() @ b.float()) if not gpu else (a @ b).float()
    got = tt.matmul(a, b).float()
    err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    tol = 2e-2 if gpu else 5e-3
    if not err < tol:
        raise AssertionError(f"Triton matmul disagrees with torch: relative error {err:.3g} >= {tol}")
    c = torch.empty_like(a)
    fns = {"triton": lambda: tt.matmul(a, b, out=c),
           "torch": (lambda: torch.mm(a, b, out=c)) if gpu else (lambda: torch.mm(a, b))}
    for f in fns.values():  # warm-up (and autotuning) outside the timed rounds
        for _ in range(3 if gpu else 1):
            f()
    harness.synchronize()
    times = {"triton": [], "torch": []}
    with GpuSampler() as sampler:
        for i in range(repeat):
            order = ("triton", "torch") if i % 2 == 0 else ("torch", "triton")
            for name in order:
                times[name].append(harness.time_fn(fns[name], warmup=0, repeat=1).median_s)
    pair_ratio = [tc / tt_ for tc, tt_ in zip(times["torch"], times["triton"])]
    flop = model.matmul_flop(n, n, n)
    t_tri, t_torch = statistics.median(times["triton"]), statistics.median(times["torch"])
    s = sampler.summary()
    return TritonVsTorch.from_record({
        "n": n, "dtype": str(dtype).replace("torch.", ""), "relative_error_vs_torch": err, "data": "randn",
        "config": list(tt.best_config()), "interpreted": tt.INTERPRETED, "interleaved": True, "repeat": repeat,
        "triton_times_s": times["triton"], "torch_times_s": times["torch"],
        "triton_time_s": t_tri, "torch_time_s": t_torch,
        "triton_flop_per_s": flop / t_tri, "torch_flop_per_s": flop / t_torch,
        "ratio": t_torch / t_tri,
        "pair_ratio_median": statistics.median(pair_ratio), "pair_ratio_min": min(pair_ratio), "pair_ratio_max": max(pair_ratio),
        "sm_clock_mhz": s["sm_clock_mhz"], "power_w": s["power_w"], "nvml": s["source"], "nvml_reason": s["reason"],
        "power_kind": s["power_kind"],
    }, strict=True)


def _optional(fn, *args, **kwargs):
    """``fn()``, or ``harness.Failed`` (``{"error": reason}`` in the record) if it fails: an
    optional experiment never loses the topic."""
    return harness.attempt(fn, *args, **kwargs)


def run_all() -> TensorCoresResults:
    """Every tensor-core experiment (``python -m widgets.measure``); the Triton ones fail soft."""
    torch.manual_seed(0)
    spec = reference_gpu()
    return TensorCoresResults(
        catalog_gpu=spec.name if spec else None,
        throughput=measure_dtype_throughput().rows,
        shape_sweep=measure_shape_sweep(),
        precision=measure_precision().rows,
        precision_triton=_optional(measure_precision_triton),
        triton=_optional(measure_triton_vs_torch),
        plan=dtype_plan(),
        depth=_optional(run_depth),
    )


# --------------------------------------------------------------------------------------------
# Reading the precision records: growth per kernel regime, and where promotion must happen
# --------------------------------------------------------------------------------------------
def _loglog_fit(ks, errs) -> tuple[float, float]:
    """Least-squares line through (log2 K, log2 error): (slope, log2 error at K = 1)."""
    x = [math.log2(k) for k in ks]
    y = [math.log2(e) for e in errs]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
    return slope, my - slope * mx


def error_regimes(rows: list[dict], kind: str = "accumulation") -> list[dict]:
    """Split ``rows`` (precision rows of ONE dtype and mode) into kernel regimes and fit the
    growth of the error with K in each: ``[{"ks", "errors", "slope", "kernels"}]`` (slope of
    log error against log K; 0.5 is the sqrt(K) of independent rounding errors). A regime is a run
    of K with the same recorded kernel names; a record without kernel names is split wherever the
    error falls as K doubles (a new kernel or split). Regimes of one K get ``slope`` None."""
    rs = sorted((r for r in rows if r.get(kind)), key=lambda r: r["k"])
    groups: list[list[dict]] = []
    for r in rs:
        if groups:
            prev = groups[-1][-1]
            named = r.get("kernels") is not None and prev.get("kernels") is not None
            same = (r["kernels"] == prev["kernels"]) if named else r[kind] >= prev[kind]
            if same:
                groups[-1].append(r)
                continue
        groups.append([r])
    out = []
    for g in groups:
        ks, errs = [r["k"] for r in g], [r[kind] for r in g]
        out.append({"ks": ks, "errors": errs, "slope": _loglog_fit(ks, errs)[0] if len(g) > 1 else None,
                    "kernels": g[0].get("kernels")})
    return out


def promotion_crossover_k(fast_rows: list[dict], precise_rows: list[dict]) -> dict | None:
    """A **fit**, free of any accumulator model: extrapolate the fast-mode accumulation error of
    the first kernel regime (its own power law in K) down to the precise mode's flat level (the
    median over K); the K where they meet is about how many products precise mode sums before it
    promotes to fp32 (DeepSeek promote every 128; CUTLASS's sm90 fp8 mainloop every 4 MMAs of
    k = 32, also 128). ``{"k", "slope", "level", "ks"}``, or None without two fast points."""
    regimes = error_regimes(fast_rows)
    levels = [r["accumulation"] for r in precise_rows if r.get("accumulation")]
    if not regimes or regimes[0]["slope"] is None or not levels or regimes[0]["slope"] <= 0:
        return None
    slope, icept = _loglog_fit(regimes[0]["ks"], regimes[0]["errors"])
    level = statistics.median(levels)
    return {"k": 2 ** ((math.log2(level) - icept) / slope), "slope": slope, "level": level, "ks": regimes[0]["ks"]}


# --------------------------------------------------------------------------------------------
# The accuracy ledger: every comparison the chapter makes, recomputed from a record
# --------------------------------------------------------------------------------------------
def _estimate(m: int, n: int, k: int, dtype: str, gpu: str, tile_m: int = 128, tile_n: int = 256):
    g = get_gpu(gpu)
    e = _elem_bytes(dtype)
    return model.gemm_estimate(m, n, k, g.peak(dtype), g.hbm_bytes_per_s, g.sms, tile_m=tile_m, tile_n=tile_n,
                               in_bytes=e, out_bytes=2 if dtype == "fp8" else e)


def accuracy_rows(record: dict) -> list:
    """The chapter's comparisons of model and measurement in ``record`` (a tensor_cores record),
    recomputed with today's models from the raw measurements (works with records made before the
    sustained runs and NVML samples were added: those rows are then left out).

    Labels: the tile-and-wave throughput and the total error of bf16/fp16/tf32 GEMMs (input
    rounding and fp32 sums) are **predictions** (datasheet peaks, format definitions), at every K
    recorded; so is the fp32 (no tensor core) accumulation error. The accumulation errors of the
    tensor-core paths are **calibrated**: the truncating fp32 adder (Fasi et al. 2021, Khattak and
    Mikaitis 2025) and the ~14-bit fp8 accumulator (DeepSeek, on an H800) were measured by others.
    The throughput rescaled by the SM clock NVML read during the same run is a **fit**: that clock is not
    one set for the run but the one the power governor chose under the very load compared (the
    chapter shows the same GEMM on zeros drawing less power at a higher clock), a measured behaviour of the run
    (``widgets.accuracy.LABEL_RULES``). The row says how much of the sustained miss the clock explains;
    counted as a prediction, each sustained run would count twice (round 19's expert check).
    """
    from ..accuracy import Row

    R = record["results"]
    prov = record.get("provenance", {})
    device = prov.get("gpu") or prov.get("device") or "unknown"
    gpu = R.get("catalog_gpu")
    topic = "tensor_cores"
    rows = []
    if gpu:
        clock0 = model.DATASHEET_CLOCK_HZ.get(gpu, {})
        for r in R["throughput"]:
            if r.get("flop_per_s") is None or r["flop_per_s"] != r["flop_per_s"] or r.get("data", "randn") != "randn":
                continue
            d, n = r["dtype"], r["n"]
            e = _estimate(n, n, n, d, gpu)
            how = f", {r['note']}" if r.get("note") else ""
            if d == "fp8":
                d_label = "fp8 (fast accum)" if "True" in r.get("note", "") else "fp8 (precise)"
            else:
                d_label = d
            rows.append(Row(topic, f"{d_label} GEMM {n}^3, burst", f"catalog dense peak × wave efficiency (128×256 tiles){how}",
                            e.flop_per_s, r["flop_per_s"], "FLOP/s", "prediction", device,
                            "median of short back-to-back calls (~ms each)"))
            sus = r.get("sustained")
            if sus and sus.get("flop_per_s"):
                rows.append(Row(topic, f"{d_label} GEMM {n}^3, sustained ≥ {sus['seconds_per_window']:g} s",
                                f"catalog dense peak × wave efficiency{how}", e.flop_per_s, sus["flop_per_s"], "FLOP/s",
                                "prediction", device, "median of the windows; random data"))
                clk_s = sus.get("sm_clock_mhz") or {}
                clk = clk_s.get("median") if clk_s.get("samples", 0) >= 10 else None  # fewer samples resolve nothing
                if clk and d in clock0:
                    rows.append(Row(topic, f"{d_label} GEMM {n}^3, sustained, at the clock seen",
                                    f"catalog dense peak × wave efficiency × (median SM clock NVML read during the run "
                                    f"{clk:.0f} MHz / datasheet {clock0[d] / 1e6:.0f} MHz)",
                                    e.flop_per_s * clk * 1e6 / clock0[d], sus["flop_per_s"], "FLOP/s", "fit", device,
                                    "the clock the power governor chose under the load compared, fitted from the run itself: "
                                    "how much of the sustained miss the clock explains, not a prediction"))
        sd = R["shape_sweep"].get("dtype", "bf16")
        for p in R["shape_sweep"]["alignment"]:
            if p["n"] in (4096, 8192, 8191):
                e = _estimate(p["n"], p["n"], p["n"], sd, gpu)
                note = "" if e.aligned else "row not a multiple of 16 B: the model flags it, it does not model the slower kernel"
                rows.append(Row(topic, f"{sd} GEMM {p['n']}^3 (cuBLAS)", "catalog dense peak × wave efficiency",
                                e.flop_per_s, p["flop_per_s"], "FLOP/s", "prediction", device, note))
        s = R["shape_sweep"]["n_sweep"]
        if s.get("triton") and s.get("triton_config"):
            bm, bn = s["triton_config"][:2]
            tri = {p["n"]: p for p in s["triton"]}
            for n in (2048, 2304, 8192):
                if n in tri:
                    e = _estimate(s["m"], n, s["k"], sd, gpu, bm, bn)
                    rows.append(Row(topic, f"Triton {sd} GEMM {s['m']}×{n}×{s['k']}, {bm}×{bn} tiles",
                                    "catalog dense peak × wave efficiency of that tile", e.flop_per_s, tri[n]["flop_per_s"],
                                    "FLOP/s", "prediction", device, f"{e.waves:,} wave{'' if e.waves == 1 else 's'}"))
    for r in R["precision"]:
        d, k, fast = r["dtype"], r["k"], bool(r.get("fast_accum"))
        if r.get("accumulation") is None or r.get("total") is None:
            continue
        shape = f"{r.get('m', '?')}×{r.get('n', r.get('m', '?'))}, K = {k}"
        note = r["method"] + (f"; kernels: {', '.join(n[:60] for n in r['kernels'])}" if r.get("kernels") else "")
        if d in ("bf16", "fp16", "tf32"):
            out = None if r["out_dtype"] == "fp32" else r["out_dtype"]
            rows.append(Row(topic, f"{d} GEMM error vs fp64, {shape}", "input rounding (u of the format) + fp32 sums",
                            model.dot_error(k, d, output=out).typical_error, r["total"], "relative error", "prediction",
                            device, note))
        if d in ("bf16", "fp16", "tf32", "fp32") or (d == "fp8" and r["method"].startswith("torch._scaled_mm")):
            acc = model.accumulator(d, fast)
            how = (f"{acc.significand_bits}-bit accumulator" + (", truncating" if acc.truncate else "")
                   + (f", promoted every {acc.promote_every_k}" if acc.promote_every_k else ""))
            mode = f", {'fast' if fast else 'precise'}" if d == "fp8" else ""
            rows.append(Row(topic, f"{d} GEMM accumulation error{mode}, {shape}", how,
                            model.tensor_core_accumulation_error(k, d, fast).typical_error, r["accumulation"],
                            "relative error", acc.label, device, f"{note}; {acc.source}"))
    pt = R.get("precision_triton")
    if isinstance(pt, dict) and pt.get("rows") and not pt.get("interpreted", True):
        acc = model.accumulator(pt["dtype"])
        for r in pt["rows"]:
            rows.append(Row(topic, f"Triton {pt['dtype']} GEMM accumulation error, {pt['m']}×{pt['n']}, K = {r['k']}",
                            "fp32 accumulator, truncating, one accumulator per output",
                            model.tensor_core_accumulation_error(r["k"], pt["dtype"]).typical_error, r["accumulation"],
                            "relative error", acc.label, device, f"{pt['method']}; {acc.source}"))
    from .tensor_cores_depth import accuracy_rows as depth_rows

    return rows + depth_rows(record)
