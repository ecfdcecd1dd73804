"""Number formats: one registry of every dtype the book names, each figure derived from its bit
layout and checked against its specification.

A format is a sign bit, ``exp_bits`` of exponent and ``man_bits`` of fraction (a floating-point
format), or a two's-complement integer. Every other figure follows from the layout and from how
the format spends its top exponent:

- ``"ieee"``: the top exponent holds infinities and NaNs (IEEE 754 binary formats, bfloat16,
  TF32, FP8 E5M2); the largest finite number is ``(2 - 2^-M) 2^emax`` with
  ``emax = 2^E - 2 - bias``.
- ``"fn"`` (finite, one NaN pattern): FP8 E4M3 keeps only S.1111.111 as NaN, so the top exponent
  holds normals up to ``(2 - 2^(1-M)) 2^(2^E - 1 - bias)`` = 448.
- ``"fnuz"`` (finite, no negative zero: AMD's and Graphcore's FP8): the one NaN is the code of
  negative zero, every exponent holds normals, and the bias is ``2^(E-1)`` (one more than IEEE's),
  so the largest number is ``(2 - 2^-M) 2^(2^E - 1 - bias)``: 240 for E4M3FNUZ, 57344 for E5M2FNUZ.
- ``"none"`` (no infinities, no NaNs): FP4 E2M1, whose largest number is ``(2 - 2^-M) 2^(2^E - 1 - bias)`` = 6.

``bias = 2^(E-1) - 1`` (``2^(E-1)`` for ``"fnuz"``); the smallest normal is ``2^(1 - bias)``, the smallest subnormal
``2^(1 - bias - M)``; the unit roundoff (the largest relative error of rounding to nearest) is
``u = 2^-(M + 1)``.

Block-scaled formats (OCP MX, NVIDIA NVFP4) store ``block_size`` elements of an element format
and one shared scale of ``scale_bits``; their element figures are those of the element format
(before scaling), and ``bits_with_scales`` counts the scale's share.

References
----------
- IEEE Std 754-2019, Table 3.5 (binary16, binary32, binary64: emax, precision).
- bfloat16: Google Cloud TPU documentation, "The bfloat16 numerical format" (binary32's 8-bit
  exponent, 7 fraction bits); Intel, "BFLOAT16 - Hardware Numerics Definition" (2018).
- TF32: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), p. 27: 8-bit exponent, 10-bit
  mantissa, stored in 32 bits.
- FP8 E4M3 / E5M2: OCP 8-bit Floating Point Specification (OFP8) rev. 1.0 (2023), Table 1
  (max normal 448 / 57344, min normal 2^-6 / 2^-14, min subnormal 2^-9 / 2^-16); Micikevicius
  et al., "FP8 Formats for Deep Learning" (2022), Table 1.
- FP4 E2M1, MXFP8, MXFP4: OCP Microscaling Formats (MX) Specification v1.0 (2023), Table 1
  (block size 32, E8M0 scale) and section 5.3.3 (E2M1: max 6.0, min normal 1.0, min subnormal 0.5).
  Table 1 defines MXFP8 with E5M2 or E4M3 elements; ``"mxfp8"`` here is the E4M3 variant.
- FP8 E4M3FNUZ / E5M2FNUZ: Noune et al., "8-bit Numerical Formats for Deep Neural Networks" (2022),
  arXiv:2206.02915 (bias 2^(E-1), NaN at the negative-zero code, no infinities); AMD ROCm
  documentation, "Data types and precision support" (the FP8 of MI300: E4M3FNUZ, E5M2FNUZ).
- NVFP4: NVIDIA Technical Blog, "Introducing NVFP4 for Efficient and Accurate Low-Precision
  Inference" (2025): E2M1 elements, one FP8 E4M3 scale per 16 elements (plus one FP32 scale per
  tensor, not counted here).
- int8/int4: two's complement, ``[-2^(n-1), 2^(n-1) - 1]``.
- torch names: PyTorch documentation, ``torch.dtype`` (``torch.float8_e4m3fn``,
  ``torch.float8_e5m2``, ``torch.int4``...). TF32 has none: it is a
  math mode of fp32 matmuls (``torch.backends.cuda.matmul.allow_tf32``), not a storage type.

The short name ``"fp8"`` (the catalog's peak rates, the serving chapter's storage choice) means
E4M3, the format of weights and activations in the forward pass.

Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

This module imports only the standard library (and ``widgets._check``); :func:`from_torch`
looks torch up only in an already imported ``torch`` module.

>>> get_dtype("bf16").max_finite
3.3895313892515355e+38
>>> get_dtype("fp16").max_finite, get_dtype("fp8_e4m3").max_finite, get_dtype("fp8_e5m2").max_finite
(65504.0, 448.0, 57344.0)
>>> bytes_per_element("fp8"), bytes_per_element("int4")
(1.0, 0.5)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from . import _check

KINDS = ("float", "int")
SPECIALS = ("ieee", "fn", "fnuz", "none")


@dataclass(frozen=True)
class DType:
    """One number format: its bit layout, the range and precision that follow, and its sources.

    Attributes
    ----------
    name : str
        The book's name (``"bf16"``, ``"fp8_e4m3"``...).
    kind : str
        ``"float"`` or ``"int"``.
    bits : int
        Bits one element occupies in storage [bit] (tf32 occupies 32, of which it uses 19).
    exp_bits, man_bits : int
        Exponent and fraction (mantissa without the implicit bit) widths [bit]; 0 for integers.
    special : str
        How the top exponent is spent: ``"ieee"``, ``"fn"``, ``"fnuz"`` or ``"none"`` (see the module).
    torch_name : str or None
        The attribute of ``torch`` that is this dtype (``"float16"``), or None.
    block_size : int
        Elements sharing one scale (block-scaled formats), else 1.
    scale_bits : int
        Bits of the shared scale per block [bit] (0 without one).
    element : str or None
        The element format of a block-scaled format.
    source : str
        Where the layout and its figures are specified.
    """

    name: str
    kind: str
    bits: int
    exp_bits: int
    man_bits: int
    special: str
    torch_name: Optional[str]
    source: str
    block_size: int = 1
    scale_bits: int = 0
    element: Optional[str] = None

    def __post_init__(self):
        _check.choice("kind", self.kind, KINDS)
        _check.choice("special", self.special, SPECIALS)
        _check.integer("bits", self.bits, minimum=1, maximum=64)
        _check.integer("exp_bits", self.exp_bits, minimum=0, maximum=15)
        _check.integer("man_bits", self.man_bits, minimum=0, maximum=63)
        if self.kind == "float" and (self.exp_bits < 1 or 1 + self.exp_bits + self.man_bits > self.bits):
            raise ValueError(f"{self.name}: 1 + exp_bits + man_bits must fit in bits={self.bits}")

    # -- storage ---------------------------------------------------------------------------------
    @property
    def bytes(self) -> float:
        """Bytes one element occupies [B], ``bits / 8`` (0.5 for a 4-bit format)."""
        return self.bits / 8.0

    @property
    def bits_with_scales(self) -> float:
        """Bits per element including its share of the block's scale [bit], ``bits + scale_bits / block_size``.

        >>> get_dtype("mxfp4").bits_with_scales, get_dtype("nvfp4").bits_with_scales
        (4.25, 4.5)
        """
        return self.bits + self.scale_bits / self.block_size

    # -- range and precision ---------------------------------------------------------------------
    @property
    def bias(self) -> int:
        """Exponent bias ``2^(E-1) - 1``, or ``2^(E-1)`` for a ``"fnuz"`` format (0 for integers)."""
        if self.kind != "float":
            return 0
        return 2 ** (self.exp_bits - 1) - (0 if self.special == "fnuz" else 1)

    @property
    def max_finite(self) -> float:
        """Largest finite value (of an element, before any block scale).

        >>> get_dtype("fp4_e2m1").max_finite, get_dtype("int8").max_finite
        (6.0, 127.0)
        """
        if self.kind == "int":
            return float(2 ** (self.bits - 1) - 1)
        e, m = self.exp_bits, self.man_bits
        if self.special == "ieee":
            return (2.0 - 2.0**-m) * 2.0 ** (2**e - 2 - self.bias)
        if self.special == "fn":
            return (2.0 - 2.0 ** (1 - m)) * 2.0 ** (2**e - 1 - self.bias)
        return (2.0 - 2.0**-m) * 2.0 ** (2**e - 1 - self.bias)

    @property
    def max_normal(self) -> Optional[float]:
        """Largest normal value, for a floating-point format its largest finite value (None for integers).

        >>> get_dtype("fp16").max_normal
        65504.0
        """
        return self.max_finite if self.kind == "float" else None

    @property
    def min_value(self) -> float:
        """Most negative finite value, ``-max_finite`` for floats and ``-2^(n-1)`` for integers."""
        if self.kind == "int":
            return float(-(2 ** (self.bits - 1)))
        return -self.max_finite

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value ``2^(1 - bias)`` (1 for integers).

        >>> get_dtype("fp16").min_normal == 2**-14, get_dtype("fp8_e4m3").min_normal == 2**-6
        (True, True)
        """
        return 2.0 ** (1 - self.bias) if self.kind == "float" else 1.0

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value ``2^(1 - bias - M)`` (1 for integers)."""
        return 2.0 ** (1 - self.bias - self.man_bits) if self.kind == "float" else 1.0

    @property
    def unit_roundoff(self) -> Optional[float]:
        """The largest relative error of rounding to nearest, ``u = 2^-(M+1)`` (None for integers, which round to steps of 1).

        >>> get_dtype("bf16").unit_roundoff == 2**-8, get_dtype("fp32").unit_roundoff == 2**-24
        (True, True)
        """
        return 2.0 ** -(self.man_bits + 1) if self.kind == "float" else None

    @property
    def machine_epsilon(self) -> Optional[float]:
        """Gap between 1 and the next number, ``2^-M`` (``torch.finfo(...).eps``); None for integers."""
        return 2.0**-self.man_bits if self.kind == "float" else None

    @property
    def aliases(self) -> tuple:
        """Other names :func:`get_dtype` accepts for this format."""
        return tuple(a for a, n in ALIASES.items() if n == self.name)


_IEEE = "IEEE Std 754-2019, Table 3.5"
_OFP8 = "OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, Table 1; Micikevicius et al. 2022, Table 1"
_FNUZ = ("Noune et al., '8-bit Numerical Formats for Deep Neural Networks' (2022), arXiv:2206.02915; "
         "AMD ROCm documentation, 'Data types and precision support' (MI300 FP8)")
_MX = "OCP Microscaling Formats (MX) Specification v1.0, Table 1 and section 5.3.3"

_TABLE = (
    DType("fp64", "float", 64, 11, 52, "ieee", "float64", f"{_IEEE} (binary64)"),
    DType("fp32", "float", 32, 8, 23, "ieee", "float32", f"{_IEEE} (binary32)"),
    DType("tf32", "float", 32, 8, 10, "ieee", None,
          "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), p. 27: 8-bit exponent, 10-bit mantissa, stored in 32 bits"),
    DType("bf16", "float", 16, 8, 7, "ieee", "bfloat16",
          "Google Cloud TPU documentation, 'The bfloat16 numerical format'; Intel BFLOAT16 Hardware Numerics Definition (2018)"),
    DType("fp16", "float", 16, 5, 10, "ieee", "float16", f"{_IEEE} (binary16)"),
    DType("fp8_e4m3", "float", 8, 4, 3, "fn", "float8_e4m3fn", f"{_OFP8} (E4M3)"),
    DType("fp8_e5m2", "float", 8, 5, 2, "ieee", "float8_e5m2", f"{_OFP8} (E5M2)"),
    DType("fp8_e4m3fnuz", "float", 8, 4, 3, "fnuz", "float8_e4m3fnuz", f"{_FNUZ} (E4M3FNUZ: max 240)"),
    DType("fp8_e5m2fnuz", "float", 8, 5, 2, "fnuz", "float8_e5m2fnuz", f"{_FNUZ} (E5M2FNUZ: max 57344)"),
    DType("fp4_e2m1", "float", 4, 2, 1, "none", None, f"{_MX} (FP4 E2M1 element)"),
    DType("mxfp8", "float", 8, 4, 3, "fn", None, f"{_MX}: MXFP8 with E4M3 elements (Table 1 also "
          "defines MXFP8 with E5M2 elements, not listed here), 32 per E8M0 scale",
          block_size=32, scale_bits=8, element="fp8_e4m3"),
    DType("mxfp4", "float", 4, 2, 1, "none", None, f"{_MX}: MXFP4 (E2M1 elements), 32 per E8M0 scale",
          block_size=32, scale_bits=8, element="fp4_e2m1"),
    DType("nvfp4", "float", 4, 2, 1, "none", None,
          "NVIDIA Technical Blog, 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (2025): "
          "E2M1 elements, one FP8 E4M3 scale per 16 (a per-tensor FP32 scale not counted)",
          block_size=16, scale_bits=8, element="fp4_e2m1"),
    DType("int8", "int", 8, 0, 0, "none", "int8", "two's complement 8-bit integer"),
    DType("int4", "int", 4, 0, 0, "none", "int4", "two's complement 4-bit integer (stored two per byte)"),
)

DTYPES: Mapping[str, DType] = MappingProxyType({d.name: d for d in _TABLE})
"""Every format by its canonical name, in the order of :func:`dtype_names`."""

# Short names: "fp8" alone means E4M3 (the forward-pass format; the catalog's fp8 peaks).
ALIASES: Mapping[str, str] = MappingProxyType({"fp8": "fp8_e4m3", "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "fp4": "fp4_e2m1"})



PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
"""Formats a GPU catalog entry gives a dense peak rate for (the keys of ``GPU.peak_flop_per_s``):
fp32 on the vector units, tf32/bf16/fp16/fp8 on the matrix units. ``"fp8"`` is E4M3 (E5M2 runs at
the same rate on the GPUs of the catalog; on MI300X the FP8 rates are for the FNUZ variants)."""


def dtype_names(*, aliases: bool = False) -> tuple:
    """Canonical names of every format (with ``aliases=True``, the short names too).

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    aliases : bool, optional
        Also list the short names (``"fp8"``, ``"e4m3"``, ``"e5m2"``, ``"fp4"``).

    Returns
    -------
    tuple of str
        Names :func:`get_dtype` accepts, in registry order.

    Raises
    ------
    ValueError
        If ``aliases`` is not a bool.

    Examples
    --------
    >>> dtype_names()[:5]
    ('fp64', 'fp32', 'tf32', 'bf16', 'fp16')
    >>> "fp8" in dtype_names(aliases=True)
    True
    """
    names = tuple(DTYPES)
    return names + tuple(ALIASES) if _check.flag("aliases", aliases) else names


def get_dtype(name, *, param: str = "dtype") -> DType:
    """The :class:`DType` called ``name`` (case-insensitive; aliases such as ``"fp8"``), or a ``DType`` passed through.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    name : str or DType
        A name from :func:`dtype_names` (``aliases=True``).
    param : str, optional
        The caller's parameter name, used in the error message.

    Returns
    -------
    DType
        The format's layout, range, precision and sources.

    Raises
    ------
    ValueError
        Naming ``param``, the value and the valid names.

    Examples
    --------
    >>> get_dtype("FP8").name, get_dtype("bf16").torch_name
    ('fp8_e4m3', 'bfloat16')
    """
    if isinstance(name, DType):
        return name
    if isinstance(name, str):
        key = name.strip().lower()
        key = ALIASES.get(key, key)
        if key in DTYPES:
            return DTYPES[key]
    raise ValueError(f"{param} must be one of {', '.join(map(repr, dtype_names(aliases=True)))}; got {name!r}")


def bytes_per_element(name, *, param: str = "dtype") -> float:
    """Bytes one element of ``name`` occupies in storage [B].

    int4 and fp4 pack two elements per byte (0.5); block scales are not counted (see
    :attr:`DType.bits_with_scales`).

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    name : str or DType
        A format name (aliases accepted).
    param : str, optional
        The caller's parameter name, used in the error message.

    Returns
    -------
    float
        Bytes per element [B].

    Raises
    ------
    ValueError
        Naming ``param``, the value and the valid names.

    Examples
    --------
    >>> bytes_per_element("fp32"), bytes_per_element("bf16"), bytes_per_element("nvfp4")
    (4.0, 2.0, 0.5)
    """
    return get_dtype(name, param=param).bytes


def storage_bytes_per_element(name, *, param: str = "dtype") -> float:
    """Bytes one element of a tensor stored in ``name`` takes [B], its share of the block scales included.

    ``bits_with_scales / 8``: the same as :func:`bytes_per_element` for a format without block
    scales (bf16 2, fp8 1, int4 0.5), more for a block-scaled one (MXFP4 4.25 bits, NVFP4 4.5 bits
    per element). What a weight or KV-cache tensor in that format occupies in memory.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    name : str or DType
        A format name (aliases accepted).
    param : str, optional
        The caller's parameter name, used in the error message.

    Returns
    -------
    float
        Bytes per element, scales included [B].

    Raises
    ------
    ValueError
        Naming ``param``, the value and the valid names.

    Examples
    --------
    >>> storage_bytes_per_element("bf16"), storage_bytes_per_element("mxfp4"), storage_bytes_per_element("nvfp4")
    (2.0, 0.53125, 0.5625)
    """
    return get_dtype(name, param=param).bits_with_scales / 8.0


def from_torch(dtype) -> DType:
    """The registry entry of a ``torch.dtype``, matched by identity with ``torch.<torch_name>``.

    Never by element size: ``torch.float16`` and ``torch.bfloat16`` are both 2 bytes and stay apart.

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    dtype : object
        A ``torch.dtype`` of an imported torch.

    Returns
    -------
    DType
        The entry whose ``torch_name`` is that dtype.

    Raises
    ------
    ValueError
        If ``dtype`` is not a torch dtype of the registry (e.g. ``torch.float4_e2m1fn_x2``, one
        byte holding a packed pair of E2M1 values rather than one element, or ``torch.complex64``).
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        for d in _TABLE:
            if d.torch_name is not None and getattr(torch, d.torch_name, None) is dtype:
                return d
    raise ValueError(f"dtype must be a torch dtype of the registry ({', '.join('torch.' + d.torch_name for d in _TABLE if d.torch_name)}); "
                     f"got {dtype!r}")


def to_torch(name, *, param: str = "dtype"):
    """The ``torch.dtype`` of ``name`` (imports torch).

    Explained in :ref:`tensor_cores` > Number formats: range, precision, accumulation.

    Parameters
    ----------
    name : str or DType
        A format name (aliases accepted).
    param : str, optional
        The caller's parameter name, used in the error message.

    Returns
    -------
    object
        The ``torch.dtype`` ``torch.<torch_name>``.

    Raises
    ------
    ValueError
        If the format has no torch storage dtype (tf32, fp4_e2m1, the block-scaled formats) or this
        torch lacks it.
    """
    d = get_dtype(name, param=param)
    if d.torch_name is None:
        raise ValueError(f"{param}={name!r} has no torch storage dtype")
    import torch

    t = getattr(torch, d.torch_name, None)
    if t is None:
        raise ValueError(f"{param}={name!r}: this torch ({torch.__version__}) has no torch.{d.torch_name}")
    return t


__all__ = ["ALIASES", "DTYPES", "DType", "KINDS", "PEAK_DTYPES", "SPECIALS", "bytes_per_element", "dtype_names", "from_torch",
           "get_dtype", "storage_bytes_per_element", "to_torch"]
