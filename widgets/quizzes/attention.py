"""Quiz: attention and FlashAttention (answers from widgets.models.attention and the GPU catalog).

The inputs differ from the chapter's exercises, so the quiz does not hand out their answers."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import attention as am
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    flop = am.attention_flop(8, 16, 4096, 4096, 64) / 1e12
    std = am.standard_attention_hbm_bytes(2, 16, 4096, 64, 2) / 1e9
    rescale = am.online_softmax_steps([1.0, 4.0], 1)[1].rescale
    g = hw.get_gpu("A100-SXM-80GB")
    longest = am.largest_math_seq(1, 16, 64, g.memory_bytes, 2, 4)
    return Quiz(
        topic="attention",
        note="Every accepted answer below was computed by the book's models and catalogs when this page was built.",
        questions=(
            Number(
                prompt="Non-causal attention, forward pass only: batch 8, 16 heads, N = 4096, head size 64. How many TFLOP, "
                "by the FlashAttention papers' convention?",
                value=flop, unit="TFLOP", rel_tol=0.02,
                why="Two matmuls, QK^T and PV, each 2 N^2 d FLOP per (batch, head): 4 B H N^2 d.",
            ),
            Number(
                prompt="Standard (unfused) attention, forward: batch 2, 16 heads, N = 4096, head size 64, bf16. How many GB "
                "(decimal) move to and from HBM?",
                value=std, unit="GB", rel_tol=0.02,
                why="(4 N d + 4 N^2) elements per (batch, head), 2 bytes each: S written, read, P written, read.",
            ),
            Number(
                prompt="An online softmax has seen one score, 1.0; the next block holds the score 4.0. By what factor is the "
                "running sum multiplied before the new term is added?",
                value=rescale, unit="", rel_tol=0.005,
                why="exp(m_old - m_new) = exp(1 - 4): every old term exp(x - 1) becomes exp(x - 4).",
            ),
            Number(
                prompt=f"PyTorch's math path computes bf16 attention in fp32 and keeps S and P at once. On one {g.name} "
                f"({u.fmt_bytes(g.memory_bytes)}), batch 1, 16 heads of 64: what is the longest sequence that fits, "
                "by the chapter's model (S and P together in fp32; it also counts the inputs, the output and their working copies)?",
                # 0.4%: N grows as the square root of the capacity, so 80 GiB instead of the catalog's 79.2 GiB is
                # only +0.5% (80 GB -3.0%); by hand, S and P alone or with the inputs, lands within +0.3%
                value=longest, unit="tokens", rel_tol=0.004,
                why="The peak is about 2 N^2 x 4 bytes per head (S and P in fp32), plus the inputs: solve for N.",
            ),
            Choice(
                prompt="FlashAttention's backward pass does more FLOP than standard attention's. Why is it faster?",
                options=("It uses lower precision for the recomputed scores",
                         "Recomputing S from Q and K on chip costs less time than reading S and P back from HBM",
                         "It skips the softmax's gradient"),
                answer=1,
                why="Attention's unfused steps are memory-bound: moving N^2 elements costs more than the matmul FLOP that "
                "recompute them on tensor cores.",
            ),
            Choice(
                prompt="You pass an arbitrary boolean mask to scaled_dot_product_attention with fp16 inputs. Which backends "
                "can serve the call, and does the dispatcher tell you which one ran?",
                options=("All four; it warns when it skips one",
                         "Not flash (it takes only is_causal); the dispatcher picks another without a word",
                         "Only math; it raises an error otherwise"),
                answer=1,
                why="Flash refuses an arbitrary mask; the dispatcher silently takes the first backend in its priority "
                "order whose constraints hold (torch 2.11 on the H200 record: cuDNN). The "
                "order is version-dependent; sdpa_kernel([...]) with the backends you accept turns a fallback into an error.",
            ),
        ),
    )
