"""Quiz: the memory hierarchy (answers from widgets.models.memory_hierarchy and the catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import memory_hierarchy as mh
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    g = hw.get_gpu("H200-SXM")
    peak, bw = g.peak("bf16"), g.hbm_bytes_per_s
    ridge = mh.ridge_intensity(peak, bw)
    intensity = 10.0
    attainable = mh.attainable_flop_per_s(intensity, peak, bw)
    stride = 2
    sectors = mh.warp_load_sectors(stride, 4)
    ideal = mh.warp_load_sectors(1, 4)
    row_words = 16  # not the exercise's 32 x 32 tile (mh-ex-transpose): the quiz must not hand out its answer
    waves = mh.bank_conflict_wavefronts(row_words, 4)
    usable = g.memory_bytes
    regime = ("memory-bound", "compute-bound")
    return Quiz(
        topic="memory_hierarchy",
        note="Every accepted answer below was computed by the book's models and GPU catalog when this page was built.",
        questions=(
            Number(
                prompt=f"An {g.name} has {u.fmt_flop_per_s(peak)} of dense bf16 and {u.fmt_bytes_per_s(bw)} of HBM "
                "bandwidth. What is its ridge point (the arithmetic intensity where the two roofs meet)?",
                value=ridge, unit="FLOP/B", rel_tol=0.03,
                why="Ridge = peak / bandwidth. Below it a kernel is memory-bound (section <em>Arithmetic intensity and the roofline</em>).",
            ),
            Number(
                prompt=f"A kernel does {intensity:g} FLOP per byte of HBM traffic on the same GPU. What rate can it reach at best, in TFLOP/s?",
                value=attainable / u.TERA, unit="TFLOP/s", rel_tol=0.03,
                why="min(peak, intensity x bandwidth): far below the ridge, the bandwidth roof sets the rate.",
            ),
            Choice(
                prompt=f"Is that kernel ({intensity:g} FLOP/B on an {g.name}) memory-bound or compute-bound?",
                options=regime, answer=0 if intensity < ridge else 1,
                why="Its intensity is below the ridge point, so moving bytes, not doing FLOP, limits it.",
            ),
            Number(
                prompt=f"A warp of 32 threads loads 4-byte floats with a stride of {stride} elements. How many 32-byte "
                f"sectors does the load touch (a stride of 1 touches {ideal})?",
                value=sectors, unit="sectors", rel_tol=0.0, abs_tol=0.4,
                why="The addresses span twice the bytes, so twice the sectors: half of every sector moved is wasted.",
            ),
            Number(
                prompt=f"Each thread of a warp reads one 4-byte word of shared memory, thread <em>i</em> at word {row_words} x <em>i</em> "
                f"(a column of a tile {row_words} floats wide). How many wavefronts (passes) does the access take?",
                value=waves, unit="wavefronts", rel_tol=0.0, abs_tol=0.4,
                why=f"Word {row_words} x <em>i</em> lands in bank ({row_words} x <em>i</em>) mod 32 (32 banks of 4 bytes), so the "
                f"32 reads share {32 // waves} banks, {waves} reads each, and the reads that share a bank go one after another.",
            ),
            Number(
                prompt=f"GB or GiB? The device reports {u.fmt_bytes(usable, 4)} of usable memory. How much is that in GB (10<sup>9</sup> bytes)?",
                value=usable / u.GIGA, unit="GB", rel_tol=0.005,
                why="1 GiB = 1024<sup>3</sup> B = 1.074 GB: a capacity in GiB is about 7 % smaller as a number than the same capacity in GB.",
            ),
        ),
    )
