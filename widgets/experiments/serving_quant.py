"""Weight-only quantization error, measured with numpy on random-normal weights.

Symmetric integer quantization with one scale per group of ``group_size`` weights along the input
dimension (per output channel when ``group_size`` is the whole row): ``q = round(w / s)`` clipped to
``[-(2^(b-1) - 1), 2^(b-1) - 1]`` with ``s = max|w| / (2^(b-1) - 1)``. What it shows: the relative
error of the weights and of one matmul's output, as bits and group size change. What it does NOT
show: model quality. Trained weights have outlier channels that random-normal ones lack, which is
why real int4 methods (GPTQ, AWQ) choose scales from data; and a matmul's error is not a model's
perplexity. Cheap enough to run anywhere (a few milliseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import harness


@dataclass(frozen=True)
class QuantError(harness.Result):
    """Relative errors of symmetric integer weight quantization (:func:`weight_quantization_error`)."""

    bits: int
    group_size: int
    rows: int
    cols: int
    weight_rel_error: float
    output_rel_error: float
    bytes_per_weight: float


def weight_quantization_error(bits: int = 4, group_size: int = 128, rows: int = 128, cols: int = 4096, seed: int = 0) -> QuantError:
    """Quantize a ``rows x cols`` random-normal weight matrix to ``bits``-bit integers with one fp16
    scale per ``group_size`` inputs, and measure ``||W_q - W|| / ||W||`` and, for a random-normal
    input batch of 8, ``||W_q x - W x|| / ||W x||`` (Frobenius norms). ``bytes_per_weight`` counts the
    scales: ``bits / 8 + 2 / group_size``."""
    if not 2 <= int(bits) <= 8:
        raise ValueError(f"bits must be in [2, 8], got {bits!r}")
    if group_size < 1 or cols % group_size:
        raise ValueError(f"group_size must divide cols={cols}, got {group_size!r}")
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)).astype(np.float32) / np.sqrt(cols)
    x = rng.standard_normal((cols, 8)).astype(np.float32)
    g = w.reshape(rows, cols // group_size, group_size)
    qmax = 2 ** (int(bits) - 1) - 1
    s = np.abs(g).max(axis=-1, keepdims=True) / qmax
    s = s.astype(np.float16).astype(np.float32)  # scales stored in fp16
    s[s == 0] = 1.0
    wq = (np.clip(np.round(g / s), -qmax, qmax) * s).reshape(rows, cols)
    werr = float(np.linalg.norm(wq - w) / np.linalg.norm(w))
    y, yq = w @ x, wq @ x
    yerr = float(np.linalg.norm(yq - y) / np.linalg.norm(y))
    return QuantError(int(bits), int(group_size), rows, cols, werr, yerr, int(bits) / 8 + 2 / group_size)
