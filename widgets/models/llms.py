"""A catalog of real language models: each configuration with the source of every figure.

Each entry is a :class:`widgets.models.transformer.ModelConfig` filled in from the model's own
``config.json`` on Hugging Face and its paper; the parameter count is the model page's
("Safetensors: Model size") or the paper's. Look one up by name with :func:`get_model`.

Explained in :ref:`serving` > The KV cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import _check
from .transformer import ModelConfig

_HF = "Hugging Face model card, config.json"
_HF_SIZE = "Hugging Face model page, Safetensors 'Model size'"


LLAMA_3_8B = ModelConfig(
    name="Llama-3-8B",
    layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=128256,
    params=8.03e9, active_params=8.03e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Meta-Llama-3-8B {_HF}: num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, "
        "num_key_value_heads 8, intermediate_size 14336, vocab_size 128256; head_dim = 4096/32 = 128; "
        "also Llama 3 paper (Grattafiori et al. 2024), Table 3",
        "params": f"meta-llama/Meta-Llama-3-8B {_HF_SIZE}: 8.03B params",
    },
)


LLAMA_3_70B = ModelConfig(
    name="Llama-3-70B",
    layers=80, hidden_size=8192, heads=64, kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=128256,
    params=70.6e9, active_params=70.6e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Meta-Llama-3-70B {_HF}: num_hidden_layers 80, hidden_size 8192, num_attention_heads 64, "
        "num_key_value_heads 8, intermediate_size 28672, vocab_size 128256; head_dim = 8192/64 = 128; "
        "also Llama 3 paper (Grattafiori et al. 2024), Table 3",
        "params": f"meta-llama/Meta-Llama-3-70B {_HF_SIZE}: 70.6B params",
    },
)


MISTRAL_7B = ModelConfig(
    name="Mistral-7B",
    layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32000,
    params=7.24e9, active_params=7.24e9, attention="gqa", sliding_window=4096,
    sources={
        "architecture": f"mistralai/Mistral-7B-v0.1 {_HF}: num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, "
        "num_key_value_heads 8, intermediate_size 14336, vocab_size 32000, sliding_window 4096; "
        "Mistral 7B paper (Jiang et al. 2023), Table 1: head_dim 128, window_size 4096",
        "params": f"mistralai/Mistral-7B-v0.1 {_HF_SIZE}: 7.24B params",
    },
)


DEEPSEEK_V3 = ModelConfig(
    name="DeepSeek-V3",
    layers=61, hidden_size=7168, heads=128, kv_heads=128, head_dim=128, intermediate_size=18432, vocab_size=129280,
    params=671e9, active_params=37e9, attention="mla", kv_lora_rank=512, rope_head_dim=64,
    n_routed_experts=256, experts_per_token=8, moe_layers=58, moe_intermediate_size=2048,
    sources={
        "architecture": f"deepseek-ai/DeepSeek-V3 {_HF}: num_hidden_layers 61, hidden_size 7168, num_attention_heads 128, "
        "kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, vocab_size 129280, "
        "n_routed_experts 256, num_experts_per_tok 8, first_k_dense_replace 3, moe_intermediate_size 2048; "
        "DeepSeek-V3 technical report (2024), section 4.2: 61 layers, d_c = 512, d_h^R = 64, n_h = d_h = 128",
        "params": "DeepSeek-V3 technical report (2024), abstract: 671B total parameters with 37B activated for each token",
        "kv_cache": "DeepSeek-V2 paper (2024), section 2.1.3 and Table 1: MLA caches (d_c + d_h^R) elements per token per layer",
    },
)


LLAMA_3_1_405B = ModelConfig(
    name="Llama-3.1-405B",
    layers=126, hidden_size=16384, heads=128, kv_heads=8, head_dim=128, intermediate_size=53248, vocab_size=128256,
    params=405.85e9, active_params=405.85e9, attention="gqa",
    sources={
        "architecture": f"meta-llama/Llama-3.1-405B {_HF}: num_hidden_layers 126, hidden_size 16384, num_attention_heads 128, "
        "num_key_value_heads 8, intermediate_size 53248, vocab_size 128256; head_dim = 16384/128 = 128; "
        "Llama 3 paper (Grattafiori et al. 2024), Table 3: 126 layers, model dimension 16,384, FFN dimension 53,248, "
        "128 attention heads, 8 key/value heads",
        "params": "dense_transformer_params of the configuration: 405.85B (the model page: 406B params)",
    },
)


PRESETS: Mapping[str, ModelConfig] = MappingProxyType({m.name: m for m in (LLAMA_3_8B, LLAMA_3_70B, LLAMA_3_1_405B, MISTRAL_7B, DEEPSEEK_V3)})


def model_names() -> tuple:
    """Names of the catalog's models, in catalog order.

    Explained in :ref:`serving` > The KV cache.

    Returns
    -------
    tuple of str
        The names :func:`get_model` accepts.

    Examples
    --------
    >>> model_names()[:2]
    ('Llama-3-8B', 'Llama-3-70B')
    """
    return tuple(PRESETS)


def get_model(name, *, param: str = "name") -> ModelConfig:
    """A catalog model by name (case-insensitive), or a ``ModelConfig`` passed through.

    Explained in :ref:`serving` > The KV cache.

    Parameters
    ----------
    name : str or ~widgets.models.transformer.ModelConfig
        One of :func:`model_names`, or a configuration (e.g. from
        :func:`widgets.models.transformer.custom_model`).
    param : str, optional
        The caller's parameter name, used in the error message.

    Returns
    -------
    ~widgets.models.transformer.ModelConfig
        The configuration, each figure with its source in ``sources``.

    Raises
    ------
    ValueError
        Naming ``param``, the value and the catalog's names.

    Examples
    --------
    >>> get_model("llama-3-8b").kv_heads
    8
    """
    _check.text("param", param)
    if isinstance(name, ModelConfig):
        return name
    if isinstance(name, str):
        for key, m in PRESETS.items():
            if key.lower() == name.lower():
                return m
    raise ValueError(f"{param} must be one of {', '.join(PRESETS)} or a ModelConfig; got {name!r}")


__all__ = [
    "PRESETS", "LLAMA_3_8B", "LLAMA_3_70B", "LLAMA_3_1_405B", "MISTRAL_7B", "DEEPSEEK_V3", "get_model",
    "model_names",
]
