"""Calculators for the memory-hierarchy chapter: roofline, coalescing, shared-memory banks.

Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly
frames precomputed by the same model) that works in the published page without a kernel.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..hardware import DTYPES, get_gpu, gpu_names
from ..models import memory_hierarchy as mh
from ..models import memory_hierarchy_records as _records
from ..units import fmt_bytes_per_s, fmt_flop_per_s
from ._core import (
    LOG_READOUT,
    gpu_color,
    grid_figure,
    live_form,
    percent,
    plural,
    series_color,
    set_layout,
    slider,
    style_figure,
    table_html,
)
from ._core import verdict as _verdict

# The H200 in three dtypes, then every other catalog GPU in its 16-bit tensor-core type (bf16, or
# fp16 where there is none: T4); 2 slider steps per decade keep the page light.
ROOFLINE_CHOICES = (
    ("H200-SXM", "bf16"),
    ("H200-SXM", "fp8"),
    ("H200-SXM", "fp32"),
    *((g, "bf16" if "bf16" in get_gpu(g).peak_flop_per_s else "fp16") for g in gpu_names() if g != "H200-SXM"),
)
ROOFLINE_INTENSITIES = tuple(float(f"{v:.3g}") for v in np.logspace(-1, 4, 11))  # 2 steps per decade
I_MIN, I_MAX = 0.1, 1e4
COALESCING_CHOICES = ((4, 0), (4, 1), (1, 0), (2, 0), (8, 0), (16, 0))  # (element bytes, offset)
COALESCING_STRIDES = tuple(range(0, 17)) + (20, 24, 28, 32)
BANK_ELEM_BYTES = (4, 8, 16, 2, 1)
BANK_STRIDES = tuple(range(1, 17)) + (24, 31, 32, 33, 48, 63, 64, 65)
COLORS = tuple(series_color(i) for i in range(7))


# --------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------
def _roofline_traces(point: mh.RooflinePoint) -> list:
    """The roof (exact with three points on log-log axes), the ridge and the kernel."""
    color = gpu_color(point.gpu)
    xs = [I_MIN, point.ridge_intensity, I_MAX]
    ys = [min(point.peak_flop_per_s, x * point.bytes_per_s) / 1e12 for x in xs]
    return [
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            name=f"{point.gpu} {point.dtype} roof",
            line=dict(color=color, width=3),
            hoverinfo="skip",
        ),
        go.Scatter(
            x=[point.ridge_intensity],
            y=[point.peak_flop_per_s / 1e12],
            mode="markers",
            name="ridge point",
            marker=dict(symbol="diamond", size=10, color=color),
            hovertemplate="ridge %{x:,.3~r} FLOP/B<extra></extra>",
        ),
        go.Scatter(
            x=[point.intensity],
            y=[point.attainable_flop_per_s / 1e12],
            mode="markers",
            name="your kernel",
            marker=dict(size=13, color=series_color(1), line=dict(color="#222", width=1)),
            hovertemplate="%{x:,.3~r} FLOP/B -> %{y:,.4~r} TFLOP/s<extra></extra>",
        ),
    ]


def _roofline_layout() -> dict:
    return dict(
        xaxis=dict(type="log", title="arithmetic intensity [FLOP/B]", range=[-1, 4]),
        yaxis=dict(type="log", title="attainable [TFLOP/s]", range=[-2, 4]),
    )


def intensity_label(flop_per_byte: float) -> str:
    """A reader's number, never e-notation: ``3160.0`` -> ``'3,160'``, ``17.8`` -> ``'17.8'``,
    ``0.178`` -> ``'0.178'`` (``units.fmt_intensity`` prints ``'1e+04'`` for 10,000)."""
    v = float(flop_per_byte)
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def roofline_title(p: mh.RooflinePoint) -> str:
    return f"Roofline: {p.gpu} {p.dtype}"


def roofline_summary(p: mh.RooflinePoint) -> str:
    return (
        f"{intensity_label(p.intensity)} FLOP/B -> {fmt_flop_per_s(p.attainable_flop_per_s)}: {p.bound}-bound, "
        f"{percent(p.fraction_of_peak)} of peak; ridge {intensity_label(p.ridge_intensity)} FLOP/B"
    )


def roofline_figure(choices=ROOFLINE_CHOICES, intensities=ROOFLINE_INTENSITIES) -> go.Figure:
    """Static roofline: a dropdown over (GPU, dtype), a slider over the kernel's intensity."""
    choices, values = list(choices), list(intensities)

    def frame(choice, i):
        p = mh.roofline_point(choice[0], choice[1], i)
        return _roofline_traces(p), roofline_title(p), roofline_summary(p)

    active = (0, min(range(len(values)), key=lambda k: abs(values[k] - 10)))
    return grid_figure(
        slider=("intensity [FLOP/B]", values, intensity_label),
        choices=("GPU · dtype", choices, lambda c: f"{c[0]} · {c[1]}"),
        frame=frame,
        layout=_roofline_layout(),
        active=active,
        height=500,
    )


def roofline_calculator():
    """Live roofline: choose GPU and dtype, move the intensity."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=gpu_names(), value="H200-SXM", description="GPU"),
        "dtype": w.Dropdown(options=DTYPES, value="bf16", description="dtype"),
        "intensity": w.FloatLogSlider(value=10, base=10, min=-1, max=4, step=0.05, readout_format=LOG_READOUT, description="FLOP/B"),
    }

    def show(p: mh.RooflinePoint):
        rows = [
            ("dense peak", fmt_flop_per_s(p.peak_flop_per_s)),
            ("HBM bandwidth", fmt_bytes_per_s(p.bytes_per_s)),
            ("ridge point", f"{intensity_label(p.ridge_intensity)} FLOP/B"),
            ("attainable", fmt_flop_per_s(p.attainable_flop_per_s)),
            ("bound", f"{p.bound} ({percent(p.fraction_of_peak)} of peak)"),
        ]
        fig = go.Figure(_roofline_traces(p))
        set_layout(fig, **_roofline_layout())
        return table_html(rows), style_figure(fig, title=roofline_title(p), readout=roofline_summary(p), height=460)

    def compute(gpu, dtype, intensity):
        why = get_gpu(gpu).why_no_peak(dtype)  # e.g. fp8 on an RTX 3090: say which arch it needs
        if why:
            raise ValueError(why)
        return mh.roofline_point(gpu, dtype, intensity)

    return live_form(compute, controls, show, title="Roofline")


# --------------------------------------------------------------------------------------------
# Coalescing
# --------------------------------------------------------------------------------------------
def _coalescing_trace(stride: int, elem_bytes: int, offset: int) -> go.Bar:
    usage = mh.sector_usage(stride, elem_bytes, offset)
    return go.Bar(
        x=list(range(len(usage))),
        y=list(usage.values()),
        customdata=list(usage.keys()),
        marker_color=[series_color(2) if b == mh.SECTOR_BYTES else series_color(1) for b in usage.values()],
        hovertemplate="sector %{customdata}: %{y} useful bytes of 32<extra></extra>",
        name="useful bytes per sector",
        showlegend=False,
    )


def coalescing_title(stride: int, elem_bytes: int = 4, offset: int = 0) -> str:
    return f"One warp load: stride {stride}, {elem_bytes} B" + (f", offset {offset}" if offset else "")


def coalescing_summary(stride: int, elem_bytes: int = 4, offset: int = 0) -> str:
    c = mh.coalescing(stride, elem_bytes, offset)
    return (
        f"{plural(c.sectors, 'sector')} ({plural(c.lines, 'line')} of 128 B): {c.requested_bytes} B used "
        f"of {c.moved_bytes} B moved = {percent(c.efficiency)}"
    )


def _coalescing_layout() -> dict:
    return dict(
        xaxis=dict(title="sector touched (in address order)", range=[-0.5, 33.5]),
        yaxis=dict(title="useful bytes in the sector", range=[0, mh.SECTOR_BYTES * 1.05]),
        bargap=0.15,
    )


def coalescing_figure(choices=COALESCING_CHOICES, strides=COALESCING_STRIDES) -> go.Figure:
    """Static coalescing calculator: a dropdown over (element bytes, offset), a slider over the
    lane stride."""

    def frame(choice, s):
        e, o = choice
        return [_coalescing_trace(s, e, o)], coalescing_title(s, e, o), coalescing_summary(s, e, o)

    strides = list(strides)
    return grid_figure(
        slider=("stride [elements]", strides, str),
        choices=("element bytes · offset", list(choices), lambda c: f"{c[0]} B · offset {c[1]}"),
        frame=frame,
        layout=_coalescing_layout(),
        active=(0, strides.index(1) if 1 in strides else 0),
        height=460,
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
            ("efficiency", percent(c.efficiency)),
        ]
        fig = go.Figure([_coalescing_trace(s, e, o)])
        set_layout(fig, **_coalescing_layout())
        fig.update_xaxes(range=[-0.5, max(33.5, c.sectors + 0.5)])
        return table_html(rows), style_figure(
            fig, title=coalescing_title(s, e, o), readout=coalescing_summary(s, e, o), height=420
        )

    return live_form(compute, controls, show, title="Coalescing: one warp-wide load")


# --------------------------------------------------------------------------------------------
# Shared-memory bank conflicts
# --------------------------------------------------------------------------------------------
def _bank_trace(stride: int, elem_bytes: int) -> go.Bar:
    loads = mh.bank_loads(stride, elem_bytes)
    return go.Bar(
        x=list(range(mh.SMEM_BANKS)),
        y=loads.tolist(),
        marker_color=[series_color(2) if v <= 1 else series_color(3) for v in loads.tolist()],
        hovertemplate="bank %{x}: %{y} distinct words<extra></extra>",
        name="distinct words per bank",
        showlegend=False,
    )


def bank_title(stride: int, elem_bytes: int = 4) -> str:
    return f"Shared memory: stride {stride}, {elem_bytes} B"


def bank_summary(stride: int, elem_bytes: int = 4) -> str:
    wf = mh.bank_conflict_wavefronts(stride, elem_bytes)
    ideal = mh.ideal_wavefronts(elem_bytes)
    ways = -(-wf // ideal)
    verdict = "conflict-free" if wf == ideal else f"{ways}-way conflict"
    return f"{plural(wf, 'wavefront')} (ideal {ideal}): {verdict}"


def _bank_layout() -> dict:
    return dict(
        xaxis=dict(title="bank", dtick=4, range=[-0.5, 31.5]),
        yaxis=dict(title="distinct 4-byte words requested", range=[0, 33]),
        bargap=0.15,
    )


def bank_conflict_figure(elem_bytes=BANK_ELEM_BYTES, strides=BANK_STRIDES) -> go.Figure:
    """Static bank-conflict calculator: a dropdown over the element size, a slider over the lane
    stride (a row length plus its padding, for a column access of a row-major tile)."""
    strides = list(strides)
    return grid_figure(
        slider=("stride = row + padding [elements]", strides, str),
        choices=("element bytes", list(elem_bytes), lambda e: f"{e}-byte elements"),
        frame=lambda e, s: ([_bank_trace(s, e)], bank_title(s, e), bank_summary(s, e)),
        layout=_bank_layout(),
        active=(0, strides.index(32) if 32 in strides else 0),
        height=460,
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
            ("lane stride", f"{plural(stride, 'element')} = {stride * e} B"),
            ("wavefronts", str(wf)),
            ("ideal", str(mh.ideal_wavefronts(e))),
        ]
        fig = go.Figure([_bank_trace(stride, e)])
        set_layout(fig, **_bank_layout())
        return table_html(rows), style_figure(
            fig, title=bank_title(stride, e), readout=bank_summary(stride, e), height=420
        )

    return live_form(compute, controls, show, title="Shared-memory banks: a column access")


# --------------------------------------------------------------------------------------------
# TMA swizzle
# --------------------------------------------------------------------------------------------
SWIZZLE_CHOICES = ((0, 128), (128, 128), (0, 64), (64, 64), (0, 32), (32, 32))  # (mode, row bytes)


def _swizzle_trace(mode: int, row_bytes: int, chunk: int) -> go.Heatmap:
    """Which 16-byte slot (x) of its 128-byte bank row each of 8 rows' chunk ``chunk`` lands in."""
    # rows listed from row 7 up to row 0, so row 0 is drawn on top: plotly.js 3 forgets an axis'
    # autorange "reversed" once the static figure's dropdown restyles it
    rows = range(7, -1, -1)
    z = []
    for r in rows:
        slot = (mh.tma_swizzle_offset(r * row_bytes + 16 * chunk, mode) % 128) // 16
        z.append([int(k == slot) for k in range(8)])
    return go.Heatmap(
        z=z,
        x=[f"{4 * k}-{4 * k + 3}" for k in range(8)],
        y=[f"row {r}" for r in rows],
        showscale=False,
        colorscale=[[0, "rgba(127,127,127,0.12)"], [1, series_color(0)]],
        zmin=0,
        zmax=1,
        xgap=2,
        ygap=2,
        hovertemplate="%{y}: banks %{x}<extra></extra>",
    )


def swizzle_summary(mode: int, row_bytes: int, chunk: int) -> str:
    wf = mh.tma_column_wavefronts(mode, row_bytes, chunk)
    ideal = mh.ideal_wavefronts(16)
    return f"{plural(wf, 'wavefront')} for 32 lanes (ideal {ideal}): " + (
        "conflict-free" if wf == ideal else f"{wf // ideal}-way conflict"
    )


def swizzle_figure(choices=SWIZZLE_CHOICES, chunks=tuple(range(8))) -> go.Figure:
    """Static TMA-swizzle calculator: a dropdown over (swizzle mode, row width), a slider over
    which 16-byte chunk of each row a warp reads (lane i reads row i). Each row width's slider
    has exactly its ``row / 16`` chunks."""
    choices, chunks = list(choices), list(chunks)

    def frame(choice, c):
        mode, row = choice
        c = min(c, row // 16 - 1)  # positions past the row's last chunk are cut from its slider below
        name = f"{mode}B swizzle" if mode else "no swizzle"
        return [_swizzle_trace(mode, row, c)], f"{name}, {row}-B rows, chunk {c}", swizzle_summary(mode, row, c)

    fig = grid_figure(
        slider=("16-byte chunk read", list(chunks), str),
        choices=(
            "swizzle · row width",
            list(choices),
            lambda c: (f"{c[0]}B swizzle" if c[0] else "none") + f" · {c[1]}-B rows",
        ),
        frame=frame,
        layout=dict(xaxis=dict(title="banks (a 16-byte chunk covers 4)")),
        active=(0, 0),
        height=440,
    )
    for ci, (_mode, row) in enumerate(choices):
        fig.layout.sliders[ci].steps = [st for c, st in zip(chunks, fig.layout.sliders[ci].steps) if c < row // 16]
    shown = {st.args[0][0] for sl in fig.layout.sliders for st in sl.steps}
    fig.frames = [f for f in fig.frames if f.name in shown]  # page weight: no unreachable frames
    return fig


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
        if isinstance(got, bool) or got != want:
            return _verdict(
                False, f"stride={stride}, elem_bytes={e}, offset={offset}: expected {want} sectors, got {got!r}"
            )
    return _verdict(True, f"{trials} random warp loads counted correctly")


def check_padding(padding_elems: int, row_elems: int = 32, elem_bytes: int = 8) -> bool:
    """Is ``padding_elems`` the smallest padding that makes a column read of a
    ``row_elems``-wide tile of ``elem_bytes`` elements take the ideal number of wavefronts?"""
    ideal = mh.ideal_wavefronts(elem_bytes)
    best = next(p for p in range(0, 64) if mh.bank_conflict_wavefronts(row_elems + p, elem_bytes) == ideal)
    if (
        isinstance(padding_elems, bool)
        or not isinstance(padding_elems, (int, np.integer))
        or not 0 <= padding_elems <= 64
    ):
        return _verdict(False, f"padding must be a whole number of elements from 0 to 64, got {padding_elems!r}")
    wf = mh.bank_conflict_wavefronts(row_elems + int(padding_elems), elem_bytes)
    if wf != ideal:
        return _verdict(False, f"padding {padding_elems} gives {wf} wavefronts; the ideal is {ideal}")
    if padding_elems != best:
        return _verdict(False, f"padding {padding_elems} works but wastes memory: a smaller one does too")
    return _verdict(True, f"padding {padding_elems} gives {wf} wavefronts, the ideal, with the least memory")


# --------------------------------------------------------------------------------------------
# Tables and plots of the chapter (data in, figures out)
# --------------------------------------------------------------------------------------------
def _l1_smem_bytes(g) -> int | None:
    """One SM's unified L1 + shared memory [B]: the model's table, else the catalog's arch record."""
    l1 = mh.L1_SHARED_BYTES_PER_SM.get(g.arch)
    return l1 if l1 else (g.arch_limits.l1_smem_per_sm_bytes if g.arch_limits else None)


def _device_memory(g, digits: int = 4) -> str:
    """The datasheet's memory label as the datasheet prints it ("141 GB"; the catalog stores it as
    GiB, see ``widgets.hardware``), and beside it the capacity the device reports where the
    catalog has it (``usable_memory_bytes``)."""
    from ..units import GiB, fmt_bytes

    label = f"{g.hbm_bytes / GiB:g} GB {g.memory_type} (datasheet)"
    return label + (f" · {fmt_bytes(g.usable_memory_bytes, digits)} usable" if g.usable_memory_bytes else "")


def _host_link(g) -> str:
    """The host link per direction: the raw rate and, where the catalog names the PCIe generation,
    the rate after the line coding (``mh.pcie_encoded_bytes_per_s``)."""
    raw = fmt_bytes_per_s(g.host_bytes_per_s)
    if not g.pcie_gen:
        return f"{raw} raw"
    return f"{raw} raw ({fmt_bytes_per_s(mh.pcie_encoded_bytes_per_s(g.host_bytes_per_s, g.pcie_gen))} after encoding)"


def hierarchy_table(gpus=None) -> str:
    """Capacity and bandwidth of each level, per GPU (default: every catalog GPU), from the catalog (HTML)."""
    from ..book import table
    from ..units import fmt_bytes

    head = [
        "GPU",
        "registers / SM",
        "L1 + shared / SM",
        "shared mem bandwidth*",
        "L2",
        "device memory",
        "memory bandwidth",
        "host link (each way)",
    ]
    rows = []
    for name in gpu_names() if gpus is None else gpus:
        g = get_gpu(name)
        l1 = _l1_smem_bytes(g)
        rows.append(
            [
                g.name,
                fmt_bytes(g.registers_per_sm_bytes),
                fmt_bytes(l1) if l1 else "not in the catalog",
                fmt_bytes_per_s(mh.smem_bytes_per_s(g.sms, g.boost_clock_hz)),
                fmt_bytes(g.l2_bytes) if g.l2_bytes else "not in the catalog",
                _device_memory(g),
                fmt_bytes_per_s(g.hbm_bytes_per_s),
                _host_link(g),
            ]
        )
    return table(rows, head)


def ladder_table(rungs: list) -> str:
    """The ladder of bandwidths (``memory_hierarchy_records.ladder``) as HTML."""
    from ..book import table

    rows = [
        [
            r["level"],
            fmt_bytes_per_s(r["bytes_per_s"]),
            r["source"],
            "" if r["times_next"] is None else f"{r['times_next']:.1f}×",
        ]
        for r in rungs
    ]
    # the sources are sentences: they wrap in their column instead of widening the table to 911 px; a rung per
    # row, read on its own: cards on a phone
    return table(rows, ["level", "bandwidth", "where the number comes from", "times the next rung"], prose_columns=[2], stack=True)


def working_set_plot(series: dict, l2_bytes: int, hbm_bytes_per_s: float) -> go.Figure:
    """Bandwidth against working-set size; ``series`` maps a label to ``(ws_bytes, bytes_per_s)``."""
    fig = go.Figure()
    for i, (label, (ws, bw)) in enumerate(series.items()):
        color = gpu_color("H200-SXM") if "H200" in label else series_color(i + 1)
        fig.add_trace(
            go.Scatter(
                x=np.asarray(ws) / 2**20,
                y=np.asarray(bw) / 1e12,
                mode="lines+markers",
                name=label,
                line=dict(color=color),
            )
        )
    top = max([max(bw) for _, bw in series.values() if len(bw)] + [hbm_bytes_per_s]) / 1e12
    xs = [w / 2**20 for ws, _ in series.values() for w in ws] or [1.0]
    if l2_bytes:  # a trace, not add_vline: shapes on a log axis take log10 coordinates
        fig.add_trace(
            go.Scatter(
                x=[l2_bytes / 2**20] * 2,
                y=[0, top * 1.05],
                mode="lines",
                name="L2 size",
                line=dict(color="gray", dash="dash"),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[min(xs), max(xs)],
            y=[hbm_bytes_per_s / 1e12] * 2,
            mode="lines",
            name="HBM datasheet",
            line=dict(color="gray", dash="dot"),
        )
    )
    set_layout(fig,
        xaxis=dict(type="log", title="working set [MiB]"), yaxis=dict(title="bandwidth [TB/s]", rangemode="tozero")
    )
    return style_figure(fig, title="Re-reading a working set", readout="L2 plateau, then HBM", height=440)


def strided_plot(series: dict) -> go.Figure:
    """Measured/model time ratio against stride; ``series`` maps a label to ``(strides, ratios)``."""
    fig = go.Figure()
    for i, (label, (strides, ratios)) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(x=strides, y=ratios, mode="lines+markers", name=label, line=dict(color=series_color(i)))
        )
    fig.add_hrect(y0=0.75, y1=1.25, fillcolor=series_color(2), opacity=0.10, line_width=0)
    set_layout(fig,
        xaxis=dict(type="log", title="stride [elements of 4 B]", tickvals=[1, 2, 4, 8, 16, 32, 64]),
        yaxis=dict(title="measured / model time", rangemode="tozero"),
    )
    return style_figure(
        fig, title="Strided reads against the models", readout="band: within 25% of the model", height=440
    )


# --------------------------------------------------------------------------------------------
# The ladder diagram (book/figures/memory_hierarchy_ladder.svg), drawn from the catalog and record
# --------------------------------------------------------------------------------------------
LADDER_SVG = "book/figures/memory_hierarchy_ladder.svg"


def ladder_svg(record: dict, gpu: str = "H200-SXM") -> str:
    """The memory ladder of ``gpu`` as a hand-laid-out SVG: capacities from the catalog,
    bandwidths derived (shared memory), measured (L2, HBM: ``record``) or from the catalog (HBM
    datasheet, host link). A light panel, so it reads on light and dark pages; a 360-unit-wide
    viewBox, so 12-unit text is 12 px on a phone."""
    from html import escape

    from ..models.memory_hierarchy_records import ladder
    from ..units import fmt_bytes

    g = get_gpu(gpu)
    rungs = {r["level"]: r for r in ladder(record, g)}
    l1 = _l1_smem_bytes(g)
    smem_bw = rungs["shared memory (all SMs)"]["bytes_per_s"]
    levels = [
        (
            "Registers",
            f"{fmt_bytes(g.registers_per_sm_bytes)} per SM · {fmt_bytes(g.registers_per_sm_bytes * g.sms)} in all",
            "operands of every instruction",
        ),
        (
            "L1 + shared memory",
            f"{fmt_bytes(l1)} per SM · {fmt_bytes(l1 * g.sms)} in all"
            if l1
            else f"{fmt_bytes(g.smem_per_sm_bytes)} shared per SM",
            f"{fmt_bytes_per_s(smem_bw)} peak (32 banks × 4 B/clock)",
        ),
        (
            "L2 cache",
            f"{fmt_bytes(g.l2_bytes)} shared by {g.sms} SMs",
            f"{fmt_bytes_per_s(rungs['L2']['bytes_per_s'])} measured",
        ),
        (
            f"{g.memory_type} (device memory)",
            _device_memory(g).replace(f" {g.memory_type}", ""),
            f"{fmt_bytes_per_s(g.hbm_bytes_per_s)} datasheet · {fmt_bytes_per_s(rungs['HBM']['bytes_per_s'])} measured",
        ),
        ("Host memory", "across PCIe", f"{fmt_bytes_per_s(g.host_bytes_per_s)} each way" + (
            f", {mh.pcie_encoded_bytes_per_s(g.host_bytes_per_s, g.pcie_gen) / 1e9:.3g} after encoding" if g.pcie_gen else ", raw")),
    ]
    ratios = [rungs["shared memory (all SMs)"]["times_next"], rungs["L2"]["times_next"], rungs["HBM"]["times_next"]]
    fills = ["#d6e9f5", "#dcefe6", "#fbeacc", "#f6dccd", "#e8e8e8"]
    strokes = ["#0072B2", "#009E73", "#C98A00", "#D55E00", "#777777"]
    width, top, rung_h, gap = 360, 58, 70, 8
    height = top + len(levels) * (rung_h + gap) + 34
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-labelledby="mh-ladder-title mh-ladder-desc" font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">',
        f'<title id="mh-ladder-title">The memory ladder of the {escape(g.name)}</title>',
        '<desc id="mh-ladder-desc">Five rungs from registers at the top to host memory at the bottom; each gives its '
        "capacity and its bandwidth, and the arrows on the right say how many times faster each rung is than the one below: "
        + ", ".join(f"{r:.1f} times" for r in ratios)
        + ".</desc>",
        f'<rect x="1" y="1" width="{width - 2}" height="{height - 2}" rx="10" fill="#fbfbfa" stroke="#bbbbbb"/>',
        # short enough for the 328 units left of the panel at 16 px bold in a wide font (DejaVu Sans)
        f'<text x="16" y="28" font-size="16" font-weight="700" fill="#222">The {escape(g.name)} memory ladder</text>',
        '<text x="16" y="46" font-size="12" fill="#444">smaller and faster at the top; larger and slower below</text>',
    ]
    for i, (name, size, bw) in enumerate(levels):
        y = top + i * (rung_h + gap)
        w = 250 + 10 * i  # rungs widen downwards (the widest ends at x = 302)
        out.append(
            f'<rect x="12" y="{y}" width="{w}" height="{rung_h}" rx="6" fill="{fills[i]}" stroke="{strokes[i]}" stroke-width="1.5"/>'
        )
        out.append(f'<text x="22" y="{y + 22}" font-size="14" font-weight="700" fill="#222">{escape(name)}</text>')
        out.append(f'<text x="22" y="{y + 41}" font-size="12" fill="#333">{escape(size)}</text>')
        out.append(f'<text x="22" y="{y + 59}" font-size="12" fill="#333">{escape(bw)}</text>')
    for i, r in enumerate(ratios):
        y0 = top + (i + 1) * (rung_h + gap) + rung_h / 2 + 6  # from the L1 rung down
        y1 = y0 + rung_h + gap - 12
        x = 314
        out.append(f'<line x1="{x}" y1="{y0:.0f}" x2="{x}" y2="{y1:.0f}" stroke="#555" stroke-width="1.5"/>')
        out.append(
            f'<path d="M{x - 4},{y1 - 6:.0f} L{x},{y1:.0f} L{x + 4},{y1 - 6:.0f}" fill="none" stroke="#555" stroke-width="1.5"/>'
        )
        out.append(f'<text x="{x + 5}" y="{(y0 + y1) / 2 + 4:.0f}" font-size="12" fill="#222">÷{r:.2g}</text>')
    out.append(
        f'<text x="16" y="{height - 14}" font-size="12" fill="#444">÷ n: the rung below delivers n times fewer bytes/s</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_ladder_svg(path: str | None = None) -> str:
    """Regenerate ``book/figures/memory_hierarchy_ladder.svg`` from the H200 record; returns the path."""
    from pathlib import Path

    from ..experiments import harness

    target = Path(path) if path else Path(__file__).resolve().parents[2] / LADDER_SVG
    target.write_text(ladder_svg(harness.load_reference("memory_hierarchy")))
    return str(target)


# --------------------------------------------------------------------------------------------
# Kernel fusion (chapter section "Kernel fusion")
# --------------------------------------------------------------------------------------------
FUSION_GPUS = ("H200-SXM", *(g for g in gpu_names() if g != "H200-SXM"))  # every catalog GPU, the reference first
FUSION_OPS = tuple(range(1, 17))
FUSION_SIZES = tuple(2**p for p in (12, 16, 20, 24, 26, 28, 30))  # fp32 elements: 16 KiB to 4 GiB (7: page weight)
FUSION_READOUT_OPS = 4
# 1, 2 and 5 of each decade labelled in full ("2m", "5m"): the curves often span less than a decade,
# where decade labels alone left one tick label on the axis (review)
FUSION_YAXIS = dict(title="time [s]", type="log", dtick="D2", minorloglabels="complete")


def fusion_summary(gpu: str, n_elems: int, n_ops: int = FUSION_READOUT_OPS, launch_s: float = 0.0) -> str:
    """One line: bytes and time of an ``n_ops`` chain on ``n_elems`` fp32 elements, eager and fused."""
    from ..units import fmt_bytes, fmt_time

    g = get_gpu(gpu)
    f = mh.fusion_estimate(n_elems, n_ops, g.hbm_bytes_per_s, 4, launch_s=launch_s)
    return (f"{plural(n_ops, 'op')}: eager {fmt_time(f.eager_s)} ({fmt_bytes(f.eager_bytes)} moved), "
            f"fused {fmt_time(f.fused_s)} ({fmt_bytes(f.fused_bytes)}): {f.speedup:.1f}x")


def _fusion_traces(gpu: str, n_elems: int, ops, launch_s: float) -> list:
    g = get_gpu(gpu)
    est = [mh.fusion_estimate(n_elems, k, g.hbm_bytes_per_s, 4, launch_s=launch_s) for k in ops]
    return [
        go.Scatter(x=list(ops), y=[e.eager_s for e in est], name="eager (one kernel per op)", mode="lines+markers",
                   line=dict(color=COLORS[0]), hovertemplate="%{x} ops: %{y:.3s}s<extra>eager</extra>"),
        go.Scatter(x=list(ops), y=[e.fused_s for e in est], name="fused (one kernel)", mode="lines+markers",
                   line=dict(color=COLORS[1]), hovertemplate="%{x} ops: %{y:.3s}s<extra>fused</extra>"),
    ]


def fusion_figure(gpus=FUSION_GPUS, sizes=FUSION_SIZES, ops=FUSION_OPS, *, launch_s: float = 0.0) -> go.Figure:
    """Static calculator: a dropdown over catalog GPUs, a slider over the fp32 tensor's size; time of
    an elementwise chain against its length, eager and fused (datasheet HBM bandwidth plus
    ``launch_s`` per kernel launch)."""
    from ..units import fmt_bytes

    gpus, sizes, ops = list(gpus), list(sizes), list(ops)
    mh.fusion_estimate(1, 1, 1.0, launch_s=launch_s)  # checks launch_s once, with its name

    def frame(gpu, n):
        return (_fusion_traces(gpu, n, ops, launch_s), f"{gpu}: a {fmt_bytes(4 * n)} fp32 tensor",
                fusion_summary(gpu, n, FUSION_READOUT_OPS, launch_s))

    active = (0, min(range(len(sizes)), key=lambda k: abs(sizes[k] - 2**28)))
    return grid_figure(
        slider=("tensor size", sizes, lambda n: fmt_bytes(4 * n)),
        choices=("GPU", gpus, str),
        frame=frame,
        layout=dict(xaxis=dict(title="ops in the chain", dtick=2), yaxis=FUSION_YAXIS),
        active=active,
        height=480,
    )


def fusion_calculator(launch_s: float = 0.0):
    """Live: GPU, tensor size and chain length -> bytes and time, eager and fused."""
    import ipywidgets as w

    from ..units import fmt_bytes, fmt_time

    controls = {
        "gpu": w.Dropdown(options=gpu_names(), value="H200-SXM", description="GPU"),
        "log2_elems": w.IntSlider(value=28, min=10, max=32, description="log2 elements"),
        "n_ops": w.IntSlider(value=4, min=1, max=32, description="ops"),
        "launch_us": slider(launch_s * 1e6, 0, 20, 0.5, description="launch [µs]", readout_format=".2f"),
    }

    def compute(gpu, log2_elems, n_ops, launch_us):
        g = get_gpu(gpu)
        return g, mh.fusion_estimate(2**log2_elems, n_ops, g.hbm_bytes_per_s, 4, launch_s=launch_us * 1e-6), launch_us * 1e-6

    def show(res):
        g, f, launch = res
        rows = [
            ("bytes moved, eager", fmt_bytes(f.eager_bytes)),
            ("bytes moved, fused", fmt_bytes(f.fused_bytes)),
            ("time, eager", f"{fmt_time(f.eager_s)} ({plural(f.eager_launches, 'launch', 'launches')})"),
            ("time, fused", fmt_time(f.fused_s)),
            ("speed-up of fusion", f"{f.speedup:.2f}x"),
        ]
        ops = tuple(range(1, max(max(FUSION_OPS), f.n_ops) + 1))
        chosen = go.Scatter(x=[f.n_ops, f.n_ops], y=[f.eager_s, f.fused_s], mode="markers", name=f"your chain ({plural(f.n_ops, 'op')})",
                            marker=dict(size=14, symbol="circle-open", line=dict(width=3), color=COLORS[3]),
                            hovertemplate="%{x} ops: %{y:.3s}s<extra>your chain</extra>")
        fig = go.Figure([*_fusion_traces(g.name, f.n_elems, ops, launch), chosen])
        set_layout(fig, xaxis=dict(title="ops in the chain"), yaxis=FUSION_YAXIS)
        return table_html(rows), style_figure(fig, title=f"{g.name}: {fmt_bytes(4 * f.n_elems)} fp32", height=420)

    return live_form(compute, controls, show, title="Kernel fusion")


def check_fusion_bytes(eager_bytes, fused_bytes, n_elems: int = 2**26, n_ops: int = 3, elem_bytes: int = 2) -> bool:
    """Exercise: the HBM bytes of an ``n_ops`` elementwise chain on ``n_elems`` elements of
    ``elem_bytes`` bytes, run eagerly and fused."""
    want_e = mh.elementwise_chain_bytes(n_elems, n_ops, elem_bytes)
    want_f = mh.elementwise_chain_bytes(n_elems, n_ops, elem_bytes, fused=True)
    for name, got in (("eager_bytes", eager_bytes), ("fused_bytes", fused_bytes)):
        if isinstance(got, bool) or not isinstance(got, (int, float, np.integer, np.floating)) or not np.isfinite(got):
            return _verdict(False, f"{name} must be a number of bytes, got {got!r}")
    if round(float(eager_bytes)) != want_e:
        return _verdict(False, f"eager: {eager_bytes!r} B is not right: each op reads its input and writes its output")
    if round(float(fused_bytes)) != want_f:
        return _verdict(False, f"fused: {fused_bytes!r} B is not right: the fused kernel reads once and writes once")
    return _verdict(True, f"right: {want_e:,} B eager, {want_f:,} B fused ({n_ops}x fewer)")


# --------------------------------------------------------------------------------------------
# The transpose (chapter section "The matrix transpose")
# --------------------------------------------------------------------------------------------
def transpose_table(rows: list) -> str:
    """HTML table of ``memory_hierarchy_transpose.transpose_rows``: measured against the model."""
    from ..book import table
    from ..units import fmt_time

    def f(x, fmt):
        return "no copy recorded" if x is None else fmt(x)

    def measured(r, x, fmt):
        if x is not None:
            return fmt(x)
        return "not recorded" if r.get("error") is None else "did not run (see the note below)"

    two = lambda v: f"{v:.2f}"  # noqa: E731
    body = [[r["kind"], measured(r, r["time_s"], fmt_time), measured(r, r["bytes_per_s"], fmt_bytes_per_s),
             fmt_time(r["model_s"]), measured(r, r.get("measured_vs_model"), two),
             measured(r, r["measured_vs_copy"], two), f(r.get("model_here_vs_copy"), two), r["model_bound"]]
            for r in rows]
    return table(body, ["kernel", "time", "effective bandwidth", "model time (calibrated)", "measured / model",
                        "time / numba copy's (measured)", "time / copy's (model, HBM at the numba copy's rate)",
                        "model's bound"])


def check_transpose_wavefronts(naive_sectors_per_warp, tiled_wavefronts, padded_wavefronts) -> bool:
    """Exercise: sectors one warp's naive write touches (n = 4096), and wavefronts of one warp's
    column read of a 32 x 32 and of a 32 x 33 fp32 tile."""
    want = (mh.warp_load_sectors(4096, 4), mh.bank_conflict_wavefronts(32), mh.bank_conflict_wavefronts(33))
    got = (naive_sectors_per_warp, tiled_wavefronts, padded_wavefronts)
    names = ("naive_sectors_per_warp", "tiled_wavefronts", "padded_wavefronts")
    for name, g in zip(names, got):
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            return _verdict(False, f"{name} must be a whole number, got {g!r}")
    wrong = [f"{n} = {g} (not right)" for n, g, w_ in zip(names, got, want) if g != w_]
    if wrong:
        return _verdict(False, "; ".join(wrong))
    return _verdict(True, f"right: {want[0]} sectors, {want[1]} and {want[2]} wavefronts")


# --------------------------------------------------------------------------------------------
# Bytes in flight (chapter section "Asynchronous copies and bytes in flight")
# --------------------------------------------------------------------------------------------
# Every catalog GPU, the reference first; one without a CUDA arch (MI300X) says why in its frames.
INFLIGHT_GPUS = ("H200-SXM", *(g for g in gpu_names() if g != "H200-SXM"))
INFLIGHT_LATENCIES_NS = (300, 400, 500, 600, 700, 800, 1000, 1200)
INFLIGHT_WAYS = (  # (label, warps per SM as a fraction of the maximum, bytes per load, loads in flight per thread)
    ("float, 1/4 occupancy", 0.25, 4, 1),
    ("float, full occupancy", 1.0, 4, 1),
    ("float4, 1/4 occupancy", 0.25, 16, 1),
    ("float4 x 4 ILP, 1/4 occ.", 0.25, 16, 4),
)


def inflight_summary(gpu: str, latency_ns: float) -> str:
    from ..units import fmt_bytes

    g = get_gpu(gpu)
    need = mh.littles_law_bytes_in_flight(g.hbm_bytes_per_s, latency_ns * 1e-9) / g.sms
    return f"needed: {fmt_bytes(need)} in flight per SM ({fmt_bytes(need * g.sms)} over {g.sms} SMs)"


def _inflight_traces(gpu: str, latency_ns: float, stage_bytes: int = 16 * 1024) -> list:
    from ..hardware import get_arch

    g = get_gpu(gpu)
    arch = get_arch(g.arch)
    labels, values = ["needed (Little's law)"], []  # short labels: the bars must fit a phone
    b0 = mh.bytes_in_flight(g.hbm_bytes_per_s, latency_ns * 1e-9, g.sms, stage_bytes=stage_bytes,
                            smem_per_sm_bytes=g.smem_per_sm_bytes)
    values.append(b0.needed_per_sm_bytes / 1024)
    for label, frac, lb, ilp in INFLIGHT_WAYS:
        warps = max(1, int(arch.max_warps_per_sm * frac))
        b = mh.bytes_in_flight(g.hbm_bytes_per_s, latency_ns * 1e-9, g.sms, warps_per_sm=warps,
                               load_bytes_per_thread=lb, loads_in_flight_per_thread=ilp)
        labels.append(label)
        values.append(b.register_path_bytes / 1024)
    for stages in (2, 3, 4):
        labels.append(f"async copy: {stages} × {stage_bytes // 1024} KiB")
        values.append(stages * stage_bytes / 1024)
    colors = [COLORS[3]] + [COLORS[0]] * len(INFLIGHT_WAYS) + [COLORS[1]] * 3
    return [go.Bar(y=labels, x=values, orientation="h", marker_color=colors, showlegend=False,
                   hovertemplate="%{y}: %{x:.1f} KiB<extra></extra>")]


def inflight_figure(gpus=INFLIGHT_GPUS, latencies_ns=INFLIGHT_LATENCIES_NS, *, latency_ns: float = 600.0) -> go.Figure:
    """Static calculator: a dropdown over GPUs, a slider over the memory latency; bytes in flight per
    SM that Little's law asks for, against what plain loads (registers) and async-copy stages hold.
    The figure opens at ``latency_ns`` (the chapter passes the record's measured latency), which
    joins the slider's values if it is not one of them."""
    gpus = list(gpus)
    latency_ns = round(float(latency_ns), 1)
    lats = sorted({*latencies_ns, latency_ns})

    def frame(gpu, lat):
        g = get_gpu(gpu)
        if g.arch_limits is None:  # no CUDA warp slots or cp.async/TMA to compare with
            why = f"{g.name} ({g.arch}) is not a CUDA GPU: its warp slots and async copies are not modelled"
            return [go.Bar(y=[], x=[], orientation="h", showlegend=False)], f"{gpu}: not modelled", why
        return _inflight_traces(gpu, lat), f"{gpu}: bytes in flight per SM at {lat:g} ns", inflight_summary(gpu, lat)

    return grid_figure(
        slider=("latency [ns]", lats, lambda v: f"{v:g} ns"),
        choices=("GPU", gpus, str),
        frame=frame,
        layout=dict(xaxis=dict(title="KiB in flight per SM"), yaxis=dict(autorange="reversed")),
        active=(0, lats.index(latency_ns)),
        height=520,
    )


def check_bytes_in_flight(kib_per_sm, gpu: str = "H100-SXM", latency_ns: float = 700.0) -> bool:
    """Exercise: KiB in flight per SM that the GPU's datasheet bandwidth needs at this latency (within 2 %)."""
    g = get_gpu(gpu)
    want = mh.littles_law_bytes_in_flight(g.hbm_bytes_per_s, latency_ns * 1e-9) / g.sms / 1024
    if isinstance(kib_per_sm, bool) or not isinstance(kib_per_sm, (int, float, np.integer, np.floating)):
        return _verdict(False, f"kib_per_sm must be a number of KiB, got {kib_per_sm!r}")
    if not abs(float(kib_per_sm) / want - 1) <= 0.02:
        return _verdict(False, f"{kib_per_sm!r} KiB is not right: bandwidth x latency, shared by {g.sms} SMs")
    return _verdict(True, f"right: {want:.1f} KiB per SM")


def check_measured_ridge(ridge_flop_per_byte, record_tc: dict, record_mh: dict) -> bool:
    """Exercise: the ridge point from the measured bf16 GEMM rate (random operands) and the measured copy bandwidth."""
    want = measured_ridge(record_tc, record_mh)
    if want is None:
        return _verdict(False, "the records hold no measured bf16 GEMM rate or copy bandwidth")
    if isinstance(ridge_flop_per_byte, bool) or not isinstance(ridge_flop_per_byte, (int, float, np.integer, np.floating)):
        return _verdict(False, f"ridge must be a number of FLOP/B, got {ridge_flop_per_byte!r}")
    if not abs(float(ridge_flop_per_byte) / want - 1) <= 0.02:
        return _verdict(False, f"{ridge_flop_per_byte!r} FLOP/B is not right: measured FLOP/s over measured B/s, "
                               "from the GEMMs on random operands only (rows with \"data\": \"randn\")")
    return _verdict(True, f"right: {want:.0f} FLOP/B")


# The record readers live in widgets.models.memory_hierarchy_records (no formula in the ui layer);
# kept here under the names the chapter and its exercise use.
measured_gemm_flop_per_s = _records.measured_gemm_flop_per_s
measured_ridge = _records.measured_ridge


def measured_roofline_figure(gpu: str, peak_flop_per_s: float, measured_flop_per_s: float,
                             bytes_per_s: float, measured_bytes_per_s: float, dtype: str = "bf16") -> go.Figure:
    """Two rooflines of one GPU: the datasheet's (peak, bandwidth) and the measured one, with both ridges."""
    x = np.logspace(-1, 4, 200)
    ds = mh.attainable_flop_per_s(x, peak_flop_per_s, bytes_per_s)
    ms = mh.attainable_flop_per_s(x, measured_flop_per_s, measured_bytes_per_s)
    r_ds = mh.ridge_intensity(peak_flop_per_s, bytes_per_s)
    r_ms = mh.ridge_intensity(measured_flop_per_s, measured_bytes_per_s)
    traces = [
        go.Scatter(x=x, y=ds, name="datasheet", line=dict(color=COLORS[0], dash="dash"),
                   hovertemplate="%{x:.3g} FLOP/B: %{y:.3s}FLOP/s<extra>datasheet</extra>"),
        go.Scatter(x=x, y=ms, name="measured", line=dict(color=COLORS[1]),
                   hovertemplate="%{x:.3g} FLOP/B: %{y:.3s}FLOP/s<extra>measured</extra>"),
        go.Scatter(x=[r_ds, r_ms], y=[peak_flop_per_s, measured_flop_per_s], mode="markers", showlegend=False,
                   marker=dict(color=[COLORS[0], COLORS[1]], size=10), hovertemplate="ridge %{x:.0f} FLOP/B<extra></extra>"),
    ]
    fig = go.Figure(traces)
    set_layout(fig, xaxis=dict(title="arithmetic intensity [FLOP/B]", type="log"),
                      yaxis=dict(title=f"{dtype} FLOP/s", type="log"), legend=dict(orientation="h", y=-0.25))
    return style_figure(fig, title=f"{gpu}, dense {dtype}: datasheet and measured rooflines",
                        readout=f"ridge: {r_ds:.0f} FLOP/B (datasheet), {r_ms:.0f} FLOP/B (measured)", height=440)


def fusion_size_plot(size_rows: list, bytes_per_s: float, launch_s: float, n_ops: int = FUSION_READOUT_OPS,
                     here_rows: list | None = None) -> go.Figure:
    """Time of an ``n_ops`` chain against the tensor's size: the recorded eager and fused Triton times
    (``memory_hierarchy_fusion.fusion_rows(..., sweep="size_sweep")``), the reader's if given, and the
    model's lines (``bytes_per_s`` plus ``launch_s`` per launch)."""
    from ..units import fmt_bytes

    mh.fusion_estimate(1, n_ops, bytes_per_s, launch_s=launch_s)  # checks the inputs, with their names
    fig = go.Figure()
    ns = sorted({r["n_elems"] for r in size_rows} | {r["n_elems"] for r in here_rows or []}) or [2**12, 2**28]
    grid = np.unique(np.geomspace(min(ns), max(ns), 40).astype(np.int64))
    est = [mh.fusion_estimate(int(n), n_ops, bytes_per_s, launch_s=launch_s) for n in grid]
    for i, (key, name) in enumerate((("eager", "eager"), ("triton_fused", "fused (Triton)"))):
        model_t = [e.eager_s if key == "eager" else e.fused_s for e in est]
        fig.add_trace(go.Scatter(x=grid * 4, y=model_t, mode="lines", name=f"{name}: model",
                                 line=dict(color=COLORS[i], dash="dot"), hovertemplate="%{y:.3s}s<extra></extra>"))
        for rows, label, symbol in ((size_rows, "H200", "circle"), (here_rows or [], "this machine", "x")):
            pts = [(r["n_elems"] * 4, r[key + "_s"]) for r in rows if r.get(key + "_s")]
            if pts:
                fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers",
                                         name=f"{name}: {label}", marker=dict(color=COLORS[i], symbol=symbol, size=9),
                                         hovertemplate="%{x:.3s}B: %{y:.3s}s<extra></extra>"))
    set_layout(fig, xaxis=dict(type="log", title="tensor size [B]"), yaxis=dict(type="log", title="time [s]"))
    f_big = mh.fusion_estimate(max(ns), n_ops, bytes_per_s, launch_s=launch_s)
    return style_figure(fig, title=f"A {n_ops}-op chain against the tensor's size",
                        readout=f"model at {fmt_bytes(4 * max(ns))}: {f_big.speedup:.1f}x; launch-bound below "
                                f"~{fmt_bytes(launch_s * bytes_per_s / 2)} per op",
                        height=460)


def measured_ceilings_table(record_tc: dict, record_mh: dict, gpu: str = "H200-SXM") -> str:
    """HTML table, one row per data type the tensor_cores record measured: the datasheet's dense
    peak and the best measured GEMM rate on random operands, and the ridge point of each (datasheet:
    peak over the catalog's HBM bandwidth; measured: best GEMM over the Triton copy's bandwidth,
    calibrated; ``memory_hierarchy_records.measured_gemm_flop_per_s``)."""
    from ..book import table

    g = get_gpu(gpu)
    copy_bw = _records.bandwidths(record_mh)[_records.MEASURED_ROOFLINE_BANDWIDTH]
    rows = []
    for dtype in g.peak_flop_per_s:
        measured = _records.measured_gemm_flop_per_s(record_tc, dtype)
        if measured is None:
            continue
        peak = g.peak(dtype)
        rows.append([dtype, fmt_flop_per_s(peak), fmt_flop_per_s(measured), percent(measured / peak, 0),
                     f"{mh.ridge_intensity(peak, g.hbm_bytes_per_s):.0f}", f"{mh.ridge_intensity(measured, copy_bw):.0f}"])
    return table(rows, ["dtype", "dense peak (datasheet)", "best GEMM, random operands (measured)", "measured / peak",
                        "ridge, datasheet [FLOP/B]", "ridge, measured [FLOP/B]"],
                 caption=f"{g.name}: compute ceilings and ridge points, datasheet and measured "
                         f"(copy bandwidth {fmt_bytes_per_s(copy_bw)})")
