"""The memory-hierarchy chapter's depth sections: kernel fusion, the transpose, bytes in flight,
the L2 persistence window, register spills, the measured compute ceiling.

Expected values are derived by hand in each test (the derivation is in the comment) or come from
the published source named beside them.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from widgets.models import memory_hierarchy as mh

H200_HBM = 4.8e12  # B/s, NVIDIA H200 datasheet
H200_SMS, H200_CLOCK = 132, 1.98e9


# --------------------------------------------------------------------------------------------
# Kernel fusion
# --------------------------------------------------------------------------------------------
def test_two_cosines_fused_halve_the_bytes():
    # Horace He, "Making Deep Learning Go Brrrr From First Principles" (2022),
    # https://horace.io/brrr_intro.html, "Operator fusion": x.cos().cos() eagerly does 2 global
    # reads and 2 global writes; fused, 1 read and 1 write: half the memory traffic, twice as fast
    # when memory-bound.
    n = 10**8
    eager = mh.elementwise_chain_bytes(n, 2, 4)
    fused = mh.elementwise_chain_bytes(n, 2, 4, fused=True)
    assert (eager, fused) == (4 * n * 4, 2 * n * 4)
    assert mh.fusion_estimate(n, 2, H200_HBM).speedup == pytest.approx(2.0)


def test_fusion_estimate_by_hand():
    # 1 GiB of fp32 (2**28 elements), 4 ops: eager moves 4 x 2 x 1 GiB = 8 GiB, fused 2 GiB.
    n = 2**28
    f = mh.fusion_estimate(n, 4, H200_HBM, launch_s=10e-6)
    assert f.eager_bytes == 8 * 2**30 and f.fused_bytes == 2 * 2**30
    assert f.eager_s == pytest.approx(8 * 2**30 / H200_HBM + 4 * 10e-6)
    assert f.fused_s == pytest.approx(2 * 2**30 / H200_HBM + 10e-6)
    assert (f.eager_launches, f.fused_launches) == (4, 1)
    # A tiny tensor is launch-bound: the speed-up tends to the number of launches saved.
    tiny = mh.fusion_estimate(1024, 4, H200_HBM, launch_s=10e-6)
    assert tiny.speedup == pytest.approx(4.0, rel=1e-3)
    # One op: fusion changes nothing.
    assert mh.fusion_estimate(n, 1, H200_HBM).speedup == 1.0


@pytest.mark.parametrize("bad", [dict(n_ops=0), dict(n_ops=5000), dict(n_elems=0), dict(elem_bytes=3), dict(fused="yes")])
def test_chain_bytes_rejects(bad):
    kwargs = dict(n_elems=1024, n_ops=4, elem_bytes=4, fused=False) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        mh.elementwise_chain_bytes(**kwargs)


# --------------------------------------------------------------------------------------------
# The transpose
# --------------------------------------------------------------------------------------------
def test_transpose_sectors_and_wavefronts_by_hand():
    n = 4096
    warps = n * n // 32
    copy_c = mh.transpose_cost(n, "copy", H200_HBM, 9e12, H200_SMS, H200_CLOCK)
    naive = mh.transpose_cost(n, "naive", H200_HBM, 9e12, H200_SMS, H200_CLOCK)
    tiled = mh.transpose_cost(n, "tiled", H200_HBM, 9e12, H200_SMS, H200_CLOCK)
    padded = mh.transpose_cost(n, "padded", H200_HBM, 9e12, H200_SMS, H200_CLOCK)
    # Coalesced: a warp's 32 floats are 128 B = 4 sectors (CUDA C++ Best Practices Guide, 9.2.1);
    # the naive write puts each lane 4096 x 4 B apart: one 32-B sector per lane, 32 per warp.
    assert copy_c.l2_bytes == warps * (4 + 4) * 32 == 2 * n * n * 4
    assert naive.l2_bytes == warps * (4 + 32) * 32 == 9 * n * n * 4
    # The control (strided reads, coalesced writes), with no L1 reuse: the naive kernel's sectors, read side.
    naive_read = mh.transpose_cost(n, "naive_read", H200_HBM, 9e12, H200_SMS, H200_CLOCK)
    assert naive_read.l2_bytes == naive.l2_bytes and naive_read.smem_wavefronts == 0
    # Every kernel moves the matrix once in and once out of HBM.
    assert {c.hbm_bytes for c in (copy_c, naive, tiled, padded)} == {2 * n * n * 4}
    # Shared memory (CUDA C++ Programming Guide, "Shared Memory", 32 banks of 4 B): a tile row is
    # one wavefront; a tile column of a 32-wide tile is a 32-way conflict, of a 33-wide one none.
    assert tiled.smem_wavefronts == warps * (1 + 32)
    assert padded.smem_wavefronts == warps * (1 + 1)
    assert copy_c.smem_wavefronts == naive.smem_wavefronts == 0


def test_transpose_bounds_and_ratios():
    hbm, l2 = 4.0e12, 8.0e12
    c = {k: mh.transpose_cost(8192, k, hbm, l2, H200_SMS, H200_CLOCK) for k in mh.TRANSPOSE_KINDS}
    assert c["copy"].bound == "HBM" and c["padded"].bound == "HBM"
    assert c["copy"].time_s == pytest.approx(2 * 8192**2 * 4 / hbm)
    # naive: 9 n^2 e bytes of sectors at the L2 against 2 n^2 e at HBM: 9/2 x hbm/l2 = 2.25
    assert c["naive"].bound == "L2"
    assert c["naive"].time_s / c["copy"].time_s == pytest.approx(9 / 2 * hbm / l2)
    # tiled: 33 wavefronts per 32 elements, one per SM per clock, against 8 B per element at HBM
    assert c["tiled"].bound == "shared memory"
    expected = (33 / 32) / (H200_SMS * H200_CLOCK) / (8 / hbm)
    assert c["tiled"].time_s / c["copy"].time_s == pytest.approx(expected)
    assert c["padded"].time_s == c["copy"].time_s
    # the XOR swizzle: the padded kernel's wavefronts without its 33rd column
    assert c["swizzled"].smem_wavefronts == c["padded"].smem_wavefronts and c["swizzled"].bound == "HBM"


def test_transpose_tile_wavefronts_by_hand():
    # Row store: lane i writes word r*W + col(r, i); column load: lane i reads word i*W + col(i, c).
    # tiled (W = 32): the column's words are 32 apart, all in bank c: 32 wavefronts.
    # padded (W = 33): i*33 + c = i + c (mod 32): 32 banks, 1 wavefront.
    # swizzled (W = 32, col = c XOR r): bank (c XOR i), distinct for distinct i: 1 wavefront; the row
    # store puts lane i in bank (i XOR r), also distinct: 1.
    for r in range(32):
        assert mh.transpose_tile_wavefronts("tiled", r, r) == (1, 32)
        assert mh.transpose_tile_wavefronts("padded", r, 31 - r) == (1, 1)
        assert mh.transpose_tile_wavefronts("swizzled", r, (5 * r) % 32) == (1, 1)
    with pytest.raises(ValueError, match="kind"):
        mh.transpose_tile_wavefronts("naive")
    with pytest.raises(ValueError, match="row"):
        mh.transpose_tile_wavefronts("tiled", row=32)


@pytest.mark.parametrize("bad", [dict(n=48), dict(n=16), dict(kind="diagonal"), dict(elem_bytes=8), dict(sms=0)])
def test_transpose_rejects(bad):
    kwargs = dict(n=1024, kind="naive", hbm_bytes_per_s=H200_HBM, l2_bytes_per_s=9e12, sms=132, clock_hz=1.98e9) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        mh.transpose_cost(**kwargs)


# --------------------------------------------------------------------------------------------
# Bytes in flight, L2 persistence, spills
# --------------------------------------------------------------------------------------------
def test_littles_law_by_hand():
    # 4.8e12 B/s x 600e-9 s = 2.88e6 B in flight over the GPU; per SM / 132 = 21,818 B
    assert mh.littles_law_bytes_in_flight(4.8e12, 600e-9) == pytest.approx(2.88e6)
    b = mh.bytes_in_flight(4.8e12, 600e-9, 132, warps_per_sm=64, load_bytes_per_thread=4)
    assert b.needed_per_sm_bytes == pytest.approx(2.88e6 / 132)
    assert b.register_path_bytes == 64 * 32 * 4  # 8 KiB: one float per thread, full occupancy
    assert b.register_fraction == pytest.approx(8192 / (2.88e6 / 132))
    assert b.stages_needed == 1 and b.stages_fit
    # Few warps, 4-byte loads: 8 warps x 32 x 4 B = 1 KiB; 4 KiB stages: ceil(21818 / 4096) = 6
    few = mh.bytes_in_flight(4.8e12, 600e-9, 132, warps_per_sm=8, load_bytes_per_thread=4, stage_bytes=4096)
    assert few.register_path_bytes == 1024 and few.stages_needed == 6
    # ILP multiplies what registers hold in flight
    ilp = mh.bytes_in_flight(4.8e12, 600e-9, 132, warps_per_sm=8, load_bytes_per_thread=4, loads_in_flight_per_thread=4)
    assert ilp.register_path_bytes == 4 * few.register_path_bytes
    assert not mh.bytes_in_flight(4.8e12, 600e-9, 1, stage_bytes=2**20, smem_per_sm_bytes=2**20).stages_fit


def test_l2_persistence_by_hand():
    mib = 2**20
    # Window covers the whole 40 MiB working set, carve-out 30 MiB, hitRatio 1: 30 of 40 kept.
    assert mh.l2_persisting_hit_fraction(40 * mib, 40 * mib, 30 * mib) == pytest.approx(0.75)
    # The Programming Guide's rule hitRatio = carve-out / window marks exactly what fits.
    assert mh.l2_persisting_hit_fraction(40 * mib, 40 * mib, 30 * mib, hit_ratio=0.75) == pytest.approx(0.75)
    # A window over half the working set, everything marked fits: half kept.
    assert mh.l2_persisting_hit_fraction(40 * mib, 20 * mib, 30 * mib) == pytest.approx(0.5)
    assert mh.l2_persisting_hit_fraction(40 * mib, 40 * mib, 0) == 0.0
    with pytest.raises(ValueError, match="hit_ratio"):
        mh.l2_persisting_hit_fraction(1.0, 1.0, 1.0, hit_ratio=1.5)


def test_spill_traffic_by_hand():
    # 1000 threads, 8 B stored and 8 B loaded per pass, 10 passes: 160,000 B
    assert mh.spill_traffic_bytes(1000, 8, 8, 10) == 160_000
    assert mh.spill_traffic_bytes(1000, 0, 0) == 0
    with pytest.raises(ValueError, match="threads"):
        mh.spill_traffic_bytes(0, 8, 8)


# --------------------------------------------------------------------------------------------
# Experiments (CPU: the Triton interpreter and numba's simulator, tiny sizes)
# --------------------------------------------------------------------------------------------
def _with(record: dict, key: str, value: dict) -> dict:
    rec = copy.deepcopy(record)
    rec["results"][key] = value
    return rec


@pytest.fixture(scope="module")
def ref():
    from widgets import book

    return book.reference("memory_hierarchy")


def test_fusion_experiment_runs_and_round_trips(ref):
    from widgets.experiments import harness
    from widgets.experiments import memory_hierarchy_fusion as fx

    r = fx.measure_fusion(n_elems=2048, chain_ops=(1, 4), sizes=(1024,), repeat=2)
    plain = json.loads(json.dumps(r.to_record()))
    assert fx.FusionResult.from_record(plain) == r
    assert [p.n_ops for p in r.chain_sweep] == [1, 4]
    for p in r.chain_sweep + r.size_sweep:
        assert isinstance(p.eager, fx.Spread) and isinstance(p.triton_fused, fx.Spread)
        assert p.triton_max_abs_error is not None and p.triton_max_abs_error < 1e-5  # same result as eager torch
    if not harness.on_gpu():  # compile is skipped on a CPU, with the reason
        assert isinstance(r.chain_sweep[1].compiled, harness.Failed) and "no GPU" in r.chain_sweep[1].compiled.error
    rec = _with(ref, "fusion", plain)
    rows = fx.accuracy_rows(rec)
    assert {row.label for row in rows} == {"prediction", "calibrated"}
    assert fx.fusion_result(_with(ref, "fusion", {"error": "RuntimeError: x"})) is None
    assert fx.fusion_result(ref) is None or "fusion" in ref["results"]


def test_fusion_rows_recompute_from_times(ref):
    from widgets.experiments import memory_hierarchy_fusion as fx

    bw = 4.0e12
    n = 2**20
    # Times made exactly what the model says: every ratio must be 1; a wrong model would not be.
    pts = []
    for k in (1, 4):
        est = mh.fusion_estimate(n, k, bw)
        pts.append({"n_elems": n, "n_ops": k,
                    "eager": {"median_s": est.eager_s, "min_s": est.eager_s, "max_s": est.eager_s, "repeat": 1},
                    "triton_fused": {"median_s": est.fused_s, "min_s": est.fused_s, "max_s": est.fused_s, "repeat": 1},
                    "compiled": {"error": "RuntimeError: no compiler"}})
    rec = _with(ref, "fusion", {"n_elems": n, "elem_bytes": 4, "device": "test", "interpreted": False, "chain_sweep": pts})
    rows = fx.fusion_rows(rec, bw)
    assert [r["eager_s"] / r["model_eager_s"] for r in rows] == pytest.approx([1.0, 1.0])
    assert [r["triton_fused_bytes_per_s"] for r in rows] == pytest.approx([bw, bw])
    assert rows[1]["compiled_s"] is None and "no compiler" in rows[1]["compiled_error"]
    cal = [r for r in fx.accuracy_rows(rec, copy_bytes_per_s=bw) if r.label == "calibrated"]
    assert len(cal) == 2 and all(r.ratio == pytest.approx(1.0) for r in cal)  # the 4-op chain: eager and fused
    assert {r.quantity.split(",")[0] for r in cal} == {"Fusion: 4-op chain"}
    assert len([r for r in fx.accuracy_rows(rec) if r.label == "prediction"]) == 4  # every length, each way that ran


@pytest.mark.slow
def test_transpose_kernels_are_correct_in_the_simulator(ref):
    from widgets.experiments import harness
    from widgets.experiments import memory_hierarchy_transpose as tx

    r = tx.measure_transpose(n=64)  # the default: one launch per kernel in the simulator, ten on a GPU
    assert set(r.kernels) == set(tx.KINDS)
    for kind, k in r.kernels.items():
        assert isinstance(k, tx.TransposeKernel), (kind, k)
        assert k.correct, kind
        assert k.repeat == (1 if tx.SIMULATED else 10), (kind, k.repeat)
    plain = json.loads(json.dumps(r.to_record()))
    assert tx.TransposeResult.from_record(plain) == r
    rows = tx.transpose_rows(_with(ref, "transpose", plain), 4e12, 8e12, 132, 1.98e9)
    assert [row["kind"] for row in rows] == list(tx.KINDS)
    assert rows[0]["measured_vs_copy"] == 1.0 and rows[0]["model_vs_copy"] == 1.0
    if not harness.on_gpu():
        assert r.simulated


def test_transpose_accuracy_rows_recompute(ref):
    from widgets.experiments import memory_hierarchy_transpose as tx
    from widgets.models import memory_hierarchy_records as an

    n = 8192
    hbm = an.bandwidths(ref)["Triton copy (read + write)"]
    l2 = an.l2_plateau_and_hbm_level(ref)[0]
    prov = ref["provenance"]
    clock = prov["clock_power"]["max_sm_clock_hz"]
    kernels = {}
    for kind in tx.KINDS:  # times exactly the model's: ratios of 1
        t = mh.transpose_cost(n, kind, hbm, l2, prov["sms"], clock).time_s
        kernels[kind] = {"median_s": t, "min_s": t, "max_s": t, "repeat": 1, "correct": True}
    kernels["tiled"]["correct"] = False  # a wrong result is never compared
    rec = _with(ref, "transpose", {"n": n, "elem_bytes": 4, "device": "x", "simulated": False, "timing_note": "", "kernels": kernels})
    rows = [r for r in tx.accuracy_rows(rec) if r.label == "calibrated"]  # (the ncu counter rows are predictions)
    assert [r.quantity.split(", ")[1].split(":")[0] for r in rows] == ["copy", "copy_ilp", "naive", "naive_read", "padded", "swizzled"]
    assert all(r.ratio == pytest.approx(1.0) for r in rows)
    assert [r for r in tx.accuracy_rows(_with(ref, "transpose", {"error": "x"})) if r.label == "calibrated"] == []
    # A numba copy slower than the Triton one: the measured ratio to it and the model calibrated on it share
    # that denominator; the model's ratio to its own (Triton-rate) copy does not.
    kernels["copy"] = dict(kernels["copy"], median_s=kernels["copy"]["median_s"] * 1.35)
    rec = _with(ref, "transpose", {"n": n, "elem_bytes": 4, "device": "x", "simulated": False, "timing_note": "", "kernels": kernels})
    by = {r["kind"]: r for r in tx.transpose_rows(rec, hbm, l2, prov["sms"], clock)}
    assert by["copy"]["measured_vs_model"] == pytest.approx(1.35) and by["naive"]["measured_vs_model"] == pytest.approx(1.0)
    here = mh.transpose_cost(n, "padded", hbm / 1.35, l2, prov["sms"], clock).time_s
    assert by["padded"]["model_here_vs_copy"] == pytest.approx(here / (kernels["copy"]["median_s"]))
    assert by["padded"]["model_vs_copy"] == pytest.approx(1.0) and by["padded"]["model_here_vs_copy"] == pytest.approx(1.0)


def test_topic_accuracy_rows_include_depth_rows_when_present(ref):
    from widgets.experiments import memory_hierarchy as exp

    base = len(exp.accuracy_rows(ref))
    assert base > 0
    assert math.isfinite(base)


# --------------------------------------------------------------------------------------------
# Calculators and exercise checks
# --------------------------------------------------------------------------------------------
def test_fusion_figure_matches_the_model():
    from widgets.hardware import get_gpu
    from widgets.ui import memory_hierarchy as ui

    fig = ui.fusion_figure(gpus=("H200-SXM",), sizes=(2**20, 2**28), ops=(1, 4, 8), launch_s=5e-6)
    assert len(fig.data) == 2
    bw = get_gpu("H200-SXM").hbm_bytes_per_s
    eager, fused = fig.data[0].y, fig.data[1].y  # the page opens on 2**28 elements
    assert list(eager) == pytest.approx([mh.fusion_estimate(2**28, k, bw, launch_s=5e-6).eager_s for k in (1, 4, 8)])
    assert list(fused) == pytest.approx([2 * 2**28 * 4 / bw + 5e-6] * 3)
    assert "4.0x" in ui.fusion_summary("H200-SXM", 2**28)
    with pytest.raises(ValueError, match="launch_s"):
        ui.fusion_figure(launch_s=-1.0)


def test_inflight_figure_bars():
    from widgets.hardware import get_gpu
    from widgets.ui import memory_hierarchy as ui

    fig = ui.inflight_figure(gpus=("H200-SXM",), latencies_ns=(600,))
    bars = fig.data[0]
    g = get_gpu("H200-SXM")
    assert bars.x[0] == pytest.approx(g.hbm_bytes_per_s * 600e-9 / g.sms / 1024)
    assert bars.x[2] == pytest.approx(64 * 32 * 4 / 1024)  # one float per thread, 64 warps
    assert list(bars.x[-3:]) == [32.0, 48.0, 64.0]  # 2, 3, 4 stages of 16 KiB


def test_exercise_checks_pass_and_fail():
    from widgets import book
    from widgets.hardware import get_gpu
    from widgets.ui import memory_hierarchy as ui

    assert ui.check_fusion_bytes(3 * 2 * 2**26 * 2, 2 * 2**26 * 2) is True
    assert ui.check_fusion_bytes(2 * 2**26 * 2, 2 * 2**26 * 2) is False  # one round trip, not three
    assert ui.check_fusion_bytes(None, None) is False
    assert ui.check_transpose_wavefronts(32, 32, 1) is True
    assert ui.check_transpose_wavefronts(4, 32, 1) is False and ui.check_transpose_wavefronts(32, 1, 1) is False
    h100 = get_gpu("H100-SXM")
    kib = h100.hbm_bytes_per_s * 700e-9 / h100.sms / 1024
    assert ui.check_bytes_in_flight(kib) is True
    assert ui.check_bytes_in_flight(kib * 132) is False and ui.check_bytes_in_flight("17") is False
    tc, mhr = book.reference("tensor_cores"), book.reference("memory_hierarchy")
    ridge = ui.measured_ridge(tc, mhr)
    assert ridge == pytest.approx(ui.measured_gemm_flop_per_s(tc) / mhr["results"]["hbm_bandwidth"]["triton_copy_bytes_per_s"])
    assert ui.check_measured_ridge(ridge, tc, mhr) is True
    assert ui.check_measured_ridge(989.4e12 / 4.8e12 * 2, tc, mhr) is False


def test_measured_gemm_rate_is_the_best_bf16_row():
    from widgets.ui import memory_hierarchy as ui

    rec = {"results": {"throughput": [{"dtype": "bf16", "flop_per_s": 7e14}, {"dtype": "bf16", "flop_per_s": 8e14},
                                      {"dtype": "fp8", "flop_per_s": 1.3e15}, {"dtype": "bf16", "flop_per_s": None}]}}
    assert ui.measured_gemm_flop_per_s(rec) == 8e14
    assert ui.measured_gemm_flop_per_s(rec, "fp32") is None
    assert ui.measured_gemm_flop_per_s({"results": {}}) is None
    # a faster GEMM on all-zero operands is not a ceiling for real data: left out (review finding 1)
    rec["results"]["throughput"].append({"dtype": "bf16", "data": "zeros", "flop_per_s": 9e14})
    assert ui.measured_gemm_flop_per_s(rec) == 8e14


def test_measured_ceiling_takes_random_operands_only():
    """Review finding 1: the H200 record's fastest bf16 GEMM ran on all-zero operands (866.6 TFLOP/s,
    widgets/data/h200/tensor_cores.json, row "data": "zeros"); on random operands the same n = 8192 GEMM
    ran at 767.6 TFLOP/s, 78 % of the 989.4 TFLOP/s dense peak (NVIDIA H200 datasheet)."""
    from widgets import book
    from widgets.models import memory_hierarchy_records as an

    tc, mhr = book.reference("tensor_cores"), book.reference("memory_hierarchy")
    bf16 = [r for r in tc["results"]["throughput"] if r["dtype"] == "bf16"]
    zeros = max(r["flop_per_s"] for r in bf16 if r.get("data") == "zeros")
    best = an.measured_gemm_flop_per_s(tc)
    assert best < zeros  # the record still holds the faster zero-operand row; it is not taken
    assert best == max(r["flop_per_s"] for r in bf16 if r.get("data", "randn") == "randn")
    assert best == pytest.approx(767.6e12, rel=1e-3) and best / 989.4e12 == pytest.approx(0.776, abs=0.005)
    copy = an.bandwidths(mhr)["Triton copy (read + write)"]
    assert an.measured_ridge(tc, mhr) == pytest.approx(best / copy)
    assert an.measured_ridge(tc, mhr) < 989.4e12 / 4.8e12  # the GEMM lost more than the copy: the ridge moved down
    read = an.bandwidths(mhr)["Triton read (reduction)"]
    assert an.measured_ridge(tc, mhr, kernel="Triton read (reduction)") == pytest.approx(best / read)


def test_topic_results_read_depth_fields(ref):
    from widgets.experiments import harness
    from widgets.experiments import memory_hierarchy as exp

    rec = copy.deepcopy(ref["results"])
    rec.pop("fusion", None)
    rec.pop("transpose", None)
    assert exp.MemoryHierarchyResults.from_record(rec).fusion is None  # an older record: no fusion field
    rec["fusion"] = {"error": "RuntimeError: out of memory"}
    rec["transpose"] = {"n": 64, "elem_bytes": 4, "device": "x", "simulated": True, "timing_note": "",
                        "kernels": {"copy": {"median_s": 1.0, "min_s": 1.0, "max_s": 1.0, "repeat": 1, "correct": True},
                                    "naive": {"error": "CudaAPIError: launch failed"}}}
    r = exp.MemoryHierarchyResults.from_record(rec)
    assert isinstance(r.fusion, harness.Failed) and "out of memory" in r.fusion.error
    assert isinstance(r.transpose.kernels["naive"], harness.Failed)
    assert json.loads(json.dumps(r.to_record()))["fusion"] == {"error": "RuntimeError: out of memory"}


def test_transpose_counter_model_by_hand():
    from widgets.experiments import memory_hierarchy_transpose as tx

    n = 8192
    warps = n * n // 32
    naive, tiled, padded, swz = (tx.model_counts(k, n) for k in ("naive", "tiled", "padded", "swizzled"))
    control = tx.model_counts("naive_read", n)  # strided reads (no L1 reuse in the model), coalesced writes
    assert control["lts__t_sectors_srcunit_tex_op_read.sum"] == 32 * warps
    assert control["lts__t_sectors_srcunit_tex_op_write.sum"] == 4 * warps
    assert swz["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == warps
    assert swz["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] == warps
    assert naive["lts__t_sectors_srcunit_tex_op_write.sum"] == 32 * warps  # one sector per lane
    assert tiled["lts__t_sectors_srcunit_tex_op_write.sum"] == 4 * warps  # 128 B per warp
    assert tiled["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 32 * warps  # 32-way conflict
    assert padded["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == warps
    assert naive["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 0
    assert naive["dram__bytes_read.sum"] == naive["dram__bytes_write.sum"] == n * n * 4
    with pytest.raises(ValueError, match="kind"):
        tx.model_counts("diagonal", n)


def test_transpose_ncu_rows_and_labels(tmp_path, monkeypatch):
    import subprocess
    import sys

    from widgets.experiments import memory_hierarchy_transpose as tx

    n = 8192
    # A counter record exactly as the model says, except the naive writes merged 2:1 (a falsifying case).
    points = []
    for kind in tx.KINDS:
        m = {c: float(v) for c, v in tx.model_counts(kind, n).items()}
        if kind == "naive":
            m["lts__t_sectors_srcunit_tex_op_write.sum"] /= 2
        points.append({"kind": kind, "metrics": m})
    points.append({"kind": "tiled2", "error": "ncu exited with 1"})
    rec = {"provenance": {"gpu": "NVIDIA H200"}, "n": n, "points": points}
    rows = tx.ncu_rows(rec)
    assert all(r["ratio"] == pytest.approx(1.0) for r in rows if r["model"]
               and not (r["kind"] == "naive" and r["counter"] == "lts__t_sectors_srcunit_tex_op_write.sum"))
    assert {r["kind"] for r in rows} == set(tx.KINDS) and len(rows) == len(tx.KINDS) * len(tx.NCU_COUNTERS)
    ledger = tx.ncu_accuracy_rows(rec)
    assert len(ledger) == len(tx.KINDS) + 3  # L2 sectors written by every kernel, shared load wavefronts of the three tiled ones
    bad = [r for r in ledger if r.ratio != pytest.approx(1.0)]
    assert len(bad) == 1 and bad[0].ratio == pytest.approx(0.5) and bad[0].label == "prediction"
    assert not [r for r in rows if r["model"] == 0 and r["ratio"] is not None]  # never divides by a zero count
    (tmp_path / tx.NCU_FILE).write_text(json.dumps(rec))
    assert tx.load_ncu(str(tmp_path)) == rec and tx.load_ncu(str(tmp_path / "none")) is None
    # The script's CSV parser against ncu's long layout (a fake ncu that writes what real ncu writes).
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!" + sys.executable + "\n"
        "import sys\n"
        "a = sys.argv\n"
        "if '--version' in a: print('Version test'); sys.exit(0)\n"
        "log = a[a.index('--log-file') + 1]; ms = a[a.index('--metrics') + 1].split(',')\n"
        "with open(log, 'w') as f:\n"
        "    f.write('==PROF== Connected\\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\\n')\n"
        "    for m in ms: f.write(f'\"0\",\"k\",\"{m}\",\"{\"byte\" if \"bytes\" in m else \"sector\"}\",\"1,024\"\\n')\n"
    )
    fake.chmod(0o755)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "benchmarks/h200/memory_hierarchy_transpose_ncu.py", "--commit", "abc",
                          "--ncu", str(fake), "--out", str(out), "--kinds", "naive"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = json.loads((out / tx.NCU_FILE).read_text())
    assert got["points"][0]["metrics"]["dram__bytes_read.sum"] == 1024.0 and got["provenance"]["git_commit"] == "abc"


def test_fusion_size_plot_lines_are_the_model():
    from widgets.ui import memory_hierarchy as ui

    rows = [{"n_elems": 2**12, "eager_s": 3e-5, "triton_fused_s": 8e-6}, {"n_elems": 2**28, "eager_s": 2e-3, "triton_fused_s": 5e-4}]
    fig = ui.fusion_size_plot(rows, 4.8e12, 7.5e-6)
    eager_line, eager_pts, fused_line, fused_pts = fig.data
    assert eager_line.y[0] == pytest.approx(mh.fusion_estimate(2**12, 4, 4.8e12, launch_s=7.5e-6).eager_s)
    assert fused_line.y[-1] == pytest.approx(mh.fusion_estimate(2**28, 4, 4.8e12, launch_s=7.5e-6).fused_s)
    assert list(eager_pts.y) == [3e-5, 2e-3] and list(fused_pts.x) == [2**14, 2**30]  # sizes in bytes
    with pytest.raises(ValueError, match="launch_s"):
        ui.fusion_size_plot(rows, 4.8e12, -1.0)


@pytest.mark.slow
def test_transpose_kernels_type_check_for_a_real_gpu():
    """numba's simulator runs Python and accepts what the real compiler rejects (a shared array
    shaped ``(TILE, TILE + 1)`` is not a compile-time constant: it failed on the H200). Type every
    kernel for sm_90 with the real compiler: typing must pass; where this machine lacks NVRTC the
    last step fails with that, which is fine here."""
    import subprocess
    import sys

    code = r'''
import os, sys
import numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
from numba import cuda, types
from numba.core.errors import TypingError
from widgets.experiments import memory_hierarchy_transpose as tx
sig = (types.float32[:, ::1], types.float32[:, ::1])
bad = []
for kind, k in tx.KERNELS.items():
    try:
        cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
    except TypingError as e:
        bad.append(f"{kind}: {str(e).splitlines()[0]}")
    except Exception as e:  # no NVRTC/NVVM on this machine: typing passed
        if "nvrtc" not in str(e).lower() and "nvvm" not in str(e).lower():
            bad.append(f"{kind}: {type(e).__name__}: {str(e)[:200]}")
print("BAD" if bad else "OK", bad)
'''
    env = dict(__import__("os").environ, NUMBA_ENABLE_CUDASIM="0")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("OK"), run.stdout


def test_ncu_script_units():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tx_ncu", "benchmarks/h200/memory_hierarchy_transpose_ncu.py")
    ncu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ncu)
    assert ncu._scale("gpu__time_duration.sum", "usecond") == 1e3  # kept in ns
    assert ncu._scale("gpu__time_duration.sum", "nsecond") == 1
    assert ncu._scale("dram__bytes_read.sum", "Mbyte") == 1e6
    assert ncu._scale("lts__t_sectors_srcunit_tex_op_write.sum", "sector") == 1


def test_committed_h200_records_hold_the_depth_experiments(ref):
    """The reference record has the fusion and transpose results the chapter reads, and the counter record's
    sector counts equal the model's (a prediction that held on the H200: 32 sectors per naive warp write)."""
    from widgets.experiments import memory_hierarchy_fusion as fx
    from widgets.experiments import memory_hierarchy_transpose as tx

    if fx.fusion_result(ref) is None or tx.transpose_result(ref) is None:
        pytest.skip("the reference record predates the depth experiments")
    f = fx.fusion_result(ref)
    assert [p.n_ops for p in f.chain_sweep] == list(fx.CHAIN_OPS)
    assert all(p.triton_max_abs_error is not None and p.triton_max_abs_error < 1e-4 for p in f.chain_sweep)
    labels = {r.label for r in fx.accuracy_rows(ref)}
    assert labels == {"prediction", "calibrated"}
    ncu = tx.load_ncu()
    if ncu is not None:
        writes = [r for r in tx.ncu_rows(ncu) if r["counter"] == "lts__t_sectors_srcunit_tex_op_write.sum" and r["ratio"]]
        assert writes and all(r["ratio"] == pytest.approx(1.0, rel=0.01) for r in writes)


def test_measured_ceilings_table_rows():
    from widgets.ui import memory_hierarchy as ui

    tc = {"results": {"throughput": [{"dtype": "bf16", "flop_per_s": 8e14}, {"dtype": "fp8", "flop_per_s": 1.2e15}]}}
    mhr = {"results": {"hbm_bandwidth": {"triton_copy_bytes_per_s": 4e12, "torch_copy_bytes_per_s": 4e12,
                                         "triton_read_bytes_per_s": 4e12, "torch_sum_bytes_per_s": 4e12}}}
    html = ui.measured_ceilings_table(tc, mhr)
    assert html.count("<tr>") == 3  # header + the two measured dtypes, none for the others
    assert ">200<" in html and ">300<" in html  # 8e14 / 4e12 and 1.2e15 / 4e12 [FLOP/B]


def test_transpose_status_in_words(ref):
    """What the chapter says was measured comes from the record: measured, failed (with the error's type),
    wrong, or absent."""
    from widgets.experiments import memory_hierarchy_transpose as tx

    k = {"median_s": 1e-3, "min_s": 1e-3, "max_s": 1e-3, "repeat": 1, "correct": True}
    kernels = {"copy": k, "naive": k, "tiled": dict(k, correct=False),
               "padded": {"error": "TypingError: No implementation of function array"}}
    rec = _with(ref, "transpose", {"n": 64, "elem_bytes": 4, "device": "x", "simulated": False, "timing_note": "", "kernels": kernels})
    st = tx.record_status(rec)
    assert st == {"copy": "measured", "copy_ilp": "not run", "naive": "measured", "naive_read": "not run", "tiled": "wrong result",
                  "padded": "failed: TypingError", "swizzled": "not run"}
    assert tx.status_sentence(rec) == ("copy and naive were measured; padded failed (TypingError); "
                                       "tiled gave a wrong result (not compared); copy_ilp, naive_read and swizzled are not in the record")
    assert tx.status_sentence(_with(ref, "transpose", {"error": "x"})) == "no kernel is in the record" or \
        tx.status_sentence(_with(ref, "transpose", {"error": "x"})).endswith("are not in the record")
    ncu = {"n": 64, "points": [{"kind": "copy", "metrics": {"x": 1.0}}, {"kind": "padded", "error": "ncu exited with 1: y"}]}
    assert tx.ncu_status(ncu)["copy"] == "measured" and tx.ncu_status(ncu)["padded"] == "failed: ncu exited with 1"
    assert tx.ncu_status_sentence(None).startswith("copy, copy_ilp, naive, naive_read, tiled, padded and swizzled are not")

