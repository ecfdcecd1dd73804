"""Calculators for the tensor-cores chapter: peak from first principles, a GEMM estimator (tiles,
waves, memory), and a precision explorer (number formats, error of a dot product).

Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly frames
precomputed by the same model) that works in the published page without a kernel. The chapter's
plots of recorded measurements and the exercise checks live here too.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .. import dtypes
from ..hardware import get_gpu, gpu_names
from ..models import tensor_cores as tc
from ..units import fmt_bytes, fmt_flop, fmt_flop_per_s, fmt_time
from ._core import (
    gpu_color,
    grid_figure,
    html_table,
    live_form,
    plural,
    series_color,
    set_layout,
    style_figure,
    table_html,
)
from ._core import verdict as _verdict

PEAK_DTYPES = dtypes.PEAK_DTYPES  # the catalog's peak-rate keys (widgets.dtypes)
PEAK_GPUS = tuple(gpu_names())  # every catalog GPU; one without per-SM rates says why in its frames
PRECISION_DTYPES = tuple(d for d in tc.FORMATS if d != "fp64")  # the precision models' formats (widgets.dtypes)
COLORS = tuple(series_color(i) for i in range(7))
TILES = (64, 128, 256)


# --------------------------------------------------------------------------------------------
# Peak from first principles
# --------------------------------------------------------------------------------------------
def peak_summary(c: tc.PeakCheck) -> str:
    return (
        f"{c.gpu} {c.dtype}: {c.sms} SMs x {c.clock_hz / 1e6:.0f} MHz x {c.flop_per_clock_per_sm} FLOP/clock/SM<br>"
        f"= {fmt_flop_per_s(c.peak_flop_per_s, 4)} (catalog {fmt_flop_per_s(c.catalog_flop_per_s, 4)})"
    )


def peak_rows(c: tc.PeakCheck) -> list[tuple[str, str]]:
    return [
        ("SMs", str(c.sms)),
        ("clock the figure assumes", f"{c.clock_hz / 1e6:.0f} MHz"),
        ("dense FLOP per clock per SM", f"{c.flop_per_clock_per_sm} FLOP ({c.flop_per_clock_per_sm // 2} FMA)"),
        ("peak from first principles", fmt_flop_per_s(c.peak_flop_per_s, 4)),
        ("catalog (datasheet, dense)", fmt_flop_per_s(c.catalog_flop_per_s, 4)),
        ("first principles / catalog", f"{c.ratio:.4f}"),
        ("clock the catalog figure implies", f"{c.implied_clock_hz / 1e6:.0f} MHz"),
        ("2:4 sparse figure (never a peak)", fmt_flop_per_s(tc.sparse_flop_per_s(c.catalog_flop_per_s), 4)),
    ]


PEAK_CLOCKS_MHZ = tuple(range(1000, 2201, 200))  # the slider of the static peak calculator (7 frames per GPU)
PEAK_NA_Y_TFLOP_PER_S = 30.0  # where "n/a" sits on the log axis (just above its bottom, 10 TFLOP/s)


def _peak_frame(gpu: str, clock_mhz: float) -> tuple[list, str, str]:
    """Bars: the dense peak of each data type at ``clock_mhz`` (first principles) beside the
    catalog's figure (at the datasheet's clock)."""
    rates = tc.FLOP_PER_CLOCK_PER_SM.get(gpu, {})
    g = get_gpu(gpu)
    at_clock, catalog = [], []
    for d in PEAK_DTYPES:
        if d in rates:
            at_clock.append(tc.peak_flop_per_s(g.sms, clock_mhz * 1e6, rates[d]) / 1e12)
            catalog.append(g.peak(d) / 1e12)
        else:
            at_clock.append(None)
            catalog.append(None)
    missing = [d for d in PEAK_DTYPES if d not in rates]
    why = [g.why_no_rate(d) for d in missing]
    traces = [
        go.Bar(x=list(PEAK_DTYPES), y=at_clock, name=f"SMs x {clock_mhz:.0f} MHz x FLOP/clock/SM", marker_color=gpu_color(gpu),
               hovertemplate="%{x}: %{y:.4g} TFLOP/s<extra>at this clock</extra>"),
        go.Bar(x=list(PEAK_DTYPES), y=catalog, name="catalog (datasheet, dense)", marker_color="#999999",
               hovertemplate="%{x}: %{y:.4g} TFLOP/s<extra>catalog</extra>"),
        # where the catalog has no figure for a data type, say so instead of leaving a silent gap
        # (the trace is there, possibly empty, in every frame: grid_figure needs the same traces)
        go.Scatter(x=missing, y=[PEAK_NA_Y_TFLOP_PER_S] * len(missing), mode="text", text=["n/a"] * len(missing),
                   textposition="middle center", textfont=dict(size=14, color="#888888"), showlegend=False,
                   name="n/a", customdata=why, hovertemplate="%{x}: n/a, %{customdata}<extra></extra>"),
    ]
    if not rates:  # e.g. B200: the vendor gives no SM count or clock, so no per-SM rate
        return traces, f"{gpu} at {clock_mhz:.0f} MHz", g.why_no_rate("bf16")
    d = next((x for x in ("bf16", "fp16") if x in rates), next(iter(rates)))
    c = tc.peak_check(gpu, d)
    here = tc.peak_flop_per_s(g.sms, clock_mhz * 1e6, rates[d])
    readout = (f"{d}: {g.sms} SMs x {clock_mhz:.0f} MHz x {rates[d]} = {fmt_flop_per_s(here)}; "
               f"datasheet {fmt_flop_per_s(c.catalog_flop_per_s)} at {c.clock_hz / 1e6:.0f} MHz")
    return traces, f"{gpu} at {clock_mhz:.0f} MHz", readout


def _peak_layout() -> dict:
    return dict(
        barmode="group",
        xaxis=dict(title="data type"),
        # decades only (dtick=1 on a log axis: 10, 100, 1000), whatever plotly would pick for the height
        yaxis=dict(title="dense peak [TFLOP/s]", type="log", range=[1, 3.6], dtick=1),
    )


def peak_figure(gpus=PEAK_GPUS, clocks_mhz=PEAK_CLOCKS_MHZ) -> go.Figure:
    """Static peak calculator, two inputs: the dropdown picks the GPU, the slider the SM clock;
    bars compare SMs x clock x FLOP/clock/SM with the catalog's datasheet figure for every data type."""
    gpus, clocks = list(gpus), list(clocks_mhz)
    ci = gpus.index("H200-SXM") if "H200-SXM" in gpus else 0
    si = min(range(len(clocks)), key=lambda i: abs(clocks[i] - 1800))
    return grid_figure(
        # the unit lives in the name, so the last tick ("2200") fits at the slider's right end
        slider=("SM clock (MHz)", clocks, lambda v: f"{v:.0f}"),
        choices=("GPU", gpus, str),
        frame=_peak_frame,
        layout=_peak_layout(),
        active=(ci, si),
    )


def peak_calculator():
    """Live peak calculator: GPU and data type -> SMs, clock, FLOP/clock/SM, peak, catalog."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=list(PEAK_GPUS), value="H200-SXM", description="GPU"),
        "dtype": w.Dropdown(options=list(PEAK_DTYPES), value="bf16", description="dtype"),
    }

    def compute(gpu, dtype):
        g = get_gpu(gpu)
        if dtype not in tc.FLOP_PER_CLOCK_PER_SM.get(gpu, {}):  # offered, then answered with the reason
            return g, dtype
        return tc.peak_check(gpu, dtype)

    def show(c):
        if isinstance(c, tc.PeakCheck):
            return table_html(peak_rows(c))
        g, dtype = c
        catalog = fmt_flop_per_s(g.peak(dtype), 4) if g.why_no_peak(dtype) is None else f"n/a: {g.why_no_peak(dtype)}"
        return table_html([("peak from first principles", f"n/a: {g.why_no_rate(dtype)}"), ("catalog (datasheet, dense)", catalog)])

    return live_form(compute, controls, show, title="Peak from first principles")


# --------------------------------------------------------------------------------------------
# GEMM estimator
# --------------------------------------------------------------------------------------------
def gemm_rows(e: tc.GemmEstimate) -> list[tuple[str, str]]:
    return [
        ("work", fmt_flop(e.flop)),
        ("fewest bytes moved", fmt_bytes(e.bytes_moved)),
        ("tiles", str(e.tiles)),
        ("waves (last one counted whole)", str(e.waves)),
        ("wave efficiency", f"{e.wave_efficiency:.1%}"),
        ("tile efficiency", f"{e.tile_efficiency:.1%}"),
        ("compute time", fmt_time(e.compute_time_s)),
        ("memory time", fmt_time(e.memory_time_s)),
        ("predicted", f"{fmt_flop_per_s(e.flop_per_s)} ({e.bound}-bound)"),
        ("every row a multiple of 16 B", "yes" if e.aligned else "NO: expect a slower kernel than predicted"),
    ]


def gemm_summary(e: tc.GemmEstimate) -> str:
    return (
        f"{e.tiles} tiles in {plural(e.waves, 'wave')}, wave eff. {e.wave_efficiency:.0%}, tile eff. "
        f"{e.tile_efficiency:.0%}: {fmt_flop_per_s(e.flop_per_s)} ({e.bound}-bound)"
    )


def _gemm_curve(m: int, k: int, ns, dtype: str, gpu: str, tile_m: int, tile_n: int):
    return np.array([tc.gemm_estimate_for(m, int(n), k, dtype, gpu, tile_m, tile_n).flop_per_s for n in ns]) / 1e12


def _gemm_layout(ymax: float) -> dict:
    return dict(
        xaxis=dict(title="N (columns of C)"),
        yaxis=dict(title="predicted [TFLOP/s]", range=[0, ymax * 1.08]),
    )


# Every catalog GPU in its 16-bit tensor-core type (bf16, or fp16 where there is no bf16: T4), plus
# the H200's fp8 and tf32; the slider holds few values to keep the page light.
GEMM_CHOICES = (("H200-SXM", "bf16"), ("H200-SXM", "fp8"), ("H200-SXM", "tf32"),
                *((g, "bf16" if "bf16" in get_gpu(g).peak_flop_per_s else "fp16") for g in gpu_names() if g != "H200-SXM"))
GEMM_MS = (512, 2048, 8192)


def gemm_figure(choices=GEMM_CHOICES, ms=GEMM_MS, k: int = 8192, tile_m: int = 128, tile_n: int = 256, ns=None) -> go.Figure:
    """Static GEMM estimator, three inputs: the dropdown picks (GPU, data type), the slider M; the
    curve is the predicted throughput against N (the wave-quantization saw-tooth) at ``k``."""
    ns = np.arange(256, 16384 + 1, 256) if ns is None else np.asarray(ns)
    choices, ms = [tuple(c) for c in choices], list(ms)
    ymax = max(get_gpu(g).peak(d) for g, d in choices) / 1e12

    def frame(choice, m):
        gpu, dtype = choice
        peak = get_gpu(gpu).peak(dtype) / 1e12
        y = _gemm_curve(m, k, ns, dtype, gpu, tile_m, tile_n)
        e = tc.gemm_estimate_for(m, int(ns[-1]), k, dtype, gpu, tile_m, tile_n)
        traces = [
            go.Scatter(x=ns, y=y, mode="lines", name=f"predicted, {tile_m} x {tile_n} tiles", line=dict(color=gpu_color(gpu)),
                       hovertemplate="N = %{x}: %{y:.4g} TFLOP/s<extra></extra>"),
            go.Scatter(x=[ns[0], ns[-1]], y=[peak, peak], mode="lines", name="dense peak", line=dict(color="#999999", dash="dash")),
        ]
        title = f"{gpu} {dtype}, M = {m}, K = {k}"
        readout = f"one wave = {get_gpu(gpu).sms} tiles; at N = {int(ns[-1])}: {gemm_summary(e)}"
        return traces, title, readout

    ci = choices.index(("H200-SXM", "bf16")) if ("H200-SXM", "bf16") in choices else 0
    return grid_figure(
        slider=("M", ms, str),
        choices=("GPU, dtype", choices, lambda c: f"{c[0]} {c[1]}"),
        frame=frame,
        layout=_gemm_layout(ymax),
        active=(ci, ms.index(2048) if 2048 in ms else 0),
    )


def gemm_calculator():
    """Live GEMM estimator: M, N, K, dtype, GPU, tile shape -> tiles, waves, times, TFLOP/s, and
    the saw-tooth of throughput against N with this N marked."""
    import ipywidgets as w

    controls = {
        "m": w.IntText(value=2048, description="M"),
        "n": w.IntText(value=4224, description="N"),
        "k": w.IntText(value=8192, description="K"),
        "dtype": w.Dropdown(options=list(PEAK_DTYPES), value="bf16", description="dtype"),
        "gpu": w.Dropdown(options=gpu_names(), value="H200-SXM", description="GPU"),
        "tile_m": w.Dropdown(options=TILES, value=128, description="tile M"),
        "tile_n": w.Dropdown(options=TILES, value=256, description="tile N"),
    }

    def compute(m, n, k, dtype, gpu, tile_m, tile_n):
        return (m, n, k, dtype, gpu, tile_m, tile_n), tc.gemm_estimate_for(m, n, k, dtype, gpu, tile_m, tile_n)

    def show(result):
        (m, n, k, dtype, gpu, tm, tn), e = result
        ns = np.unique(np.linspace(max(16, n // 4), 2 * n, 200).astype(int))
        y = _gemm_curve(m, k, ns, dtype, gpu, tm, tn)
        peak = get_gpu(gpu).peak(dtype) / 1e12
        fig = go.Figure([
            go.Scatter(x=ns, y=y, mode="lines", name="predicted", line=dict(color=COLORS[0])),
            go.Scatter(x=[n], y=[e.flop_per_s / 1e12], mode="markers", name="this N", marker=dict(size=11, color=COLORS[3])),
            go.Scatter(x=[ns[0], ns[-1]], y=[peak, peak], mode="lines", name="dense peak", line=dict(color="gray", dash="dash")),
        ])
        set_layout(fig, **_gemm_layout(peak))
        style_figure(fig, title=f"{gpu} {dtype}, M = {m}, K = {k}", readout=gemm_summary(e))
        return table_html(gemm_rows(e)), fig

    return live_form(compute, controls, show, title="GEMM estimator: tiles, waves, memory")


# --------------------------------------------------------------------------------------------
# Precision explorer
# --------------------------------------------------------------------------------------------
KS = np.unique(np.logspace(0, 6, 61).round().astype(int))


def precision_rows(e: tc.DotError) -> list[tuple[str, str]]:
    return [
        ("unit roundoff u (inputs)", f"{e.u_in:.3g} = 2^-{tc.number_format(e.dtype).man_bits + 1}" if e.u_in else "0 (exact inputs)"),
        ("largest finite", f"{e.max_normal:.6g}"),
        ("smallest normal", f"{e.min_normal:.4g}"),
        ("smallest subnormal", f"{e.min_subnormal:.4g}"),
        (f"accumulation in {e.accumulate}: u", f"{e.u_acc:.3g}"),
        ("deterministic bound (of sum |x y|)", f"{e.deterministic_bound:.3g}"),
        (f"probabilistic bound (of sum |x y|), holds with P >= {e.probability:.0%}", f"{e.probabilistic_bound:.3g} (lambda = {e.lam:.1f})"),
        ("typical error, random data (of |x.y|)", f"{e.typical_error:.3g}"),
    ]


def _precision_traces(dtype: str, accumulate: str = "fp32", ks=KS) -> list:
    errs = [tc.dot_error(int(k), dtype, accumulate) for k in ks]
    names = (("deterministic bound", "deterministic_bound", "dash"), ("probabilistic bound (99%)", "probabilistic_bound", "dot"),
             ("typical, random data", "typical_error", "solid"))
    return [
        go.Scatter(x=ks, y=[getattr(e, attr) for e in errs], mode="lines", name=label, line=dict(color=c, dash=dash),
                   hovertemplate="K = %{x}: %{y:.3g}<extra>" + label + "</extra>")
        for (label, attr, dash), c in zip(names, COLORS)
    ]


def _precision_layout() -> dict:
    return dict(
        xaxis=dict(type="log", title="reduction length K"),
        yaxis=dict(type="log", title="relative error", range=[-9, 0], exponentformat="power"),
    )


# (input format, accumulation path): fp32 adders, Hopper's fp8 accumulator (fast and precise), and
# what summing in the input format would cost.
PRECISION_CHOICES = (("bf16", "fp32"), ("fp16", "fp32"), ("fp8", "Hopper fast"), ("fp8", "Hopper precise"),
                     ("bf16", "bf16"), ("fp16", "fp16"))
PRECISION_KS = tuple(4**p for p in range(2, 11))  # the slider: 16 to 1048576
PRECISION_CURVE_KS = tuple(2**p for p in range(4, 21))  # the curves


def precision_errors(dtype: str, path: str, ks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(total, inputs only, accumulation only) typical errors over ``ks`` for an accumulation path:
    ``"fp32"``/``"bf16"``/``"fp16"`` (round-to-nearest sums in that format) or ``"Hopper fast"`` /
    ``"Hopper precise"`` (the fp8 accumulator of :data:`widgets.models.tensor_cores.ACCUMULATORS`)."""
    ks = [int(k) for k in ks]
    if path.startswith("Hopper"):
        fast = path == "Hopper fast"
        acc = np.array([tc.tensor_core_accumulation_error(k, dtype, fast).typical_error for k in ks])
        total = np.array([tc.tensor_core_dot_error(k, dtype, fast) for k in ks])
    else:
        acc = np.array([tc.dot_error(k, dtype, path, input_rounding=False).typical_error for k in ks])
        total = np.array([tc.dot_error(k, dtype, path).typical_error for k in ks])
    inputs = np.full(len(ks), tc.input_rounding_error(dtype))
    return total, inputs, acc


def _precision_frame(choice, k, ks=PRECISION_CURVE_KS):
    dtype, path = choice
    total, inputs, acc = precision_errors(dtype, path, ks)
    at, at_in, at_acc = (float(x[0]) for x in precision_errors(dtype, path, [k]))
    traces = [
        go.Scatter(x=list(ks), y=total, mode="lines", name="typical total error", line=dict(color=COLORS[0]),
                   hovertemplate="K = %{x}: %{y:.3g}<extra>total</extra>"),
        go.Scatter(x=list(ks), y=inputs, mode="lines", name="input rounding", line=dict(color=COLORS[1], dash="dot")),
        go.Scatter(x=list(ks), y=acc, mode="lines", name="accumulation", line=dict(color=COLORS[2], dash="dash")),
        go.Scatter(x=[k], y=[at], mode="markers", name="this K", marker=dict(size=11, color=COLORS[3]), showlegend=False),
    ]
    title = f"{dtype} inputs, sums: {path}"
    readout = f"K = {k}: typical {at:.2g} (inputs {at_in:.2g}, sums {at_acc:.2g})"
    return traces, title, readout


def precision_figure(choices=PRECISION_CHOICES, ks=PRECISION_KS) -> go.Figure:
    """Static precision explorer, three inputs: the dropdown picks (input format, accumulation
    path), the slider K; curves give the typical error of a length-K dot product and its two parts."""
    choices, ks = [tuple(c) for c in choices], list(ks)
    return grid_figure(
        slider=("K", ks, str),
        choices=("inputs, sums", choices, lambda c: f"{c[0]}, sums {c[1]}"),
        frame=_precision_frame,
        layout=_precision_layout(),
        active=(0, ks.index(4096) if 4096 in ks else 0),
    )


HOPPER_SUMS = {"Hopper fp8, fast": True, "Hopper fp8, promoted": False}


def precision_calculator():
    """Live precision explorer: input format, K, where the sums are kept (an IEEE-like format, or
    Hopper's fp8 accumulator with or without promotion) -> range and expected error."""
    import ipywidgets as w

    controls = {
        "dtype": w.Dropdown(options=list(PRECISION_DTYPES), value="bf16", description="inputs"),
        "k": w.IntText(value=4096, description="K"),
        "accumulate": w.Dropdown(options=["fp32", *HOPPER_SUMS, "tf32", "bf16", "fp16"], value="fp32", description="sums in"),
    }

    def compute(dtype, k, accumulate):
        e = tc.dot_error(k, dtype)
        if accumulate not in HOPPER_SUMS:
            return tc.dot_error(k, dtype, accumulate), None, accumulate
        if e.dtype not in ("fp8_e4m3", "fp8_e5m2"):
            raise ValueError(f"accumulate: Hopper's narrow accumulator serves fp8 inputs only, got dtype={dtype!r}; "
                             "pick fp32 sums for other formats")
        return e, tc.tensor_core_accumulation_error(k, dtype, HOPPER_SUMS[accumulate]), accumulate

    def show(result):
        e, acc, path = result
        if acc is None:
            rows, total, curve = precision_rows(e), e.typical_error, path
        else:
            total = tc.tensor_core_dot_error(e.k, e.dtype, HOPPER_SUMS[path])
            a = tc.accumulator(e.dtype, HOPPER_SUMS[path])
            rows = precision_rows(e)[:4] + [
                ("accumulator (effective)", f"{a.significand_bits} bits, u = {acc.u_acc:.3g}" +
                 (f", promoted to fp32 every {a.promote_every_k}" if a.promote_every_k else ", never promoted")),
                ("deterministic bound (of sum |x y|)", f"{2 * e.u_in + acc.deterministic_bound:.3g}"),
                (f"probabilistic bound (of sum |x y|), P >= {acc.probability:.0%}", f"{2 * e.u_in + acc.probabilistic_bound:.3g}"),
                ("typical error, random data (of |x.y|)", f"{total:.3g}"),
                ("source (calibrated)", a.source),
            ]
            curve = "Hopper fast" if HOPPER_SUMS[path] else "Hopper precise"
        tot, inputs, accs = precision_errors(e.dtype, curve, PRECISION_CURVE_KS)
        fig = go.Figure([
            go.Scatter(x=list(PRECISION_CURVE_KS), y=tot, mode="lines", name="typical total error", line=dict(color=COLORS[0])),
            go.Scatter(x=list(PRECISION_CURVE_KS), y=inputs, mode="lines", name="input rounding", line=dict(color=COLORS[1], dash="dot")),
            go.Scatter(x=list(PRECISION_CURVE_KS), y=accs, mode="lines", name="accumulation", line=dict(color=COLORS[2], dash="dash")),
            go.Scatter(x=[e.k], y=[total], mode="markers", name="this K", marker=dict(size=11, color=COLORS[3])),
        ])
        set_layout(fig, **_precision_layout())
        style_figure(fig, title=f"{e.dtype} inputs, sums in {path}", readout=f"K = {e.k}: typical {total:.2g}")
        return table_html(rows), fig

    return live_form(compute, controls, show, title="Precision explorer: a dot product of length K")


def format_table(dtypes=tuple(tc.FORMATS)) -> str:
    """Bits, unit roundoff and range of each format (HTML)."""
    head = ["format", "exponent bits", "fraction bits", "u", "largest finite", "smallest normal", "smallest subnormal"]
    rows = []
    for d in dtypes:
        f = tc.number_format(d)
        rows.append([f.name, f.exp_bits, f.man_bits, f"2^-{f.man_bits + 1}", f"{f.max_normal:.5g}", f"{f.min_normal:.3g}", f"{f.min_subnormal:.3g}"])
    return html_table(head, rows)


# --------------------------------------------------------------------------------------------
# Plots of measurements (data in, figures out)
# --------------------------------------------------------------------------------------------
def throughput_label(r: dict) -> str:
    """A short label for one ``measure_dtype_throughput`` row: dtype, fp8 accumulation mode, data."""
    note = r.get("note") or ""
    lab = r["dtype"]
    if "use_fast_accum=True" in note:
        lab += " fast"
    elif "use_fast_accum=False" in note:
        lab += " precise"
    if r.get("data", "randn") != "randn":
        lab += f" ({r['data']})"
    return lab


def throughput_plot(rows: list[dict], title: str = "", readout: str | None = None) -> go.Figure:
    """Measured GEMM throughput per data type, burst and (where recorded) sustained, beside the
    catalog's dense peak. ``rows`` are ``measure_dtype_throughput`` records (rows without a
    measurement are skipped)."""
    rows = [r for r in rows if r.get("flop_per_s") is not None and r["flop_per_s"] == r["flop_per_s"]]
    labels = [throughput_label(r) for r in rows]
    fig = go.Figure([go.Bar(x=labels, y=[r["flop_per_s"] / 1e12 for r in rows], name="burst (median)", marker_color=COLORS[0])])
    if any(r.get("sustained") for r in rows):
        fig.add_trace(go.Bar(x=labels, y=[(r["sustained"] or {}).get("flop_per_s", 0) / 1e12 if r.get("sustained") else None for r in rows],
                             name="sustained (median)", marker_color=COLORS[2]))
    if any(r.get("peak_flop_per_s") for r in rows):
        fig.add_trace(go.Bar(x=labels, y=[(r.get("peak_flop_per_s") or 0) / 1e12 for r in rows], name="catalog dense peak", marker_color="#999999"))
    set_layout(fig, barmode="group", yaxis=dict(title="TFLOP/s"))
    return style_figure(fig, title=title, readout=readout, height=420)


def sweep_plot(ns, series: dict, title: str = "", readout: str | None = None) -> go.Figure:
    """Throughput against N; ``series`` maps a label to TFLOP/s values (measured or predicted)."""
    fig = go.Figure()
    for (label, y), color in zip(series.items(), COLORS):
        dash = "dash" if label.startswith("predicted") else "solid"
        fig.add_trace(go.Scatter(x=list(ns), y=list(y), mode="lines+markers" if dash == "solid" else "lines", name=label,
                                 line=dict(color=color, dash=dash), marker=dict(size=5)))
    set_layout(fig, xaxis=dict(title="N (columns of C)"), yaxis=dict(title="TFLOP/s", rangemode="tozero"))
    return style_figure(fig, title=title, readout=readout, height=440)


def precision_model(r: dict, kind: str, ks) -> np.ndarray:
    """The model's typical error for the rows like ``r`` (a ``measure_precision`` row) over ``ks``:
    the Hopper accumulator of its data type and mode (fp32 sums for fp16/bf16/tf32/fp32); rows
    whose method is a CPU emulation (inputs rounded, fp32 matmul) get the fp32-sums model."""
    d, fast = r["dtype"], bool(r.get("fast_accum"))
    if str(r.get("method", "")).startswith("emulated"):
        return tc.typical_dot_error(list(ks), d, "fp32", input_rounding=(kind == "total"))
    if kind == "total":
        return np.array([tc.tensor_core_dot_error(int(k), d, fast) for k in ks])
    return np.array([tc.tensor_core_accumulation_error(int(k), d, fast).typical_error for k in ks])


def precision_plot(records: list[dict], kind: str = "total", title: str = "", readout: str | None = None) -> go.Figure:
    """Measured relative error against K per data type (markers) with the model's typical error
    (dashed lines). ``records`` are ``measure_precision`` rows; ``kind`` is ``"total"`` (inputs
    rounded, then multiplied) or ``"accumulation"`` (the GEMM's own error)."""
    fig = go.Figure()
    labels = []
    for r in records:
        lab = r["dtype"] + (" fast" if r.get("fast_accum") else " precise" if r["dtype"] == "fp8" else "")
        if lab not in labels:
            labels.append(lab)
    for lab, color in zip(labels, COLORS):
        rs = [r for r in records if r["dtype"] + (" fast" if r.get("fast_accum") else " precise" if r["dtype"] == "fp8" else "") == lab]
        ks = [r["k"] for r in rs]
        fig.add_trace(go.Scatter(x=ks, y=[r[kind] for r in rs], mode="markers", name=lab, marker=dict(color=color, size=8)))
        fig.add_trace(go.Scatter(x=ks, y=precision_model(rs[0], kind, ks), mode="lines", name=f"{lab} model",
                                 line=dict(color=color, dash="dash"), showlegend=False))
    set_layout(fig, xaxis=dict(type="log", title="K"), yaxis=dict(type="log", title="relative error (Frobenius)", exponentformat="power"))
    return style_figure(fig, title=title, readout=readout, height=480)


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_peak(answer_flop_per_s, gpu: str = "H100-SXM", dtype: str = "fp8") -> bool:
    """Is ``answer_flop_per_s`` the dense ``dtype`` peak of ``gpu`` from first principles (within 0.5%)?"""
    c = tc.peak_check(gpu, dtype)
    try:
        a = float(answer_flop_per_s)
    except (TypeError, ValueError):
        return _verdict(False, f"the answer must be a number of FLOP/s, got {answer_flop_per_s!r}")
    if abs(a - c.peak_flop_per_s) <= 0.005 * c.peak_flop_per_s:
        return _verdict(True, peak_summary(c))
    if abs(a - 2 * c.peak_flop_per_s) <= 0.005 * c.peak_flop_per_s:
        return _verdict(False, "that is the 2:4 sparse figure, twice the dense peak")
    if abs(a * 1e12 - c.peak_flop_per_s) <= 0.005 * c.peak_flop_per_s:
        return _verdict(False, "right number, wrong unit: give FLOP/s, not TFLOP/s")
    return _verdict(False, f"{fmt_flop_per_s(a)} is not {gpu}'s dense {dtype} peak: multiply SMs, clock and FLOP per clock per SM")


def check_waves(tiles, waves, wave_efficiency, m: int = 5120, n: int = 5120, tile_m: int = 128, tile_n: int = 256, sms: int = 132) -> bool:
    """Are (tiles, waves, wave efficiency) right for this GEMM (efficiency within 0.01)?"""
    t, w, eff = tc.gemm_waves(m, n, tile_m, tile_n, sms)
    if tiles != t:
        return _verdict(False, f"tiles: {tiles!r} is not right: count the tiles along each side of the output, a partial "
                               "tile counting as a whole one, and multiply")
    if waves != w:
        hint = " (the partial last wave counts as a whole one)" if waves == w - 1 else ""
        return _verdict(False, f"waves: {waves} is wrong{hint}")
    try:
        close = abs(float(wave_efficiency) - eff) <= 0.01
    except (TypeError, ValueError):
        close = False
    if not close:
        return _verdict(False, f"wave efficiency is tiles / (waves x SMs), not {wave_efficiency!r}")
    return _verdict(True, f"{t} tiles in {w} waves on {sms} SMs: {eff:.1%} of the SM-slots do work")


def check_wave_model(fn, trials: int = 300, seed: int = 0) -> bool:
    """Check a reader's ``fn(m, n, tile_m, tile_n, sms) -> (tiles, waves, wave_efficiency)``
    against the model on random shapes."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        m, n = (int(x) for x in rng.integers(1, 20000, size=2))
        tm, tn = int(rng.choice(TILES)), int(rng.choice(TILES))
        sms = int(rng.choice([58, 108, 132, 148, 304]))
        want = tc.gemm_waves(m, n, tm, tn, sms)
        try:
            got = fn(m, n, tm, tn, sms)
        except Exception as exc:  # a reader's bug: report it, don't crash the notebook
            return _verdict(False, f"your function raised {exc!r} for m={m}, n={n}, tiles {tm}x{tn}, {sms} SMs")
        try:
            ok = int(got[0]) == want[0] and int(got[1]) == want[1] and abs(float(got[2]) - want[2]) < 1e-9
        except (TypeError, ValueError, IndexError):
            ok = False
        if not ok:
            return _verdict(False, f"m={m}, n={n}, tiles {tm}x{tn}, {sms} SMs: expected {want}, got {got!r}")
    return _verdict(True, f"{trials} random GEMMs: tiles, waves and wave efficiency all right")


def check_format_max(dtype: str, answer) -> bool:
    """Is ``answer`` the largest finite value of ``dtype``?"""
    f = tc.number_format(dtype)
    try:
        a = float(answer)
    except (TypeError, ValueError):
        return _verdict(False, f"the answer must be a number, got {answer!r}")
    if a == f.max_normal:
        return _verdict(True, f"{f.name}: largest finite {f.max_normal:g}")
    return _verdict(False, f"{a:g} is not the largest finite {f.name}: (2 - 2^-fraction bits) x 2^emax, minding which codes are NaN/inf")




def peak_table(gpus=PEAK_GPUS) -> str:
    """Every catalog peak rebuilt from SMs x clock x FLOP/clock/SM, with the clock it implies and whether
    the rebuild is a check or holds by construction (an input derived from that peak) (HTML).

    The verdict is the third column, so that it shows without scrolling on a laptop; a row that holds by
    construction carries a note number, and the notes (which input was derived, and from what) are
    printed under the table, where a phone reader can read them (a hover title cannot be hovered there)."""
    rows, notes = [], {}  # note text -> (number, the GPUs it applies to)
    for g in gpus:
        for d in PEAK_DTYPES:
            if d in tc.FLOP_PER_CLOCK_PER_SM.get(g, {}):
                c = tc.peak_check(g, d)
                verdict = c.agreement
                if c.by_construction:
                    k, on = notes.setdefault(c.by_construction, (len(notes) + 1, []))
                    if g not in on:
                        on.append(g)
                    verdict += f"<sup>{k}</sup>"
                # the verdict may wrap (book/_static/gpubook.css .wraps): on a phone its note number stays in view
                rows.append([g, d, f'<span class="wraps">{verdict}</span>', c.sms, c.flop_per_clock_per_sm, f"{c.clock_hz / 1e6:.0f} MHz",
                             fmt_flop_per_s(c.peak_flop_per_s, 4), fmt_flop_per_s(c.catalog_flop_per_s, 4),
                             f"{c.implied_clock_hz / 1e6:.0f} MHz"])
    table = html_table(["GPU", "dtype", "agreement", "SMs", "FLOP/clock/SM", "clock", "first principles", "catalog",
                        "clock the catalog implies"], rows)
    if not notes:
        return table
    items = "".join(f"<li value=\"{k}\">{html.escape(', '.join(on))}: {html.escape(text)}.</li>"
                    for text, (k, on) in notes.items())
    return f'{table}<ol class="table-notes">{items}</ol>'


def check_mma_clocks(clocks, warps, gpu: str = "A100-SXM-80GB", dtype: str = "bf16") -> bool:
    """Are ``clocks`` (fewest clocks of one warp's ``mma.sync.m16n8k16``) and ``warps`` (fewest
    warps issuing them to keep every tensor core of the SM busy) right for ``gpu``?"""
    rate = tc.FLOP_PER_CLOCK_PER_SM[gpu][dtype]
    want = tc.instruction_clocks(16, 8, 16, rate)
    try:
        c = float(clocks)
    except (TypeError, ValueError):
        return _verdict(False, f"clocks must be a number, got {clocks!r}")
    if c == tc.instruction_clocks(16, 8, 16, rate, tensor_cores_used=tc.TENSOR_CORES_PER_SM):
        return _verdict(False, "that is the SM-wide rate: one warp's mma.sync runs on one of the SM's four tensor cores")
    if c != want:
        return _verdict(False, f"{c:g} clocks is not right: count the FLOP of one m16n8k16 (a multiply and an add per "
                               "term), at the rate of the one tensor core that runs it")
    if isinstance(warps, bool) or warps != tc.TENSOR_CORES_PER_SM:
        return _verdict(False, f"warps: {warps!r} is not right: how many tensor cores does the SM have, and how many of them "
                               "can one warp's instruction use?")
    return _verdict(True, f"{want:g} clocks per mma.sync on one tensor core; {tc.TENSOR_CORES_PER_SM} warps, one per sub-partition")


# --------------------------------------------------------------------------------------------
# The GEMM tile hierarchy: intensity per level against each level's ridge
# --------------------------------------------------------------------------------------------
# (bm, bn, bk, stages, warps): the block tiles of the static calculator's slider
TILE_CONFIGS = ((64, 64, 64, 4, 4), (128, 128, 64, 4, 4), (128, 256, 64, 3, 8), (256, 128, 64, 3, 8))
TILE_CHOICES = (("H200-SXM", "bf16"), ("H200-SXM", "fp8"),
                *((g, "bf16" if "bf16" in get_gpu(g).peak_flop_per_s else "fp16") for g in gpu_names() if g != "H200-SXM"))
TILE_LEVEL_COLORS = {"HBM": series_color(0), "L2": series_color(1), "shared memory": series_color(2), "compute": series_color(3)}


def tile_config_label(cfg) -> str:
    """``128x256`` (block tile) for a slider: short, so four labels fit a phone-wide slider."""
    return f"{cfg[0]}x{cfg[1]}"


def tile_why_not(gpu: str) -> str | None:
    """Why the tile-hierarchy model does not apply to ``gpu`` (None where it does)."""
    g = get_gpu(gpu)
    if g.vendor != "NVIDIA":
        return (f"{gpu}: the shared-memory level is modelled for NVIDIA SMs (32 banks x 4 B per clock); "
                f"{g.vendor}'s LDS is not described in the catalog")
    return None


def tile_hierarchy_for(gpu: str, dtype: str, cfg, l2_bytes_per_s: dict | None = None, n: int = 8192) -> tc.TileHierarchy:
    """:func:`widgets.models.tensor_cores.tile_hierarchy` for a slider's ``cfg`` (wgmma tiles on sm_90,
    ``mma.sync`` warp tiles elsewhere), with the measured L2 bandwidth where ``l2_bytes_per_s`` has one."""
    bm, bn, bk, st, w = cfg
    g = get_gpu(gpu)
    wm, wn = tc.smem_read_tile(bm, bn, w, wgmma=g.arch == "sm_90")
    l2 = (l2_bytes_per_s or {}).get(gpu)
    return tc.tile_hierarchy(g, dtype, bm, bn, bk, wm, wn, st, w, m=n, n=n, k=n, l2_bytes_per_s=l2)


def tile_rows(h: tc.TileHierarchy, l2_source: str = "") -> list[tuple[str, str]]:
    """The live form's table. ``l2_source`` says where the L2 bandwidth came from (e.g. "measured on
    H200-SXM", "you entered"); with no L2 bandwidth the table says there is none for this GPU."""
    rows = [("block tile (loads from L2)", f"{h.block_intensity:.1f} FLOP/B"),
            ("shared-memory read tile", f"{h.smem_intensity:.1f} FLOP/B against a ridge of {h.smem_ridge:.0f}"),
            ("one wave (from HBM)", f"{h.wave_intensity:.0f} FLOP/B against a ridge of {h.hbm_ridge:.0f}")]
    if h.l2_ridge is not None:
        rows.append((f"L2 ridge (L2 bandwidth {l2_source or 'given'})", f"{h.l2_ridge:.0f} FLOP/B"))
    else:
        rows.append(("L2", "no L2 figure for this GPU (no record of it; the catalog publishes none): level left out"))
    rows += [(f"{name} allows", fmt_flop_per_s(v)) for name, v in h.level_flop_per_s.items()]
    lim = f" of {fmt_bytes(h.smem_limit_bytes)}" if h.smem_limit_bytes else ""
    # a tile that does not fit cannot launch: its rate is what it would allow, not an attainable one
    # (reader review r6 #10)
    rate = fmt_flop_per_s(h.attainable_flop_per_s)
    rows += [("attainable", f"{rate} ({h.bound}-bound)" if h.fits else
              f"none: the tile does not fit, it cannot launch (it would allow {rate}, {h.bound}-bound)"),
             ("shared memory for the stages", fmt_bytes(h.smem_bytes) + lim),
             ("fp32 accumulators per thread", f"{h.acc_registers_per_thread:.0f} registers"),
             ("fits", "yes" if h.fits else "no: too much shared memory or too many registers")]
    return rows


def tile_readout(h: tc.TileHierarchy) -> str:
    fit = "" if h.fits else "; does NOT fit, cannot launch"
    rate = fmt_flop_per_s(h.attainable_flop_per_s)
    return (("would be " if not h.fits else "") + f"{h.bound}-bound at {rate}; read tile {h.smem_intensity:.0f} vs "
            f"ridge {h.smem_ridge:.0f} FLOP/B; {fmt_bytes(h.smem_bytes)} smem{fit}")


def _tile_traces(h: tc.TileHierarchy | None, gpu: str) -> list:
    levels = list(h.level_flop_per_s) if h else ["HBM", "shared memory", "compute"]
    ys = [h.level_flop_per_s[x] / 1e12 for x in levels] if h else [None] * len(levels)
    return [
        go.Bar(x=levels, y=ys, marker=dict(color=[TILE_LEVEL_COLORS.get(x, "#888888") for x in levels]), name="rate each level allows",
               hovertemplate="%{x}: %{y:.4g} TFLOP/s<extra></extra>"),
        go.Scatter(x=levels, y=[h.attainable_flop_per_s / 1e12] * len(levels) if h else [None] * len(levels), mode="lines",
                   name="attainable (the lowest)", line=dict(color="#666666", dash="dash", width=2.5)),
    ]


def _tile_layout() -> dict:
    return dict(xaxis=dict(title="level"), yaxis=dict(title="FLOP/s it allows [TFLOP/s]", type="log", range=[2, 4.3], dtick=1))


def tile_figure(choices=TILE_CHOICES, configs=TILE_CONFIGS, l2_bytes_per_s: dict | None = None) -> go.Figure:
    """Static tile-hierarchy calculator: the dropdown picks (GPU, data type), the slider the block
    tile; bars show the FLOP/s each level allows (intensity x bandwidth; compute: peak x wave
    efficiency at 8192^3), the dashed line the lowest. ``l2_bytes_per_s`` maps a GPU to a measured
    L2 bandwidth (the catalog publishes none) to add that level."""
    choices, configs = [tuple(c) for c in choices], [tuple(c) for c in configs]

    def frame(choice, cfg):
        gpu, dtype = choice
        why = tile_why_not(gpu)
        if why:
            return _tile_traces(None, gpu), f"{gpu} {dtype}, {tile_config_label(cfg)} tile", why
        h = tile_hierarchy_for(gpu, dtype, cfg, l2_bytes_per_s)
        return _tile_traces(h, gpu), f"{gpu} {dtype}, {tile_config_label(cfg)} tile, {cfg[3]} stages", tile_readout(h)

    ci = choices.index(("H200-SXM", "bf16")) if ("H200-SXM", "bf16") in choices else 0
    si = next((i for i, c in enumerate(configs) if c[:2] == (128, 256)), 0)
    return grid_figure(slider=("block tile", configs, tile_config_label),
                       choices=("GPU, dtype", choices, lambda c: f"{c[0]} {c[1]}"),
                       frame=frame, layout=_tile_layout(), active=(ci, si))


def tile_calculator(l2_bytes_per_s: dict | None = None):
    """Live tile-hierarchy calculator: GPU, data type, block tile, K step, stages, warps, the
    instruction that reads shared memory (``wgmma`` tiles of 64 x N, or ``mma.sync`` warp tiles)
    and an optional L2 bandwidth -> intensity at each level, the bound, shared memory and
    registers. ``l2_bytes_per_s`` maps a GPU to its measured L2 bandwidth: it is used for that GPU
    only and labelled "measured on <GPU>"; other GPUs get no L2 level unless the reader types one in
    the "L2 TB/s" field (labelled "you entered", never "measured")."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=gpu_names(), value="H200-SXM", description="GPU"),
        "dtype": w.Dropdown(options=list(PEAK_DTYPES), value="bf16", description="dtype"),
        "bm": w.Dropdown(options=(32, 64, 128, 256), value=128, description="tile M"),
        "bn": w.Dropdown(options=(32, 64, 128, 256), value=256, description="tile N"),
        "bk": w.Dropdown(options=(16, 32, 64, 128), value=64, description="tile K"),
        "stages": w.IntSlider(value=3, min=1, max=8, description="stages"),
        "warps": w.Dropdown(options=(1, 2, 4, 8, 16), value=8, description="warps"),
        "mma": w.Dropdown(options=("auto", "wgmma", "mma.sync"), value="auto", description="instruction"),
        # 0 = the chosen GPU's measured L2 where a record has one, else no L2 level; a value typed
        # here is the reader's own, for whichever GPU is chosen
        "l2_tb_per_s": w.FloatText(value=0.0, description="L2 TB/s (0: measured, if any)"),
    }

    def compute(gpu, dtype, bm, bn, bk, stages, warps, mma, l2_tb_per_s):
        why = tile_why_not(gpu)
        if why:
            raise ValueError(why)
        g = get_gpu(gpu)
        # auto: wgmma where the GPU has it (sm_90), mma.sync warp tiles elsewhere
        wgmma = g.arch == "sm_90" if mma == "auto" else mma == "wgmma"
        wm, wn = tc.smem_read_tile(bm, bn, warps, wgmma=wgmma)
        if l2_tb_per_s:
            l2, source = l2_tb_per_s * 1e12, "you entered"
        else:
            l2 = (l2_bytes_per_s or {}).get(gpu)
            source = f"measured on {gpu}"
        h = tc.tile_hierarchy(g, dtype, bm, bn, bk, wm, wn, stages, warps, m=8192, n=8192, k=8192, l2_bytes_per_s=l2)
        return gpu, h, source

    def show(result):
        gpu, h, source = result
        fig = go.Figure(_tile_traces(h, gpu))
        set_layout(fig, **_tile_layout())
        style_figure(fig, title=f"{gpu}: the rate each level allows", readout=tile_readout(h))
        return table_html(tile_rows(h, source)), fig

    return live_form(compute, controls, show, title="GEMM tile hierarchy: intensity per level",
                     names={"l2_bytes_per_s": ("l2_tb_per_s", 1e-12)})


def check_smem_ridge(answer, gpu: str = "H100-SXM", dtype: str = "bf16") -> bool:
    """Is ``answer`` the FLOP per shared-memory byte ``gpu``'s SMs need in ``dtype`` (within 1%)?"""
    rate = get_gpu(gpu).flop_per_clock_per_sm.get(dtype)
    want = tc.smem_ridge_flop_per_byte(rate)
    try:
        a = float(answer)
    except (TypeError, ValueError):
        return _verdict(False, f"the answer must be a number of FLOP/B, got {answer!r}")
    if abs(a - want) <= 0.01 * want:
        return _verdict(True, f"{rate:.0f} FLOP per clock per SM / 128 B per clock per SM = {want:g} FLOP/B, whatever the clock")
    if abs(a - want / 2) <= 0.01 * want:
        return _verdict(False, f"that is an A100's ridge: {gpu} does twice the FLOP per clock per SM with the same 128 B")
    return _verdict(False, f"{a:g} FLOP/B is not it: divide the SM's FLOP per clock by what 32 banks of 4 B deliver per clock")


def check_stages(answer, bm: int = 128, bn: int = 128, bk: int = 64, gpu: str = "H200-SXM", dtype: str = "bf16",
                 latency_s: float = 800e-9) -> int:
    """Is ``answer`` the number of shared-memory stages a ``bm x bn x bk`` tile needs at ``latency_s``,
    running at ``gpu``'s dense peak (Little's law, :func:`widgets.models.tensor_cores.pipeline_stages`)?"""
    g = get_gpu(gpu)
    p = tc.pipeline_stages(bm, bn, bk, dtype, g.peak(dtype) / g.sms, latency_s)
    ok = answer == p.stages_needed and not isinstance(answer, bool)
    msg = (f"a step of {fmt_time(p.step_s)} consumes {fmt_bytes(p.stage_bytes)}; {fmt_time(latency_s)} of latency keeps "
           f"{fmt_bytes(p.in_flight_bytes)} in flight: {p.stages_needed - 2} stage(s) loading + 1 being read + 1 still read by the "
           f"wgmma in flight = {p.stages_needed}")
    return _verdict(ok, msg if ok else f"not {answer!r}: {msg}")


def check_block_bits(answer, fmt: str = "nvfp4") -> bool:
    """Is ``answer`` the bits per element of ``fmt`` counting its share of the block scale (within 0.01)?"""
    d = dtypes.get_dtype(fmt)
    try:
        a = float(answer)
    except (TypeError, ValueError):
        return _verdict(False, f"the answer must be a number of bits, got {answer!r}")
    ok = abs(a - d.bits_with_scales) <= 0.01
    msg = f"{d.bits} bits + an {d.scale_bits}-bit scale shared by {d.block_size} = {d.bits_with_scales:g} bits per element"
    return _verdict(ok, msg if ok else f"not {a:g}: {msg}")
