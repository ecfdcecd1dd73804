"""The tensor-core chapter's depth sections: the GEMM tile hierarchy, pipeline stages (Little's
law), epilogue fusion, power and data dependence, block-scaled formats, 2:4 sparsity and grouped
GEMM; and the depth experiments' CPU paths and accuracy rows.

Expected values are derived by hand in each test (the derivation is in the comment) or come from
the published source named beside them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from widgets import dtypes
from widgets.models import tensor_cores as tc

H200_BF16 = 989.4e12  # FLOP/s dense, NVIDIA H200 datasheet
H200_HBM = 4.8e12  # B/s, NVIDIA H200 datasheet
H200_SMS = 132


# --------------------------------------------------------------------------------------------
# The tile hierarchy
# --------------------------------------------------------------------------------------------
def test_shared_memory_ridge_is_32_flop_per_byte_on_hopper():
    # A100 whitepaper (2020): 256 dense FP16 FMA per clock per 3rd-gen tensor core, 4 per SM =
    # 1024 FMA = 2048 FLOP per clock per SM. H100 whitepaper (2022), SM section: the 4th-gen tensor
    # core does 2x the A100's MMA rate clock for clock, 2048 FMA = 4096 FLOP per clock per SM
    # (989.4e12 / (132 x 1.83e9) = 4096; R. Crovella, NVIDIA forum, "How to calculate the tensor
    # core fp16 performance of H100"). CUDA C++ Programming Guide, "Shared
    # Memory" (compute capability 5.x and later): 32 banks, each 32 bits wide per clock = 128 B.
    # 4096 / 128 = 32 FLOP/B on Hopper; 2048 / 128 = 16 on Ampere: Hopper doubled the math per SM
    # but not the shared-memory bandwidth.
    assert tc.smem_ridge_flop_per_byte(4096) == 32.0
    assert tc.smem_ridge_flop_per_byte(2048) == 16.0
    assert tc.smem_ridge_flop_per_byte(tc.FLOP_PER_CLOCK_PER_SM["H200-SXM"]["fp8"]) == 64.0


def test_ridge_is_clock_free_and_agrees_with_the_bandwidth_form():
    # peak / (32 banks x 4 B x SMs x clock) at any clock = FLOP per clock per SM / 128.
    from widgets.models import memory_hierarchy as mh

    for clock in (1.2e9, 1.83e9, 1.98e9):
        peak = tc.peak_flop_per_s(132, clock, 4096)
        assert peak / mh.smem_bytes_per_s(132, clock) == pytest.approx(tc.smem_ridge_flop_per_byte(4096))


def test_tile_intensity_by_hand():
    # 2 bm bn bk FLOP on (bm + bn) bk elements of b bytes: 2 bm bn / ((bm + bn) b); bk cancels.
    assert tc.tile_intensity_flop_per_byte(128, 256, 64, 2) == pytest.approx(2 * 128 * 256 / (384 * 2))  # 85.33
    assert tc.tile_intensity_flop_per_byte(128, 256, 16, 2) == tc.tile_intensity_flop_per_byte(128, 256, 64, 2)
    assert tc.tile_intensity_flop_per_byte(64, 64, 16, "bf16") == 32.0  # a square tile of side s: s / b
    assert tc.tile_intensity_flop_per_byte(128, 128, 32, "fp8") == 128.0
    # A wgmma m64nNk16 with both operands in shared memory: 64 N / (64 + N) FLOP/B in bf16.
    for n in (64, 128, 256):
        assert tc.tile_intensity_flop_per_byte(64, n, 16, 2) == pytest.approx(64 * n / (64 + n))


def test_simon_boehm_blocktiling_intensity():
    # Simon Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022),
    # kernel 5 (2D blocktiling): a 128 x 128 block tile with BK = 8 in fp32 loads (128 + 128) x 8 x 4 B = 8 KiB per
    # step for 2 x 128 x 128 x 8 FLOP: 32 FLOP/B, four times kernel 3's 32 x 32 tile (8 FLOP/B).
    assert tc.tile_intensity_flop_per_byte(128, 128, 8, 4) == 32.0
    assert tc.tile_intensity_flop_per_byte(32, 32, 32, 4) == 8.0


def test_wave_intensity_by_hand():
    # 132 tiles in 8 tile-rows x ceil(132/8) = 17 tile-columns: per element of K the wave reads
    # 8 x 128 rows of A and 17 x 256 columns of B once, for 2 x 132 x 128 x 256 FLOP. (8 x 17 =
    # 136 positions for 132 tiles: the 17th column is partial, so the model over-counts the reads
    # by about 1 %, on the safe side.)
    want = 2 * 132 * 128 * 256 / ((8 * 128 + 17 * 256) * 2)
    assert tc.wave_intensity_flop_per_byte(128, 256, 2, 132, 8) == pytest.approx(want)
    # One SM, one tile: the wave is the tile.
    assert tc.wave_intensity_flop_per_byte(128, 256, 2, 1, 1) == pytest.approx(tc.tile_intensity_flop_per_byte(128, 256, 1, 2))


def test_tile_hierarchy_levels_and_resources():
    h = tc.tile_hierarchy("H200-SXM", "bf16", 128, 256, 64, 64, 256, 3, 8, m=8192, n=8192, k=8192)
    assert h.smem_ridge == 32.0 and h.smem_intensity == pytest.approx(51.2)
    assert h.hbm_ridge == pytest.approx(H200_BF16 / H200_HBM, rel=2e-3)  # ~206 FLOP/B
    assert h.smem_bytes == 3 * (128 + 256) * 64 * 2 == 147456  # 144 KiB of the 227 KiB a block may opt in to
    assert h.smem_limit_bytes == 227 * 1024 and h.fits
    assert h.acc_registers_per_thread == 128 * 256 / 256  # fp32 accumulators over 8 warps
    assert h.bound == "compute" and h.l2_ridge is None and "L2" not in h.level_flop_per_s
    # With an L2 of 8 TB/s the 128 x 256 tile (85 FLOP/B) is L2-bound at 85 x 8 TB/s.
    h2 = tc.tile_hierarchy("H200-SXM", "bf16", 128, 256, 64, 64, 256, 3, 8, l2_bytes_per_s=8e12)
    assert h2.bound == "L2" and h2.attainable_flop_per_s == pytest.approx(8e12 * 2 * 128 * 256 / 768)
    # A 64 x 64 warp tile sits exactly on Hopper's shared-memory ridge; on an A100 (ridge 16) it has 2x margin.
    assert tc.tile_hierarchy("H200-SXM", "bf16", 64, 64, 64, 64, 64, 4, 4).smem_intensity == 32.0
    a100 = tc.tile_hierarchy("A100-SXM-80GB", "bf16", 128, 128, 32, 64, 64, 4, 4)
    assert a100.smem_ridge == 16.0 and a100.smem_intensity / a100.smem_ridge == 2.0
    # Too many stages do not fit: 5 x 48 KiB = 240 KiB > 227 KiB.
    assert not tc.tile_hierarchy("H200-SXM", "bf16", 128, 256, 64, 64, 256, 5, 8).fits


def test_tile_hierarchy_rejects():
    with pytest.raises(ValueError, match="wm"):
        tc.tile_hierarchy("H200-SXM", "bf16", 64, 64, 64, 128, 64)
    with pytest.raises(ValueError, match="dtype"):
        tc.tile_hierarchy("T4", "bf16")
    with pytest.raises(ValueError, match="gpu"):
        tc.tile_hierarchy("no-such-gpu", "bf16")


# --------------------------------------------------------------------------------------------
# Pipeline stages (Little's law)
# --------------------------------------------------------------------------------------------
def test_pipeline_stages_by_hand():
    # 128 x 256 x 64 bf16 at 989.4 TFLOP/s / 132 SMs: a step of 2 x 128 x 256 x 64 FLOP takes
    # 559.6 ns and needs a 48 KiB stage; at 600 ns latency, 48 KiB x 600 / 559.6 = 51.5 KiB in
    # flight: 2 stages loading + 1 being read + 1 still read by the wgmma in flight = 4 (CUTLASS
    # sm90_mma_tma_gmma_ss_warpspecialized.hpp: warpgroup_wait<K_PIPE_MMAS>() with K_PIPE_MMAS = 1,
    # then consumer_release of the stage K_PIPE_MMAS behind the read pointer); 3 for mma.sync.
    p = tc.pipeline_stages(128, 256, 64, 2, H200_BF16 / H200_SMS, 600e-9)
    assert p.stage_bytes == 49152
    assert p.step_s == pytest.approx(2 * 128 * 256 * 64 / (H200_BF16 / H200_SMS))
    assert p.in_flight_bytes == pytest.approx(49152 * 600e-9 / p.step_s)
    assert p.stages_needed == 4
    assert tc.pipeline_stages(128, 256, 64, 2, H200_BF16 / H200_SMS, 600e-9, mma_in_flight=0).stages_needed == 3
    assert tc.pipeline_stages(128, 256, 64, 2, H200_BF16 / H200_SMS, 600e-9, mma_in_flight=2).stages_needed == 5
    # A 64 x 64 tile's step is 8x shorter (a quarter of the FLOP per byte... per step: 1/8 the FLOP)
    # so it needs ceil(600 / 70) = 9 stages in flight + 1 read + 1 held by the wgmma in flight.
    small = tc.pipeline_stages(64, 64, 64, 2, H200_BF16 / H200_SMS, 600e-9)
    assert small.stages_needed == 2 + math.ceil(600e-9 / small.step_s)
    # Exactly one step of latency: one stage in flight, plus the two the consumers hold. Two
    # stages leave no stage to load into ahead of an asynchronous wgmma at any latency.
    assert tc.pipeline_stages(128, 128, 64, 2, 1e12, 2 * 128 * 128 * 64 / 1e12).stages_needed == 3
    assert tc.pipeline_stages(128, 128, 64, 2, 1e12, 1e-12).stages_needed == 3
    with pytest.raises(ValueError, match="mma_in_flight"):
        tc.pipeline_stages(128, 128, 64, 2, 1e12, 1e-9, mma_in_flight=-1)


# --------------------------------------------------------------------------------------------
# Epilogue fusion
# --------------------------------------------------------------------------------------------
def test_epilogue_fusion_by_hand():
    # bias then GELU eagerly: two passes, each reading and writing C (m n x 2 B): 4 m n 2 B.
    # Horace He, "Making Deep Learning Go Brrrr From First Principles" (2022): each unfused
    # pointwise op is a round trip to memory; fused into the matmul it is free.
    m, n = 8192, 8192
    e = tc.epilogue_fusion_estimate(m, n, 1024, H200_BF16, H200_HBM, H200_SMS)
    assert e.epilogue_bytes == 4 * m * n * 2
    assert e.epilogue_s == pytest.approx(4 * m * n * 2 / H200_HBM)
    assert e.fused_s == e.gemm_s and e.eager_s == pytest.approx(e.gemm_s + e.epilogue_s)
    # A long K hides the epilogue: the speed-up shrinks towards 1.
    long_k = tc.epilogue_fusion_estimate(m, n, 16384, H200_BF16, H200_HBM, H200_SMS)
    assert 1 < long_k.speedup < e.speedup
    with_launch = tc.epilogue_fusion_estimate(m, n, 1024, H200_BF16, H200_HBM, H200_SMS, launch_s=1e-5)
    assert with_launch.epilogue_s == pytest.approx(e.epilogue_s + 2e-5)


# --------------------------------------------------------------------------------------------
# Power and data dependence
# --------------------------------------------------------------------------------------------
def test_bf16_patterns_and_toggles():
    assert [int(b) for b in tc.bf16_bit_patterns([1.0, -2.0, 0.0, 3.0])] == [0x3F80, 0xC000, 0x0000, 0x4040]
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
    assert int(tc.bf16_bit_patterns([1.0 + 2**-8])[0]) == 0x3F80
    assert tc.bit_toggle_fraction([0x3F80] * 10) == 0.0
    assert tc.bit_toggle_fraction([0x0000, 0x0001, 0x0003]) == pytest.approx((1 + 1) / 2 / 16)


def test_operand_toggles_order_zeros_ones_sparse_randn():
    # Constant data never toggles; random data flips about a third of the bits (the sign and the
    # mantissa's 7 bits half the time each, the exponent's high bits rarely); zeroing 75% of the
    # entries leaves a pair of neighbours both zero 9/16 of the time, so sparse data toggles less.
    f = {k: tc.operand_toggle_fraction(k, n=20000) for k in tc.DATA_KINDS}
    assert f["zeros"] == f["ones"] == 0.0
    assert 0.3 < f["randn"] < 0.45
    assert 0 < f["sparse"] < f["randn"]


# --------------------------------------------------------------------------------------------
# Block-scaled formats
# --------------------------------------------------------------------------------------------
def test_block_scaled_bits_per_element():
    # OCP Microscaling Formats (MX) v1.0, Table 1: MXFP8 and MXFP4 share one 8-bit E8M0 scale per
    # 32 elements: 8.25 and 4.25 bits; NVIDIA's NVFP4 blog (2025): one E4M3 scale per 16: 4.5.
    assert dtypes.get_dtype("mxfp8").bits_with_scales == 8.25
    assert dtypes.get_dtype("mxfp4").bits_with_scales == 4.25
    assert dtypes.get_dtype("nvfp4").bits_with_scales == 4.5


def test_e2m1_grid_and_power_of_two_scale():
    # OCP MX v1.0, section 5.3.3: FP4 E2M1 represents +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}. With a block
    # maximum of 6 the E8M0 scale is 2^(floor(log2 6) - 2) = 1 (section 6.3), so the grid shows.
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    x = np.array(grid * 4)
    assert np.array_equal(tc.block_scaled_quantize(x, "mxfp4"), x)
    # Scaled by 2^10 the same block comes back exactly: the scale is a power of two.
    assert np.array_equal(tc.block_scaled_quantize(x * 1024, "mxfp4"), x * 1024)
    # A block whose max is 7 has the same scale (floor(log2 7) = 2): 7 saturates to 6.
    y = np.array([7.0] + [1.0] * 31)
    assert tc.block_scaled_quantize(y, "mxfp4")[0] == 6.0
    with pytest.raises(ValueError, match="whole blocks of 16"):
        tc.block_scaled_quantize(np.ones(8), "nvfp4")


def test_quantization_errors_against_the_rounding_model_and_the_nvfp4_claim():
    # One rounding of a value to a format of unit roundoff u has relative variance u^2 / (8 ln 2)
    # (the chapter's ROUNDING_VARIANCE; input_rounding_error counts two, one per input of a
    # product, so one rounding is that over sqrt(2)). The sampled error must agree within 5 %.
    for fmt in ("bf16", "fp8_e4m3"):
        assert tc.quantization_error(fmt) == pytest.approx(tc.input_rounding_error(fmt) / math.sqrt(2), rel=0.05)
    # MXFP8's elements are E4M3: within 1.3x of per-tensor E4M3 (its power-of-two scale can push a
    # block's largest values past 448, where they saturate).
    assert 1.0 <= tc.quantization_error("mxfp8") / tc.quantization_error("fp8_e4m3") < 1.3
    # NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference" (2025): the
    # smaller block (16) and the finer E4M3 scale give NVFP4 a lower quantization error than MXFP4.
    assert tc.quantization_error("nvfp4") < tc.quantization_error("mxfp4")
    # Both 4-bit formats are far coarser than fp8.
    assert tc.quantization_error("mxfp4") > 3 * tc.quantization_error("mxfp8")


# --------------------------------------------------------------------------------------------
# 2:4 sparsity and grouped GEMM
# --------------------------------------------------------------------------------------------
def test_sparse_2_4_bytes_and_speedup():
    # Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks", section 3: half the values
    # plus a 2-bit index per kept value: fp16/bf16 16 + 2 of every 32 bits = 0.5625; int8 0.625.
    assert tc.sparse_2_4_bytes(128, 128, 2) / (128 * 128 * 2) == 0.5625
    assert tc.sparse_2_4_bytes(128, 128, 1) / (128 * 128) == 0.625
    # Compute-bound: exactly the 2x of the sparse peak; weight-bound decode: the bytes, 1/0.5625 at most.
    assert tc.sparse_2_4_speedup(8192, 8192, 8192, H200_BF16, H200_HBM, H200_SMS) == pytest.approx(2.0)
    dec = tc.sparse_2_4_speedup(8192, 16, 8192, H200_BF16, H200_HBM, H200_SMS, tile_n=16)
    assert 1.5 < dec < 1 / 0.5625
    with pytest.raises(ValueError, match="cols"):
        tc.sparse_2_4_bytes(4, 6)


def test_grouped_gemm_by_hand():
    # 64 experts of 256 x 1536 x 2048: 2 x 6 = 12 tiles of 128 x 256 each; alone, 12 of 132 SMs
    # work (one wave, 9 % full); grouped, 768 tiles fill ceil(768/132) = 6 waves, 97 % full.
    e = tc.grouped_gemm_estimate(64, 256, 1536, 2048, H200_BF16, H200_HBM, H200_SMS, launch_s=0.0)
    assert e.loop_wave_efficiency == pytest.approx(12 / 132)
    assert e.grouped_wave_efficiency == pytest.approx(768 / (6 * 132))
    tile_s = 2 * 128 * 256 * 2048 / (H200_BF16 / H200_SMS)
    # Grouped, the 64 experts' weights (2048 x 1536 x 2 B each) are read once each: 108 us of
    # HBM traffic, just above the 6 waves' 107 us of math.
    memory_s = 64 * (256 * 2048 + 2048 * 1536 + 256 * 1536) * 2 / H200_HBM
    assert e.loop_s == pytest.approx(64 * tile_s) and e.grouped_s == pytest.approx(max(6 * tile_s, memory_s))
    # Launch-bound: tiny groups cost one launch each, grouped only one.
    tiny = tc.grouped_gemm_estimate(100, 16, 16, 16, H200_BF16, H200_HBM, H200_SMS, launch_s=5e-6)
    assert tiny.loop_s == pytest.approx(100 * 5e-6)


# --------------------------------------------------------------------------------------------
# The experiments' CPU paths, their record and their accuracy rows
# --------------------------------------------------------------------------------------------
@pytest.mark.slow  # ~8 s (Triton's interpreter); the chapter's nbval runs the same CPU paths
def test_depth_experiments_run_small_on_the_cpu_and_round_trip():
    from widgets.experiments import tensor_cores_depth as d

    t = d.measure_tile_sweep(n=32, configs=((16, 16, 16, 4, 1, 4),))
    assert t.points[0].relative_error_vs_torch < 5e-3
    ep = d.measure_epilogue_fusion((32, 32, 16))
    assert ep.fused_relative_error is not None and ep.fused_relative_error < 5e-3
    dd = d.measure_data_dependence(n=32, kinds=("zeros", "sparse"), seconds=0.001)
    assert dd.runs[0].zero_fraction == 1.0 and 0.6 < dd.runs[1].zero_fraction < 0.9
    sp = d.measure_sparse_2_4(n=32)
    grp = d.measure_grouped_gemm((2, 8, 16, 16))
    r = d.DepthResults(tiles=t, epilogue=ep, data=dd, sparse=sp, grouped=grp)
    back = d.DepthResults.from_record(json.loads(json.dumps(r.to_record())), strict=True)
    assert back == r


def test_prune_2_4_keeps_two_of_four():
    import torch

    from widgets.experiments.tensor_cores_depth import prune_2_4

    x = torch.tensor([[1.0, -4.0, 2.0, 3.0, 0.5, 0.125, -0.25, 0.375]])
    assert prune_2_4(x).tolist() == [[0.0, -4.0, 0.0, 3.0, 0.5, 0.0, 0.0, 0.375]]


def _fake_record():
    """A tensor_cores record with a GPU-like depth part (numbers chosen for the test, not measured)."""
    spread = lambda s: {"median_s": s, "min_s": s, "max_s": s, "repeat": 5}  # noqa: E731
    clk = lambda mhz: {"median": mhz, "min": mhz, "max": mhz, "samples": 100}  # noqa: E731
    n = 4096
    return {"provenance": {"gpu": "NVIDIA H200"}, "results": {"catalog_gpu": "H200-SXM", "depth": {
        "tiles": {"n": n, "dtype": "bfloat16", "interpreted": False, "points": [
            {"config": [128, 256, 64, 8, 3, 8], "time": spread(2 * n**3 / 600e12), "flop_per_s": 600e12},
            {"config": [64, 64, 64, 8, 4, 4], "time": {"error": "OutOfResources: shared memory"}}]},
        "epilogue": {"m": 8192, "n": 8192, "k": 1024, "dtype": "bfloat16", "interpreted": False, "config": [128, 256, 64, 8, 3, 8],
                     "torch_eager": spread(4e-4), "triton_unfused": spread(4e-4), "triton_fused": spread(2.5e-4),
                     "epilogue_only": spread(1.4e-4)},
        "data": {"n": 8192, "dtype": "bfloat16", "rest_s": 1.0, "runs": [
            {"data": "randn", "zero_fraction": 0.0, "flop_per_s": 700e12, "window_flop_per_s": [700e12],
             "seconds_per_window": 2.0, "calls_per_window": 1000, "sm_clock_mhz": clk(1500)},
            {"data": "zeros", "zero_fraction": 1.0, "flop_per_s": 800e12, "window_flop_per_s": [800e12],
             "seconds_per_window": 2.0, "calls_per_window": 1000, "sm_clock_mhz": clk(1755)},
            {"error": "RuntimeError: ones failed"}]},
        "sparse": {"n": 8192, "dtype": "bfloat16", "dense": spread(1.2e-3), "sparse": spread(0.8e-3), "backend": "X"},
        "grouped": {"experts": 64, "tokens": 256, "k": 2048, "n": 1536, "dtype": "bfloat16",
                    "loop": spread(6e-4), "bmm": spread(2e-4), "grouped": spread(1.5e-4)},
    }}}


def test_depth_accuracy_rows_recomputed_and_labelled():
    from widgets.experiments import tensor_cores_depth as d

    rows = d.accuracy_rows(_fake_record())
    by = {r.quantity: r for r in rows}
    cat = by["Triton bf16 GEMM 4096^3, 128×256×64 tile, 3 stages, 8 warps, catalog levels"]
    assert cat.measured == 600e12 and cat.label == "prediction"
    assert cat.predicted == pytest.approx(tc.tile_hierarchy("H200-SXM", "bf16", 128, 256, 64, 64, 256, 3, 8).attainable_flop_per_s)
    l2 = [r for q, r in by.items() if "128×256×64 tile" in q and "catalog" not in q]
    if d.calibration()["l2_bytes_per_s"]:  # the L2 plateau binds this tile: a calibrated row beside it
        assert len(l2) == 1 and l2[0].label == "calibrated" and l2[0].predicted < cat.predicted
    assert not any("64×64×64" in q for q in by)  # the failed config has no row
    zeros = next(r for q, r in by.items() if "on zeros" in q)
    assert zeros.predicted == pytest.approx(700e12 * 1755 / 1500)
    # Round 19: the random-data run's measured throughput goes in, but so does the clock the power governor chose
    # during the run compared (a measured behaviour of the data compared, LABEL_RULES): a fit.
    assert zeros.label == "fit" and "measured" in zeros.inputs
    rec = _fake_record()
    runs = {r.get("data"): r for r in rec["results"]["depth"]["data"]["runs"]}
    runs["zeros"]["flop_per_s"] *= 0.5
    z2 = next(r for r in d.accuracy_rows(rec) if "on zeros" in r.quantity)
    assert z2.predicted == zeros.predicted and z2.measured == pytest.approx(0.5 * zeros.measured)
    runs["randn"]["flop_per_s"] *= 0.5
    z3 = next(r for r in d.accuracy_rows(rec) if "on zeros" in r.quantity)
    assert z3.predicted == pytest.approx(0.5 * zeros.predicted)
    saved = next(r for q, r in by.items() if "fusion saves" in q)
    assert saved.measured == pytest.approx(1.5e-4) and saved.label == "prediction"
    assert saved.predicted == pytest.approx(4 * 8192 * 8192 * 2 / H200_HBM)
    sp = next(r for q, r in by.items() if "2:4" in q)
    assert sp.measured == pytest.approx(1.5) and sp.predicted == pytest.approx(2.0)
    # The loop row is "calibrated" only where simt's launch cost enters max(one GEMM, one launch):
    # for 256 x 1536 x 2048 experts (~18 us each by the model) a launch of a few us does not.
    cal = d.calibration()
    loop = [r for q, r in by.items() if "one launch each" in q]
    if cal["launch_s"]:
        est = tc.grouped_gemm_estimate(64, 256, 1536, 2048, H200_BF16, H200_HBM, H200_SMS, launch_s=cal["launch_s"])
        assert len(loop) == 1
        assert loop[0].label == ("prediction" if cal["launch_s"] <= est.per_group_s else "calibrated")
    # A record without a depth part (older records) gives no rows; nor does an interpreted run.
    assert d.accuracy_rows({"results": {"catalog_gpu": "H200-SXM"}}) == []
    rec = _fake_record()
    rec["results"]["depth"]["tiles"]["interpreted"] = True
    assert not any("tile" in r.quantity for r in d.accuracy_rows(rec))


# --------------------------------------------------------------------------------------------
# The calculator and the exercise checks
# --------------------------------------------------------------------------------------------
def test_tile_figure_offers_every_gpu_and_says_why_not():
    from widgets.hardware import gpu_names
    from widgets.ui import tensor_cores as ui

    labels = " | ".join(b["label"] for b in ui.tile_figure(configs=ui.TILE_CONFIGS[:1]).layout.updatemenus[0].buttons)
    assert all(g in labels for g in gpu_names())
    assert ui.tile_why_not("MI300X") and ui.tile_why_not("H200-SXM") is None
    fig = ui.tile_figure(choices=(("MI300X", "bf16"),), configs=ui.TILE_CONFIGS[:2])
    assert "NVIDIA SMs" in fig.layout.title.subtitle.text


def test_tile_calculator_uses_a_measured_l2_only_for_the_gpu_it_was_measured_on(monkeypatch):
    """Reader review r4 #2: the H200 record's L2 bandwidth was applied to every GPU and labelled
    "measured". It must count for H200-SXM only; another GPU shows no L2 level (and no "measured"),
    and a value the reader types is labelled as theirs."""
    import re

    from widgets.ui import tensor_cores as ui

    monkeypatch.delenv("GPUBOOK_BUILD", raising=False)
    form = ui.tile_calculator({"H200-SXM": 8.0e12})
    text = lambda: re.sub(r"<[^>]+>", " ", form.output.value)  # noqa: E731
    # H200-SXM bf16, 128 x 256 x 64 tile: 85 FLOP/B x 8 TB/s binds (as in test_tile_hierarchy_levels_and_resources)
    assert "measured on H200-SXM" in text() and "L2-bound" in text()
    for gpu in ("A100-SXM-80GB", "B200"):
        form.controls["gpu"].value = gpu
        assert "no L2 figure for this GPU" in text() and "measured on" not in text() and "L2 allows" not in text()
        assert "L2-bound" not in text()
    form.controls["l2_tb_per_s"].value = 5.0
    assert "you entered" in text() and "measured on" not in text() and "L2 allows" in text()
    form.controls["l2_tb_per_s"].value = 0.0
    form.controls["gpu"].value = "H200-SXM"
    assert "measured on H200-SXM" in text()


def test_exercise_checks_accept_the_model_and_reject_the_usual_mistakes(capsys):
    from widgets.ui import tensor_cores as ui

    assert ui.check_smem_ridge(32) and not ui.check_smem_ridge(16) and not ui.check_smem_ridge("x")
    assert "A100" in capsys.readouterr().out
    p = tc.pipeline_stages(128, 128, 64, "bf16", H200_BF16 / H200_SMS, 800e-9)
    assert ui.check_stages(p.stages_needed) and not ui.check_stages(p.stages_needed - 1) and not ui.check_stages(True)
    assert ui.check_block_bits(4.5) and not ui.check_block_bits(4.25) and ui.check_block_bits(4.25, "mxfp4")
