"""Kernel fusion, measured: an elementwise chain run eagerly (one kernel per op) and fused.

The chain is ``gelu(x * a + b) * c`` and its repetitions (op ``i`` is ``* a``, ``+ b``, ``gelu``,
``* c`` for ``i % 4`` = 0, 1, 2, 3), on fp32 tensors. Three ways run it:

- **eager** PyTorch: one kernel per op, every intermediate written to and read back from memory;
- **torch.compile** (Inductor generates one fused Triton kernel; skipped on a CPU, where it would
  compile C++ for minutes on a small machine, and skipped with the reason wherever it fails);
- a hand-written fused **Triton** kernel (``fused_chain_kernel``): one read, one write.

Timing: on a GPU, each timed call of the chain sweep (the bandwidth-bound size) follows a GPU
sleep of ``SPACER_CYCLES`` cycles enqueued before the start event, so the host's work for the call
(PyTorch's dispatch, torch.compile's guards and wrapper, Triton's launcher) overlaps the sleep and
the events time the kernels alone. The size sweep has no spacer: there the host's launch cost is
what is measured (``FusionResult.timing_note`` says which; records without it had no spacer).

On a machine without a GPU the Triton kernel runs through Triton's interpreter at a tiny size:
the numbers then show the method, not a GPU. Every GPU step fails soft: a failure is recorded as
a :class:`harness.Failed` with its reason, never raised, so the rest of the topic's record survives.

``accuracy_rows`` and the ``*_rows`` helpers recompute every comparison from the raw times of a
record and today's model (:func:`widgets.models.memory_hierarchy.fusion_estimate`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from .. import _check
from ..accuracy import Row
from ..models import memory_hierarchy as model
from . import harness
from ._triton import tl, triton

TOPIC = "memory_hierarchy"
FLOAT_BYTES = 4
A, B, C = 0.5, 0.25, 2.0  # the chain's constants: gelu(x * A + B) * C
CHAIN_OPS = (1, 2, 4, 8)  # chain lengths measured
COMPILED_OPS = (4,)  # chain lengths also run through torch.compile (each costs a compilation)
SIZE_SWEEP_OPS = 4  # the chain length of the size sweep
GPU_ELEMS = 2**28  # 1 GiB of fp32: far beyond the L2, so every pass goes to HBM
GPU_SIZES = tuple(2**p for p in (12, 16, 20, 24, 28))  # the size sweep: launch-bound to bandwidth-bound
CPU_ELEMS = 2**12  # the interpreter is slow: a tiny size on a CPU
CPU_SIZES = (2**10, 2**12)
BLOCK = 1024
SPACER_CYCLES = 2_000_000  # ~1 ms GPU sleep before each timed call of the chain sweep (as the transpose's)
CHAIN = "op i: * a, + b, gelu, * c for i % 4 = 0, 1, 2, 3"


@triton.jit
def fused_chain_kernel(x_ptr, y_ptr, n, A, B, C, N_OPS: tl.constexpr, BLOCK: tl.constexpr):
    """y = the chain of N_OPS ops applied to x, in ONE pass: x is read once, y written once, and
    every intermediate stays in registers (``static_range`` unrolls the chain at compile time)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    for i in tl.static_range(N_OPS):
        if i % 4 == 0:
            x = x * A
        elif i % 4 == 1:
            x = x + B
        elif i % 4 == 2:
            x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # gelu (erf form, as torch's)
        else:
            x = x * C
    tl.store(y_ptr + offs, x, mask=mask)


def eager_chain(x, n_ops: int):
    """The same chain in eager PyTorch: one kernel (and one full-size intermediate) per op."""
    import torch.nn.functional as F

    for i in range(n_ops):
        op = i % 4
        if op == 0:
            x = x * A
        elif op == 1:
            x = x + B
        elif op == 2:
            x = F.gelu(x)
        else:
            x = x * C
    return x


@dataclass(frozen=True)
class Spread(harness.Result):
    """Seconds per call: median and spread of ``repeat`` timed calls."""

    median_s: float
    min_s: float
    max_s: float
    repeat: int


@dataclass(frozen=True)
class FusionPoint(harness.Result):
    """One chain length at one size: the time of each way (a :class:`harness.Failed` where a way
    could not run, ``None`` where it was not asked for) and each fused result's largest
    difference from eager PyTorch's."""

    n_elems: int
    n_ops: int
    eager: Union[Spread, harness.Failed, None] = None
    triton_fused: Union[Spread, harness.Failed, None] = None
    compiled: Union[Spread, harness.Failed, None] = None
    compile_s: Optional[float] = None  # the first call of the compiled function (compilation included)
    triton_max_abs_error: Optional[float] = None
    compiled_max_abs_error: Optional[float] = None


@dataclass(frozen=True)
class FusionResult(harness.Result):
    """The chain-length sweep (at ``n_elems``) and the size sweep (at ``SIZE_SWEEP_OPS`` ops)."""

    n_elems: int
    elem_bytes: int
    device: str
    interpreted: bool
    chain_sweep: tuple[FusionPoint, ...]
    size_sweep: tuple[FusionPoint, ...] = ()
    chain: str = CHAIN
    constants: tuple[float, ...] = (A, B, C)
    block: int = BLOCK
    chain_spacer_cycles: int = 0  # GPU sleep before each timed call of the chain sweep (0: none, as in older records)
    timing_note: str = ""


def _spacer() -> tuple[Any, str]:
    """``setup`` for ``harness.time_fn`` on a GPU: a sleep of ``SPACER_CYCLES`` enqueued before the
    start event, so the call's host work overlaps it; (None, why) where that is not available."""
    if not harness.on_gpu():
        return None, "no GPU: host clock around each call"
    try:
        import torch

        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        return None, f"torch.cuda._sleep unavailable ({type(exc).__name__}): host work inside the events"
    return (lambda: torch.cuda._sleep(SPACER_CYCLES)), ""


def _timed(fn, repeat: int, setup=None) -> Union[Spread, harness.Failed]:
    """Median seconds of ``fn()``, or :class:`harness.Failed` with the reason (fail soft)."""
    t = harness.attempt(harness.time_fn, fn, repeat=repeat, setup=setup)
    if isinstance(t, harness.Failed):
        return t
    return Spread(t.median_s, t.min_s, t.max_s, t.repeat)


def _max_abs_error(got, expected) -> Optional[float]:
    try:
        return float((got - expected).abs().max().item())
    except Exception:  # noqa: BLE001
        return None


def _measure_compiled(x, n_ops: int, expected, repeat: int, setup=None) -> tuple[Spread, float, Optional[float]]:
    """``torch.compile`` of the eager chain (Inductor fuses it into one Triton kernel): its time,
    the first call's time (compilation included) and its largest difference from eager's."""
    import time

    import torch

    if not harness.on_gpu():
        raise RuntimeError("no GPU: torch.compile would compile C++ for the CPU (minutes on a small machine); skipped")
    fn = torch.compile(lambda t: eager_chain(t, n_ops), dynamic=False)
    t0 = time.perf_counter()
    got = fn(x)  # the first call compiles
    harness.synchronize()
    compile_s = time.perf_counter() - t0
    err = _max_abs_error(got, expected)
    t = harness.time_fn(lambda: fn(x), repeat=repeat, setup=setup)
    return Spread(t.median_s, t.min_s, t.max_s, t.repeat), compile_s, err


def _point(m: int, k: int, x, y, compiled: bool, repeat: int, spacer=None) -> FusionPoint:
    grid = (triton.cdiv(m, BLOCK),)
    eager = _timed(lambda: eager_chain(x, k), repeat, spacer)
    fused = _timed(lambda: fused_chain_kernel[grid](x, y, m, A, B, C, N_OPS=k, BLOCK=BLOCK), repeat, spacer)
    expected = harness.attempt(eager_chain, x, k)
    ok = not isinstance(expected, harness.Failed) and not isinstance(fused, harness.Failed)
    point = FusionPoint(m, k, eager, fused, triton_max_abs_error=_max_abs_error(y, expected) if ok else None)
    if not compiled:
        return point
    c = harness.attempt(_measure_compiled, x, k, expected, repeat, spacer)
    if isinstance(c, harness.Failed):
        return dataclasses.replace(point, compiled=c)
    spread, compile_s, err = c
    return dataclasses.replace(point, compiled=spread, compile_s=compile_s, compiled_max_abs_error=err)


def measure_fusion(
    n_elems: Optional[int] = None,
    chain_ops: Sequence[int] = CHAIN_OPS,
    sizes: Optional[Sequence[int]] = None,
    *,
    compiled_ops: Sequence[int] = COMPILED_OPS,
    repeat: int = 10,
) -> FusionResult:
    """Time the chain eager, fused by hand (Triton) and fused by ``torch.compile``.

    Two sweeps: chain length ``chain_ops`` at ``n_elems`` (default 2**28 fp32 on a GPU, far beyond
    the L2; 2**12 on a CPU), and tensor size ``sizes`` at 4 ops (from launch-bound to
    bandwidth-bound). Each fused result is checked against eager PyTorch (``*_max_abs_error``).
    """
    import torch

    gpu = harness.on_gpu()
    if n_elems is None:
        # the eager chain holds the input and two full-size intermediates: at most 10 % of free memory each
        n_elems = min(GPU_ELEMS, int(0.1 * harness.free_device_bytes()) // FLOAT_BYTES) if gpu else CPU_ELEMS
    n = _check.integer("n_elems", n_elems, minimum=1, maximum=2**31 - 1)
    sizes = [int(m) for m in (sizes if sizes is not None else (GPU_SIZES if gpu else CPU_SIZES))]
    dev = harness.device()
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand(n, generator=gen, device=dev)
    y = torch.empty_like(x)
    spacer, why = _spacer()
    chain = tuple(_point(n, int(k), x, y, int(k) in compiled_ops, repeat, spacer) for k in chain_ops)
    del x, y
    size_points = []
    for m in sizes:
        xs = torch.rand(m, generator=gen, device=dev)
        size_points.append(_point(m, SIZE_SWEEP_OPS, xs, torch.empty_like(xs), False, repeat))
    note = (f"chain sweep: a {SPACER_CYCLES:,}-cycle GPU sleep before each timed call hides the host's work "
            "(kernel time); size sweep: no spacer (the host's launch cost included)") if spacer else (
            f"no spacer ({why}): the host's work before the first kernel is inside the events")
    return FusionResult(n, FLOAT_BYTES, harness.device_name(), not gpu, chain, tuple(size_points),
                        chain_spacer_cycles=SPACER_CYCLES if spacer else 0, timing_note=note)


# --------------------------------------------------------------------------------------------
# Reading a record: every ratio recomputed from the raw times and today's model
# --------------------------------------------------------------------------------------------
def fusion_result(record: Mapping) -> Optional[FusionResult]:
    """The record's fusion results, typed, or None when it has none (older records) or they failed."""
    results = record.get("results") if isinstance(record, Mapping) else None
    f = results.get("fusion") if isinstance(results, Mapping) else None
    if not isinstance(f, Mapping) or "error" in f:
        return None
    r = FusionResult.from_record(f)
    return r if r.chain_sweep else None


def _median(timing: Any) -> Optional[float]:
    if isinstance(timing, Spread):
        t = timing.median_s
        if isinstance(t, (int, float)) and math.isfinite(t) and t > 0:
            return float(t)
    return None


def fusion_rows(record: Mapping, bytes_per_s: float, *, sweep: str = "chain_sweep") -> list[dict]:
    """One dict per measured point: measured times [s] of each way, and the model's eager and
    fused times at ``bytes_per_s`` (no launch cost), with the effective bandwidth each way reached
    (the model's bytes over the measured time)."""
    f = fusion_result(record)
    if f is None:
        return []
    rows = []
    for p in getattr(f, sweep):
        est = model.fusion_estimate(p.n_elems, p.n_ops, bytes_per_s, f.elem_bytes)
        row = {"n_elems": p.n_elems, "n_ops": p.n_ops, "eager_bytes": est.eager_bytes, "fused_bytes": est.fused_bytes,
               "model_eager_s": est.eager_s, "model_fused_s": est.fused_s, "compile_s": p.compile_s}
        for way, nbytes in (("eager", est.eager_bytes), ("triton_fused", est.fused_bytes), ("compiled", est.fused_bytes)):
            got = getattr(p, way)
            t = _median(got)
            row[way + "_s"] = t
            row[way + "_bytes_per_s"] = nbytes / t if t else None
            row[way + "_error"] = got.error if isinstance(got, harness.Failed) else None
        rows.append(row)
    return rows


def accuracy_rows(record: Mapping, *, datasheet_bytes_per_s: Optional[float] = None,
                  copy_bytes_per_s: Optional[float] = None) -> list[Row]:
    """The fusion comparisons of the chain sweep (the bandwidth-bound size), labelled:

    - **prediction**: eager and fused times at the catalog's HBM bandwidth (datasheet);
    - **calibrated**: the same at the bandwidth experiment 1's Triton copy reached (a different,
      named micro-benchmark of the same record), for the 4-op chain.

    Falsifiable: a fused kernel slower than ``2 n e / bandwidth`` by more than the tolerance, or
    an eager chain whose time does not grow as ``n_ops`` times the fused one, fails.
    """
    f = fusion_result(record)
    if f is None:
        return []
    from ..models.memory_hierarchy_records import _datasheet_hbm, bandwidths, device_of

    device = device_of(record)
    try:
        ds = datasheet_bytes_per_s or _datasheet_hbm(record)
    except Exception:  # noqa: BLE001 - a record from a GPU the catalog does not have: no prediction
        ds = None
    try:
        cal = copy_bytes_per_s or bandwidths(record)["Triton copy (read + write)"]
    except Exception:  # noqa: BLE001
        cal = None
    out = []
    for bw, label, src in ((ds, "prediction", "datasheet HBM bandwidth"), (cal, "calibrated", "Triton copy bandwidth (experiment 1)")):
        if not bw:
            continue
        for r in fusion_rows(record, bw):
            if label == "calibrated" and r["n_ops"] != SIZE_SWEEP_OPS:
                continue  # the ledger keeps one calibrated chain (4 ops); the predictions cover every length
            for way, pred_key, what in (("eager", "model_eager_s", "eager"),
                                        ("triton_fused", "model_fused_s", "fused Triton"),
                                        ("compiled", "model_fused_s", "torch.compile")):
                t = r[way + "_s"]
                if t is None:
                    continue
                out.append(Row(TOPIC, f"Fusion: {r['n_ops']}-op chain, {what} time",
                               f"{r['n_elems']:,} fp32 elements, bytes / {src}",
                               r[pred_key], t, "s", label, device))
    return out


WAYS = (("eager", "eager PyTorch", "model_eager_s"), ("triton_fused", "fused Triton kernel", "model_fused_s"),
        ("compiled", "torch.compile", "model_fused_s"))


def compare_rows(record: Mapping, bytes_per_s: float, here: Optional[FusionResult] = None,
                 label: str = "prediction") -> list[dict]:
    """Rows for ``widgets.book.compare_table``: for each chain length of the record's chain sweep
    (or, without one, of ``CHAIN_OPS`` at 2**28 elements), each way's model time at ``bytes_per_s``,
    the recorded time and the reader's (``here``, the same chain length, its own size)."""
    from ..units import fmt_time

    rows = fusion_rows(record, bytes_per_s)
    recorded = bool(rows)
    if not recorded:
        rows = [{"n_elems": GPU_ELEMS, "n_ops": k, "model_eager_s": e.eager_s, "model_fused_s": e.fused_s,
                 "eager_s": None, "triton_fused_s": None, "compiled_s": None,
                 "eager_error": None, "triton_fused_error": None, "compiled_error": None}
                for k in CHAIN_OPS for e in [model.fusion_estimate(GPU_ELEMS, k, bytes_per_s)]]
    here_by = {p.n_ops: p for p in (here.chain_sweep if here is not None else ())}
    out = []
    for r in rows:
        for way, name, key in WAYS:
            t, err = r[way + "_s"], r[way + "_error"]
            if (recorded and t is None and err is None) or (not recorded and way == "compiled" and r["n_ops"] not in COMPILED_OPS):
                continue  # not asked for at this length
            h = _median(getattr(here_by[r["n_ops"]], way)) if r["n_ops"] in here_by else None
            out.append(dict(
                quantity=f"{r['n_ops']} op{'s' if r['n_ops'] > 1 else ''}, {name}",
                model=fmt_time(r[key]), label=label,
                reference=fmt_time(t) if t else ("not recorded yet" if not recorded else f"did not run ({err})"),
                ratio=f"{t / r[key]:.2f}" if t else None,
                here=fmt_time(h) if h else None,
            ))
    return out
