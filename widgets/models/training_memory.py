"""Training memory and training compute: every byte on the GPU during a step, and the FLOP of a run.

Pure functions (standard library only). Five buckets occupy a GPU while a model trains: the
weights, their gradients, the optimizer state, the activations saved for the backward pass, and
the rest (CUDA context, allocator cache, fragmentation, temporary buffers). The first three are
bytes per parameter (:func:`training_state_bytes`; 16 for mixed-precision Adam, Rajbhandari et al.
2020); sharding them over data-parallel GPUs is ZeRO (:func:`zero_state_bytes_per_gpu`). The
activations follow Korthikanti et al. 2022 (:func:`activation_bytes_per_layer`). The compute of a
run is 6 N D FLOP (:func:`training_flop`, Kaplan et al. 2020; Brown et al. 2020) and its efficiency
the model FLOPs utilization (:func:`mfu`, Chowdhery et al. 2022, appendix B).

Units are in the names: ``*_bytes`` [B], ``*_flop`` [FLOP], ``*_s`` [s], ``*_per_s`` [1/s]. Every
public function rejects non-physical input with a ``ValueError`` naming the parameter, the value
and what is valid.

Explained in :ref:`training_memory` > The five buckets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _check
from .transformer import MAX_COUNT, _quantity

OPTIMIZERS = ("adamw", "adamw_8bit", "sgd_momentum", "sgd")
"""Optimizers the models know.

Adam(W) with two fp32 moments, Adam with two 8-bit moments (Dettmers et al. 2022, block-wise
quantized), SGD with one fp32 momentum buffer, plain SGD."""

PRECISIONS = ("mixed", "mixed_fp32_grads", "bf16", "autocast", "fp32")
"""How the state is stored.

``mixed``: 16-bit weights and gradients plus an fp32 master copy of
the weights held by the optimizer (the layout of the ZeRO paper, Rajbhandari et al. 2020: 2 + 2 + 4
bytes before the moments; 16 per parameter with Adam). bf16 or fp16 alike: fp16 adds a dynamic loss
scaler (Micikevicius et al. 2018; ``torch.amp.GradScaler``), one scale and one growth counter for the
whole model, nothing per parameter, so the bytes are the same. ``mixed_fp32_grads``: the same with fp32
gradients (Megatron-LM's ``main_grad``: 2 + 4 + 4 before the moments, 18 with Adam; Megatron Core
developer guide, "Distributed Optimizer"). ``bf16``: everything in 16 bits, no master copy, the
moments in the weights' dtype (``torch.optim.AdamW`` on a model cast to bf16: 2 + 2 + 2 + 2 = 8 with
Adam; updates smaller than a bf16 ulp are lost without stochastic rounding or Kahan summation).
``autocast``: fp32 weights and gradients, 16-bit only inside the forward (``torch.autocast``:
4 + 4, no master copy); not counted here, autocast's 16-bit casts of the weights, which it caches for the
autocast region and the matmuls save for the backward pass (``cached_cast`` in
``aten/src/ATen/autocast_mode.cpp``): about 2 more bytes per parameter from the forward pass until the
backward pass has used them, 18 at the peak. ``fp32``: everything in fp32 (4 + 4)."""

ATTENTION = ("materialized", "flash")
"""How the attention core runs.

``materialized``: softmax(Q K^T) is an s x s tensor per head that autograd keeps (eager
attention, Korthikanti et al. 2022); ``flash``: a fused kernel (FlashAttention, Dao et al. 2022;
``torch.nn.functional.scaled_dot_product_attention``) keeps its output and one fp32 log-sum-exp per
head and token, no s x s tensor, and recomputes the rest in its backward."""

RECOMPUTE = ("none", "selective", "full")
"""Activation recomputation (Korthikanti et al. 2022).

Keep everything, recompute the attention
core (softmax, its dropout, the two attention matmuls), or keep only each layer's input. Under a fused
attention kernel recomputing the attention core removes nothing; today's "selective" recomputation
(Megatron-Core's ``recompute_modules``) picks other modules instead (the MLP's activation, the
norms), which this model does not price."""

# Optimizer state bytes per parameter, moments only (the master copy is added for "mixed").
_MOMENT_BYTES = {"adamw": 8.0, "adamw_8bit": 2.0, "sgd_momentum": 4.0, "sgd": 0.0}
# (weight, gradient, master copy) bytes per parameter of each precision.
_PRECISION_BYTES = {"mixed": (2.0, 2.0, 4.0), "mixed_fp32_grads": (2.0, 4.0, 4.0), "bf16": (2.0, 2.0, 0.0),
                    "autocast": (4.0, 4.0, 0.0), "fp32": (4.0, 4.0, 0.0)}
# Moments in 16 bits under "bf16" (fp32 moments halve; 8-bit moments stay 8-bit).
_MOMENT_SCALE = {"bf16": {"adamw": 0.5, "sgd_momentum": 0.5}}

# The ZeRO paper's communication volume per step, in parameters per GPU (Section 7): data
# parallelism and ZeRO stages 1 and 2 move 2 Psi (reduce-scatter + all-gather, or an all-reduce);
# stage 3 adds an all-gather of the weights in the backward pass: 3 Psi.
_ZERO_COMM_PARAMS = {0: 2.0, 1: 2.0, 2: 2.0, 3: 3.0}


@dataclass(frozen=True)
class StateBytes:
    """The three parameter-proportional buckets [B]: weights, gradients and optimizer state."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        """The sum of the three buckets [B]."""
        return self.weights + self.gradients + self.optimizer


def _params(params) -> float:
    return _quantity("params", params, zero=False)


def state_bytes(params: float, optimizer: str = "adamw", precision: str = "mixed") -> StateBytes:
    """Bytes of the weights, the gradients and the optimizer state of ``params`` parameters.

    Explained in :ref:`training_memory` > Sixteen bytes per parameter.

    Parameters
    ----------
    params : float
        Parameters [-], > 0.
    optimizer : str, optional
        One of ``OPTIMIZERS``.
    precision : str, optional
        One of ``PRECISIONS``.

    Returns
    -------
    StateBytes
        ``weights``, ``gradients``, ``optimizer`` [B] (the optimizer holds the fp32 master copy
        under ``mixed``).

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> s = state_bytes(1e9)
    >>> s.weights / 1e9, s.gradients / 1e9, s.optimizer / 1e9
    (2.0, 2.0, 12.0)
    >>> state_bytes(1e9, precision="mixed_fp32_grads").total / 1e9, state_bytes(1e9, precision="bf16").total / 1e9
    (18.0, 8.0)
    """
    p = _params(params)
    opt = _check.choice("optimizer", optimizer, OPTIMIZERS)
    prec = _check.choice("precision", precision, PRECISIONS)
    w, g, master = _PRECISION_BYTES[prec]
    moments = _MOMENT_BYTES[opt] * _MOMENT_SCALE.get(prec, {}).get(opt, 1.0)
    return StateBytes(w * p, g * p, (master + moments) * p)


def training_state_bytes(params: float, optimizer: str = "adamw", precision: str = "mixed") -> float:
    """Weights + gradients + optimizer state of ``params`` parameters on one GPU, unsharded [B].

    Sixteen bytes per parameter for mixed-precision AdamW: 2 (16-bit weights) + 2 (16-bit
    gradients) + 12 (fp32 master weights, first and second moments), Rajbhandari et al. 2020,
    Section 3.1.

    Explained in :ref:`training_memory` > Sixteen bytes per parameter.

    Parameters
    ----------
    params : float
        Parameters [-], > 0.
    optimizer : str, optional
        One of ``OPTIMIZERS``.
    precision : str, optional
        One of ``PRECISIONS``.

    Returns
    -------
    float
        Bytes [B].

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> training_state_bytes(7.5e9) / 1e9
    120.0
    >>> training_state_bytes(1e9, "adamw_8bit") / 1e9
    10.0
    """
    return state_bytes(params, optimizer, precision).total


def zero_state_bytes_per_gpu(params: float, gpus: int, stage: int, optimizer: str = "adamw", precision: str = "mixed") -> float:
    """Weights + gradients + optimizer state per GPU under ZeRO stage 0 to 3 [B].

    Stage 0 is plain data parallelism (every GPU holds everything); stage 1 shards the optimizer
    state over the ``gpus`` data-parallel ranks, stage 2 also the gradients, stage 3 also the
    weights (Rajbhandari et al. 2020, Figure 1). FSDP's ``FULL_SHARD`` is stage 3,
    ``SHARD_GRAD_OP`` stage 2.

    Explained in :ref:`training_memory` > Sharding the state: ZeRO and FSDP.

    Parameters
    ----------
    params : float
        Parameters [-], > 0.
    gpus : int
        Data-parallel GPUs [-], >= 1.
    stage : int
        ZeRO stage [-], 0 to 3.
    optimizer : str, optional
        One of ``OPTIMIZERS``.
    precision : str, optional
        One of ``PRECISIONS``.

    Returns
    -------
    float
        Bytes per GPU [B].

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> [round(zero_state_bytes_per_gpu(7.5e9, 64, s) / 1e9, 2) for s in range(4)]
    [120.0, 31.41, 16.64, 1.88]
    """
    s = state_bytes(params, optimizer, precision)
    n = _check.integer("gpus", gpus, minimum=1, maximum=MAX_COUNT)
    k = _check.integer("stage", stage, minimum=0, maximum=3)
    opt = s.optimizer / n if k >= 1 else s.optimizer
    grad = s.gradients / n if k >= 2 else s.gradients
    weights = s.weights / n if k >= 3 else s.weights
    return weights + grad + opt


def zero_comm_bytes_per_gpu(params: float, stage: int, bytes_per_elem: float = 2.0) -> float:
    """Bytes each GPU sends per step for the data-parallel state under ZeRO stage 0 to 3 [B].

    Stages 0-2 move 2 Psi elements (an all-reduce of the gradients, or its reduce-scatter and an
    all-gather of the updated weights); stage 3 moves 3 Psi (the weights are gathered again for the
    backward pass), Rajbhandari et al. 2020, Section 7.

    Explained in :ref:`training_memory` > Sharding the state: ZeRO and FSDP.

    Parameters
    ----------
    params : float
        Parameters [-], > 0.
    stage : int
        ZeRO stage [-], 0 to 3.
    bytes_per_elem : float, optional
        Bytes per communicated element [B], > 0 (2 for bf16 gradients).

    Returns
    -------
    float
        Bytes [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> zero_comm_bytes_per_gpu(1e9, 3) / 1e9
    6.0
    """
    p = _params(params)
    k = _check.integer("stage", stage, minimum=0, maximum=3)
    b = _check.in_range("bytes_per_elem", bytes_per_elem, 0.125, 8, "B")
    return _ZERO_COMM_PARAMS[k] * p * b


def activation_bytes_per_layer(
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    attention: str = "materialized",
    dropout: bool = True,
    kv_heads: int | None = None,
    ffn_hidden: int | None = None,
    gated: bool = False,
) -> float:
    """Activation bytes one transformer layer keeps for its backward pass, 16-bit activations.

    The defaults are Korthikanti et al. 2022's GPT layer (Section 4.1, Table 2): ``s b h (34 + 5 a s
    / h)`` without parallelism (LayerNorm inputs 4, attention 11 + 5 a s / h, a 4h GELU MLP 19,
    in units of ``s b h`` bytes; one-byte dropout masks); with tensor parallelism ``t``
    ``s b h (10 + 24/t + 5 a s / (h t))``, with sequence parallelism too ``s b h / t (34 + 5 a s /
    h)``; selective recomputation drops the ``5 a s / h`` term (the attention core is recomputed);
    full recomputation keeps only the layer's input, ``2 s b h``.

    The same count, term by term, for other layers (units of ``s b h`` bytes): LayerNorm inputs 4,
    the QKV and MLP inputs 2 + 2, one dropout mask after attention and one after the MLP (1 + 1,
    ``dropout``); Q 2 and K, V ``2 kv/a`` each (grouped-query attention); the projection's input 2;
    ``attention="materialized"``: the softmax output ``2 a s / h``, with dropout also its mask
    ``a s / h`` and output ``2 a s / h``; ``attention="flash"``: an fp32 log-sum-exp ``4 a / h`` and
    no s x s term (recomputing the attention core then removes nothing); the kernel's output, which
    its backward keeps, is the projection's input, one tensor and not two (PyTorch's flash kernel
    allocates its output like Q, ``at::empty_like(q)`` in ``flash_api.cpp``, so that
    ``nn.MultiheadAttention``'s transpose back to ``(s, b, h)`` and Hugging Face's to ``(b, s, h)``
    are views; the H200 record's stock model kept 2 s b h per layer less than a count with both);
    the MLP: GELU's input and output ``2 f + 2 f`` with ``f = ffn/h`` (16 at f = 4), gated (SwiGLU:
    gate, its activation, up and their product, ``8 f``; 28 for Llama-3-8B's f = 3.5). Llama-3-8B
    with flash attention: ``s b h (41 + 4 a / h)``. Each norm keeps its 16-bit input, as a fused
    norm kernel does (Apex, Transformer Engine: the input and per-token statistics); an eager
    RMSNorm (Hugging Face's ``LlamaRMSNorm``) keeps an fp32 copy of its input and its 16-bit
    output instead, ``6 s b h`` per norm rather than 2, 8 more per layer. RoPE adds nothing
    (the rotated Q and K replace the unrotated ones, which nothing keeps); the norms' per-token fp32
    statistics (4 or 8 bytes per token each) are left out.

    Explained in :ref:`training_memory` > Activations.

    Parameters
    ----------
    seq : int
        Sequence length s [tokens], >= 1.
    micro_batch : int
        Micro-batch b [sequences], >= 1.
    hidden : int
        Hidden size h [-], >= 1.
    heads : int
        Attention heads a [-], >= 1.
    tensor_parallel : int, optional
        Tensor-parallel size t [-], >= 1.
    sequence_parallel : bool, optional
        Sequence parallelism on (shards the LayerNorm and dropout activations over ``t``).
    recompute : str, optional
        One of ``RECOMPUTE``.
    attention : str, optional
        One of ``ATTENTION``.
    dropout : bool, optional
        Dropout in the layer (GPT-3: yes; Llama: no).
    kv_heads : int, optional
        Key/value heads [-], 1 to ``heads`` (default ``heads``).
    ffn_hidden : int, optional
        MLP width [-], >= 1 (default ``4 hidden``).
    gated : bool, optional
        A gated MLP (SwiGLU) instead of GELU.

    Returns
    -------
    float
        Bytes per layer [B].

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> activation_bytes_per_layer(2048, 1, 12288, 96) / 2**30  # GPT-3 175B, one sequence
    2.671875
    >>> activation_bytes_per_layer(2048, 1, 12288, 96, recompute="full") / 2**20
    48.0
    >>> activation_bytes_per_layer(1, 1, 4096, 32, attention="flash", dropout=False, kv_heads=8, ffn_hidden=14336, gated=True)
    168064.0
    """
    s = _check.integer("seq", seq, minimum=1, maximum=MAX_COUNT)
    b = _check.integer("micro_batch", micro_batch, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("hidden", hidden, minimum=1, maximum=MAX_COUNT)
    a = _check.integer("heads", heads, minimum=1, maximum=MAX_COUNT)
    t = _check.integer("tensor_parallel", tensor_parallel, minimum=1, maximum=MAX_COUNT)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    rc = _check.choice("recompute", recompute, RECOMPUTE)
    att = _check.choice("attention", attention, ATTENTION)
    drop = 1.0 if _check.flag("dropout", dropout) else 0.0
    kv = a if kv_heads is None else _check.integer("kv_heads", kv_heads, minimum=1, maximum=a)
    f = 4.0 if ffn_hidden is None else _check.integer("ffn_hidden", ffn_hidden, minimum=1, maximum=MAX_COUNT) / h
    glu = _check.flag("gated", gated)
    sbh = float(s) * b * h
    if rc == "full":
        return 2.0 * sbh
    replicated = 8.0 + 2.0 * drop  # LayerNorm inputs 4, QKV and MLP inputs 2 + 2, two dropout masks
    sharded = 2.0 + 4.0 * kv / a + 2.0 + (8.0 * f if glu else 4.0 * f)  # Q, K + V, projection input, MLP
    if att == "flash":  # its output (kept for its backward) is the projection's input, counted above
        core = 4.0 * a / h  # fp32 log-sum-exp per head and token; nothing for selective to drop
    else:
        core = 0.0 if rc == "selective" else (2.0 + 3.0 * drop) * a * s / h
    return sbh * ((replicated / t if sp else replicated) + sharded / t + core / t)


def outside_layers_activation_bytes(seq: int, micro_batch: int, hidden: int, vocab: int, tensor_parallel: int = 1,
                                    dropout: bool = True) -> float:
    """Activation bytes kept outside the transformer layers [B].

    The input embedding's dropout mask (``s b h``, only with ``dropout``) and the final LayerNorm,
    output projection and fp32 cross-entropy (``4 s b h (1 + v / h)``), Korthikanti et al. 2022,
    Section 4.3 (first pipeline stage, p = 1).

    Explained in :ref:`training_memory` > Activations.

    Parameters
    ----------
    seq : int
        Sequence length s [tokens], >= 1.
    micro_batch : int
        Micro-batch b [sequences], >= 1.
    hidden : int
        Hidden size h [-], >= 1.
    vocab : int
        Vocabulary v [tokens], >= 1.
    tensor_parallel : int, optional
        Tensor-parallel size t [-], >= 1.
    dropout : bool, optional
        Dropout after the embedding.

    Returns
    -------
    float
        Bytes [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> outside_layers_activation_bytes(1, 1, 1024, 32768)
    136192.0
    """
    s = _check.integer("seq", seq, minimum=1, maximum=MAX_COUNT)
    b = _check.integer("micro_batch", micro_batch, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("hidden", hidden, minimum=1, maximum=MAX_COUNT)
    v = _check.integer("vocab", vocab, minimum=1, maximum=MAX_COUNT)
    t = _check.integer("tensor_parallel", tensor_parallel, minimum=1, maximum=MAX_COUNT)
    drop = 1.0 if _check.flag("dropout", dropout) else 0.0
    sbh = float(s) * b * h
    return drop * sbh / t + 4.0 * sbh / t * (1.0 + v / h)


def activation_bytes(
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    layers: int,
    vocab: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    attention: str = "materialized",
    dropout: bool = True,
    kv_heads: int | None = None,
    ffn_hidden: int | None = None,
    gated: bool = False,
) -> float:
    """Activation bytes of a whole model's forward pass kept for the backward pass [B].

    ``layers`` times :func:`activation_bytes_per_layer` plus
    :func:`outside_layers_activation_bytes`.

    Explained in :ref:`training_memory` > Activations.

    Parameters
    ----------
    seq : int
        Sequence length [tokens], >= 1.
    micro_batch : int
        Micro-batch [sequences], >= 1.
    hidden : int
        Hidden size [-], >= 1.
    heads : int
        Attention heads [-], >= 1.
    layers : int
        Transformer layers [-], >= 1.
    vocab : int
        Vocabulary [tokens], >= 1.
    tensor_parallel : int, optional
        Tensor-parallel size [-], >= 1.
    sequence_parallel : bool, optional
        Sequence parallelism on.
    recompute : str, optional
        One of ``RECOMPUTE``.
    attention, dropout, kv_heads, ffn_hidden, gated : optional
        The layer's variant, as in :func:`activation_bytes_per_layer`.

    Returns
    -------
    float
        Bytes [B].

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> activation_bytes(1, 1, 1024, 16, 1, 32768) - outside_layers_activation_bytes(1, 1, 1024, 32768)
    34896.0
    """
    n = _check.integer("layers", layers, minimum=1, maximum=MAX_COUNT)
    per_layer = activation_bytes_per_layer(seq, micro_batch, hidden, heads, tensor_parallel, sequence_parallel, recompute,
                                           attention, dropout, kv_heads, ffn_hidden, gated)
    return n * per_layer + outside_layers_activation_bytes(seq, micro_batch, hidden, vocab, tensor_parallel, dropout)


def gpt_params(layers: int, hidden: int, vocab: int, seq: int) -> int:
    """Parameters of a GPT-style decoder as the chapter's experiment builds it.

    Per layer ``12 h^2 + 13 h`` (QKV, output projection and a 4h MLP with biases, two LayerNorms);
    a final LayerNorm (``2 h``), token and position embeddings (``v h + s h``) and an untied output
    head without bias (``v h``).

    Explained in :ref:`training_memory` > Predict, then measure.

    Parameters
    ----------
    layers : int
        Layers [-], >= 1.
    hidden : int
        Hidden size [-], >= 1.
    vocab : int
        Vocabulary [tokens], >= 1.
    seq : int
        Sequence length (learned positions) [tokens], >= 1.

    Returns
    -------
    int
        Parameters [-].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> gpt_params(20, 2048, 32000, 2048)
    1142435840
    """
    n = _check.integer("layers", layers, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("hidden", hidden, minimum=1, maximum=MAX_COUNT)
    v = _check.integer("vocab", vocab, minimum=1, maximum=MAX_COUNT)
    s = _check.integer("seq", seq, minimum=1, maximum=MAX_COUNT)
    return n * (12 * h * h + 13 * h) + 2 * h + (2 * v + s) * h


def training_flop(params: float, tokens: float) -> float:
    """Training compute of ``params`` parameters over ``tokens`` tokens: ``6 N D`` [FLOP].

    2 FLOP per parameter per token in the forward pass, 4 in the backward pass (gradients with
    respect to activations and to weights), attention not included (Kaplan et al. 2020, Section 2.1;
    the GPT-3 paper's 3.14e23 FLOP for 175B parameters and 300B tokens, Brown et al. 2020,
    Appendix D). Strictly N counts the parameters whose matmuls run: Kaplan et al.'s N leaves out the
    embeddings (a lookup, no matmul); an untied output head is a matmul and counts. The GPT-3 paper
    uses the total.

    Explained in :ref:`training_memory` > The compute: 6 N D.

    Parameters
    ----------
    params : float
        Parameters N [-], > 0.
    tokens : float
        Training tokens D [tokens], > 0.

    Returns
    -------
    float
        FLOP [FLOP].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> training_flop(175e9, 300e9)
    3.15e+23
    """
    p = _params(params)
    d = _quantity("tokens", tokens, zero=False)
    return 6.0 * p * d


def attention_flop_per_token(layers: int, heads: int, head_dim: int, seq: int) -> float:
    """Training FLOP per token of attention, ``12 L H Q T`` [FLOP].

    Forward and backward of Q K^T and of the weighted sum of V, as the PaLM paper counts them
    (Chowdhery et al. 2022, Appendix B).

    Explained in :ref:`training_memory` > The compute: 6 N D.

    Parameters
    ----------
    layers : int
        Layers L [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    head_dim : int
        Head dimension Q [-], >= 1.
    seq : int
        Sequence length T [tokens], >= 1.

    Returns
    -------
    float
        FLOP per token [FLOP].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(attention_flop_per_token(118, 48, 256, 2048) / 1e9, 2)  # PaLM 540B
    35.63
    """
    n = _check.integer("layers", layers, minimum=1, maximum=MAX_COUNT)
    a = _check.integer("heads", heads, minimum=1, maximum=MAX_COUNT)
    q = _check.integer("head_dim", head_dim, minimum=1, maximum=MAX_COUNT)
    t = _check.integer("seq", seq, minimum=1, maximum=MAX_COUNT)
    return 12.0 * n * a * q * t


def recompute_flop_fraction(params: float, attention_flop_per_token: float = 0.0, recompute: str = "full",
                            recomputed_params: float | None = None) -> float:
    """Extra FLOP of recomputation as a fraction of a step's ``6 N + attention`` FLOP [-].

    Full recomputation runs every layer's forward pass again: ``2 N`` plus a third of the
    attention term; selective recomputation runs only the attention core again: a third of the
    attention term (Korthikanti et al. 2022, Section 5).

    Explained in :ref:`training_memory` > Recomputation: memory for time.

    Parameters
    ----------
    params : float
        Parameters N whose matmuls run [-], > 0 (the input embedding, a lookup, left out).
    attention_flop_per_token : float, optional
        Training FLOP per token of attention [FLOP], >= 0 (:func:`attention_flop_per_token`).
    recompute : str, optional
        One of ``RECOMPUTE``.
    recomputed_params : float, optional
        Parameters whose matmuls full recomputation runs again [-], in (0, ``params``] (default
        ``params``; the layers only when the output head is not checkpointed).

    Returns
    -------
    float
        Fraction [-] (1/3 for full recomputation without attention).

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> round(recompute_flop_fraction(1e9), 4)
    0.3333
    """
    p = _params(params)
    att = _quantity("attention_flop_per_token", attention_flop_per_token)
    rc = _check.choice("recompute", recompute, RECOMPUTE)
    rp = p if recomputed_params is None else _check.in_range("recomputed_params", recomputed_params, 1e-300, p)
    step = 6.0 * p + att
    extra = {"none": 0.0, "selective": att / 3.0, "full": 2.0 * rp + att / 3.0}[rc]
    return extra / step


def mfu(tokens_per_s: float, params: float, peak_flop_per_s: float, attention_flop_per_token: float = 0.0) -> float:
    """Model FLOPs utilization: the FLOP/s the model needs at the observed throughput, over the peak.

    ``tokens_per_s (6 N + attention) / peak`` (Chowdhery et al. 2022, Appendix B). Recomputed FLOP
    do not count (they count in the hardware FLOPs utilization, HFU).

    Explained in :ref:`training_memory` > The compute: 6 N D.

    Parameters
    ----------
    tokens_per_s : float
        Training throughput [tokens/s], > 0.
    params : float
        Parameters N [-], > 0.
    peak_flop_per_s : float
        Dense peak of the hardware [FLOP/s], > 0.
    attention_flop_per_token : float, optional
        Training FLOP per token of attention [FLOP], >= 0.

    Returns
    -------
    float
        MFU [-] (a fraction; above 1 means the peak or the throughput is wrong).

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(mfu(1e4, 1e9, 989.4e12), 4)
    0.0606
    """
    r = _quantity("tokens_per_s", tokens_per_s, zero=False)
    p = _params(params)
    peak = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    att = _quantity("attention_flop_per_token", attention_flop_per_token)
    return _check.finite_result("mfu", r * (6.0 * p + att) / peak, tokens_per_s=tokens_per_s, peak_flop_per_s=peak_flop_per_s)


def training_time_s(params: float, tokens: float, gpus: int, peak_flop_per_s: float, mfu_fraction: float) -> float:
    """Wall time to train ``params`` on ``tokens`` on ``gpus`` GPUs at a given MFU [s].

    ``6 N D / (gpus x peak x MFU)``.

    Explained in :ref:`training_memory` > The compute: 6 N D.

    Parameters
    ----------
    params : float
        Parameters N [-], > 0.
    tokens : float
        Training tokens D [tokens], > 0.
    gpus : int
        GPUs [-], >= 1.
    peak_flop_per_s : float
        Dense peak of one GPU [FLOP/s], > 0.
    mfu_fraction : float
        Model FLOPs utilization [-], in (0, 1].

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> round(training_time_s(175e9, 300e9, 1024, 312e12, 0.5) / 86400, 1)
    22.8
    """
    flop = training_flop(params, tokens)
    n = _check.integer("gpus", gpus, minimum=1, maximum=MAX_COUNT)
    peak = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    u = _check.in_range("mfu_fraction", mfu_fraction, 1e-9, 1.0)
    return _check.finite_result("training time", flop / (n * peak * u), peak_flop_per_s=peak_flop_per_s, mfu_fraction=mfu_fraction)


def max_micro_batch(capacity_bytes: float, fixed_bytes: float, bytes_per_sample: float, limit: int = 2**20) -> int:
    """The largest micro-batch whose activations fit beside ``fixed_bytes`` in ``capacity_bytes``.

    0 when not even the fixed part fits.

    Explained in :ref:`training_memory` > The memory budget.

    Parameters
    ----------
    capacity_bytes : float
        Memory available [B], >= 0.
    fixed_bytes : float
        Memory that does not grow with the batch [B], >= 0 (state, context, reserve).
    bytes_per_sample : float
        Activation bytes per sequence [B], > 0.
    limit : int, optional
        Largest batch returned [sequences], >= 1.

    Returns
    -------
    int
        Micro-batch [sequences].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> max_micro_batch(80e9, 30e9, 9e9)
    5
    """
    cap = _quantity("capacity_bytes", capacity_bytes)
    fixed = _quantity("fixed_bytes", fixed_bytes)
    per = _quantity("bytes_per_sample", bytes_per_sample, zero=False)
    lim = _check.integer("limit", limit, minimum=1, maximum=MAX_COUNT)
    if fixed >= cap:
        return 0
    room = _check.finite_result("micro-batch", (cap - fixed) / per, bytes_per_sample=bytes_per_sample)
    return int(min(lim, math.floor(room)))


def offload_time_s(params: float, host_bytes_per_s: float, down_bytes_per_param: float = 2.0,
                   up_bytes_per_param: float = 2.0, full_duplex: bool = True) -> float:
    """Time to move offloaded state across the host link in one step [s].

    ZeRO-Offload (Ren et al. 2021) sends the 2-byte gradients down to the host and the 2-byte updated
    weights back up every step: the minimum traffic. PCIe is full duplex: each lane carries both
    directions at once, ``host_bytes_per_s`` each way, so when the two streams overlap (bucket by
    bucket, or with the paper's one-step delayed parameter update) the link needs only the longer of
    the two; ``full_duplex=False``
    gives the time if they took turns (the sum). This is a lower bound either way: it ignores the CPU's
    Adam (``CPU_ADAM_BYTES_PER_PARAM`` of host-memory traffic) and assumes the copies overlap the
    compute.

    Explained in :ref:`training_memory` > The fixes, in order of least damage.

    Parameters
    ----------
    params : float
        Parameters [-], > 0.
    host_bytes_per_s : float
        Host link bandwidth, one direction [B/s], > 0.
    down_bytes_per_param : float, optional
        Bytes per parameter sent device to host per step (gradients) [B], >= 0.
    up_bytes_per_param : float, optional
        Bytes per parameter sent host to device per step (weights) [B], >= 0.
    full_duplex : bool, optional
        True: the two directions overlap (max); False: they take turns (sum).

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> offload_time_s(1e9, 50e9)
    0.04
    >>> offload_time_s(1e9, 50e9, full_duplex=False)
    0.08
    """
    p = _params(params)
    bw = _quantity("host_bytes_per_s", host_bytes_per_s, zero=False)
    down = _check.in_range("down_bytes_per_param", down_bytes_per_param, 0, 64, "B")
    up = _check.in_range("up_bytes_per_param", up_bytes_per_param, 0, 64, "B")
    duplex = _check.flag("full_duplex", full_duplex)
    per_param = max(down, up) if duplex else down + up
    return _check.finite_result("offload time", p * per_param / bw, host_bytes_per_s=host_bytes_per_s)


CPU_ADAM_BYTES_PER_PARAM = 28.0
"""Host-memory traffic of one offloaded AdamW step per parameter [B].

The CPU reads and writes the fp32 master weight, the first and the second moment (3 x (4 + 4) = 24),
reads the 16-bit gradient that came down and writes the 16-bit weight that goes up (2 + 2): 28 bytes,
a lower bound on what its DRAM must carry per step (ZeRO-Offload, Ren et al. 2021, keeps the fp32
state on the host and runs Adam there)."""


def lora_state_bytes(params: float, trainable_fraction: float, weight_bytes_per_param: float = 2.0) -> float:
    """Weights + gradients + optimizer state when only a fraction of the parameters train [B].

    The frozen weights at ``weight_bytes_per_param`` (2 for bf16, about 0.5 for QLoRA's 4-bit
    NF4, Dettmers et al. 2023) and the trainable adapters at 16 bytes each (mixed AdamW).

    Explained in :ref:`training_memory` > The fixes, in order of least damage.

    Parameters
    ----------
    params : float
        Parameters of the frozen model [-], > 0.
    trainable_fraction : float
        Adapter parameters over ``params`` [-], in [0, 1].
    weight_bytes_per_param : float, optional
        Bytes per frozen weight [B], > 0.

    Returns
    -------
    float
        Bytes [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> lora_state_bytes(8e9, 0.005) / 1e9
    16.64
    """
    p = _params(params)
    f = _check.in_range("trainable_fraction", trainable_fraction, 0.0, 1.0)
    wb = _check.in_range("weight_bytes_per_param", weight_bytes_per_param, 0.0625, 8, "B")
    return p * wb + (training_state_bytes(p * f) if f > 0 else 0.0)


# --------------------------------------------------------------------------------------------
# Planners: the memory budget of a training run on a catalog GPU, and the fixes ladder
# --------------------------------------------------------------------------------------------
DEFAULT_RESERVE_FRACTION = 0.10
"""The fifth bucket as an allowance.

CUDA context, library workspaces, allocator cache and
fragmentation, taken as 10% of the GPU's memory (the same allowance as the serving planner's, after
vLLM's default ``gpu_memory_utilization`` of 0.9). It is not a measurement; the chapter measures the
context and the allocator's slack on the H200."""


@dataclass(frozen=True)
class TrainingBudget:
    """Memory of one GPU during a training step, bucket by bucket [B], and what fits; ``approximation``
    names what the count leaves out for this model (empty for a dense model)."""

    model: str
    gpu: str
    params: float
    micro_batch: int
    seq: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    reserve_bytes: float
    capacity_bytes: float
    activation_bytes_per_sequence: float
    approximation: str = ""

    @property
    def used_bytes(self) -> float:
        """All five buckets [B]."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activation_bytes + self.reserve_bytes

    @property
    def free_bytes(self) -> float:
        """Capacity minus the five buckets [B] (negative when it does not fit)."""
        return self.capacity_bytes - self.used_bytes

    @property
    def fits(self) -> bool:
        """Whether the five buckets fit in the GPU's memory."""
        return self.free_bytes >= 0

    @property
    def max_micro_batch(self) -> int:
        """The largest micro-batch whose activations fit beside the rest [sequences]."""
        fixed = self.used_bytes - self.activation_bytes
        return max_micro_batch(self.capacity_bytes, fixed, self.activation_bytes_per_sequence)


def _resolve(model):
    from .llms import get_model
    from .transformer import ModelConfig

    return model if isinstance(model, ModelConfig) else get_model(model, param="model")


def memory_budget(
    model,
    gpu: str = "H200-SXM",
    micro_batch: int = 1,
    seq: int = 4096,
    optimizer: str = "adamw",
    precision: str = "mixed",
    stage: int = 0,
    gpus: int = 1,
    recompute: str = "none",
    tensor_parallel: int = 1,
    reserve_fraction: float = DEFAULT_RESERVE_FRACTION,
    attention: str = "flash",
    dropout: bool = False,
    gated: bool = True,
) -> TrainingBudget:
    """The five buckets of one GPU training ``model`` with data parallelism over ``gpus`` GPUs.

    Weights, gradients and optimizer state from :func:`state_bytes`, sharded by ZeRO ``stage``
    (and divided by ``tensor_parallel``); activations from :func:`activation_bytes` with the
    model's heads, key/value heads and MLP width, by default as today's stacks train a Llama-style
    model (fused attention, no dropout, a SwiGLU MLP; ``attention="materialized", dropout=True,
    gated=False`` is Korthikanti et al.'s GPT layer). Under full recomputation the backward pass
    also holds one layer's recomputed activations (Chen et al. 2016: the stored checkpoints plus
    one segment), so that layer's full count is added. Not counted: transients such as the fp32
    gradient of the logits at the start of the backward pass (``4 s v`` bytes per sequence),
    the kernels' workspaces and, under ZeRO-3, the gathered 16-bit weights (and unsharded
    gradients) of the unit being computed and of the one prefetched; the rest is
    ``reserve_fraction`` of the GPU's memory. A mixture-of-experts or MLA model is counted as a
    dense one of the same width (its state is right; its activations leave out the routing copies
    and MLA's shapes): ``approximation`` says so.

    Explained in :ref:`training_memory` > The memory budget.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A preset of :mod:`widgets.models.llms` or a configuration.
    gpu : str, optional
        A catalog GPU (:func:`widgets.hardware.get_gpu`).
    micro_batch : int, optional
        Sequences per GPU per forward pass [sequences], >= 1.
    seq : int, optional
        Sequence length [tokens], >= 1.
    optimizer : str, optional
        One of ``OPTIMIZERS``.
    precision : str, optional
        One of ``PRECISIONS``.
    stage : int, optional
        ZeRO stage [-], 0 to 3.
    gpus : int, optional
        Data-parallel GPUs [-], >= 1.
    recompute : str, optional
        One of ``RECOMPUTE``.
    tensor_parallel : int, optional
        Tensor-parallel size [-], >= 1 (with sequence parallelism).
    reserve_fraction : float, optional
        The fifth bucket as a fraction of the GPU's memory [-], in [0, 1).
    attention : str, optional
        One of ``ATTENTION``.
    dropout : bool, optional
        Dropout in the layers.
    gated : bool, optional
        A gated (SwiGLU) MLP of the model's ``intermediate_size`` (else GELU of that width).

    Returns
    -------
    TrainingBudget
        The buckets [B], the capacity [B], whether they fit and the largest micro-batch that does.

    Raises
    ------
    ValueError
        If an input is out of range or not one of the named choices.

    Examples
    --------
    >>> b = memory_budget("Llama-3-8B", "H200-SXM", micro_batch=1, seq=4096)
    >>> round(b.weights_bytes / 1e9, 2), b.fits
    (16.06, False)
    """
    from ..hardware import get_gpu

    m = _resolve(model)
    g = get_gpu(gpu, param="gpu")
    t = _check.integer("tensor_parallel", tensor_parallel, minimum=1, maximum=MAX_COUNT)
    n = _check.integer("gpus", gpus, minimum=1, maximum=MAX_COUNT)
    k = _check.integer("stage", stage, minimum=0, maximum=3)
    r = _check.in_range("reserve_fraction", reserve_fraction, 0.0, 0.99)
    b = _check.integer("micro_batch", micro_batch, minimum=1, maximum=MAX_COUNT)
    st = state_bytes(m.params / t, optimizer, precision)
    w = st.weights / n if k >= 3 else st.weights
    gr = st.gradients / n if k >= 2 else st.gradients
    op = st.optimizer / n if k >= 1 else st.optimizer
    variant = dict(attention=attention, dropout=dropout, kv_heads=min(m.kv_heads, m.heads), ffn_hidden=m.intermediate_size, gated=gated)
    per_seq = activation_bytes(seq, 1, m.hidden_size, m.heads, m.layers, m.vocab_size, t, t > 1, recompute, **variant)
    if recompute == "full":  # the one layer being recomputed in the backward pass
        per_seq += activation_bytes_per_layer(seq, 1, m.hidden_size, m.heads, t, t > 1, "none", **variant)
    cap = float(g.memory_bytes)
    return TrainingBudget(m.name, g.name, float(m.params), b, int(seq), w, gr, op, per_seq * b, r * cap, cap, per_seq,
                          _dense_approximation(m))


def _dense_approximation(m) -> str:
    """What a dense count misses for ``m`` (a ModelConfig): mixture of experts, MLA; empty if dense."""
    parts = []
    if m.n_routed_experts:
        parts.append("mixture of experts: the activations as if dense, without the routing copies (each token's hidden "
                     "state sent to its experts)")
    if m.attention == "mla":
        parts.append("MLA counted as grouped-query attention of the same heads")
    return "dense approximation: " + "; ".join(parts) if parts else ""


@dataclass(frozen=True)
class Rung:
    """One fix on the ladder: its name, the budget after it, its cost (extra FLOP as a fraction of
    the step's; extra bytes each GPU sends per step over data parallelism) and what it damages."""

    fix: str
    budget: TrainingBudget
    extra_flop_fraction: float
    extra_comm_bytes: float
    damage: str = ""


FIXES = ("baseline", "fused attention", "ZeRO-1", "ZeRO-2", "full recomputation", "ZeRO-3 / FSDP", "8-bit AdamW")
"""The fixes of :func:`fixes_ladder`, cheapest first, each applied on top of the previous ones.

The baseline runs eager attention (the s x s softmax kept) with data parallelism. Fused attention
(or selective recomputation) costs nothing or almost nothing; ZeRO-1 and ZeRO-2 cost nothing over
data parallelism per optimizer step (the same 2 Psi of communication, exact arithmetic), though their
all-gather of the updated weights comes after the step, where no backward pass hides it, and with
gradient accumulation ZeRO-2 reduce-scatters the gradients after every micro-batch (or keeps them
whole, which is ZeRO-1's memory); full recomputation costs FLOP; ZeRO-3 communication; an 8-bit
optimizer changes the numerics. (Micro-batch 1 with gradient accumulation comes before all of them:
the ladder starts there.)"""

_DAMAGE = {
    "baseline": "",
    "fused attention": "none (a fused kernel; selective recomputation: a little FLOP)",
    "ZeRO-1": "none: exact, same bytes per step as data parallelism",
    "ZeRO-2": "exact; with gradient accumulation (micro-batch 1, as here) a reduce-scatter after every micro-batch: k/2 times "
              "data parallelism's gradient bytes for k micro-batches, not counted in the cost",
    "full recomputation": "FLOP",
    "ZeRO-3 / FSDP": "communication (+50%)",
    "8-bit AdamW": "the optimizer's numerics",
}


def fixes_ladder(model, gpu: str = "H200-SXM", micro_batch: int = 1, seq: int = 4096, gpus: int = 8) -> tuple:
    """Apply the fixes of ``FIXES`` in order, each on top of the last: budget and cost of each.

    The cost is the extra FLOP of recomputation and the extra communication of ZeRO-3 over data
    parallelism; ``damage`` names what a fix changes. The FLOP count the parameters whose matmuls
    run (the active ones for a mixture of experts, less an untied input embedding, which is a
    lookup); full recomputation reruns the layers' matmuls, not the output head's (each layer is a
    checkpoint).

    Explained in :ref:`training_memory` > The fixes, in order of least damage.

    Parameters
    ----------
    model : str or ~widgets.models.transformer.ModelConfig
        A preset of :mod:`widgets.models.llms` or a configuration.
    gpu : str, optional
        A catalog GPU.
    micro_batch : int, optional
        Sequences per GPU [sequences], >= 1.
    seq : int, optional
        Sequence length [tokens], >= 1.
    gpus : int, optional
        Data-parallel GPUs [-], >= 1 (the sharding fixes divide by it).

    Returns
    -------
    tuple of Rung
        One per fix, in order.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> [r.budget.fits for r in fixes_ladder("Llama-3-8B", "H100-SXM", 1, 4096, 8)]
    [False, False, True, True, True, True, True]
    """
    m = _resolve(model)
    att = attention_flop_per_token(m.layers, m.heads, m.head_dim, seq)
    head = float(m.vocab_size) * m.hidden_size
    matmul = m.active_params - (0.0 if m.tied_embeddings else head)  # the input embedding is a lookup
    if matmul <= head:  # a configuration whose counts leave no layers: price the total, as before
        matmul = layers = float(m.active_params)
    else:
        layers = matmul - head  # the output head is not recomputed
    eager = dict(attention="materialized", recompute="none", optimizer="adamw", stage=0)
    fused = dict(eager, attention="flash")
    steps = (
        ("baseline", eager),
        ("fused attention", fused),
        ("ZeRO-1", dict(fused, stage=1)),
        ("ZeRO-2", dict(fused, stage=2)),
        ("full recomputation", dict(fused, stage=2, recompute="full")),
        ("ZeRO-3 / FSDP", dict(fused, stage=3, recompute="full")),
        ("8-bit AdamW", dict(fused, stage=3, recompute="full", optimizer="adamw_8bit")),
    )
    out = []
    for name, kw in steps:
        b = memory_budget(m, gpu, micro_batch, seq, gpus=gpus, dropout=False, **kw)
        extra = recompute_flop_fraction(matmul, att, kw["recompute"], recomputed_params=layers)
        comm = 0.0 if gpus == 1 else zero_comm_bytes_per_gpu(m.params, kw["stage"]) - zero_comm_bytes_per_gpu(m.params, 0)
        out.append(Rung(name, b, extra, comm, _DAMAGE[name]))
    return tuple(out)
