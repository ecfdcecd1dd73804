"""Tests of the tensor-cores models (against published figures), calculators and experiments."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from widgets.hardware import get_gpu
from widgets.models import tensor_cores as tc


# --------------------------------------------------------------------------------------------
# Peak from first principles, against datasheets and whitepapers
# --------------------------------------------------------------------------------------------
def test_matmul_flop_is_2mnk():
    assert tc.matmul_flop(1, 1, 1) == 2
    assert tc.matmul_flop(2, 3, 4) == 48
    assert tc.matmul_flop(8192, 8192, 8192) == 2 * 8192**3


def test_a100_bf16_peak_from_whitepaper():
    """A100 whitepaper: 1024 dense FP16 FMA/clock/SM (2048 FLOP), 108 SMs, 1410 MHz boost;
    datasheet: 312 TFLOPS dense BF16/FP16."""
    assert tc.peak_flop_per_s(108, 1.41e9, 2048) == pytest.approx(312e12, rel=1e-3)
    assert tc.FLOP_PER_CLOCK_PER_SM["A100-SXM-80GB"]["bf16"] == 2 * 1024


def test_a100_fp32_peak():
    """A100 datasheet: 19.5 TFLOPS FP32 = 108 SMs x 64 FP32 lanes x 2 x 1410 MHz."""
    assert tc.peak_flop_per_s(108, 1.41e9, 64 * 2) == pytest.approx(19.5e12, rel=1e-3)


def test_h100_tensor_peaks_imply_1830_mhz():
    """H100 SXM datasheet: 989.4 TFLOPS dense BF16 (1979 sparse), 494.7 TF32, 1978.9 FP8; H100
    whitepaper, SM section: 4096 dense BF16 FLOP/clock/SM. NVIDIA prints no clock for these peaks:
    1830 MHz is the clock they imply (the catalog's derived datasheet_clock_hz)."""
    for dtype, rate, peak in (("bf16", 4096, 989.4e12), ("tf32", 2048, 494.7e12), ("fp8", 8192, 1978.9e12)):
        assert tc.FLOP_PER_CLOCK_PER_SM["H100-SXM"][dtype] == rate
        assert tc.implied_clock_hz(peak, 132, rate) == pytest.approx(1.83e9, rel=1e-3)


def test_h100_fp32_peak_implies_max_boost():
    """H100 SXM datasheet: 67 TFLOPS FP32 = 132 SMs x 128 lanes x 2 FLOP x 1980 MHz (max boost)."""
    assert tc.peak_flop_per_s(132, 1.98e9, 256) == pytest.approx(67e12, rel=2e-3)
    assert tc.implied_clock_hz(67e12, 132, 256) == pytest.approx(1.98e9, rel=2e-3)


def test_h100_pcie_tensor_clock():
    """H100 PCIe: 756 TFLOPS dense FP16 on 114 SMs at 4096 FLOP/clock/SM implies a 1620 MHz tensor
    clock (derived: the datasheet prints no clock; NVIDIA developer forum thread 244727 works the
    SXM5 case through)."""
    assert tc.implied_clock_hz(756e12, 114, 4096) == pytest.approx(1.62e9, rel=2e-3)


@pytest.mark.parametrize("gpu", list(tc.FLOP_PER_CLOCK_PER_SM))
def test_every_first_principles_peak_matches_the_catalog(gpu):
    """Each rebuilt peak agrees with the catalog's datasheet figure within 1.5%."""
    for dtype in tc.FLOP_PER_CLOCK_PER_SM[gpu]:
        c = tc.peak_check(gpu, dtype)
        assert c.ratio == pytest.approx(1.0, abs=0.015), (gpu, dtype, c)
        assert c.catalog_flop_per_s == get_gpu(gpu).peak(dtype)


def test_a_rebuild_from_an_input_derived_from_the_peak_says_by_construction():
    """The catalog's own source notes: the H100/H200 (1830 MHz) and H100 PCIe (1620 MHz) tensor clocks are
    derived from the datasheet peaks (NVIDIA prints no clock); the L4's SM count comes from its FP32 peak
    and its tensor rates from its tensor peaks; the A10G's tensor rates from its peaks; the L40S's boost
    clock from its FP32 peak and its TF32/FP8 rates from those peaks. Those rebuilds check nothing."""
    derived = {"H100-SXM": {"tf32", "bf16", "fp16", "fp8"}, "H200-SXM": {"tf32", "bf16", "fp16", "fp8"},
               "H100-PCIe": {"tf32", "bf16", "fp16", "fp8"}, "L4": {"fp32", "tf32", "bf16", "fp16", "fp8"},
               "A10G": {"tf32", "bf16", "fp16"}, "L40S": {"fp32", "tf32", "fp8"}}
    for gpu, rates in tc.FLOP_PER_CLOCK_PER_SM.items():
        for dtype in rates:
            c = tc.peak_check(gpu, dtype)
            if dtype in derived.get(gpu, ()):
                assert c.by_construction and c.agreement == "consistent by construction", (gpu, dtype)
            else:  # SMs, clock and per-SM rate published apart from the peak: a real check
                assert c.by_construction == "" and c.agreement != "consistent by construction", (gpu, dtype)
    # every dtype the catalog names as derived is one of the GPU's peaks (a typo would silently mark nothing)
    for gpu in derived:
        assert set(tc._derived_from_peaks(get_gpu(gpu))) == derived[gpu]


def test_l40s_bf16_rebuild_differs_from_the_printed_dense_figure():
    """NVIDIA L40S datasheet: BF16/FP16 362.05 | 733* TFLOPS (dense | sparse) and FP8 733 | 1,466*; 142 SMs x
    2520 MHz x 1024 FLOP/clock/SM (half the FP8 rate) = 366.4 TFLOPS: 1.2% above the printed figure."""
    c = tc.peak_check("L40S", "bf16")
    assert c.catalog_flop_per_s == 362.05e12 and c.by_construction == ""
    assert c.ratio == pytest.approx(142 * 2.52e9 * 1024 / 362.05e12) and c.agreement == "differs by +1.2%"
    assert tc.peak_check("A100-SXM-80GB", "bf16").agreement == "match"  # 108 x 1410 MHz x 2048 = 312 TFLOPS
    from widgets.ui import tensor_cores as ui

    table = ui.peak_table()  # each verdict in the third column; the derived inputs in notes under the table
    assert "differs by +1.2%" in table and "consistent by construction<sup>1</sup>" in table and "title=" not in table
    assert '<span class="wraps">consistent by construction<sup>1</sup></span>' in table  # wraps on a phone (gpubook.css)
    head = re.findall(r"<th>([^<]*)</th>", table)
    assert head.index("agreement") == 2, head  # seen without scrolling the table sideways
    notes = re.findall(r'<li value="(\d+)">([^<]*)</li>', table)
    assert [int(k) for k, _ in notes] == list(range(1, len(notes) + 1)) and len(notes) >= 3, notes
    assert any(text.startswith("H100-SXM, H200-SXM: the tensor-core clock") for _, text in notes), notes
    for k, _ in notes:  # every note is called from the table, and every call has its note
        assert f"<sup>{k}</sup>" in table


def test_mi300x_bf16_peak():
    """AMD MI300X data sheet: 1307.4 TFLOPS dense BF16 = 304 CUs x 2100 MHz x 2048 FLOP/clock/CU."""
    assert tc.peak_flop_per_s(304, 2.1e9, 2048) == pytest.approx(1307.4e12, rel=1e-3)


def test_sparse_is_twice_dense():
    """H100 datasheet prints 1979 TFLOPS 'with sparsity' for BF16: twice the dense 989.4."""
    assert tc.sparse_flop_per_s(989.4e12) == pytest.approx(1978.8e12)


def test_peak_check_rejects_unknown():
    with pytest.raises(ValueError, match="gpu"):
        tc.peak_check("B200", "bf16")
    with pytest.raises(ValueError, match="dtype"):
        tc.peak_check("A100-SXM-80GB", "fp8")


# --------------------------------------------------------------------------------------------
# Tiles, waves, the GEMM estimate (hand-derived cases)
# --------------------------------------------------------------------------------------------
def test_gemm_waves_hand_cases():
    # 8192^2 output, 128x256 tiles: 64 x 32 = 2048 tiles; 2048/132 = 15.5 -> 16 waves
    assert tc.gemm_waves(8192, 8192, 128, 256, 132) == (2048, 16, 2048 / (16 * 132))
    # exactly one full wave
    assert tc.gemm_waves(132 * 128, 256, 128, 256, 132) == (132, 1, 1.0)
    # one tile more: a second wave with one tile in it
    t, w, e = tc.gemm_waves(133 * 128, 256, 128, 256, 132)
    assert (t, w) == (133, 2) and e == pytest.approx(133 / 264)
    # a matrix smaller than one tile is one tile
    assert tc.gemm_waves(1, 1, 128, 256, 132) == (1, 1, 1 / 132)


def test_tile_efficiency_hand_cases():
    assert tc.tile_efficiency(256, 512, 128, 256) == 1.0
    assert tc.tile_efficiency(129, 256, 128, 256) == pytest.approx(129 / 256)
    assert tc.tile_efficiency(8191, 8191, 128, 256) == pytest.approx(8191**2 / 8192**2)


def test_gemm_estimate_h200_8192():
    """H200 bf16 8192^3, 128x256 tiles: 16 waves at 96.97% -> 989.4 x 0.9697 = 959.4 TFLOP/s;
    3 x 128 MiB / 4.8 TB/s = 84 us of memory time against 1.15 ms of compute."""
    e = tc.gemm_estimate(8192, 8192, 8192, 989.4e12, 4.8e12, 132)
    assert e.flop_per_s == pytest.approx(989.4e12 * 2048 / 2112, rel=1e-9)
    assert e.memory_time_s == pytest.approx(3 * 2 * 8192**2 / 4.8e12)
    assert e.bound == "compute" and e.aligned


def test_small_gemm_is_memory_bound():
    """A matrix-vector-like GEMM (M = 1): intensity about 1 FLOP/B, far below the H200 ridge; with
    a tile that fits it (16 x 64) the model says memory-bound, with a 128 x 256 tile the padded
    rows cost more than the bytes."""
    assert tc.gemm_estimate(1, 8192, 8192, 989.4e12, 4.8e12, 132, tile_m=16, tile_n=64).bound == "memory"
    assert tc.gemm_estimate(1, 8192, 8192, 989.4e12, 4.8e12, 132).bound == "compute"
    assert tc.gemm_intensity(1, 8192, 8192) == pytest.approx(2 * 8192**2 / (2 * (8192 + 8192**2 + 8192)))


def test_misaligned_shapes_are_flagged():
    assert not tc.gemm_estimate(8191, 8191, 8191, 989.4e12, 4.8e12, 132).aligned
    assert tc.gemm_estimate(8200, 8200, 8200, 989.4e12, 4.8e12, 132).aligned
    assert tc.is_aligned(4, 4) and not tc.is_aligned(3, 4)


def test_wave_sawtooth():
    """Predicted throughput drops when N crosses a wave boundary: M = 2048 (16 tile rows),
    N = 4096 -> 256 tiles (2 waves of 132), N = 4224 -> 272 tiles (3 waves)."""
    y = tc.predicted_flop_per_s(2048, [4096, 4224], 8192, 989.4e12, 4.8e12, 132)
    assert y[0] > 1.4 * y[1]


@settings(max_examples=200, deadline=None)
@given(
    m=st.integers(1, 50_000), n=st.integers(1, 50_000),
    tm=st.sampled_from([16, 64, 128, 256]), tn=st.sampled_from([16, 64, 128, 256]), sms=st.integers(1, 400),
)
def test_wave_invariants(m, n, tm, tn, sms):
    tiles, waves, eff = tc.gemm_waves(m, n, tm, tn, sms)
    assert (waves - 1) * sms < tiles <= waves * sms
    assert 0 < eff <= 1
    assert 0 < tc.tile_efficiency(m, n, tm, tn) <= 1


@settings(max_examples=100, deadline=None)
@given(m=st.integers(1, 20_000), n=st.integers(1, 20_000), k=st.integers(1, 20_000))
def test_estimate_never_beats_peak_or_bandwidth(m, n, k):
    e = tc.gemm_estimate(m, n, k, 989.4e12, 4.8e12, 132)
    assert e.flop_per_s <= 989.4e12 * (1 + 1e-12)
    assert e.time_s >= e.bytes_moved / 4.8e12 * (1 - 1e-12)
    if e.bound == "compute":
        assert e.flop_per_s == pytest.approx(989.4e12 * e.wave_efficiency * e.tile_efficiency, rel=1e-9)


# --------------------------------------------------------------------------------------------
# Number formats, against IEEE 754-2019 and the OCP 8-bit floating point spec
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype, u, max_normal, min_normal, min_subnormal",
    [
        # IEEE 754-2019 binary32 / binary16
        ("fp32", 2**-24, 3.4028234663852886e38, 2**-126, 2**-149),
        ("fp16", 2**-11, 65504.0, 2**-14, 2**-24),
        # bfloat16: binary32's exponent with 7 fraction bits
        ("bf16", 2**-8, 3.3895313892515355e38, 2**-126, 2**-133),
        # TF32 (A100 whitepaper): 8-bit exponent, 10-bit fraction
        ("tf32", 2**-11, (2 - 2**-10) * 2**127, 2**-126, 2**-136),
        # OCP OFP8 spec rev 1.0, Table 1: E4M3 max 448, min normal 2^-6, min subnormal 2^-9;
        # E5M2 max 57344, min normal 2^-14, min subnormal 2^-16
        ("fp8_e4m3", 2**-4, 448.0, 2**-6, 2**-9),
        ("fp8_e5m2", 2**-3, 57344.0, 2**-14, 2**-16),
    ],
)
def test_format_ranges_are_the_published_ones(dtype, u, max_normal, min_normal, min_subnormal):
    f = tc.number_format(dtype)
    assert tc.unit_roundoff(dtype) == u
    assert f.max_normal == max_normal
    assert f.min_normal == min_normal
    assert f.min_subnormal == min_subnormal


def test_formats_agree_with_torch_finfo():
    torch = pytest.importorskip("torch")
    for name, t in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16),
                    ("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)):
        fi = torch.finfo(t)
        f = tc.number_format(name)
        assert f.max_normal == fi.max and f.min_normal == fi.smallest_normal and 2 * f.unit_roundoff == fi.eps


def test_fp8_alias_is_e4m3():
    assert tc.number_format("fp8") == tc.number_format("fp8_e4m3")


def test_rounding_variance_constant():
    """Mean of (2^e/x)^2 over x log-uniform in [2^e, 2^(e+1)) is 3/(8 ln 2); times 1/3."""
    x = np.exp(np.linspace(0, math.log(2), 200_001))
    assert np.mean(1 / x**2) / 3 == pytest.approx(tc.ROUNDING_VARIANCE, rel=1e-4)


def test_dot_error_hand_values():
    e = tc.dot_error(1024, "bf16", "fp32")
    assert e.deterministic_bound == pytest.approx(2 * 2**-8 + 1024 * 2**-24)
    # Higham & Mary (2019, SISC 41(5), Thm 3.1): Q(lam, n) = 1 - 2 n exp(-lam^2 (1-u)^2 / 2); for
    # 99%, lam = sqrt(2 ln(2n / 0.01)) / (1 - u) = 5.03 at n = 1024 (review finding 8: lam = 1
    # guarantees nothing, Q < 0).
    lam99 = math.sqrt(2 * math.log(2 * 1024 / 0.01)) / (1 - 2**-24)
    assert e.lam == pytest.approx(lam99) and e.probability == pytest.approx(0.99)
    assert e.probabilistic_bound == pytest.approx(2 * 2**-8 + lam99 * 32 * 2**-24)
    one = tc.dot_error(1024, "bf16", "fp32", lam=1.0)
    assert one.probabilistic_bound == pytest.approx(2 * 2**-8 + 32 * 2**-24) and one.probability == 0.0
    assert tc.bound_probability(3.0, 1, 2**-24) == pytest.approx(1 - 2 * math.exp(-4.5), rel=1e-6)
    assert e.typical_error == pytest.approx(math.sqrt((2 * 2**-16 + 512 * 2**-48) / (8 * math.log(2))))
    acc_only = tc.dot_error(1024, "bf16", "fp32", input_rounding=False)
    assert acc_only.u_in == 0 and acc_only.deterministic_bound == pytest.approx(1024 * 2**-24)
    out = tc.dot_error(1024, "bf16", "fp32", output="bf16")
    assert out.deterministic_bound == pytest.approx(e.deterministic_bound + 2**-8)


def test_higham_mary_bound_is_below_deterministic_for_large_k():
    """Higham & Mary (2019): the probabilistic constant lambda sqrt(n) u beats n u once n > lambda^2
    (lambda about 5 for 99%); below that the deterministic bound is reported."""
    for k in (1024, 10**6):
        e = tc.dot_error(k, "fp16", "fp16")
        assert e.probabilistic_bound < e.deterministic_bound
    e = tc.dot_error(16, "fp16", "fp16")
    assert e.lam > 4 and e.probabilistic_bound == e.deterministic_bound


def test_dot_error_matches_a_simulation():
    """A numpy simulation of recursive summation in fp16 with fp16 inputs agrees with the model's
    typical error within 25%."""
    rng = np.random.default_rng(0)
    k, trials = 256, 400
    x = rng.standard_normal((trials, k))
    y = rng.standard_normal((trials, k))
    exact = np.sum(x * y, axis=1)
    xs, ys = x.astype(np.float16), y.astype(np.float16)
    s = np.zeros(trials, dtype=np.float16)
    for j in range(k):
        s = (s.astype(np.float32) + xs[:, j].astype(np.float32) * ys[:, j].astype(np.float32)).astype(np.float16)
    measured = np.linalg.norm(s.astype(np.float64) - exact) / np.linalg.norm(exact)
    assert measured == pytest.approx(tc.dot_error(k, "fp16", "fp16").typical_error, rel=0.25)


@settings(max_examples=100, deadline=None)
@given(k=st.integers(1, 10**7), dtype=st.sampled_from(list(tc.FORMATS)))
def test_dot_error_invariants(k, dtype):
    e = tc.dot_error(k, dtype)
    assert e.typical_error <= e.deterministic_bound
    assert e.probabilistic_bound <= e.deterministic_bound + 1e-300
    assert e.min_subnormal < e.min_normal < e.max_normal


# --------------------------------------------------------------------------------------------
# One instruction on one tensor core
# --------------------------------------------------------------------------------------------
def test_mma_sync_runs_on_one_of_four_tensor_cores():
    """A100 whitepaper: four third-generation tensor cores per SM, each 256 dense FP16 FMA per clock
    (1024 per SM): one warp's mma.sync m16n8k16 (2048 FMA) takes 8 clocks. H100 whitepaper: four
    fourth-generation tensor cores per SM at twice the A100 rate: 4 clocks, not 1 (issue 10)."""
    assert tc.TENSOR_CORES_PER_SM == 4
    assert tc.instruction_clocks(16, 8, 16, tc.FLOP_PER_CLOCK_PER_SM["A100-SXM-80GB"]["fp16"]) == 8.0
    assert tc.instruction_clocks(16, 8, 16, tc.FLOP_PER_CLOCK_PER_SM["H200-SXM"]["bf16"]) == 4.0
    # the SM-wide arithmetic (all four tensor cores) would say 1 clock: the error the chapter made
    assert tc.instruction_clocks(16, 8, 16, 4096, tensor_cores_used=4) == 1.0
    # wgmma m64n256k16 from a warpgroup (four warps, all four tensor cores): 524288 FLOP / 4096
    assert tc.instruction_clocks(64, 256, 16, 4096, tensor_cores_used=4) == 128.0


def test_instruction_clocks_rejects_bad_input():
    with pytest.raises(ValueError, match="tensor_cores_used"):
        tc.instruction_clocks(16, 8, 16, 4096, tensor_cores_used=5)
    with pytest.raises(ValueError, match="tensor_cores_used"):
        tc.instruction_clocks(16, 8, 16, 4096, tensor_cores_used=True)
    with pytest.raises(ValueError, match="m must be"):
        tc.instruction_clocks(2**21, 8, 16, 4096)


def test_tpu_array_edges_from_sources():
    """Jouppi et al. 2017: TPU v1 one 256x256 array; Jouppi et al. 2023: TPU v4 128x128 MXUs;
    Google Cloud TPU docs, "TPU v6e": 256x256 MXUs. Not "128x128 since v2" (issue 10)."""
    assert tc.SYSTOLIC_ARRAY_EDGE == {"TPU v1": 256, "TPU v4": 128, "TPU v6e": 256}


def test_chapter_no_longer_says_the_wrong_things():
    """Issue 10's findings stay fixed in the chapter's prose."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parent.parent / "chapters" / "tensor_cores.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "since v2" not in text
    assert "clocks of one H200 SM's tensor cores" not in text
    assert "and add in fp32" not in text
    assert "what remains is mostly the clock" not in text


# --------------------------------------------------------------------------------------------
# The accumulator the hardware really has
# --------------------------------------------------------------------------------------------
def test_accumulation_error_reduces_to_the_fp32_model():
    for k in (1, 256, 4096, 65536):
        assert tc.accumulation_error(k, 24).typical_error == pytest.approx(
            tc.dot_error(k, "fp32", input_rounding=False).typical_error, rel=1e-12)
    e = tc.accumulation_error(1000, 14)
    assert e.deterministic_bound == pytest.approx(1000 * 2**-14)
    assert tc.accumulation_error(1000, 14, lam=1.0).probabilistic_bound == pytest.approx(math.sqrt(1000) * 2**-14)
    assert e.probability == pytest.approx(0.99) and e.probabilistic_bound < e.deterministic_bound
    # truncation (hand-derived, see accumulation_error): mu = 2^-p / (2 ln 2), s2 = 4^-p (1/(2 ln 2) - 1/(4 ln^2 2)),
    # rel^2 = mu^2 (m+1)(2m+1)/6 + s2 (m+1)/2 with m = 1000 roundings
    t = tc.accumulation_error(1000, 14, truncate=True)
    mu, s2 = 2**-14 / (2 * math.log(2)), 4.0**-14 * (1 / (2 * math.log(2)) - 1 / (4 * math.log(2) ** 2))
    assert t.u_acc == 2**-13 and t.typical_error == pytest.approx(math.sqrt(mu**2 * 1001 * 2001 / 6 + s2 * 1001 / 2))
    assert t.probabilistic_bound == t.deterministic_bound and t.probability == 1.0  # biased: no Higham-Mary bound
    # a block of 10 products per rounding: 100 roundings
    assert tc.accumulation_error(1000, 14, block=10).typical_error == pytest.approx(
        tc.accumulation_error(100, 14).typical_error)


def test_promotion_stops_the_growth():
    """Hand-derived: promoted every c, the typical error is u sqrt(c / (16 ln 2)) plus a tiny fp32
    part, whatever K; without promotion it grows like sqrt(K)."""
    u, c = 2**-14, 128
    for k in (4096, 65536, 2**20):
        e = tc.accumulation_error(k, 14, promote_every_k=c)
        assert e.chunks == k // c
        assert e.typical_error == pytest.approx(u * math.sqrt(c / (16 * math.log(2))), rel=1e-3)
        assert e.deterministic_bound == pytest.approx(c * u + (k // c) * 2**-24)
    a, b = (tc.accumulation_error(k, 14).typical_error for k in (4096, 16384))
    assert b / a == pytest.approx(2.0)
    # K below the interval: no promotion happens before the end
    assert tc.accumulation_error(64, 14, promote_every_k=128).typical_error == pytest.approx(
        math.sqrt(64 * u**2 / (16 * math.log(2)) + 2**-48 / (16 * math.log(2))))


def _simulate_accumulation(k, bits, chunk, trials, rng):
    """Recursive sum of k products of standard normals, each partial sum rounded to nearest at
    ``bits`` significand bits, promoted (exactly, fp64 stands in for fp32) every ``chunk``."""
    x = rng.standard_normal((trials, k)) * rng.standard_normal((trials, k))

    def rnd(v):
        m, e = np.frexp(v)
        return np.ldexp(np.round(m * 2.0**bits) / 2.0**bits, e)

    total = np.zeros(trials)
    part = np.zeros(trials)
    for j in range(k):
        part = rnd(part + x[:, j])
        if (j + 1) % chunk == 0:
            total, part = total + part, np.zeros(trials)
    total = total + part
    exact = x.sum(axis=1)
    return np.sqrt(np.mean((total - exact) ** 2) / np.mean(exact**2))


@pytest.mark.parametrize("k, chunk", [(1024, 1024), (1024, 64)])
def test_accumulation_error_matches_a_simulation(k, chunk):
    rng = np.random.default_rng(1)
    got = _simulate_accumulation(k, 14, chunk, 400, rng)
    want = tc.accumulation_error(k, 14, promote_every_k=None if chunk == k else chunk).typical_error
    assert got == pytest.approx(want, rel=0.25)


def test_fit_significand_bits_inverts_the_model():
    for p, c in ((14, None), (11, 128), (24, None)):
        e = tc.accumulation_error(8192, p, promote_every_k=c).typical_error
        assert tc.fit_significand_bits(8192, e, promote_every_k=c) == pytest.approx(p, abs=1e-3)


def test_accumulators_name_their_sources():
    assert tc.accumulator("fp8", True).significand_bits == 14 and tc.accumulator("fp8", True).promote_every_k is None
    assert tc.accumulator("fp8_e4m3", False).promote_every_k == 128
    assert tc.accumulator("bf16").significand_bits == 24
    for a in tc.ACCUMULATORS.values():
        assert a.source and a.label in ("prediction", "calibrated")
    assert "DeepSeek" in tc.accumulator("fp8", True).source
    with pytest.raises(ValueError, match="fast_accum"):
        tc.accumulator("bf16", True)
    with pytest.raises(ValueError, match="fast_accum"):
        tc.accumulator("fp8", 1)
    with pytest.raises(ValueError, match="dtype"):
        tc.accumulator("int8")


@given(k=st.integers(1, 2**30), p=st.integers(2, 64), c=st.one_of(st.none(), st.integers(1, 2**30)),
       trunc=st.booleans())
@settings(max_examples=200, deadline=None)
def test_accumulation_error_properties(k, p, c, trunc):
    e = tc.accumulation_error(k, p, promote_every_k=c, truncate=trunc)
    for v in (e.typical_error, e.probabilistic_bound, e.deterministic_bound):
        assert math.isfinite(v) and v > 0
    assert e.typical_error <= e.deterministic_bound
    # more bits never hurt; a longer sum never helps (without promotion)
    if p < 64:
        assert tc.accumulation_error(k, p + 1, promote_every_k=c, truncate=trunc).typical_error <= e.typical_error
    if c is None and k < 2**30:
        assert tc.accumulation_error(k + 1, p, truncate=trunc).typical_error >= e.typical_error


@pytest.mark.parametrize("bad", [0, -1, 1.5, float("nan"), float("inf"), "8", None, True, [4], 2**41])
def test_accumulation_error_rejects_bad_k(bad):
    with pytest.raises(ValueError, match="k must be"):
        tc.accumulation_error(bad, 14)
    if bad is not None:  # None means "never promoted"
        with pytest.raises(ValueError, match="promote_every_k must be"):
            tc.accumulation_error(8, 14, promote_every_k=bad)


# --------------------------------------------------------------------------------------------
# Bad input: every public model function names the parameter
# --------------------------------------------------------------------------------------------
BAD = [0, -1, 1.5, float("nan"), float("inf"), "8", None]


@pytest.mark.parametrize("bad", BAD)
def test_bad_input_names_parameter(bad):
    cases = [
        ("m", lambda v: tc.matmul_flop(v, 1, 1)),
        ("k", lambda v: tc.matmul_flop(1, 1, v)),
        ("sms", lambda v: tc.peak_flop_per_s(v, 1e9, 1)),
        ("sms", lambda v: tc.gemm_waves(1, 1, 1, 1, v)),
        ("tile_m", lambda v: tc.gemm_waves(1, 1, v, 1, 1)),
        ("tile_n", lambda v: tc.tile_efficiency(1, 1, 1, v)),
        ("n", lambda v: tc.gemm_bytes(1, v, 1)),
        ("in_bytes", lambda v: tc.gemm_bytes(1, 1, 1, v)),
        ("k", lambda v: tc.dot_error(v, "bf16")),
        ("dim", lambda v: tc.is_aligned(v, 2)),
    ]
    for name, fn in cases:
        with pytest.raises(ValueError, match=name):
            fn(bad)


@given(v=st.one_of(st.floats(max_value=0), st.just(float("nan")), st.just(float("inf"))))
def test_bad_rates_rejected(v):
    for name, fn in (
        ("clock_hz", lambda: tc.peak_flop_per_s(132, v, 4096)),
        ("flop_per_clock_per_sm", lambda: tc.peak_flop_per_s(132, 1e9, v)),
        ("peak_flop_per_s", lambda: tc.gemm_estimate(8, 8, 8, v, 1e12, 132)),
        ("bytes_per_s", lambda: tc.gemm_estimate(8, 8, 8, 1e15, v, 132)),
        ("dense_flop_per_s", lambda: tc.sparse_flop_per_s(v)),
        ("peak_flop_per_s", lambda: tc.implied_clock_hz(v, 132, 4096)),
        ("lam", lambda: tc.dot_error(8, "bf16", lam=v)),
    ):
        with pytest.raises(ValueError, match=name):
            fn()


def test_bad_dtype_lists_the_valid_ones():
    with pytest.raises(ValueError, match="dtype must be one of"):
        tc.number_format("fp4")
    with pytest.raises(ValueError, match="dtype"):
        tc.dot_error(8, "int8")


# --------------------------------------------------------------------------------------------
# Calculators
# --------------------------------------------------------------------------------------------
def _frame(fig, name):
    return next(f for f in fig.frames if f.name == name)


def test_peak_figure_frames_match_the_model():
    """Two inputs: GPU (dropdown) x SM clock (slider); every frame computed by the model."""
    from widgets.ui import tensor_cores as ui

    fig = ui.peak_figure()
    clocks = list(ui.PEAK_CLOCKS_MHZ)
    assert len(fig.frames) == len(ui.PEAK_GPUS) * len(clocks)
    assert len(fig.layout.sliders) == len(ui.PEAK_GPUS) and len(fig.layout.updatemenus[0].buttons) == len(ui.PEAK_GPUS)
    i, j = ui.PEAK_GPUS.index("H200-SXM"), clocks.index(1800)
    f = _frame(fig, f"{i}:{j}")
    bars = f.data[0].y
    assert bars[ui.PEAK_DTYPES.index("bf16")] == pytest.approx(tc.peak_flop_per_s(132, 1.8e9, 4096) / 1e12)
    assert f.data[1].y[ui.PEAK_DTYPES.index("bf16")] == pytest.approx(989.4)
    assert "1830 MHz" in f.layout.title.subtitle.text  # the readout line
    assert len(fig.to_json()) < 400_000  # small page


def test_peak_figure_says_na_where_the_catalog_has_no_figure():
    """A data type without an entry in FLOP_PER_CLOCK_PER_SM is marked "n/a" (not a silent gap):
    T4 lacks tf32/bf16/fp8 tensor cores, B200 has no published per-SM rates; GPUs with every data
    type (MI300X since its FP32 vector rate was added) get an empty n/a trace. Slider ticks carry no unit (the unit is
    in the slider's name), so the last one fits; the log axis labels decades only."""
    from widgets.ui import tensor_cores as ui

    fig = ui.peak_figure()
    last = len(ui.PEAK_CLOCKS_MHZ) - 1
    for i, gpu in enumerate(ui.PEAK_GPUS):
        f = _frame(fig, f"{i}:{last}")
        missing = [d for d in ui.PEAK_DTYPES if d not in tc.FLOP_PER_CLOCK_PER_SM.get(gpu, {})]
        assert list(f.data[2].x or ()) == missing and list(f.data[2].text or ()) == ["n/a"] * len(missing)
        # each n/a says why on hover (no such tensor cores, or no per-SM figure published)
        assert list(f.data[2].customdata or ()) == [get_gpu(gpu).why_no_rate(d) for d in missing]
        for d in missing:
            assert f.data[0].y[ui.PEAK_DTYPES.index(d)] is None
    # MI300X, the case the reader hit (fp32 was n/a): AMD CDNA 3 architecture white paper, peak FLOP
    # per clock per CU, FP32 vector 256 (304 CUs x 2100 MHz x 256 = 163.4 TFLOP/s); no n/a left
    assert tc.FLOP_PER_CLOCK_PER_SM["MI300X"]["fp32"] == 256
    # T4 (sm_75): no tf32, bf16 or fp8 tensor cores, and the frame says which arch each needs
    t4 = _frame(fig, f"{ui.PEAK_GPUS.index('T4')}:{last}").data[2]
    assert list(t4.x) == ["tf32", "bf16", "fp8"] and "fp8 needs sm_89" in t4.customdata[-1]
    # B200: no per-SM rates published; every bar is n/a and the readout says why
    b200 = _frame(fig, f"{ui.PEAK_GPUS.index('B200')}:{last}")
    assert list(b200.data[2].x) == list(ui.PEAK_DTYPES) and "no SM count or clock" in b200.layout.title.subtitle.text
    mi = _frame(fig, f"{ui.PEAK_GPUS.index('MI300X')}:{last}")
    assert not list(mi.data[2].x or ()) and mi.data[0].y[ui.PEAK_DTYPES.index("fp32")] is not None
    labels = [s.label for s in fig.layout.sliders[0].steps]
    assert labels[-1] == "2200" and all(lab.isdigit() for lab in labels)
    assert "MHz" in fig.layout.sliders[0].currentvalue.prefix
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.dtick == 1


def test_gemm_figure_shows_the_sawtooth():
    from widgets.ui import tensor_cores as ui

    ms = (1024, 2048)
    fig = ui.gemm_figure(ms=ms)
    assert len(fig.frames) == len(ms) * len(ui.GEMM_CHOICES)
    ci = ui.GEMM_CHOICES.index(("H200-SXM", "bf16"))
    f = _frame(fig, f"{ci}:1")
    x, y = np.asarray(f.data[0].x), np.asarray(f.data[0].y)
    assert y[list(x).index(4096)] * 1e12 == pytest.approx(tc.predicted_flop_per_s(2048, 4096, 8192, 989.4e12, 4.8e12, 132)[()])
    assert np.sum(np.diff(y) < -50) >= 3  # several teeth
    cf = ui.GEMM_CHOICES.index(("H200-SXM", "fp8"))
    y8 = np.asarray(_frame(fig, f"{cf}:1").data[0].y)
    assert y8.max() > 1.9 * y.max()  # fp8 peak twice bf16's
    assert len(fig.to_json()) < 600_000


def test_precision_figure_frames():
    from widgets.ui import tensor_cores as ui

    fig = ui.precision_figure()
    ks, curve = list(ui.PRECISION_KS), list(ui.PRECISION_CURVE_KS)
    assert len(fig.frames) == len(ui.PRECISION_CHOICES) * len(ks)
    i = ui.PRECISION_CHOICES.index(("bf16", "fp32"))
    f = _frame(fig, f"{i}:{ks.index(1024)}")
    assert f.data[0].y[curve.index(1024)] == pytest.approx(tc.dot_error(1024, "bf16", "fp32").typical_error)
    assert f.data[3].x[0] == 1024 and f.data[3].y[0] == pytest.approx(tc.dot_error(1024, "bf16", "fp32").typical_error)
    j = ui.PRECISION_CHOICES.index(("fp8", "Hopper precise"))
    acc = _frame(fig, f"{j}:0").data[2]
    assert acc.y[-1] == pytest.approx(tc.tensor_core_accumulation_error(curve[-1], "fp8", False).typical_error)
    assert max(acc.y[5:]) / min(acc.y[5:]) < 1.01  # flat once K passes the promotion interval
    assert len(fig.to_json()) < 200_000


def _texts(box) -> str:
    return " ".join(item for item in box.shown if isinstance(item, str))


def test_live_forms_recompute_and_show_errors():
    from widgets.ui import tensor_cores as ui

    box = ui.gemm_calculator()
    assert "<td>waves (last one counted whole)</td><td><b>3</b>" in _texts(box)  # N = 4224: 3 waves
    box.controls["n"].value = 4096
    assert "<td>waves (last one counted whole)</td><td><b>2</b>" in _texts(box)
    box.controls["k"].value = 0
    assert "Invalid input" in _texts(box) and "k must be" in _texts(box)

    box = ui.peak_calculator()
    assert "989.4 TFLOP/s" in _texts(box)
    box.controls["gpu"].value = "A100-SXM-80GB"
    box.controls["dtype"].value = "fp8"  # offered in the menu, so answered with the reason (reader review #5)
    assert "Invalid input" not in _texts(box) and "n/a" in _texts(box) and "fp8 needs sm_89" in _texts(box)

    box = ui.precision_calculator()
    box.controls["k"].value = -5
    assert "Invalid input" in _texts(box) and "k must be" in _texts(box)
    box.controls["dtype"].value = "fp8_e4m3"
    box.controls["k"].value = 100
    assert "<td>largest finite</td><td><b>448</b>" in _texts(box)
    box.controls["accumulate"].value = "Hopper fp8, fast"
    box.controls["k"].value = 65536
    want = tc.tensor_core_dot_error(65536, "fp8", True)
    assert f"<td>typical error, random data (of |x.y|)</td><td><b>{want:.3g}</b>" in _texts(box)
    assert "14 bits" in _texts(box) and "DeepSeek" in _texts(box)
    box.controls["dtype"].value = "bf16"
    assert "Invalid input" in _texts(box) and "fp8 inputs only" in _texts(box)


def test_checks_pass_and_fail(capsys):
    from widgets.ui import tensor_cores as ui

    assert ui.check_peak(tc.peak_check("H100-SXM", "fp8").peak_flop_per_s)
    assert not ui.check_peak(2 * tc.peak_check("H100-SXM", "fp8").peak_flop_per_s)
    assert "sparse" in capsys.readouterr().out
    assert not ui.check_peak(1978.9)
    assert "unit" in capsys.readouterr().out
    assert ui.check_waves(800, 7, 800 / 924)
    assert not ui.check_waves(800, 6, 800 / 792)
    assert "partial last wave" in capsys.readouterr().out
    assert ui.check_wave_model(tc.gemm_waves)
    assert not ui.check_wave_model(lambda m, n, a, b, s: (m * n // (a * b), 1, 1.0))
    assert not ui.check_wave_model(lambda *a: 1 / 0)
    assert ui.check_format_max("fp8_e5m2", 57344)
    assert not ui.check_format_max("fp8_e4m3", 480)


# --------------------------------------------------------------------------------------------
# Experiments: CPU smoke tests (small, quick)
# --------------------------------------------------------------------------------------------
def test_throughput_smoke():
    from widgets.experiments import tensor_cores as ex

    rows = ex.measure_dtype_throughput(n=64, repeat=1)
    by = {r["dtype"]: r for r in rows}
    assert set(by) == set(ex.DTYPES)
    assert by["bf16"]["flop_per_s"] > 0


def test_shape_sweep_smoke():
    from widgets.experiments import tensor_cores as ex

    r = ex.measure_shape_sweep(repeat=1)
    assert len(r["alignment"]) == len(ex.alignment_sizes())
    m, k, ns = ex.n_sweep_shape()
    assert [p["n"] for p in r["n_sweep"]["triton"]] == ns
    assert all(p["flop_per_s"] > 0 for p in r["n_sweep"]["torch"])


def test_precision_experiment_agrees_with_model():
    """The measured error with rounded inputs matches the model's typical error within 30% (TF32
    on a GPU within a factor 3: its conversion may truncate), and the worst componentwise error
    of the GEMM itself stays below the deterministic bound (except fp8 on a GPU, whose tensor cores
    keep partial sums in fewer bits than fp32)."""
    from widgets.experiments import tensor_cores as ex

    rows = ex.measure_precision(ks=[256, 1024], size=48)
    for r in rows:
        out = None if r["out_dtype"] == "fp32" else r["out_dtype"]
        want = tc.dot_error(r["k"], r["dtype"], output=out).typical_error
        if r["dtype"] == "tf32" and "emulated" not in r["method"]:
            assert 0.5 < r["total"] / want < 3.0, r
        elif r["dtype"] != "fp32" and not r["fast_accum"]:
            assert r["total"] == pytest.approx(want, rel=0.3), r
        if not r["method"].startswith("torch._scaled_mm"):  # fp8 tensor cores add in fewer bits
            bound = tc.dot_error(r["k"], r["dtype"], output=out, input_rounding=False).deterministic_bound
            assert r["max_componentwise"] <= bound, r


def test_tf32_rounding_emulation():
    torch = pytest.importorskip("torch")
    from widgets.experiments import tensor_cores as ex

    x = torch.tensor([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-10 + 2**-12])
    got = ex._round_tf32(x).tolist()
    assert got == [1.0, 1 + 2**-9, 1 + 2**-10]  # ties to even, ties to even, below half


def test_triton_matmul_correct():
    """Interpreted on a CPU (exact fp32); compiled on a GPU, where an fp32 tl.dot runs in TF32."""
    torch = pytest.importorskip("torch")
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores_triton as tt

    g = torch.Generator().manual_seed(0)
    a = torch.randn(40, 72, generator=g).to(harness.device())
    b = torch.randn(72, 56, generator=g).to(harness.device())
    c = tt.matmul(a, b)
    tol = 1e-4 if not harness.on_gpu() else 2e-2
    assert torch.allclose(c, (a.double() @ b.double()).float(), atol=tol, rtol=tol)
    with pytest.raises(ValueError, match="a and b"):
        tt.matmul(a, a)


def test_triton_vs_torch_smoke():
    from widgets.experiments import tensor_cores as ex

    r = ex.measure_triton_vs_torch(n=32, repeat=1)
    assert r["relative_error_vs_torch"] < 2e-2 and r["triton_flop_per_s"] > 0


def test_recorded_h200_reference_meets_the_targets():
    """The committed H200 record (once the lead has made it): Triton >= 70 % of torch's bf16 GEMM at
    8192^3; 8191^3 clearly slower than 8192^3; bf16 within the catalog peak; the error of bf16,
    fp16 (and tf32, factor 3) GEMMs within a factor 2 of the precision model at every K."""
    from widgets.experiments import harness

    ref = harness.load_reference("tensor_cores")
    prov = ref["provenance"]
    assert "H200" in prov["gpu"] and prov["driver"] and prov["torch"] and prov["date"] and prov["command"]
    r = ref["results"]
    assert r["triton"]["n"] == 8192 and r["triton"]["ratio"] >= 0.70
    align = {p["n"]: p["time_s"] for p in r["shape_sweep"]["alignment"]}
    assert align[8191] > 1.5 * align[8192]
    bf16 = next(x for x in r["throughput"] if x["dtype"] == "bf16")
    assert 0.5 < bf16["flop_per_s"] / get_gpu("H200-SXM").peak("bf16") <= 1.0
    for x in r["precision"]:
        if x["dtype"] in ("bf16", "fp16", "tf32"):
            out = None if x["out_dtype"] == "fp32" else x["out_dtype"]
            want = tc.dot_error(x["k"], x["dtype"], output=out).typical_error
            # TF32 conversion may truncate rather than round: up to twice the rounding error
            assert 0.5 < x["total"] / want < (3.0 if x["dtype"] == "tf32" else 2.0), x


def test_recorded_fp8_accumulation_is_not_fp32():
    """The committed H200 record: fp8 GEMMs do NOT accumulate in fp32 (their accumulation error is
    25x to 1200x the fp32 model: the claim issue 10 found wrong), and they sit within a factor 2 of
    the ~14-bit accumulator that DeepSeek-V3's report (Sec. 3.3, "Increasing Accumulation
    Precision") measured on an H800: growing like sqrt(K) with fast accumulation, flat in K when promoted to fp32 (precise mode). fp16/bf16
    accumulation stays within 3.5x of the fp32 model (Fasi et al. 2021: a truncating fp32 adder)."""
    from widgets.experiments import harness

    rows = harness.load_reference("tensor_cores")["results"]["precision"]
    fp8 = [r for r in rows if r["dtype"] == "fp8" and r["method"].startswith("torch._scaled_mm")]
    assert fp8
    for r in fp8:
        fp32_model = tc.dot_error(r["k"], "fp32", input_rounding=False).typical_error
        assert r["accumulation"] / fp32_model > 20, r
        want = tc.tensor_core_accumulation_error(r["k"], "fp8", r["fast_accum"]).typical_error
        assert 0.5 < r["accumulation"] / want < 2.0, r
    precise = [r["accumulation"] for r in fp8 if not r["fast_accum"]]
    assert max(precise) / min(precise) < 1.1  # flat in K: promoted to fp32
    fast = sorted((r["k"], r["accumulation"]) for r in fp8 if r["fast_accum"])
    assert fast[-1][1] / fast[0][1] > 8  # grows with K (256 -> 65536: sqrt(256) = 16 by the model)
    for r in rows:
        if r["dtype"] in ("fp16", "bf16"):
            want = tc.tensor_core_accumulation_error(r["k"], r["dtype"]).typical_error
            assert 0.3 < r["accumulation"] / want < 3.5, r


def test_accuracy_rows_from_the_committed_record():
    """accuracy_rows recomputes every comparison from the raw record: labels honest, ratios equal
    to measured / today's model."""
    from widgets.accuracy import LABELS
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as ex

    rec = harness.load_reference("tensor_cores")
    rows = ex.accuracy_rows(rec)
    assert len(rows) >= 15
    assert all(r.label in LABELS and r.topic == "tensor_cores" and math.isfinite(r.ratio) for r in rows)
    by = {r.quantity: r for r in rows}
    bf = by["bf16 GEMM 8192^3, burst"]
    meas = next(x for x in rec["results"]["throughput"] if x["dtype"] == "bf16" and x.get("data", "randn") == "randn")
    assert bf.measured == meas["flop_per_s"]
    assert bf.predicted == pytest.approx(989.4e12 * 2048 / 2112)
    assert bf.label == "prediction"
    fp8 = [r for r in rows if r.quantity.startswith("fp8 GEMM accumulation")]
    assert fp8 and all(r.label == "calibrated" for r in fp8)
    # burst predictions sit near the 25% band (the clock and tile overheads the chapter explains);
    # misaligned shapes and the fixed-tile Triton kernel are said not to; a sustained run sits lower
    # still (power cap) but never above its own burst
    for r in rows:
        if r.label == "prediction" and r.quantity.endswith("burst"):
            assert 0.65 < r.ratio < 1.25, r
        if "sustained ≥" in r.quantity:
            burst = by[r.quantity.split(", sustained")[0] + ", burst"]
            assert 0.4 < r.ratio < 1.1 and r.measured <= 1.05 * burst.measured, r
    t = rec["results"]["triton"]
    if t.get("interleaved"):  # records from the interleaved experiment: the ratio is from that run only
        assert t["ratio"] == pytest.approx(np.median(t["torch_times_s"]) / np.median(t["triton_times_s"]))


def test_cpu_records_are_strict_json():
    """No NaN in a record: a missing measurement is null with a reason."""
    import json

    from widgets.experiments import tensor_cores as ex

    rows = ex.measure_dtype_throughput(n=32, repeat=1, sustained_s=0.01)
    json.dumps(rows.to_record(), allow_nan=False)
    assert ex.DtypeThroughput.from_record(rows.to_record()) == rows
    for r in rows:
        if r["flop_per_s"] is None:
            assert r["note"]
        else:
            assert r["min_s"] <= r["time_s"] <= r["max_s"] and r["sustained"]["flop_per_s"] > 0
    tri = ex.measure_triton_vs_torch(n=32, repeat=2)
    json.dumps(tri.to_record(), allow_nan=False)
    assert tri["interleaved"] and len(tri["triton_times_s"]) == len(tri["torch_times_s"]) == 2
    assert tri["ratio"] == pytest.approx(np.median(tri["torch_times_s"]) / np.median(tri["triton_times_s"]))


# --------------------------------------------------------------------------------------------
# Reliability: finite in, finite out (or a ValueError naming the parameter); monotonic physics
# --------------------------------------------------------------------------------------------
_finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@given(sms=st.integers(-5, 2 * 10**6), clock=_finite, rate=_finite)
@settings(max_examples=300, deadline=None)
def test_peak_finite_or_named_error(sms, clock, rate):
    try:
        p = tc.peak_flop_per_s(sms, clock, rate)
    except ValueError as exc:
        assert any(n in str(exc) for n in ("sms", "clock_hz", "flop_per_clock_per_sm"))
    else:
        assert math.isfinite(p) and p > 0
        if clock >= 2:
            assert tc.peak_flop_per_s(sms, clock * 0.5, rate) < p  # a lower clock, a lower peak


@given(m=st.integers(1, 2**31), n=st.integers(1, 2**31), k=st.integers(1, 2**31),
       peak=st.floats(1e9, 1e18), bw=st.floats(1e9, 1e15), sms=st.integers(1, 1000))
@settings(max_examples=200, deadline=None)
def test_gemm_estimate_finite_and_monotonic(m, n, k, peak, bw, sms):
    e = tc.gemm_estimate(m, n, k, peak, bw, sms)
    assert all(math.isfinite(v) and v > 0 for v in (e.time_s, e.flop_per_s, e.compute_time_s, e.memory_time_s))
    assert tc.gemm_estimate(m, n, k + 1, peak, bw, sms).time_s >= e.time_s  # more K, never faster
    assert tc.gemm_estimate(m, n, k, peak * 2, bw * 2, sms).time_s <= e.time_s  # a faster GPU, never slower


@given(k=st.integers(1, 2**30), dtype=st.sampled_from(["fp32", "tf32", "bf16", "fp16", "fp8"]), fast=st.booleans())
@settings(max_examples=200, deadline=None)
def test_tensor_core_dot_error_finite_and_monotonic(k, dtype, fast):
    fast = fast and dtype == "fp8"
    e = tc.tensor_core_dot_error(k, dtype, fast)
    assert math.isfinite(e) and e > 0
    assert tc.tensor_core_dot_error(min(2 * k, 2**40), dtype, fast) >= e  # a longer sum is never more accurate


def test_vectorized_helpers_check_every_element():
    with pytest.raises(ValueError, match="k must be"):
        tc.typical_dot_error([256, True], "bf16")
    with pytest.raises(ValueError, match="n must be"):
        tc.predicted_flop_per_s(2048, [4096, float("nan")], 8192, 989.4e12, 4.8e12, 132)
    with pytest.raises(ValueError, match="k must hold"):
        tc.typical_dot_error(np.ones(tc.MAX_ELEMENTS + 1, dtype=int), "bf16")
    big = np.array([2**52], dtype=np.int64)  # exact Python ints inside: no int64 wraparound in 2*m*n*k
    assert tc.predicted_flop_per_s(big, 1, 1, 989.4e12, 4.8e12, 132)[0] > 0
    with pytest.raises(ValueError, match="accumulate"):
        tc.dot_error(8, "bf16", "fp12")
    with pytest.raises(ValueError, match="output"):
        tc.dot_error(8, "bf16", output=True)
    with pytest.raises(ValueError, match="input_rounding"):
        tc.dot_error(8, "bf16", input_rounding=0)
    with pytest.raises(ValueError, match="gpu must be one of"):
        tc.peak_check(None, "bf16")


def test_gpu_sampler_summarizes_samples(monkeypatch):
    """The NVML sampler's bookkeeping, with a stand-in reader (no GPU here): median, spread and
    count of what it read, one sample even for a block shorter than its interval."""
    from widgets.experiments import tensor_cores as ex

    readings = iter([(1500.0, 600.0), (1400.0, 690.0), (1600.0, 650.0)] + [(1450.0, 640.0)] * 1000)

    def fake_reader(self):
        self._read = lambda: next(readings)
        return "fake", ""

    monkeypatch.setattr(ex.GpuSampler, "_reader", fake_reader)
    with ex.GpuSampler(interval_s=10.0) as s:
        pass
    out = s.summary()
    assert out["source"] == "fake" and out["sm_clock_mhz"]["samples"] >= 1
    assert out["sm_clock_mhz"]["min"] <= out["sm_clock_mhz"]["median"] <= out["sm_clock_mhz"]["max"]
    assert ex.GpuSampler._stats([]) is None
    assert ex.GpuSampler._stats([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "samples": 3}


def test_accuracy_rows_read_the_new_record_format():
    """Records made after this change carry a sustained run with NVML samples: accuracy_rows then
    adds a sustained row (prediction) and a clock-rescaled row (a prediction too: the clock a run ran
    at is a condition of the run by widgets.accuracy.LABEL_RULES, and no measured speed or time goes
    in). The numbers here are synthetic, to exercise the code path only."""
    import copy

    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as ex

    rec = copy.deepcopy(harness.load_reference("tensor_cores"))
    for r in rec["results"]["throughput"]:
        if r["dtype"] == "bf16":
            r.update(data="randn", sustained={"seconds_per_window": 2.0, "windows": 3, "flop_per_s": 0.8 * r["flop_per_s"],
                                              "sm_clock_mhz": {"median": 1500.0, "min": 1400.0, "max": 1600.0, "samples": 90}})
    rec["results"]["throughput"].append({"dtype": "bf16", "n": 8192, "data": "zeros", "flop_per_s": 8e14, "note": "all-zero operands"})
    by = {r.quantity: r for r in ex.accuracy_rows(rec)}
    sus = by["bf16 GEMM 8192^3, sustained ≥ 2 s"]
    assert sus.label == "prediction" and sus.predicted == by["bf16 GEMM 8192^3, burst"].predicted
    cal = by["bf16 GEMM 8192^3, sustained, at the clock seen"]
    assert cal.predicted == pytest.approx(sus.predicted * 1500 / 1830)
    # Round 19: the clock comes from the very run it rescales, chosen by the power governor under that load (a
    # measured behaviour, LABEL_RULES): a fit, as review finding 6 had it. A helper relabelled it a prediction this
    # round; the expert check showed that this counted each sustained run twice and that the clock moves with the
    # data (zeros ran faster at lower power), so it is a fit again. The model follows the clock (below).
    assert cal.label == "fit" and "NVML" in cal.inputs and "datasheet" in cal.inputs
    slow = copy.deepcopy(rec)
    for r in slow["results"]["throughput"]:
        if r["dtype"] == "bf16" and r.get("data") == "randn":
            r["sustained"]["flop_per_s"] *= 0.5
            r["sustained"]["sm_clock_mhz"] = dict(r["sustained"]["sm_clock_mhz"], median=1200.0)
    cal2 = {r.quantity: r for r in ex.accuracy_rows(slow)}["bf16 GEMM 8192^3, sustained, at the clock seen"]
    assert cal2.measured == pytest.approx(0.5 * cal.measured) and cal2.predicted == pytest.approx(sus.predicted * 1200 / 1830)
    # the zeros run is a demonstration, not a prediction (the depth experiment's data runs have their
    # own rows, "... on zeros, sustained", calibrated on the random-data run: tests/test_tensor_cores_depth.py)
    assert not any("zeros" in q for q in by if "^3 on zeros" not in q)


def test_check_mma_clocks(capsys):
    from widgets.ui import tensor_cores as ui

    assert ui.check_mma_clocks(8, 4)  # A100: 4096 FLOP at 2048 / 4 per clock
    assert not ui.check_mma_clocks(2, 4)
    assert "four tensor cores" in capsys.readouterr().out
    assert not ui.check_mma_clocks(8, 1)
    assert not ui.check_mma_clocks("eight", 4)
    assert ui.check_mma_clocks(4, 4, gpu="H200-SXM")


def test_precision_experiment_shape_leaves_no_reason_to_split_k():
    """Review finding 3: at M = N = 256 cuBLAS splits K differently as K grows, and the error then
    measures split choices. On a GPU the product is 2048 x 2048 (128 tiles of 128 x 256, about
    one per SM of an H200's 132), compared with fp64 on a block; on a CPU all of a small one."""
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as ex

    size, sample = ex.precision_shape(True)
    assert size >= 2048 and (size // 128) * (size // 256) >= 0.9 * 132
    assert 0 < sample <= size
    assert ex.precision_shape(False)[0] == ex.precision_shape(False)[1]
    rows = ex.measure_precision(ks=[64], size=48, sample=16, repeats=1)  # 48: fp8 GEMMs need multiples of 16
    assert all(r["m"] == 48 and r["sample"] == 16 for r in rows)
    if harness.on_gpu():  # torch.profiler names the kernels each GEMM ran
        assert all(r["kernels"] and all(isinstance(n, str) for n in r["kernels"]) for r in rows), rows
    else:
        assert all(r["kernels"] is None and r["kernels_reason"] == "no GPU" for r in rows)
    if ex.has_fp8():
        with pytest.raises(ValueError, match="size"):
            ex.measure_precision(ks=[64], size=40, sample=16, repeats=1)


def test_gpu_sampler_reads_instant_power_field():
    """Review finding 7: NVML's nvmlDeviceGetPowerUsage is a 1-s average on Ampere and later; the
    sampler reads NVML_FI_DEV_POWER_INSTANT (nvmlDeviceGetFieldValues) and says which it read."""
    from types import SimpleNamespace

    from widgets.experiments import tensor_cores as ex

    v = SimpleNamespace(valueType=1, value=SimpleNamespace(uiVal=612000), nvmlReturn=0)
    assert ex._nvml_field_value(v) == 612000.0
    v = SimpleNamespace(valueType=0, value=SimpleNamespace(dVal=1.5))
    assert ex._nvml_field_value(v) == 1.5

    def fake_reader(self):
        self._read = lambda: (1800.0, 650.0)
        self.power_kind = "instant (NVML_FI_DEV_POWER_INSTANT)"
        return "fake", ""

    import pytest as _pytest

    mp = _pytest.MonkeyPatch()
    mp.setattr(ex.GpuSampler, "_reader", fake_reader)
    try:
        with ex.GpuSampler(interval_s=10.0) as s:
            pass
    finally:
        mp.undo()
    out = s.summary()
    assert out["power_kind"].startswith("instant") and out["power_w"]["samples"] >= 1
    assert ex.GpuSampler().summary()["power_kind"] is None  # no GPU here: nothing read


def test_precision_triton_runs_a_known_schedule():
    """Review finding 3 (second remedy): the book's Triton GEMM, one fp32 accumulator per output
    and a known K loop, against fp64 (interpreter here, fp16): its own error stays far below the
    input rounding and below the deterministic fp32-accumulation bound."""
    from widgets.experiments import tensor_cores as ex

    r = ex.measure_precision_triton(ks=[64, 256], size=32, repeats=1)
    assert r["out_dtype"] == "fp32" and [x["k"] for x in r["rows"]] == [64, 256]
    for x in r["rows"]:
        bound = tc.dot_error(x["k"], "fp32", input_rounding=False).deterministic_bound
        assert 0 < x["accumulation"] < x["total"] and x["max_componentwise"] <= bound, x
    assert ex._optional(lambda: 1 / 0)["error"].startswith("ZeroDivisionError")


def test_accuracy_rows_hold_every_k_of_the_precision_record():
    """Review finding 3: the ledger held bf16/fp16 at K = 65536 only (ratios near 1) while other K
    sat at 2.6-3x. Every recorded K is a row now; tensor-core accumulation is labelled calibrated
    (the truncating adder is others' measurement), total error with rounded inputs a prediction."""
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as ex

    rec = harness.load_reference("tensor_cores")
    rows = ex.accuracy_rows(rec)
    ks = sorted({r["k"] for r in rec["results"]["precision"]})
    for d in ("bf16", "fp16"):
        acc = [r for r in rows if r.quantity.startswith(f"{d} GEMM accumulation error")]
        tot = [r for r in rows if r.quantity.startswith(f"{d} GEMM error vs fp64")]
        assert len(acc) == len(ks) == len(tot)
        assert all(r.label == "calibrated" for r in acc) and all(r.label == "prediction" for r in tot)
    assert tc.accumulator("bf16").truncate and tc.accumulator("bf16").label == "calibrated"
    assert "Khattak" in tc.accumulator("fp16").source
    assert tc.tensor_core_accumulation_error(4096, "bf16").u_acc == 2**-23


def test_error_regimes_and_promotion_crossover():
    """Review findings 2 and 4, on synthetic rows: growth is fitted per kernel regime (a regime
    ends where the kernel changes, or where the error falls when no kernel names were recorded),
    and the fast-mode power law extrapolated to the precise level crosses it at the interval."""
    from widgets.experiments import tensor_cores as ex

    a, slope = 1e-6, 0.66
    ks = [256, 512, 1024, 2048, 4096, 8192, 16384]
    fast = [{"k": k, "accumulation": a * k**slope * (0.5 if k >= 8192 else 1.0), "kernels": None} for k in ks]
    reg = ex.error_regimes(fast)
    assert [g["ks"] for g in reg] == [ks[:5], ks[5:]]
    assert all(g["slope"] == pytest.approx(slope) for g in reg)
    named = [dict(r, kernels=["gemm_a"] if r["k"] < 2048 else ["gemm_b", "splitKreduce"]) for r in fast]
    assert [g["ks"] for g in ex.error_regimes(named)] == [ks[:3], ks[3:]]  # names win over the drop
    precise = [{"k": k, "accumulation": a * 128**slope} for k in ks]
    c = ex.promotion_crossover_k(fast, precise)
    assert c["k"] == pytest.approx(128) and c["slope"] == pytest.approx(slope)
    assert ex.promotion_crossover_k(fast[:1], precise) is None


def _simulate_truncated_accumulation(k, bits, block, trials, rng):
    """Sum k products of standard normals, adding ``block`` of them (exactly) per step and chopping
    the accumulator toward zero to ``bits`` significand bits after each step."""
    x = rng.standard_normal((trials, k)) * rng.standard_normal((trials, k))

    def chop(v):
        m, e = np.frexp(v)
        return np.ldexp(np.trunc(m * 2.0**bits) / 2.0**bits, e)

    acc = np.zeros(trials)
    for j in range(0, k, block):
        acc = chop(acc + x[:, j:j + block].sum(axis=1))
    exact = x.sum(axis=1)
    return np.sqrt(np.mean((acc - exact) ** 2) / np.mean(exact**2))


@pytest.mark.parametrize("k, block", [(256, 1), (2048, 16), (4096, 8)])
def test_truncated_accumulation_matches_a_simulation(k, block):
    """Review findings 2/3: a truncating adder's errors are biased and grow like k, not sqrt(k); the
    model (bias plus spread, one truncation per block) matches a simulation within 25%."""
    rng = np.random.default_rng(2)
    got = _simulate_truncated_accumulation(k, 14, block, 400, rng)
    want = tc.accumulation_error(k, 14, truncate=True, block=block).typical_error
    assert got == pytest.approx(want, rel=0.25)
    # and the growth is nearly linear: 4x the products, nearly 4x the error
    big = tc.accumulation_error(4 * k, 14, truncate=True, block=block).typical_error
    assert 3.3 < big / want <= 4.0


def test_chapter_claims_fixed_by_the_review():
    """Review findings 1, 4, 9, 10, 13: four tensor cores per SM only since Ampere (V100 whitepaper:
    640 in 80 SMs, eight per SM); no promotion interval inverted from a sqrt(K) model; no 'each thread
    accumulates its share of K' for SGEMM; the 1980 MHz maximum boost (not 1983) and the bf16 rate
    at it (132 x 1.98 GHz x 4096 = 1070 TFLOP/s) are in the chapter."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "tensor_cores.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "Since Volta, every SM has four" not in text and "Volta and Turing had eight per SM" in text
    assert "fit_promotion_interval" not in text and "promotion about every" not in text
    assert "each thread accumulates its share" not in text
    assert "h200_bf16_at_boost" in text and tc.DATASHEET_CLOCK_HZ["H200-SXM"]["fp32"] == 1.98e9
    assert tc.peak_flop_per_s(132, 1.98e9, 4096) == pytest.approx(1070.5e12, rel=1e-3)
    assert not hasattr(tc, "fit_promotion_interval")


def test_gemm_estimate_for_a_catalog_gpu():
    """The GEMM estimator on a catalog GPU is gemm_estimate with the catalog's dense peak, bandwidth
    and SMs; element sizes come from widgets.dtypes (tf32 is stored in 4 bytes), fp8 writes a 16-bit C."""
    g = get_gpu("H200-SXM")
    for dtype, in_b, out_b in (("bf16", 2, 2), ("fp16", 2, 2), ("tf32", 4, 4), ("fp32", 4, 4), ("fp8", 1, 2)):
        got = tc.gemm_estimate_for(4096, 4224, 8192, dtype, "H200-SXM")
        want = tc.gemm_estimate(4096, 4224, 8192, g.peak(dtype), g.hbm_bytes_per_s, g.sms, in_bytes=in_b, out_bytes=out_b)
        assert got == want
        assert got.bytes_moved == (4096 * 8192 + 8192 * 4224) * in_b + 4096 * 4224 * out_b
    # the tile shape is passed through
    assert tc.gemm_estimate_for(1000, 1000, 64, tile_m=64, tile_n=64).tiles == 16 * 16
    with pytest.raises(ValueError, match="^dtype must be one of 'fp32', 'tf32', 'bf16', 'fp16', 'fp8'"):
        tc.gemm_estimate_for(64, 64, 64, "fp8_e5m2")
    with pytest.raises(ValueError, match="^gpu must be a catalog GPU"):
        tc.gemm_estimate_for(64, 64, 64, "bf16", "TPU-v5e")
    from widgets.hardware import gpus

    no_fp8 = next((x.name for x in gpus() if "fp8" not in x.peak_flop_per_s), None)
    if no_fp8 is not None:  # e.g. an A100: the catalog has no fp8 peak, so there is no estimate
        with pytest.raises(ValueError, match="dtype"):
            tc.gemm_estimate_for(64, 64, 64, "fp8", no_fp8)


def test_input_rounding_error_is_the_floor_of_the_dot_error():
    """Rounding two inputs, each with variance u^2 / (8 ln 2): sqrt(2) x 0.30 u = 0.60 u; it is the
    typical error of a one-term dot product summed exactly (fp64) and a floor for every k."""
    for d in ("fp32", "tf32", "bf16", "fp16", "fp8", "fp8_e5m2"):
        u = tc.unit_roundoff(d)
        assert tc.input_rounding_error(d) == pytest.approx(u * math.sqrt(2 / (8 * math.log(2))), rel=1e-12)
        assert tc.input_rounding_error(d) == pytest.approx(tc.dot_error(1, d, "fp64").typical_error, rel=1e-9)
        assert all(tc.dot_error(k, d).typical_error >= tc.input_rounding_error(d) for k in (1, 64, 4096))
    with pytest.raises(ValueError, match="dtype"):
        tc.input_rounding_error("int8")
