"""Quiz: tensor cores (answers from widgets.models.tensor_cores and the catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import tensor_cores as tc
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    g = hw.get_gpu("H200-SXM")
    dense = g.peak("bf16")
    sparse = tc.sparse_flop_per_s(dense)
    m = n = k = 8192
    flop = tc.matmul_flop(m, n, k)
    t_min = flop / dense
    tiles, waves, eff = tc.gemm_waves(8192, 4224, 128, 256, g.sms)
    dim = 4100
    ridge = tc.smem_ridge_flop_per_byte(g.flop_per_clock_per_sm["bf16"])
    nvfp4 = tc.dtypes.get_dtype("nvfp4")
    options = tuple(u.fmt_flop_per_s(x, 4) for x in (sparse, dense, dense / 2))
    return Quiz(
        topic="tensor_cores",
        note="Every accepted answer below was computed by the book's models and GPU catalog when this page was built.",
        questions=(
            Choice(
                prompt=f"A datasheet lists the {g.name} at {u.fmt_flop_per_s(sparse, 4)} in bf16 \"with sparsity\". "
                "Which rate bounds a dense bf16 GEMM?",
                options=options, answer=1,
                why="The sparse figure is for 2:4 structured sparsity and is exactly twice the dense one; a dense GEMM never reaches it.",
            ),
            Number(
                prompt=f"How many FLOP does a GEMM of M = N = K = {m} do? Answer in TFLOP.",
                value=flop / u.TERA, unit="TFLOP", rel_tol=0.01,
                why="2 x M x N x K: one multiply and one add per term.",
            ),
            Number(
                prompt=f"At the dense bf16 peak of an {g.name}, how long does that GEMM take at least, in ms?",
                value=t_min / u.MS, unit="ms", rel_tol=0.03,
                why="FLOP / dense peak: a lower bound (real GEMMs reach 60-80 % of it; see <em>Predict, then measure</em>).",
            ),
            Number(
                prompt=f"A GEMM with output {8192} x {4224} uses tiles of 128 rows x 256 columns, one per SM at a time, "
                f"on {g.sms} SMs; a partial tile counts as a tile. How many waves does it run?",
                value=waves, unit="waves", rel_tol=0.0, abs_tol=0.4,
                why=f"{tiles} tiles / {g.sms} SMs, rounded up: the last wave keeps only some SMs busy (wave efficiency {eff:.0%}).",
            ),
            Choice(
                prompt=f"Is a bf16 matrix with a leading dimension of {dim} elements aligned to 16 bytes, as tensor-core kernels want?",
                options=("yes", "no"), answer=0 if tc.is_aligned(dim, 2) else 1,
                why=f"{dim} x 2 B = {dim * 2} B, not a multiple of 16: pad to a multiple of 8 elements.",
            ),
            Number(
                prompt=f"An {g.name} SM does {g.flop_per_clock_per_sm['bf16']:.0f} dense bf16 FLOP per clock and its shared "
                "memory delivers 32 banks x 4 B per clock. What intensity (per byte read from shared memory) must its "
                "tensor cores reach to stay busy?",
                value=ridge, unit="FLOP/B", rel_tol=0.02,
                why="FLOP per clock / bytes per clock; the clock cancels. A 64 x 64 warp tile only just reaches it, "
                "which is why wgmma reads its operands straight from shared memory in 64 x 256 pieces.",
            ),
            Number(
                prompt=f"NVFP4 stores 4-bit elements with one {nvfp4.scale_bits}-bit scale per block of {nvfp4.block_size}. "
                "How many bits does one element cost, counting its share of the scale?",
                value=nvfp4.bits_with_scales, unit="bits", rel_tol=0.0, abs_tol=0.01,
                why="4 + 8 / 16: the scale's bits spread over the block.",
            ),
        ),
    )
