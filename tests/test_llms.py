"""Tests of the model catalog (widgets/models/llms.py): every configuration against its source.

Sources of the expected values (each test names the one it uses):
- [HF] Hugging Face model cards, config.json: meta-llama/Meta-Llama-3-8B, meta-llama/Meta-Llama-3-70B,
  meta-llama/Llama-3.1-405B, mistralai/Mistral-7B-v0.1, deepseek-ai/DeepSeek-V3; and each page's
  Safetensors "Model size" (8.03B, 70.6B, 7.24B params).
- [Llama3] Grattafiori et al., "The Llama 3 Herd of Models" (2024), Table 3.
- [Mistral] Jiang et al., "Mistral 7B" (2023), Table 1: head_dim 128, window_size 4096.
- [DSV3] DeepSeek-V3 technical report (2024): abstract (671B total, 37B activated), section 4.2
  (61 layers, hidden 7168, n_h = d_h = 128, d_c = 512, d_h^R = 64, 1 shared + 256 routed experts of
  2048, 8 activated, all FFNs but the first three are MoE); its weights documentation
  (README_WEIGHTS.md): "Activation parameters: 36.6B (including 0.9B for the output Head)".
"""

from __future__ import annotations

import pytest

from widgets.models import llms, transformer


def test_presets_kv_per_token_from_config_json():
    """[HF]/[Llama3]/[Mistral] configurations -> 2 x layers x KV heads x head_dim x 2 bytes."""
    assert llms.LLAMA_3_8B.kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2 == 128 * 1024
    assert llms.LLAMA_3_70B.kv_bytes_per_token(2) == 2 * 80 * 8 * 128 * 2 == 320 * 1024
    assert llms.MISTRAL_7B.kv_bytes_per_token(2) == 128 * 1024
    assert llms.LLAMA_3_70B.kv_bytes_per_token("fp8") == 160 * 1024


def test_presets_match_their_sources():
    """[HF] config.json, [Llama3] Table 3, [Mistral] Table 1, [DSV3] section 4.2 and abstract."""
    m = llms.LLAMA_3_8B
    assert (m.layers, m.hidden_size, m.heads, m.kv_heads, m.head_dim, m.intermediate_size, m.vocab_size) == (32, 4096, 32, 8, 128, 14336, 128256)
    m = llms.LLAMA_3_70B
    assert (m.layers, m.hidden_size, m.heads, m.kv_heads, m.head_dim, m.intermediate_size, m.vocab_size) == (80, 8192, 64, 8, 128, 28672, 128256)
    m = llms.MISTRAL_7B
    assert (m.layers, m.heads, m.kv_heads, m.head_dim, m.sliding_window, m.vocab_size) == (32, 32, 8, 128, 4096, 32000)
    m = llms.DEEPSEEK_V3
    assert (m.layers, m.hidden_size, m.heads, m.kv_lora_rank, m.rope_head_dim, m.vocab_size) == (61, 7168, 128, 512, 64, 129280)
    assert (m.params, m.active_params) == (671e9, 37e9)
    assert (m.n_routed_experts, m.experts_per_token, m.moe_layers, m.moe_intermediate_size) == (256, 8, 61 - 3, 2048)
    for p in llms.PRESETS.values():
        assert p.sources and all(isinstance(v, str) and v for v in p.sources.values())


def test_deepseek_v3_activated_parameters():
    """[DSV3] README_WEIGHTS: 36.6B activation parameters (output head included, embedding not);
    abstract: 37B activated of 671B."""
    m = llms.DEEPSEEK_V3
    assert m.step_params(1) == pytest.approx(36.6e9, rel=0.003)
    assert m.flop_params == pytest.approx(36.6e9, rel=0.003)
    assert m.routed_expert_params == 58 * 256 * 3 * 7168 * 2048
    # A large batch touches nearly every expert: decode reads far more than the activated weights.
    assert m.step_params(1024) > 0.99 * (m.params - m.embedding_params)


def test_llama_3_405b_has_128_query_heads():
    """[Llama3] Table 3: 405B has 126 layers, model dimension 16,384, FFN 53,248, 128 attention
    heads and 8 key/value heads; meta-llama/Llama-3.1-405B config.json likewise (vocab 128256).
    "Llama 3 has 32 or 64 query heads" was wrong."""
    m = llms.LLAMA_3_1_405B
    assert (m.layers, m.hidden_size, m.heads, m.kv_heads, m.head_dim, m.intermediate_size, m.vocab_size) == (126, 16384, 128, 8, 128, 53248, 128256)
    counted = transformer.dense_transformer_params(126, 16384, 128, 8, 128, 53248, 128256)
    assert counted == pytest.approx(405e9, rel=0.005) and m.params == pytest.approx(counted, rel=1e-4)
    assert sorted({p.heads for p in (llms.LLAMA_3_8B, llms.LLAMA_3_70B, llms.LLAMA_3_1_405B)}) == [32, 64, 128]


def test_get_model_by_name_any_case_or_passed_through():
    assert llms.get_model("llama-3-8b") is llms.LLAMA_3_8B
    assert llms.get_model("DEEPSEEK-V3") is llms.DEEPSEEK_V3
    m = transformer.custom_model(2, 64, 4, 4, 16, 128)
    assert llms.get_model(m) is m
    assert llms.model_names() == tuple(llms.PRESETS)
    assert all(llms.get_model(n).name == n for n in llms.model_names())


def test_get_model_names_the_callers_parameter():
    with pytest.raises(ValueError, match="^name must be one of Llama-3-8B"):
        llms.get_model("GPT-5")
    with pytest.raises(ValueError, match="^model must be one of"):
        llms.get_model(None, param="model")
    with pytest.raises(ValueError, match="param"):
        llms.get_model("Llama-3-8B", param=None)


def test_every_model_has_a_source_for_its_architecture_and_its_size():
    for m in llms.PRESETS.values():
        assert m.sources.get("architecture") and m.sources.get("params"), m.name
