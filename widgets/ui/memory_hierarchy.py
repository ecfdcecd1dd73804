"""Calculators for the memory-hierarchy chapter: roofline, coalescing, shared-memory banks.

Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly
frames precomputed by the same model) that works in the published page without a kernel.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..hardware import DTYPES, get_gpu, gpu_names
from ..models import memory_hierarchy as mh
from ..units import fmt_bytes_per_s, fmt_flop_per_s, fmt_intensity
from ._core import frames_figure, live_form, table_html
from ._core import verdict as _verdict

ROOFLINE_GPUS = ("H200-SXM", "H100-SXM", "A100-SXM-80GB", "B200", "MI300X", "L4")
INTENSITIES = np.logspace(-1, 4, 501)
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


# --------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------
def _roofline_traces(point: mh.RooflinePoint, color: str, show_curve_legend: bool = True) -> list:
    curve = mh.attainable_flop_per_s(INTENSITIES, point.peak_flop_per_s, point.bytes_per_s) / 1e12
    return [
        go.Scatter(x=INTENSITIES, y=curve, mode="lines", name=f"{point.gpu} ({point.dtype})", line=dict(color=color), showlegend=show_curve_legend),
        go.Scatter(
            x=[point.intensity],
            y=[point.attainable_flop_per_s / 1e12],
            mode="markers",
            marker=dict(size=11, color=color, line=dict(color="black", width=1)),
            name=f"{point.gpu}: kernel",
            showlegend=False,
            hovertemplate=f"{point.gpu}<br>%{{x:.3g}} FLOP/B -> %{{y:.4g}} TFLOP/s<extra></extra>",
        ),
    ]


def _roofline_layout() -> dict:
    return dict(
        xaxis=dict(type="log", title="arithmetic intensity [FLOP/B]"),
        yaxis=dict(type="log", title="attainable [TFLOP/s]"),
        height=480,
        legend=dict(orientation="h", y=-0.2),
    )


def roofline_summary(p: mh.RooflinePoint) -> str:
    return (
        f"{p.gpu} {p.dtype} at {fmt_intensity(p.intensity)}: {fmt_flop_per_s(p.attainable_flop_per_s)} "
        f"({p.bound}-bound, {p.fraction_of_peak:.1%} of peak; ridge {fmt_intensity(p.ridge_intensity)})"
    )


def roofline_figure(dtype: str = "bf16", gpus=ROOFLINE_GPUS, intensities=None) -> go.Figure:
    """Static roofline: one curve per GPU; the slider moves a kernel's intensity."""
    gpus = [g for g in gpus if dtype in get_gpu(g).peak_flop_per_s]
    values = list(intensities if intensities is not None else np.round(np.logspace(-1, 4, 26), 3))

    def frame(i):
        traces = []
        for g, color in zip(gpus, COLORS):
            traces += _roofline_traces(mh.roofline_point(g, dtype, i), color)
        return traces, roofline_summary(mh.roofline_point(gpus[0], dtype, i))

    return frames_figure(values, frame, slider_prefix="intensity [FLOP/B]: ", value_label=lambda v: f"{v:.3g}", layout=_roofline_layout())


def roofline_calculator():
    """Live roofline: choose GPU and dtype, move the intensity."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=gpu_names(), value="H200-SXM", description="GPU"),
        "dtype": w.Dropdown(options=DTYPES, value="bf16", description="dtype"),
        "intensity": w.FloatLogSlider(value=10, base=10, min=-1, max=4, step=0.05, description="FLOP/B"),
    }

    def show(p: mh.RooflinePoint):
        rows = [
            ("dense peak", fmt_flop_per_s(p.peak_flop_per_s)),
            ("HBM bandwidth", fmt_bytes_per_s(p.bytes_per_s)),
            ("ridge point", fmt_intensity(p.ridge_intensity)),
            ("attainable", fmt_flop_per_s(p.attainable_flop_per_s)),
            ("bound", f"{p.bound} ({p.fraction_of_peak:.1%} of peak)"),
        ]
        fig = go.Figure(_roofline_traces(p, COLORS[0]))
        fig.update_layout(template="plotly_white", **_roofline_layout())
        return table_html(rows), fig

    return live_form(mh.roofline_point, controls, show, title="Roofline")


# --------------------------------------------------------------------------------------------
# Coalescing
# --------------------------------------------------------------------------------------------
def _coalescing_trace(stride: int, elem_bytes: int, offset: int) -> go.Bar:
    usage = mh.sector_usage(stride, elem_bytes, offset)
    return go.Bar(
        x=list(range(len(usage))),
        y=list(usage.values()),
        customdata=list(usage.keys()),
        marker_color=["#2ca02c" if b == mh.SECTOR_BYTES else "#ff7f0e" for b in usage.values()],
        hovertemplate="sector %{customdata}: %{y} useful bytes of 32<extra></extra>",
        name="useful bytes per sector",
    )


def coalescing_summary(stride: int, elem_bytes: int = 4, offset: int = 0) -> str:
    c = mh.coalescing(stride, elem_bytes, offset)
    return (
        f"stride {stride}, {elem_bytes} B elements, offset {offset}: {c.sectors} sectors "
        f"({c.lines} of 128 B), {c.requested_bytes} B used of {c.moved_bytes} B moved = {c.efficiency:.0%}"
    )


def _coalescing_layout(elem_bytes: int) -> dict:
    max_sectors = mh.WARP_SIZE * max(1, elem_bytes // mh.SECTOR_BYTES + 1) + 1
    return dict(
        xaxis=dict(title="sector touched (in address order)", range=[-0.5, max_sectors]),
        yaxis=dict(title="useful bytes in the sector", range=[0, mh.SECTOR_BYTES * 1.05]),
        height=380,
        showlegend=False,
    )


def coalescing_figure(elem_bytes: int = 4, offset: int = 0, strides=range(0, 33)) -> go.Figure:
    """Static coalescing calculator: the slider moves the lane stride."""
    return frames_figure(
        list(strides),
        lambda s: ([_coalescing_trace(s, elem_bytes, offset)], coalescing_summary(s, elem_bytes, offset)),
        slider_prefix="stride [elements]: ",
        layout=_coalescing_layout(elem_bytes),
        active=1,
    )


def coalescing_calculator():
    """Live coalescing calculator: element size, stride, offset -> sectors and efficiency."""
    import ipywidgets as w

    controls = {
        "stride_elems": w.IntSlider(value=1, min=0, max=64, description="stride"),
        "elem_bytes": w.Dropdown(options=mh.ELEM_BYTES, value=4, description="elem bytes"),
        "offset_elems": w.IntSlider(value=0, min=0, max=31, description="offset"),
    }

    def compute(stride_elems, elem_bytes, offset_elems):
        return stride_elems, elem_bytes, offset_elems, mh.coalescing(stride_elems, elem_bytes, offset_elems)

    def show(result):
        s, e, o, c = result
        rows = [
            ("sectors (32 B)", str(c.sectors)),
            ("cache lines (128 B)", str(c.lines)),
            ("bytes requested", f"{c.requested_bytes} B"),
            ("bytes moved", f"{c.moved_bytes} B"),
            ("efficiency", f"{c.efficiency:.1%}"),
        ]
        fig = go.Figure([_coalescing_trace(s, e, o)])
        fig.update_layout(template="plotly_white", title_text=coalescing_summary(s, e, o), **_coalescing_layout(e))
        return table_html(rows), fig

    return live_form(compute, controls, show, title="Coalescing: one warp-wide load")


# --------------------------------------------------------------------------------------------
# Shared-memory bank conflicts
# --------------------------------------------------------------------------------------------
def _bank_trace(stride: int, elem_bytes: int) -> go.Bar:
    loads = mh.bank_loads(stride, elem_bytes)
    return go.Bar(
        x=list(range(mh.SMEM_BANKS)),
        y=loads.tolist(),
        marker_color=["#2ca02c" if v <= 1 else "#d62728" for v in loads.tolist()],
        hovertemplate="bank %{x}: %{y} distinct words<extra></extra>",
        name="distinct words per bank",
    )


def bank_summary(stride: int, elem_bytes: int = 4) -> str:
    wf = mh.bank_conflict_wavefronts(stride, elem_bytes)
    ideal = mh.ideal_wavefronts(elem_bytes)
    verdict = "conflict-free" if wf == ideal else f"{wf // ideal}-way conflict"
    return f"stride {stride} x {elem_bytes} B: {wf} wavefronts (ideal {ideal}): {verdict}"


def _bank_layout() -> dict:
    return dict(
        xaxis=dict(title="bank", dtick=4),
        yaxis=dict(title="distinct 4-byte words requested", range=[0, 33]),
        height=380,
        showlegend=False,
    )


def bank_conflict_figure(elem_bytes: int = 4, strides=range(1, 41)) -> go.Figure:
    """Static bank-conflict calculator: the slider moves the lane stride (a row length plus
    its padding, for a column access of a row-major tile)."""
    return frames_figure(
        list(strides),
        lambda s: ([_bank_trace(s, elem_bytes)], bank_summary(s, elem_bytes)),
        slider_prefix="stride = row length + padding [elements]: ",
        layout=_bank_layout(),
        active=31 if 32 in strides else 0,
    )


def bank_conflict_calculator():
    """Live bank-conflict calculator: element size, row length (stride), padding -> wavefronts."""
    import ipywidgets as w

    controls = {
        "row_elems": w.IntSlider(value=32, min=1, max=64, description="row length"),
        "padding_elems": w.IntSlider(value=0, min=0, max=8, description="padding"),
        "elem_bytes": w.Dropdown(options=mh.ELEM_BYTES, value=4, description="elem bytes"),
    }

    def compute(row_elems, padding_elems, elem_bytes):
        stride = row_elems + padding_elems
        return stride, elem_bytes, mh.bank_conflict_wavefronts(stride, elem_bytes)

    def show(result):
        stride, e, wf = result
        rows = [
            ("lane stride", f"{stride} elements = {stride * e} B"),
            ("wavefronts", str(wf)),
            ("ideal", str(mh.ideal_wavefronts(e))),
        ]
        fig = go.Figure([_bank_trace(stride, e)])
        fig.update_layout(template="plotly_white", title_text=bank_summary(stride, e), **_bank_layout())
        return table_html(rows), fig

    return live_form(compute, controls, show, title="Shared-memory banks: a column access")


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_sector_counter(fn, trials: int = 200, seed: int = 0) -> bool:
    """Check a reader's ``fn(stride_elems, elem_bytes, offset_elems) -> sectors`` against the
    model on random warp access patterns."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        e = int(rng.choice(mh.ELEM_BYTES))
        stride = int(rng.integers(0, 40))
        offset = int(rng.integers(0, 64))
        want = mh.warp_load_sectors(stride, e, offset)
        try:
            got = fn(stride, e, offset)
        except Exception as exc:  # a reader's bug: report it, don't crash the notebook
            return _verdict(False, f"your function raised {exc!r} for stride={stride}, elem_bytes={e}, offset={offset}")
        if got != want:
            return _verdict(False, f"stride={stride}, elem_bytes={e}, offset={offset}: expected {want} sectors, got {got!r}")
    return _verdict(True, f"{trials} random warp loads counted correctly")


def check_padding(padding_elems: int, row_elems: int = 32, elem_bytes: int = 8) -> bool:
    """Is ``padding_elems`` the smallest padding that makes a column read of a
    ``row_elems``-wide tile of ``elem_bytes`` elements take the ideal number of wavefronts?"""
    ideal = mh.ideal_wavefronts(elem_bytes)
    best = next(p for p in range(0, 64) if mh.bank_conflict_wavefronts(row_elems + p, elem_bytes) == ideal)
    if not isinstance(padding_elems, (int, np.integer)) or padding_elems < 0:
        return _verdict(False, f"padding must be a non-negative integer, got {padding_elems!r}")
    wf = mh.bank_conflict_wavefronts(row_elems + int(padding_elems), elem_bytes)
    if wf != ideal:
        return _verdict(False, f"padding {padding_elems} gives {wf} wavefronts; the ideal is {ideal}")
    if padding_elems != best:
        return _verdict(False, f"padding {padding_elems} works but wastes memory: a smaller one does too")
    return _verdict(True, f"padding {padding_elems} gives {wf} wavefronts, the ideal, with the least memory")


# --------------------------------------------------------------------------------------------
# Tables and plots of the chapter (data in, figures out)
# --------------------------------------------------------------------------------------------
def hierarchy_table(gpus=("H200-SXM", "H100-SXM", "A100-SXM-80GB", "B200", "MI300X", "L4", "RTX-4090")) -> str:
    """Capacity and bandwidth of each level, per GPU, from the catalog (HTML)."""
    from ..units import fmt_bytes

    head = ["GPU", "registers (all SMs)", "shared mem / SM", "shared mem bandwidth*", "L2", "device memory", "memory bandwidth", "host link (each way)"]
    rows = []
    for name in gpus:
        g = get_gpu(name)
        rows.append(
            [
                g.name,
                fmt_bytes(g.registers_per_sm_bytes * g.sms),
                fmt_bytes(g.smem_per_sm_bytes),
                fmt_bytes_per_s(mh.smem_bytes_per_s(g.sms, g.boost_clock_hz)),
                fmt_bytes(g.l2_bytes) if g.l2_bytes else "n/a",
                f"{fmt_bytes(g.hbm_bytes)} {g.memory_type}",
                fmt_bytes_per_s(g.hbm_bytes_per_s),
                fmt_bytes_per_s(g.host_bytes_per_s),
            ]
        )
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="calc-result"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def working_set_plot(series: dict, l2_bytes: int, hbm_bytes_per_s: float) -> go.Figure:
    """Bandwidth against working-set size; ``series`` maps a label to ``(ws_bytes, bytes_per_s)``."""
    fig = go.Figure()
    for (label, (ws, bw)), color in zip(series.items(), COLORS):
        fig.add_trace(go.Scatter(x=np.asarray(ws) / 2**20, y=np.asarray(bw) / 1e12, mode="lines+markers", name=label, line=dict(color=color)))
    top = max([max(bw) for _, bw in series.values() if len(bw)] + [hbm_bytes_per_s]) / 1e12
    if l2_bytes:  # a trace, not add_vline: shapes on a log axis take log10 coordinates
        fig.add_trace(go.Scatter(x=[l2_bytes / 2**20] * 2, y=[0, top * 1.05], mode="lines", name="L2 size", line=dict(color="gray", dash="dash")))
    fig.add_hline(y=hbm_bytes_per_s / 1e12, line_dash="dot", annotation_text="HBM datasheet")
    fig.update_layout(
        template="plotly_white",
        xaxis=dict(type="log", title="working set [MiB]"),
        yaxis=dict(title="bandwidth [TB/s]"),
        height=420,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def strided_plot(series: dict) -> go.Figure:
    """Measured/predicted time ratio against stride; ``series`` maps a label to
    ``(strides, ratios)``."""
    fig = go.Figure()
    for (label, (strides, ratios)), color in zip(series.items(), COLORS):
        fig.add_trace(go.Scatter(x=strides, y=ratios, mode="lines+markers", name=label, line=dict(color=color)))
    fig.add_hrect(y0=0.75, y1=1.25, fillcolor="green", opacity=0.08, line_width=0)
    fig.update_layout(
        template="plotly_white",
        xaxis=dict(type="log", title="stride [elements of 4 B]", tickvals=[1, 2, 4, 8, 16, 32]),
        yaxis=dict(title="measured / predicted time", rangemode="tozero"),
        height=380,
        legend=dict(orientation="h", y=-0.3),
    )
    return fig
