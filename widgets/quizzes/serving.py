"""Quiz: LLM serving (answers from widgets.models.serving, .transformer, .llms and the catalog)."""

from __future__ import annotations

from .. import hardware as hw
from .. import units as u
from ..models import llms
from ..models import serving as sv
from ..models import transformer as tf
from ..quiz import Choice, Number, Quiz


def quiz() -> Quiz:
    g = hw.get_gpu("H200-SXM")
    m = llms.get_model("Llama-3-8B")
    kv = tf.kv_cache_bytes_per_token(m.layers, m.kv_heads, m.head_dim, 2)
    read = m.step_params(1)  # all but the embedding table, of which a batch-1 step gathers one row (as the chapter counts)
    step = sv.decode_step_time_s(tf.weight_bytes(read, 2), 0.0, g.hbm_bytes_per_s)
    ctx = 8192
    budget = sv.memory_budget(m, g.name, context_tokens=ctx)
    rate, latency = 20.0, 4.0
    conc = sv.littles_law_concurrency(rate, latency)
    culprits = (
        "the allocation named in the message",
        "everything resident: weights, the KV cache of every running sequence, activations and the runtime's reserve",
        "the largest tensor in the model",
    )
    return Quiz(
        topic="serving",
        note="Every accepted answer below was computed by the book's models and GPU catalog when this page was built.",
        questions=(
            Number(
                prompt=f"{m.name} has {m.layers} layers, {m.kv_heads} KV heads of dimension {m.head_dim}. How large is one token's "
                "KV cache in bf16, in KiB?",
                value=kv / u.KiB, unit="KiB", rel_tol=0.01,
                why="2 (key and value) x layers x KV heads x head dim x 2 bytes.",
            ),
            Number(
                prompt=f"A decode step of {m.name} at batch 1 reads all its weights but the embedding table, of which it gathers "
                f"one row: {read / 1e9:.3g} B of its {m.params / 1e9:.3g} B parameters, in bf16. On an {g.name} "
                f"({u.fmt_bytes_per_s(g.hbm_bytes_per_s)}), how long does that step take at least, in ms?",
                value=step / u.MS, unit="ms", rel_tol=0.03,
                why="Weight bytes read / HBM bandwidth: at small batches decoding is a weight stream (section <em>The decode "
                "step</em>).",
            ),
            Number(
                prompt=f"The book's memory budget for {m.name} in bf16 on one {g.name}: how many sequences of {ctx} tokens can its "
                f"KV cache hold at once? The budget keeps {u.fmt_bytes(budget.overhead_bytes)} as the runtime's reserve and "
                f"{u.fmt_bytes(budget.activation_bytes)} for activations and the batch's logits (the chapter's memory-budget "
                "calculator shows every bucket).",
                value=budget.max_concurrent_seqs, unit="sequences", rel_tol=0.0, abs_tol=0.4,
                why="(memory - weights - activations - reserve) / KV bytes per sequence, rounded down.",
            ),
            Number(
                prompt=f"Requests arrive at {rate:g} per second and each stays {latency:g} s in the server. How many are in flight on average?",
                value=conc, unit="requests", rel_tol=0.01,
                why="Little's law: L = arrival rate x time in the system.",
            ),
            Number(
                prompt="A draft proposes 4 tokens per step, each accepted with probability 0.8. How many tokens does one "
                "verification pass of the target yield on average?",
                value=sv.speculative_expected_tokens(0.8, 4), unit="tokens", rel_tol=0.01,
                why="(1 - a^(k+1)) / (1 - a): the accepted prefix of the draft plus the target's own token "
                "(section <em>Speculative decoding and multi-token prediction</em>).",
            ),
            Choice(
                prompt="Why do providers charge less for an input token than for an output token?",
                options=(
                    "input tokens are shorter",
                    "a prompt is prefilled in compute-bound passes where every weight read serves many tokens; "
                    "each decode step reads the weights for one token per sequence",
                    "output tokens need a larger KV cache",
                ),
                answer=1,
                why=f"For {m.name} on an {g.name} at batch 64 an output token costs "
                f"{sv.input_output_cost_ratio(m, g.name, 64):.1f} times the GPU time of an input token.",
            ),
            Choice(
                prompt="A server dies with \"CUDA out of memory. Tried to allocate 2.00 MiB\". What used the memory?",
                options=culprits, answer=1,
                why="The failing allocation is only the last straw. Add up what is resident (the memory budget) to find the culprit.",
            ),
        ),
    )
