"""The kernels chapter: the ladder's model against published measurements and hand counts, the
timing statistics against tables, the CUDA C's tilings against the model, the cubin reader, the CPU
fallback of the experiment and the record's accuracy rows.

Anchor: Simon Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance: a Worklog"
(siboehm.com/articles/22/CUDA-MMM, 2022) and its repository's README (github.com/siboehm/SGEMM_CUDA,
"GFLOPs at matrix size 4092x4092" on an NVIDIA RTX A6000).
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from widgets.models import kernels as km

# Boehm's README table (A6000, 4092 x 4092 fp32): kernels 1-6 and 10, and cuBLAS.
BOEHM_GFLOPS = {"naive": 309.0, "coalesced": 1986.5, "smem": 2980.3, "blocktile_1d": 8474.7, "blocktile_2d": 15971.7,
                "vectorized": 18237.3, "warptile": 21779.3}
BOEHM_CUBLAS = 23249.6
# The A6000 is not in the book's catalog; its figures from the NVIDIA RTX A6000 datasheet: 10,752 CUDA
# cores (84 SMs of 128), 38.7 TFLOPS fp32 (so a 1.80 GHz boost clock), 768 GB/s GDDR6; compute capability 8.6.
# Boehm never reports the clock his card held; his article ("Lower Bounding the Fastest Possible Runtime") says
# "The GPU is advertised with 30TFLOPs/s of fp32 compute throughput", i.e. 30e12 / (2 x 10,752) = 1.395 GHz.
A6000 = dict(sms=10752 // 128, clock_hz=38.7e12 / (2 * 10752), hbm_bytes_per_s=768e9, arch="sm_86")
A6000_BOEHM_CLOCK_HZ = 30e12 / (2 * 10752)
BOEHM_N = 4092


def boehm_prediction(rung, clock_hz=A6000["clock_hz"]):
    return km.ladder_prediction(rung, BOEHM_N, BOEHM_N, BOEHM_N, **{**A6000, "clock_hz": clock_hz}).predicted_flop_per_s / 1e9


def test_every_ladder_ratio_moves_with_the_assumed_a6000_clock():
    """The comparison depends on a clock nobody recorded: every rung except an HBM-bound one scales with it,
    so at Boehm's 30 TFLOP/s each measured / model ratio is 38.7 / 30 = 1.29 times the boost-clock one."""
    for rung in BOEHM_GFLOPS:
        fast, slow = boehm_prediction(rung), boehm_prediction(rung, A6000_BOEHM_CLOCK_HZ)
        assert fast / slow == pytest.approx(38.7 / 30, rel=1e-3), rung


def test_naive_global_load_passes_follow_the_l1_banks_and_tag_stage():
    """Review r10 #1: the naive kernel's load of A (lane r at byte 4 K r) is not one L1 pass per distinct line.
    An Nsight Compute profile of this kernel on an H200 (review r10, M = N = 2048; l1tex__data_pipe_lsu_wavefronts
    per warp and k) gave 33.0 data passes at K = 4096 and 4064 and 5.39 at K = 4092, with 32 distinct lines at
    every K. Hand count with 32 banks of 4 B: 4 K r / 4 = K r words; K = 4096 and 4064 are multiples of 32, so all
    32 words share bank 0 (32 passes); K = 4092 = 28 mod 32 spreads them over 8 banks, 4 each (4 passes). The tag
    stage resolves 4 lines per clock (NVIDIA forum, thread 273699/8): 32 / 4 = 8 passes, which binds at 4092.
    B is one broadcast word (1 pass). The old count (one pass per line) gave 33 at every K."""
    for k, expected in ((4096, 33), (4064, 33), (4092, 9)):
        assert km.rung_cost("naive", k).wavefronts_per_warp == expected, k
    assert [w for _, w in km.rung_cost("naive", 4092).loads] == [8, 1]
    assert km.rung_cost("coalesced", 4092).wavefronts_per_warp == 2  # one line, no conflict, for both loads


def test_boehms_naive_kernel_is_not_explained_by_the_model_at_4092():
    """Review r10 #2: Boehm's size 4092 is where the naive kernel's loads do not all share a bank, so the
    model (whose counts fit the H200) puts it far above Boehm's 309 GFLOP/s at either A6000 clock; the chapter
    calls the row unexplained, and this test keeps that wording honest (it fails if the model meets Boehm)."""
    for clock in (A6000["clock_hz"], A6000_BOEHM_CLOCK_HZ):
        assert BOEHM_GFLOPS["naive"] / boehm_prediction("naive", clock) < 0.5


def test_the_model_stays_above_the_coalesced_and_smem_rungs_at_either_clock():
    """The coalesced and shared-memory rungs fall short of the model at either assumed clock: at the boost clock they
    reach 41% and 66% of it; at 30 TFLOP/s, 53% and 85%. The model must not undershoot them (it would fail if the
    model undercounted their passes or issue slots). Why they fall short is not tested here: latency, the L1's
    tag and data stages, the queue into the load/store pipe or L1 misses (review r10 #9)."""
    for rung in ("coalesced", "smem"):
        for clock in (A6000["clock_hz"], A6000_BOEHM_CLOCK_HZ):
            assert BOEHM_GFLOPS[rung] < boehm_prediction(rung, clock), (rung, clock)


def test_the_model_ranks_the_register_blocked_rungs_as_boehm_measured():
    """Independent of the clock: the model's order of the rungs from shared-memory tiles to warp tiling is
    Boehm's measured order (it would fail if a rung's counts ranked it above a faster one)."""
    order = ["smem", "blocktile_1d", "blocktile_2d", "vectorized", "warptile"]
    for clock in (A6000["clock_hz"], A6000_BOEHM_CLOCK_HZ):
        pred = [boehm_prediction(r, clock) for r in order]
        assert pred == sorted(pred)
    assert [BOEHM_GFLOPS[r] for r in order] == sorted(BOEHM_GFLOPS[r] for r in order)
    # below shared-memory tiles the order is not Boehm's (review r10 #3): the model puts coalesced above them
    assert boehm_prediction("coalesced") > boehm_prediction("smem") and BOEHM_GFLOPS["coalesced"] < BOEHM_GFLOPS["smem"]
    assert BOEHM_GFLOPS["warptile"] / BOEHM_CUBLAS == pytest.approx(0.937, abs=0.001)


def test_hand_counted_wavefronts_and_instructions():
    # naive at K = 4096: A's 32 words in one bank, B one broadcast; coalesced: 1 + 1
    assert km.rung_cost("naive").wavefronts_per_warp == 33 and km.rung_cost("coalesced").wavefronts_per_warp == 2
    # smem 32 x 32: 2 conflict-free reads per k, plus per 32 k one global load and one store per element
    # of A's and B's tiles (2 each per thread): (2 + 2) / 32 = 0.125
    c = km.rung_cost("smem")
    assert c.wavefronts_per_warp == pytest.approx(2.125) and c.instructions_per_warp == pytest.approx(1 + 2 + 0.125)
    # 1D, TM = 8: one B read and 8 broadcast A reads per k for 8 multiply-adds per thread
    c = km.rung_cost("blocktile_1d")
    assert c.fma_per_thread == 8 and [w for _, w in c.loads] == [1] * 9
    # 2D 8 x 8, 16 threads per row of the block: two rows of A per warp 64 floats apart share a bank
    # (2 passes); 16 columns of B 8 floats apart land on 4 banks (4 passes)
    c = km.rung_cost("blocktile_2d")
    assert [w for _, w in c.loads] == [2] * 8 + [4] * 8
    # vectorized: float4 reads, a quarter-warp per pass (the model's assumption, unsourced for Hopper: see
    # RungCost.wavefronts_per_warp): at least 4 passes; B's 16 columns x 32 B -> 8
    c = km.rung_cost("vectorized")
    assert [w for _, w in c.loads] == [4, 4, 8, 8]


def test_the_transposing_stores_of_a_conflict():
    """Review r10 #16: load_vec/stash write A transposed, As[(c + j) * BM + rr] with rr = i / (BK / 4) and
    c = 4 (i % (BK / 4)) for lane i. With BM a multiple of 32 the bank is rr mod 32: at BK = 8 lanes 2r and 2r + 1
    share a row (2-way conflict), at BK = 16 four lanes do (4-way). Vectorized default (BM 128, BK 8, 256
    threads): 24 passes of inner reads + per BK step 1 float4 global load of A and 1 of B (4 passes each = 8),
    4 scalar stores of A (2 passes each = 8) and 1 float4 store of B (4): (8 + 8 + 4) / 8 = 2.5, so 26.5
    (the old count, stores of A at 1 pass, gave 26)."""
    assert km._a_store_passes(km.tiling("vectorized", bk=8)) == 2
    assert km._a_store_passes(km.tiling("vectorized", bk=16)) == 4
    assert km.rung_cost("vectorized").wavefronts_per_warp == pytest.approx(26.5)


def test_global_traffic_of_a_block_tile():
    # 2 (BM + BN) / (BM BN) bytes per FLOP: 128 x 128 -> 1/32
    assert km.rung_cost("vectorized").global_bytes_per_flop == pytest.approx(1 / 32)
    t = km.tile_summary("vectorized", bm=128, bn=128, bk=16, tm=8, tn=8)
    assert t.smem_bytes_per_block == (128 + 128) * 16 * 4 and t.global_flop_per_byte == 32 and t.smem_flop_per_byte == 2
    assert km.tile_summary("vectorized", tm=4, tn=4).smem_flop_per_byte == 1


def test_occupancy_and_tail_come_from_the_simt_model():
    from widgets.models import simt

    p = km.ladder_prediction("vectorized", 4096, 4096, 4096, 132, 1.98e9, 4.8e12, regs_per_thread=128)
    assert p.occupancy == simt.occupancy(256, 128, 8192, "sm_90")
    blocks = 32 * 32
    assert p.tail_efficiency == pytest.approx(simt.waves(blocks, p.occupancy.blocks_per_sm, 132)[1])


def test_tilings_reject_what_the_kernels_cannot_run():
    for kwargs, match in ((dict(rung="vectorized", tm=6), "tm"), (dict(rung="warptile", wm=48), "wm|warp"),
                          (dict(rung="blocktile_2d", bm=8, tm=8, bn=8, tn=8), "threads"),
                          (dict(rung="smem", bm=64, bn=64), "32 x 32"), (dict(rung="nope"), "rung")):
        with pytest.raises(ValueError, match=match):
            km.tiling(**kwargs)
    with pytest.raises(ValueError, match="cannot launch"):
        km.ladder_prediction("vectorized", 64, 64, 64, 1, 1e9, 1e12, bm=256, bn=256, bk=128, tm=16, tn=16)  # 256 KiB of tiles
    with pytest.raises(ValueError, match="gpu"):
        km.predict_on("MI300X", "naive", 64, 64, 64)


def test_the_cuda_configs_are_the_models_tilings():
    from widgets.experiments import kernels_cuda as kc

    for rung in kc.RUNGS:
        assert rung.name in km.RUNGS
        for config in rung.configs:
            t = km.tiling(rung.name, **km.sizes_from_config(rung.name, config))
            assert (t.threads, (t.bm, t.bn)) == (kc.threads_per_block(rung, config), kc.tile(rung, config)), (rung.name, config)


def _outputs(rung, t):
    """Which (row, col) of the block tile each thread of the CUDA C stores (its index arithmetic)."""
    cnt = np.zeros((t.bm, t.bn), int)
    for tid in range(t.threads):
        if rung in ("naive", "coalesced", "smem"):
            r, c = (tid % 32, tid // 32) if rung == "naive" else (tid // 32, tid % 32)
            cnt[r, c] += 1
        elif rung == "blocktile_1d":
            for m in range(t.tm):
                cnt[(tid // t.bn) * t.tm + m, tid % t.bn] += 1
        elif rung in ("blocktile_2d", "vectorized"):
            tr, tc = tid // (t.bn // t.tn), tid % (t.bn // t.tn)
            cnt[tr * t.tm:(tr + 1) * t.tm, tc * t.tn:(tc + 1) * t.tn] += 1
        else:
            wsubm, wsubn = t.wm // t.wmiter, t.wn // t.wniter
            warp, lane = divmod(tid, 32)
            wr, wc = warp // (t.bn // t.wn), warp % (t.bn // t.wn)
            tr, tc = lane // (wsubn // t.tn), lane % (wsubn // t.tn)
            for a in range(t.wmiter):
                for b in range(t.wniter):
                    r0, c0 = wr * t.wm + a * wsubm + tr * t.tm, wc * t.wn + b * wsubn + tc * t.tn
                    cnt[r0:r0 + t.tm, c0:c0 + t.tn] += 1
    return cnt


def test_every_config_stores_each_output_of_its_tile_exactly_once():
    from widgets.experiments import kernels_cuda as kc

    for rung in kc.RUNGS:
        for config in rung.configs:
            t = km.tiling(rung.name, **km.sizes_from_config(rung.name, config))
            assert (_outputs(rung.name, t) == 1).all(), (rung.name, config)


# --------------------------------------------------------------------------------------------
# Timing statistics
# --------------------------------------------------------------------------------------------
def test_t_quantiles_match_the_tables():
    # Student t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2): two-sided 95% and 99%
    table = {(0.95, 1): 12.706, (0.95, 2): 4.303, (0.95, 4): 2.776, (0.95, 9): 2.262, (0.95, 29): 2.045, (0.99, 5): 4.032,
             (0.99, 30): 2.750, (0.95, 100): 1.984}
    for (c, v), t in table.items():
        assert km.t_quantile(c, v) == pytest.approx(t, rel=1.5e-3), (c, v)
    # the docstring's bounds at 3 degrees of freedom, the first not tabulated exactly: 3.182 and 5.841
    assert km.t_quantile(0.95, 3) == pytest.approx(3.182, rel=1.5e-3)
    assert km.t_quantile(0.99, 3) == pytest.approx(5.841, rel=8e-3)


def test_ci_half_width_and_repeats_needed():
    assert km.mean_ci_half_width(1.0, 10) == pytest.approx(2.262 / math.sqrt(10), rel=1e-3)
    n = km.repeats_needed(0.05, 1.0, 0.01)
    assert km.mean_ci_half_width(0.05, n) <= 0.01 < km.mean_ci_half_width(0.05, n - 1)
    assert 96 <= n <= 100  # (1.96 x 5)^2 = 96.04 by the normal approximation
    assert km.repeats_needed(0.0, 1.0, 0.01) == 2
    with pytest.raises(ValueError, match="relative_half_width"):
        km.repeats_needed(1.0, 1e-6, 1e-6)


def test_median_interval_ranks_match_conover():
    # Conover, Practical Nonparametric Statistics, Table A3 / the binomial(n, 1/2) by hand:
    # n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024 -> X(2), X(9)
    assert km.median_ci_ranks(10) == (2, 9)
    assert km.median_ci_ranks(20) == (6, 15)
    with pytest.raises(ValueError, match="repeats"):
        km.median_ci_ranks(5)


def test_host_clock_error_and_rates():
    assert km.host_timing_error(5e-6, 20e-6) == 4.0
    assert km.flop_per_s(2, 3, 4, 1.0) == 48.0
    assert km.fp32_lanes_per_sm(19.5e12, 108, 1.41e9) == 64  # A100 (GA100): 64 FP32 lanes per SM


def test_the_ci_check_predicts_the_spread_of_means_of_independent_samples():
    """Review r10 #6: the check predicts from the pooled within-group spread and compares with the spread of the
    group means; for independent normal samples the ratio lies in spread_of_means_band(groups) about 95% of the
    time (the old check, from the first group's spread alone, fell outside +-25% in 29% of independent sets)."""
    from widgets.experiments.kernels import GROUP, ci_check

    rng = np.random.default_rng(0)
    lo, hi = km.spread_of_means_band(400 // GROUP)
    inside = 0
    for _ in range(400):
        pred, meas = ci_check(rng.normal(1.0, 0.1, 400).tolist())
        inside += lo <= meas / pred <= hi
    assert 0.92 <= inside / 400 <= 0.98
    drift = (np.linspace(0, 1, 400) + rng.normal(0, 0.01, 400)).tolist()  # a clock ramping: not independent
    pred, meas = ci_check(drift)
    assert meas / pred > hi  # the check can fail


def test_spread_of_means_band_matches_chi_square_tables():
    """sqrt(chi2_q(v) / v) with chi-square quantiles from the tables (Abramowitz and Stegun, table 26.8):
    v = 19: 8.907 and 32.852 -> 0.685, 1.315; v = 9: 2.700 and 19.023 -> 0.548, 1.454 (the Wilson-Hilferty
    approximation is within 0.3% at 19 and 1% at 9)."""
    lo, hi = km.spread_of_means_band(20)
    assert lo == pytest.approx(math.sqrt(8.907 / 19), rel=3e-3) and hi == pytest.approx(math.sqrt(32.852 / 19), rel=3e-3)
    lo, hi = km.spread_of_means_band(10)
    assert lo == pytest.approx(math.sqrt(2.700 / 9), rel=1e-2) and hi == pytest.approx(math.sqrt(19.023 / 9), rel=1e-2)
    for bad in (2, 0, 2.5):
        with pytest.raises(ValueError, match="groups"):
            km.spread_of_means_band(bad)


# --------------------------------------------------------------------------------------------
# The experiment on the CPU, the cubin reader, the record
# --------------------------------------------------------------------------------------------
def test_the_tiling_emulation_is_a_matmul_at_ragged_sizes():
    from widgets.experiments.kernels import emulate_tiled

    rng = np.random.default_rng(1)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    b = rng.standard_normal((29, 41)).astype(np.float32)
    for bm, bn, bk in ((32, 32, 32), (64, 64, 8), (16, 32, 8)):
        np.testing.assert_allclose(emulate_tiled(a, b, bm, bn, bk), a @ b, rtol=1e-4, atol=1e-4)


def test_the_cpu_ladder_and_timing_run_and_read_back():
    from widgets.experiments import harness
    from widgets.experiments import kernels as ke

    # the CPU path (numpy emulation); on a GPU machine measure_ladder would run the CUDA ladder instead
    lad = ke._cpu_ladder() if harness.on_gpu() else ke.measure_ladder()
    assert all(c.correct for r in lad.rungs for c in r.configs) and lad.note == ke.CPU_NOTE
    rec = json.loads(harness.to_json(harness.record("kernels", ke.KernelsResults(ladder=lad))))
    assert ke.KernelsResults.from_record(rec["results"]).ladder.rungs[0].name == "naive"
    assert ke.accuracy_rows(rec) == []  # the CPU measures no rate: nothing to compare


def _tiny_elf() -> bytes:
    """A 64-bit ELF with a .shstrtab and one '.text.k' holding two 16-byte instructions, the second
    carrying the fp32 immediate 3.0 in bytes 4-7."""
    names = b"\0.shstrtab\0.text.k\0"
    text = bytes(16) + bytes(4) + struct.pack("<f", 3.0) + bytes(8)
    hdr = bytearray(64)
    hdr[:6] = b"\x7fELF\x02\x01"
    body = names + text
    shoff = 64 + len(body)
    struct.pack_into("<Q", hdr, 0x28, shoff)
    struct.pack_into("<HHH", hdr, 0x3A, 64, 3, 1)
    sh = bytearray(64 * 3)
    struct.pack_into("<IIQQQQ", sh, 64, 1, 3, 0, 0, 64, len(names))
    struct.pack_into("<IIQQQQ", sh, 128, 11, 1, 0, 0, 64 + len(names), len(text))
    return bytes(hdr) + body + bytes(sh)


def test_the_cubin_reader_finds_and_patches_one_immediate():
    from widgets.experiments import kernels_cubin as kb

    data = _tiny_elf()
    assert [s.name for s in kb.elf_sections(data)] == ["", ".shstrtab", ".text.k"]
    hits = kb.find_float_immediates(data, "k", 3.0)
    assert [h.instruction_offset for h in hits] == [16]
    patched, hit = kb.patch_float_immediate(data, "k", 3.0, 5.0)
    assert sum(x != y for x, y in zip(data, patched)) == 1 and struct.unpack_from("<f", patched, hit.file_offset)[0] == 5.0
    with pytest.raises(ValueError, match="kernels present"):
        kb.kernel_text(data, "other")
    with pytest.raises(ValueError, match="ELF"):
        kb.elf_sections(b"not an elf" * 10)
    with pytest.raises(ValueError, match="found 0"):
        kb.patch_float_immediate(data, "k", 7.0, 5.0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit) to build a real cubin")
def test_a_real_cubin_has_one_fmul_immediate(tmp_path):
    from widgets.experiments import kernels_cubin as kb
    from widgets.experiments import kernels_cuda as kc

    src = tmp_path / "t.cu"
    src.write_text(kc.TIMES3)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", str(src), "-o", str(tmp_path / "t.cubin")], check=True, capture_output=True)
    data = (tmp_path / "t.cubin").read_bytes()
    assert len(kb.find_float_immediates(data, "times3", 3.0)) == 1
    patched, _ = kb.patch_float_immediate(data, "times3", 3.0, 5.0)
    assert kb.find_float_immediates(patched, "times3", 5.0) and not kb.find_float_immediates(patched, "times3", 3.0)


def _reference():
    from widgets.experiments import harness

    try:
        return harness.load_reference("kernels")
    except FileNotFoundError:
        pytest.skip("no H200 record for kernels yet (widgets/data/h200/kernels.json)")


def test_the_h200_record_is_correct_and_its_rows_are_labelled():
    from widgets.experiments import kernels as ke

    rec = _reference()
    res = ke.KernelsResults.from_record(rec["results"])
    assert isinstance(res.ladder, ke.LadderResult) and res.ladder.size == (4096, 4096, 4096)
    for r in res.ladder.rungs:
        for c in r.configs:
            assert c.correct is not False, f"{c.kernel} gave a wrong answer on the H200 (rel. error {c.ragged_rel_err}, {c.big_rel_err})"
            assert not c.local_bytes_per_thread, f"{c.kernel} spills {c.local_bytes_per_thread} B per thread to local memory"
    rows = ke.accuracy_rows(rec)
    assert {r.label for r in rows} <= {"prediction", "calibrated", "fit"}
    # the register estimate's constant of 32 was chosen by hand: never counted as a prediction
    assert all(r.label == "fit" for r in rows if r.unit == "registers")


def test_the_spread_of_the_mean_row_is_a_fit_its_model_is_the_data_compared():
    """Round 19 (labels against widgets.accuracy.LABEL_RULES): the spread-of-the-mean row was labelled a
    prediction, but its model (the pooled spread within the groups over the square root of the group size) is
    computed from the very repeats whose group means it is compared with. Widen every group's spread about its
    mean (the group means stay where they were) and the model moves while the measured spread does not: a fit,
    which does not count toward the book's predictions. The host-clock rows take the add's event-timed median and
    the idle synchronize, both measured on their own repeats: calibrated."""
    import copy

    from widgets.experiments import kernels as ke

    rec = _reference()
    row = next(r for r in ke.accuracy_rows(rec) if "spread of the mean" in r.quantity)
    assert row.label == "fit" and "same repeats" in row.inputs
    wide = copy.deepcopy(rec)
    xs = wide["results"]["timing"]["samples_s"]
    for i in range(0, len(xs) - ke.GROUP + 1, ke.GROUP):
        g = xs[i:i + ke.GROUP]
        mu = sum(g) / len(g)
        xs[i:i + ke.GROUP] = [mu + 2 * (x - mu) for x in g]
    row2 = next(r for r in ke.accuracy_rows(wide) if "spread of the mean" in r.quantity)
    assert row2.predicted == pytest.approx(2 * row.predicted) and row2.measured == pytest.approx(row.measured)
    host = [r for r in ke.accuracy_rows(rec) if "host-clock" in r.quantity]
    assert host and all(r.label == "calibrated" and "event-timed" in r.inputs for r in host)
    assert not any(r.label == "prediction" for r in ke.accuracy_rows(rec) if r.unit == "s")


def test_the_ladder_model_against_the_h200_record():
    """The book's H200 record (widgets/data/h200/kernels.json, measured at 442b4b06): measured / model per rung was
    naive 1.00, coalesced 0.70, shared-memory tiles 1.07, 1D 0.86, 2D 1.18, vectorized 0.73, warp tiling 0.52.
    These bands were set around the committed record's ratios, after looking: they are regression checks that
    fail when a change to the model moves a prediction on this record, not evidence that the model is accurate
    (the chapter reports the ratios themselves, and the shared-memory and 2D rungs exceed the model's bound)."""
    from widgets.experiments import kernels as ke

    rec = _reference()
    import re

    prefix = {"sgemm_naive": "naive", "sgemm_coalesced": "coalesced", "sgemm_smem": "smem", "sgemm_1d": "blocktile_1d",
              "sgemm_2d": "blocktile_2d", "sgemm_vec": "vectorized", "sgemm_warp": "warptile"}
    rows = {}
    for r in ke.accuracy_rows(rec):
        if r.unit == "GFLOP/s":
            kernel = re.search(r"\((sgemm_[a-z0-9]+)", r.quantity).group(1)
            rows[prefix[kernel]] = r.ratio
    assert set(rows) == set(km.RUNGS)
    assert rows["naive"] == pytest.approx(1.0, abs=0.1)
    assert 0.4 <= rows["warptile"] <= 0.7
    for rung, ratio in rows.items():
        if rung not in ("naive", "warptile"):
            assert 0.65 <= ratio <= 1.3, (rung, ratio)
    # resident blocks per SM: the driver's calculator on the same inputs as simt.occupancy, which reproduces it rule
    # for rule; a consistency check, not a prediction, so not in the ledger (review r10 #5)
    from widgets.models import simt

    assert not [r for r in ke.accuracy_rows(rec) if r.unit == "blocks"]
    lad = ke.KernelsResults.from_record(rec["results"]).ladder
    for r in lad.rungs:
        b = r.best_config
        assert simt.occupancy(b.threads_per_block, b.regs_per_thread, b.static_smem_bytes, lad.arch).blocks_per_sm == b.blocks_per_sm


def test_the_model_does_not_rank_the_h200_warptile_sweep():
    """The chapter says the model does not rank warp-tile configurations (review r4 #2): on the record, the
    rank correlation between model and measurement is weak (Spearman's rho under 0.5) and measured / model
    spans a wide range. It fails, and the chapter's wording with it, if a new record shows the model ranking
    them. (The first form of this test asked where the model's single first choice measured; with the
    sweep's configurations added, two configurations tie for the model's first place, and which one counted
    depended on tie-breaking.)"""
    from widgets.experiments import kernels as ke
    from widgets.ui import kernels as ui

    rec = _reference()
    lad = ke.KernelsResults.from_record(rec["results"]).ladder
    pairs = []
    for c in lad.rung("warptile").configs:
        p = km.predict_on("H200-SXM", "warptile", *lad.size, regs_per_thread=c.regs_per_thread, **km.sizes_from_config("warptile", c.config))
        pairs.append((p.predicted_flop_per_s / 1e9, c.gflop_per_s))
    from widgets.accuracy import rank_agreement

    assert rank_agreement([p for p, _ in pairs], [m for _, m in pairs]).rho < 0.5
    ratios = [m / p for p, m in pairs]
    assert max(ratios) / min(ratios) > 1.5
    assert "measured / model" in ui.sweep_table(lad, "warptile")


def test_triton_bf16_cast_once_times_the_gemm_alone(monkeypatch):
    """``_triton(bf16, cast_once=True)`` hands the GEMM the same converted operands on every call for the
    same inputs (the casts leave the timed calls); the default converts on every call."""
    torch = pytest.importorskip("torch")
    from widgets.experiments import kernels as ke

    seen = []

    class FakeTriton:
        @staticmethod
        def matmul(x, y):
            seen.append((x, y))
            return x.float() @ y.float()

    monkeypatch.setattr(ke, "_optional", lambda name: FakeTriton)
    a, b = torch.ones(8, 4), torch.ones(4, 8)
    once, every = ke._triton(torch.bfloat16, cast_once=True), ke._triton(torch.bfloat16)
    once(a, b), once(a, b)
    assert seen[0][0] is seen[1][0] and seen[0][1] is seen[1][1] and seen[0][0].dtype == torch.bfloat16
    seen.clear()
    every(a, b), every(a, b)
    assert seen[0][0] is not seen[1][0]
    assert torch.equal(once(a, b), every(a, b))


# ---------------------------------------------------------------------------------------------
# The L1 passes of the untiled rungs against Nsight Compute (benchmarks/h200/kernels_ncu.sh)
# ---------------------------------------------------------------------------------------------
def test_untiled_load_passes_are_what_rung_cost_counts():
    """Per load, ``untiled_load_passes`` splits the model's count into its two stages; their larger value,
    summed, is ``rung_cost``'s wavefronts (so the record's comparison uses the model the chapter uses)."""
    for rung in ("naive", "coalesced"):
        for k in (1, 31, 32, 33, 64, 4064, 4092, 4093, 4096, 4100):
            loads = km.untiled_load_passes(rung, k)
            assert all(d["passes"] == max(d["data_passes"], d["tag_passes"]) for d in loads)
            assert sum(d["passes"] for d in loads) == km.rung_cost(rung, k).wavefronts_per_warp, (rung, k)
    with pytest.raises(ValueError, match="rung"):
        km.untiled_load_passes("smem", 4096)


_FAKE_NCU = '''
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.0.0 (fake)")
    raise SystemExit
metrics = args[args.index("--metrics") + 1].split(",")
if os.environ.get("FAKE_REJECT_EXTRA") and "launch__grid_size" in metrics:
    print("==ERROR== Failed to find metric launch__grid_size", file=sys.stderr)
    raise SystemExit(1)
get = lambda name: args[args.index(name) + 1]
rung, m, n, k = get("--rung"), int(get("--m")), int(get("--n")), int(get("--k"))
w = m * n // 32
json.dump({"rung": rung, "kernel": "sgemm_" + rung, "m": m, "n": n, "k": k, "grid_blocks": w // 32, "threads_per_block": 1024,
           "warps": w, "sms": 132, "torch": "fake", "correct": True}, open(get("--info"), "w"))
data, tag = ((33.0, 9.0) if k % 32 == 0 else (5.5, 10.5)) if rung == "naive" else (2.0, 2.0)
wk = w * k
vals = {"l1tex__data_pipe_lsu_wavefronts.sum": data * wk + 100, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 0,
        "l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum": data * wk,
        "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum": tag * wk,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 2 * wk, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 33 * wk,
        "l1tex__t_sector_hit_rate.pct": 99.2, "smsp__inst_executed_op_global_ld.sum": 2 * wk,
        "sm__cycles_elapsed.avg": max(data, tag) * wk / 132, "gpu__time_duration.sum": 50_000_000,
        "launch__grid_size": w // 32, "launch__block_size": 1024}
units = {"gpu__time_duration.sum": "nsecond", "l1tex__t_sector_hit_rate.pct": "%", "sm__cycles_elapsed.avg": "cycle"}
names = [x for x in metrics if x in vals]
with open(get("--log-file"), "w") as f:   # ncu --csv --page raw: header, units, one row per launch
    f.write("==PROF== Connected to process 1\\n")
    f.write(",".join('"%s"' % h for h in ["ID", "Kernel Name"] + names) + "\\n")
    f.write(",".join('"%s"' % units.get(h, "") for h in ["", ""] + names) + "\\n")
    f.write(",".join('"%s"' % v for v in ["0", "sgemm_" + rung] + ["{:,}".format(vals[x]) for x in names]) + "\\n")
'''


@pytest.mark.parametrize("reject_extra", [False, True])
def test_the_ncu_script_writes_a_record_that_ncu_passes_reads(tmp_path, reject_extra):
    """benchmarks/h200/kernels_ncu.sh with a stand-in ncu writing the CSV of ``--page raw`` (thousands separators
    included); with ``reject_extra`` the stand-in refuses the optional counters, as an ncu without them would, and
    the script must repeat the run with the core counters and take the data stage from the total less shared."""
    import os
    import sys
    from pathlib import Path

    from widgets.experiments import kernels as ke

    root = Path(__file__).resolve().parents[1]
    fake = tmp_path / "ncu"
    fake.write_text(f"#!{sys.executable}\n" + _FAKE_NCU)
    fake.chmod(0o755)
    env = dict(os.environ, NCU=str(fake), OUT=str(tmp_path), PYTHON=sys.executable, M="64", N="96", TREE="test tree")
    if reject_extra:
        env["FAKE_REJECT_EXTRA"] = "1"
    res = subprocess.run(["bash", "benchmarks/h200/kernels_ncu.sh", "abc123"], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rec = json.loads((tmp_path / "kernels_ncu.json").read_text())
    prov = rec["provenance"]
    assert prov["git_commit"] == "abc123" and "fake" in prov["ncu"] and prov["clock_control"] == "none"
    assert prov["tree"] == "test tree" and prov["command"].endswith("bash benchmarks/h200/kernels_ncu.sh abc123")
    assert {(r["rung"], r["k"]) for r in rec["rows"]} == {(r, k) for r in ("naive", "coalesced") for k in (4096, 4092, 4064)}
    assert all(r["metrics_requested"] == ("core" if reject_extra else "core+extra") for r in rec["rows"])
    rows = {(r["rung"], r["k"]): r for r in ke.ncu_passes(rec)}
    slack = 100 / (64 * 96 // 32) if reject_extra else 0  # the total holds 100 wavefronts besides the loads
    assert rows["naive", 4092]["data_passes"] == pytest.approx(5.5 + slack / 4092, rel=1e-12)
    assert rows["naive", 4092]["tag_passes"] == rows["naive", 4092]["measured_passes"] == pytest.approx(10.5)
    assert rows["naive", 4096]["measured_passes"] == pytest.approx(33.0 + slack / 4096) and rows["naive", 4096]["requests"] == 2.0
    assert rows["coalesced", 4064]["sm_cycles"] == pytest.approx(2.0)
    d = next(r for r in rec["rows"] if (r["rung"], r["k"]) == ("naive", 4092))["derived"]
    assert d["data_passes_per_warp_per_k"] == pytest.approx(rows["naive", 4092]["data_passes"])


def test_ncu_passes_names_what_is_wrong_with_a_record():
    from widgets.experiments import kernels as ke

    good = {"rung": "naive", "k": 4096, "launch": {"warps": 4, "sms": 132},
            "metrics": {"l1tex__data_pipe_lsu_wavefronts.sum": 33.0 * 4 * 4096,
                        "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum": 9.0 * 4 * 4096}}
    assert ke.ncu_passes({"rows": [good]})[0]["measured_passes"] == 33.0
    for bad, what in (({"rows": []}, "'rows'"), ({"rows": [{**good, "rung": "smem"}]}, "rows\\[0\\].rung"),
                      ({"rows": [{**good, "k": 0}]}, "rows\\[0\\].k"),
                      ({"rows": [{**good, "launch": {"warps": 0}}]}, "launch.warps"),
                      ({"rows": [{**good, "metrics": {"l1tex__data_pipe_lsu_wavefronts.sum": -1.0}}]}, "metrics"),
                      ({"rows": [{**good, "metrics": {}}]}, "no data-stage or tag-stage")):
        with pytest.raises(ValueError, match=what):
            ke.ncu_passes(bad)


NCU_TOL = 0.2  # measured / model passes per warp per k within 1 +- 0.2 (the book's accuracy target is 0.25)
REVIEW_NCU = "benchmarks/h200/kernels_review_ncu_2026-12-02/naive_lds_ncu_metrics.txt"


def _check_passes_against_the_model(rows):
    """What the model claims for the untiled rungs' global loads, checked on ``ke.ncu_passes`` rows."""
    by = {(r["rung"], r["k"]): r for r in rows}
    for (rung, k), r in by.items():
        # the model's count (per load the larger of bank passes and lines / 4) against the stage that binds
        assert abs(r["measured_passes"] / r["model_passes"] - 1) <= NCU_TOL, (rung, k, r["measured_passes"], r["model_passes"])
        # the data stage is the banks' count (33 where K is a multiple of 32, 4 + 1 at K = 4092) where it binds; where
        # the tag stage binds (K = 4092) the bank count is a floor: the book's record measured 5.59 there, 12% above
        # 5 (the review's profile: 5.39), past the 10% this test first asked (changed after that record, said here)
        if r["model_data_passes"] >= r["model_tag_passes"]:
            assert abs(r["data_passes"] / r["model_data_passes"] - 1) <= 0.1, (rung, k, r["data_passes"], r["model_data_passes"])
        else:
            assert r["data_passes"] >= 0.97 * r["model_data_passes"], (rung, k, r["data_passes"], r["model_data_passes"])
        # the tag stage resolves at most TAGS_PER_CLOCK lines per pass: lines / 4 is a floor
        assert r["tag_passes"] >= 0.97 * r["model_tag_passes"], (rung, k, r["tag_passes"])
        assert r["requests"] is None or r["requests"] == pytest.approx(2.0, rel=0.01)  # one load of A, one of B per k
        if r["sm_cycles"] is not None:  # the L1 pipe takes one pass per SM per cycle: a floor on the time
            assert r["sm_cycles"] >= 0.97 * r["measured_passes"], (rung, k, r["sm_cycles"])
            if rung == "naive":  # and it explains the naive kernel's time (within 10%)
                assert abs(r["sm_cycles"] / r["measured_passes"] - 1) <= 0.1, (rung, k, r["sm_cycles"])
            # not the coalesced kernel's: the book's record has 2.7 SM cycles per warp and k for its 2 passes (the
            # L1 busy 74% of the time), so something else costs a quarter of it (the chapter's ledger: 0.72 of the
            # model). This test first asked 10% for both rungs; relaxed for the coalesced one after that record.
    naive = {k: r for (rung, k), r in by.items() if rung == "naive"}
    if {4096, 4092} <= set(naive):
        assert naive[4092]["measured_passes"] < 0.4 * naive[4096]["measured_passes"]
        # the old rule (one pass per distinct line: 33 at every K) is outside the tolerance at 4092, so this can fail
        old = naive[4092]["line_passes"]
        assert old == 33 and abs(old / naive[4092]["measured_passes"] - 1) > NCU_TOL


def test_the_model_against_the_reviews_ncu_profile():
    """The expert review's Nsight Compute profile of ITS OWN naive SGEMM on an H200 (benchmarks/h200/
    kernels_review_ncu_2026-12-02/naive_lds_ncu_metrics.txt; grid 4096 x 1024 threads, i.e. M = N = 2048,
    131,072 warps; K = 4096, 4092, 4064 in that order; ncu's default clock control): data stage 33.0, 5.39, 33.0
    and tag stage 9.0, 10.47, 13.06 passes per warp per k; SM cycles per warp per k 34.4, 11.0, 34.7 (132 SMs).
    The model gives 33, 9, 33: within NCU_TOL, but its tag stage (lines / 4 = 8 for A, 1 for B) is under the
    measured one at 4092 (where it binds: 10.5) and at 4064 (13, where the data stage binds anyway)."""
    import re
    from pathlib import Path

    from widgets.experiments import kernels as ke

    text = (Path(__file__).resolve().parents[1] / REVIEW_NCU).read_text()
    blocks = [b for b in re.split(r"\n  (?=\S)", text) if b.startswith("naive(")]  # a launch's header is indented by 2
    assert len(blocks) == 3 and all("(4096, 1, 1)x(1024, 1, 1)" in b for b in blocks)
    rows = []
    for k, block in zip((4096, 4092, 4064), blocks):
        metrics = {m: float(v.replace(",", "")) for m, v in re.findall(r"^\s+(\S+\.(?:sum|avg|pct))\s+(?:\S+\s+)?([\d,.]+)\s*$", block, re.M)}
        rows.append({"rung": "naive", "k": k, "launch": {"warps": 4096 * 1024 // 32, "sms": 132}, "metrics": metrics})
    got = ke.ncu_passes({"rows": rows})
    assert [round(r["data_passes"], 2) for r in got] == [33.01, 5.39, 33.01]
    assert [round(r["tag_passes"], 2) for r in got] == [9.0, 10.47, 13.06]
    _check_passes_against_the_model(got)


def test_the_model_against_the_books_ncu_record():
    """The book's own record (widgets/data/h200/kernels_ncu.json, written by benchmarks/h200/kernels_ncu.sh on the
    H200: sgemm_naive and sgemm_coalesced of widgets/experiments/kernels_cuda.py at K = 4096, 4092, 4064) against
    the same claims as the review's profile; skipped until the record is committed."""
    from pathlib import Path

    from widgets.experiments import kernels as ke

    path = Path(__file__).resolve().parents[1] / "widgets" / "data" / "h200" / "kernels_ncu.json"
    if not path.exists():
        pytest.skip("no H200 Nsight Compute record of the book's kernels yet (run benchmarks/h200/kernels_ncu.sh)")
    rec = json.loads(path.read_text())
    for key in ("gpu", "driver", "ncu", "torch", "date", "git_commit", "command", "clock_control"):
        assert rec["provenance"].get(key), key
    assert all(r["launch"]["correct"] for r in rec["rows"])
    rows = ke.ncu_passes(rec)
    assert {(r["rung"], r["k"]) for r in rows} == {(r, k) for r in ("naive", "coalesced") for k in (4096, 4092, 4064)}
    _check_passes_against_the_model(rows)


def test_ladder_figure_compares_the_default_tiles_with_their_own_run():
    """Reader check r10: the readout put the default tiles' prediction (61.2 TFLOP/s) beside the fastest of 12
    configurations (37.3), a different kernel; the default tiles measured 22.8 TFLOP/s in the H200 record."""
    import json

    from widgets.experiments import kernels as exp
    from widgets.experiments.harness import DATA_DIR
    from widgets.ui import kernels as ui

    rec = json.loads((DATA_DIR / "h200" / "kernels.json").read_text())
    ladder = exp.KernelsResults.from_record(rec["results"]).ladder
    fig = ui.ladder_figure(gpus=("H200-SXM",), sizes=(4096,), ladder=ladder)
    dots = fig.data[1]
    warp = ladder.rung("warptile")
    default = next(c for c in warp.configs if c.config == (128, 128, 16, 64, 64, 4, 8, 4, 128, 0))  # Boehm's kernel 10
    assert dots.x[-1] == pytest.approx(default.gflop_per_s) and dots.x[-1] < 0.7 * warp.best_config.gflop_per_s
    assert f"measured {default.gflop_per_s / 1e3:.3g} TFLOP/s" in fig.layout.title.subtitle.text


# --------------------------------------------------------------------------------------------
# Nsight Compute's warp states per rung (benchmarks/h200/kernels_stalls.sh -> widgets/data/h200/kernels_stalls.json)
# --------------------------------------------------------------------------------------------
def _stall_row(rung="smem", **metrics):
    base = {
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 2.0,
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio": 5.0,
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 0.5,
        "smsp__inst_executed_op_shared_ld.sum": 100.0,
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 400.0,
        "sm__cycles_elapsed.avg.per_second": 1980.0,
        "gpu__time_duration.sum": 2.5,
        "smsp__warps_active.avg.per_cycle_active": 2.0,
    }
    units = {"sm__cycles_elapsed.avg.per_second": "MHz", "gpu__time_duration.sum": "ms"}
    return {"rung": rung, "kernel": f"sgemm_{rung}", "metrics": {**base, **metrics}, "units": units}


def test_warp_states_reads_the_counters_as_documented():
    from widgets.experiments import kernels as ke

    (w,) = ke.warp_states({"rows": [_stall_row()]})
    assert list(w["states"]) == ["mio_throttle", "barrier", "wait"]  # largest first, the issue cycle left out
    assert w["cycles_per_issue"] == pytest.approx(8.5)  # every state, selected included
    assert w["shared_passes_per_load"] == 4.0  # 400 wavefronts / 100 load instructions
    assert w["sm_clock_hz"] == pytest.approx(1.98e9) and w["time_s"] == pytest.approx(2.5e-3)
    assert w["warps_per_scheduler"] == 2.0 and w["issue_per_cycle"] is None  # a counter the record lacks reads None
    (g,) = ke.warp_states({"rows": [_stall_row("naive", **{"smsp__inst_executed_op_shared_ld.sum": 0.0})]})
    assert g["shared_passes_per_load"] is None  # no shared-memory loads: no passes per load


def test_every_recorded_warp_state_has_one_meaning():
    """Both chapters that profile (SIMT's reduction kernels, this chapter's ladder) read what a warp
    state means from widgets.experiments.ncu: every state in either H200 record has a meaning there."""
    from widgets.experiments import ncu
    from widgets.experiments.harness import DATA_DIR

    simt = json.loads((DATA_DIR / "h200" / "simt_ncu.json").read_text())
    stalls = json.loads((DATA_DIR / "h200" / "kernels_stalls.json").read_text())
    seen = {k for p in simt["points"] for k in p.get("stalls_per_issued_instruction") or {}}
    seen |= {ncu.STALL_METRIC.match(n).group(1) for r in stalls["rows"] for n in r["metrics"] if ncu.STALL_METRIC.match(n)}
    assert len(seen) >= 15 and seen <= set(ncu.STALL_MEANINGS), sorted(seen - set(ncu.STALL_MEANINGS))
    assert ncu.stall_meaning("selected") == "issuing an instruction"
    with pytest.raises(ValueError, match="unknown warp state 'stalled'"):
        ncu.stall_meaning("stalled")
    assert ncu.ncu_count({"a": 3}, "a", "rows[0]", "x") == 3.0 and ncu.ncu_count({}, "a", "rows[0]", "x") is None
    for bad in (True, -1.0, float("nan"), "3"):
        with pytest.raises(ValueError, match=r"x record field rows\[0\]\.metrics\['a'\]"):
            ncu.ncu_count({"a": bad}, "a", "rows[0]", "x")


@pytest.mark.parametrize("record, field", [
    ({}, "'rows'"),
    ({"rows": [{"rung": "smem"}]}, r"rows\[0\]"),
    ({"rows": [_stall_row(**{"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": -1.0})]}, "wait"),
    ({"rows": [{**_stall_row(), "metrics": {"gpu__time_duration.sum": 1.0}}]}, "no warp-state counter"),
    ({"rows": [{**_stall_row(), "units": {"sm__cycles_elapsed.avg.per_second": "cycle/usecond"}}]}, "clock unit"),
])
def test_warp_states_names_what_is_wrong_with_a_record(record, field):
    from widgets.experiments import kernels as ke

    with pytest.raises(ValueError, match=field):
        ke.warp_states(record)


def test_the_h200_warp_states_record_adds_up_and_names_its_run():
    """The book's record: for every rung the states add up to ncu's own warp cycles per issued instruction (a
    check that no state is missed or double counted), each rung's kernel is the ladder record's fastest
    configuration, and the provenance names the GPU, the commit and the command."""
    from widgets.experiments import kernels as ke

    root = Path(__file__).resolve().parents[1] / "widgets" / "data" / "h200"
    rec = json.loads((root / "kernels_stalls.json").read_text())
    ladder = json.loads((root / "kernels.json").read_text())["results"]["ladder"]
    best = {r["name"]: r["configs"][r["best"]]["kernel"] for r in ladder["rungs"] if r.get("best") is not None}
    states = ke.warp_states(rec)
    assert [w["rung"] for w in states] == list(best)
    for w in states:
        assert w["kernel"] == best[w["rung"]]
        assert w["cycles_per_issue"] == pytest.approx(w["ncu_cycles_per_issue"], rel=0.01), w["rung"]
    assert all(r["launch"]["correct"] for r in rec["rows"])
    p = rec["provenance"]
    assert p["gpu"] == "NVIDIA H200" and len(p["git_commit"]) == 40 and "kernels_stalls.sh" in p["command"] and p["date"]
