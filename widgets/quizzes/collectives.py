"""Quiz: collective communication (answers from widgets.models.collectives and the catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import collectives as cm
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    g = hw.get_gpu("H200-SXM")
    n, size, t = 8, 1 * u.GiB, 5e-3
    algbw = cm.algbw_bytes_per_s(size, t)
    busbw = cm.busbw_bytes_per_s("all_reduce", n, size, t)
    steps = cm.ring_steps("all_reduce", n)
    ring = cm.ring_allreduce_time_s(size, n, g.interconnect_bytes_per_s)
    ops = ("all_reduce", "all_gather", "broadcast")
    factors = {op: cm.busbw_factor(op, n) for op in ops}
    crit = cm.critical_tokens_per_gpu(g.peak("bf16"), cm.roofline_link_bytes_per_s(g, "network"))
    zero = [cm.zero_step_comm_s(7e9, n, stage, g.interconnect_bytes_per_s) for stage in (0, 3)]
    return Quiz(
        topic="collectives",
        note="Every accepted answer below was computed by the book's models and GPU catalog when this page was built.",
        questions=(
            Number(
                prompt=f"An all-reduce of {u.fmt_bytes(size)} on {n} GPUs takes {u.fmt_time(t)}. What is its algorithm bandwidth "
                "(algbw, size / time), in GB/s?",
                value=algbw / u.GIGA, unit="GB/s", rel_tol=0.02,
                why="algbw = S / t, with S in bytes and a decimal GB: 1 GiB is 1.074 GB.",
            ),
            Number(
                prompt="And its bus bandwidth (busbw, as nccl-tests reports it), in GB/s?",
                value=busbw / u.GIGA, unit="GB/s", rel_tol=0.02,
                why=f"busbw = algbw x 2(n-1)/n = algbw x {factors['all_reduce']:g} for an all-reduce on {n} ranks: the bytes each "
                "link carries. busbw, not algbw, compares with the link's bandwidth.",
            ),
            Choice(
                prompt=f"On {n} ranks, which collective has the largest busbw / algbw factor?",
                options=ops, answer=max(range(len(ops)), key=lambda i: factors[ops[i]]),
                why="All-reduce moves each byte twice (reduce-scatter then all-gather): 2(n-1)/n; all-gather (n-1)/n; broadcast 1.",
            ),
            Number(
                prompt=f"How many steps does a ring all-reduce take on {n} ranks?",
                value=steps, unit="steps", rel_tol=0.0, abs_tol=0.4,
                why="n-1 steps of reduce-scatter, then n-1 of all-gather.",
            ),
            Number(
                prompt=f"The ring model: how long does an all-reduce of {u.fmt_bytes(size)} take on {n} {g.name}s at "
                f"{u.fmt_bytes_per_s(g.interconnect_bytes_per_s)} per GPU, with the book's default latencies? Answer in ms.",
                value=ring / u.MS, unit="ms", rel_tol=0.03,
                why="call latency + 2(n-1) step latencies + 2(n-1)/n x S / B: for 1 GiB the bandwidth term dominates.",
            ),
            Number(
                prompt=f"Data parallelism across many nodes of {g.name}s, each node with eight 400 Gb/s adapters "
                f"({u.fmt_bytes_per_s(cm.roofline_link_bytes_per_s(g, 'network'))} per node: also the busbw each GPU sees in a ring "
                "over all eight rails): above how many tokens "
                "per GPU does the backward pass's compute (dense bf16 peak) outlast the gradient all-reduce?",
                value=crit, unit="tokens", rel_tol=0.03,
                why="8 t D F / C against 2 x 2 D F bytes / W: the widths cancel and t* = C / W, the GPU's FLOP per byte of link.",
            ),
            Number(
                prompt="ZeRO-3 (FSDP) against plain data parallelism: how many times the bytes per step does it send?",
                value=zero[1] / zero[0], unit="x", rel_tol=0.02,
                why="The weights are all-gathered again for the backward pass: 3 Psi instead of 2 Psi (Rajbhandari et al. 2020, Section 7).",
            ),
        ),
    )
