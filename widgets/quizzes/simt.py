"""Quiz: SIMT execution (answers from widgets.models.simt and the catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import simt as sm
from ..quiz import Choice, Number, Quiz

LIMITERS = ("warps", "registers", "shared_memory", "blocks")
LABELS = {"warps": "warp slots", "registers": "registers", "shared_memory": "shared memory", "blocks": "block slots"}


def quiz() -> Quiz:
    g = hw.get_gpu("H200-SXM")
    occ = sm.occupancy(256, 128, arch=g.arch)
    latency_s, bytes_per_warp = 600e-9, 32 * 16 * 2  # two 16-byte loads in flight per thread
    half = sm.littles_law_bytes_per_s(32, g.sms, bytes_per_warp, latency_s, g.hbm_bytes_per_s)
    full = sm.littles_law_bytes_per_s(64, g.sms, bytes_per_warp, latency_s, g.hbm_bytes_per_s)
    gain = (float(full) / float(half) - 1.0) * 100.0
    div = sm.warp_divergence(sm.lanes_round_robin(2), [1.0, 1.0])
    amdahl = sm.amdahl_speedup(0.95, 8)
    n, kernel_s, launch_s = 1000, 2e-6, 5e-6
    loop = sm.launch_bound_time_s(n, kernel_s, launch_s)
    return Quiz(
        topic="simt",
        note="Every accepted answer below was computed by the book's models and GPU catalog when this page was built.",
        questions=(
            Number(
                prompt=f"A kernel with 256 threads per block and 128 registers per thread runs on an {g.name} ({g.arch}). "
                "What fraction of the SM's warp slots is occupied, in percent?",
                value=occ.occupancy * 100, unit="%", rel_tol=0.0, abs_tol=0.5,
                why=f"{occ.blocks_per_sm} blocks of {occ.warps_per_block} warps fit: {occ.warps_per_sm} of {occ.max_warps_per_sm} warp slots.",
            ),
            Choice(
                prompt="Which resource limits that kernel's occupancy?",
                options=tuple(LABELS[k] for k in LIMITERS), answer=LIMITERS.index(occ.limiter),
                why=f"A block of {occ.warps_per_block} warps allocates {occ.regs_per_block_allocated} registers, so only "
                f"{occ.blocks_limit_registers} blocks fit in the register file (warp slots would allow {occ.blocks_limit_warps}).",
            ),
            Number(
                prompt=f"\"More occupancy is always faster\"? A memory-bound kernel keeps {bytes_per_warp} bytes in flight per warp; "
                f"loads take {u.fmt_time(latency_s)}. By Little's law, how much faster (in percent) does it get on an {g.name} "
                f"({u.fmt_bytes_per_s(g.hbm_bytes_per_s)}) when occupancy rises from 32 to 64 warps per SM?",
                value=gain, unit="%", rel_tol=0.02, abs_tol=1.0,
                why="With 32 warps the bytes in flight already cover latency x bandwidth: the bandwidth roof is reached, "
                "and more warps add nothing (section <em>Latency hiding: Little's law</em>).",
            ),
            Number(
                prompt="Half the lanes of a warp take one branch and half the other; both paths cost the same. "
                "How many times longer does the warp take than without the branch?",
                value=div.slowdown, unit="x", rel_tol=0.02,
                why="The warp runs both paths one after the other, each with half its lanes masked off.",
            ),
            Number(
                prompt="95 % of a program's time is parallel. What speed-up can 8 workers give at most (Amdahl's law)?",
                value=amdahl, unit="x", rel_tol=0.02,
                why="1 / ((1 - p) + p / n); with infinitely many workers it would still stop at 1 / (1 - p) = 20.",
            ),
            Number(
                prompt=f"A loop launches {n} kernels of {u.fmt_time(kernel_s)} each; each launch costs {u.fmt_time(launch_s)} of CPU time. "
                "Launches are asynchronous: the GPU runs one kernel while the CPU launches the next. How long does the loop take, in ms?",
                value=loop / u.MS, unit="ms", rel_tol=0.02,
                why="When the launch overhead exceeds the kernel, the CPU is the bottleneck: the loop takes n x overhead (CUDA graphs help).",
            ),
        ),
    )
