"""Quiz: kernels (answers from widgets.models.kernels and widgets.models.simt)."""

from __future__ import annotations

from ..models import kernels as km
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    # Not the exercises' values: the quiz must not hand out their answers.
    smem = km.tile_summary("vectorized", bm=64, bn=128, bk=16).smem_bytes_per_block
    intensity = km.tile_summary("vectorized", tm=8, tn=4).smem_flop_per_byte
    repeats = km.repeats_needed(0.20, 1.0, 0.02)
    error = km.host_timing_error(2e-6, 10e-6)
    return Quiz(
        topic="kernels",
        note="Every accepted answer below was computed by the book's models when this page was built.",
        questions=(
            Number(
                prompt="A block tile of 64 x 128 outputs walks K in steps of 16 and stages its tiles of A and B (fp32) in shared "
                "memory. How many bytes of shared memory does one block use?",
                value=smem, unit="B", rel_tol=0.001,
                why="(BM + BN) x BK floats of 4 bytes: a BM x BK tile of A and a BK x BN tile of B.",
            ),
            Number(
                prompt="Each thread computes an 8 x 4 tile of outputs (register blocking). Per step of k it reads 8 values of A and "
                "4 of B from shared memory (fp32). How many FLOP per byte read from shared memory?",
                value=intensity, unit="FLOP/B", rel_tol=0.01,
                why="2 x 8 x 4 = 64 FLOP for (8 + 4) x 4 = 48 bytes.",
            ),
            Number(
                prompt="A kernel's timings have a spread (standard deviation) of 20% of their mean. How many repeats does the mean "
                "need for a 95% confidence interval of +-2%?",
                value=repeats, unit="repeats", rel_tol=0.03,
                why="t x 0.20 / sqrt(n) <= 0.02: about (1.96 x 10)^2 = 384 by the normal approximation, a few more with t.",
            ),
            Number(
                prompt="A 2 µs kernel is timed with time.perf_counter around the launch and torch.cuda.synchronize, which add "
                "10 µs. By what factor does the host clock overstate the kernel's time, minus one (the relative error)?",
                value=error, unit="", rel_tol=0.01,
                why="The host clock reads kernel + overhead: (2 + 10) / 2 - 1 = 5. CUDA events alone do not fix it: on an idle "
                "GPU the start event is recorded before the launch reaches the GPU, so their interval holds the launch too. "
                "Keep the GPU busy (many launches queued, a CUDA graph) or read a profiler's kernel timestamps.",
            ),
            Choice(
                prompt="Which file holds the SASS instructions that cuobjdump -sass prints?",
                options=("the .ptx file", "the cubin (an ELF file, one .text section per kernel)", "the .cu source"),
                answer=1,
                why="PTX is a virtual ISA that ptxas (or the driver) compiles to SASS; the cubin holds the SASS of one architecture.",
            ),
        ),
    )
