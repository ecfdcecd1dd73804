"""Memory-hierarchy models, calculators and experiments.

Published references:
- [BPG] NVIDIA CUDA C++ Best Practices Guide, section 9.2.1 "Coalesced Access to Global Memory":
  a warp reading 32 aligned consecutive 4-byte words uses four 32-byte sectors; misaligned by one
  word it uses five; with a stride of 2 the load/store efficiency is 50 %.
- [PG] NVIDIA CUDA C++ Programming Guide, "Shared Memory" (compute capability 5.x and later):
  32 banks of 32 bits; strided access with a stride of one or three 32-bit words is conflict-free,
  a stride of two words is a 2-way bank conflict; a warp's 64-bit accesses are conflict-free when
  each half-warp touches distinct banks.
- [RL] Williams, Waterman, Patterson (2009), Roofline, CACM 52(4): attainable = min(peak, I x BW).
- [H200] NVIDIA H200 datasheet (4.8 TB/s, 1,979 TFLOPS bf16 with sparsity) and the device tool's
  H200 notes: "about 206 FLOP per byte in dense bf16, against about 295 on an H100 (3.35 TB/s)".
- [HWP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), "H100 SM architecture":
  256 KB of combined L1 data cache and shared memory per SM; 64K 32-bit registers (256 KB) per SM;
  50 MB L2 (H100 SXM5). [AWP] NVIDIA A100 whitepaper (2020): 192 KB combined L1/shared per SM.
- [TMA] CUDA C++ Programming Guide, "Tensor Memory Access", swizzle modes: "swizzle 16B chunks
  within a 32B/64B/128B span"; CUTLASS include/cute/atom/mma_traits_sm90_gmma.hpp:
  Layout_K_SW32/64/128_Atom = Swizzle<1,4,3> / Swizzle<2,4,3> / Swizzle<3,4,3> (XOR bits [7, 7+B)
  of the byte offset into bits [4, 4+B): 16-byte chunks permuted, 8 rows of 128 B per pattern).
"""

from math import gcd

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from widgets.hardware import get_gpu, gpu_names
from widgets.models import memory_hierarchy as mh


# ---------------------------------------------------------------------------------------------
# Roofline
# ---------------------------------------------------------------------------------------------
def test_ridge_points_h200_and_h100():  # [H200]
    assert mh.ridge_intensity(get_gpu("H200-SXM").peak("bf16"), 4.8e12) == pytest.approx(206, abs=0.5)
    assert mh.ridge_intensity(get_gpu("H100-SXM").peak("bf16"), 3.35e12) == pytest.approx(295, abs=0.5)


def test_roofline_definition():  # [RL]
    assert mh.attainable_flop_per_s(1.0, 100.0, 10.0) == 10.0  # memory-bound: I x BW
    assert mh.attainable_flop_per_s(50.0, 100.0, 10.0) == 100.0  # compute-bound: peak
    assert mh.attainable_flop_per_s(10.0, 100.0, 10.0) == 100.0  # at the ridge both agree
    arr = mh.attainable_flop_per_s(np.array([1.0, 10.0, 100.0]), 100.0, 10.0)
    assert arr.tolist() == [10.0, 100.0, 100.0]


def test_arithmetic_intensity_hand_cases():
    assert mh.arithmetic_intensity(1, 12) == pytest.approx(1 / 12)  # fp32 vector add
    assert mh.arithmetic_intensity(2 * 4096**3, 6 * 4096**2) == pytest.approx(4096 / 3)  # bf16 GEMM
    assert mh.arithmetic_intensity(0, 8) == 0.0


def test_roofline_time_is_the_larger_term():
    assert mh.roofline_time_s(1e12, 1e9, 1e12, 1e12) == pytest.approx(1.0)  # compute
    assert mh.roofline_time_s(1e9, 4.8e12, 1e15, 4.8e12) == pytest.approx(1.0)  # memory


def test_hierarchical_roofline_picks_the_tightest_level():
    rate, bound = mh.hierarchical_attainable_flop_per_s(1000.0, {"L2": (10.0, 50.0), "HBM": (100.0, 20.0)})
    assert (rate, bound) == (500.0, "L2")
    rate, bound = mh.hierarchical_attainable_flop_per_s(100.0, {"HBM": (100.0, 20.0)})
    assert (rate, bound) == (100.0, "compute")


def test_roofline_point_uses_the_catalog():
    p = mh.roofline_point("h200-sxm", "bf16", 10)
    assert p.attainable_flop_per_s == pytest.approx(48e12) and p.bound == "memory"
    assert mh.roofline_point("H200-SXM", "bf16", 1000).bound == "compute"
    with pytest.raises(ValueError, match="fp8"):
        mh.roofline_point("A100-SXM-80GB", "fp8", 10)


@given(
    st.floats(min_value=1e-3, max_value=1e5),
    st.floats(min_value=1e-3, max_value=1e5),
    st.floats(min_value=1e9, max_value=1e16),
    st.floats(min_value=1e9, max_value=1e13),
)
def test_roofline_properties(i1, i2, peak, bw):
    lo, hi = sorted((i1, i2))
    a_lo, a_hi = mh.attainable_flop_per_s(lo, peak, bw), mh.attainable_flop_per_s(hi, peak, bw)
    assert a_lo <= a_hi <= peak * (1 + 1e-12)  # monotone, capped by the peak
    assert a_lo <= lo * bw * (1 + 1e-12)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: mh.arithmetic_intensity(1, 0), "bytes_moved"),
        (lambda: mh.arithmetic_intensity(-1, 8), "flop"),
        (lambda: mh.ridge_intensity(1e12, 0), "bytes_per_s"),
        (lambda: mh.ridge_intensity(-5, 1e12), "peak_flop_per_s"),
        (lambda: mh.attainable_flop_per_s(0, 1e12, 1e12), "intensity"),
        (lambda: mh.attainable_flop_per_s([1, -2], 1e12, 1e12), "intensity"),
        (lambda: mh.attainable_flop_per_s(float("nan"), 1e12, 1e12), "intensity"),
        (lambda: mh.roofline_time_s(1, 1, 1e12, 0), "bytes_per_s"),
        (lambda: mh.warp_load_sectors(-1), "stride_elems"),
        (lambda: mh.warp_load_sectors(1, 3), "elem_bytes"),
        (lambda: mh.warp_load_sectors(1, 4, -2), "offset_elems"),
        (lambda: mh.warp_load_sectors(1.5), "stride_elems"),
        (lambda: mh.bank_conflict_wavefronts(1, 12), "elem_bytes"),
        (lambda: mh.bank_conflict_wavefronts(-3), "stride_elems"),
        (lambda: mh.strided_read_bytes(0, 1), "n_elems"),
        (lambda: mh.tiled_matmul_global_bytes(8, 8, 8, 0), "tile"),
        (lambda: mh.smem_bytes_per_s(0, 1e9), "sms"),
        (lambda: mh.hierarchical_attainable_flop_per_s(1e12, {}), "levels"),
        (lambda: mh.roofline_point("V100", "bf16", 1), "gpu"),
        (lambda: mh.roofline_point("H200-SXM", "int4", 1), "dtype"),
        (lambda: mh.roofline_point("H200-SXM", "bf16", "10"), "intensity"),
        (lambda: mh.warp_load_sectors(2**62, 4), "stride_elems"),  # was 1 by int64 wraparound
        (lambda: mh.bank_conflict_wavefronts(2**62), "stride_elems"),
        (lambda: mh.strided_read_bytes(2, 2**60, 16), "stride_elems"),
        (lambda: mh.warp_load_sectors(True), "stride_elems"),
        (lambda: mh.warp_load_sectors(2.0), "stride_elems"),
        (lambda: mh.arithmetic_intensity(1e308, 1e-300), "flop"),
        (lambda: mh.attainable_flop_per_s([1, True], 1e12, 1e12), "intensity"),
        (lambda: mh.attainable_flop_per_s(["1"], 1e12, 1e12), "intensity"),
        (lambda: mh.hierarchical_attainable_flop_per_s(1e12, [("HBM", (1, 1))]), "levels"),
        (lambda: mh.hierarchical_attainable_flop_per_s(1e12, {"HBM": "ab"}), "HBM"),
        (lambda: mh.shared_wavefronts([1.5] * 32), "byte_addresses"),
        (lambda: mh.shared_wavefronts("abc"), "byte_addresses"),
        (lambda: mh.tma_swizzle_offset(0, 16), "swizzle_bytes"),
        (lambda: mh.tma_swizzle_offset(-1), "byte_offset"),
        (lambda: mh.tma_column_wavefronts(64, 128), "row_bytes"),
        (lambda: mh.tma_column_wavefronts(128, 128, 8), "chunk"),
        (lambda: mh.matmul_compulsory_bytes(8, 8, 2**40), "k"),
        (lambda: mh.working_set_bytes_per_s(1.0, 1.0, float("inf"), 1.0), "cache_bytes_per_s"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


# ---------------------------------------------------------------------------------------------
# Coalescing
# ---------------------------------------------------------------------------------------------
def test_best_practices_guide_examples():  # [BPG]
    assert mh.warp_load_sectors(1, 4, 0) == 4  # aligned, sequential: one 128-B line, 4 sectors
    assert mh.warp_load_sectors(1, 4, 1) == 5  # misaligned by one word: 5 sectors
    assert mh.coalescing(2).efficiency == pytest.approx(0.5)  # stride 2: 50 % efficiency


@pytest.mark.parametrize(
    "args, sectors, lines",
    [
        ((0, 4, 0), 1, 1),  # broadcast: all lanes read one word
        ((1, 8, 0), 8, 2),  # 32 doubles = 256 B
        ((1, 16, 0), 16, 4),  # float4: 512 B
        ((8, 4, 0), 32, 8),  # 32 B apart: a sector each, four lanes per line
        ((32, 4, 0), 32, 32),
        ((4, 4, 0), 16, 4),  # 16 B apart: two lanes per sector, 512 B span
        ((1, 1, 0), 1, 1),  # 32 bytes
        ((1, 2, 0), 2, 1),
        ((1, 4, 4), 5, 2),  # starts 16 B into a line
    ],
)
def test_sector_hand_cases(args, sectors, lines):
    assert mh.warp_load_sectors(*args) == sectors
    assert mh.warp_load_lines(*args) == lines


@given(st.integers(0, 200), st.sampled_from(mh.ELEM_BYTES), st.integers(0, 300))
def test_sector_properties(stride, elem, offset):
    c = mh.coalescing(stride, elem, offset)
    assert 0 < c.efficiency <= 1
    assert c.sectors >= -(-c.requested_bytes // 32)  # at least the bytes asked for
    assert c.sectors <= 32 * (-(-elem // 32) + 1)  # each lane touches at most ceil(e/32)+1 sectors
    assert c.lines <= c.sectors <= 4 * c.lines


def test_strided_read_bytes_matches_per_warp_count():
    for s in (1, 2, 3, 4, 8, 16, 32):
        assert mh.strided_read_bytes(32 * 100, s) == 100 * 32 * mh.warp_load_sectors(s)
    assert mh.strided_read_bytes(33, 1) == 4 * 32 + 32  # a partial last warp
    # With a 64-byte granule, strides of 16 floats (64 B) move twice the sector model's bytes.
    assert mh.strided_read_bytes(3200, 16, granule_bytes=64) == 2 * mh.strided_read_bytes(3200, 16)
    assert mh.strided_read_bytes(3200, 1, granule_bytes=64) == mh.strided_read_bytes(3200, 1)


# ---------------------------------------------------------------------------------------------
# Shared-memory banks
# ---------------------------------------------------------------------------------------------
def test_programming_guide_bank_examples():  # [PG]
    assert mh.bank_conflict_wavefronts(1) == 1
    assert mh.bank_conflict_wavefronts(2) == 2
    assert mh.bank_conflict_wavefronts(3) == 1
    assert mh.bank_conflict_wavefronts(0) == 1  # broadcast
    assert mh.bank_conflict_wavefronts(1, 8) == 2  # 64-bit, conflict-free: one pass per half-warp


@pytest.mark.parametrize("stride", range(1, 97))
def test_gcd_rule_for_4_byte_words(stride):
    assert mh.bank_conflict_wavefronts(stride, 4) == gcd(stride, 32)


@pytest.mark.parametrize(
    "stride, elem, wavefronts",
    [
        (32, 8, 32),  # column of a 32-wide double tile: 16-way per half-warp
        (33, 8, 2),  # padded by one double
        (2, 8, 4),
        (1, 16, 4),  # float4: a quarter-warp per pass
        (32, 16, 32),
        (1, 2, 1),  # two lanes share a word
        (2, 2, 1),
        (64, 2, 32),
        (1, 1, 1),
    ],
)
def test_wide_and_narrow_accesses(stride, elem, wavefronts):
    assert mh.bank_conflict_wavefronts(stride, elem) == wavefronts


@given(st.integers(0, 500), st.sampled_from(mh.ELEM_BYTES))
def test_wavefront_bounds(stride, elem):
    wf = mh.bank_conflict_wavefronts(stride, elem)
    assert mh.ideal_wavefronts(elem) <= wf <= 32
    assert mh.bank_loads(stride, elem).max() <= wf


def test_swizzle_and_padding_cure_column_access():
    assert mh.swizzled_column_wavefronts(32) == (32, 1)
    assert mh.swizzled_column_wavefronts(64, column=5) == (32, 1)
    assert mh.bank_conflict_wavefronts(33) == 1
    with pytest.raises(ValueError, match="row_elems"):
        mh.swizzled_column_wavefronts(48)


def test_tma_swizzle_moves_16_byte_chunks():  # [TMA]
    # 128-B mode: chunk bits 4..6 XOR row bits 7..9 (Swizzle<3,4,3>)
    assert [mh.tma_swizzle_offset(128 * r) // 16 % 8 for r in range(8)] == list(range(8))
    for o in range(0, 4096):
        moved = mh.tma_swizzle_offset(o, 128)
        assert moved % 16 == o % 16  # bytes keep their place inside a 16-byte chunk
        assert moved // 128 == o // 128  # chunks stay in their 128-B row
        assert mh.tma_swizzle_offset(moved, 128) == o  # an involution (XOR)
        assert mh.tma_swizzle_offset(o, 64) ^ o == ((o >> 7) & 3) << 4  # Swizzle<2,4,3>
        assert mh.tma_swizzle_offset(o, 32) ^ o == ((o >> 7) & 1) << 4  # Swizzle<1,4,3>
    assert mh.tma_swizzle_offset(4, 128) == 4 and mh.tma_swizzle_offset(4 + 128, 0) == 132
    # not a 4-byte-element permutation: consecutive floats of a chunk move together
    assert [mh.tma_swizzle_offset(128 + 4 * i) for i in range(4)] == [144, 148, 152, 156]


def test_tma_swizzle_removes_the_column_conflict():
    # lane i reads 16-B chunk 0 of row i (ldmatrix on 64 bf16 per row): 8-way without swizzle
    assert mh.tma_column_wavefronts(0, 128) == 32
    assert mh.tma_column_wavefronts(0, 64) == 16
    assert mh.tma_column_wavefronts(0, 32) == 8
    for mode in (32, 64, 128):
        for chunk in range(mode // 16):
            assert mh.tma_column_wavefronts(mode, chunk=chunk) == mh.ideal_wavefronts(16) == 4


def test_shared_wavefronts_validates_addresses():
    with pytest.raises(ValueError, match="32 addresses"):
        mh.shared_wavefronts([0, 4, 8])
    with pytest.raises(ValueError, match="aligned"):
        mh.shared_wavefronts(list(range(1, 33)), 4)


def test_smem_bandwidth_from_first_principles():
    # 32 banks x 4 B x 132 SMs x 1.98 GHz
    assert mh.smem_bytes_per_s(132, 1.98e9) == pytest.approx(128 * 132 * 1.98e9)


# ---------------------------------------------------------------------------------------------
# Tiling and the working-set model
# ---------------------------------------------------------------------------------------------
def test_tiling_divides_traffic_by_the_tile():
    n = 1024
    naive = mh.tiled_matmul_global_bytes(n, n, n, 1)
    assert naive == (2 * n**3 + n * n) * 4
    for t in (16, 32, 128):
        assert mh.tiled_matmul_global_bytes(n, n, n, t) == (2 * n**3 // t + n * n) * 4
    # intensity ~ T/4 FLOP/B in fp32
    assert mh.arithmetic_intensity(2 * n**3, mh.tiled_matmul_global_bytes(n, n, n, 128)) == pytest.approx(32, rel=0.1)


def test_tiling_counts_global_traffic_not_hbm_bytes():
    """The tiled count is global-load traffic; HBM can see as little as the compulsory bytes
    (the L2 absorbs re-reads): the old name `tiled_matmul_hbm_bytes` claimed HBM bytes."""
    assert not hasattr(mh, "tiled_matmul_hbm_bytes")
    n = 4096
    compulsory = mh.matmul_compulsory_bytes(n, n, n, 2)
    assert compulsory == 3 * n * n * 2
    for t in (1, 16, 128, n):
        assert mh.tiled_matmul_global_bytes(n, n, n, t, 2) >= compulsory
    assert mh.tiled_matmul_global_bytes(n, n, n, n, 2) == compulsory  # one tile: every byte once
    assert "L2" in mh.tiled_matmul_global_bytes.__doc__


def test_working_set_model_limits():
    bw = mh.working_set_bytes_per_s(np.array([1.0, 50.0, 1e6]), 50.0, 10e12, 4e12)
    assert bw[0] == pytest.approx(10e12) and bw[1] == pytest.approx(10e12)
    assert bw[2] == pytest.approx(4e12, rel=1e-3)


# ---------------------------------------------------------------------------------------------
# Calculators (live and static forms)
# ---------------------------------------------------------------------------------------------
def test_static_calculators_have_two_inputs():
    from widgets.ui import memory_hierarchy as ui

    # swizzle: each row width's slider has its row / 16 chunks (128-B rows 8, 64-B 4, 32-B 2)
    swizzle_steps = [row // 16 for _mode, row in ui.SWIZZLE_CHOICES]
    assert swizzle_steps == [8, 8, 4, 4, 2, 2]
    for fig, n_choices, n_values in (
        (ui.roofline_figure(), len(ui.ROOFLINE_CHOICES), [len(ui.ROOFLINE_INTENSITIES)] * len(ui.ROOFLINE_CHOICES)),
        (ui.coalescing_figure(), 6, [21] * 6),
        (ui.bank_conflict_figure(), 5, [24] * 5),
        (ui.swizzle_figure(), 6, swizzle_steps),
    ):
        assert len(fig.frames) == sum(n_values)
        assert len(fig.layout.updatemenus) == 1 and len(fig.layout.updatemenus[0].buttons) == n_choices
        assert len(fig.layout.sliders) == n_choices
        assert [len(sl.steps) for sl in fig.layout.sliders] == n_values
        assert all(st.method == "animate" for sl in fig.layout.sliders for st in sl.steps)
        assert {f.name for f in fig.frames} == {st.args[0][0] for sl in fig.layout.sliders for st in sl.steps}
        assert len(fig.to_json()) < 400_000  # page weight


def _frame(fig, choice, value):
    return next(f for f in fig.frames if f.name == f"{choice}:{value}")


def test_static_frames_carry_the_models_numbers():
    from widgets.ui import memory_hierarchy as ui

    fig = ui.coalescing_figure()
    strides = list(ui.COALESCING_STRIDES)
    for ci, (e, o) in enumerate(ui.COALESCING_CHOICES):
        for si, stride in enumerate(strides):
            f = _frame(fig, ci, si)
            assert len(f.data[0].y) == mh.warp_load_sectors(stride, e, o)
            assert mh.coalescing(stride, e, o).sectors == int(f.layout.title.subtitle.text.split()[0])
    assert (
        "1 sector (1 line"
        in _frame(fig, ui.COALESCING_CHOICES.index((1, 0)), strides.index(1)).layout.title.subtitle.text
    )
    fig = ui.bank_conflict_figure()
    strides = list(ui.BANK_STRIDES)
    assert "32 wavefronts" in _frame(fig, 0, strides.index(32)).layout.title.subtitle.text  # stride 32
    assert _frame(fig, 0, strides.index(33)).layout.title.subtitle.text.startswith("1 wavefront ")  # singular
    eight = ui.BANK_ELEM_BYTES.index(8)
    assert _frame(fig, eight, strides.index(33)).layout.title.subtitle.text.startswith(
        "2 wavefronts (ideal 2): conflict-free"
    )
    fig = ui.roofline_figure(intensities=[1.0, 1000.0])
    marker = _frame(fig, 0, 0).data[2]  # the H200 bf16 kernel marker
    assert marker.y[0] == pytest.approx(4.8)  # 1 FLOP/B x 4.8 TB/s, in TFLOP/s
    assert _frame(fig, 0, 1).data[2].y[0] == pytest.approx(989.4)
    fp8 = ui.ROOFLINE_CHOICES.index(("H200-SXM", "fp8"))
    assert _frame(fig, fp8, 1).data[2].y[0] == pytest.approx(1978.9)  # above the fp8 ridge (412): dense fp8 peak
    assert "0.5% of peak" in _frame(fig, 0, 0).layout.title.subtitle.text  # 4.8 / 989.4
    fig = ui.swizzle_figure()
    assert "8-way conflict" in _frame(fig, 0, 0).layout.title.subtitle.text
    assert "conflict-free" in _frame(fig, 1, 0).layout.title.subtitle.text
    heat = _frame(fig, 1, 0).data[0]  # 128B swizzle, chunk 0: row r lands in slot r (XOR with r)
    assert list(heat.y) == [f"row {r}" for r in range(7, -1, -1)]  # listed upwards: row 0 drawn on top
    assert [list(heat.z[list(heat.y).index(f"row {r}")]).index(1) for r in range(8)] == list(range(8))
    assert "chunk 3" in _frame(fig, 2, 3).layout.title.text and "3:4" not in {f.name for f in fig.frames}


def test_roofline_labels_are_plain_numbers():
    """The reader saw the slider say "3.16e+03" and the readout "1e+04 FLOP/B": every slider label
    and readout of the roofline figure is a plain number (thousands separated by commas)."""
    import re

    from widgets.ui import memory_hierarchy as ui

    assert ui.intensity_label(3162.3) == "3,162" and ui.intensity_label(1e4) == "10,000"
    assert ui.intensity_label(17.78) == "17.8" and ui.intensity_label(0.1) == "0.1"
    fig = ui.roofline_figure()
    labels = [st.label for sl in fig.layout.sliders for st in sl.steps]
    readouts = [f.layout.title.subtitle.text for f in fig.frames]
    assert "3,160" in labels and "10,000" in labels
    assert any(r.startswith("10,000 FLOP/B -> ") for r in readouts)
    for text in labels + readouts:
        assert not re.search(r"\de[+-]\d", text), text


def _texts(box):
    return " ".join(item for item in box.shown if isinstance(item, str))


def test_live_forms_recompute_and_show_errors():
    from widgets.ui import memory_hierarchy as ui

    roof = ui.roofline_calculator()
    roof.controls["intensity"].value = 1000
    assert "compute" in _texts(roof)
    roof.controls["gpu"].value = "A100-SXM-80GB"
    roof.controls["dtype"].value = "fp8"
    assert "Invalid input" in _texts(roof) and "fp8" in _texts(roof)

    coal = ui.coalescing_calculator()
    coal.controls["stride_elems"].value = 2
    assert "<b>50%</b>" in _texts(coal)

    bank = ui.bank_conflict_calculator()
    assert "<b>32</b>" in _texts(bank)
    bank.controls["padding_elems"].value = 1
    assert "<b>1</b>" in _texts(bank)


def test_exercise_checks_can_fail(capsys):
    from widgets.ui import memory_hierarchy as ui

    assert ui.check_padding(1) is True
    assert ui.check_padding(0) is False
    assert ui.check_padding(3) is False  # works, but not the smallest
    assert ui.check_padding(True) is False and ui.check_padding(2**70) is False and ui.check_padding(1.0) is False
    assert ui.check_sector_counter(lambda s, e, o: None) is False
    assert ui.check_sector_counter(lambda s, e, o: -(-32 * e // 32)) is False  # ignores the stride
    good = lambda s, e, o: len({((o + i * s) * e) // 32 for i in range(32)})  # noqa: E731
    assert ui.check_sector_counter(good) is True
    assert ui.check_sector_counter(lambda s, e, o: 1 / 0) is False
    out = capsys.readouterr().out
    assert "PASS" in out and "FAIL" in out


def test_hierarchy_table_lists_every_gpu():
    from widgets.ui import memory_hierarchy as ui

    html = ui.hierarchy_table()
    assert html.count("<tr>") == 1 + len(gpu_names()) and "H200-SXM" in html and "4.8 TB/s" in html
    assert html.count("not in the catalog") == 1  # only MI300X (not CUDA) lacks an L1 + shared size: every NVIDIA row has its arch's
    assert html.count("256 KiB") >= 2 * 3  # registers and L1 + shared on each Hopper/Blackwell row


def test_hierarchy_table_prints_the_datasheet_label_and_the_usable_memory():
    """Review finding 5: the NVIDIA H200 datasheet prints "141 GB" HBM3e and the device exposes 139.8 GiB
    (torch total_memory 150,109,880,320 B, the catalog's usable_memory_bytes); the table once printed
    "141 GiB". PCIe 5.0 x16 is 64 GB/s raw per direction, 63.0 GB/s after 128b/130b coding (PCI Express
    Base Specification 3.0, section 4.2.2)."""
    from widgets.ui import memory_hierarchy as ui

    html = ui.hierarchy_table(("H200-SXM", "MI300X"))
    assert "141 GB HBM3e (datasheet) · 139.8 GiB usable" in html and "141 GiB" not in html
    assert "192 GB HBM3 (datasheet)<" in html  # no usable figure in the catalog: none shown
    assert "64 GB/s raw (63 GB/s after encoding)" in html
    assert mh.pcie_encoded_bytes_per_s(64e9, 5) == pytest.approx(63.0e9, rel=1e-3)
    assert mh.pcie_encoded_bytes_per_s(32e9, 4) == pytest.approx(31.5e9, rel=1e-3)
    assert mh.pcie_encoded_bytes_per_s(8e9, 2) == pytest.approx(6.4e9)  # 8b/10b
    with pytest.raises(ValueError, match="pcie_gen"):
        mh.pcie_encoded_bytes_per_s(64e9, 6)


# ---------------------------------------------------------------------------------------------
# Experiments (CPU: Triton interpreter, small sizes)
# ---------------------------------------------------------------------------------------------
def test_experiments_run_scaled_down():
    from widgets.experiments import memory_hierarchy as exp

    bw = exp.measure_hbm_bandwidth(64 * 1024)
    assert bw.nbytes == 64 * 1024 and bw.triton_copy_bytes_per_s > 0 and bw.torch_sum_bytes_per_s > 0
    sweep = exp.measure_working_set_sweep([16 * 1024, 64 * 1024], read_per_launch_bytes=128 * 1024)
    assert [p.ws_bytes for p in sweep.points] == [16 * 1024, 64 * 1024]
    assert all(p.bytes_per_s > 0 for p in sweep.points)
    strided = exp.measure_strided_access((1, 2), n_elems=4096)
    assert isinstance(strided, exp.StridedAccess) and len(strided) == 2
    pts = strided.points
    assert pts[0].ratio == pytest.approx(1.0)
    # Per element read, stride 2 touches twice the sectors of stride 1 (on a GPU the stride-1 run
    # reads more elements than the others, so compare per element, not per run).
    assert pts[1].sector_model_time_s / pts[1].n_elems == pytest.approx(2 * pts[0].sector_model_time_s / pts[0].n_elems)
    with pytest.raises(ValueError, match="strides"):
        exp.measure_strided_access((0,))
    # the order reading near the L2 (0.9x to 1.25x of it; on the CPU, where l2_bytes is 0: the
    # largest size) uses the grid-strided order. On a GPU neither small size is near its L2.
    l2 = sweep.l2_bytes
    near = [64 * 1024] if l2 == 0 else [s for s in (16 * 1024, 64 * 1024) if 0.9 * l2 <= s <= 1.25 * l2]
    assert [p.ws_bytes for p in sweep.order_points] == near
    assert all(p.step == p.programs for p in sweep.order_points)


def test_reread_order_visits_every_chunk():
    """Review finding 2: with step = grid size and n_chunks a multiple of it (66 MiB = 4224 chunks
    = 4 x 1056 programs on the H200) each program cycled through 4 private chunks of the working
    set. reread_step picks a step coprime to n_chunks, so every program visits every chunk."""
    import math

    from widgets.experiments import memory_hierarchy as exp

    programs = 132 * 8
    for ws_mib in (56, 60, 62, 64, 66, 68, 72, 1024):
        n_chunks = ws_mib * 2**20 // (4 * 4096)
        step = exp.reread_step(n_chunks, programs)
        assert step >= programs and math.gcd(step, n_chunks) == 1
        for pid in (0, 1, programs - 1):
            assert len({(pid + i * step) % n_chunks for i in range(n_chunks)}) == n_chunks
    # the old order at 66 MiB: program 0 re-read the same 4 chunks, its private cycle
    assert len({(0 + i * programs) % 4224 for i in range(4224)}) == 4
    assert exp.reread_step(4224, programs) == 1057
    with pytest.raises(ValueError, match="n_chunks"):
        exp.reread_step(0, programs)


def test_recorded_h200_reference_meets_the_targets():
    """The committed H200 record, every ratio recomputed from the raw times: copy >= 90 % of
    torch's copy; an L2 plateau clearly above HBM; strided times within 25 % of the sector model
    calibrated on experiment 1's Triton read while lanes share sectors (strides < 16). Beyond, the
    64-B DRAM granule the ncu counters measured brings the model within 25 %."""
    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    ref = harness.load_reference("memory_hierarchy")
    prov = ref["provenance"]
    assert "H200" in prov["gpu"] and prov["driver"] and prov["torch"] and prov["date"] and prov["command"]
    assert an.copy_vs_torch(ref) >= 0.90
    plateau, hbm = an.l2_plateau_and_hbm_level(ref)
    assert plateau > 1.5 * hbm
    for p in an.strided_points(ref):
        if p["stride"] < 16:
            assert 0.75 <= p["time_s"] / p["calibrated_s"] <= 1.25, p
        else:
            assert p["time_s"] / p["calibrated_s"] > 1.5, p  # the sector model fails here ...
            assert 0.75 <= p["time_s"] / p["granule64_s"] <= 1.25, p  # ... the fitted granule does not (a fit)


# ---------------------------------------------------------------------------------------------
# What the chapter says about the hierarchy, checked against the catalog and the record
# ---------------------------------------------------------------------------------------------
def test_registers_are_not_the_largest_on_chip_memory():  # [HWP]
    """The chapter once said the register file is "the largest on-chip memory ... about half as
    much as its whole L2": the L2 is larger, and per SM registers equal the L1/shared array."""
    g = get_gpu("H200-SXM")
    regs_total = g.registers_per_sm_bytes * g.sms
    assert g.registers_per_sm_bytes == 256 * 1024 == mh.L1_SHARED_BYTES_PER_SM["sm_90"]
    assert regs_total < g.l2_bytes  # 33 MiB of registers vs a 60 MiB L2
    assert regs_total / g.l2_bytes == pytest.approx(0.55, abs=0.01)
    assert mh.L1_SHARED_BYTES_PER_SM["sm_80"] == 192 * 1024  # [AWP]


def test_blackwell_l1_and_mi300x_infinity_cache():  # review finding 10
    """cc 10.0 has a unified 256 KB L1/shared array per SM (CUDA C++ Programming Guide, compute
    capability 10.0), so the B200 row shows it, not "n/a"; the MI300X's 256 MB Infinity Cache (AMD CDNA 3
    white paper) is a named constant the chapter's footnote reads."""
    from widgets.ui import memory_hierarchy as ui

    assert mh.L1_SHARED_BYTES_PER_SM[get_gpu("B200").arch] == 256 * 1024
    html = ui.hierarchy_table(("B200",))
    assert "not in the catalog" not in html and html.count("256 KiB") >= 2
    assert mh.MEMORY_SIDE_CACHE_BYTES[get_gpu("MI300X").arch] == 256 * 2**20


def test_chapter_claims_fixed_by_the_review():
    """Review findings 6, 7, 2: a global-load intensity below the ridge decides nothing about HBM (HBM
    bytes <= global-load bytes); a read-only kernel beat the copy, so the copy is not every kernel's
    ceiling; the LRU claim had no source."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "memory_hierarchy.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "'below'} the HBM ridge" not in text and "not decided by this count" in text
    assert "Treat the *measured* copy bandwidth" not in text and "same mix of reads and writes" in text
    assert "LRU" not in text
    assert "aligned to the pattern's repeat" in text  # finding 9


def test_the_ladder_says_peak_or_measured():  # review finding 5
    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    rungs = an.ladder(harness.load_reference("memory_hierarchy"), get_gpu("H200-SXM"))
    assert [r["source"].split(":")[0] for r in rungs] == ["peak, derived", "measured", "measured", "peak"]
    assert "pinned" in rungs[-1]["source"] and "pageable" in rungs[-1]["source"]


def test_the_ladder_is_not_ten_times_per_rung():
    """The chapter once said each rung is "about ten times slower": the record says otherwise."""
    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    rungs = an.ladder(harness.load_reference("memory_hierarchy"), get_gpu("H200-SXM"))
    assert [r["level"] for r in rungs] == ["shared memory (all SMs)", "L2", "HBM", "host link (each way)"]
    ratios = [r["times_next"] for r in rungs[:-1]]
    assert 1.5 < ratios[1] < 3  # L2 over HBM: about 2x, not 10x
    assert 2 < ratios[0] < 6  # shared memory (derived) over the measured L2 plateau
    assert ratios[2] > 30  # HBM over PCIe
    assert rungs[-1]["times_next"] is None


# ---------------------------------------------------------------------------------------------
# The accuracy ledger: recomputed from the record, labelled honestly
# ---------------------------------------------------------------------------------------------
def test_accuracy_rows_of_the_committed_record():
    from widgets.accuracy import rows_for
    from widgets.experiments import harness

    ref = harness.load_reference("memory_hierarchy")
    rows = rows_for("memory_hierarchy", ref)
    labels = {r.label for r in rows}
    assert labels == {"prediction", "calibrated", "fit"}
    preds = [r for r in rows if r.label == "prediction"]
    assert len(preds) >= 10
    # HBM bandwidths against the datasheet: within 25 % (recomputed: 4.14 TB/s / 4.8 TB/s = 0.86)
    bw = [r for r in preds if r.unit == "B/s"]
    assert len(bw) == 5 and all(r.predicted == 4.8e12 for r in bw)
    assert all(0.75 <= r.ratio <= 1.0 for r in bw)
    copy = next(r for r in bw if "Triton copy" in r.quantity)
    assert copy.ratio == pytest.approx(ref["results"]["hbm_bandwidth"]["triton_copy_bytes_per_s"] / 4.8e12)
    # strided predictions (datasheet bandwidth): within 25 % while lanes share sectors, not beyond
    for r in preds:
        if r.unit == "s" and not r.quantity.startswith("Fusion"):  # fusion rows: tests/test_memory_hierarchy_depth.py
            stride = int(r.quantity.rsplit(" ", 1)[1])
            assert (0.75 <= r.ratio <= 1.25) == (stride < 16), r
    # calibrated on experiment 1's Triton read (review finding 4), so stride 1 is a comparison too
    cal = [r for r in rows if r.label == "calibrated" and "32-B sectors" in r.inputs]
    assert [int(r.quantity.rsplit(" ", 1)[1]) for r in cal] == [1, 2, 4, 8, 16, 32]
    read = ref["results"]["hbm_bandwidth"]["triton_read_bytes_per_s"]
    one = next(p for p in ref["results"]["strided_access"] if p["stride_elems"] == 1)
    assert cal[0].predicted == pytest.approx(one["n_elems"] * 4 / read)
    # the 64-B granule comes from the ncu counters of the SAME kernel at the SAME strides: a fit, so
    # it counts neither as a prediction nor as a calibration (review finding 2)
    granule = [r for r in rows if "64-B" in r.inputs]
    assert [int(r.quantity.rsplit(" ", 1)[1]) for r in granule] == [16, 32]
    assert all(r.label == "fit" and "ncu" in r.inputs for r in granule)
    assert not [r for r in rows if "granule" in r.inputs and r.label != "fit"]


def test_accuracy_rows_recompute_from_raw_times():
    """Doubling a measured time doubles its ratio: nothing is read from stored ratios."""
    import copy

    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    ref = harness.load_reference("memory_hierarchy")
    slow = copy.deepcopy(ref)
    for p in slow["results"]["strided_access"]:
        if p["stride_elems"] == 8:
            p["time_s"] *= 2
            p["ratio"] = 1.0  # a stale stored ratio must not matter
    before = {(r.label, r.quantity): r.ratio for r in an.accuracy_rows(ref)}
    after = {(r.label, r.quantity): r.ratio for r in an.accuracy_rows(slow)}
    key = ("prediction", "strided read time, stride 8")
    assert after[key] == pytest.approx(2 * before[key])
    # new-format fields (spread, NVML) are accepted alongside the old ones
    new = copy.deepcopy(ref)
    new["results"]["strided_gpu_monitor"] = {
        "sm_clock_hz": {"median": 1.98e9, "min": 1.9e9, "max": 1.98e9},
        "power_w": None,
        "samples": 3,
    }
    for p in new["results"]["strided_access"]:
        p.update(time_min_s=p["time_s"] * 0.99, time_max_s=p["time_s"] * 1.02, repeat=20)
        for k in ("ratio", "sector_model_time_s", "granule64_model_time_s", "useful_bytes_per_s"):
            p.pop(k, None)
    assert [r.ratio for r in an.accuracy_rows(new)] == pytest.approx([r.ratio for r in an.accuracy_rows(ref)])
    broken = copy.deepcopy(ref)
    del broken["results"]["hbm_bandwidth"]["torch_sum_bytes_per_s"]
    with pytest.raises(ValueError, match="torch_sum_bytes_per_s"):
        an.accuracy_rows(broken)


# ---------------------------------------------------------------------------------------------
# Hardware counters: the ncu record and its comparison with the model
# ---------------------------------------------------------------------------------------------
def test_bandwidth_spreads_bracket_the_medians():  # review finding 8: runs differ, show the spread
    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    ref = harness.load_reference("memory_hierarchy")
    medians, spreads = an.bandwidths(ref), an.bandwidth_spreads(ref)
    assert set(spreads) == set(medians)
    for label, (lo, hi) in spreads.items():
        assert lo <= medians[label] * (1 + 1e-12) and medians[label] <= hi * (1 + 1e-12), label
    old = {"results": {"hbm_bandwidth": {k: v for k, v in ref["results"]["hbm_bandwidth"].items() if k != "timings"}}}
    assert an.bandwidth_spreads(old) == {}


def test_plateau_window_leaves_out_small_and_near_l2_working_sets():
    """Review finding 3: the plateau is the median of 16 MiB to 0.95 x L2 (4 and 8 MiB still read
    faster; near the L2 the order matters), not of 4 MiB to L2/2."""
    import copy

    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    ref = harness.load_reference("memory_hierarchy")
    l2 = ref["results"]["working_set_sweep"]["l2_bytes"]
    plateau, hbm = an.l2_plateau_and_hbm_level(ref)
    fast = copy.deepcopy(ref)
    for p in fast["results"]["working_set_sweep"]["points"]:
        if p["ws_bytes"] < 16 * 2**20 or p["ws_bytes"] > 0.95 * l2:
            if p["ws_bytes"] < 8 * l2:
                p["time_s"] /= 10  # ten times faster outside the window: no effect on the plateau
    assert an.l2_plateau_and_hbm_level(fast) == pytest.approx((plateau, hbm))
    inside = [
        p["bytes_read"] / p["time_s"]
        for p in ref["results"]["working_set_sweep"]["points"]
        if 16 * 2**20 <= p["ws_bytes"] <= 0.95 * l2
    ]
    assert min(inside) <= plateau <= max(inside)
    assert all(w <= 8 * 2**20 for w, _ in an.small_working_set_rates(ref))


def test_near_l2_points_in_both_visiting_orders():
    """Review finding 2: the new record re-reads the sizes near the L2 in the old grid-strided order
    too (order_points); both appear, labelled; a failed optional reading is skipped."""
    import copy

    from widgets.experiments import harness
    from widgets.models import memory_hierarchy_records as an

    ref = copy.deepcopy(harness.load_reference("memory_hierarchy"))
    sweep = ref["results"]["working_set_sweep"]
    l2 = sweep["l2_bytes"]
    for p in sweep["points"]:
        p.update(step=1057, programs=1056)
    sweep["order_points"] = [
        dict(p, step=1056, time_s=2 * p["time_s"]) for p in sweep["points"] if 0.9 * l2 <= p["ws_bytes"] <= 1.25 * l2
    ] + [{"ws_bytes": 66 * 2**20, "error": "RuntimeError: out of resources"}]
    pts = an.near_l2_points(ref)
    assert {p["order"] for p in pts} == {"coprime step", "grid stride"}
    assert all(0.9 * l2 <= p["ws_bytes"] <= 1.25 * l2 for p in pts)
    by = {(p["ws_bytes"], p["order"]): p["bytes_per_s"] for p in pts}
    for (w, o), b in by.items():
        if o == "grid stride":
            assert b == pytest.approx(by[(w, "coprime step")] / 2)


def test_ncu_granule_from_the_counter_record():
    """Review finding 1: the 64-B DRAM granule is what the committed counter run measured (16 DRAM
    bytes per 4-B float at strides >= 16), the constant the calibrated granule rows use."""
    import json
    from pathlib import Path

    from widgets.models import memory_hierarchy_records as an

    path = Path(an.__file__).resolve().parents[1] / "data" / "h200" / "memory_hierarchy_ncu.json"
    assert an.ncu_granule_bytes(json.loads(path.read_text())) == pytest.approx(an.NCU_GRANULE_BYTES, abs=0.5)
    assert an.ncu_granule_bytes(_synthetic_ncu(dram_granule=32)) == pytest.approx(32)
    assert an.ncu_granule_bytes(_synthetic_ncu(strides=(1, 2, 4, 8))) is None


def _synthetic_ncu(strides=(1, 2, 4, 8, 16, 32, 64), n=2**20, dram_granule=64):
    """What the counters would read if L2 moved 32-B sectors and DRAM `dram_granule`-B ones."""
    points = []
    for s in strides:
        l2 = mh.strided_read_bytes(n, s) // 32
        dram = mh.strided_read_bytes(n, s, granule_bytes=dram_granule)
        points.append(
            {
                "stride": s,
                "n_elems": n,
                "metrics": {
                    "dram__sectors_read.sum": dram // 32,
                    "dram__bytes_read.sum": dram,
                    "lts__t_sectors_srcunit_tex_op_read.sum": l2,
                    "lts__t_sectors.sum": l2 + 100,
                },
            }
        )
    return {"provenance": {"gpu": "synthetic"}, "elem_bytes": 4, "points": points}


def test_ncu_comparison_on_a_synthetic_record():
    from widgets.models import memory_hierarchy_records as an

    rows = an.ncu_comparison(_synthetic_ncu())
    by = {r["stride"]: r for r in rows}
    assert [r["stride"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    assert by[1]["sector_model"] == 1.0 and by[2]["sector_model"] == 2.0 and by[8]["sector_model"] == 8.0
    assert by[16]["sector_model"] == 8.0 and by[16]["granule64_model"] == 16.0  # 32 B vs 64 B moved per 4 B
    for r in rows:
        assert r["l2_read_from_sms"] == pytest.approx(r["sector_model"])
        assert r["dram_bytes"] == pytest.approx(r["granule64_model"]) == pytest.approx(r["dram_sectors_x32"])
    # a 32-B DRAM would agree with the sector model instead: the comparison can tell them apart
    rows32 = an.ncu_comparison(_synthetic_ncu(dram_granule=32))
    assert {r["stride"] for r in rows32 if r["dram_bytes"] != pytest.approx(r["granule64_model"])} == {16, 32, 64}
    missing = _synthetic_ncu()
    del missing["points"][0]["metrics"]["lts__t_sectors.sum"]
    with pytest.raises(ValueError, match="lts__t_sectors.sum"):
        an.ncu_comparison(missing)
    nulled = _synthetic_ncu()
    nulled["points"][0]["metrics"]["dram__bytes_read.sum"] = None  # a counter ncu could not collect
    assert an.ncu_comparison(nulled)[0]["dram_bytes"] is None


@pytest.mark.parametrize("page", ["details", "raw"])
def test_ncu_script_parses_ncu_csv(tmp_path, page):
    """Run the ncu script with a stand-in `ncu` that writes the CSV layout of `--page details`
    (one row per metric, the script's default) or `--page raw` (one wide row)."""
    import json
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    from widgets.models import memory_hierarchy_records as an

    root = Path(__file__).resolve().parents[1]
    fake = tmp_path / "ncu"
    fake.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            """
            import sys
            args = sys.argv[1:]
            if args == ["--version"]:
                print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.0.0 (fake)")
                raise SystemExit
            log = args[args.index("--log-file") + 1]
            stride = int(args[args.index("--stride") + 1])
            n = int(args[args.index("--n-elems") + 1])
            l2 = n * 4 * min(stride, 8) // 32
            dram = n * 4 * min(stride, 16)
            names = ["dram__bytes_read.sum", "dram__sectors_read.sum", "lts__t_sectors.sum", "lts__t_sectors_srcunit_tex_op_read.sum"]
            units = ["byte", "sector", "sector", "sector"]
            vals = [f"{dram:,}", f"{dram // 32:,}", f"{l2 + 5:,}", f"{l2:,}"]
            with open(log, "w") as f:
                f.write("==PROF== Connected to process 1\\n")
                if args[args.index("--page") + 1] == "details":  # long layout: a row per metric
                    f.write('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\\n')
                    for m, u, v in zip(names, units, vals):
                        f.write(f'"0","strided_read_kernel","Command line profiler metrics","{m}","{u}","{v}"\\n')
                else:  # wide layout (--page raw): header, units, values
                    f.write(",".join(f'"{h}"' for h in ["ID", "Kernel Name"] + names) + "\\n")
                    f.write(",".join(f'"{u}"' for u in ["", ""] + units) + "\\n")
                    f.write(",".join(f'"{v}"' for v in ["0", "strided_read_kernel"] + vals) + "\\n")
            """
        )
    )
    fake.chmod(0o755)
    env = dict(
        os.environ,
        NCU=str(fake),
        OUT=str(tmp_path),
        N_ELEMS="100000",  # counts above 1,000: ncu's thousands separators must be parsed
        NCU_PAGE=page,
        STRIDES="1 2 16 64",
        PYTHON=sys.executable,
    )
    res = subprocess.run(
        ["bash", "benchmarks/h200/memory_hierarchy_ncu.sh", "abc123"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    rec = json.loads((tmp_path / "memory_hierarchy_ncu.json").read_text())
    assert rec["provenance"]["git_commit"] == "abc123" and "fake" in rec["provenance"]["ncu"]
    assert rec["provenance"]["command"] == "bash benchmarks/h200/memory_hierarchy_ncu.sh abc123"
    rows = {r["stride"]: r for r in an.ncu_comparison(rec)}
    assert rows[1]["dram_bytes"] == 1.0 and rows[16]["dram_bytes"] == 16.0 and rows[64]["dram_bytes"] == 16.0
    assert rows[2]["l2_read_from_sms"] == pytest.approx(2.0) and rows[64]["l2_read_from_sms"] == pytest.approx(8.0)


# ---------------------------------------------------------------------------------------------
# Properties (hypothesis): finite in -> finite out or ValueError; monotone where physics says so
# ---------------------------------------------------------------------------------------------
_anything = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)


@given(_anything, _anything, _anything, _anything)
def test_roofline_functions_never_return_non_finite(a, b, c, d):
    import math

    for call in (
        lambda: mh.arithmetic_intensity(a, b),
        lambda: mh.ridge_intensity(a, b),
        lambda: mh.attainable_flop_per_s(a, b, c),
        lambda: mh.roofline_time_s(a, b, c, d),
        lambda: mh.working_set_bytes_per_s(a, b, c, d),
        lambda: mh.smem_bytes_per_s(a, b),
    ):
        try:
            out = call()
        except ValueError:
            continue
        assert math.isfinite(out)


@given(_anything, _anything, _anything)
def test_integer_functions_reject_or_answer_exactly(a, b, c):
    for call in (
        lambda: mh.warp_load_sectors(a, b, c),
        lambda: mh.bank_conflict_wavefronts(a, b),
        lambda: mh.strided_read_bytes(a, b, c),
        lambda: mh.tma_swizzle_offset(a, b),
        lambda: mh.tiled_matmul_global_bytes(a, b, c, 16),
    ):
        try:
            out = call()
        except ValueError:
            continue
        assert isinstance(out, int) and out >= 0


@given(st.integers(1, 2**40), st.integers(1, 2**40), st.integers(1, 2**20), st.sampled_from(mh.ELEM_BYTES))
def test_more_elements_never_move_fewer_bytes(n1, n2, stride, elem):
    lo, hi = sorted((n1, n2))
    assert mh.strided_read_bytes(lo, stride, elem) <= mh.strided_read_bytes(hi, stride, elem)
    assert mh.strided_read_bytes(hi, stride, elem) >= hi * elem  # never less than the bytes asked for


_bytes = st.one_of(st.just(0.0), st.floats(1e-9, 1e20))


@given(_bytes, _bytes, st.floats(1e6, 1e18), st.floats(1e6, 1e15))
def test_more_bytes_never_take_less_time(b1, b2, peak, bw):
    lo, hi = sorted((b1, b2))
    assert mh.roofline_time_s(1e12, lo, peak, bw) <= mh.roofline_time_s(1e12, hi, peak, bw)


@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 512))
def test_bigger_tiles_never_load_more(t1, t2, n):
    lo, hi = sorted((t1, t2))
    assert mh.tiled_matmul_global_bytes(n, n, n, hi) <= mh.tiled_matmul_global_bytes(n, n, n, lo)


def test_ladder_diagram_is_drawn_from_the_catalog_and_record():
    """book/figures/memory_hierarchy_ladder.svg is what `ui.ladder_svg` draws today (regenerate with
    `python -c "from widgets.ui import memory_hierarchy as u; u.write_ladder_svg()"` after a record
    or catalog change), with a title, a description, a viewBox and text >= 12 px at 360 px."""
    import re
    from pathlib import Path

    from widgets.experiments import harness
    from widgets.ui import memory_hierarchy as ui

    path = Path(__file__).resolve().parents[1] / ui.LADDER_SVG
    svg = path.read_text()
    assert svg == ui.ladder_svg(harness.load_reference("memory_hierarchy")), (
        "the ladder SVG is stale (new record or catalog): regenerate it with "
        'python -c "from widgets.ui import memory_hierarchy as u; u.write_ladder_svg()"'
    )
    assert "<title" in svg and "<desc" in svg and 'viewBox="0 0 360 ' in svg
    assert min(int(s) for s in re.findall(r'font-size="(\d+)"', svg)) >= 12
    # every line fits the panel: in a wide font (DejaVu Sans, Chromium at 360 px) the bold title
    # took 0.66 em per character and the 12-px subtitle 0.5 em (the reader saw "Where the bytes
    # come from: H200-SX" cut off: 35 bold characters need ~370 units)
    for x, size, bold, text in re.findall(
        r'<text x="(\d+)" y="[\d.]+" font-size="(\d+)"( font-weight="700")?[^>]*>([^<]*)</text>', svg
    ):
        em = 0.66 if bold else 0.52
        assert int(x) + len(text) * int(size) * em <= 358, f"{text!r} may not fit the 360-unit panel"
    g = get_gpu("H200-SXM")
    assert "60 MiB" in svg and "33 MiB in all" in svg and "256 KiB per SM" in svg
    assert g.l2_bytes == 60 * 2**20


def test_monitor_and_spread_lines():
    from widgets.models import memory_hierarchy_records as an

    assert an.monitor_line(None) is None and an.monitor_line({"sm_clock_hz": None, "power_w": None}) is None
    line = an.monitor_line(
        {
            "sm_clock_hz": {"median": 1.98e9, "min": 1.755e9, "max": 1.98e9},
            "power_w": {"median": 455.0, "min": 300.0, "max": 520.0},
            "samples": 40,
        }
    )
    assert (
        line
        == "During these runs NVML read SM clock 1,980 MHz (median; 1,755 to 1,980) and board power 455 W (300 to 520), 40 samples."
    )
    assert an.spread_s({"time_min_s": 1.0, "time_max_s": 2.0}) == (1.0, 2.0)
    assert an.spread_s({"time_s": 1.0}) is None and an.spread_s({"time_min_s": 0.0, "time_max_s": 0.0}) is None


def test_ncu_script_fails_clearly_without_counters(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    fake = tmp_path / "ncu"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "a = sys.argv[1:]\n"
        "open(a[a.index('--log-file') + 1], 'w').write('==ERROR== ERR_NVGPUCTRPERM - no permission to access counters\\n')\n"
    )
    fake.chmod(0o755)
    env = dict(os.environ, NCU=str(fake), OUT=str(tmp_path), STRIDES="1", PYTHON=sys.executable)
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run(
        ["bash", "benchmarks/h200/memory_hierarchy_ncu.sh", "abc"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode != 0 and "ERR_NVGPUCTRPERM" in res.stderr
    assert not (tmp_path / "memory_hierarchy_ncu.json").exists()


def test_the_chapters_swizzle_exercise_solution():
    """The numbers in the solution of exercise mh-ex-swizzle (derived by hand there)."""
    assert mh.tma_swizzle_offset(2 * 64 + 16, 64) == 128
    assert mh.tma_column_wavefronts(64, 64, chunk=1) == 4
    assert mh.tma_column_wavefronts(0, 64, chunk=1) == 16


def test_gpu_monitor_samples_while_the_block_runs(monkeypatch):
    """The NVML sampler (GPU path) with a stand-in reader; on a CPU it records None."""
    import time

    from widgets.experiments import harness
    from widgets.experiments import memory_hierarchy as exp

    with exp.GpuMonitor() as cpu:
        pass
    if not harness.on_gpu():
        assert cpu.summary() is None
    readings = iter(range(10**6))
    monkeypatch.setattr(harness, "on_gpu", lambda: True)
    monkeypatch.setattr(
        exp.GpuMonitor, "_reader", staticmethod(lambda: lambda: (1.7e9 + 1e6 * (next(readings) % 3), 400.0))
    )
    with exp.GpuMonitor(interval_s=0.001) as mon:
        time.sleep(0.05)
    s = mon.summary()
    assert s["samples"] >= 3 and s["sm_clock_hz"]["min"] == 1.7e9 and s["sm_clock_hz"]["max"] == 1.702e9
    assert s["power_w"] == {"median": 400.0, "min": 400.0, "max": 400.0}
    import json

    json.dumps(s, allow_nan=False)  # strict JSON
