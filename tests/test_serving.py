"""Tests of the serving planners (against published figures), calculators and experiments. The transformer
arithmetic and the model catalog have their own: tests/test_transformer.py, tests/test_llms.py.

Sources of the expected values (each test names the one it uses):
- [vLLM] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
  PagedAttention", SOSP 2023, section 4.1: KV blocks of a fixed number of tokens.
- [Scaling] Austin et al., "How to Scale Your Model" (2025), Part 7 "All About Transformer
  Inference": B_crit = 1.97e14 / 8.2e11 = 240 on a TPU v5e in bf16 (120 with int8 weights); the pop
  quiz (30B int8 params, 4 x 819 MB of KV cache, 16 chips of 8.1e11 B/s and 1.97e14 FLOP/s: 2.5 ms;
  batch 256: 21 ms); LLaMA 2-13B's KV cache of 6.7 GB per 8192 tokens and its step times on 8 TPU
  v5es (4.98 ms at batch 1, 249.09 ms at 240).
- [Little] J. D. C. Little, "A Proof for the Queuing Formula L = lambda W", Operations Research 9(3), 1961.
- [NIM] NVIDIA NIM LLM benchmarking guide, "Metrics": e2e latency = TTFT + generation time; ITL and
  TPOT as (e2e - TTFT) / (output tokens - 1).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from widgets import dtypes
from widgets.hardware import get_gpu
from widgets.models import llms, transformer
from widgets.models import serving as sv


# --------------------------------------------------------------------------------------------
# Decode lower bound, ridge (the transformer's own counts: tests/test_transformer.py; the model
# catalog: tests/test_llms.py)
# --------------------------------------------------------------------------------------------
def test_scaling_book_pop_quiz():
    """[Scaling] 30B int8 params, batch 4 with 819 MB of KV cache each, 16 x 8.1e11 B/s: >= 2.5 ms;
    batch 256: about 21 ms (KV read plus the compute-bound MLP)."""
    bw, flops = 16 * 8.1e11, 16 * 1.97e14
    kv = 100e3 * 8192
    t4 = sv.decode_step_time_s(30e9, 4 * kv, bw)
    assert t4 == pytest.approx(2.5e-3, rel=0.03)
    t256 = 256 * kv / bw + max(2 * 256 * 30e9 / flops, 30e9 / bw)
    assert t256 == pytest.approx(21e-3, rel=0.01)


def test_scaling_book_llama2_13b_step_times():
    """[Scaling] LLaMA 2-13B on 8 TPU v5e (8 x 8.2e11 B/s), 26 GB of bf16 params and 6.7 GB of KV
    per sequence: 4.98 ms at batch 1, 249.09 ms at batch 240."""
    kv = transformer.kv_cache_bytes(transformer.kv_cache_bytes_per_token(40, 40, 128, 2), 8192)
    assert sv.decode_step_time_s(26e9, kv, 8 * 8.2e11) == pytest.approx(4.98e-3, rel=0.005)
    assert sv.decode_step_time_s(26e9, 240 * kv, 8 * 8.2e11) == pytest.approx(249.09e-3, rel=0.005)


def test_critical_batch_tpu_v5e():
    """[Scaling] B_crit = 1.97e14 / 8.2e11 = 240 for bf16 weights; 120 with int8 weights and bf16 FLOPs."""
    p = 1e9
    assert sv.decode_ridge_batch(2 * p, 2 * p, 0, 1.97e14, 8.2e11) == pytest.approx(240.2, rel=1e-3)
    assert sv.decode_ridge_batch(1 * p, 2 * p, 0, 1.97e14, 8.2e11) == pytest.approx(120.1, rel=1e-3)


def test_ridge_batch_on_h200_is_the_ridge_intensity():
    """For bf16 weights the critical batch equals the GPU's ridge intensity, peak / bandwidth
    (989.4 TFLOP/s / 4.8 TB/s = 206 on an H200, from the catalog's datasheet figures)."""
    from widgets.models import memory_hierarchy as mh

    h200 = get_gpu("H200-SXM")
    s = sv.decode_step("Llama-3-8B", "H200-SXM", 1, 0)
    assert s.ridge_batch == pytest.approx(mh.ridge_intensity(h200.peak("bf16"), h200.hbm_bytes_per_s), rel=1e-9)
    assert sv.decode_step("Llama-3-8B", "H200-SXM", 150, 0).bound == "memory"
    assert sv.decode_step("Llama-3-8B", "H200-SXM", 300, 0).bound == "compute"


def test_ridge_with_kv_in_the_same_roofline_can_vanish():
    """With the KV cache in the same roofline the bytes grow with the batch as fast as the FLOP:
    Llama-3-8B at 2048 tokens reads more KV per sequence (256 MiB) than its FLOP take on an H200."""
    m, g = llms.LLAMA_3_8B, get_gpu("H200-SXM")
    kv = m.kv_bytes_per_sequence(2048, 2)
    with pytest.raises(ValueError, match="never turns compute-bound"):  # no such batch (was inf: no inf from finite input)
        sv.decode_ridge_batch(2 * m.flop_params, 2 * m.flop_params, kv, g.peak("bf16"), g.hbm_bytes_per_s)
    assert math.isfinite(
        sv.decode_ridge_batch(
            2 * m.flop_params, 2 * m.flop_params, m.kv_bytes_per_sequence(128, 2), g.peak("bf16"), g.hbm_bytes_per_s
        )
    )


def test_decode_step_hand_value():
    """Llama-3-8B bf16, batch 1, 1024 tokens on an H200: (7.505e9 x 2 + 128 KiB x 1024) / 4.8e12."""
    s = sv.decode_step("Llama-3-8B", "H200-SXM", 1, 1024)
    w = (8.03e9 - 128256 * 4096) * 2
    assert s.weight_bytes == pytest.approx(w)
    assert s.kv_bytes == 131072 * 1024
    assert s.time_s == pytest.approx((w + 131072 * 1024) / 4.8e12)
    assert s.time_s == pytest.approx(s.memory_s)


def test_decode_step_sum_of_kernels():
    """Above the ridge the matmuls are compute-bound while attention stays memory-bound: the step
    is their sum."""
    s = sv.decode_step("Llama-3-8B", "H200-SXM", 1024, 4096)
    assert s.bound == "compute"
    assert s.time_s == pytest.approx(s.linear_s + s.attention_s)
    assert s.attention_s == pytest.approx(s.kv_bytes / 4.8e12)
    assert s.time_s >= max(s.memory_s, s.compute_s)


def test_tensor_parallelism_splits_bytes_but_replicates_few_kv_heads_and_latents():
    s1 = sv.decode_step("Llama-3-70B", "H200-SXM", 8, 4096, allreduce_latency_s=0)
    s4 = sv.decode_step("Llama-3-70B", "H200-SXM", 8, 4096, tp=4, allreduce_latency_s=0)
    s16 = sv.decode_step("Llama-3-70B", "H200-SXM", 8, 4096, tp=16, allreduce_latency_s=0)
    assert s4.weight_bytes == pytest.approx(s1.weight_bytes / 4)
    assert s4.kv_bytes == pytest.approx(s1.kv_bytes / 4)
    assert s16.kv_bytes == pytest.approx(s1.kv_bytes / 8)  # 8 KV heads: each GPU keeps at least one
    assert s4.comm_s > 0 and s4.time_s < s1.time_s
    d1 = sv.decode_step("DeepSeek-V3", "H200-SXM", 8, 4096, "fp8")
    d8 = sv.decode_step("DeepSeek-V3", "H200-SXM", 8, 4096, "fp8", tp=8)
    assert d8.kv_bytes == pytest.approx(d1.kv_bytes)  # the MLA latent is shared by all heads
    with pytest.raises(ValueError, match="tp"):
        sv.decode_step("Llama-3-8B", "L4", 1, 10, tp=2)


def test_allreduce_hand():
    """Ring all-reduce [Patarasuk & Yuan 2009]: 2 (n-1)/n of the message per link, and 2 (n-1)
    steps of one latency each; the book's one model (collectives.ring_allreduce_time_s)."""
    from widgets.models import collectives

    assert sv.allreduce_time_s(1e6, 1, 1e9) == 0
    # the bandwidth term: 2 (n-1)/n of the message; the latency terms do not depend on it
    assert sv.allreduce_time_s(8e6, 8, 1e9, 5e-6) - sv.allreduce_time_s(0, 8, 1e9, 5e-6) == pytest.approx(2 * 7 / 8 * 8e-3)
    # 2 (n-1) step latencies
    assert sv.allreduce_time_s(0, 8, 1e9, 5e-6) - sv.allreduce_time_s(0, 8, 1e9, 0) == pytest.approx(14 * 5e-6)
    for n in (2, 4, 8):
        assert sv.allreduce_time_s(3e6, n, 450e9, 7e-6) == collectives.ring_allreduce_time_s(3e6, n, 450e9, 7e-6)
        assert sv.allreduce_time_s(3e6, n, 450e9) == collectives.ring_allreduce_time_s(3e6, n, 450e9)


def test_prefill_short_prompts_are_memory_bound_long_compute_bound():
    h200 = get_gpu("H200-SXM")
    t1 = sv.prefill_time_s("Llama-3-8B", "H200-SXM", 1)
    assert t1 == pytest.approx(sv.decode_step("Llama-3-8B", "H200-SXM", 1, 0).weight_bytes / h200.hbm_bytes_per_s)
    t8k = sv.prefill_time_s("Llama-3-8B", "H200-SXM", 8192)
    m = llms.LLAMA_3_8B
    flop = transformer.prefill_flop(m.flop_params - m.head_params, 8192) + transformer.prefill_flop(m.head_params, 1) + m.prefill_attention_flop(8192)
    assert t8k == pytest.approx(flop / h200.peak("bf16"))


# --------------------------------------------------------------------------------------------
# Latency metrics, Little's law, cost
# --------------------------------------------------------------------------------------------
def test_latency_metrics_nim_definitions():
    """[NIM] e2e = TTFT + (N - 1) x TPOT, and TPOT = (e2e - TTFT) / (N - 1)."""
    assert sv.e2e_latency_s(0.2, 0.02, 101) == pytest.approx(2.2)
    assert sv.tpot_s(2.2, 0.2, 101) == pytest.approx(0.02)
    assert sv.e2e_latency_s(0.3, 0.05, 1) == 0.3


@given(ttft=st.floats(0, 10), tpot=st.floats(0, 1), n=st.integers(2, 10_000))
def test_tpot_inverts_e2e(ttft, tpot, n):
    assert sv.tpot_s(sv.e2e_latency_s(ttft, tpot, n), ttft, n) == pytest.approx(tpot, abs=1e-9)


def test_littles_law():
    """[Little] L = lambda W."""
    assert sv.littles_law_concurrency(10, 6.4) == 64
    assert sv.littles_law_concurrency(0, 5) == 0


def test_cost_per_million_tokens_hand():
    """$3 per GPU-hour at 3200 tokens/s: 3 / 3600 / 3200 x 1e6 = $0.2604 per million."""
    assert sv.cost_per_million_tokens(3.0, 1, 3200) == pytest.approx(3 / 3600 / 3200 * 1e6)
    assert sv.cost_per_million_tokens(3.0, 8, 3200) == pytest.approx(8 * sv.cost_per_million_tokens(3.0, 1, 3200))
    assert sv.decode_tokens_per_s(64, 0.02) == 3200


# --------------------------------------------------------------------------------------------
# Memory budget
# --------------------------------------------------------------------------------------------
def test_llama_70b_bf16_does_not_fit_one_h200_but_fits_two():
    """70.6e9 x 2 B = 131.5 GiB of weights against 141 GiB (126.9 GiB after the 10% reserve)."""
    b1 = sv.memory_budget("Llama-3-70B", "H200-SXM", 8192, 1)
    assert not b1.fits and b1.max_concurrent_seqs == 0
    b2 = sv.memory_budget("Llama-3-70B", "H200-SXM", 8192, 1, tp=2)
    assert b2.fits and b2.max_concurrent_seqs > 20
    assert sv.memory_budget("Llama-3-70B", "H200-SXM", 8192, 1, "fp8").fits


def test_memory_budget_hand_value():
    """Llama-3-8B bf16 on an H200, 8192-token sequences: (the 150,109,880,320 B the device reports
    [H200 record provenance gpu_memory_bytes] x 0.9 - 16.06 GB - activations) / (1 GiB of KV +
    0.5 MB of fp32 logits) per sequence = 110 sequences (111 with the datasheet's 141 GiB)."""
    b = sv.memory_budget("Llama-3-8B", "H200-SXM", 8192, 64)
    assert b.hbm_bytes == 150_109_880_320 < 141 * 2**30
    room = 150_109_880_320 * 0.9 - 8.03e9 * 2 - transformer.activation_bytes(2048, 4096, 14336, 128256, 0, 2)
    assert b.kv_bytes_per_seq == 2**30
    assert b.max_concurrent_seqs == int(room // (2**30 + 128256 * 4)) == 110
    assert b.kv_bytes == 64 * 2**30
    assert b.used_bytes + b.free_bytes == pytest.approx(b.hbm_bytes)


def test_deepseek_v3_on_eight_h200s_in_fp8():
    """671 GB of fp8 weights split 8 ways fit; the MLA cache is replicated on every GPU."""
    b = sv.memory_budget("DeepSeek-V3", "H200-SXM", 32768, 16, "fp8", "bf16", tp=8)
    assert b.fits
    assert b.weight_bytes == pytest.approx(671e9 / 8)
    assert b.kv_bytes_per_seq == llms.DEEPSEEK_V3.kv_bytes_per_sequence(32768, 2)
    assert not sv.memory_budget("DeepSeek-V3", "H200-SXM", 1024, 1, "fp8").fits


@settings(max_examples=60, deadline=None)
@given(ctx=st.integers(1, 200_000), batch=st.integers(0, 512), tp=st.sampled_from([1, 2, 4, 8]), name=st.sampled_from(list(llms.PRESETS)))
def test_memory_budget_invariants(ctx, batch, tp, name):
    b = sv.memory_budget(name, "H200-SXM", ctx, batch, "fp8", "fp8", tp)
    assert b.kv_bytes == pytest.approx(batch * b.kv_bytes_per_seq)
    assert b.used_bytes + b.free_bytes == pytest.approx(b.hbm_bytes)
    assert b.fits == (b.free_bytes >= 0)
    if b.max_concurrent_seqs:
        assert sv.memory_budget(name, "H200-SXM", ctx, b.max_concurrent_seqs, "fp8", "fp8", tp).fits
        assert not sv.memory_budget(name, "H200-SXM", ctx, b.max_concurrent_seqs + 1, "fp8", "fp8", tp).fits


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 4096), ctx=st.integers(0, 100_000), name=st.sampled_from(list(llms.PRESETS)))
def test_decode_step_invariants(b, ctx, name):
    s = sv.decode_step(name, "H200-SXM", b, ctx, "fp8")
    assert s.time_s >= s.memory_s * (1 - 1e-12)
    assert s.time_s >= s.compute_s * (1 - 1e-12)
    s2 = sv.decode_step(name, "H200-SXM", b + 1, ctx, "fp8")
    assert s2.time_s >= s.time_s and s2.tokens_per_s >= s.tokens_per_s * (1 - 1e-9)


# --------------------------------------------------------------------------------------------
# Latency and capacity
# --------------------------------------------------------------------------------------------
def test_latency_combines_prefill_and_decode():
    r = sv.latency("Llama-3-8B", "H200-SXM", 32, 1024, 256)
    assert r.ttft_s == pytest.approx(sv.prefill_time_s("Llama-3-8B", "H200-SXM", 1024))
    assert r.tpot_s == pytest.approx(sv.decode_step("Llama-3-8B", "H200-SXM", 32, 1024 + 128).time_s)
    assert r.e2e_s == pytest.approx(r.ttft_s + 255 * r.tpot_s)
    assert r.tokens_per_s == pytest.approx(32 / r.tpot_s)


def test_capacity_plan_obeys_littles_law_and_its_target():
    p = sv.plan_capacity("Llama-3-8B", "H200-SXM", 50, 1024, 256, 0.03, 3.0)
    assert p.feasible
    lam_r = 50 / p.replicas
    assert p.batch == pytest.approx(sv.littles_law_concurrency(lam_r, 256 * p.tpot_s), rel=1e-6)
    assert p.tpot_s <= 0.03 + 1e-12
    assert p.batch <= p.max_batch_latency <= p.max_batch_memory
    assert 0 < p.utilization <= p.max_utilization == sv.DEFAULT_MAX_UTILIZATION
    assert p.cost_per_million_output_tokens == pytest.approx(sv.cost_per_million_tokens(3.0, p.gpus, 50 * 256))
    # TPOT seen by a request: one step that carries its share of the newcomers' prompt tokens
    # (chunked prefill) ...
    step = sv.decode_step("Llama-3-8B", "H200-SXM", p.batch, 1024 + 128, prefill_tokens=p.batch * 1024 / 256, prompt_tokens=1024).time_s
    assert p.tpot_s == pytest.approx(step, rel=1e-6)
    # ... or, with separate prefills, the step plus its share of them.
    q = sv.plan_capacity("Llama-3-8B", "H200-SXM", 50, 1024, 256, 0.03, 3.0, chunked_prefill=False)
    step = sv.decode_step("Llama-3-8B", "H200-SXM", q.batch, 1024 + 128).time_s
    assert q.tpot_s == pytest.approx(step + q.batch * q.ttft_s / 256, rel=1e-6)


def test_capacity_plan_keeps_headroom():
    """Serving review 3: a plan at utilization ~1 has an unbounded queue (an M/G/c queue's wait
    diverges as the offered load approaches capacity), so the planner loads each replica to at
    most max_utilization of what it can serve; more headroom, never fewer GPUs."""
    for rate in (50, 2000, 20000):
        tight = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, 0.05, 3.0, max_utilization=1.0)
        p = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, 0.05, 3.0)
        loose = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, 0.05, 3.0, max_utilization=0.5)
        assert p.utilization <= 0.8 + 1e-9 and loose.utilization <= 0.5 + 1e-9
        assert tight.gpus <= p.gpus <= loose.gpus
    # at 20,000 requests/s the fleet is ~1/0.8 of the fully loaded one
    assert p.gpus == pytest.approx(tight.gpus / 0.8, rel=0.02)
    # chunked prefill: a prompt's tokens spread over ceil(P / (B P / O)) = ceil(O / B) fused steps
    assert p.prefill_steps == math.ceil(256 / p.batch) and p.ttft_chunked_s == pytest.approx(p.prefill_steps * p.tpot_s)
    assert p.ttft_chunked_s > p.ttft_s  # the bare prefill is a lower bound
    for bad in (0, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="max_utilization"):
            sv.plan_capacity("Llama-3-8B", "H200-SXM", 50, max_utilization=bad)


def test_capacity_floor_is_the_requests_flop():
    """Serving review 3: at high load the cost floor is set by FLOP: each request costs about
    2 N (P + O) FLOP, 80% of it prompt at P=1024, O=256, plus its KV reads (O steps over a mean
    context of P + O/2, memory-bound attention); relaxing the TPOT target buys nothing."""
    m = llms.LLAMA_3_8B
    plans = [sv.plan_capacity(m, "H200-SXM", 20000, 1024, 256, t, 3.0) for t in (0.02, 0.05, 1.0)]
    assert len({p.gpus for p in plans}) == 1
    p = plans[0]
    flop_s = 2 * m.flop_params * 1280 / 989.4e12  # GPU-seconds of one request's matmuls
    kv_s = 256 * m.kv_bytes_per_sequence(1024 + 128, 2) / 4.8e12  # and of its KV reads
    gpus = lambda t: 20000 * t / p.max_utilization  # noqa: E731
    assert gpus(flop_s) < p.gpus <= 1.02 * gpus(flop_s + kv_s)
    assert flop_s > 2 * kv_s  # FLOP, not the cache, sets most of the floor


def test_capacity_plan_monotone():
    few = sv.plan_capacity("Llama-3-8B", "H200-SXM", 10, 1024, 256, 0.02)
    many = sv.plan_capacity("Llama-3-8B", "H200-SXM", 500, 1024, 256, 0.02)
    assert many.gpus >= few.gpus and many.gpus > 1
    tight = sv.plan_capacity("Llama-3-8B", "H200-SXM", 500, 1024, 256, 0.005)
    loose = sv.plan_capacity("Llama-3-8B", "H200-SXM", 500, 1024, 256, 0.1)
    assert tight.gpus >= loose.gpus
    assert tight.cost_per_million_output_tokens >= loose.cost_per_million_output_tokens


def test_capacity_plan_infeasible_cases():
    p = sv.plan_capacity("Llama-3-70B", "H200-SXM", 1, 1024, 256, 0.05)
    assert not p.feasible and "tp" in p.reason
    assert sv.plan_capacity("Llama-3-70B", "H200-SXM", 1, 1024, 256, 0.05, tp=2).feasible
    p = sv.plan_capacity("Llama-3-8B", "H200-SXM", 1, 1024, 256, 0.001)
    assert not p.feasible and "target" in p.reason
    # no NaN in a plan that cannot be made (issue 12): its rates, times and costs are 0
    assert all(math.isfinite(v) for v in (p.batch, p.tpot_s, p.e2e_s, p.utilization, p.cost_per_million_output_tokens))
    with pytest.raises(ValueError, match="arrival_rate_per_s"):
        sv.plan_capacity("Llama-3-8B", "H200-SXM", 5e-324)


# --------------------------------------------------------------------------------------------
# The truth pass (issue 10): each finding, with a test that would have caught it
# --------------------------------------------------------------------------------------------
def test_mla_decode_attention_is_compute_bound_on_an_h200():
    """[FlashMLA] deepseek-ai/FlashMLA docs/20250422-new-kernel-deep-dive.md: decode attention's
    FLOP/B is h_q s_q (d_k + d_v) / d_k; for DeepSeek's MLA (h_q = 128, d_k = 576, d_v = 512,
    s_q = 1) that is 241.8, above the H200's ridge 989.4e12 / 4.8e12 = 206.1: compute-bound at any
    batch. GQA (Llama 3, 4 query heads per KV head) is 2 x 4 / 2 = 4 FLOP/B: memory-bound."""
    ds = llms.DEEPSEEK_V3
    assert ds.decode_attention_flop_per_byte(2) == pytest.approx(128 * (576 + 512) / 576)
    assert ds.decode_attention_flop_per_byte(2) > 989.4e12 / 4.8e12
    assert llms.LLAMA_3_8B.decode_attention_flop_per_byte(2) == 4.0
    for b in (1, 64, 1024):
        s = sv.decode_step("DeepSeek-V3", "H200-SXM", b, 8192)
        assert s.attention_bound == "compute"
        assert s.attention_s == pytest.approx(b * ds.decode_attention_flop_per_token * 8192 / 989.4e12)
        assert sv.decode_step("Llama-3-8B", "H200-SXM", b, 8192).attention_bound == "memory"
    # an fp8 latent doubles the intensity; on a GPU with a lower ridge GQA stays memory-bound
    assert ds.decode_attention_flop_per_byte(1) == pytest.approx(2 * ds.decode_attention_flop_per_byte(2))


def test_mla_attention_under_tensor_parallelism_is_memory_bound():
    """Serving review 2: under TP each GPU runs 128/n query heads against the whole latent (MLA's
    cache is replicated), so the FLOP per cached byte falls n-fold: 241.8 / 8 = 30.2 FLOP/B at TP=8,
    far below the ridge (206). [FlashMLA] deep-dive: compute-bound only when h_q s_q is large (all
    heads on one GPU, as DeepSeek's data-parallel attention deploys it). The step's label must
    agree with its time: attention_s is the KV read, not FLOP / peak."""
    ds = llms.DEEPSEEK_V3
    s = sv.decode_step("DeepSeek-V3", "H200-SXM", 64, 8192, "fp8", tp=8)
    assert s.attention_intensity == pytest.approx(ds.decode_attention_flop_per_byte(2) / 8)
    assert s.attention_bound == "memory"
    assert s.attention_s == pytest.approx(s.kv_bytes / 4.8e12)
    # TP=2: 121 FLOP/B, memory-bound too; TP=1: compute-bound
    assert sv.decode_step("DeepSeek-V3", "H200-SXM", 64, 8192, "fp8", tp=2).attention_bound == "memory"
    assert sv.decode_step("DeepSeek-V3", "H200-SXM", 64, 8192, "fp8", tp=1).attention_bound == "compute"
    # GQA: splitting KV heads keeps the intensity (4 FLOP/B) until tp exceeds them; then the
    # replicated heads lower it (Llama-3-8B's 8 KV heads on 16 GPUs: 2 FLOP/B)
    assert sv.decode_step("Llama-3-8B", "H200-SXM", 8, 1024, tp=8).attention_intensity == pytest.approx(4.0)
    assert sv.decode_step("Llama-3-8B", "H200-SXM", 8, 1024, tp=16).attention_intensity == pytest.approx(2.0)
    # the label agrees with the time for every tp
    for tp in (1, 2, 4, 8):
        st = sv.decode_step("DeepSeek-V3", "H200-SXM", 16, 4096, tp=tp)
        memory_time = st.kv_bytes / 4.8e12
        assert (st.attention_bound == "memory") == (st.attention_s == pytest.approx(memory_time))


def test_allreduce_call_time_replaces_the_ring_model():
    """Serving review 5: decode-size all-reduces in serving engines (vLLM custom_all_reduce.py,
    one-shot/two-shot inside CUDA graphs) cost mostly a fixed latency per call; with
    allreduce_call_s the comm term is 2 x layers x that time, whatever the message."""
    base = sv.decode_step("Llama-3-70B", "H200-SXM", 16, 4096, "fp8", tp=8)
    for call in (5e-6, 40e-6):
        s = sv.decode_step("Llama-3-70B", "H200-SXM", 16, 4096, "fp8", tp=8, allreduce_call_s=call)
        assert s.comm_s == pytest.approx(2 * 80 * call)
        assert s.time_s == pytest.approx(base.time_s - base.comm_s + 2 * 80 * call)
    assert sv.decode_step("Llama-3-70B", "H200-SXM", 16, 4096, "fp8", tp=1, allreduce_call_s=1.0).comm_s == 0.0
    with pytest.raises(ValueError, match="allreduce_call_s"):
        sv.decode_step("Llama-3-70B", "H200-SXM", 16, 4096, "fp8", tp=8, allreduce_call_s=-1e-6)


def test_prefill_prints_and_uses_one_flop_count():
    """The FLOP the chapter prints for a prefill is the count prefill_time_s divides by the peak."""
    m = llms.LLAMA_3_8B
    for p in (1024, 8192):
        t = sv.prefill_time_s(m, "H200-SXM", p)
        assert t == pytest.approx(max(m.prompt_flop(p) / 989.4e12, transformer.weight_bytes(m.step_params(p), 2) / 4.8e12))
    assert sv.prefill_time_s(m, "H200-SXM", 1024) == pytest.approx(m.prompt_flop(1024) / 989.4e12)
    # hand count: 2 x (params without embedding and head) x P + 2 x head + causal attention
    body = 8.03e9 - 2 * 128256 * 4096
    assert m.prompt_flop(1024) == pytest.approx(2 * body * 1024 + 2 * 128256 * 4096 + 32 * 32 * 1024**2 * 256)


def test_chunked_prefill_rides_on_the_decode_steps_weight_read():
    """[Sarathi] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
    Sarathi-Serve", OSDI 2024, sections 3-4: a hybrid batch reads the weights once for its decode
    and prefill tokens, so prefill tokens added to a memory-bound decode batch cost little
    ("piggybacking"). One fused step is max(weights / bandwidth, all FLOP / peak), not the sum of a
    decode roofline and a prefill roofline."""
    m, bw, peak = llms.LLAMA_3_8B, 4.8e12, 989.4e12
    d = sv.decode_step(m, "H200-SXM", 32, 1152)
    f = sv.decode_step(m, "H200-SXM", 32, 1152, prefill_tokens=128, prompt_tokens=1024)
    assert f.weight_bytes == d.weight_bytes  # one weight read for both
    assert f.linear_s == pytest.approx(f.weight_bytes / bw)  # 160 tokens x 16 GFLOP < the weight read
    lin_flop = 2 * 32 * m.flop_params + 2 * 128 * (m.flop_params - m.head_params) + 2 * (128 / 1024) * m.head_params
    assert lin_flop / peak < f.weight_bytes / bw
    separate = d.time_s + (128 / 1024) * sv.prefill_time_s(m, "H200-SXM", 1024)
    assert d.time_s < f.time_s < separate
    # past the ridge the fused matmuls are compute-bound: FLOP / peak
    g = sv.decode_step(m, "H200-SXM", 32, 1152, prefill_tokens=4096, prompt_tokens=1024)
    assert g.bound == "compute"
    # the planner: fewer GPUs at high load, never more
    for rate in (200, 2000):
        a = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, 0.05, 3.0)
        b = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, 0.05, 3.0, chunked_prefill=False)
        assert a.gpus <= b.gpus and a.cost_per_million_output_tokens <= b.cost_per_million_output_tokens
    # serving review 4: at 2000 requests/s both fleets are set by the prompts' FLOP, so chunking
    # barely changes the fleet; what it buys is TPOT without prefill stalls (Sarathi-Serve's goal)
    assert b.gpus <= 1.05 * a.gpus and a.tpot_s < 0.5 * b.tpot_s
    with pytest.raises(ValueError, match="prompt_tokens"):
        sv.decode_step(m, "H200-SXM", 1, 10, prefill_tokens=5)


def test_littles_law_batch_is_a_fixed_point():
    """[Little] L = lambda W with W = O x TPOT(B): the batch the server runs must reproduce itself."""
    for rate in (1, 5, 20):
        b = sv.steady_batch("Llama-3-8B", "H200-SXM", rate, 1024, 256)
        t = sv.decode_step("Llama-3-8B", "H200-SXM", b, 1024 + 128, prefill_tokens=b * 1024 / 256, prompt_tokens=1024).time_s
        assert b == pytest.approx(sv.littles_law_concurrency(rate, 256 * t), rel=1e-9)
    b0 = sv.steady_batch("Llama-3-8B", "H200-SXM", 20, 1024, 256, chunked_prefill=False)
    t0 = sv.decode_step("Llama-3-8B", "H200-SXM", b0, 1152).time_s + b0 * sv.prefill_time_s("Llama-3-8B", "H200-SXM", 1024) / 256
    assert b0 == pytest.approx(20 * 256 * t0, rel=1e-9)
    with pytest.raises(ValueError, match="arrival_rate_per_s"):
        sv.steady_batch("Llama-3-8B", "H200-SXM", 1e5, 1024, 256)


def test_memory_budget_plans_in_the_capacity_the_device_reports():
    """The H200 datasheet's "141 GB" is stored as 141 GiB (HBM is binary: nvidia-smi on an
    A800/A100-SXM4-80GB reports 81920 MiB); the device reports 150,109,880,320 B usable (139.8
    GiB; our H200 record's provenance). Budgets use the latter; without one, the datasheet's."""
    from widgets.hardware import gpus

    h200 = get_gpu("H200-SXM")
    assert h200.hbm_bytes == 141 * 2**30 and h200.memory_bytes == 150_109_880_320
    assert sv.memory_budget("Llama-3-8B", "H200-SXM").hbm_bytes == 150_109_880_320
    for g in gpus():  # with a device report its figure, else the datasheet's
        assert g.memory_bytes == (g.usable_memory_bytes or g.hbm_bytes)
        if g.memory_bytes >= 20 * 2**30:
            assert sv.memory_budget("Llama-3-8B", g).hbm_bytes == g.memory_bytes
    import dataclasses

    no_report = dataclasses.replace(h200, usable_memory_bytes=None)  # the datasheet's figure, then
    assert sv.memory_budget("Llama-3-8B", no_report).hbm_bytes == 141 * 2**30
    from widgets.experiments import harness

    rec = harness.load_reference("serving")
    # the catalog's figure is the one the reference H200 reported (re-measured boards of the same SKU agree)
    assert rec["provenance"]["gpu_memory_bytes"] == pytest.approx(h200.usable_memory_bytes, rel=0.005)


def test_paged_kv_cache_wastes_less_than_a_block_per_sequence():
    """[vLLM] section 4.1: blocks of a fixed number of tokens; a sequence wastes at most one partial block."""
    assert sv.paged_kv_blocks(1000, 16) == 63 and sv.paged_kv_blocks(1008, 16) == 63 and sv.paged_kv_blocks(1009, 16) == 64
    lengths = [1, 15, 16, 17, 1000, 4096]
    exact = sum(lengths) * 131072
    paged = sv.paged_kv_cache_bytes(131072, lengths, 16)
    assert exact <= paged < exact + len(lengths) * 16 * 131072
    assert paged == sum(-(-c // 16) for c in lengths) * 16 * 131072
    assert sv.paged_kv_cache_bytes(131072, 32, 16) == 32 * 131072
    assert sv.paged_kv_blocks(lengths, 16) == sum(sv.paged_kv_blocks(c, 16) for c in lengths) == 1 + 1 + 1 + 2 + 63 + 256
    assert sv.paged_kv_blocks([], 16) == 0
    with pytest.raises(ValueError, match=r"context_tokens\[1\]"):
        sv.paged_kv_blocks([16, -1], 16)


def test_decode_step_rejects_what_it_used_to_accept():
    """Issue 12 (the ModelConfig half is in tests/test_transformer.py)."""
    with pytest.raises(ValueError, match="allreduce_latency_s"):
        sv.decode_step("Llama-3-8B", "H200-SXM", 1, 10, tp=2, allreduce_latency_s=float("nan"))
    with pytest.raises(ValueError, match="compute_dtype"):
        sv.decode_step("Llama-3-8B", "H200-SXM", 1, 10, compute_dtype="fp6")


# --------------------------------------------------------------------------------------------
# The compute dtype: which peak bounds the arithmetic (a T4 has no bf16 tensor cores)
# Sources: [T4] NVIDIA T4 Tensor Core GPU datasheet: 65 TFLOPS mixed precision (FP16/FP32), 320 GB/s,
# and no bf16 tensor cores on Turing (CUDA C++ Programming Guide, warp matrix functions: bf16 from
# compute capability 8.0). [Llama3] meta-llama/Meta-Llama-3-8B config.json: hidden 4096, 32 layers,
# 32 heads / 8 KV heads, head dim 128, FFN 14336, vocab 128256 (untied head); 8.03B parameters.
# --------------------------------------------------------------------------------------------
T4_FP16_FLOP_PER_S, T4_BYTES_PER_S = 65e12, 320e9  # [T4]


def test_t4_latency_computes_bf16_weights_in_fp16_by_hand():
    """[T4] + [Llama3], by hand: Llama-3-8B, bf16 weights and cache, batch 8, 1024-token prompts,
    128 output tokens on a T4 (which the model used to refuse: it computed in bf16).

    - TPOT: a decode step at the mean context 1024 + 128/2 = 1088 reads every weight but the input
      embedding, 8.03e9 - 128256 x 4096 = 7,504,663,424 x 2 B, and the cache of 8 sequences,
      8 x 1088 x (2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B): 16,150,177,536 B at
      320 GB/s = 50.47 ms. Its matmuls do 8 x 2 x 7.50e9 = 1.2e11 FLOP, 1.85 ms at 65 TFLOP/s:
      memory-bound.
    - Ridge: 2 B per weight for 2 FLOP per sequence, so the batch is peak / bandwidth =
      65e12 / 320e9 = 203.125.
    - TTFT: the prompt's FLOP, 2 x 1024 x (7,504,663,424 - 525,336,576 head) for the body, the head
      for the last token only (2 x 525,336,576), causal attention 4 x 32 layers x 32 heads x 128 x
      1024^2 / 2, over 65 TFLOP/s = 224.1 ms (its weight read, 15.0 GB / 320 GB/s = 46.9 ms, is
      shorter: compute-bound)."""
    r = sv.latency("Llama-3-8B", "T4", 8, 1024, 128, "bf16", "bf16")
    assert r.compute_dtype == r.step.compute_dtype == "fp16"
    assert "no bf16 tensor cores" in r.compute_note and "bf16 needs sm_80" in r.compute_note
    assert r.compute_note == get_gpu("T4").why_no_peak("bf16") + "; computed in fp16"
    assert r.tpot_s == pytest.approx((7_504_663_424 * 2 + 8 * 1088 * 131_072) / T4_BYTES_PER_S, rel=1e-12)
    assert r.tpot_s == pytest.approx(50.47e-3, rel=1e-3)
    assert r.step.bound == "memory" and r.step.compute_s == pytest.approx(r.step.flop / T4_FP16_FLOP_PER_S, rel=1e-12)
    assert 8 * 2 * 7_504_663_424 / T4_FP16_FLOP_PER_S < r.step.compute_s < r.tpot_s / 20  # matmuls + attention
    assert r.step.ridge_batch == pytest.approx(T4_FP16_FLOP_PER_S / T4_BYTES_PER_S, rel=1e-12)
    head = 128256 * 4096
    prompt_flop = 2 * 1024 * (7_504_663_424 - head) + 2 * head + 4 * 32 * 32 * 128 * 1024**2 / 2
    assert r.ttft_s == pytest.approx(prompt_flop / T4_FP16_FLOP_PER_S, rel=1e-12)
    assert r.ttft_s == pytest.approx(224.1e-3, rel=1e-3)
    # asking for fp16 gives the same numbers and no note; asking for bf16 says why not
    asked = sv.latency("Llama-3-8B", "T4", 8, 1024, 128, "bf16", "bf16", compute_dtype="fp16")
    assert (asked.tpot_s, asked.ttft_s, asked.compute_dtype, asked.compute_note) == (r.tpot_s, r.ttft_s, "fp16", "")
    with pytest.raises(ValueError, match="compute_dtype.*bf16 needs sm_80"):
        sv.latency("Llama-3-8B", "T4", 8, 1024, 128, compute_dtype="bf16")


def test_compute_dtype_defaults_follow_the_weights():
    """The default: the weights' 16-bit (or fp32) format where the GPU has its peak, unchanged on
    every GPU with bf16 (the numbers of the chapter); 8- and 4-bit weights at the 16-bit rate, the
    note says so; fp8 matmuls when asked, at the catalog's fp8 peak (twice bf16's on an H200)."""
    for name in ("H200-SXM", "A100-SXM-80GB", "MI300X", "L4"):
        assert sv.compute_dtype_for(name, "bf16") == ("bf16", "")
        assert sv.compute_dtype_for(name, "fp16") == ("fp16", "")
        assert sv.compute_dtype_for(name, "int4")[0] == "bf16"
    assert sv.compute_dtype_for("T4", "fp16") == ("fp16", "")
    assert sv.compute_dtype_for("T4", "fp32") == ("fp32", "")
    assert sv.compute_dtype_for("T4", "int4") == ("fp16", "int4 weights are widened to 16 bits for the matmuls "
                                                  "(weight-only quantization); computed in fp16")
    key, note = sv.compute_dtype_for("H200-SXM", "fp8")
    assert key == "bf16" and "compute_dtype='fp8'" in note
    key, note = sv.compute_dtype_for("A100-SXM-80GB", "fp8")  # no fp8 tensor cores: the catalog's reason
    assert key == "bf16" and note.startswith(get_gpu("A100-SXM-80GB").why_no_peak("fp8"))
    with pytest.raises(ValueError, match="fp8 needs sm_89"):
        sv.compute_dtype_for("A100-SXM-80GB", "fp8", "fp8")
    assert sv.compute_dtype_for("H200-SXM", "fp8", "fp8_e4m3") == ("fp8", "")
    with pytest.raises(ValueError, match="compute_dtype must be a format with a peak"):
        sv.compute_dtype_for("H200-SXM", "bf16", "int8")
    # the default keeps the old bf16 numbers on an H200, fp8 weights included
    h = get_gpu("H200-SXM")
    assert sv.prefill_time_s("Llama-3-8B", h, 4096, "fp8") == sv.prefill_time_s("Llama-3-8B", h, 4096, "fp8", compute_dtype="bf16")
    # a compute-bound prefill in fp8 takes the bf16 time x bf16 peak / fp8 peak (989.4 / 1978.9)
    bf, f8 = (sv.prefill_time_s("Llama-3-8B", h, 4096, "fp8", compute_dtype=c) for c in ("bf16", "fp8"))
    assert f8 == pytest.approx(bf * h.peak("bf16") / h.peak("fp8"), rel=1e-12)
    # a peak given: the note says so (no catalog lookup)
    s = sv.decode_step("Llama-3-8B", "T4", 1, 10, peak_flop_per_s=1e12)
    assert s.compute_note.startswith("peak_flop_per_s given") and s.compute_dtype == "bf16"


def test_capacity_plan_on_a_t4_says_its_compute_dtype():
    """Llama-3-8B in bf16 does not fit a T4's 15,079 MiB (15.0 GB of weights in 90% of it); in int4
    it does, and the plan computes in fp16 and says why."""
    p = sv.plan_capacity("Llama-3-8B", "T4", 1, 1024, 256, 0.1, 0.35)
    assert not p.feasible and p.compute_dtype == "fp16" and "bf16 needs sm_80" in p.compute_note
    p = sv.plan_capacity("Llama-3-8B", "T4", 1, 1024, 256, 0.1, 0.35, weight_dtype="int4")
    assert p.feasible and p.compute_dtype == "fp16" and "int4" in p.compute_note
    assert p.ttft_s == sv.prefill_time_s("Llama-3-8B", "T4", 1024, "int4", compute_dtype="fp16")
    assert sv.steady_batch("Llama-3-8B", "T4", 1, 1024, 256, "int4") == pytest.approx(p.batch, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(b=st.floats(0.5, 2048), ctx=st.integers(0, 200_000), pre=st.floats(0, 8192), p=st.integers(1, 32768),
       name=st.sampled_from(list(llms.PRESETS)), tp=st.sampled_from([1, 2, 8]))
def test_fused_step_finite_and_monotone(b, ctx, pre, p, name, tp):
    """Finite in, finite out; more prompt tokens, more sequences or a longer context never take less time."""
    s = sv.decode_step(name, "H200-SXM", b, ctx, "fp8", tp=tp, prefill_tokens=pre, prompt_tokens=p)
    assert all(math.isfinite(v) for v in (s.time_s, s.flop, s.intensity, s.memory_s, s.compute_s))
    assert sv.decode_step(name, "H200-SXM", b, ctx, "fp8", tp=tp, prefill_tokens=pre + 64, prompt_tokens=p).time_s >= s.time_s
    assert sv.decode_step(name, "H200-SXM", b + 1, ctx, "fp8", tp=tp, prefill_tokens=pre, prompt_tokens=p).time_s >= s.time_s
    assert sv.decode_step(name, "H200-SXM", b, ctx + 100, "fp8", tp=tp, prefill_tokens=pre, prompt_tokens=p).time_s >= s.time_s


@settings(max_examples=15, deadline=None)
@given(r1=st.floats(0.1, 30), r2=st.floats(0.1, 30))
def test_steady_batch_monotone_in_the_rate(r1, r2):
    lo, hi = sorted((r1, r2))
    assert sv.steady_batch("Llama-3-8B", "H200-SXM", lo) <= sv.steady_batch("Llama-3-8B", "H200-SXM", hi) * (1 + 1e-9)


# --------------------------------------------------------------------------------------------
# Bad input: every public model function names the parameter
# --------------------------------------------------------------------------------------------
BAD = [0, -1, 1.5, float("nan"), float("inf"), "8", None]


@pytest.mark.parametrize("bad", BAD)
def test_bad_integers_name_the_parameter(bad):
    cases = [
        ("layers", lambda v: transformer.kv_cache_bytes_per_token(v, 8, 128)),
        ("kv_heads", lambda v: transformer.kv_cache_bytes_per_token(32, v, 128)),
        ("head_dim", lambda v: transformer.kv_cache_bytes_per_token(32, 8, v)),
        ("kv_lora_rank", lambda v: transformer.mla_kv_cache_bytes_per_token(61, v, 64)),
        ("layers", lambda v: transformer.mla_kv_cache_bytes_per_token(v, 512, 64)),
        ("layers", lambda v: transformer.dense_transformer_params(v, 1, 1, 1, 1, 1, 1)),
        ("n_experts", lambda v: transformer.experts_touched_fraction(1, 1, v)),
        ("tp", lambda v: sv.memory_budget("Llama-3-8B", "H200-SXM", 10, 1, tp=v)),
        ("gpus", lambda v: sv.allreduce_time_s(1, v, 1e9)),
        ("prompt_tokens", lambda v: sv.prefill_time_s("Llama-3-8B", "H200-SXM", v)),
    ]
    for name, fn in cases:
        with pytest.raises(ValueError, match=name):
            fn(bad)


@given(v=st.one_of(st.floats(max_value=-1e-9), st.just(float("nan")), st.just(float("inf")), st.just(-1)))
def test_negative_and_non_finite_quantities_rejected(v):
    for name, fn in (
        ("param_bytes", lambda: sv.decode_step_time_s(v, 0, 1e12)),
        ("kv_bytes", lambda: sv.decode_step_time_s(1, v, 1e12)),
        ("hbm_bytes_per_s", lambda: sv.decode_step_time_s(1, 1, v)),
        ("params", lambda: transformer.prefill_flop(v, 10)),
        ("tokens", lambda: transformer.prefill_flop(1e9, v)),
        ("arrival_rate_per_s", lambda: sv.littles_law_concurrency(v, 1)),
        ("latency_s", lambda: sv.littles_law_concurrency(1, v)),
        ("bytes_per_elem", lambda: transformer.kv_cache_bytes_per_token(1, 1, 1, v)),
        ("bytes_per_token", lambda: transformer.kv_cache_bytes(v, 10)),
        ("params", lambda: transformer.weight_bytes(v)),
        ("peak_flop_per_s", lambda: sv.decode_ridge_batch(1, 1, 0, v, 1)),
        ("gpu_hour_price", lambda: sv.cost_per_million_tokens(v, 1, 1)),
        ("tokens_per_s", lambda: sv.cost_per_million_tokens(1, 1, v)),
        ("ttft_s", lambda: sv.e2e_latency_s(v, 0.1, 2)),
        ("tpot_s", lambda: sv.decode_tokens_per_s(1, v)),
        ("batch", lambda: sv.decode_step("Llama-3-8B", "H200-SXM", v, 10)),
        ("arrival_rate_per_s", lambda: sv.plan_capacity("Llama-3-8B", "H200-SXM", v)),
        ("tpot_target_s", lambda: sv.plan_capacity("Llama-3-8B", "H200-SXM", 1, tpot_target_s=v)),
        ("reserve_fraction", lambda: sv.memory_budget("Llama-3-8B", "H200-SXM", 10, 1, reserve_fraction=v)),
    ):
        with pytest.raises(ValueError, match=name):
            fn()


def test_bad_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="dtype must be one of"):
        dtypes.bytes_per_element("fp6")
    with pytest.raises(ValueError, match="name must be one of"):  # the caller's parameter name
        llms.get_model("GPT-5")
    with pytest.raises(ValueError, match="^model must be one of"):
        sv.decode_step("GPT-5")
    with pytest.raises(ValueError, match="^gpu must be one of"):
        sv.decode_step("Llama-3-8B", "TPU-v5e")
    with pytest.raises(ValueError, match="^weight_dtype must be one of"):
        sv.memory_budget("Llama-3-8B", weight_dtype="fp6")
    with pytest.raises(ValueError, match="^kv_dtype must be one of"):
        sv.plan_capacity("Llama-3-8B", kv_dtype="fp6")
    with pytest.raises(ValueError, match="kv_heads"):
        transformer.custom_model(32, 4096, 8, 16, 128, 14336)


def test_models_import_without_torch_or_ipywidgets():
    """The models layer needs only the standard library and numpy."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['ipywidgets'] = None; sys.modules['plotly'] = None\n"
        "from widgets.models import llms; print(llms.LLAMA_3_8B.kv_bytes_per_token())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "131072.0"


# --------------------------------------------------------------------------------------------
# Calculators
# --------------------------------------------------------------------------------------------
def _frame(fig, ci, si):
    """The frame of choice ``ci`` at slider position ``si`` of a grid_figure."""
    names = [f.name for f in fig.frames]
    return fig.frames[names.index(f"{ci}:{si}" if fig.layout.updatemenus else str(si))]


def _text(frame) -> str:
    t = frame.layout.title
    return (t.text + " | " + (t.subtitle.text if t.subtitle and t.subtitle.text else "")).replace("<br>", " ")


def test_memory_figure_frames_match_the_model():
    from widgets.ui import serving as ui
    from widgets.units import GiB

    batches = (1, 64, 128)
    choices = (("Llama-3-8B", "bf16", 8192), ("Llama-3-70B", "fp8", 8192))
    fig = ui.memory_figure(choices, "H200-SXM", batches)
    assert len(fig.frames) == len(batches) * 2 and len(fig.layout.sliders) == 2 and len(fig.layout.updatemenus[0].buttons) == 2
    b = sv.memory_budget("Llama-3-8B", "H200-SXM", 8192, 128)
    f = _frame(fig, 0, 2)
    names = [t.name for t in f.data]
    assert f.data[names.index("KV cache")].x[0] == pytest.approx(b.kv_bytes / GiB)
    assert f.data[names.index("weights")].x[0] == pytest.approx(b.weight_bytes / GiB)
    assert "does NOT fit" in _text(f) and "at most 110 sequences" in _text(f)
    assert "fits" in _text(_frame(fig, 0, 1))
    b70 = sv.memory_budget("Llama-3-70B", "H200-SXM", 8192, 64, "fp8")
    f70 = _frame(fig, 1, 1)
    assert f70.data[[t.name for t in f70.data].index("weights")].x[0] == pytest.approx(b70.weight_bytes / GiB)


def test_kv_per_sequence_figure_shows_the_window():
    from widgets.ui import serving as ui
    from widgets.units import GiB

    fig = ui.kv_per_sequence_figure(contexts=(4096, 32768))
    assert len(fig.frames) == 4 and len(fig.layout.updatemenus[0].buttons) == 2  # bf16 and fp8
    bars = _frame(fig, 0, 1).data[0]
    i = list(bars.x).index("Mistral-7B")
    assert bars.y[i] == pytest.approx(llms.MISTRAL_7B.kv_bytes_per_sequence(32768, 2) / GiB) == pytest.approx(0.5)
    assert _frame(fig, 0, 0).data[0].y[i] == pytest.approx(0.5)
    assert _frame(fig, 1, 1).data[0].y[i] == pytest.approx(0.25)  # fp8


def test_latency_figure_marker_is_the_model_tpot():
    from widgets.ui import serving as ui

    fig = ui.latency_figure(batches=(1, 32, 512))
    assert len(fig.frames) == 3 * len(ui.LATENCY_CHOICES) and len(fig.layout.updatemenus[0].buttons) == len(ui.LATENCY_CHOICES)
    marker = _frame(fig, 0, 1).data[-1]
    assert marker.y[0] == pytest.approx(sv.latency("Llama-3-8B", "H200-SXM", 32, 1024, 256).tpot_s * 1e3)
    assert "matmuls memory-bound" in _text(_frame(fig, 0, 0))
    assert "matmuls compute-bound" in _text(_frame(fig, 0, 2))
    ds = ui.LATENCY_CHOICES.index(("DeepSeek-V3", "H200-SXM", "fp8", 8))
    # MLA on 8 GPUs: each holds 16 of the 128 heads but the whole latent, 30 FLOP/B (review 2)
    assert "attention memory-bound" in _text(_frame(fig, ds, 0))
    m = _frame(fig, ds, 1).data[-1]
    assert m.y[0] == pytest.approx(sv.latency("DeepSeek-V3", "H200-SXM", 32, 1024, 256, "fp8", tp=8).tpot_s * 1e3)


def test_capacity_figure_titles_come_from_the_planner():
    from widgets.ui import serving as ui

    choices = (("Llama-3-8B", "H200-SXM", 1024, "bf16", 1), ("Llama-3-8B", "H100-SXM", 1024, "bf16", 1))
    fig = ui.capacity_figure(choices, targets_ms=(10, 50), rates=(1, 50, 1000), rate=50)
    assert len(fig.frames) == 4 and len(fig.layout.sliders) == 2
    p = sv.plan_capacity("Llama-3-8B", "H200-SXM", 50, 1024, 256, 0.05, 3.0)
    assert f"{p.gpus} GPU" in _text(_frame(fig, 0, 1))
    assert _frame(fig, 0, 1).data[1].y[0] == pytest.approx(p.cost_per_million_output_tokens)
    curve = _frame(fig, 0, 0).data[0]
    p10 = sv.plan_capacity("Llama-3-8B", "H200-SXM", 1000, 1024, 256, 0.01, 3.0)
    assert curve.y[2] == pytest.approx(p10.cost_per_million_output_tokens)
    assert curve.y[0] > curve.y[2]  # a lightly loaded GPU makes expensive tokens
    h100 = sv.plan_capacity("Llama-3-8B", "H100-SXM", 50, 1024, 256, 0.05, 3.0)
    assert _frame(fig, 1, 1).data[1].y[0] == pytest.approx(h100.cost_per_million_output_tokens)
    with pytest.raises(ValueError, match="rates"):
        ui.capacity_figure(rates=(0,))
    with pytest.raises(ValueError, match="targets_ms"):
        ui.capacity_figure(targets_ms=(-1,))


def test_figures_reject_bad_slider_values():
    from widgets.ui import serving as ui

    with pytest.raises(ValueError, match="batches"):
        ui.memory_figure(batches=(1, -2))
    with pytest.raises(ValueError, match="context_tokens"):
        ui.memory_figure(choices=(("Llama-3-8B", "bf16", -5),))


def _html(box) -> str:
    """What a live form shows after its last refresh (HTML parts)."""
    return "".join(item for item in box.shown if isinstance(item, str))


def test_live_forms_recompute_and_show_errors():
    from widgets.ui import serving as ui

    box = ui.memory_calculator()
    assert "<td>max concurrent sequences</td><td><b>110</b>" in _html(box)
    box.controls["kv_dtype"].value = "fp8"
    # (0.9 x 150,109,880,320 B usable - 16.06 GB - 0.21 GB) / (512 MiB of KV + 0.5 MB of logits) = 221.1
    assert "<td>max concurrent sequences</td><td><b>221</b>" in _html(box)
    box.controls["model"].value = "custom"
    _html(box)
    box.controls["kv_heads"].value = 64  # more KV heads than query heads
    text = _html(box)
    assert "Invalid input" in text and "kv_heads" in text

    box = ui.latency_calculator()
    r = sv.latency("Llama-3-8B", "H200-SXM", 32, 1024, 256)
    assert "TPOT" in _html(box)
    box.controls["batch"].value = 0  # the control clamps to its minimum, 1
    assert "TPOT" in _html(box)
    box.controls["tp"].value = 2
    box.controls["gpu"].value = "L4"
    text = _html(box)
    assert "Invalid input" in text and "tp" in text
    assert r.tpot_s > 0

    box = ui.capacity_calculator()
    assert "GPUs" in _html(box)
    box.controls["model"].value = "Llama-3-70B"
    assert "Infeasible" in _html(box)
    box.controls["tp"].value = 2
    assert "<td>GPUs</td>" in _html(box)
    # review 3: the planner says its TTFT has no queueing, and the headroom it kept
    assert "no queueing" in _html(box) and "at most 80%" in _html(box)


def test_calculators_offer_a_t4_and_show_the_fp16_fallback():
    """A T4 has no bf16 tensor cores: the calculators compute bf16 weights in fp16 there and say so
    (the static latency figure, the live latency and capacity forms, the static capacity planner)."""
    from widgets.ui import serving as ui

    why = get_gpu("T4").why_no_peak("bf16")
    fig = ui.latency_figure(choices=(("Llama-3-8B", "T4", "bf16", 1), ("Llama-3-8B", "H200-SXM", "bf16", 1)), batches=(8, 32))
    t4, h200 = _text(_frame(fig, 0, 0)), _text(_frame(fig, 1, 0))
    assert "not modelled" not in t4 and "computed in fp16" in t4 and why.replace(" ", "") in t4.replace(" ", "")
    assert "computed in" not in h200  # bf16 weights computed in bf16: nothing to say
    marker = _frame(fig, 0, 0).data[-1]
    assert marker.y[0] == pytest.approx(sv.latency("Llama-3-8B", "T4", 8, 1024, 256).tpot_s * 1e3)

    box = ui.latency_calculator()
    assert "<td>computed in</td><td><b>bf16 (the format of the weights)</b>" in _html(box)
    box.controls["gpu"].value = "T4"
    text = _html(box)
    assert "Invalid input" not in text and f"<td>computed in</td><td><b>fp16 ({why})</b>" in text

    box = ui.capacity_calculator()
    box.controls["gpu"].value = "T4"
    text = _html(box)  # bf16 weights do not fit; the answer still says what it computed in
    assert "Infeasible" in text and f"Computed in fp16 ({why}" in text
    box.controls["weight_dtype"].value = "int4"
    assert "<td>GPUs</td>" in _html(box) and "<td>computed in</td><td><b>fp16 (int4 weights" in _html(box)

    assert ("Llama-3-8B", "T4", 1024, "int4", 1) in ui.CAPACITY_CHOICES
    fig = ui.capacity_figure(choices=(("Llama-3-8B", "T4", 1024, "int4", 1),), targets_ms=(10, 50), rates=(1, 20), rate=1)
    assert "in fp16" in _text(_frame(fig, 0, 1)) and "infeasible" in _text(_frame(fig, 0, 0))  # int4 weights alone: 11.7 ms > 10 ms


def test_checks_pass_and_fail(capsys):
    from widgets.ui import serving as ui
    from widgets.units import GiB

    assert ui.check_kv_cache_gib(5)
    assert not ui.check_kv_cache_gib(10)
    assert "bf16" in capsys.readouterr().out
    assert not ui.check_kv_cache_gib(40)
    assert "8 KV heads" in capsys.readouterr().out
    ridge = sv.decode_step("Llama-3-8B", "H100-SXM", 1, 0).ridge_batch
    assert ui.check_ridge_batch(ridge)
    assert not ui.check_ridge_batch(2 * ridge)
    assert ui.check_kv_formula(lambda L, h, d, c, b, e: 2 * L * h * d * c * b * e)
    assert not ui.check_kv_formula(lambda L, h, d, c, b, e: L * h * d * c * b * e)
    assert not ui.check_kv_formula(lambda *a: 1 / 0)
    p = sv.plan_capacity("Llama-3-8B", "H200-SXM", 50, 1024, 256, 0.03, 3.0)
    assert ui.check_gpus_needed(p.gpus)
    assert not ui.check_gpus_needed(p.gpus + 1)
    assert not ui.check_gpus_needed(2.5)
    assert 5 == pytest.approx(llms.LLAMA_3_70B.kv_bytes_per_sequence(32768, 1) / GiB)


def test_presets_table_lists_every_preset():
    from widgets.ui import serving as ui

    html = ui.presets_table()
    for name in llms.PRESETS:
        assert name in html
    assert "128 KiB" in html and "MLA" in html


# --------------------------------------------------------------------------------------------
# Experiments: CPU smoke tests (small, quick) and correctness of the decoder and kernels
# --------------------------------------------------------------------------------------------
def _tiny():
    from widgets.experiments.serving_decoder import DecoderConfig

    return DecoderConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=96, vocab=128, name="test")


def _dev():
    """The device these tests run on: the GPU where there is one (Triton compiled), else the CPU
    (Triton interpreted)."""
    from widgets.experiments import harness

    return harness.device()


def _elem_bytes():
    from widgets.experiments import harness

    return 2 if harness.on_gpu() else 4


@pytest.mark.parametrize("fused", [False, True])
def test_decode_with_cache_matches_a_full_forward(fused):
    """The cached decode step gives the same logits as a prefill over the whole sequence, and writes
    the same keys and values (fp32; ``fused`` runs the Triton kernels through the interpreter)."""
    import torch

    from widgets.experiments.serving_decoder import Decoder, KVCache, decode_step, prefill

    cfg = _tiny()
    dev = _dev()
    m = Decoder(cfg, device=dev, dtype=torch.float32, seed=1)
    p = 9
    tok = torch.randint(0, cfg.vocab, (3, p + 1), generator=torch.Generator().manual_seed(2)).to(dev)
    full_cache = KVCache(cfg, 3, p + 1, device=dev, dtype=torch.float32)
    full = prefill(m, tok, full_cache)
    for slots in (p + 1, 32):
        cache = KVCache(cfg, 3, slots, device=dev, dtype=torch.float32)
        prefill(m, tok[:, :p], cache)
        cos, sin = m.rope(torch.tensor([p], device=dev))
        out = decode_step(m, tok[:, p], cache, p, cos[0], sin[0], fused=fused)
        assert torch.allclose(out, full, atol=1e-4, rtol=1e-4)
        for a, b in zip(full_cache.k + full_cache.v, cache.k + cache.v):
            assert torch.allclose(a, b[:, :, : p + 1], atol=1e-5)


def test_decoder_parameter_count_matches_the_model():
    import torch

    from widgets.experiments.serving_decoder import Decoder, gpu_config

    cfg = _tiny()
    assert Decoder(cfg, device="cpu", dtype=torch.float32).n_params() == cfg.model_config().params
    g = gpu_config()
    assert g.model_config().params == pytest.approx(5.52e9, rel=0.01)  # >= 1B parameters on the GPU
    assert (g.hidden, g.heads, g.kv_heads, g.intermediate, g.vocab) == (8192, 64, 8, 28672, 128256)


@pytest.mark.parametrize("m", [1, 5, 16, 33])
def test_skinny_matmul_in_the_interpreter(m):
    import torch

    from widgets.experiments.serving_kernels import CONFIGS, skinny_matmul

    g = torch.Generator().manual_seed(m)
    x = torch.randn(m, 512, generator=g)
    w = torch.randn(80, 512, generator=g)
    ref = x @ w.T
    if torch.cuda.is_available():  # compiled: bf16 inputs (the interpreter's bf16 is broken, hence fp32 on a CPU)
        x, w = x.cuda().bfloat16(), w.cuda().bfloat16()
    for cfg in (CONFIGS[0], CONFIGS[3]):
        got = skinny_matmul(x, w, cfg).float().cpu()
        assert torch.allclose(
            got,
            ref,
            atol=1e-3 if x.dtype == torch.float32 else 0.05 * float(ref.abs().max()),
            rtol=1e-4 if x.dtype == torch.float32 else 0.02,
        )
    with pytest.raises(ValueError, match="K"):
        skinny_matmul(x[:, :100], w[:, :100], CONFIGS[0])


def test_fused_kernels_in_the_interpreter():
    import torch
    import torch.nn.functional as F

    from widgets.experiments import serving_kernels as k

    g = torch.Generator().manual_seed(0)
    dev = _dev()
    x = torch.randn(3, 200, generator=g).to(dev)
    r = torch.randn(3, 200, generator=g).to(dev)
    w = torch.randn(200, generator=g).to(dev)
    x1 = x.clone()
    out = k.add_rmsnorm(x1, r, w, 1e-5)
    assert torch.allclose(x1, x + r)
    assert torch.allclose(out, F.rms_norm(x + r, (200,), w, 1e-5), atol=1e-5)
    gu = torch.randn(2, 2 * 300, generator=g).to(dev)
    assert torch.allclose(k.silu_mul(gu), F.silu(gu[:, :300]) * gu[:, 300:], atol=1e-6)


def test_ceilings_and_gemv_smoke():
    from widgets.experiments import serving as ex

    c = ex.measure_ceilings(copy_nbytes=1 << 20, gemm_n=64, repeat=2)
    assert c.copy_bytes_per_s > 0 and c.gemm_flop_per_s > 0
    sweep = ex.measure_batched_gemv(batches=(1, 8), cfg=_tiny(), repeat=2)
    assert sweep.batches == [1, 8] and len(sweep.best_s) == 2 and all(t > 0 for t in sweep.cublas_s)
    assert sweep.weight_bytes == _elem_bytes() * sum(n * k for n, k in sweep.shapes)
    model = ex.gemv_model_s(sweep, 1e10, 1e11)
    assert model[0] == pytest.approx(max(sweep.bytes_moved[0] / 1e10, sweep.flop[0] / 1e11))


def test_decode_and_ttft_smoke():
    from widgets.experiments import serving as ex

    dec = ex.build_decoder(_tiny())
    steps = ex.measure_decode_steps(dec, batches=(1, 2), contexts=(8, 16), batch_context_tokens=8, context_batch=2, repeat=2)
    from widgets.experiments import harness

    assert len(steps.batch_step_s) == 2 and len(steps.context_step_s) == 2 and steps.graphs == harness.on_gpu()
    assert steps.kv_bytes_per_token == 2 * 2 * 2 * 16 * _elem_bytes()
    pred = ex.decode_model_s(steps, "H200-SXM", 1e10, 1e11)
    assert pred["batch"][0] == pytest.approx(sv.decode_step_time_s(steps.step_weight_bytes, 8 * steps.kv_bytes_per_token, 1e10))
    ttft = ex.measure_ttft(dec, prompts=(4, 8), repeat=2)
    assert len(ttft.prefill_s) == 2
    assert len(ex.ttft_model_s(ttft, "H200-SXM", 1e10, 1e11, "fp32")) == 2
    # the SM clock while the prefills ran (review 6): a reading on a GPU, a null and a reason without one
    assert set(ttft.nvml) >= {"sm_clock_mhz_median", "power_w_median", "samples", "reason"}
    if not harness.on_gpu():
        assert ttft.nvml["sm_clock_mhz_median"] is None and ttft.nvml["reason"]


def test_kv_memory_matches_the_formula():
    from widgets.experiments import serving as ex

    # Sizes whose every tensor is a multiple of 512 B: on a GPU the allocator rounds blocks to that.
    kv = ex.measure_kv_memory(ex.build_decoder(_tiny(), tune=False), batch=4, context_tokens=64)
    assert len(kv.variants) == 6
    for v in kv.variants:
        assert v["measured_bytes"] == v["formula_bytes"], v["name"]


def test_compare_and_record_are_json():
    from widgets.experiments import serving as ex

    c = ex.measure_ceilings(copy_nbytes=1 << 20, gemm_n=64, repeat=2)
    dec = ex.build_decoder(_tiny())
    steps = ex.measure_decode_steps(dec, batches=(1, 64), contexts=(8,), batch_context_tokens=8, context_batch=2, repeat=2)
    gemv = ex.measure_batched_gemv(batches=(1,), cfg=_tiny(), repeat=2)
    cmp = ex.compare_decode(steps, c, gemv)
    assert {"copy", "gemv"} <= set(cmp)  # and "datasheet" on a GPU of the catalog
    assert cmp["copy"]["batch_ratio"][0] == pytest.approx(steps.batch_step_s[0] / cmp["copy"]["batch_model_s"][0])
    assert math.isfinite(cmp["copy"]["max_error_batch_1_64"])
    json.dumps(cmp)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the CPU path of the tuning; on a GPU build_decoder runs it")
def test_linear_tuning_logic_on_the_cpu(monkeypatch):
    """The per-shape choice between cuBLAS (here ATen) and the Triton kernel (interpreted), run on
    the CPU: every shape gets a choice for every bucket, and the model still computes the same."""
    import torch

    from widgets.experiments import serving_kernels
    from widgets.experiments.serving_decoder import Decoder, DecoderConfig, KVCache, decode_step, tune_linears

    monkeypatch.setattr(serving_kernels, "CONFIGS", ((32, 128, 4, 4), (16, 256, 4, 4)))
    cfg = DecoderConfig(layers=1, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=256, vocab=256, name="tune")
    m = Decoder(cfg, device="cpu", dtype=torch.float32)
    cache = KVCache(cfg, 2, 8, device="cpu", dtype=torch.float32, fill=True)
    tokens = torch.tensor([1, 2])
    cos, sin = m.rope(torch.tensor([7]))
    before = decode_step(m, tokens, cache, 7, cos[0], sin[0])
    summary = tune_linears(m, batches=(1, 2), repeat=1, enabled=True)
    shapes = {(c["n"], c["k"]) for c in summary["choices"]}
    assert shapes == {tuple(lin.weight.shape) for lin in m.linears()}
    assert all(c["impl"] == "cublas" or c["impl"].startswith("triton") for c in summary["choices"])
    assert all(set(lin.choice) == {1, 2} for lin in m.linears())
    after = decode_step(m, tokens, cache, 7, cos[0], sin[0])
    assert torch.allclose(before, after, atol=1e-3, rtol=1e-3)
    json.dumps(summary)


def test_recorded_h200_reference_meets_the_target():
    """The committed H200 record (python -m widgets.measure --topic serving on an H200): a decoder
    of more than 1B parameters; measured decode step times within 25 % of the memory-bound model for
    batch 1 to 64 when the model is given the copy bandwidth measured in the same run (a
    calibration, recomputed here from the raw times); KV cache allocations equal to the formula."""
    from widgets.experiments import harness
    from widgets.experiments import serving as ex

    ref = harness.load_reference("serving")
    prov, r = ref["provenance"], ref["results"]
    assert "H200" in prov["gpu"] and prov["driver"] and prov["torch"] and prov["date"] and prov["command"]
    by = ex.compare_record(r, ex.record_gpu_name(ref))["decode"]["by_option"]["copy"]
    assert by["max_error_batch_1_64"] <= 0.25
    assert r["decode"]["params"] > 1e9
    for v in r["kv_memory"]["variants"]:
        assert v["measured_bytes"] == v["formula_bytes"], v["name"]


def test_gemv_knee_is_where_the_time_leaves_the_flat_part():
    """Serving review 8: with times +8% at batch 128 and +42% at 256 the flat part ends at 256
    (25% criterion), not at 512 (a 1.5x criterion would say the time "first grew by half" there);
    a 13% wobble at batch 32 (the H200 record of 2026-12-01, as tuned) is not the knee."""
    from widgets.experiments import serving as ex

    batches = [1, 2, 64, 128, 256, 512]
    times = [1.0, 0.99, 0.98, 1.08, 1.42, 2.59]
    assert ex.gemv_knee_batch(batches, times) == 256
    assert ex.gemv_knee_batch(batches, times, factor=1.5) == 512
    assert ex.gemv_knee_batch(batches, [1.0] * 6) is None
    assert ex.gemv_knee_batch([1, 16, 32, 64, 128, 256], [1.0, 1.01, 1.13, 1.02, 1.08, 1.40]) == 256


def test_accuracy_rows_recompute_the_record():
    """Convention 7: every row recomputed from raw measurements with today's models; only the
    datasheet option is a prediction; the gemv constant is a calibration (not a prediction)."""
    from widgets.accuracy import Row
    from widgets.experiments import harness
    from widgets.experiments import serving as ex

    ref = harness.load_reference("serving")
    rows = ex.accuracy_rows(ref)
    assert len(rows) >= 12 and all(isinstance(x, Row) for x in rows)
    assert ex.record_gpu_name(ref) == "H200-SXM"
    for x in rows:
        if "copy" in x.inputs or "weight stream" in x.inputs:
            assert x.label == "calibrated", x
        assert math.isfinite(x.ratio) and x.ratio > 0
    d = ref["results"]["decode"]
    cfg = ex.DecoderConfig(**d["config"]).model_config()
    pred = [x for x in rows if x.label == "prediction" and x.quantity == f"decode step, batch 1, {d['batch_context_tokens']} tokens"]
    assert len(pred) == 1
    assert pred[0].predicted == pytest.approx(sv.decode_step(cfg, "H200-SXM", 1, d["batch_context_tokens"], "bf16", "bf16",
                                                             hbm_bytes_per_s=4.8e12, peak_flop_per_s=989.4e12).time_s)
    assert pred[0].measured == d["batch_step_s"][0]
    gemv = [x for x in rows if "weight stream" in x.inputs and x.quantity.startswith("decode step")]
    assert gemv and all("77%" in x.note for x in gemv)  # 4 layers x 1.71 GB of 8.95 GB
    # the paged cache is a bookkeeping check, never a row (review 1: its pool has the formula's
    # shape and its blocks are ceil(len / 16) by construction, so it cannot fail as a prediction)
    assert not any("paged" in x.quantity or "blocks" in x.quantity for x in rows)
    from widgets.experiments.serving_decoder import DecoderConfig

    rec = json.loads(json.dumps(ref))
    kcfg = DecoderConfig(**rec["results"]["kv_memory"]["config"])
    small = DecoderConfig(layers=1, hidden=kcfg.hidden, heads=kcfg.heads, kv_heads=kcfg.kv_heads, head_dim=kcfg.head_dim,
                          intermediate=kcfg.intermediate, vocab=kcfg.vocab, name="one layer")
    rec["results"]["kv_memory"]["paged"] = ex.measure_paged_kv(small, 2, 40, 3, device="cpu", dtype=__import__("torch").bfloat16)
    rec["results"]["kv_memory"]["config"]["layers"] = 1
    assert not [x for x in ex.accuracy_rows(rec) if "paged" in x.quantity or "blocks" in x.quantity]


def test_accuracy_rows_of_a_device_without_datasheet_figures():
    """A CPU or an unknown GPU has no datasheet: its record has no prediction rows of that kind,
    and accuracy_rows still works (it used to raise KeyError)."""
    from widgets.experiments import harness
    from widgets.experiments import serving as ex

    rec = json.loads(json.dumps(harness.load_reference("serving")))
    rec["results"]["ceilings"]["datasheet_bytes_per_s"] = None
    rec["results"]["ceilings"]["datasheet_flop_per_s"] = None
    rows = ex.accuracy_rows(rec)
    assert rows and not any("datasheet" in x.inputs for x in rows)
    assert all(x.label != "prediction" or "transient" in x.quantity for x in rows)


@settings(max_examples=50, deadline=None)
@given(lengths=st.lists(st.integers(0, 100_000), min_size=1, max_size=50), block=st.integers(1, 512), bpt=st.floats(1, 1e7))
def test_paged_cache_holds_the_tokens_and_less_than_a_block_more(lengths, block, bpt):
    paged = sv.paged_kv_cache_bytes(bpt, lengths, block)
    exact = sum(lengths) * bpt
    assert math.isfinite(paged) and exact * (1 - 1e-12) <= paged < exact + len(lengths) * block * bpt * (1 + 1e-12)


def test_ceilings_line_shows_spread_and_nvml():
    from widgets.ui import serving as ui

    c = dict(device="NVIDIA H200", copy_bytes_per_s=4.19e12, gemm_flop_per_s=747e12, dtype="bfloat16", copy_bytes_per_s_min=4.1e12,
             copy_bytes_per_s_max=4.2e12, gemm_flop_per_s_min=700e12, gemm_flop_per_s_max=760e12,
             gemm_nvml=dict(sm_clock_mhz_median=1755.0, sm_clock_mhz_min=1500.0, power_w_median=650.0, power_w_max=699.0, samples=9, reason=None))
    line = ui.ceilings_line(c)
    assert "1,755 MHz" in line and "650 W" in line and "700 to 760 TFLOP/s" in line
    old = {k: c[k] for k in ("device", "copy_bytes_per_s", "gemm_flop_per_s", "dtype")}  # a record before the spread was kept
    assert "repeats" not in ui.ceilings_line(old)
    assert ui.nvml_phrase(dict(sm_clock_mhz_median=None, reason="no GPU: nothing to sample")).startswith("no clock or power reading")


def test_paged_kv_cache_fills_like_a_server():
    """A real paged cache: blocks taken on demand, keys read back through the block table, the
    pool's bytes equal to the blocks' and the blocks taken equal to ceil(length / block) each."""
    from widgets.experiments import serving as ex

    r = ex.measure_paged_kv(_tiny(), 3, 50, 5, device="cpu")
    assert r["pool_measured_bytes"] == r["pool_formula_bytes"] == r["num_blocks"] * r["block_bytes"]
    assert r["blocks_used"] == sum(sv.paged_kv_blocks(c, 16) for c in r["lengths"])
    assert r["exact_bytes"] <= r["used_bytes"] < r["exact_bytes"] + 3 * r["block_bytes"]
    json.dumps(r, allow_nan=False)


def test_experiment_dtype_and_gpu_come_from_registries():
    import torch

    from widgets.experiments import serving as ex

    assert ex.model_dtype(torch.float16) == "fp16" and ex.model_dtype(torch.bfloat16) == "bf16" and ex.model_dtype("float32") == "fp32"
    with pytest.raises(ValueError, match="torch_dtype"):
        ex.model_dtype(torch.complex64)
    assert ex.record_gpu_name({"provenance": {"gpu": "NVIDIA H100 80GB HBM3"}}) == "H100-SXM"
    assert ex.record_gpu_name({"provenance": {"gpu": "CPU (x86_64)"}}) is None  # no catalog GPU: said, not an H200
    assert ex.model_gpu_name("L4") == "L4" and ex.model_gpu_name() == (ex.local_gpu_name() or ex.MODEL_STANDIN_GPU)


def test_memory_figure_x_range_fixed_per_choice_and_holds_every_bar():
    """Reader report: the x range jumped between frames and 'does NOT fit' bars ran off the plot.
    Every frame of a choice and its dropdown button carry one range that holds that choice's bars."""
    from widgets.ui import serving as ui
    fig = ui.memory_figure()
    buttons = fig.layout.updatemenus[0].buttons
    for fr in fig.frames:
        ci = int(fr.name.split(":")[0])
        lo, hi = fr.layout.xaxis.range
        assert (lo, hi) == tuple(buttons[ci].args[1]["xaxis.range"])
        assert sum(t.x[0] for t in fr.data) <= hi
    assert fig.layout.xaxis.range == tuple(buttons[fig.layout.updatemenus[0].active].args[1]["xaxis.range"])
    # the default choice (Llama-3-8B at 8k) is not squeezed by the largest choice's range
    assert fig.layout.xaxis.range[1] < 2 * max(f.layout.xaxis.range[1] for f in fig.frames if f.name.startswith("0:"))
    assert fig.layout.xaxis.range[1] < max(f.layout.xaxis.range[1] for f in fig.frames) / 3


def test_capacity_figure_marker_on_curve_and_short_labels():
    from widgets.ui import serving as ui
    fig = ui.capacity_figure()
    for fr in fig.frames:
        curve, marker = fr.data[0], fr.data[1]
        if marker.y[0] is None:
            continue
        i = list(curve.x).index(marker.x[0])
        assert curve.y[i] == pytest.approx(marker.y[0])
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert all(len(s) <= 30 for s in labels), labels
    assert not any(" on " in s for s in labels)
    readout = fig.layout.title.subtitle.text.replace("<br>", " ")
    assert "floor" in readout and "/M tokens" in readout.split("floor")[1]


def test_custom_fields_shown_only_for_custom_and_vocab_used():
    from widgets.ui import serving as ui
    box = ui.memory_calculator()
    c = box.controls
    assert c["layers"].layout.display == "none" and c["vocab_size"].disabled
    c["model"].value = "custom"
    assert c["layers"].layout.display != "none" and not c["vocab_size"].disabled
    before = box.shown[-1]
    m = ui.resolve_model("custom", vocab_size=128256)
    assert m.vocab_size == 128256
    c["vocab_size"].value = 128256  # a bigger embedding table: the weights grow
    assert box.shown[-1] != before
