"""Quiz: training memory (answers from widgets.models.training_memory, the model catalog and the GPU catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import llms
from ..models import training_memory as tm
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    m = llms.get_model("Mistral-7B")  # not the exercise's Llama-3-8B: the quiz must not hand out its answer
    state = tm.training_state_bytes(m.params)
    zero = tm.zero_state_bytes_per_gpu(7.5e9, 64, 2)
    act = tm.activation_bytes_per_layer(4096, 1, 4096, 32)
    g = hw.get_gpu("H100-SXM")
    days = tm.training_time_s(70e9, 2e12, 2048, g.peak("bf16"), 0.4) / 86400
    fixes = (
        "ZeRO-3 sharding of the weights",
        "selective activation recomputation",
        "offloading the optimizer state to the host",
    )
    return Quiz(
        topic="training_memory",
        note="Every accepted answer below was computed by the book's models and catalogs when this page was built.",
        questions=(
            Number(
                prompt=f"{m.name} has {m.params / 1e9:.3g} billion parameters. How many GB (decimal) do its weights, gradients and "
                "optimizer state take with mixed-precision AdamW, on one GPU?",
                value=state / u.GIGA, unit="GB", rel_tol=0.02,
                why="16 bytes per parameter: 2 (bf16 weights) + 2 (bf16 gradients) + 12 (fp32 master weights and two moments).",
            ),
            Number(
                prompt="The ZeRO paper's example: 7.5 billion parameters on 64 data-parallel GPUs. How many GB of state does each "
                "GPU keep at ZeRO stage 2 (optimizer state and gradients sharded)?",
                value=zero / u.GIGA, unit="GB", rel_tol=0.02,
                why="2 bytes of weights per parameter on every GPU, plus (2 + 12) / 64 for the sharded gradients and optimizer state.",
            ),
            Number(
                prompt="One GPT-style layer (eager attention, dropout) with hidden size 4096 and 32 heads, one sequence of 4096 "
                "tokens, 16-bit activations, no recomputation: how many GiB of activations does it keep (Korthikanti et al.)?",
                value=act / u.GiB, unit="GiB", rel_tol=0.02,
                why="s b h (34 + 5 a s / h) bytes; here 5 a s / h = 160, so the attention matrix dominates (a fused attention "
                "kernel without dropout keeps no s x s term at all).",
            ),
            Number(
                prompt=f"A 70-billion-parameter model trains on 2 trillion tokens on 2048 {g.name} GPUs at 40% MFU "
                f"(dense bf16 peak {u.fmt_flop_per_s(g.peak('bf16'))}). How many days?",
                value=days, unit="days", rel_tol=0.03,
                why="6 N D FLOP over GPUs x peak x MFU, divided by 86400 s.",
            ),
            Choice(
                prompt="A step with eager attention (the s x s softmax kept) runs out of memory because of long sequences (the "
                "activations dominate). Which of these fixes the activation overflow at the least cost?",
                options=fixes, answer=1,
                why="Selective recomputation removes the attention matrix's 5as/h term for a few per cent more FLOP (more in time: "
                "the recomputed softmax is memory-bound work); sharding does not touch activations, and offloading costs "
                "host-link time every step.",
            ),
        ),
    )
