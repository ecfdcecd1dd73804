"""The process that torchrun starts once per rank: times collectives like nccl-tests and a
hand-written ring all-reduce, checks every result, and rank 0 writes the JSON.

Launch it yourself on one machine or many (``widgets.experiments.collectives`` does this for you):

    python -m torch.distributed.run --standalone --nproc-per-node 2 \\
        -m widgets.experiments.collectives_worker --out /tmp/collectives.json

Backend: NCCL with one GPU per process, or gloo on the CPU (``--backend gloo``). Sizes follow
nccl-tests: ``S`` is the whole buffer (the output of all_gather, the input of reduce_scatter).
Times are averages over ``--iters`` back-to-back calls (after ``--warmup``; the median, fastest
and slowest of five such batches), averaged over ranks, as nccl-tests reports them. Bandwidths are computed by the caller from these times with
``widgets.models.collectives``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from ..models.collectives import OPS, ring_allreduce_schedule

DTYPE = torch.float32
ELEM_BYTES = 4
BATCHES = 5
ENV_KEYS = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NCCL_ALGO", "NCCL_PROTO", "OMP_NUM_THREADS")

_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _parse(argv=None):
    p = argparse.ArgumentParser(prog="collectives_worker", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file rank 0 writes")
    p.add_argument("--backend", choices=("nccl", "gloo"), default=None, help="default: nccl with CUDA, else gloo")
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated collectives for the sweep ('' for none)")
    p.add_argument("--sizes", default="", help="comma-separated sizes S [B] for the sweep")
    p.add_argument("--ring-sizes", default="", help="comma-separated sizes [B] for the hand-written ring ('' for none)")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--small-iters", type=int, default=50, help="iterations for sizes <= 16 MiB")
    return p.parse_args(argv)


def _ints(text: str) -> list:
    return [int(float(x)) for x in text.split(",") if x.strip()]


class Ctx:
    """What every measurement needs: rank, world size, device, timer."""

    def __init__(self, backend: str):
        self.rank = int(os.environ.get("RANK", "0"))
        self.n = int(os.environ.get("WORLD_SIZE", "1"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        self.cuda = backend == "nccl"
        if self.cuda:
            self.device = torch.device("cuda", local)
            torch.cuda.set_device(self.device)
            dist.init_process_group("nccl", device_id=self.device, timeout=_dt.timedelta(seconds=300))
        else:
            self.device = torch.device("cpu")
            dist.init_process_group("gloo", timeout=_dt.timedelta(seconds=120))
        self.backend = backend

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)
        dist.barrier()

    def _batch_s(self, fn, iters: int) -> tuple:
        """``(device, host)`` seconds per call of one batch of ``iters`` back-to-back calls.

        device: CUDA events around the batch on a GPU (the wall clock on the CPU). host: the wall
        clock around the Python loop that issues the calls, before waiting for the device: the
        host-side cost of one call (torch.distributed, the NCCL enqueue, the kernel launch) when it
        is below the device time, or equal to it once the launch queue fills. On the CPU (gloo
        blocks until each call ends) the two are the same measurement."""
        self.sync()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            h0 = time.perf_counter()
            for _ in range(iters):
                fn()
            host = (time.perf_counter() - h0) / iters
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e-3 / iters, host
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t = (time.perf_counter() - t0) / iters
        return t, t

    def _mean_over_ranks(self, values) -> list:
        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return [float(x) / self.n for x in t.tolist()]

    def time_per_call_s(self, fn, iters: int, warmup: int, batches: int = BATCHES) -> dict:
        """Seconds per call: ``batches`` runs of ``iters`` back-to-back calls, each averaged; the
        median, fastest and slowest batch on each rank, each then averaged over ranks (nccl-tests
        reports the mean over ranks); and the SM clock and power read after each batch (NVML)."""
        return self.time_pair_s(fn, None, iters, warmup, batches)[0]

    def time_pair_s(self, fn_a, fn_b, iters: int, warmup: int, batches: int = BATCHES) -> tuple:
        """Like :meth:`time_per_call_s` for two functions, their batches interleaved (a, b, a, b,
        ...) so that both see the same clocks and the same neighbours."""
        fns = [f for f in (fn_a, fn_b) if f is not None]
        for f in fns:
            for _ in range(warmup):
                f()
        per = [[] for _ in fns]
        host = [[] for _ in fns]
        clocks, powers = [], []
        for _ in range(batches):
            for i, f in enumerate(fns):
                t_dev, t_host = self._batch_s(f, iters)
                per[i].append(t_dev)
                host[i].append(t_host)
            c, w = _nvml_sample(self.device) if self.cuda else (None, None)
            if c is not None:
                clocks.append(c)
            if w is not None:
                powers.append(w)
        out = []
        for times, host_times in zip(per, host):
            med, lo, hi, h = self._mean_over_ranks([statistics.median(times), min(times), max(times), statistics.median(host_times)])
            out.append({"time_s": med, "time_min_s": lo, "time_max_s": hi, "batches": batches, "host_time_s": h,
                        "sm_clock_mhz": statistics.median(clocks) if clocks else None,
                        "power_w": statistics.median(powers) if powers else None})  # fmt: skip
        return tuple(out) if fn_b is not None else (out[0],)

    def all_true(self, ok: bool) -> bool:
        """True when ``ok`` holds on every rank."""
        t = torch.tensor([1 if ok else 0], dtype=torch.int32, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return bool(t.item())


def _nvml_sample(device) -> tuple:
    """(SM clock [MHz], power [W]) of ``device`` now, from NVML through torch; ``(None, None)``
    where NVML (pynvml) is not available."""
    clock = power = None
    try:
        clock = float(torch.cuda.clock_rate(device))
    except Exception:  # no pynvml, or no NVML on this machine: record null
        clock = None
    try:
        power = float(torch.cuda.power_draw(device)) / 1000.0  # mW -> W
    except Exception:
        power = None
    return clock, power


def _elems(size_bytes: int, n: int) -> int:
    """Element count of the whole buffer, a multiple of n (so it splits into n shards)."""
    return max(n, (size_bytes // ELEM_BYTES) // n * n)


def _blocks(values, shard: int, device) -> torch.Tensor:
    """A buffer of ``len(values)`` shards, shard ``j`` filled with ``values[j]``."""
    v = torch.as_tensor(values, dtype=DTYPE, device=device)
    return v.repeat_interleave(shard)


# --------------------------------------------------------------------------------------------
# One collective: build buffers, check the result once, time it
# --------------------------------------------------------------------------------------------
def _collective(op: str, ctx: Ctx, elems: int):
    """Return ``(run, check)``: ``run()`` does one call on zero-filled buffers (timing);
    ``check()`` runs it once on patterned data and says whether the result is right."""
    n, r, dev = ctx.n, ctx.rank, ctx.device
    shard = elems // n
    tri = n * (n + 1) / 2  # 1 + 2 + ... + n: the sum of every rank's (rank + 1)

    if op == "all_reduce":
        buf = torch.zeros(elems, dtype=DTYPE, device=dev)

        def check():
            x = torch.full((elems,), float(r + 1), dtype=DTYPE, device=dev)
            dist.all_reduce(x)
            return bool(torch.all(x == tri))

        return (lambda: dist.all_reduce(buf)), check
    if op == "all_gather":
        out = torch.empty(elems, dtype=DTYPE, device=dev)
        inp = torch.zeros(shard, dtype=DTYPE, device=dev)

        def check():
            o = torch.empty(elems, dtype=DTYPE, device=dev)
            _all_gather(o, torch.full((shard,), float(r + 1), dtype=DTYPE, device=dev))
            return bool(torch.equal(o, _blocks([j + 1 for j in range(n)], shard, dev)))

        return (lambda: _all_gather(out, inp)), check
    if op == "reduce_scatter":
        out = torch.empty(shard, dtype=DTYPE, device=dev)
        inp = torch.zeros(elems, dtype=DTYPE, device=dev)

        def check():
            o = torch.empty(shard, dtype=DTYPE, device=dev)
            _reduce_scatter(o, _blocks([(r + 1) * (j + 1) for j in range(n)], shard, dev))
            return bool(torch.all(o == tri * (r + 1)))

        return (lambda: _reduce_scatter(out, inp)), check
    if op == "all_to_all":
        out = torch.empty(elems, dtype=DTYPE, device=dev)
        inp = torch.zeros(elems, dtype=DTYPE, device=dev)

        def check():
            o = torch.empty(elems, dtype=DTYPE, device=dev)
            dist.all_to_all_single(o, _blocks([r * n + j for j in range(n)], shard, dev))
            return bool(torch.equal(o, _blocks([j * n + r for j in range(n)], shard, dev)))

        return (lambda: dist.all_to_all_single(out, inp)), check
    if op == "broadcast":
        buf = torch.zeros(elems, dtype=DTYPE, device=dev)

        def check():
            x = torch.full((elems,), 7.0 if r == 0 else 0.0, dtype=DTYPE, device=dev)
            dist.broadcast(x, src=0)
            return bool(torch.all(x == 7.0))

        return (lambda: dist.broadcast(buf, src=0)), check
    if op == "reduce":
        buf = torch.zeros(elems, dtype=DTYPE, device=dev)

        def check():
            x = torch.full((elems,), float(r + 1), dtype=DTYPE, device=dev)
            dist.reduce(x, dst=0)
            return bool(torch.all(x == tri)) if r == 0 else True

        return (lambda: dist.reduce(buf, dst=0)), check
    raise ValueError(f"op must be one of {OPS}, got {op!r}")


def sweep(ctx: Ctx, ops, sizes, iters: int, warmup: int, small_iters: int) -> dict:
    out = {}
    for op in ops:
        rows = []
        for size in sizes:
            elems = _elems(size, ctx.n)
            run, check = _collective(op, ctx, elems)
            correct = ctx.all_true(check())
            it = small_iters if elems * ELEM_BYTES <= 16 * 2**20 else iters
            timing = ctx.time_per_call_s(run, it, warmup)
            t = timing["time_s"]
            rows.append({"size_bytes": elems * ELEM_BYTES, "correct": correct, "iters": it, **timing})
            if ctx.rank == 0:
                print(f"{op:>15} {elems * ELEM_BYTES:>12d} B  {t * 1e6:10.1f} us  {'ok' if correct else 'WRONG'}", flush=True)
            del run, check
        out[op] = rows
    return out


# --------------------------------------------------------------------------------------------
# The hand-written ring all-reduce
# --------------------------------------------------------------------------------------------
def ring_allreduce_(x: torch.Tensor, ctx: Ctx, schedule, recv: torch.Tensor) -> torch.Tensor:
    """Sum ``x`` over all ranks in place with 2(n-1) point-to-point steps (the model's schedule):
    n-1 reduce-scatter steps (receive a chunk, add it to ours), then n-1 all-gather steps
    (receive a finished chunk straight into place). No host synchronisation: each step's sends
    and receives are queued on the device in order."""
    n, r = ctx.n, ctx.rank
    chunks = x.view(n, -1)
    nxt, prv = (r + 1) % n, (r - 1) % n
    for transfers in schedule:
        send = transfers[r]  # what I send this step
        incoming = transfers[prv]  # what my left neighbour sends me
        into = recv if send.phase == "reduce_scatter" else chunks[incoming.chunk]
        ops = [dist.P2POp(dist.isend, chunks[send.chunk], nxt), dist.P2POp(dist.irecv, into, prv)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        if send.phase == "reduce_scatter":
            chunks[incoming.chunk].add_(recv)
    return x


def ring(ctx: Ctx, sizes, iters: int, warmup: int, small_iters: int) -> list:
    if not sizes or ctx.n < 2:  # a ring needs two ranks
        return []
    schedule = ring_allreduce_schedule(ctx.n)
    rows = []
    for size in sizes:
        elems = _elems(size, ctx.n)
        gen = torch.Generator(device=ctx.device).manual_seed(1234 + ctx.rank)
        data = torch.randint(0, 8, (elems,), generator=gen, device=ctx.device).to(DTYPE)
        recv = torch.empty(elems // ctx.n, dtype=DTYPE, device=ctx.device)
        mine, ref = data.clone(), data.clone()
        ring_allreduce_(mine, ctx, schedule, recv)
        dist.all_reduce(ref)
        correct = ctx.all_true(bool(torch.equal(mine, ref)))
        it = small_iters if elems * ELEM_BYTES <= 16 * 2**20 else iters
        work = torch.zeros_like(data)
        def ring_call(w=work, buf=recv):
            return ring_allreduce_(w, ctx, schedule, buf)

        def library_call(w=work):
            return dist.all_reduce(w)

        tr, tl = ctx.time_pair_s(ring_call, library_call, it, warmup)
        t_ring, t_lib = tr["time_s"], tl["time_s"]
        rows.append({"size_bytes": elems * ELEM_BYTES, "ring_time_s": t_ring, "library_time_s": t_lib, "correct": correct, "iters": it,
                     "ring_time_min_s": tr["time_min_s"], "ring_time_max_s": tr["time_max_s"],
                     "library_time_min_s": tl["time_min_s"], "library_time_max_s": tl["time_max_s"],
                     "batches": tr["batches"], "sm_clock_mhz": tr["sm_clock_mhz"], "power_w": tr["power_w"],
                     "ring_host_time_s": tr["host_time_s"], "library_host_time_s": tl["host_time_s"]})  # fmt: skip
        if ctx.rank == 0:
            print(f"{'ring':>15} {elems * ELEM_BYTES:>12d} B  {t_ring * 1e6:10.1f} us  (library {t_lib * 1e6:.1f} us)  "
                  f"{'ok' if correct else 'WRONG'}", flush=True)
        del data, recv, mine, ref, work
    return rows


def _nccl_version():
    try:
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
    except Exception:  # informational only
        return None


def main(argv=None) -> int:
    args = _parse(argv)
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    ctx = Ctx(backend)
    ops = [o for o in args.ops.split(",") if o.strip()]
    for o in ops:
        if o not in OPS:
            raise SystemExit(f"--ops: {o!r} is not one of {', '.join(OPS)}")
    t0 = time.time()
    result = {
        "backend": backend,
        "world_size": ctx.n,
        "device": torch.cuda.get_device_name(ctx.device) if ctx.cuda else "CPU",
        "nccl_version": _nccl_version() if ctx.cuda else None,
        "torch": torch.__version__,
        "dtype": "float32",
        "env": {k: os.environ.get(k) for k in ENV_KEYS},
        "timing": (
            f"median (and fastest, slowest) of {BATCHES} batches of back-to-back calls ({args.iters} per batch, "
            f"{args.small_iters} at <= 16 MiB, after {args.warmup} warm-up), each batch averaged, then the mean over ranks; "
            "the hand-written ring and all_reduce batches interleaved; SM clock and power (NVML) read after each batch, median; "
            "host_time_s: the wall clock around the loop that issues a batch's calls (before waiting for the GPU), per call, median"
        ),
        "sweep": sweep(ctx, ops, _ints(args.sizes), args.iters, args.warmup, args.small_iters),
        "ring": ring(ctx, _ints(args.ring_sizes), args.iters, args.warmup, args.small_iters),
    }
    result["worker_wall_s"] = time.time() - t0
    if ctx.rank == 0:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
