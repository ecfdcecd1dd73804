"""Collective-communication experiments, run through ``torch.distributed`` under torchrun.

Each ``measure_*`` function starts ``python -m torch.distributed.run --standalone
--nproc-per-node N -m widgets.experiments.collectives_worker ...`` as a subprocess, reads the JSON
its rank 0 writes, and turns the times into bandwidths with ``widgets.models.collectives`` (the
nccl-tests definitions). The same worker runs unchanged on many nodes.

- Two or more GPUs: NCCL, one process per GPU, sizes up to 1 GiB.
- Otherwise (a CPU, or a single GPU): the gloo backend on the CPU with ``CPU_RANKS`` local
  processes and small sizes, so it runs in CI in seconds. Those numbers show the method, not a
  GPU interconnect; the chapter shows the recorded two-H200 result beside them.

Which of the two is chosen from the device's capabilities (``harness.capabilities()``: GPU count
and whether torch has NCCL), never from its name. Results are frozen ``harness.Result`` types;
:class:`CollectivesResults` is the topic's record (``from_record`` reads it back typed).
"""

from __future__ import annotations

import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..models import collectives as model
from ..units import GiB, KiB, MiB, fmt_bytes
from . import harness

CPU_RANKS = 4
# The reference record of this chapter: two H200s (widgets/data/h200x2/collectives.json); a
# single-GPU machine runs the scaled-down gloo experiment on its CPU instead.
REFERENCE_GPU = "h200x2"
GPU_SWEEP_SIZES = tuple(4**k * KiB for k in range(11))  # 1 KiB ... 1 GiB, x4
CPU_SWEEP_SIZES = tuple(8**k * 4 * KiB for k in range(4))  # 4 KiB ... 2 MiB, x8 (the CPU run: 8 s, not 15 s, with 16 MiB)
GPU_RING_SIZES = (1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1 * GiB)
CPU_RING_SIZES = (2 * MiB,)
# Settings the worker always runs with: no NVLink SHARP (multicast) in NCCL or in torch's
# symmetric memory, so the numbers are those of plain ring/tree NCCL on any machine.
WORKER_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# Where and how to run
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """Backend, process count and sizes for this machine."""

    backend: str
    nproc: int
    sweep_sizes: tuple
    ring_sizes: tuple
    iters: int
    warmup: int
    small_iters: int
    reason: str


def plan(nproc: Optional[int] = None) -> Plan:
    """NCCL across all GPUs when there are at least two and torch has NCCL; else gloo on the CPU,
    scaled down (and why)."""
    cap = harness.capabilities()
    gpus = cap.gpu_count
    if gpus >= 2 and cap.nccl:
        k = gpus if nproc is None else int(nproc)
        if not 2 <= k <= gpus:
            raise ValueError(f"nproc must be in [2, {gpus}] on this machine, got {nproc!r}")
        return Plan("nccl", k, GPU_SWEEP_SIZES, GPU_RING_SIZES, 20, 5, 50, f"NCCL across {k} GPUs")
    k = CPU_RANKS if nproc is None else int(nproc)
    if not 2 <= k <= 16:
        raise ValueError(f"nproc must be in [2, 16] for the CPU run, got {nproc!r}")
    why = "one GPU" if gpus == 1 else "no GPU" if gpus == 0 else f"{gpus} GPUs but no NCCL in this torch"
    return Plan("gloo", k, CPU_SWEEP_SIZES, CPU_RING_SIZES, 3, 1, 5, f"{why} here: gloo across {k} CPU processes, scaled down")


def worker_command(p: Plan, out: str, ops: Sequence[str], sizes: Sequence[int], ring_sizes: Sequence[int]) -> list:
    """The torchrun command line that runs the worker."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(p.nproc),
        "-m", "widgets.experiments.collectives_worker",
        "--out", out, "--backend", p.backend,
        "--ops", ",".join(ops), "--sizes", ",".join(str(int(s)) for s in sizes),
        "--ring-sizes", ",".join(str(int(s)) for s in ring_sizes),
        "--iters", str(p.iters), "--warmup", str(p.warmup), "--small-iters", str(p.small_iters),
    ]  # fmt: skip


def worker_env(p: Plan) -> dict:
    env = dict(os.environ)
    env.update(WORKER_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [x for x in [env.get("PYTHONPATH")] if x])
    if p.backend == "gloo":
        env.setdefault("OMP_NUM_THREADS", "1")
        if platform.system() == "Linux":
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # all ranks are local
    return env


def launch(p: Plan, ops: Sequence[str], sizes: Sequence[int], ring_sizes: Sequence[int], *, timeout_s: float = 900) -> dict:
    """Run the worker under torchrun; return what its rank 0 wrote."""
    with tempfile.TemporaryDirectory(prefix="collectives_") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = worker_command(p, out, ops, sizes, ring_sizes)
        proc = subprocess.Popen(cmd, env=worker_env(p), cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)  # fmt: skip
        try:
            log, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # torchrun and the ranks it started
            log, _ = proc.communicate()
            raise RuntimeError(f"the collectives worker ran past {timeout_s} s:\n{log[-3000:]}") from None
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"the collectives worker failed (exit {proc.returncode}):\n{log[-3000:]}")
        with open(out) as f:
            result = json.load(f)
    result["command"] = " ".join(cmd[:1] + [c if c != out else "OUT.json" for c in cmd[1:]])
    result["plan"] = p.reason
    return result


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPoint(harness.Result):
    """One row of the nccl-tests-style table."""

    op: str
    n: int
    size_bytes: int
    time_s: float
    correct: bool
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    time_min_s: Optional[float] = None  # fastest and slowest batch (None in records made before they were kept)
    time_max_s: Optional[float] = None
    sm_clock_mhz: Optional[float] = None  # NVML, median over the batches (None without a GPU or pynvml)
    power_w: Optional[float] = None
    host_time_s: Optional[float] = None  # wall clock of the Python loop issuing the calls, per call (None in older records)


@dataclass(frozen=True)
class Sweep(harness.Result):
    backend: str
    n: int
    device: str
    points: tuple[SweepPoint, ...] = ()
    info: Optional[dict] = None

    def rows(self, op: str) -> list:
        return [p for p in self.points if p.op == op]

    def busbw_at(self, op: str, size_bytes: int) -> float:
        """busbw [B/s] at the sweep size closest to ``size_bytes`` (by ratio)."""
        rows = self.rows(op)
        if not rows:
            raise ValueError(f"op {op!r} is not in this sweep")
        return min(rows, key=lambda p: abs(math.log(p.size_bytes / size_bytes))).busbw_bytes_per_s

    @property
    def all_correct(self) -> bool:
        return all(p.correct for p in self.points)

    def series(self) -> dict:
        """``{op: (sizes_bytes, times_s, n)}``, as ``widgets.ui.collectives.sweep_figure`` takes it."""
        ops = dict.fromkeys(p.op for p in self.points)
        return {op: ([p.size_bytes for p in self.rows(op)], [p.time_s for p in self.rows(op)], self.n) for op in ops}


def sweep_from_worker(result: dict) -> Sweep:
    """Bandwidths by the nccl-tests definitions, from the worker's times."""
    n = int(result["world_size"])
    points = []
    for op, rows in result.get("sweep", {}).items():
        for r in rows:
            points.append(
                SweepPoint(
                    op, n, int(r["size_bytes"]), float(r["time_s"]), bool(r["correct"]),
                    model.algbw_bytes_per_s(r["size_bytes"], r["time_s"]),
                    model.busbw_bytes_per_s(op, n, r["size_bytes"], r["time_s"]),
                    r.get("time_min_s"), r.get("time_max_s"), r.get("sm_clock_mhz"), r.get("power_w"), r.get("host_time_s"),
                )
            )  # fmt: skip
    return Sweep(result["backend"], n, result["device"], tuple(points),
                 info={k: v for k, v in result.items() if k not in ("sweep", "ring")})


@dataclass(frozen=True)
class RingPoint(harness.Result):
    """The hand-written ring all-reduce against the library's all_reduce, one size."""

    n: int
    size_bytes: int
    ring_time_s: float
    library_time_s: float
    correct: bool
    ring_time_min_s: Optional[float] = None
    ring_time_max_s: Optional[float] = None
    library_time_min_s: Optional[float] = None
    library_time_max_s: Optional[float] = None
    ring_host_time_s: Optional[float] = None  # wall clock of the Python loop issuing the calls (None in older records)
    library_host_time_s: Optional[float] = None

    @property
    def ring_busbw_bytes_per_s(self) -> float:
        return model.busbw_bytes_per_s("all_reduce", self.n, self.size_bytes, self.ring_time_s)

    @property
    def library_busbw_bytes_per_s(self) -> float:
        return model.busbw_bytes_per_s("all_reduce", self.n, self.size_bytes, self.library_time_s)

    @property
    def slowdown(self) -> float:
        """Ring time over library time (1 = as fast as NCCL/gloo)."""
        return self.ring_time_s / self.library_time_s

    def to_record(self) -> dict:
        # the derived rates are kept in the record for readers of the JSON (recomputed on reading)
        return {**super().to_record(), "ring_busbw_bytes_per_s": self.ring_busbw_bytes_per_s,
                "library_busbw_bytes_per_s": self.library_busbw_bytes_per_s, "slowdown": self.slowdown}


RING_SPREAD_KEYS = ("ring_time_min_s", "ring_time_max_s", "library_time_min_s", "library_time_max_s", "ring_host_time_s", "library_host_time_s")


def _ring_point(n: int, r: dict) -> RingPoint:
    """A RingPoint from a worker row or a recorded one (the spread is None in older records)."""
    spread = (r.get(k) for k in RING_SPREAD_KEYS)
    return RingPoint(n, int(r["size_bytes"]), float(r["ring_time_s"]), float(r["library_time_s"]), bool(r["correct"]), *spread)


def ring_from_worker(result: dict) -> list:
    n = int(result["world_size"])
    return [_ring_point(n, r) for r in result.get("ring", [])]


@dataclass(frozen=True)
class AlphaBetaFit(harness.Result):
    """``t = latency_s + S / algbw_bytes_per_s`` fitted to one op's sweep."""

    op: str
    n: int
    latency_s: float  # the whole call's fixed cost
    algbw_bytes_per_s: float  # asymptotic algorithm bandwidth
    busbw_bytes_per_s: float  # the same, as bus bandwidth
    step_latency_s: float  # latency_s / ring steps: one step's alpha

    def predict_s(self, size_bytes) -> float:
        return self.latency_s + size_bytes / self.algbw_bytes_per_s


@dataclass(frozen=True)
class CollectivesResults(harness.Result):
    """The topic's record (``widgets/data/h200x2/collectives.json``'s ``results``), typed: the
    sweep's rows, the ring comparison, their fits and a few summary figures."""

    backend: str
    world_size: int
    device: str
    sweep: tuple[SweepPoint, ...]
    ring: tuple[RingPoint, ...]
    info: Optional[dict] = None
    size_convention: str = ""
    all_correct: Optional[bool] = None
    ring_correct: Optional[bool] = None
    ring_max_slowdown_at_256MiB_and_above: Optional[float] = None
    fits: Optional[dict[str, Optional[AlphaBetaFit]]] = None
    all_reduce_largest_size_bytes: Optional[int] = None
    all_reduce_busbw_at_largest_bytes_per_s: Optional[float] = None

    @classmethod
    def build(cls, sweep: Sweep, ring: Sequence[RingPoint]) -> CollectivesResults:
        """A sweep, the ring comparison and their fits (what ``run_all`` records)."""
        fits = fit_sweep(sweep)
        big = [r for r in ring if r.size_bytes >= 256 * MiB]
        largest = max(sweep.rows("all_reduce"), key=lambda p: p.size_bytes) if sweep.rows("all_reduce") else None
        return cls(
            backend=sweep.backend, world_size=sweep.n, device=sweep.device, info=sweep.info,
            size_convention="S = whole buffer, as nccl-tests prints it: all_gather output, reduce_scatter input, all_to_all send buffer",
            sweep=tuple(sweep.points), all_correct=sweep.all_correct, ring=tuple(ring), ring_correct=all(r.correct for r in ring),
            ring_max_slowdown_at_256MiB_and_above=max((r.slowdown for r in big), default=None), fits=fits,
            all_reduce_largest_size_bytes=largest.size_bytes if largest else None,
            all_reduce_busbw_at_largest_bytes_per_s=largest.busbw_bytes_per_s if largest else None,
        )  # fmt: skip

    @property
    def as_sweep(self) -> Sweep:
        """The sweep's rows as a :class:`Sweep` (rows per op, bus bandwidth at a size, the series)."""
        return Sweep(self.backend, int(self.world_size), self.device, tuple(self.sweep), info=self.info or {})


RESULTS = CollectivesResults  # the topic's result type (widgets.book.setup reads the record with it)


def from_record(results: dict) -> tuple:
    """``(Sweep, [RingPoint])`` from a recorded ``run_all()`` result (``harness.load_reference``)."""
    r = results if isinstance(results, CollectivesResults) else CollectivesResults.from_record(results)
    return r.as_sweep, list(r.ring)


# --------------------------------------------------------------------------------------------
# Experiments
# --------------------------------------------------------------------------------------------
def measure_sweep(ops: Sequence[str] = model.OPS, sizes: Optional[Sequence[int]] = None, nproc: Optional[int] = None) -> Sweep:
    """Every collective in ``ops`` over message sizes ``S`` (nccl-tests convention): time per
    call, algbw, busbw and a correctness check, like nccl-tests' ``*_perf`` tables."""
    p = plan(nproc)
    ops = [model._op(o) for o in ops]
    result = launch(p, ops, sizes or p.sweep_sizes, ())
    return sweep_from_worker(result)


def measure_collectives(nproc: Optional[int] = None) -> CollectivesResults:
    """Both experiments in one launch (one process start-up): the sweep of every collective and
    the hand-written ring all-reduce (isend/irecv, ``2(n-1)`` steps) checked against
    ``dist.all_reduce`` on the same random data and timed against it, with their fits."""
    p = plan(nproc)
    result = launch(p, model.OPS, p.sweep_sizes, p.ring_sizes)
    return CollectivesResults.build(sweep_from_worker(result), ring_from_worker(result))


def fit_sweep(sweep: Sweep, ops: Optional[Sequence[str]] = None) -> dict:
    """Alpha and beta fitted to each op of a sweep (``widgets.models.collectives.fit_alpha_beta``);
    ``None`` for an op whose times do not grow with size (a noisy CPU run can do that)."""
    fits = {}
    for op in ops or sorted({p.op for p in sweep.points}, key=model.OPS.index):
        rows = sweep.rows(op)
        try:
            lat, bw = model.fit_alpha_beta([p.size_bytes for p in rows], [p.time_s for p in rows])
        except ValueError:
            fits[op] = None
            continue
        steps = max(1, model.ring_steps(op, sweep.n))
        fits[op] = AlphaBetaFit(op, sweep.n, lat, bw, bw * model.busbw_factor(op, sweep.n), lat / steps)
    return fits


def format_table(sweep: Sweep) -> str:
    """The sweep as nccl-tests prints it: size, time, algbw, busbw (GB/s, decimal), check."""
    lines = [f"# {sweep.backend}, {sweep.n} ranks, {sweep.device}; size S = whole buffer (nccl-tests)",
             f"# {'op':>14} {'size (B)':>12} {'time (us)':>11} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}  check"]  # fmt: skip
    for p in sweep.points:
        lines.append(
            f"{p.op:>16} {p.size_bytes:>12d} {p.time_s * 1e6:>11.1f} {p.algbw_bytes_per_s / 1e9:>13.2f} "
            f"{p.busbw_bytes_per_s / 1e9:>13.2f}  {'ok' if p.correct else 'WRONG'}"
        )
    return "\n".join(lines)


def results_dict(sweep: Sweep, ring: list) -> dict:
    """A sweep, the ring comparison and their fits as the record's JSON (``CollectivesResults``)."""
    return CollectivesResults.build(sweep, ring).to_record()


def run_all() -> CollectivesResults:
    """Both experiments and the fits (``python -m widgets.measure``)."""
    return measure_collectives()


# --------------------------------------------------------------------------------------------
# The accuracy ledger
# --------------------------------------------------------------------------------------------
def _results(record: dict) -> dict:
    """The ``results`` of a record (``harness.load_reference``), or ``record`` if it is already that."""
    if not isinstance(record, dict):
        raise ValueError(f"record must be a dict (a collectives record or its 'results'), got {type(record).__name__}")
    res = record.get("results", record)
    for key in ("sweep", "world_size", "backend"):
        if key not in res:
            raise ValueError(f"record must have results[{key!r}] (a collectives record), got keys {sorted(res)}")
    return res


def accuracy_rows(record: dict) -> list:
    """Every comparison the chapter makes, recomputed from the raw times in ``record`` with
    today's models (works with records made before and after the spread and NVML fields). A gloo
    (CPU) record gives no rows.

    - **prediction** (NCCL runs on a catalog GPU): each collective's time at the largest size
      from the datasheet link bandwidth and NCCL's own latency model; the smallest all-reduce's
      time from NCCL's latency model (the measured one is far off: most likely the host-side cost
      of a call from Python, which records made from now on carry as ``host_time_s``).
    - **calibrated**: each other collective at the largest size from the all-reduce bus bandwidth
      measured at that size (a different call); the hand-written ring from ``dist.all_reduce``
      timed in the same run (>= 256 MiB).
    - **fit**: the alpha-beta line fitted to the all-reduce sweep, at the middle size, and its
      asymptotic bus bandwidth against the largest measured one.
    """
    from ..accuracy import Row
    from ..hardware import catalog_name_for, get_gpu

    res = _results(record)
    prov = record.get("provenance", {}) if "results" in record else {}
    if res["backend"] != "nccl":
        # gloo on a CPU (a machine with fewer than two GPUs) times loopback sockets and shared cores:
        # the chapter compares nothing with it, so the ledger gets no rows from it.
        return []
    sweep, ring = from_record(res)
    n = sweep.n
    gpu_name = prov.get("gpu") or sweep.device
    device = f"{n} × {gpu_name} ({sweep.backend})"
    rows = []
    by_op = {op: sorted(sweep.rows(op), key=lambda p: p.size_bytes) for op in model.OPS if sweep.rows(op)}
    if "all_reduce" not in by_op:
        return rows
    ar = by_op["all_reduce"]
    big, small = ar[-1], ar[0]
    catalog = catalog_name_for(gpu_name) if sweep.backend == "nccl" else None
    link = get_gpu(catalog).interconnect_bytes_per_s if catalog else None
    def add(quantity, inputs, predicted, measured, unit, label, note):
        rows.append(Row("collectives", quantity, inputs, predicted, measured, unit, label, device, note))

    if link:
        src = (f"{catalog} datasheet link {link / 1e9:.0f} GB/s per direction; NCCL latencies "
               f"{model.NCCL_CALL_LATENCY_S * 1e6:.1f} us + {model.NCCL_NVLINK_STEP_LATENCY_S * 1e6:.2f} us/step")
        for op, pts in by_op.items():
            p = pts[-1]
            t = model.collective_time_s(op, p.size_bytes, n, link, model.NCCL_NVLINK_STEP_LATENCY_S, "ring", model.NCCL_CALL_LATENCY_S)
            add(f"{op} time, {fmt_bytes(p.size_bytes)}", f"{n} ranks; {src}", t * 1e3, p.time_s * 1e3, "ms", "prediction",
                "the datasheet counts raw signalling; NCCL drives the links with a few channels that also read, add and write HBM")
        t = model.ring_allreduce_time_s(small.size_bytes, n, link)
        add(f"all_reduce time, {fmt_bytes(small.size_bytes)}", f"{n} ranks; NCCL's latency model (tuning.cc)", t * 1e6,
            small.time_s * 1e6, "us", "prediction",
            "the measured time is a call from Python through torch.distributed, back to back: most likely host-side launch cost "
            "(not measured in this record), not NCCL's kernel latency")
    g = get_gpu(catalog) if catalog else None
    per_link = model.NCCL_NVLINK_BYTES_PER_S_PER_LINK.get(g.arch) if g else None
    if per_link and g.interconnect_links:
        # NCCL's own tuner model (tuning.cc): its NVLink bandwidth (links x topo.h's per-link figure), its
        # latencies and protocols; sizes from 16 MiB up (below, a call from Python costs more than the
        # collective: the smallest sizes all take about the same time).
        nccl_bw = g.interconnect_links * per_link
        for p in ar:
            if p.size_bytes < 16 * MiB:
                continue
            c = model.nccl_model_choice("all_reduce", p.size_bytes, n, nccl_bw)
            add(f"all_reduce time, {fmt_bytes(p.size_bytes)}, NCCL's tuner model",
                f"{n} ranks; {g.interconnect_links} NVLink links × {per_link / 1e9:.1f} GB/s (NCCL topo.h) = {nccl_bw / 1e9:.1f} GB/s; "
                f"tuning.cc latencies and protocol factors; chosen: {c.algorithm} {c.protocol}",
                c.time_s * 1e6, p.time_s * 1e6, "us", "prediction",
                "NCCL's own estimate of its time; it leaves out how well the channels fill the links, protocol overheads "
                "beyond its factors, perhaps HBM traffic, and the host's call cost")
    for op, pts in by_op.items():
        p = pts[-1]
        if op == "all_reduce" or p.size_bytes != big.size_bytes or model.busbw_factor(op, n) == 0:
            continue
        t = model.time_from_busbw_s(op, n, p.size_bytes, big.busbw_bytes_per_s)
        add(f"{op} time, {fmt_bytes(p.size_bytes)}", f"busbw of all_reduce at the same size ({big.busbw_bytes_per_s / 1e9:.0f} GB/s)",
            t * 1e3, p.time_s * 1e3, "ms", "calibrated", "busbw carries over between collectives when the links are the bottleneck")
    for r in ring:
        if r.size_bytes >= 256 * MiB:
            add(f"hand-written ring time, {fmt_bytes(r.size_bytes)}", "dist.all_reduce timed in the same run (same bytes per rank)",
                r.library_time_s * 1e3, r.ring_time_s * 1e3, "ms", "calibrated",
                "the ring adds after each receive through HBM and does not pipeline slices")
    fit = fit_sweep(sweep, ops=("all_reduce",))["all_reduce"]
    if fit:
        mid = min(ar, key=lambda p: abs(math.log(p.size_bytes / (16 * MiB))))
        add(f"all_reduce time, {fmt_bytes(mid.size_bytes)}", f"alpha {fit.latency_s * 1e6:.1f} us and beta fitted to this sweep",
            fit.predict_s(mid.size_bytes) * 1e3, mid.time_s * 1e3, "ms", "fit",
            "alpha is the per-call cost of a call from Python (most likely host-side launch cost), not a link latency")
        add("all_reduce busbw, largest size vs fitted asymptote", "beta fitted to this sweep", fit.busbw_bytes_per_s / 1e9,
            big.busbw_bytes_per_s / 1e9, "GB/s", "fit", "an asymptote is reached only as S grows without bound: it lies above every measured point")
    return rows
