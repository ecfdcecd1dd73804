"""Calculators for the kernels chapter: the ladder (rung and size -> predicted GFLOP/s beside the
H200 record), tiles (tile sizes -> shared memory, registers, occupancy, intensity at each level) and
repeats (spread and target -> repeats for a confidence interval). Each has a live form
(``*_calculator``) and a static form (``*_figure``) precomputed by :mod:`widgets.models.kernels`;
the tables of the chapter's records and the exercise checks live here too.

Records are read duck-typed (``LadderResult``/``TimingResult`` of ``widgets.experiments.kernels``
or ``None``): this module imports no experiment.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ..hardware import ARCHS, gpu_names
from ..models import kernels as km
from ..units import fmt_time
from ._core import answer_close as _close
from ._core import answer_number as _number
from ._core import grid_figure, html_table, live_form, percent, plural, series_color, table_html
from ._core import verdict as _verdict

RUNG_LABELS = [km.RUNG_TITLES[r] for r in km.RUNGS]
# the ladder chart's y labels: horizontal bars, long rung names on two lines (no rotated x labels over the legend)
RUNG_TICKS = [t.replace(" ", "<br>", 1) if len(t) > 12 else t for t in RUNG_LABELS]
LADDER_SIZES = (512, 1024, 2048, 4096, 8192)
LADDER_GPUS = tuple(gpu_names())  # every catalog GPU; one the model cannot describe says why in its frames
MEASURED_COLOR = "#D55E00"


why_not = km.why_not_on
predict = km.predict_on


def _measured_gflops(ladder, rung: str, default_tiles: bool = False):
    """The recorded GFLOP/s of ``rung`` (None where absent): its best correct configuration, or with
    ``default_tiles`` the configuration with the model's default tiling (``km.DEFAULT_TILING``), the
    one the ladder figure's bars predict."""
    if ladder is None or not hasattr(ladder, "rungs"):
        return None
    r = ladder.rung(rung)
    if r is None:
        return None
    if default_tiles:
        want = km.tiling(rung)
        same = [c for c in r.configs if c.gflop_per_s and km.tiling(rung, **km.sizes_from_config(rung, c.config)) == want]
        return same[0].gflop_per_s if same else None
    return r.best_config.gflop_per_s if r.best_config is not None else None


def _record_size(ladder):
    return tuple(ladder.size) if ladder is not None and hasattr(ladder, "size") else None


def _record_gpu(ladder) -> str | None:
    from ..hardware import catalog_name_for

    return catalog_name_for(ladder.device) if ladder is not None and getattr(ladder, "device", None) else None


# --------------------------------------------------------------------------------------------
# 1. The ladder
# --------------------------------------------------------------------------------------------
# the model's ceiling names (km.predict) in words a reader can parse
LIMITER_WORDS = {"fp32": "fp32-lane-bound", "issue": "issue-bound", "l1_smem": "L1/shared-memory-bound", "hbm": "HBM-bound"}


def _ladder_frame(gpu: str, size: int, ladder):
    reason = why_not(gpu)
    if reason:
        bars = go.Bar(y=RUNG_TICKS, x=[0] * len(RUNG_TICKS), orientation="h", marker_color=series_color(0), name="model",
                      showlegend=True)
        dots = go.Scatter(y=RUNG_TICKS, x=[None] * len(RUNG_TICKS), mode="markers", name="H200 record", showlegend=True,
                          marker=dict(color=MEASURED_COLOR, size=11, symbol="diamond"))
        return [bars, dots], f"{gpu}: {size}^3 fp32", reason
    preds = [predict(gpu, r, size, size, size) for r in km.RUNGS]
    y = [p.predicted_flop_per_s / 1e9 for p in preds]
    hover = [f"{km.RUNG_TITLES[p.rung]}: {v:,.0f} GFLOP/s, {LIMITER_WORDS.get(p.limiter, p.limiter)}, {plural(p.occupancy.warps_per_sm, 'warp')}/SM"
             for p, v in zip(preds, y)]
    bars = go.Bar(y=RUNG_TICKS, x=y, orientation="h", marker_color=series_color(0), name="model (prediction)", hovertext=hover,
                  hoverinfo="text")
    here = _record_gpu(ladder) == gpu and _record_size(ladder) == (size, size, size)
    # the bars predict each rung's default tiles, so the diamonds are the record's run of those same tiles (the
    # fastest configuration of a sweep is compared with its own prediction in the chapter's table; reader check r10)
    meas = [_measured_gflops(ladder, r, default_tiles=True) if here else None for r in km.RUNGS]
    dots = go.Scatter(y=RUNG_TICKS, x=meas, mode="markers",
                      name=f"{gpu} record, same tiles" if here else "record (H200, 4096^3 only)",
                      marker=dict(color=MEASURED_COLOR, size=11, symbol="diamond"),
                      hovertemplate="measured %{x:,.0f} GFLOP/s<extra></extra>")
    top = preds[-1]
    readout = (f"warp tiling, default tiles: {top.predicted_flop_per_s / 1e12:.3g} TFLOP/s predicted "
               f"({LIMITER_WORDS.get(top.limiter, top.limiter)})")
    if here and meas[-1]:
        readout += f"; measured {meas[-1] / 1e3:.3g} TFLOP/s"
    return [bars, dots], f"{gpu}: {size}^3 fp32", readout


def ladder_figure(gpus=LADDER_GPUS, sizes=LADDER_SIZES, ladder=None) -> go.Figure:
    """Static ladder: the dropdown picks the GPU, the slider the square matrix size; bars are the
    model's GFLOP/s per rung at its default tiles, diamonds the record's run of the same tiles
    (``ladder``: the H200 ``LadderResult``) where it was measured (its GPU, 4096^3)."""
    gpus, sizes = list(gpus), list(sizes)
    active_gpu = gpus.index("H200-SXM") if "H200-SXM" in gpus else 0
    active_size = sizes.index(4096) if 4096 in sizes else len(sizes) - 1
    return grid_figure(
        slider=("matrix size", sizes, lambda s: f"{s}"),
        choices=("GPU", gpus, lambda g: g),
        frame=lambda g, s: _ladder_frame(g, s, ladder),
        layout=dict(xaxis=dict(title="GFLOP/s", type="log"),
                    yaxis=dict(categoryorder="array", categoryarray=RUNG_TICKS, autorange="reversed")),
        active=(active_gpu, active_size), height=520,
    )


def ladder_table(rung: str = "warptile", gpu: str = "H200-SXM", m: int = 4096, n: int = 4096, k: int = 4096, **sizes) -> str:
    """One rung's prediction, ceiling by ceiling."""
    p = predict(gpu, rung, m, n, k, **sizes)
    c = p.cost
    rows = [(f"ceiling: {name}", f"{v / 1e12:.3g} TFLOP/s" + ("  <- limiter" if name == p.limiter else ""))
            for name, v in p.ceilings_flop_per_s.items()]
    rows += [("tail efficiency of the waves", percent(p.tail_efficiency)),
             ("predicted", f"{p.predicted_flop_per_s / 1e12:.3g} TFLOP/s, {fmt_time(p.predicted_s)}"),
             ("per warp per k: FMA / instructions / wavefronts",
              f"{32 * c.fma_per_thread} / {c.instructions_per_warp:.3g} / {c.wavefronts_per_warp:.3g}"),
             ("threads, shared memory per block", f"{c.tiling.threads}, {c.smem_bytes_per_block:,} B"),
             ("registers per thread (estimate)", str(c.regs_per_thread_estimate)),
             ("occupancy", f"{plural(p.occupancy.blocks_per_sm, 'block')}/SM, {percent(p.occupancy.occupancy)} ({p.occupancy.limiter})")]
    return table_html(rows)


def ladder_calculator():
    """Live ladder: rung, GPU, m, n, k -> each ceiling, the limiter and the predicted rate."""
    import ipywidgets as w

    controls = {
        "rung": w.Dropdown(options=list(km.RUNGS), value="warptile", description="rung"),
        "gpu": w.Dropdown(options=list(gpu_names()), value="H200-SXM", description="GPU"),
        "m": w.BoundedIntText(value=4096, min=1, max=km.MAX_DIM, description="m"),
        "n": w.BoundedIntText(value=4096, min=1, max=km.MAX_DIM, description="n"),
        "k": w.BoundedIntText(value=4096, min=1, max=km.MAX_DIM, description="k"),
    }
    return live_form(ladder_table, controls, lambda t: t, title="The ladder: predicted rate per rung")


# --------------------------------------------------------------------------------------------
# 2. Tiles -> shared memory, registers, occupancy, intensity
# --------------------------------------------------------------------------------------------
# (bm, bn, bk) block tiles of the vectorized rung, and thread tiles (tm, tn) on the slider
BLOCK_TILES = ((64, 64, 8), (128, 64, 8), (128, 128, 8), (128, 128, 16), (256, 128, 16))
THREAD_TILES = ((4, 4), (8, 4), (8, 8), (16, 8))


TILE_LEVELS = ("block tile", "thread tile")  # short y labels (a phone): L2/HBM -> shared, shared -> registers (in the hover)


def _tile_frame(block, thread, arch="sm_90"):
    bm, bn, bk = block
    tm, tn = thread
    levels = list(TILE_LEVELS)
    try:
        t = km.tile_summary("vectorized", arch, bm=bm, bn=bn, bk=bk, tm=tm, tn=tn)
    except ValueError as exc:
        bar = go.Bar(x=[0, 0], y=levels, orientation="h", marker_color=series_color(1), name="FLOP per byte", showlegend=False)
        return [bar], f"{bm} × {bn} × {bk}, thread {tm} × {tn}", str(exc)
    bar = go.Bar(x=[t.global_flop_per_byte, t.smem_flop_per_byte], y=levels, orientation="h", marker_color=series_color(1),
                 name="FLOP per byte", showlegend=False, customdata=["L2/HBM -> shared", "shared -> registers"],
                 hovertemplate="%{y} (%{customdata}): %{x:.3g} FLOP/B<extra></extra>")
    o = t.occupancy
    readout = (f"{t.tiling.threads} threads, {t.smem_bytes_per_block / 1024:.3g} KiB shared, ~{t.regs_per_thread} registers: "
               f"{plural(o.blocks_per_sm, 'block')}/SM, occupancy {percent(o.occupancy)} ({o.limiter})")
    return [bar], f"block {bm} × {bn} × {bk}, thread {tm} × {tn}", readout


def tile_figure(blocks=BLOCK_TILES, threads=THREAD_TILES, arch: str = "sm_90") -> go.Figure:
    """Static tiles (vectorized rung, on ``arch``): the dropdown picks the block tile, the slider the thread tile."""
    return grid_figure(
        slider=("thread tile", list(threads), lambda t: f"{t[0]}x{t[1]}"),
        choices=("block tile", list(blocks), lambda b: f"{b[0]} × {b[1]}, BK {b[2]}"),
        frame=lambda b, t: _tile_frame(b, t, arch),
        layout=dict(xaxis=dict(title="FLOP per byte moved", rangemode="tozero"),
                    yaxis=dict(categoryorder="array", categoryarray=list(TILE_LEVELS), autorange="reversed")),
        active=(2, 2), height=380,
    )


def tile_table(bm=128, bn=128, bk=8, tm=8, tn=8, arch="sm_90", regs_per_thread=0) -> str:
    """The tiling's shared memory, registers, occupancy and intensity (``regs_per_thread`` 0: estimate)."""
    t = km.tile_summary("vectorized", arch, regs_per_thread or None, bm=bm, bn=bn, bk=bk, tm=tm, tn=tn)
    o = t.occupancy
    return table_html([
        ("threads per block", str(t.tiling.threads)),
        ("shared memory per block", f"{t.smem_bytes_per_block:,} B"),
        ("registers per thread", str(t.regs_per_thread) + (" (estimate)" if not regs_per_thread else "")),
        ("blocks per SM", f"{o.blocks_per_sm} (limited by {o.limiter})"),
        ("warps per SM, occupancy", f"{o.warps_per_sm} of {o.max_warps_per_sm}, {percent(o.occupancy)}"),
        ("intensity, L2/HBM -> shared", f"{t.global_flop_per_byte:.3g} FLOP/B"),
        ("intensity, shared -> registers", f"{t.smem_flop_per_byte:.3g} FLOP/B"),
    ])


def tile_calculator():
    """Live tiles: block and thread tile sizes, arch, registers -> shared memory, occupancy, intensity."""
    import ipywidgets as w

    pow2 = [4, 8, 16, 32, 64, 128, 256]
    controls = {
        "bm": w.Dropdown(options=pow2[2:], value=128, description="BM"),
        "bn": w.Dropdown(options=pow2[2:], value=128, description="BN"),
        "bk": w.Dropdown(options=[4, 8, 16, 32], value=8, description="BK"),
        "tm": w.Dropdown(options=[4, 8, 16], value=8, description="TM"),
        "tn": w.Dropdown(options=[4, 8, 16], value=8, description="TN"),
        "arch": w.Dropdown(options=list(ARCHS), value="sm_90", description="arch"),
        "regs_per_thread": w.BoundedIntText(value=0, min=0, max=255, description="registers"),
    }
    return live_form(tile_table, controls, lambda t: t, title="Tiles: shared memory, registers, occupancy")


# --------------------------------------------------------------------------------------------
# 3. Repeats for a confidence interval
# --------------------------------------------------------------------------------------------
SPREADS = (0.01, 0.02, 0.05, 0.1, 0.2)
TARGETS = (0.005, 0.01, 0.02, 0.05)
REPEAT_AXIS = np.unique(np.round(np.logspace(np.log10(2), 5, 36)).astype(int))


def _repeats_frame(cv: float, target: float, label: str):
    halves = [km.mean_ci_half_width(cv, int(n)) for n in REPEAT_AXIS]
    need = km.repeats_needed(cv, 1.0, target)
    curve = go.Scatter(x=REPEAT_AXIS, y=halves, mode="lines", name="95% half-width", line=dict(color=series_color(0)),
                       hovertemplate="%{x} repeats: ± %{y:.2%}<extra></extra>")
    goal = go.Scatter(x=[REPEAT_AXIS[0], REPEAT_AXIS[-1]], y=[target, target], mode="lines", name="target",
                      line=dict(color="#888888", dash="dash"))
    point = go.Scatter(x=[need], y=[km.mean_ci_half_width(cv, need)], mode="markers", name="repeats needed",
                       marker=dict(color=MEASURED_COLOR, size=11))
    return [curve, goal, point], f"spread {label}, target ± {target:.1%}", f"{plural(need, 'repeat')} for ± {target:.1%} at 95%"


def repeats_figure(spreads=SPREADS, targets=TARGETS, measured_cv: float | None = None) -> go.Figure:
    """Static repeats: the dropdown picks the spread (standard deviation / mean; ``measured_cv``,
    the H200 record's, first when given), the slider the target half-width."""
    choices = ([("H200 record", measured_cv)] if measured_cv else []) + [(f"{s:.0%}", s) for s in spreads]
    return grid_figure(
        slider=("target half-width", list(targets), lambda t: f"{t:.1%}"),
        choices=("spread", choices, lambda c: c[0] if c[0] != "H200 record" else f"H200 record ({c[1]:.2%})"),
        frame=lambda c, t: _repeats_frame(c[1], t, c[0] if c[0] != "H200 record" else f"{c[1]:.2%} (H200)"),
        layout=dict(xaxis=dict(title="repeats", type="log"), yaxis=dict(title="half-width / mean", type="log", tickformat=".1%")),
        active=(0, 1), height=420,
    )


def repeats_calculator():
    """Live repeats: spread, mean, target half-width and confidence -> repeats needed."""
    import ipywidgets as w

    controls = {
        "std_s": w.BoundedFloatText(value=2e-6, min=0, max=1e3, step=1e-6, description="std [s]"),
        "mean_s": w.BoundedFloatText(value=50e-6, min=1e-9, max=1e3, step=1e-6, description="mean [s]"),
        "relative_half_width": w.BoundedFloatText(value=0.01, min=1e-6, max=1.0, step=0.005, description="target ±"),
        "confidence": w.BoundedFloatText(value=0.95, min=0.51, max=0.9999, step=0.01, description="confidence"),
    }

    def compute(std_s, mean_s, relative_half_width, confidence):
        n = km.repeats_needed(std_s, mean_s, relative_half_width, confidence)
        return n, km.mean_ci_half_width(std_s, max(n, 2), confidence), mean_s

    def show(r):
        n, half, mean = r
        return table_html([("repeats needed", f"{n:,}"), ("half-width at that count", f"± {fmt_time(half)} ({half / mean:.2%} of the mean)")])

    return live_form(compute, controls, show, title="Repeats for a confidence interval")


# --------------------------------------------------------------------------------------------
# Record tables
# --------------------------------------------------------------------------------------------
def ladder_record_table(ladder, gpu: str = "H200-SXM") -> str:
    """Every rung's best config of a ``LadderResult``: GFLOP/s, share of cuBLAS, registers, spills,
    blocks per SM, correctness, the model's prediction and the ratio."""
    if ladder is None or not hasattr(ladder, "rungs"):
        return "<p>No ladder recorded yet.</p>"
    cublas = ladder.library("cuBLAS fp32 (TF32 off)") if hasattr(ladder, "library") else None
    ref = cublas.gflop_per_s if cublas is not None and cublas.gflop_per_s else None
    m, n, k = ladder.size
    rows = []
    for r in ladder.rungs:
        b = r.best_config
        if b is None:
            errs = "; ".join(sorted({c.error for c in r.configs if c.error}))[:200] or "no correct config"
            rows.append([html.escape(r.title), "-", "-", "-", "-", "-", "-", "-", html.escape(errs)])
            continue
        try:
            sizes = km.sizes_from_config(r.name, b.config)
            pred = predict(gpu, r.name, m, n, k, regs_per_thread=b.regs_per_thread, **sizes).predicted_flop_per_s / 1e9
        except ValueError:
            pred = None
        rows.append([html.escape(r.title), f"{b.gflop_per_s:,.0f}" if b.gflop_per_s else "-",
                     percent(b.gflop_per_s / ref) if ref and b.gflop_per_s else "-",
                     f"{pred:,.0f}" if pred else "-", f"{b.gflop_per_s / pred:.2f}" if pred and b.gflop_per_s else "-",
                     str(b.regs_per_thread), str(b.local_bytes_per_thread), str(b.blocks_per_sm),
                     "yes" if b.correct else "NO"])
    for g in getattr(ladder, "libraries", ()):
        rows.append([html.escape(g.name), f"{g.gflop_per_s:,.0f}" if g.gflop_per_s else "-",
                     percent(g.gflop_per_s / ref) if ref and g.gflop_per_s else "-", "-", "-", "-", "-", "-",
                     f"rel. error {g.rel_err:.1e}" if g.rel_err is not None else html.escape(g.error[:120])])
    return html_table(["rung", "GFLOP/s", "of cuBLAS fp32", "model", "measured / model", "registers", "local B (spills)",
                       "blocks/SM", "correct"], rows)


def sweep_table(ladder, rung: str = "warptile", gpu: str | None = "H200-SXM") -> str:
    """Every tile configuration tried for ``rung``: GFLOP/s, the model's GFLOP/s for that configuration on
    ``gpu`` (with the configuration's compiled registers) and measured over model, registers, blocks per SM,
    correct. ``gpu`` None leaves the model columns out (a device the model does not cover)."""
    r = ladder.rung(rung) if ladder is not None and hasattr(ladder, "rung") else None
    if r is None:
        return "<p>No sweep recorded yet.</p>"
    size = getattr(ladder, "size", None)
    use_model = gpu is not None and size is not None and km.why_not_on(gpu) is None
    rows = []
    for c in r.configs:
        model_cells = []
        if use_model:
            p = None
            if c.regs_per_thread:
                try:
                    p = km.predict_on(gpu, rung, *size, regs_per_thread=c.regs_per_thread, **km.sizes_from_config(rung, c.config))
                except ValueError:
                    p = None
            pg = p.predicted_flop_per_s / 1e9 if p is not None else None
            model_cells = [f"{pg:,.0f}" if pg else "-", f"{c.gflop_per_s / pg:.2f}" if pg and c.gflop_per_s else "-"]
        rows.append([html.escape(" x ".join(map(str, c.config))), f"{c.gflop_per_s:,.0f}" if c.gflop_per_s else "-", *model_cells,
                     str(c.threads_per_block), str(c.regs_per_thread), str(c.blocks_per_sm),
                     "yes" if c.correct else html.escape(c.error[:80] or "NO")])
    heads = ["config", "GFLOP/s"] + (["model GFLOP/s", "measured / model"] if use_model else [])
    return html_table(heads + ["threads", "registers", "blocks/SM", "correct"], rows)


# --------------------------------------------------------------------------------------------
# Exercise checks (the FAIL lines point to the method and the section, never to the number)
# --------------------------------------------------------------------------------------------
def check_naive_wavefronts(answer) -> bool:
    """Exercise: L1 passes per warp per k of the naive kernel at K = 4096 (A's and B's loads together)."""
    expected = km.rung_cost("naive").wavefronts_per_warp
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of wavefronts, got {answer!r}")
    if _close(a, expected, 0.001):
        return _verdict(True, f"{expected:g}: A's 32 words (4K bytes apart) all in one bank at K = 4096, one broadcast word of B")
    return _verdict(False, f"{a:g} is not right: for each of the two loads, count the most distinct words one of the 32 banks "
                           "must deliver, and compare with the distinct 128-byte lines / 4 (section 'The ladder's model')")


def check_smem_per_block(answer) -> bool:
    """Exercise: shared memory of a 128 x 128 block tile with BK = 16 (fp32), in bytes."""
    expected = km.tile_summary("vectorized", bm=128, bn=128, bk=16).smem_bytes_per_block
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of bytes, got {answer!r}")
    if _close(a, expected, 0.001):
        return _verdict(True, f"{expected:,} B: (BM + BN) x BK floats of 4 bytes")
    if _close(a, expected / 1024, 0.001):
        return _verdict(False, f"{a:g} is in KiB: the exercise asks for bytes")
    return _verdict(False, f"{a:g} B is not right: one block holds a BM x BK tile of A and a BK x BN tile of B")


def check_thread_intensity(answer) -> bool:
    """Exercise: FLOP per byte read from shared memory by an 8 x 8 thread tile."""
    expected = km.tile_summary("vectorized", tm=8, tn=8).smem_flop_per_byte
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of FLOP per byte, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"{expected:g} FLOP/B: 2 x 64 FLOP for 16 floats of 4 bytes")
    return _verdict(False, f"{a:g} is not right: count the FLOP of a TM x TN outer product and the bytes of the TM + TN values it reads")


def check_repeats(answer) -> bool:
    """Exercise: repeats for ± 1 % at 95 % with a 5 % spread."""
    expected = km.repeats_needed(0.05, 1.0, 0.01)
    a = _number(answer)
    if a is None or not float(a).is_integer():
        return _verdict(False, f"the answer must be a whole number of repeats, got {answer!r}")
    if abs(a - expected) <= 2:
        return _verdict(True, f"{expected} repeats (the normal approximation (1.96 x 5)^2 = 96, and t adds a few)")
    return _verdict(False, f"{a:g} is not right: the half-width is t x spread / sqrt(n); solve for n (section 'Timing a kernel honestly')")


def check_host_error(answer) -> bool:
    """Exercise: relative error of host-clock timing for a 5 us kernel with 20 us of overhead."""
    expected = km.host_timing_error(5e-6, 20e-6)
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number (a ratio), got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"{expected:g}: the host clock reads {1 + expected:g} times the kernel's time")
    if _close(a, expected * 100):
        return _verdict(False, f"{a:g} looks like a percentage: give the ratio")
    return _verdict(False, f"{a:g} is not right: what does the host clock see besides the kernel?")


def check_patched_result(answer) -> bool:
    """Exercise: out[7] of the patched times3 kernel (immediate 3.0f replaced by 5.0f), x[i] = i."""
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number, got {answer!r}")
    if a == 35.0:
        return _verdict(True, "35: the kernel now multiplies by 5; nothing else changed")
    if a == 21.0:
        return _verdict(False, "21 is what the kernel computed before the patch")
    return _verdict(False, f"{a:g} is not right: which 4 bytes changed, and which instruction holds them?")
