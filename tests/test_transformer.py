"""Tests of the transformer arithmetic (widgets/models/transformer.py) against published figures
and hand-derived values.

Sources of the expected values (each test names the one it uses):
- [vLLM] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
  PagedAttention", SOSP 2023, section 3: OPT-13B's KV cache is "800 KB" per token,
  2 x 5120 x 40 x 2 bytes, and up to 1.6 GB for a 2048-token request.
- [DSV2] DeepSeek-V2 paper (2024), section 2.1.4 and Table 1: MLA caches (d_c + d_h^R) l elements per
  token, "equal to GQA with only 2.25 groups" for d_c = 4 d_h, d_h^R = d_h / 2.
- [DSV3] DeepSeek-V3 technical report (2024), section 4.2: 61 layers, n_h = d_h = 128, d_c = 512, d_h^R = 64.
- [HF] Hugging Face model pages, Safetensors "Model size": Meta-Llama-3-8B 8.03B, Meta-Llama-3-70B
  70.6B, Mistral-7B-v0.1 7.24B params.
- [Mistral] Jiang et al., "Mistral 7B" (2023), Table 1: window_size 4096.
- [Scaling] Austin et al., "How to Scale Your Model" (2025), Part 7: LLaMA 2-13B's KV cache of
  6.7 GB per 8192 tokens.
- [Kaplan] Kaplan et al., "Scaling Laws for Neural Language Models" (2020), Table 1: a forward pass
  costs about 2N FLOP per token.
- [OFP8]/[MX]/[NVFP4]: element sizes of the storage formats, as in tests/test_dtypes.py.
"""

from __future__ import annotations

import pytest

from widgets import dtypes
from widgets.models import llms, transformer


# --------------------------------------------------------------------------------------------
# The KV cache, weights and parameters against published figures
# --------------------------------------------------------------------------------------------
def test_opt13b_kv_cache_is_800_kb_per_token():
    """[vLLM] section 3: 2 (K and V) x 5120 x 40 layers x 2 bytes = "800 KB"; 2048 tokens = "1.6 GB"."""
    per_token = transformer.kv_cache_bytes_per_token(layers=40, kv_heads=40, head_dim=128, bytes_per_elem=2)
    assert per_token == 2 * 5120 * 40 * 2 == 800 * 1024
    assert transformer.kv_cache_bytes(per_token, 2048) / 2**30 == pytest.approx(1.6, rel=0.03)


def test_llama2_13b_kv_cache_scaling_book():
    """[Scaling] LLaMA 2-13B (L=40, K=40, H=128): 6.7 GB for one 8192-token sequence in bf16."""
    assert transformer.kv_cache_bytes(transformer.kv_cache_bytes_per_token(40, 40, 128, 2), 8192) / 1e9 == pytest.approx(6.7, rel=0.005)


def test_mla_is_gqa_with_2_25_groups():
    """[DSV2] Table 1: (d_c + d_h^R) l = (9/2) d_h l, "equal to GQA with only 2.25 groups"."""
    d_h, layers = 128, 60
    mla = transformer.mla_kv_cache_bytes_per_token(layers, 4 * d_h, d_h // 2, 2)
    one_group = transformer.kv_cache_bytes_per_token(layers, 1, d_h, 2)
    assert mla / one_group == 2.25
    assert mla == 4.5 * d_h * layers * 2


def test_deepseek_v3_kv_cache_vs_mha():
    """[DSV3] 61 layers, d_c 512 + d_h^R 64 = 576 elements per layer per token, against 2 x 128 x 128
    for MHA with its 128 heads: 1.76% of the MHA cache."""
    assert llms.DEEPSEEK_V3.kv_bytes_per_token(2) == 61 * 576 * 2
    ratio = llms.DEEPSEEK_V3.kv_bytes_per_token(2) / transformer.kv_cache_bytes_per_token(61, 128, 128, 2)
    assert ratio == pytest.approx(576 / 32768)
    by = transformer.kv_bytes_by_attention(61, 128, 128, 8)
    assert by["MHA"] > by["GQA"] > by["MLA"] > by["MQA"]


@pytest.mark.parametrize("preset, published", [(llms.LLAMA_3_8B, 8.03e9), (llms.LLAMA_3_70B, 70.6e9), (llms.MISTRAL_7B, 7.24e9)])
def test_parameter_count_matches_model_pages(preset, published):
    """[HF] Safetensors "Model size": counting the configuration's matrices gives the published total."""
    m = preset
    n = transformer.dense_transformer_params(m.layers, m.hidden_size, m.heads, m.kv_heads, m.head_dim, m.intermediate_size, m.vocab_size)
    assert n == pytest.approx(published, rel=0.002)
    assert m.params == published


def test_experts_touched():
    assert transformer.experts_touched_fraction(1, 8, 256) == pytest.approx(8 / 256)
    assert transformer.experts_touched_fraction(0, 8, 256) == 0
    assert transformer.experts_touched_fraction(10_000, 8, 256) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="experts_per_token"):
        transformer.experts_touched_fraction(1, 9, 8)


def test_sliding_window_caps_the_cache():
    """[Mistral] window 4096: a 32k-token sequence caches 4096 tokens, a short one all of them."""
    assert llms.MISTRAL_7B.kv_bytes_per_sequence(32768, 2) == 4096 * 128 * 1024
    assert llms.MISTRAL_7B.kv_bytes_per_sequence(1000, 2) == 1000 * 128 * 1024
    assert transformer.cached_tokens(5000, 4096) == 4096


def test_prefill_flop_two_per_parameter():
    """[Kaplan] Table 1: C_forward ~ 2N per token."""
    assert transformer.prefill_flop(7e9, 1) == 14e9
    assert transformer.prefill_flop(8e9, 1000) == 16e12
    assert transformer.decode_step_flop(8e9, 64) == 64 * 16e9


def test_causal_attention_flop_hand():
    """Per layer and head, QK^T 2 T^2 d and PV 2 T^2 d, halved by the causal mask."""
    assert transformer.causal_attention_flop(1, 1, 64, 64, 10) == 10 * 10 * 128
    assert transformer.causal_attention_flop(32, 32, 128, 128, 8192) == 32 * 32 * 8192**2 * 256


# --------------------------------------------------------------------------------------------
# Hand-derived values and edge cases
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "int4", "nvfp4", "mxfp4"])
def test_a_dtype_name_is_its_registry_bytes(name):
    """A format name stands for what one element of a tensor in that format occupies (widgets.dtypes: fp8
    1 B, int4 0.5 B; block-scaled formats with their scales, [MX] 32 elements per 8-bit scale, [NVFP4] 16)
    everywhere a bytes-per-element argument is taken."""
    b = dtypes.storage_bytes_per_element(name)
    assert b == {"mxfp4": 0.5 + 1 / 32, "nvfp4": 0.5 + 1 / 16}.get(name, dtypes.bytes_per_element(name))
    assert transformer.kv_cache_bytes_per_token(32, 8, 128, name) == 2 * 32 * 8 * 128 * b
    assert transformer.mla_kv_cache_bytes_per_token(61, 512, 64, name) == 61 * 576 * b
    assert transformer.weight_bytes(8e9, name) == 8e9 * b
    assert llms.LLAMA_3_8B.kv_bytes_per_token(name) == llms.LLAMA_3_8B.kv_bytes_per_token(b)


def test_bytes_per_elem_rejects_names_and_numbers_it_does_not_know():
    with pytest.raises(ValueError, match="^bytes_per_elem must be one of .*'bf16'"):
        transformer.kv_cache_bytes_per_token(32, 8, 128, "fp6")
    for bad in (0, -1, 9, float("nan"), True, None):
        with pytest.raises(ValueError, match="bytes_per_elem"):
            transformer.weight_bytes(1e9, bad)
    assert set(transformer.STORAGE_DTYPES) <= set(dtypes.dtype_names(aliases=True))


def test_dense_params_by_hand():
    """A one-layer toy: attention 4 h^2 (MHA, head_dim = h / heads), MLP 3 h f, two norms 2 h, a
    final norm h, embedding and head v h each (one matrix when tied)."""
    h, f, v = 8, 16, 10
    attn, mlp = 4 * h * h, 3 * h * f
    untied = attn + mlp + 2 * h + h + 2 * v * h
    assert transformer.dense_transformer_params(1, h, 2, 2, 4, f, v) == untied
    assert transformer.dense_transformer_params(1, h, 2, 2, 4, f, v, tied_embeddings=True) == untied - v * h
    # GQA: K and V shrink with the KV heads, Q and O do not
    assert transformer.dense_transformer_params(1, h, 2, 1, 4, f, v) == untied - 2 * h * 4


def test_custom_model_counts_its_parameters_and_names_its_attention():
    m = transformer.custom_model(32, 4096, 32, 8, 128, 14336, 128256)
    assert m.params == m.active_params == transformer.dense_transformer_params(32, 4096, 32, 8, 128, 14336, 128256)
    assert m.params == pytest.approx(llms.LLAMA_3_8B.params, rel=0.002)
    assert (m.attention, transformer.custom_model(2, 64, 4, 4, 16, 128).attention,
            transformer.custom_model(2, 64, 4, 1, 16, 128).attention) == ("gqa", "mha", "mqa")
    with pytest.raises(ValueError, match="kv_heads"):
        transformer.custom_model(32, 4096, 8, 16, 128, 14336)


def test_with_layers_recounts_a_dense_model():
    m = llms.LLAMA_3_8B.with_layers(4)
    assert m.layers == 4 and m.params == transformer.dense_transformer_params(4, 4096, 32, 8, 128, 14336, 128256)
    assert m.kv_bytes_per_token(2) == llms.LLAMA_3_8B.kv_bytes_per_token(2) / 8
    with pytest.raises(ValueError, match="dense"):
        llms.DEEPSEEK_V3.with_layers(4)


def test_activation_bytes_by_hand():
    """One layer's widest point, the MLP: (2 h + 3 f) elements per token, plus fp32 logits per sequence."""
    assert transformer.activation_bytes(10, 8, 16, 100, 2, 2) == 10 * (2 * 8 + 3 * 16) * 2 + 2 * 100 * 4
    assert transformer.activation_bytes(0, 8, 16, 100, 0) == 0


def test_attention_intensity_gqa_and_mla():
    """GQA: 2 (H / H_kv) / b FLOP/B (4 for Llama 3 in bf16); absorbed MLA [DSV3]: 2 H (2 d_c + d_R) / ((d_c + d_R) b)."""
    assert llms.LLAMA_3_8B.decode_attention_flop_per_byte(2) == 2 * (32 / 8) / 2
    assert llms.DEEPSEEK_V3.decode_attention_flop_per_byte(2) == 2 * 128 * (2 * 512 + 64) / ((512 + 64) * 2)
    assert llms.LLAMA_3_8B.decode_attention_flop_per_byte("fp8") == 2 * llms.LLAMA_3_8B.decode_attention_flop_per_byte("bf16")


def test_prompt_flop_counts_the_head_once():
    """2 per arithmetic parameter per token, the output head for the last token only, plus causal attention."""
    m, t = llms.LLAMA_3_8B, 1024
    body = m.flop_params - m.head_params
    want = 2 * body * t + 2 * m.head_params + transformer.causal_attention_flop(32, 32, 128, 128, t)
    assert m.prompt_flop(t) == want


def test_kv_cache_edge_cases():
    assert transformer.kv_cache_bytes(1000, 0, 8) == 0
    assert transformer.kv_cache_bytes(1000, 10, 0) == 0
    assert transformer.cached_tokens(0, 16) == 0 and transformer.cached_tokens(16, 16) == 16
    by = transformer.kv_bytes_by_attention(2, 4, 16, 4)
    assert by["MHA"] == by["GQA"] == 4 * by["MQA"]
    with pytest.raises(ValueError, match="kv_heads"):
        transformer.kv_bytes_by_attention(2, 4, 16, 8)


def test_model_config_rejects_what_it_used_to_accept():
    """Issue 12: moe_layers=-5, non-bool tied_embeddings, a zero latent rank were accepted."""
    base = dict(name="x", layers=4, hidden_size=64, heads=4, kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=100,
                params=1e6, active_params=1e6)
    for field, value in (("moe_layers", -5), ("tied_embeddings", "yes"), ("kv_lora_rank", 0), ("rope_head_dim", -1),
                         ("n_routed_experts", 2.5), ("layers", True), ("experts_per_token", -1)):
        with pytest.raises(ValueError, match=field):
            transformer.ModelConfig(**{**base, field: value})
    with pytest.raises(ValueError, match="experts_per_token"):
        transformer.ModelConfig(**{**base, "n_routed_experts": 4, "experts_per_token": 8, "moe_layers": 2, "moe_intermediate_size": 8})
    with pytest.raises(ValueError, match="moe_layers"):
        transformer.ModelConfig(**{**base, "n_routed_experts": 4, "experts_per_token": 2, "moe_layers": 9, "moe_intermediate_size": 8})
    with pytest.raises(ValueError, match="an MLA model needs"):
        transformer.ModelConfig(**{**base, "attention": "mla"})
