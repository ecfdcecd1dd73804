"""Tests of the number-format registry (widgets/dtypes.py) against published values.

Sources of the expected values:
- [IEEE] IEEE Std 754-2019, Table 3.5: binary16 emax 15, p 11; binary32 emax 127, p 24;
  binary64 emax 1023, p 53. Max = (2 - 2^(1-p)) 2^emax, min normal 2^(1-emax).
- [BF16] Google Cloud TPU docs, "The bfloat16 numerical format": 8 exponent bits, 7 fraction bits,
  the range of fp32; max 3.3895e38 (``torch.finfo(torch.bfloat16).max`` prints 3.38953e+38).
- [TF32] NVIDIA A100 whitepaper (2020), p. 27: TF32 has fp32's 8-bit exponent and fp16's 10-bit
  mantissa (precision of fp16: u = 2^-11).
- [OFP8] OCP 8-bit Floating Point Specification rev. 1.0 (2023), Table 1: E4M3 max normal 448
  (S.1111.110), min normal 2^-6, max subnormal 0.875 x 2^-6, min subnormal 2^-9; E5M2 max normal
  57344, min normal 2^-14, min subnormal 2^-16.
- [MX] OCP Microscaling Formats (MX) v1.0 (2023), Table 1: MXFP8 and MXFP4 have k = 32 elements per
  8-bit E8M0 scale; section 5.3.3: FP4 E2M1 max normal 6.0, min normal 1.0, min subnormal 0.5.
- [FNUZ] Noune et al., "8-bit Numerical Formats for Deep Neural Networks" (2022), arXiv:2206.02915: exponent
  bias 2^(E-1), no infinities, NaN at the negative-zero code; AMD ROCm "Data types and precision support":
  E4M3FNUZ max 240, E5M2FNUZ max 57344 (torch.finfo(torch.float8_e4m3fnuz).max prints 240).
- [NVFP4] NVIDIA Technical Blog, "Introducing NVFP4..." (2025): 16 E2M1 values per FP8 E4M3 scale.
- [Higham] N. J. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed. (2002), Table 2.1:
  unit roundoff u = 2^-24 (single), 2^-53 (double).
"""

from __future__ import annotations

import pytest

from widgets import dtypes
from widgets.dtypes import bytes_per_element, dtype_names, from_torch, get_dtype


@pytest.mark.parametrize(
    "name, max_finite, min_normal, min_subnormal, u, source",
    [
        ("fp64", 1.7976931348623157e308, 2.0**-1022, 2.0**-1074, 2.0**-53, "IEEE, Higham"),
        ("fp32", 3.4028234663852886e38, 2.0**-126, 2.0**-149, 2.0**-24, "IEEE, Higham"),
        ("fp16", 65504.0, 2.0**-14, 2.0**-24, 2.0**-11, "IEEE"),
        ("bf16", 3.3895313892515355e38, 2.0**-126, 2.0**-133, 2.0**-8, "BF16"),
        ("tf32", (2 - 2.0**-10) * 2.0**127, 2.0**-126, 2.0**-136, 2.0**-11, "TF32"),
        ("fp8_e4m3", 448.0, 2.0**-6, 2.0**-9, 2.0**-4, "OFP8"),
        ("fp8_e5m2", 57344.0, 2.0**-14, 2.0**-16, 2.0**-3, "OFP8"),
        ("fp4_e2m1", 6.0, 1.0, 0.5, 2.0**-2, "MX 5.3.3"),
        ("fp8_e4m3fnuz", 240.0, 2.0**-7, 2.0**-10, 2.0**-4, "FNUZ"),
        ("fp8_e5m2fnuz", 57344.0, 2.0**-15, 2.0**-17, 2.0**-3, "FNUZ"),
    ],
)
def test_published_range_and_precision(name, max_finite, min_normal, min_subnormal, u, source):
    d = get_dtype(name)
    assert d.max_finite == max_finite, source
    assert d.min_normal == min_normal, source
    assert d.min_subnormal == min_subnormal, source
    assert d.unit_roundoff == u, source
    assert d.min_value == -max_finite


def test_bf16_max_is_3_3895e38_and_fp16_max_is_65504():
    # the brief's headline values, rounded as the sources print them
    assert f"{get_dtype('bf16').max_finite:.4e}" == "3.3895e+38"
    assert get_dtype("fp16").max_finite == 65504
    assert get_dtype("fp8_e4m3").max_finite == 448
    assert get_dtype("fp8_e5m2").max_finite == 57344


@pytest.mark.parametrize(
    "name, nbytes",
    [("fp64", 8), ("fp32", 4), ("tf32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("fp8_e4m3", 1), ("fp8_e5m2", 1),
     ("int8", 1), ("int4", 0.5), ("fp4_e2m1", 0.5), ("mxfp8", 1), ("mxfp4", 0.5), ("nvfp4", 0.5)],
)
def test_bytes_per_element(name, nbytes):
    assert bytes_per_element(name) == nbytes


def test_block_scales():
    # [MX] 32 elements per 8-bit scale; [NVFP4] 16 per 8-bit scale
    assert get_dtype("mxfp8").bits_with_scales == 8 + 8 / 32
    assert get_dtype("mxfp4").bits_with_scales == 4 + 8 / 32
    assert get_dtype("nvfp4").bits_with_scales == 4 + 8 / 16
    assert get_dtype("bf16").bits_with_scales == 16
    for name in ("mxfp8", "mxfp4", "nvfp4"):
        d = get_dtype(name)
        e = get_dtype(d.element)
        assert (d.max_finite, d.min_normal, d.unit_roundoff) == (e.max_finite, e.min_normal, e.unit_roundoff)


def test_integers():
    assert (get_dtype("int8").min_value, get_dtype("int8").max_finite) == (-128, 127)
    assert (get_dtype("int4").min_value, get_dtype("int4").max_finite) == (-8, 7)
    assert get_dtype("int8").unit_roundoff is None


def test_tf32_is_stored_in_32_bits_and_has_fp16_precision():
    # [TF32]: 1 + 8 + 10 = 19 bits used, 32 stored
    t = get_dtype("tf32")
    assert (t.bits, 1 + t.exp_bits + t.man_bits) == (32, 19)
    assert t.unit_roundoff == get_dtype("fp16").unit_roundoff
    assert t.torch_name is None


def test_aliases_and_names():
    assert get_dtype("fp8") is get_dtype("fp8_e4m3")
    assert get_dtype("E5M2") is get_dtype("fp8_e5m2")
    assert get_dtype(" BF16 ") is get_dtype("bf16")
    assert "fp8" in get_dtype("fp8_e4m3").aliases
    assert set(dtype_names()) == set(dtypes.DTYPES)
    assert "fp8" in dtype_names(aliases=True) and "fp8" not in dtype_names()
    d = get_dtype("fp16")
    assert get_dtype(d) is d


@pytest.mark.parametrize("bad", ["fp12", "", None, 2, 2.0, "float16", ["bf16"]])
def test_bad_names_raise_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"^kv_dtype must be one of .*'bf16'.*got"):
        get_dtype(bad, param="kv_dtype")
    with pytest.raises(ValueError, match="dtype must be one of"):
        bytes_per_element(bad)


def test_every_float_format_layout_is_consistent():
    for name in dtype_names():
        d = get_dtype(name)
        if d.kind == "float":
            assert 1 + d.exp_bits + d.man_bits <= d.bits
            assert d.min_subnormal < d.min_normal <= 1 < d.max_finite
            assert d.unit_roundoff == d.machine_epsilon / 2
        assert d.source


def test_from_torch_by_identity_against_torch_finfo():
    torch = pytest.importorskip("torch")
    assert from_torch(torch.float16).name == "fp16"  # not bf16: the same element size
    assert from_torch(torch.bfloat16).name == "bf16"
    assert from_torch(torch.float32).name == "fp32"
    assert from_torch(torch.float8_e4m3fnuz).name == "fp8_e4m3fnuz"  # not OCP E4M3: bias 8, max 240
    assert from_torch(torch.float8_e4m3fn).name == "fp8_e4m3"
    for name in dtype_names():
        d = get_dtype(name)
        t = getattr(torch, d.torch_name, None) if d.torch_name else None
        if t is None:
            continue
        assert from_torch(t) is d
        assert dtypes.to_torch(name) is t
        assert t.itemsize == d.bytes or d.bits < 8  # torch.int4 is a shell dtype
        if d.kind == "float":
            fi = torch.finfo(t)  # an independent implementation of the same formats
            assert (fi.max, fi.smallest_normal, fi.bits) == (d.max_finite, d.min_normal, d.bits)
            # the gap above 1, by rounding (torch.finfo(torch.float8_e5m2fnuz).eps says 0.125, but 1.125
            # rounds to 1.0 and 1.25 is the next number: E5M2 has 2 fraction bits, eps = 0.25)
            eps = d.machine_epsilon
            one = torch.tensor([1.0, 1.0 + eps, 1.0 + 0.49 * eps], dtype=torch.float64).to(t).to(torch.float64).tolist()
            assert one == [1.0, 1.0 + eps, 1.0], name
            assert torch.tensor([d.max_finite], dtype=torch.float64).to(t).item() == d.max_finite
            assert torch.tensor([d.min_subnormal], dtype=torch.float64).to(t).item() == d.min_subnormal
        elif d.bits >= 8:
            ii = torch.iinfo(t)
            assert (ii.min, ii.max) == (d.min_value, d.max_finite)


def test_from_torch_rejects_what_it_does_not_know():
    torch = pytest.importorskip("torch")
    for t in (torch.complex64, getattr(torch, "float4_e2m1fn_x2", torch.complex128)):
        with pytest.raises(ValueError, match="dtype must be a torch dtype of the registry"):
            from_torch(t)
    with pytest.raises(ValueError):
        from_torch("float16")
    with pytest.raises(ValueError, match="no torch storage dtype"):
        dtypes.to_torch("tf32")


def test_registry_imports_nothing_above_it():
    import ast
    import pathlib

    # module-level imports only (``to_torch`` imports torch when called)
    tree = ast.parse(pathlib.Path(dtypes.__file__).read_text())
    mods = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)} | {
        a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    assert mods <= {"__future__", "sys", "collections.abc", "dataclasses", "types", "typing", None}, mods


def test_peak_dtypes_are_registry_names():
    for name in dtypes.PEAK_DTYPES:
        assert get_dtype(name).kind == "float"
    from widgets import hardware

    assert hardware.DTYPES == dtypes.PEAK_DTYPES


def test_doctests():
    import doctest

    result = doctest.testmod(dtypes)
    assert result.failed == 0 and result.attempted >= 10


def test_every_dtype_name_the_library_uses_is_a_registry_name():
    """One registry: the catalog's peak and per-SM rate keys, the tensor-core capability tables, the
    serving storage choices, the precision models' formats and accumulators all name registry formats."""
    from widgets import capabilities, hardware
    from widgets.models import tensor_cores as tc
    from widgets.models import transformer

    known = set(dtype_names(aliases=True))
    used = {k for g in hardware.gpus() for k in g.peak_flop_per_s}
    used |= {k for g in hardware.gpus() for k in (g.flop_per_clock_per_sm or {})}
    used |= set(hardware.TENSOR_CORE_MIN_CC) | set(capabilities.TENSOR_CORE_DTYPES)
    used |= set(transformer.STORAGE_DTYPES) | set(tc.FORMATS) | {d for d, _ in tc.ACCUMULATORS}
    assert used <= known, sorted(used - known)
    assert set(hardware.DTYPES) >= {k for g in hardware.gpus() for k in g.peak_flop_per_s}


def test_storage_bytes_count_the_block_scales():
    """[MX] MXFP8/MXFP4: one 8-bit scale per 32 elements; [NVFP4] one E4M3 scale per 16."""
    from widgets.dtypes import storage_bytes_per_element

    assert storage_bytes_per_element("mxfp8") == 1 + 1 / 32
    assert storage_bytes_per_element("mxfp4") == 0.5 + 1 / 32
    assert storage_bytes_per_element("nvfp4") == 0.5 + 1 / 16
    for name in ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4_e2m1"):
        assert storage_bytes_per_element(name) == bytes_per_element(name)
    with pytest.raises(ValueError, match="^weight_dtype must be one of"):
        storage_bytes_per_element("fp6", param="weight_dtype")

