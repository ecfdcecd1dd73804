"""Attention and FlashAttention: the FLOP of attention, the bytes it moves, and the online softmax.

Pure functions (standard library only). Attention ``O = softmax(Q K^T / sqrt(d)) V`` costs two
matmuls (:func:`attention_flop`). Written as three kernels (a matmul, a softmax, a matmul) it
writes the ``N x N`` score matrix to memory and reads it back (:func:`standard_attention_hbm_bytes`,
``4 N d + 4 N^2`` elements per head). FlashAttention (Dao et al. 2022) never writes it: it tiles
``Q`` into row blocks that stay on chip and streams ``K`` and ``V`` past them, keeping a running
maximum and sum per row (the online softmax of Milakov & Gimelshein 2018, :func:`online_softmax`),
so its traffic is ``Theta(N^2 d^2 / M)`` for ``M`` elements of on-chip memory
(:func:`flash_attention_hbm_bytes`, Theorem 2 of the paper, counted in its Algorithm 1's loop order).

Units are in the names: ``*_bytes`` [B], ``*_flop`` [FLOP], ``*_s`` [s], ``*_per_s`` [1/s].
Every public function rejects non-physical input with a ``ValueError`` naming the parameter, the
value and what is valid.

Explained in :ref:`attention` > Attention's FLOP and bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _check
from .transformer import MAX_COUNT, _bpe, _quantity

BACKWARD_FACTOR = 2.5
"""Backward FLOP over forward FLOP of attention, five matmuls against two (Dao 2023, section 4.1)."""

MAX_SEQ = 2**24
"""Largest sequence length the models accept [tokens] (N^2 of it still fits a float exactly)."""

MAX_HEAD_DIM = 2**14
"""Largest head dimension the models accept [-]."""


def _dims(batch, heads, head_dim):
    b = _check.integer("batch", batch, minimum=1, maximum=MAX_COUNT)
    h = _check.integer("heads", heads, minimum=1, maximum=MAX_COUNT)
    d = _check.integer("head_dim", head_dim, minimum=1, maximum=MAX_HEAD_DIM)
    return b, h, d


def _seq(name, value):
    return _check.integer(name, value, minimum=1, maximum=MAX_SEQ)


def attention_flop(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int, causal: bool = False,
                   backward: bool = False) -> float:
    """FLOP of scaled dot-product attention, the FlashAttention papers' convention [FLOP].

    The forward pass is two matmuls, ``S = Q K^T`` and ``O = P V``, each ``2 seq_q seq_kv d``
    FLOP per (batch, head): ``4 B H seq_q seq_kv d``. The softmax's exponentials and the scaling
    are not counted. ``causal`` halves it (the benchmark convention of Dao 2023, section 4.1,
    although the lower triangle plus the diagonal is a little more than half). ``backward`` counts
    the backward pass alone: five matmuls (``dV``, ``dP``, ``dS``-to-``dQ``, ``dK``, and ``S``
    recomputed), 2.5 times the forward.

    Explained in :ref:`attention` > Attention's FLOP and bytes.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq_q : int
        Query length [tokens], >= 1.
    seq_kv : int
        Key/value length [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    causal : bool, optional
        Causal mask: half the FLOP.
    backward : bool, optional
        Count the backward pass (2.5 x the forward) instead of the forward.

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
    >>> attention_flop(1, 1, 1024, 1024, 64) / 1e6  # 4 N^2 d
    268.435456
    >>> attention_flop(16, 16, 4096, 4096, 128, causal=True) / 1e12
    1.099511627776
    """
    b, h, d = _dims(batch, heads, head_dim)
    nq, nk = _seq("seq_q", seq_q), _seq("seq_kv", seq_kv)
    causal = _check.flag("causal", causal)
    backward = _check.flag("backward", backward)
    flop = 4.0 * b * h * nq * nk * d
    if causal:
        flop /= 2
    if backward:
        flop *= BACKWARD_FACTOR
    return flop


def attention_matrix_bytes(batch: int, heads: int, seq_q: int, seq_kv: int, bytes_per_elem=2) -> float:
    """Bytes of one ``B x H x seq_q x seq_kv`` score (or probability) matrix [B].

    What an unfused attention materializes, once for ``S`` and once for ``P``; it grows with the
    square of the sequence.

    Explained in :ref:`attention` > The softmax wall.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq_q : int
        Query length [tokens], >= 1.
    seq_kv : int
        Key/value length [tokens], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.

    Returns
    -------
    float
        Bytes of the matrix [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> attention_matrix_bytes(1, 32, 8192, 8192) / 2**30  # GiB, one layer of Llama-2-7B's heads
    4.0
    """
    b, h, _ = _dims(batch, heads, 1)
    nq, nk = _seq("seq_q", seq_q), _seq("seq_kv", seq_kv)
    return float(b * h * nq * nk) * _bpe("bytes_per_elem", bytes_per_elem)


def standard_attention_hbm_bytes(batch: int, heads: int, seq: int, head_dim: int, bytes_per_elem=2) -> float:
    """HBM traffic of standard (unfused) attention's forward pass [B].

    Per (batch, head), as Algorithm 0 of Dao et al. 2022 moves it: read ``Q`` and ``K`` (``2 N d``),
    write ``S`` (``N^2``); read ``S`` and write ``P`` (``2 N^2``); read ``P`` and ``V``
    (``N^2 + N d``), write ``O`` (``N d``): ``4 N d + 4 N^2`` elements. Every matrix is touched
    once per kernel: caches are assumed to hold nothing between kernels (true once ``S`` outgrows
    the L2).

    Explained in :ref:`attention` > The softmax wall.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq : int
        Sequence length N [tokens], >= 1 (queries and keys).
    head_dim : int
        Head dimension d [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.

    Returns
    -------
    float
        Bytes read and written [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> standard_attention_hbm_bytes(1, 1, 1024, 64, 2) / 2**20  # (4 N d + 4 N^2) x 2 B, in MiB
    8.5
    """
    b, h, d = _dims(batch, heads, head_dim)
    n = _seq("seq", seq)
    return float(b * h * (4 * n * d + 4 * n * n)) * _bpe("bytes_per_elem", bytes_per_elem)


@dataclass(frozen=True)
class FlashBlocks:
    """The tile sizes FlashAttention's Algorithm 1 picks for an on-chip memory of ``M`` elements."""

    block_q: int
    """Rows of Q per block, ``B_r = min(ceil(M / 4d), d)`` [-]."""
    block_kv: int
    """Rows of K and V per block, ``B_c = ceil(M / 4d)`` [-]."""
    sram_elems: int
    """On-chip memory M [elements]."""


def flash_blocks(head_dim: int, sram_bytes: float, bytes_per_elem=2) -> FlashBlocks:
    """FlashAttention's block sizes for an on-chip memory of ``sram_bytes`` (Algorithm 1, line 1).

    ``B_c = ceil(M / 4d)`` and ``B_r = min(ceil(M / 4d), d)``, with ``M = sram_bytes /
    bytes_per_elem`` elements (Dao et al. 2022, Algorithm 1): the Q, K, V and O blocks then fit in
    ``M``, and the cap ``B_r <= d`` keeps the ``B_r x B_c`` score tile within ``M``. Theorem 2's
    count depends on ``B_c`` only (:func:`flash_attention_hbm_bytes`).

    Explained in :ref:`attention` > FlashAttention's tiling.

    Parameters
    ----------
    head_dim : int
        Head dimension d [-], >= 1.
    sram_bytes : float
        On-chip memory per thread block [B], at least ``4 d`` elements.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.

    Returns
    -------
    FlashBlocks
        ``block_q`` and ``block_kv`` [-], and ``sram_elems`` [elements].

    Raises
    ------
    ValueError
        If an input is out of range or the memory holds fewer than ``4 d`` elements.

    Examples
    --------
    >>> flash_blocks(128, 228 * 1024)  # an H100/H200 SM's shared memory, bf16
    FlashBlocks(block_q=128, block_kv=228, sram_elems=116736)
    """
    d = _check.integer("head_dim", head_dim, minimum=1, maximum=MAX_HEAD_DIM)
    sram = _quantity("sram_bytes", sram_bytes, zero=False)
    bpe = _bpe("bytes_per_elem", bytes_per_elem)
    if sram / bpe > MAX_COUNT:
        raise ValueError(f"sram_bytes / bytes_per_elem must be at most {MAX_COUNT} elements, got {sram_bytes!r} / {bytes_per_elem!r}")
    m = int(sram // bpe)
    if m < 4 * d:
        raise ValueError(f"sram_bytes must hold at least 4 x head_dim = {4 * d} elements "
                         f"({4 * d * bpe:g} B), got {sram_bytes!r}")
    bc = -(-m // (4 * d))
    return FlashBlocks(block_q=min(bc, d), block_kv=bc, sram_elems=m)


def flash_attention_hbm_bytes(batch: int, heads: int, seq: int, head_dim: int, sram_bytes: float,
                              bytes_per_elem=2) -> float:
    """HBM traffic of FlashAttention's forward pass in the loop order Theorem 2 counts [B].

    Algorithm 1 of Dao et al. 2022 (FlashAttention-1): the outer loop walks the ``T_c = ceil(N / B_c)``
    blocks of keys and values, ``B_c = ceil(M / 4d)`` (:func:`flash_blocks`, no cap); each ``K_j`` and
    ``V_j`` is read once, and each outer step reads all of ``Q`` and ``O`` and writes ``O`` back.
    Per (batch, head): ``2 N d + 3 N d T_c`` elements, about ``12 N^2 d^2 / M``: Theorem 2's
    ``Theta(N^2 d^2 / M)``, which beats standard attention's ``4 N^2`` only while ``M > 3 d^2``.
    The row statistics ``l`` and ``m`` (``4 N`` numbers per pass, ``1/d`` of the ``O`` traffic)
    and the initial zeroing of ``O`` are left out. FlashAttention-2's loop order (query blocks
    outside, as in the chapter's kernel, PyTorch's flash backend and cuDNN) moves
    ``2 N d + 2 N d ceil(N / B_r)`` instead, with ``B_r`` set by the registers rather than by
    ``M``; that can be more than this count (at ``N = 8192``, ``d = 128``: ``130 N d`` with
    ``B_r = 128`` against this count's ``110 N d`` for 228 KiB), so this is Algorithm 1's count,
    not an upper bound for every kernel. No cache is assumed: the repeated passes are what an L2
    can catch, so a kernel's measured traffic falls toward :func:`flash_attention_min_hbm_bytes`
    as the L2 catches them (and below it by whatever is still dirty in L2 when the kernel ends).

    Explained in :ref:`attention` > FlashAttention's tiling.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq : int
        Sequence length N [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    sram_bytes : float
        On-chip memory per thread block [B], at least ``4 d`` elements.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.

    Returns
    -------
    float
        Bytes read and written [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> flash_attention_hbm_bytes(1, 1, 1024, 64, 4 * 64 * 64 * 2) / 2**20  # B_c = 64: 16 passes over Q and O
    6.25
    """
    b, h, d = _dims(batch, heads, head_dim)
    n = _seq("seq", seq)
    bpe = _bpe("bytes_per_elem", bytes_per_elem)
    blocks = flash_blocks(d, sram_bytes, bpe)
    passes = -(-n // blocks.block_kv)
    return float(b * h * (2 * n * d + 3 * n * d * passes)) * bpe


def flash_attention_min_hbm_bytes(batch: int, heads: int, seq: int, head_dim: int, bytes_per_elem=2) -> float:
    """Compulsory HBM traffic of attention's forward pass: Q, K, V read once, O written once [B].

    The floor every fused kernel approaches when the L2 catches the repeated reads of ``K`` and
    ``V``: ``4 N d`` elements per (batch, head).

    Explained in :ref:`attention` > FlashAttention's tiling.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq : int
        Sequence length N [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.

    Returns
    -------
    float
        Bytes read and written [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> flash_attention_min_hbm_bytes(1, 1, 1024, 64) / 2**20
    0.5
    """
    b, h, d = _dims(batch, heads, head_dim)
    n = _seq("seq", seq)
    return float(b * h * 4 * n * d) * _bpe("bytes_per_elem", bytes_per_elem)


def attention_time_s(flop: float, hbm_bytes: float, peak_flop_per_s: float, hbm_bytes_per_s: float) -> float:
    """Roofline time of an attention pass: the larger of compute time and memory time [s].

    Explained in :ref:`attention` > FlashAttention's tiling.

    Parameters
    ----------
    flop : float
        FLOP of the pass [FLOP], >= 0.
    hbm_bytes : float
        Bytes moved to and from HBM [B], >= 0.
    peak_flop_per_s : float
        Dense peak [FLOP/s], > 0.
    hbm_bytes_per_s : float
        HBM bandwidth [B/s], > 0.

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
    >>> attention_time_s(1e12, 1e9, 1e15, 1e12)  # 1 ms either way
    0.001
    """
    f = _quantity("flop", flop)
    q = _quantity("hbm_bytes", hbm_bytes)
    p = _quantity("peak_flop_per_s", peak_flop_per_s, zero=False)
    bw = _quantity("hbm_bytes_per_s", hbm_bytes_per_s, zero=False)
    return _check.finite_result("attention_time_s", max(f / p, q / bw), flop=f, hbm_bytes=q, peak_flop_per_s=p,
                                hbm_bytes_per_s=bw)


def math_path_peak_bytes(batch: int, heads: int, seq: int, head_dim: int, bytes_per_elem=2,
                         compute_bytes_per_elem=None) -> float:
    """Peak memory of PyTorch SDPA's math path, forward without autograd [B].

    The math path (``torch.nn.attention.SDPBackend.MATH``) is ordinary ops: ``S = Q K^T``
    (``N^2``), then ``P = softmax(S)`` (``N^2``, while ``S`` is still alive), then ``O = P V``.
    Counted: the inputs and the output in their format (``4 N d``) and a working set in the
    compute format, ``3 N d + 2 N^2``, in which ``S`` and ``P`` dominate once ``N`` is many times ``d``.
    Recent PyTorch versions compute fp16 and bf16 inputs of the math path in fp32 unless
    ``torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)``: then
    ``compute_bytes_per_elem`` is 4.

    The ``N d`` terms are a simplification. In PyTorch's source
    (``_scaled_dot_product_attention_math`` and ``_safe_softmax`` in
    ``aten/src/ATen/native/transformers/attention.cpp``) the peak falls inside the softmax: the
    inputs (``3 N d``), the converted copies of ``Q``, ``K`` and ``V`` and the scaled ``Q``
    (``4 N d`` in the compute format; only the scaled ``Q`` when nothing is converted), ``S``,
    ``P``, and, not counted here, the ``N x N`` boolean (1 B per score) that ``_safe_softmax``
    allocates to find rows that are all ``-inf``; ``O`` does not exist yet. The chapter's H200
    record's peaks exceeded this count by about that byte per score, which is why a length this
    count lets fit can still run out of memory.

    Explained in :ref:`attention` > The silent fallback.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq : int
        Sequence length N [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element of the inputs [B] (2 for bf16), or a format name such as ``"bf16"``.
    compute_bytes_per_elem : float or str, optional
        Bytes per element of the working set [B] (default ``bytes_per_elem``).

    Returns
    -------
    float
        Bytes allocated at the peak [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> math_path_peak_bytes(1, 1, 1024, 64) / 2**20
    4.875
    >>> math_path_peak_bytes(1, 1, 1024, 64, compute_bytes_per_elem=4) / 2**20  # bf16 upcast to fp32
    9.25
    """
    b, h, d = _dims(batch, heads, head_dim)
    n = _seq("seq", seq)
    s = _bpe("bytes_per_elem", bytes_per_elem)
    c = s if compute_bytes_per_elem is None else _bpe("compute_bytes_per_elem", compute_bytes_per_elem)
    return float(b * h) * (4 * n * d * s + (3 * n * d + 2 * n * n) * c)


def flash_split_kv_splits(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int, sms: int) -> int:
    """How many parts FlashAttention-2's forward splits the keys into, as PyTorch's flash backend picks it [-].

    PyTorch's ``flash_api.cpp`` (``set_params_splitkv`` and ``num_splits_heuristic``, from the
    FlashAttention-2 repository), for a forward without dropout: the work is ``B H ceil(N_q / 64)``
    blocks of queries on ``2 x SMs`` slots (two blocks of 128 threads per SM); when that fills at
    least 80% of the slots there is one part. Otherwise the keys, in blocks of 256, 128 or 64
    (head size up to 64, up to 128, more), are split into as many parts as first reach 85% of the
    best wave efficiency (``waves / ceil(waves)``) over 1 to ``min(128, 2 x SMs, key blocks)``
    parts, skipping counts that leave the blocks per part unchanged. Each part then writes an fp32
    copy of its ``O`` and log-sum-exp, which a second kernel combines (flash decoding).
    The arithmetic is float32, as in the source.

    Explained in :ref:`attention` > Predict, then measure.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Query heads H [-], >= 1.
    seq_q : int
        Query length [tokens], >= 1.
    seq_k : int
        Key length [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    sms : int
        SMs of the GPU [-], >= 1.

    Returns
    -------
    int
        Parts [-], 1 to 128 (1: no split).

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    One sequence of 16 heads of 128 on an H200 (132 SMs): split below 845 tokens, not above.

    >>> [flash_split_kv_splits(1, 16, n, n, 128, 132) for n in (256, 512, 768, 832, 1024)]
    [2, 2, 6, 1, 1]
    """
    import numpy as np

    b, h, d = _dims(batch, heads, head_dim)
    nq, nk = _seq("seq_q", seq_q), _seq("seq_k", seq_k)
    slots = 2 * _check.integer("sms", sms, minimum=1, maximum=MAX_COUNT)
    f32 = np.float32
    work = b * h * -(-nq // 64)
    if f32(work) >= f32(0.8) * f32(slots):
        return 1
    block_n = 256 if d <= 64 else (128 if d <= 128 else 64)
    n_blocks = -(-nk // block_n)
    most = min(128, slots, n_blocks)

    def eligible(s):
        return s == 1 or -(-n_blocks // s) != -(-n_blocks // (s - 1))

    eff = {}
    for s in range(1, most + 1):
        if eligible(s):
            waves = f32(work * s) / f32(slots)
            eff[s] = float(waves / f32(math.ceil(waves)))
    best = max(eff.values())
    return next((s for s in range(1, most + 1) if s in eff and eff[s] >= 0.85 * best), 1)


def flash_path_peak_bytes(batch: int, heads: int, seq: int, head_dim: int, bytes_per_elem=2,
                          count_inputs: bool = True, sms=None) -> float:
    """Peak memory of a fused (flash) attention forward [B]: ``Q, K, V, O`` and an fp32 log-sum-exp per row.

    A fused kernel keeps its tiles of ``S`` and ``P`` on chip, so nothing in ``N^2`` is allocated;
    with ``count_inputs=False`` the count is ``O`` and the log-sum-exp (which the backward pass
    reads), to compare with an allocator's peak measured once ``Q``, ``K`` and ``V`` exist. Given
    ``sms``, it adds what PyTorch's FlashAttention-2 forward (no dropout) allocates when it splits
    the keys (:func:`flash_split_kv_splits`): per part an fp32 log-sum-exp and an fp32 ``O`` whose
    head dimension is rounded up to a multiple of 32 (256 above 192). Not counted: two 512-B
    allocator blocks for the forward's random-number state.

    Explained in :ref:`attention` > The silent fallback.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    seq : int
        Sequence length N [tokens], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (2 for bf16), or a format name such as ``"bf16"``.
    count_inputs : bool, optional
        True: ``Q``, ``K`` and ``V`` count (``4 N d`` elements with ``O``); False: only ``O`` and
        the log-sum-exp (``N d`` elements and ``4 N`` bytes per head).
    sms : int or None, optional
        SMs of the GPU [-]: the split-KV accumulators count; None: they do not.

    Returns
    -------
    float
        Bytes allocated at the peak [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> flash_path_peak_bytes(1, 1, 1024, 64) / 2**20
    0.50390625
    >>> flash_path_peak_bytes(1, 1, 1024, 64, count_inputs=False) / 2**10  # O (128 KiB) and the log-sum-exp (4 KiB)
    132.0
    >>> flash_path_peak_bytes(1, 16, 512, 128, count_inputs=False, sms=132) / 2**10  # 2 parts: + 2 x (256 KiB + 2 KiB) x 16
    10336.0
    """
    b, h, d = _dims(batch, heads, head_dim)
    n = _seq("seq", seq)
    if not isinstance(count_inputs, bool):
        raise ValueError(f"count_inputs must be True or False, got {count_inputs!r}")
    tensors = 4 if count_inputs else 1
    total = b * h * (tensors * n * d * _bpe("bytes_per_elem", bytes_per_elem) + 4 * n)
    if sms is not None:
        parts = flash_split_kv_splits(b, h, n, n, d, sms)
        if parts > 1:
            rounded = -(-d // 32) * 32 if d <= 192 else 256
            total += parts * b * h * n * (rounded + 1) * 4
    return float(total)


def largest_math_seq(batch: int, heads: int, head_dim: int, capacity_bytes: float, bytes_per_elem=2,
                     compute_bytes_per_elem=None) -> int:
    """Longest sequence whose math-path forward fits in ``capacity_bytes`` [tokens].

    The largest ``N`` with :func:`math_path_peak_bytes` ``<= capacity_bytes`` (0 when even one
    token does not fit).

    Explained in :ref:`attention` > The silent fallback.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    capacity_bytes : float
        Memory available [B], >= 0.
    bytes_per_elem : float or str, optional
        Bytes per element of the inputs [B] (2 for bf16), or a format name such as ``"bf16"``.
    compute_bytes_per_elem : float or str, optional
        Bytes per element of the working set [B] (default ``bytes_per_elem``).

    Returns
    -------
    int
        Sequence length [tokens], at most ``MAX_SEQ``.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> largest_math_seq(1, 32, 128, 141e9)  # one H200, bf16
    32966
    """
    b, h, d = _dims(batch, heads, head_dim)
    cap = _quantity("capacity_bytes", capacity_bytes)
    sb = _bpe("bytes_per_elem", bytes_per_elem)
    cb = sb if compute_bytes_per_elem is None else _bpe("compute_bytes_per_elem", compute_bytes_per_elem)
    return _longest_fitting(lambda n: math_path_peak_bytes(b, h, n, d, sb, cb) <= cap)


def _longest_fitting(fits) -> int:
    """The largest N in [0, MAX_SEQ] with ``fits(N)``, for a ``fits`` that holds up to some N and not
    beyond (memory that grows with N), by bisection (0 when even one token does not fit)."""
    lo, hi = 0, MAX_SEQ
    if fits(hi):
        return hi
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def largest_seq_scores_only(batch: int, heads: int, head_dim: int, capacity_bytes: float, score_bytes=4,
                            input_bytes=0) -> int:
    """Longest sequence when only S and P (and, with ``input_bytes``, Q, K and V) are counted [tokens].

    The largest ``N`` with ``B H (2 N^2 score_bytes + 3 N d input_bytes) <= capacity_bytes``: the
    count a reader makes by hand, which leaves out what :func:`math_path_peak_bytes` adds (the
    output and the working copies). The exercise checks name this reading when an answer matches it.

    Explained in :ref:`attention` > The silent fallback.

    Parameters
    ----------
    batch : int
        Batch size B [-], >= 1.
    heads : int
        Heads H [-], >= 1.
    head_dim : int
        Head dimension d [-], >= 1.
    capacity_bytes : float
        Memory available [B], >= 0.
    score_bytes : float or str, optional
        Bytes per score of S and P [B] (4 for fp32), or a format name.
    input_bytes : float or str, optional
        Bytes per element of Q, K and V [B]; 0 leaves the inputs out.

    Returns
    -------
    int
        Sequence length [tokens], at most ``MAX_SEQ``.

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> largest_seq_scores_only(1, 32, 128, 85.02e9)  # S and P in fp32 on an H100 SXM's 85.0 GB
    18223
    >>> largest_seq_scores_only(1, 32, 128, 85.02e9, input_bytes=2)  # and Q, K, V in bf16
    18175
    """
    b, h, d = _dims(batch, heads, head_dim)
    cap = _quantity("capacity_bytes", capacity_bytes)
    sb = _bpe("score_bytes", score_bytes)
    no_inputs = isinstance(input_bytes, (int, float)) and not isinstance(input_bytes, bool) and input_bytes == 0
    ib = 0.0 if no_inputs else _bpe("input_bytes", input_bytes)

    return _longest_fitting(lambda n: b * h * (2 * n * n * sb + 3 * n * d * ib) <= cap)


@dataclass(frozen=True)
class OnlineSoftmaxStep:
    """The state after one block of the online softmax."""

    step: int
    """Blocks seen [-]."""
    seen: int
    """Elements seen [-]."""
    running_max: float
    """Largest score so far, ``m`` [-]."""
    running_sum: float
    """``l = sum exp(x_i - m)`` over the elements seen [-]."""
    rescale: float
    """The factor ``exp(m_old - m_new)`` this step applied to the old sum and output [-]."""
    output: float
    """The normalized weighted sum so far, ``sum exp(x_i - m) v_i / l`` [-]."""


def _vector(name, x):
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__"):
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got {x!r:.80}")
    vals = [_check.number(f"{name}[{i}]", v) for i, v in enumerate(x)]
    if not vals:
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got an empty one")
    if len(vals) > MAX_SEQ:
        raise ValueError(f"{name} must have at most {MAX_SEQ} elements, got {len(vals)}")
    return vals


def online_softmax_steps(x, block: int, values=None) -> list:
    """The online softmax, block by block: the running max, sum and output after each block.

    For each block ``x_j``: ``m_new = max(m, max x_j)``; ``l = l exp(m - m_new) + sum exp(x_j -
    m_new)``; the unnormalized output ``o = o exp(m - m_new) + sum exp(x_j - m_new) v_j``
    (Milakov & Gimelshein 2018, Algorithm 3; the output is FlashAttention's ``O_i`` for one query
    row and a one-dimensional ``V``). After the last block ``o / l`` is ``softmax(x) . v``.

    Explained in :ref:`attention` > Online softmax.

    Parameters
    ----------
    x : sequence of float
        Scores of one row [-], finite, non-empty.
    block : int
        Elements per block [-], >= 1.
    values : sequence of float, optional
        One value per score [-] (default all 1, so the output is 1).

    Returns
    -------
    list of OnlineSoftmaxStep
        One state per block.

    Raises
    ------
    ValueError
        If ``x`` or ``values`` holds a non-finite number, their lengths differ, or ``block`` < 1.

    Examples
    --------
    >>> [round(s.running_max, 2) for s in online_softmax_steps([1.0, 3.0, 2.0, 5.0], 2)]
    [3.0, 5.0]
    """
    xs = _vector("x", x)
    vs = [1.0] * len(xs) if values is None else _vector("values", values)
    if len(vs) != len(xs):
        raise ValueError(f"values must have as many elements as x ({len(xs)}), got {len(vs)}")
    blk = _check.integer("block", block, minimum=1, maximum=MAX_SEQ)
    m, total, o = -math.inf, 0.0, 0.0
    steps = []
    for j, start in enumerate(range(0, len(xs), blk)):
        xb, vb = xs[start:start + blk], vs[start:start + blk]
        m_new = max(m, max(xb))
        scale = math.exp(m - m_new) if m > -math.inf else 0.0
        e = [math.exp(v - m_new) for v in xb]
        total = total * scale + math.fsum(e)
        o = o * scale + math.fsum(ei * vi for ei, vi in zip(e, vb))
        m = m_new
        steps.append(OnlineSoftmaxStep(step=j + 1, seen=start + len(xb), running_max=m, running_sum=total,
                                       rescale=scale if j else 1.0, output=o / total))
    return steps


def online_softmax(x, block: int) -> list:
    """Softmax of ``x`` computed block by block with a running max and sum [-].

    Two passes over the row, the first blockwise: the running max ``m`` and sum ``l`` are updated
    per block, the old sum rescaled by ``exp(m_old - m_new)`` whenever the max grows; then
    ``exp(x_i - m) / l``. Equals ``softmax(x)`` to rounding whatever the block size (Milakov &
    Gimelshein 2018).

    Explained in :ref:`attention` > Online softmax.

    Parameters
    ----------
    x : sequence of float
        Scores [-], finite, non-empty.
    block : int
        Elements per block [-], >= 1.

    Returns
    -------
    list of float
        Probabilities [-], summing to 1.

    Raises
    ------
    ValueError
        If ``x`` holds a non-finite number or is empty, or ``block`` < 1.

    Examples
    --------
    >>> [round(p, 4) for p in online_softmax([1.0, 2.0, 3.0], 2)]
    [0.09, 0.2447, 0.6652]
    """
    last = online_softmax_steps(x, block)[-1]
    return [math.exp(_check.number("x", v) - last.running_max) / last.running_sum for v in x]


def softmax(x) -> list:
    """The ordinary softmax of ``x``: ``exp(x_i - max x) / sum exp(x_j - max x)`` [-].

    Needs the whole row before it can write any element: the max and the sum are over all of it.

    Explained in :ref:`attention` > The softmax wall.

    Parameters
    ----------
    x : sequence of float
        Scores [-], finite, non-empty.

    Returns
    -------
    list of float
        Probabilities [-].

    Raises
    ------
    ValueError
        If ``x`` holds a non-finite number or is empty.

    Examples
    --------
    >>> [round(p, 4) for p in softmax([0.0, 0.0])]
    [0.5, 0.5]
    """
    xs = _vector("x", x)
    m = max(xs)
    e = [math.exp(v - m) for v in xs]
    s = math.fsum(e)
    return [v / s for v in e]


def softmax_hbm_bytes(rows: int, cols: int, bytes_per_elem=4, fused: bool = True) -> float:
    """HBM traffic of a row softmax over a ``rows x cols`` matrix [B].

    Fused (one kernel, a row held on chip): read ``x`` once, write ``y`` once, ``2 rows cols``
    elements. As five eager ops (max, subtract, exp, sum, divide), each reading its input from
    memory and writing its output: ``x`` read by max and subtract (``2``), ``z`` written and read
    (``2``), ``e`` written, read by the sum and the divide (``3``), ``y`` written (``1``):
    ``8 rows cols`` elements (the per-row max and sum, ``4 rows``, are also counted).

    Explained in :ref:`attention` > The softmax wall.

    Parameters
    ----------
    rows : int
        Rows [-], >= 1.
    cols : int
        Row length [-], >= 1.
    bytes_per_elem : float or str, optional
        Bytes per element [B] (4 for fp32), or a format name such as ``"fp32"``.
    fused : bool, optional
        One kernel (True) or five eager ops (False).

    Returns
    -------
    float
        Bytes read and written [B].

    Raises
    ------
    ValueError
        If an input is out of range.

    Examples
    --------
    >>> softmax_hbm_bytes(1024, 1024) / 2**20, softmax_hbm_bytes(1024, 1024, fused=False) / 2**20
    (8.0, 32.015625)
    """
    r = _check.integer("rows", rows, minimum=1, maximum=MAX_COUNT)
    c = _check.integer("cols", cols, minimum=1, maximum=MAX_COUNT)
    bpe = _bpe("bytes_per_elem", bytes_per_elem)
    if _check.flag("fused", fused):
        return float(2 * r * c) * bpe
    return float(8 * r * c + 4 * r) * bpe
