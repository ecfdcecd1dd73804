"""Calculators for the SIMT chapter: occupancy, warp divergence, latency hiding, Amdahl.

Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly
frames precomputed by the same model) that works in the published page without a kernel. The
plots of the experiments and the exercise checks are here too.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..hardware import gpu_names
from ..models import simt as m
from ..units import KiB, fmt_bytes, fmt_bytes_per_s, fmt_time
from ._core import (
    PHONE_FIGURE_PX,
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

COLORS = tuple(series_color(i) for i in range(6))
LIMITER_COLORS = {"warps": series_color(0), "registers": series_color(3), "shared_memory": series_color(2), "blocks": series_color(4)}
THREADS = list(range(32, 1025, 32))
REGS = list(range(16, 256))
REGS_COARSE = list(range(8, 256, 8)) + [255]  # the static figure's register panel (page weight)


def fmt_speedup(v: float) -> str:
    """A speed-up (or slowdown) to 3 significant figures with the multiplication sign:
    ``1.894`` -> ``"1.89×"``, ``2.0`` -> ``"2.00×"``, ``33.02`` -> ``"33.0×"``, ``126.4`` -> ``"126×"``."""
    v = float(v)
    if not np.isfinite(v) or v == 0:
        return f"{v:g}×"
    rounded = f"{v:.2e}"  # 3 significant figures, rounded first: 9.996 -> "1.00e+01" (10.0, not 10.00)
    return f"{float(rounded):.{max(0, 2 - int(rounded.split('e')[1]))}f}×"


def multiprocessors(gpu: str) -> str:
    """What a catalog GPU's multiprocessors are called, plural: AMD's are compute units ("CUs"),
    NVIDIA's streaming multiprocessors ("SMs"); from the catalog's ``vendor``."""
    from ..hardware import get_gpu

    return "CUs" if get_gpu(gpu).vendor == "AMD" else "SMs"


def _smem_kib(arch: str) -> list:
    return list(range(0, m.arch_limits(arch).smem_per_block_optin_bytes // KiB + 1))


# --------------------------------------------------------------------------------------------
# Occupancy
# --------------------------------------------------------------------------------------------
def occupancy_rows(o: m.Occupancy) -> list:
    """(quantity, value) rows describing one occupancy result."""
    def lim(n):
        if n == m.NO_LIMIT:  # sm_75 reserves no shared memory: a block without any is not limited by it
            return "no limit (nothing allocated)"
        return plural(n, "block") + ("  <- limits" if n == o.blocks_per_sm else "")

    return [
        ("blocks per SM", str(o.blocks_per_sm)),
        ("warps per SM", f"{o.warps_per_sm} of {o.max_warps_per_sm}"),
        ("occupancy", percent(o.occupancy)),
        ("limited by", ", ".join(o.limiters).replace("_", " ")),
        ("warp slots allow", lim(o.blocks_limit_warps)),
        ("registers allow", lim(o.blocks_limit_registers)),
        ("shared memory allows", lim(o.blocks_limit_shared_memory)),
        ("block slots allow", lim(o.blocks_limit_blocks)),
        ("registers per warp (allocated)", f"{o.regs_per_warp_allocated}"),
        ("shared memory per block (allocated)", fmt_bytes(o.smem_per_block_allocated_bytes)),
    ]


def occupancy_title(o: m.Occupancy) -> str:
    return f"{plural(o.blocks_per_sm, 'block')} per SM, {percent(o.occupancy)} occupancy"


def occupancy_readout(o: m.Occupancy) -> str:
    return (f"{o.arch}: {o.threads_per_block} threads × {o.regs_per_thread} regs, {fmt_bytes(o.smem_per_block_bytes)} shared: "
            f"{o.warps_per_sm}/{o.max_warps_per_sm} warps, limited by {' and '.join(o.limiters).replace('_', ' ')}")


def _occupancy_traces(threads_per_block: int, regs_per_thread: int, smem_per_block_bytes: int, arch: str, *, coarse: bool = False) -> list:
    """Three curves (occupancy against block size, registers, shared memory) and the current
    point on each, like NVIDIA's occupancy calculator. ``coarse`` samples the register and
    shared-memory panels every 8 (for the static figure's weight)."""
    base = dict(threads_per_block=threads_per_block, regs_per_thread=regs_per_thread, smem_per_block_bytes=smem_per_block_bytes, arch=arch)
    here = m.occupancy(**base)
    smem_kib = _smem_kib(arch)
    regs = REGS_COARSE if coarse else REGS
    if coarse:
        smem_kib = smem_kib[::8] + ([smem_kib[-1]] if (len(smem_kib) - 1) % 8 else [])
    panels = [
        ("threads_per_block", THREADS, THREADS, threads_per_block),
        ("regs_per_thread", regs, regs, regs_per_thread),
        ("smem_per_block_bytes", [s * KiB for s in smem_kib], smem_kib, smem_per_block_bytes / KiB),
    ]
    traces = []
    for i, (param, values, xs, x_here) in enumerate(panels, start=1):
        sweep = m.occupancy_sweep(param, values, **{k: v for k, v in base.items() if k != param})
        axes = dict(xaxis=f"x{i if i > 1 else ''}", yaxis=f"y{i if i > 1 else ''}")
        traces.append(go.Scatter(x=xs, y=[100 * o.occupancy for o in sweep], mode="lines", line=dict(color=COLORS[0], shape="hv"),
                                 showlegend=False, hovertemplate="%{x}: %{y:.1f} %<extra></extra>", **axes))
        traces.append(go.Scatter(x=[x_here], y=[100 * here.occupancy], mode="markers", showlegend=False, cliponaxis=False,
                                 marker=dict(size=12, color=LIMITER_COLORS[here.limiter], line=dict(color="#444444", width=1)),
                                 hovertemplate=f"this kernel: %{{y:.1f}} % ({here.limiter.replace('_', ' ')})<extra></extra>", **axes))
    return traces


def _occupancy_layout(arch: str) -> dict:
    """Three panels stacked (each full width, its own axis title), so the figure reads on a
    360-px phone as well as on a desktop; few ticks per axis."""
    y = dict(range=[0, 105], title="occupancy [%]", tickvals=[0, 50, 100])
    x = dict(nticks=6)
    return dict(
        xaxis=dict(x, title="threads per block", range=[0, 1056], anchor="y"),
        xaxis2=dict(x, title="registers per thread", range=[0, 260], anchor="y2"),
        xaxis3=dict(x, title="shared memory per block [KiB]", range=[0, m.arch_limits(arch).smem_per_block_optin_bytes / KiB + 5], anchor="y3"),
        yaxis=dict(y, domain=[0.76, 1.0], anchor="x"),
        yaxis2=dict(y, domain=[0.38, 0.62], anchor="x2"),
        yaxis3=dict(y, domain=[0.0, 0.24], anchor="x3"),
    )


OCC_BLOCK_SIZES = (32, 64, 128, 256, 320, 512, 768, 1024)  # 8 per choice: the page stays light
# (arch, registers per thread, shared memory per block): the dropdown of the static calculator;
# after the sm_90/sm_80 kernels, every other compute capability of the catalog at 64 registers
# (each catalog GPU's arch is offered: ARCH_GPUS names them).
OCC_CHOICES = (
    ("sm_90", 32, 0),
    ("sm_90", 64, 0),
    ("sm_90", 128, 0),
    ("sm_90", 40, 48 * KiB),
    ("sm_80", 64, 0),
    ("sm_80", 40, 48 * KiB),
    *((a, 64, 0) for a in m.ARCHS if a not in ("sm_80", "sm_90")),
)
# The catalog GPUs of each compute capability (e.g. "sm_89": "L4, RTX-4090, L40S").
ARCH_GPUS = {a: ", ".join(gpu_names(lambda g, a=a: g.arch == a)) for a in m.ARCHS}


def _occ_choice_label(c) -> str:
    arch, r, smem = c
    return f"{arch} · {r} regs · {fmt_bytes(smem) if smem else 'no'} smem"  # <= 30 characters: fits a phone


def occupancy_figure(choices=OCC_CHOICES, block_sizes=OCC_BLOCK_SIZES, *, active=None) -> go.Figure:
    """Static occupancy calculator: the dropdown picks the architecture, registers per thread and
    shared memory per block; the slider moves the block size. The three panels show occupancy
    against each input, the kernel marked (its colour names the limiter)."""
    choices, block_sizes = list(choices), list(block_sizes)
    if active is None:  # the first kernel at 256 threads per block
        active = (0, block_sizes.index(256) if 256 in block_sizes else 0)

    def frame(c, t):
        arch, r, smem = c
        o = m.occupancy(t, r, smem, arch)
        return _occupancy_traces(t, r, smem, arch, coarse=True), occupancy_title(o), occupancy_readout(o)

    return grid_figure(slider=("threads per block", block_sizes, str), choices=("kernel", choices, _occ_choice_label), frame=frame,
                       layout=_occupancy_layout("sm_90"), active=active, height=PHONE_FIGURE_PX)


def occupancy_calculator():
    """Live occupancy calculator: architecture, block size, registers, shared memory."""
    import ipywidgets as w

    controls = {
        "arch": w.Dropdown(options=list(m.ARCHS), value="sm_90", description="arch"),
        "threads_per_block": w.IntSlider(value=256, min=32, max=1024, step=32, description="threads/block"),
        "regs_per_thread": w.IntSlider(value=32, min=1, max=255, description="regs/thread"),
        "smem_kib": w.IntSlider(value=0, min=0, max=227, description="smem [KiB]"),
    }

    def compute(arch, threads_per_block, regs_per_thread, smem_kib):
        return m.occupancy(threads_per_block, regs_per_thread, smem_kib * KiB, arch)

    def show(o: m.Occupancy):
        fig = go.Figure(_occupancy_traces(o.threads_per_block, o.regs_per_thread, o.smem_per_block_bytes, o.arch))
        set_layout(fig, **_occupancy_layout(o.arch))
        return table_html(occupancy_rows(o)), style_figure(fig, title=occupancy_title(o), readout=occupancy_readout(o), height=740)

    return live_form(compute, controls, show, title="Occupancy (as cudaOccMaxActiveBlocksPerMultiprocessor computes it)")


# --------------------------------------------------------------------------------------------
# Divergence
# --------------------------------------------------------------------------------------------
def _lane_grid(lanes_per_path, cost_per_path, round_robin: bool):
    """Which lane is busy in which path: a 32 x paths matrix (for display), and the path edges
    on the time axis."""
    n = len(lanes_per_path)
    owner = [i % n for i in range(m.WARP_SIZE)] if round_robin else [p for p, c in enumerate(lanes_per_path) for _ in range(c)]
    owner += [-1] * (m.WARP_SIZE - len(owner))
    z = np.array([[1 if owner[lane] == p else 0 for p in range(n) if lanes_per_path[p] > 0] for lane in range(m.WARP_SIZE)], dtype=np.uint8)
    costs = [c for c, n_ in zip(cost_per_path, lanes_per_path) if n_ > 0]
    edges = np.concatenate([[0.0], np.cumsum(costs)])
    return z, edges


def _divergence_traces(d: m.Divergence, round_robin: bool) -> list:
    """The lanes' activity, and where independent lanes would have finished."""
    ideal = go.Scatter(x=[d.ideal_time, d.ideal_time], y=[-0.5, m.WARP_SIZE - 0.5], mode="lines", line=dict(color=COLORS[3], dash="dash"),
                       name="independent lanes would be done", hoverinfo="skip")
    return [_divergence_trace(d, round_robin), ideal]


def _divergence_trace(d: m.Divergence, round_robin: bool) -> go.Heatmap:
    z, edges = _lane_grid(d.lanes_per_path, d.cost_per_path, round_robin)
    # Lane 0 on top without a reversed axis (plotly.js 3 drops autorange="reversed" when the
    # dropdown of a grid_figure updates): the rows are listed top-down, lane 31 at y = 0.
    lanes = list(range(m.WARP_SIZE - 1, -1, -1))
    return go.Heatmap(z=z[::-1], x=edges, y=list(range(m.WARP_SIZE)), zmin=0, zmax=1, showscale=False,
                      colorscale=[[0, "rgba(150,150,150,0.25)"], [1, COLORS[0]]], xgap=1, ygap=1,
                      text=[[str(lane)] * z.shape[1] for lane in lanes],
                      hovertemplate="lane %{text}: %{z}<extra>1 = busy, 0 = masked off</extra>")


def divergence_title(d: m.Divergence) -> str:
    slower = "no slowdown" if f"{d.slowdown:.3g}" == "1" else f"{d.slowdown:.3g}× slower"
    return f"{plural(d.paths_taken, 'path')}: {slower}"


def divergence_readout(d: m.Divergence) -> str:
    return (f"the warp takes {d.warp_time:g}, independent lanes {d.ideal_time:g} (path lengths); "
            f"SIMT efficiency {percent(d.simt_efficiency)}")


def _divergence_layout() -> dict:
    return dict(xaxis=dict(title="time (path lengths)", rangemode="tozero"), yaxis=dict(
        title="lane", range=[-0.5, m.WARP_SIZE - 0.5], tickvals=[m.WARP_SIZE - 1 - lane for lane in (0, 8, 16, 24, 31)],
        ticktext=["0", "8", "16", "24", "31"]))


# (label, lane layout round-robin?, cost of path k of n): the dropdown of the static calculator.
DIVERGENCE_CHOICES = (
    ("round-robin lanes, equal paths", True, lambda k, n: 1.0),
    ("lanes in groups, equal paths", False, lambda k, n: 1.0),
    ("round-robin, path 0 8× longer", True, lambda k, n: 8.0 if k == 0 else 1.0),
)
DIVERGENCE_PATHS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)


def divergence_figure(n_paths=DIVERGENCE_PATHS, choices=DIVERGENCE_CHOICES, *, active=(0, 1)) -> go.Figure:
    """Static divergence calculator: the dropdown picks how lanes map to paths and what the paths
    cost; the slider moves the number of paths ``n``. Blue cells are lanes at work while the warp
    issues each path; the dashed line is when independent lanes would be done."""
    values, choices = list(n_paths), list(choices)

    def frame(c, n):
        _, rr, cost = c
        d = m.warp_divergence(m.lanes_round_robin(n), [cost(k, n) for k in range(n)])
        return _divergence_traces(d, rr), divergence_title(d), divergence_readout(d)

    return grid_figure(slider=("paths in the warp", values, str), choices=("lanes and paths", choices, lambda c: c[0]), frame=frame,
                       layout=_divergence_layout(), active=active, height=560)


def parse_numbers(text: str, name: str, kind=float) -> list:
    """``"16, 16"`` -> ``[16, 16]``; a ValueError naming ``name`` otherwise."""
    items = [v.strip() for v in str(text).replace(";", ",").split(",")]
    if items and not items[-1] and len(items) > 1:
        items = items[:-1]  # one trailing comma is harmless
    if not items or any(not v for v in items):
        raise ValueError(f"{name} must be numbers separated by single commas, got {text!r}")
    try:
        return [kind(v) for v in items]
    except ValueError:
        raise ValueError(f"{name} must be numbers separated by commas, got {text!r}") from None


def divergence_calculator():
    """Live divergence calculator: lanes on each path and each path's cost [cycles]."""
    import ipywidgets as w

    controls = {
        "lanes": w.Text(value="16, 16", description="lanes/path"),
        "cycles": w.Text(value="100, 100", description="cycles/path"),
    }

    def compute(lanes, cycles):
        return m.warp_divergence(parse_numbers(lanes, "lanes per path", int), parse_numbers(cycles, "cycles per path"))

    def show(d: m.Divergence):
        rows = [
            ("paths taken", str(d.paths_taken)),
            ("warp time", f"{d.warp_time:g} cycles"),
            ("if lanes were independent", f"{d.ideal_time:g} cycles"),
            ("slowdown", "none (1×)" if f"{d.slowdown:.3g}" == "1" else f"{d.slowdown:.3g}×"),
            ("SIMT efficiency (active lanes / 32)", percent(d.simt_efficiency)),
        ]
        fig = go.Figure(_divergence_traces(d, False))
        set_layout(fig, **_divergence_layout())
        fig.update_xaxes(title="time [cycles]")
        return table_html(rows), style_figure(fig, title=divergence_title(d), readout=divergence_readout(d), height=480)

    return live_form(compute, controls, show, title="Warp divergence",
                     names={"lanes_per_path": "lanes", "cost_per_path": "cycles"})


# --------------------------------------------------------------------------------------------
# Latency hiding
# --------------------------------------------------------------------------------------------
def latency_hiding_rows(h: m.LatencyHiding, max_warps_per_sm: int = 64) -> list:
    return [
        ("bytes in flight (device)", fmt_bytes(h.bytes_in_flight)),
        ("bytes in flight per SM", fmt_bytes(h.bytes_in_flight_per_sm)),
        ("bytes in flight per warp", fmt_bytes(h.bytes_per_warp_in_flight)),
        ("warps needed per SM", f"{h.warps_needed_per_sm} (occupancy {percent(h.occupancy_needed)})"),
        ("independent loads per thread needed at full occupancy", str(h.loads_per_thread_needed)),
        (f"bandwidth reachable with {max_warps_per_sm} warps", percent(h.achievable_fraction)),
    ]


def _latency_traces(latency_s, bytes_per_s, sms, bytes_per_warp, max_warps, h: m.LatencyHiding) -> list:
    warps = np.arange(0, max_warps + 1)
    bw = m.littles_law_bytes_per_s(warps, sms, bytes_per_warp, latency_s, bytes_per_s)
    return [
        go.Scatter(x=warps, y=bw / 1e12, mode="lines", name="Little's law", line=dict(color=COLORS[0]),
                   hovertemplate="%{x} warps/SM: %{y:.2f} TB/s<extra></extra>"),
        go.Scatter(x=[min(h.warps_needed_per_sm, max_warps)], y=[bw[min(h.warps_needed_per_sm, max_warps)] / 1e12], mode="markers",
                   marker=dict(size=12, color=COLORS[3] if h.warps_needed_per_sm > max_warps else COLORS[2], line=dict(color="black", width=1)),
                   name="warps needed (capped at the SM's slots)", hovertemplate="%{x} warps<extra></extra>"),
    ]


def _latency_layout(bytes_per_s: float, max_warps: int) -> dict:
    return dict(xaxis=dict(title="resident warps per SM", range=[0, max_warps]),
                yaxis=dict(title="bandwidth [TB/s]", range=[0, bytes_per_s / 1e12 * 1.1]))


def latency_hiding_title(h: m.LatencyHiding) -> str:
    return f"{plural(h.warps_needed_per_sm, 'warp')} per SM needed"


def latency_hiding_readout(h: m.LatencyHiding) -> str:
    return (f"{fmt_bytes(h.bytes_in_flight_per_sm)} in flight per SM, {fmt_bytes(h.bytes_per_warp_in_flight)} per warp; "
            f"a full SM reaches {percent(h.achievable_fraction)} of the bandwidth")


LOAD_WIDTHS = (4, 8, 16)


def latency_hiding_figure(latency_s: float, bytes_per_s: float, sms: int, *, bytes_per_load=LOAD_WIDTHS,
                          loads=(1, 2, 3, 4, 6, 8), max_warps_per_sm: int = 64) -> go.Figure:
    """Static latency-hiding calculator: bandwidth against resident warps per SM (Little's law);
    the dropdown picks the width of each load, the slider the independent loads each thread
    keeps in flight."""
    widths = [bytes_per_load] if isinstance(bytes_per_load, int) else list(bytes_per_load)

    def frame(e, u):
        h = m.latency_hiding(latency_s, bytes_per_s, sms, bytes_per_load=e, loads_in_flight_per_thread=u, max_warps_per_sm=max_warps_per_sm)
        traces = _latency_traces(latency_s, bytes_per_s, sms, h.bytes_per_warp_in_flight, max_warps_per_sm, h)
        return traces, latency_hiding_title(h), latency_hiding_readout(h)

    return grid_figure(slider=("loads in flight per thread", list(loads), str),
                       choices=("load width", widths, lambda e: f"{e}-byte loads" + {4: " (float)", 8: " (float2)", 16: " (float4)"}.get(e, "")),
                       frame=frame, layout=_latency_layout(bytes_per_s, max_warps_per_sm), height=480)


def latency_hiding_calculator(latency_s: float = 600e-9, bytes_per_s: float = 4.8e12, sms: int = 132):
    """Live latency-hiding calculator: latency, bandwidth, SMs, load width and loads in flight."""
    import ipywidgets as w

    controls = {
        "latency_ns": slider(latency_s * 1e9, 50, 3000, 10, description="latency [ns]", readout_format=".1f"),
        "tb_per_s": slider(bytes_per_s / 1e12, 0.1, 10, 0.05, description="TB/s", readout_format=".2f"),
        "sms": slider(int(sms), 1, 200, description="SMs"),
        "bytes_per_load": w.Dropdown(options=[4, 8, 16], value=4, description="load [B]"),
        "loads": w.IntSlider(value=1, min=1, max=16, description="loads/thread"),
        "max_warps": w.Dropdown(options=[64, 48, 32], value=64, description="warps/SM"),
    }

    def compute(latency_ns, tb_per_s, sms, bytes_per_load, loads, max_warps):
        h = m.latency_hiding(latency_ns * 1e-9, tb_per_s * 1e12, sms, bytes_per_load=bytes_per_load,
                             loads_in_flight_per_thread=loads, max_warps_per_sm=max_warps)
        return h, latency_ns * 1e-9, tb_per_s * 1e12, sms, max_warps

    def show(result):
        h, lat, bw, n, w_max = result
        fig = go.Figure(_latency_traces(lat, bw, n, h.bytes_per_warp_in_flight, w_max, h))
        set_layout(fig, **_latency_layout(bw, w_max))
        return table_html(latency_hiding_rows(h, w_max)), style_figure(fig, title=latency_hiding_title(h), readout=latency_hiding_readout(h))

    return live_form(compute, controls, show, title="Latency hiding: Little's law")


# --------------------------------------------------------------------------------------------
# Amdahl
# --------------------------------------------------------------------------------------------
WORKERS = np.unique(np.round(np.logspace(0, 12, 49, base=2)).astype(int))  # 4 per octave: smooth on log axes, light frames


def _amdahl_traces(p: float) -> list:
    s = np.array([m.amdahl_speedup(p, n) for n in WORKERS])
    ceiling = m.amdahl_ceiling(p) if p < 1 else None  # p = 1: no finite ceiling, no line
    traces = [
        # y = x is straight on log-log axes: two points draw it (page weight: one per frame)
        go.Scatter(x=[WORKERS[0], WORKERS[-1]], y=[WORKERS[0], WORKERS[-1]], mode="lines", name="ideal (p = 1)",
                   line=dict(color="#999999", dash="dot")),
        go.Scatter(x=WORKERS, y=s, mode="lines", name=f"p = {p:g}", line=dict(color=COLORS[0])),
        go.Scatter(x=[WORKERS[0], WORKERS[-1]], y=[ceiling, ceiling] if ceiling is not None else [None, None], mode="lines",
                   name="ceiling 1/(1 − p)", line=dict(color=COLORS[3], dash="dash")),
    ]
    return traces


def _ceiling_text(p: float) -> str:
    if p >= 1:
        return "no limit: the speed-up grows with the workers"
    return f"never more than {m.amdahl_ceiling(p):.4g}×"


def amdahl_title(p: float, workers: int = 132) -> str:
    return f"{m.amdahl_speedup(p, workers):.3g}× on {plural(int(workers), 'worker')}"


def amdahl_readout(p: float, workers: int = 132) -> str:
    return f"p = {p:g}: {_ceiling_text(p)}; efficiency {percent(m.amdahl_speedup(p, workers) / workers)}"


def _amdahl_layout() -> dict:
    return dict(xaxis=dict(type="log", title="workers", range=[0, np.log10(4096)]),
                yaxis=dict(type="log", title="speed-up", range=[0, np.log10(4096)]))


AMDAHL_GPUS = tuple(gpu_names())  # every catalog GPU: its SMs (or CUs) are the workers marked


def amdahl_figure(fractions=(0.5, 0.9, 0.95, 0.99, 0.999), gpus=AMDAHL_GPUS) -> go.Figure:
    """Static Amdahl calculator: speed-up against workers; the dropdown picks a GPU whose SMs (or
    compute units) are the workers marked, the slider the parallel fraction ``p``."""
    from ..hardware import get_gpu

    values = list(fractions)
    choices = [(g, get_gpu(g).sms) for g in gpus]

    def frame(c, p):
        name, n = c
        marker = go.Scatter(x=[n], y=[m.amdahl_speedup(p, n)], mode="markers", name=f"{name}: {n} {multiprocessors(name)}",
                            marker=dict(size=12, color=gpu_color(name), line=dict(color="#444444", width=1)))
        return _amdahl_traces(p) + [marker], amdahl_title(p, n), amdahl_readout(p, n)

    return grid_figure(slider=("parallel fraction p", values, lambda v: f"{v:g}"),
                       choices=("GPU", choices, lambda c: f"{c[0]} ({c[1]} {multiprocessors(c[0])})"),
                       frame=frame, layout=_amdahl_layout(), active=(0, values.index(0.95) if 0.95 in values else 0), height=500)


def amdahl_calculator():
    """Live Amdahl calculator: parallel fraction and workers -> speed-up and its ceiling."""
    import ipywidgets as w

    controls = {
        "parallel_fraction": w.FloatSlider(value=0.95, min=0, max=1, step=0.001, readout_format=".3f", description="p"),
        # a log slider, like the figure's x axis: 1 to 4096 workers in steps of 2^(1/8), opening at 132
        # (a linear 1-4096 slider opened at 3% of its track and moved one worker per key; review r6 #7)
        "workers": slider(132, 1, 4096, 0.125, log_base=2, readout_format=".0f", description="workers"),
    }

    def compute(parallel_fraction, workers):
        workers = max(1, int(round(workers)))
        return parallel_fraction, workers, m.amdahl_speedup(parallel_fraction, workers), \
            (m.amdahl_ceiling(parallel_fraction) if parallel_fraction < 1 else None)

    def show(result):
        p, n, s, c = result
        rows = [("speed-up", f"{s:.3g}×"), ("efficiency (speed-up / workers)", percent(s / n)),
                ("ceiling (infinite workers)", f"{c:.4g}×" if c is not None
                 else "no limit: with p = 1 (no serial part) the speed-up grows with the workers"),
                ("serial fraction", f"{1 - p:.3g}")]
        fig = go.Figure(_amdahl_traces(p))
        fig.add_trace(go.Scatter(x=[n], y=[s], mode="markers", marker=dict(size=12, color=COLORS[2], line=dict(color="#444444", width=1)),
                                 name="you"))
        set_layout(fig, **_amdahl_layout())
        return table_html(rows), style_figure(fig, title=amdahl_title(p, n), readout=amdahl_readout(p, n))

    return live_form(compute, controls, show, title="Amdahl's law")


# --------------------------------------------------------------------------------------------
# Plots of the experiments (data in, figures out)
# --------------------------------------------------------------------------------------------
def occupancy_api_plot(rows: list, arch: str, regs=(32, 64, 128, 255), source: str = "runtime", *, title: str | None = None,
                       readout: str | None = None) -> go.Figure:
    """Blocks per SM against block size: the recorded answers (markers) and the model (lines),
    one colour per register count (the recorded counts nearest to ``regs``), no shared memory."""
    fig = go.Figure()
    threads = list(range(32, 1025, 32))
    present = sorted({row["regs_per_thread"] for row in rows if row["dynamic_smem_bytes"] == 0})
    regs = sorted({min(present, key=lambda p: abs(p - r)) for r in regs}) if present else []
    for r, color in zip(regs, COLORS):
        pts = [row for row in rows if row["regs_per_thread"] == r and row["dynamic_smem_bytes"] == 0 and row["threads_per_block"] <= 1024]
        if not pts:
            continue
        fig.add_trace(go.Scatter(x=threads, y=[m.occupancy(t, r, 0, arch).blocks_per_sm for t in threads], mode="lines",
                                 line=dict(color=color, shape="hv"), name=f"model, {r} regs"))
        fig.add_trace(go.Scatter(x=[p["threads_per_block"] for p in pts], y=[p["blocks_per_sm"] or 0 for p in pts], mode="markers",
                                 marker=dict(color=color, size=9, symbol="circle-open", line=dict(width=2)), name=f"{source}, {r} regs"))
    set_layout(fig, xaxis=dict(title="threads per block"),
                      yaxis=dict(title="blocks per SM", type="log", tickvals=[1, 2, 4, 8, 16, 32], range=[-0.05, np.log10(40)]))
    return style_figure(fig, title=title or "Model (lines) and runtime (circles)", readout=readout, height=500)


def bandwidth_occupancy_plot(series: dict, peak_bytes_per_s: float | None = None, *, title: str | None = None,
                             readout: str | None = None) -> go.Figure:
    """Bandwidth against resident warps per SM; ``series`` maps a label to
    ``(warps, measured_bytes_per_s, predicted_bytes_per_s or None)``."""
    fig = go.Figure()
    top = max([max(v[1]) for v in series.values()] + [peak_bytes_per_s or 0])
    scale, unit = next((f, u) for f, u in ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")) if top >= f or f == 1.0)
    for (label, (warps, measured, predicted)), color in zip(series.items(), COLORS):
        fig.add_trace(go.Scatter(x=warps, y=np.asarray(measured) / scale, mode="markers+lines", name=f"{label}: measured", line=dict(color=color)))
        if predicted is not None and all(v is not None for v in predicted):
            fig.add_trace(go.Scatter(x=warps, y=np.asarray(predicted) / scale, mode="lines", name=f"{label}: Little's law",
                                     line=dict(color=color, dash="dash")))
    if peak_bytes_per_s:
        fig.add_hline(y=peak_bytes_per_s / scale, line_dash="dot", annotation_text="HBM datasheet")
    set_layout(fig, xaxis=dict(title="resident warps per SM"), yaxis=dict(title=f"bandwidth [{unit}]", rangemode="tozero"))
    return style_figure(fig, title=title or "Bandwidth against resident warps", readout=readout, height=500)


def bandwidth_series(result: dict, label: str) -> dict:
    """``bandwidth_occupancy_plot`` series from a ``measure_occupancy_bandwidth`` result."""
    out = {}
    for name, v in result["variants"].items():
        pts = v["points"]
        out[f"{label}, {name}"] = ([p["warps_per_sm"] for p in pts], [p["bytes_per_s"] for p in pts], [p["predicted_bytes_per_s"] for p in pts])
    return out


def amdahl_series(result: dict, label: str) -> dict:
    """``ratio_plot`` series (measured and predicted speed-up) from a ``measure_amdahl`` result,
    and the law's ceiling 1/(1 − p) as a flat series over the same workers (``ratio_plot`` draws a
    label with "ceiling" in it dotted), with p as ``amdahl_predictions`` takes it from the
    one-worker steps; no ceiling where the result lacks those steps' parts or p = 1."""
    import copy

    from ..experiments.simt import amdahl_predictions

    workers = [p["workers"] for p in result["points"]]
    out = {f"{label}: measured": (workers, [p["speedup"] for p in result["points"]]),
           f"{label}: model (calibrated)": (workers, [p["predicted_speedup"] for p in result["points"]])}
    one = next((p for p in result["points"] if p["workers"] == 1), None)
    if one is not None and all(one.get(k) is not None for k in ("serial_s", "parallel_s", "time_s")):
        ceiling = amdahl_predictions(copy.deepcopy(result))["ceiling"]
        if ceiling is not None:
            out[f"{label}: ceiling 1/(1 − p)"] = ([min(workers), max(workers)], [ceiling, ceiling])
    return out


def ratio_plot(series: dict, x_title: str, y_title: str, *, log_x: bool = True, ideal: bool = True, title: str | None = None,
               readout: str | None = None) -> go.Figure:
    """Measured against predicted quantities; ``series`` maps a label to ``(x, y)``. A label with
    "model" or "predicted" in it is drawn dashed, one with "ceiling" (a bound) dotted, both without
    markers; the rest (measurements) as lines with markers."""
    fig = go.Figure()
    for (label, (x, y)), color in zip(series.items(), COLORS):
        dash = "dot" if "ceiling" in label else "dash" if "model" in label or "predicted" in label else None
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines" if dash else "lines+markers", name=label, line=dict(color=color, dash=dash)))
    set_layout(fig, xaxis=dict(title=x_title, type="log" if log_x else "linear"), yaxis=dict(title=y_title))
    return style_figure(fig, title=title, readout=readout, height=460)


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_max_regs(answer, threads_per_block: int = 128, arch: str = "sm_86") -> bool:
    """Is ``answer`` the most registers per thread that keeps FULL occupancy for
    ``threads_per_block``-thread blocks on ``arch``?"""
    lim = m.arch_limits(arch)
    want_blocks = min(lim.max_warps_per_sm // -(-threads_per_block // m.WARP_SIZE), lim.max_blocks_per_sm)
    best = m.max_regs_per_thread_for(threads_per_block, want_blocks, arch)
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)) or answer < 1:
        return _verdict(False, f"the answer must be a positive integer number of registers, got {answer!r}")
    o = m.occupancy(threads_per_block, int(answer), 0, arch)
    if o.occupancy < m.occupancy(threads_per_block, 1, 0, arch).occupancy:
        return _verdict(False, f"{answer} registers per thread give {o.occupancy:.1%} occupancy ({o.limiter}): too many")
    if answer < best:
        return _verdict(False, f"{answer} registers keep full occupancy, but more do too: the allocation unit is 256 registers per warp")
    return _verdict(True, f"{answer} registers per thread: {o.warps_per_sm}/{o.max_warps_per_sm} warps; {answer + 1} would drop to "
                          f"{m.occupancy(threads_per_block, int(answer) + 1, 0, arch).occupancy:.1%}")


def check_warps_needed(fn, trials: int = 200, seed: int = 0) -> bool:
    """Check a reader's ``fn(latency_s, bytes_per_s, sms, bytes_per_warp) -> warps per SM`` against
    the model (Little's law, rounded up to whole warps) on random inputs."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        lat = float(rng.uniform(100e-9, 2e-6))
        bw = float(rng.uniform(0.3e12, 8e12))
        sms = int(rng.integers(8, 200))
        per_warp = int(rng.choice([128, 256, 512, 1024, 2048]))
        h = m.latency_hiding(lat, bw, sms, bytes_per_load=per_warp // m.WARP_SIZE)
        try:
            got = fn(lat, bw, sms, per_warp)
        except Exception as exc:  # a reader's bug: report it, don't crash the notebook
            return _verdict(False, f"your function raised {exc!r} for latency={lat:.3g} s, bandwidth={bw:.3g} B/s, "
                                   f"sms={sms}, bytes_per_warp={per_warp}")
        if got != h.warps_needed_per_sm:
            return _verdict(False, f"latency={lat:.3g} s, bandwidth={bw:.3g} B/s, sms={sms}, bytes_per_warp={per_warp}: expected "
                                   f"{h.warps_needed_per_sm} warps, got {got!r}")
    return _verdict(True, f"{trials} random cases agree with Little's law")


# --------------------------------------------------------------------------------------------
# Rows of the chapter's comparison tables (``widgets.book.compare_table``): model, label, the
# recorded H200 result and, in a live notebook, the reader's run. Every model value is recomputed
# here from the raw measurements with today's models.
# --------------------------------------------------------------------------------------------
def _ratio(measured, model_value) -> str | None:
    return f"{measured / model_value:.2f}" if measured is not None and model_value else None


def occupancy_api_compare_rows(ref: dict | None, here: dict | None) -> list:
    """How many of the driver's (or the header's) answers the occupancy model reproduces."""
    def agree(res):
        if not res or not res.get("configs") or res.get("arch") not in m.ARCHS:
            return None
        n = sum(m.occupancy(r["threads_per_block"], r["regs_per_thread"], r["smem_per_block_bytes"], res["arch"]).blocks_per_sm
                == (r["blocks_per_sm"] or 0) for r in res["configs"])
        return n, len(res["configs"])

    a, h = agree(ref), agree(here)
    # the ledger's label for the same comparison (widgets.experiments.simt.accuracy_rows: a check of the port)
    return [dict(quantity="launches whose blocks per SM the model gets exactly", model="all", label="fit",
                 reference=f"{a[0]:,} of {a[1]:,}" if a else "not recorded", here=f"{h[0]:,} of {h[1]:,}" if h else None)]


def divergence_compare_rows(ref: dict | None, here: dict | None) -> list:
    """Per number of paths: the calibrated model (fixed + n x per path) against the H200."""
    import copy

    from ..experiments.simt import divergence_predictions

    def pts(res):
        if not res:
            return {}
        r = copy.deepcopy(res)
        divergence_predictions(r)
        return {p["paths_taken"]: p for p in r["points"]}

    a, h = pts(ref), pts(here)
    rows = []
    for n in sorted(a or h):
        p, q = a.get(n), h.get(n)
        rows.append(dict(quantity=plural(n, "path"), model=fmt_time(p["predicted_time_s"]) if p else None,
                         label="calibrated" if n > 1 else None, reference=fmt_time(p["time_s"]) if p else "not recorded",
                         ratio=_ratio(p["time_s"], p["predicted_time_s"]) if p and n > 1 else None,
                         here=fmt_time(q["time_s"]) if q else None))
    return rows


def launch_compare_rows(ref: dict | None, here: dict | None) -> list:
    """The launch experiment: eager time against the launch model, graph replay, speed-up."""
    from ..experiments.simt import launch_prediction

    def t(v):
        return fmt_time(v) if v else "n/a"

    rows = []
    lp = launch_prediction(ref) if ref else {"predicted_eager_s": None, "label": None}
    n = (ref or here or {}).get("n_kernels", 1000)

    def here_of(res, key, n_ref, nbytes_ref=None):
        """The reader's value, with its own loop's size where it differs from the row's (a CPU runs
        200 launches, not the H200's 1,000: 494 µs over 1,000 would read as 0.49 µs a launch)."""
        if not res:
            return None
        size = [f"{res['n_kernels']:,} kernels"] if res.get("n_kernels") not in (None, n_ref) else []
        if nbytes_ref is not None and res.get("nbytes") not in (None, nbytes_ref):
            size.append(f"on {res['nbytes'] / 2**20:.0f} MiB")
        return t(res.get(key)) + (f" ({' '.join(size)})" if size else "")

    rows.append(dict(quantity=f"{n:,} kernels, eager", model=t(lp["predicted_eager_s"]) if lp["predicted_eager_s"] else None,
                     label=lp["label"], reference=t(ref["eager_s"]) if ref else "not recorded",
                     ratio=_ratio(ref["eager_s"], lp["predicted_eager_s"]) if ref else None, here=here_of(here, "eager_s", n)))
    # the eager loop's own time per launch, beside the host time per launch below it (the model per launch:
    # max(host time per launch, GPU time per kernel)). The same comparison as the row above, over its launches:
    # no ratio or label of its own, so that it does not read as a second comparison (expert check r19)
    per_pred = lp["predicted_eager_s"] / ref["n_kernels"] if ref and lp["predicted_eager_s"] else None
    rows.append(dict(quantity="the same, per launch (the row above over its launches)", model=t(per_pred) if per_pred else None,
                     reference=t(ref.get("eager_per_kernel_s")) if ref else "not recorded",
                     here=here_of(here, "eager_per_kernel_s", n)))

    def host(r):  # a host too noisy for the two loops' slope gives none, and the record says why
        return t(r["host_per_launch_s"]) if r.get("host_per_launch_s") else "n/a: the two loops gave no slope (too noisy)"

    rows.append(dict(quantity="host time per launch (an input of the model)", reference=host(ref) if ref else "not recorded",
                     here=host(here) if here else None))
    rows.append(dict(quantity="same kernels from a CUDA graph, per kernel (an input of the model)",
                     reference=t(ref.get("graph_per_kernel_s")) if ref else "not recorded",
                     here=t(here.get("graph_per_kernel_s")) if here else None))
    rows.append(dict(quantity="graph speed-up (eager time over graph time)",
                     reference=f"{ref['speedup']:.1f}×" if ref and ref.get("speedup") else "n/a",
                     here=(f"{here['speedup']:.1f}×" if here.get("speedup") else "n/a (no GPU)") if here else None))
    kb_ref, kb_here = ((r or {}).get("kernel_bound") or {} for r in (ref, here))
    if kb_ref.get("eager_s") is not None or kb_here.get("eager_s") is not None:
        kb = kb_ref if kb_ref.get("eager_s") is not None else kb_here
        pred = (m.launch_bound_time_s(kb_ref["n_kernels"], kb_ref["graph_per_kernel_s"], kb_ref["host_per_launch_s"])
                if kb_ref.get("eager_s") is not None and kb_ref.get("graph_per_kernel_s") is not None
                and kb_ref.get("host_per_launch_s") is not None else None)
        rows.append(dict(quantity=f"{kb['n_kernels']:,} kernels on {kb['nbytes'] / 2**20:.0f} MiB, eager (kernel-bound)",
                         model=t(pred) if pred else None, label="calibrated" if pred else None,
                         reference=t(kb_ref.get("eager_s")) if kb_ref else "not recorded",
                         ratio=_ratio(kb_ref.get("eager_s"), pred) if pred else None,
                         here=here_of(kb_here, "eager_s", kb["n_kernels"], kb["nbytes"])))
        rows.append(dict(quantity="those kernels from a CUDA graph, per kernel (an input of the model)",
                         reference=t(kb_ref.get("graph_per_kernel_s")) if kb_ref else "not recorded",
                         here=t(kb_here.get("graph_per_kernel_s")) if kb_here else None))
    return rows


def amdahl_compare_rows(ref: dict | None, here: dict | None, workers=(2, 8, 32, 128)) -> list:
    """Amdahl's law with p from the one-worker steps' parts, against the measured speed-ups."""
    import copy

    from ..experiments.simt import amdahl_predictions

    def prep(res):
        if not res:
            return None, {}
        r = copy.deepcopy(res)
        info = amdahl_predictions(r)
        return info, {p["workers"]: p for p in r["points"]}

    ia, a = prep(ref)
    ih, h = prep(here)
    rows = []
    for w in workers:
        p, q = a.get(w), h.get(w)
        if not p and not q:
            continue
        rows.append(dict(quantity=f"speed-up on {plural(w, 'worker')}", model=fmt_speedup(p["predicted_speedup"]) if p else None,
                         label="calibrated" if p else None, reference=fmt_speedup(p["speedup"]) if p else "not recorded",
                         ratio=_ratio(p["speedup"], p["predicted_speedup"]) if p else None, here=fmt_speedup(q["speedup"]) if q else None))
    how = "p from the one-worker steps' parts"
    def ceiling(info):
        return None if not info else ("none (no serial part measured)" if info["ceiling"] is None else fmt_speedup(info["ceiling"]))

    rows.append(dict(quantity=f"ceiling 1/(1 − p), {how}", reference=ceiling(ia) or "not recorded", here=ceiling(ih)))
    return rows


# --------------------------------------------------------------------------------------------
# The depth pass: streams and overlap, reductions, barriers, spills, stall reasons
# --------------------------------------------------------------------------------------------
STAGE_NAMES = ("copy in", "kernel", "copy out")  # short: the legend fits a phone
OVERLAP_CHUNKS = (1, 2, 3, 4, 6, 8, 12, 16)
# (copy time each way, kernel time) for the whole job [ms]: copy-bound, balanced, compute-bound
OVERLAP_CHOICES = ((4.0, 1.0), (4.0, 4.0), (4.0, 8.0), (1.0, 4.0))


def _stage_colors() -> tuple:
    return (series_color(0), series_color(2), series_color(3))


def _gantt_traces(spans, rows_of, *, showlegend: bool = True) -> list:
    """One horizontal-bar trace per stage: ``spans`` are (chunk, stage index, start [s], end [s]),
    ``rows_of(chunk, stage)`` names the row (an engine or a stream) the bar sits on."""
    traces = []
    for s, (name, color) in enumerate(zip(STAGE_NAMES, _stage_colors())):
        mine = [sp for sp in spans if sp[1] == s]
        traces.append(go.Bar(
            x=[(e - b) * 1e3 for _, _, b, e in mine], base=[b * 1e3 for _, _, b, _ in mine], y=[rows_of(c, s) for c, *_ in mine],
            orientation="h", name=name, marker=dict(color=color, line=dict(color="#ffffff", width=1)), showlegend=showlegend,
            text=[str(c) for c, *_ in mine], textposition="inside", insidetextanchor="middle",
            hovertemplate="chunk %{text}<br>%{base:.3f} to %{x:.3f} ms later<extra>" + name + "</extra>"))
    return traces


def _gantt_layout(rows: list, x_max_ms: float, *, legend: bool = True) -> dict:
    out = dict(barmode="overlay", xaxis=dict(title="time (ms)", range=[0, x_max_ms * 1.02]),
               yaxis=dict(categoryorder="array", categoryarray=list(reversed(rows)), title=None))
    if legend:  # grid_figure places its own legend
        out["legend"] = dict(orientation="h", y=-0.25)
    return out


def overlap_title(copy_s: float, kernel_s: float, chunks: int) -> str:
    return f"{plural(chunks, 'chunk')}: copies {fmt_time(copy_s)}, kernel {fmt_time(kernel_s)}"


def overlap_readout(copy_s: float, kernel_s: float, chunks: int) -> str:
    stages = [copy_s, kernel_s, copy_s]
    serial, over = sum(stages), m.pipeline_time_s(stages, chunks)
    return f"serial {fmt_time(serial)}, overlapped {fmt_time(over)}: {fmt_speedup(serial / over)} (at most {fmt_speedup(serial / max(stages))})"


def overlap_figure(chunks=OVERLAP_CHUNKS, choices=OVERLAP_CHOICES, *, active=(1, 5)) -> go.Figure:
    """Static overlap calculator: the model's timeline (``m.pipeline_schedule``) of a job that
    copies in, computes and copies out, split into chunks; the dropdown picks the stage times,
    the slider the number of chunks."""
    engines = ["H2D engine", "SMs", "D2H engine"]
    x_max = max(2 * c + k for c, k in choices)

    def frame(choice, k):
        copy_ms, kernel_ms = choice
        stages = [copy_ms * 1e-3, kernel_ms * 1e-3, copy_ms * 1e-3]
        spans = m.pipeline_schedule(stages, k)
        traces = _gantt_traces(spans, lambda c, s: engines[s])
        return traces, overlap_title(stages[0], stages[1], k), overlap_readout(stages[0], stages[1], k)

    fig = grid_figure(slider=("chunks", list(chunks), str),
                      choices=("copy, kernel", list(choices), lambda c: f"copy {c[0]:g} ms, kernel {c[1]:g} ms"),
                      frame=frame, layout=_gantt_layout(engines, x_max, legend=False), active=active, height=420)
    return fig


def overlap_calculator():
    """Live overlap calculator: bytes, host-link bandwidth, kernel time and chunks -> the serial
    and overlapped times and the model's timeline."""
    import ipywidgets as w

    from ..hardware import get_gpu

    link = get_gpu("H200-SXM").host_bytes_per_s
    controls = {
        "mib": w.IntSlider(value=256, min=1, max=8192, description="MiB"),
        "link_gb_s": w.FloatSlider(value=link / 1e9, min=1, max=200, step=1, description="link GB/s"),
        "kernel_ms": w.FloatSlider(value=4.0, min=0.0, max=50, step=0.1, description="kernel ms"),
        "chunks": w.IntSlider(value=8, min=1, max=64, description="chunks"),
    }

    def compute(mib, link_gb_s, kernel_ms, chunks):
        copy_s = mib * 2**20 / (link_gb_s * 1e9)
        stages = [copy_s, kernel_ms * 1e-3, copy_s]
        return stages, chunks, m.pipeline_time_s(stages, chunks), m.pipeline_schedule(stages, chunks)

    def show(result):
        stages, k, over, spans = result
        serial = sum(stages)
        rows = [("copy each way", fmt_time(stages[0])), ("kernel", fmt_time(stages[1])), ("serial (one stream)", fmt_time(serial)),
                (f"overlapped ({plural(k, 'chunk')})", fmt_time(over)), ("speed-up", fmt_speedup(serial / over)),
                ("bound (infinitely many chunks)", fmt_time(max(stages)))]
        engines = ["H2D engine", "SMs", "D2H engine"]
        fig = go.Figure(_gantt_traces(spans, lambda c, s: engines[s]))
        set_layout(fig, **_gantt_layout(engines, serial * 1e3))
        return table_html(rows), style_figure(fig, title=overlap_title(stages[0], stages[1], k),
                                              readout=overlap_readout(stages[0], stages[1], k))

    return live_form(compute, controls, show, title="Copy/compute overlap")


def engine_spans(run) -> list:
    """``(chunk, stage index, start, end)`` of a recorded run with each bar starting when its
    engine was free: CUDA events mark when a *stream* reached a copy or kernel, and a copy queued
    behind another stream's copy on the same copy engine waits; the engine runs them in order, so
    a stage really starts at the later of its event and the end of the previous chunk's same
    stage."""
    order = {"h2d": 0, "compute": 1, "d2h": 2}  # simt_streams.STAGES, in STAGE_NAMES' order
    out, last_end = [], {}
    for sp in sorted(run.spans, key=lambda sp: (order[sp.stage], sp.chunk)):
        s = order[sp.stage]
        start = max(sp.start_s, last_end.get(s, 0.0))
        out.append((sp.chunk, s, min(start, sp.end_s), sp.end_s))
        last_end[s] = sp.end_s
    return sorted(out)


def timeline_plot(run, *, title: str, readout: str | None = None, x_max_ms: float | None = None) -> go.Figure:
    """A recorded run (``simt_streams.PipelineRun``) drawn from its CUDA events: one row per
    stream, one bar per stage of each chunk (labelled with the chunk), from when its engine was
    free (:func:`engine_spans`) to its end event."""
    spans = engine_spans(run)
    stream_of = {sp.chunk: sp.stream for sp in run.spans}
    rows = [f"stream {i}" for i in range(run.streams)]
    fig = go.Figure(_gantt_traces(spans, lambda c, s: f"stream {stream_of[c]}"))
    set_layout(fig, **_gantt_layout(rows, x_max_ms or run.total_s * 1e3))
    return style_figure(fig, title=title, readout=readout, height=260 + 40 * run.streams)


LAUNCH_TIMELINE_KERNELS = 10  # kernels drawn per row: enough to see the gaps repeat, few enough to see each one


def launch_timeline_readout(timeline: dict) -> str:
    """The subtitle of :func:`launch_timeline_plot`: what it is drawn from (the timeline's means, not a
    trace) and the means themselves."""
    e, g = timeline["eager"], timeline["graph"]
    ke, kg = e["kernel_sum_s"] / e["n"], g["kernel_sum_s"] / g["n"]
    kernels = (f"kernels {fmt_time(ke)}" if fmt_time(ke) == fmt_time(kg) else f"kernels {fmt_time(ke)} eagerly, {fmt_time(kg)} in the graph")
    return (f"drawn from the kernel timeline's means, not a trace: {kernels}; gaps {fmt_time(e['gap_sum_s'] / (e['n'] - 1))} "
            f"eagerly, {fmt_time(g['gap_sum_s'] / (g['n'] - 1))} in the graph")


def launch_timeline_plot(timeline: dict, *, n_kernels: int = LAUNCH_TIMELINE_KERNELS,
                         title: str | None = None, readout: str | None = None) -> go.Figure:
    """Two rows of ``n_kernels`` kernels, launched one by one ("eager") and replayed from a CUDA graph,
    as bars with the gaps between them, drawn from a recorded kernel timeline's *means*
    (``measure_launch_overhead``'s ``kernel_bound["timeline"]``: each mode's kernel time summed over
    its ``n`` kernels, and its gaps summed over the ``n - 1`` gaps), not from single kernels: the
    record keeps sums, medians and extremes, not each kernel's start and end. Every kernel of a row
    is drawn at the mean length, every gap at the mean gap, so each row ends where ``n_kernels``
    such kernels would. The default subtitle (:func:`launch_timeline_readout`) says so."""
    if not isinstance(timeline, dict) or not all(isinstance(timeline.get(k), dict) for k in ("eager", "graph")):
        raise ValueError(f"timeline must be a recorded kernel timeline with 'eager' and 'graph' parts, got {timeline!r}")
    if isinstance(n_kernels, bool) or not isinstance(n_kernels, int) or not 1 <= n_kernels <= 200:
        raise ValueError(f"n_kernels must be an integer in [1, 200], got {n_kernels!r}")
    rows = (("eager", timeline["eager"]), ("graph", timeline["graph"]))
    kernels, gaps = {}, {}
    for name, part in rows:
        if part.get("n", 0) < 2 or part.get("kernel_sum_s") is None or part.get("gap_sum_s") is None:
            raise ValueError(f"timeline[{name!r}] must hold n >= 2 kernels with kernel_sum_s and gap_sum_s, got {part!r}")
        k, g = part["kernel_sum_s"] / part["n"], max(part["gap_sum_s"] / (part["n"] - 1), 0.0)
        starts = [i * (k + g) for i in range(n_kernels)]
        kernels[name] = [(s, s + k) for s in starts]
        gaps[name] = [(s + k, s + k + g) for s in starts[:-1]]
    us = 1e6
    fig = go.Figure()
    for label, spans, color, what in (("kernel", kernels, series_color(0), "kernel"), ("gap between kernels", gaps, series_color(3), "gap")):
        ys = [name for name, _ in rows for _ in spans[name]]
        flat = [sp for name, _ in rows for sp in spans[name]]
        fig.add_trace(go.Bar(x=[(b - a) * us for a, b in flat], base=[a * us for a, _ in flat], y=ys, orientation="h", name=label,
                             marker=dict(color=color, line=dict(width=0)),
                             hovertemplate="%{y}: " + what + " from %{base:.2f} µs, %{x:.3g} µs long (the mean)<extra></extra>"))
    end = max(sp[1] for v in kernels.values() for sp in v) * us
    set_layout(fig, barmode="overlay", bargap=0.35,
               xaxis=dict(title="time from the first kernel's start [µs]", range=[0, end * 1.02]),
               yaxis=dict(categoryorder="array", categoryarray=["graph", "eager"], title=None))
    return style_figure(fig, title=f"{n_kernels} consecutive kernels of the kernel-bound loop: eager and from a graph" if title is None else title,
                        readout=launch_timeline_readout(timeline) if readout is None else readout, height=300)


REDUCTION_READOUT = "bars: measured; ticks: the model (calibrated on the copy and atomic rates); dotted line: the copy's rate"


def reduction_plot(res, *, title: str = "Reduction: bytes read per second", readout: str | None = REDUCTION_READOUT) -> go.Figure:
    """Bandwidth of each reduction variant (``simt_warp.Reductions``) against the bytes a copy
    moves per second (read + written): measured bars, the model's bandwidth as a short tick on each
    bar, the copy's rate as a dotted line labelled at its left end (``REDUCTION_READOUT`` says so)."""
    from ..experiments import simt_warp as sw

    preds = sw.reduction_predictions(res)
    names, meas, model_bw = [], [], []
    for v in sw.REDUCE_VARIANTS:
        r = res.variants.get(v)
        if isinstance(r, sw.ReductionRun):
            names.append(v.replace("_", " "))
            meas.append(r.bytes_per_s / 1e9)
            p = preds[v].predicted_time_s
            model_bw.append(r.bytes_read / p / 1e9 if p else None)
    fig = go.Figure([go.Bar(x=names, y=meas, name="measured", marker=dict(color=series_color(0))),
                     go.Scatter(x=names, y=model_bw, mode="markers", name="model (calibrated)",
                                marker=dict(symbol="line-ew-open", size=28, line=dict(width=3, color=series_color(3))))])
    if isinstance(res.copy, sw.CopyRate):
        copy_gb_s = res.copy.bytes_per_s / 1e9
        # a shape's y is a data value, an annotation's y on a log axis is its log10 (plotly's rule): the
        # raw value put the label at 10^4123, off the plot, and plotly.js dropped it
        fig.add_hline(y=copy_gb_s, line=dict(dash="dot", color="#888888"))
        fig.add_annotation(text="copy: bytes moved per s", x=0, xref="x domain", xanchor="left", y=float(np.log10(copy_gb_s)),
                           yref="y", yanchor="bottom", showarrow=False)
    set_layout(fig, yaxis=dict(title="GB/s read", type="log"), xaxis=dict(title=None))
    return style_figure(fig, title=title, readout=readout, height=420)


def contention_plot(res, *, title: str = "Same-address atomics: spread them", readout: str | None = None) -> go.Figure:
    """Atomics per second against the number of addresses they are spread over (``simt_warp``
    contention sweep): measured markers, and the model fitted to the sweep's two ends (a fit: both
    constants come from the sweep it is drawn against), drawn on a dense grid of address counts so
    that it bends where the model does."""
    from ..experiments import simt_warp as sw

    pairs = sw.contention_predictions(res)
    fig = go.Figure()
    if pairs:
        xs = [p.addresses for p, _ in pairs]
        # The model on a dense log grid (256 points), not only at the measured counts: its
        # bend (where addresses x the one-address rate reaches the cap) falls between them. Its two
        # constants as contention_predictions fits them: its value at one address, the highest rate.
        one = next((pred for p, pred in pairs if p.addresses == 1), None)
        cap = max(p.atomics_per_s for p, _ in pairs)
        dense = np.round(np.geomspace(1, max(xs), 256)).astype(int)
        grid = sorted({int(k) for k in dense} | set(xs)) if one else []  # through every measured count too
        fig.add_trace(go.Scatter(x=grid, y=[m.atomic_throughput_per_s(k, one, cap) for k in grid], mode="lines",
                                 name="model (fit to the ends)", line=dict(color=series_color(3), dash="dash"),
                                 hovertemplate="%{x:,} addresses: %{y:.3s} per s<extra>model</extra>"))
        fig.add_trace(go.Scatter(x=xs, y=[p.atomics_per_s for p, _ in pairs], mode="markers", name="measured",
                                 marker=dict(color=series_color(0), size=10)))
    yaxis = dict(title="atomics per second", type="log")
    if pairs:
        # A tick at every decade the data reaches, the axis up to the next one (plotly's own ticks showed only
        # 1G and 10G under a 62.4G cap), and the cap labelled at its level (an annotation's y on a log axis is
        # its log10).
        ys = [p.atomics_per_s for p, _ in pairs]
        lo, hi = int(np.log10(min(ys)) // 1), -int(-np.log10(max(ys)) // 1)  # the decades below and above the data
        hi = hi + 1 if hi - np.log10(max(ys)) < 0.02 else hi  # a measurement on a decade keeps room above it
        yaxis.update(tickvals=[10.0 ** k for k in range(lo, hi + 1)], range=[float(np.log10(min(ys)) - 0.15), float(hi)])
        fig.add_annotation(text=f"cap {cap / 1e9:.3g}G/s", x=0,  # short: it ends before the model reaches the cap on a phone
                           xref="x domain", xanchor="left",
                           y=float(np.log10(cap)), yref="y", yanchor="bottom", showarrow=False)
    set_layout(fig, xaxis=dict(title="distinct addresses", type="log"),  # short: a longer title was clipped on a phone
                      yaxis=yaxis)
    return style_figure(fig, title=title, readout=readout, height=400)


def reduction_compare_rows(ref, here=None) -> list:
    """The reduction experiment as table rows: the copy's and torch's ``sum`` rates, the atomic
    rates, and per kernel the model's time (calibrated on the copy and the atomic rates) against
    the recorded one. The reader's device (``here``) appears as rates, with its buffer size: a CPU
    run sums a smaller buffer, with torch only."""
    from ..experiments import simt_warp as sw

    def t(v):
        return fmt_time(v) if v else "n/a"

    def rate(res, name, attr="bytes_per_s"):
        r = getattr(res, name, None) if res is not None else None
        return fmt_bytes_per_s(getattr(r, attr)) if isinstance(r, sw.CopyRate) else None

    def sized(res, text):
        return None if text is None else f"{text} ({fmt_bytes(res.nbytes)})"

    pr = sw.reduction_predictions(ref) if ref else {}
    rows = [dict(quantity="device copy: bytes moved (read + written) per second", reference=rate(ref, "copy") or "not recorded",
                 here=sized(here, rate(here, "copy"))),
            dict(quantity="torch sum: bytes read per second", reference=rate(ref, "torch_sum") or "not recorded",
                 here=sized(here, rate(here, "torch_sum")))]
    for r in (ref.atomic_rate, ref.atomic_rate_one_lane) if ref else ():
        if isinstance(r, sw.AtomicRate):
            rows.append(dict(quantity=f"atomics to one address per second, {r.pattern} adding", reference=f"{r.atomics_per_s / 1e6:,.0f} million"))
    for v in sw.REDUCE_VARIANTS:
        r = ref.variants.get(v) if ref else None
        h = here.variants.get(v) if here else None
        if not isinstance(r, sw.ReductionRun):
            continue
        p = pr[v]
        rows.append(dict(quantity=f"{v.replace('_', ' ')}: {fmt_bytes(r.bytes_read)}, {r.atomics:,} atomics",
                         model=t(p.predicted_time_s), label="calibrated", reference=t(r.time_s),
                         ratio=_ratio(r.time_s, p.predicted_time_s),
                         here=f"{t(h.time_s)} ({fmt_bytes(h.bytes_read)})" if isinstance(h, sw.ReductionRun) else None))
    if ref is None and here is None:
        return []
    return rows


def barrier_plot(res, *, title: str = "What one __syncthreads costs", readout: str | None = None) -> go.Figure:
    """Cycles per barrier against threads per block (``simt_warp.Barriers``): one block per SM,
    and the SM full of blocks. A cost below one cycle (the difference of two timings, so it can
    come out negative) is drawn at 0 with a hollow marker and called noise in the hover."""
    fig = go.Figure()
    for i, (label, full) in enumerate((("1 block per SM", False), ("SM full of blocks", True))):
        pts = [p for p in res.points if p.barrier_cycles is not None and (p.blocks_per_sm > 1) == full]
        # a difference below one cycle is within the timing noise (it can even come out negative): drawn at 0, hollow
        fig.add_trace(go.Scatter(
            x=[p.threads_per_block for p in pts], y=[max(p.barrier_cycles, 0.0) for p in pts], mode="lines+markers", name=label,
            marker=dict(color=series_color(i), size=9, symbol=["circle-open" if p.barrier_cycles < 1 else "circle" for p in pts]),
            line=dict(color=series_color(i)),
            hovertext=[f"below one cycle: within the timing noise (measured {p.barrier_cycles:.2f})" if p.barrier_cycles < 1
                       else f"{p.barrier_cycles:.1f} cycles" for p in pts], hoverinfo="x+text+name"))
    set_layout(fig, xaxis=dict(title="threads per block", type="log", tickvals=[32, 64, 128, 256, 512, 1024]),
                      yaxis=dict(title="cycles per barrier", rangemode="tozero"))
    return style_figure(fig, title=title, readout=readout, height=400)


def stall_plot(ncu: dict, *, top: int = 6, title: str = "Why warps wait: Nsight Compute",
               readout: str | None = "share of each kernel's stalled warps, by reason") -> go.Figure:
    """The recorded stall reasons (``widgets/data/h200/simt_ncu.json``): for each kernel, each
    reason's share of its warps stalled per issued instruction (kernels differ by orders of
    magnitude in the total, which the hover and the bar labels give); the ``top`` reasons over all
    kernels, the rest summed as "other"."""
    points = [p for p in ncu.get("points", []) if p.get("stalls_per_issued_instruction")]
    shares = []
    for p in points:
        s = p["stalls_per_issued_instruction"]
        tot = sum(s.values()) or 1.0
        shares.append({k: v / tot for k, v in s.items()})
    totals: dict = {}
    for sh in shares:
        for k, v in sh.items():
            totals[k] = totals.get(k, 0.0) + v
    reasons = [k for k, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:top]]
    kernels = [p["kernel"].replace("reduce_", "").replace("_", " ") for p in points]
    sums = [sum(p["stalls_per_issued_instruction"].values()) for p in points]
    fig = go.Figure()
    for i, r in enumerate(reasons + ["other"]):
        xs = [sum(v for k, v in sh.items() if k not in reasons) if r == "other" else sh.get(r, 0.0) for sh in shares]
        fig.add_trace(go.Bar(y=kernels, x=xs, name=r.replace("_", " "), orientation="h", customdata=sums,
                             marker=dict(color=series_color(i) if r != "other" else "#aaaaaa"),
                             hovertemplate="%{y}: %{x:.0%} of %{customdata:.3g} stalled warps per issued instruction<extra>"
                                           + r.replace("_", " ") + "</extra>"))
    set_layout(fig, barmode="stack", xaxis=dict(title="share of stalled warps", tickformat=".0%", range=[0, 1]),
                      yaxis=dict(autorange="reversed"), legend=dict(orientation="h", y=-0.3))
    return style_figure(fig, title=title, readout=readout, height=300 + 40 * len(points))


def check_pipeline_time(fn, trials: int = 200, seed: int = 0) -> bool:
    """Exercise check: ``fn(copy_in_s, kernel_s, copy_out_s, chunks)`` must give the overlapped
    time of the three-stage pipeline (``m.pipeline_time_s``) on ``trials`` random cases."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        a, b, c = (float(x) for x in rng.uniform(1e-4, 1e-2, 3))
        k = int(rng.integers(1, 33))
        want = m.pipeline_time_s([a, b, c], k)
        try:
            got = float(fn(a, b, c, k))
        except Exception as exc:  # noqa: BLE001 - the reader's code
            return _verdict(False, f"your function raised {type(exc).__name__}: {exc} for ({a:.4g}, {b:.4g}, {c:.4g}, {k})")
        if not np.isclose(got, want, rtol=1e-6):
            return _verdict(False, f"for copies {fmt_time(a)} / {fmt_time(c)}, kernel {fmt_time(b)}, {k} chunks: "
                                   f"expected {fmt_time(want)}, got {fmt_time(got)}")
    return _verdict(True, f"{trials} random pipelines agree with the model")


def check_atomics(answer, n_elems: int = 1 << 26, threads_per_block: int = 256) -> bool:
    """Exercise check: same-address atomics of a one-atomic-per-block reduction of ``n_elems``."""
    want = m.reduction_atomics(n_elems, "block", threads_per_block)
    ok = int(answer) == want if isinstance(answer, (int, np.integer)) else False
    return _verdict(ok, f"{want:,} atomics (one per {threads_per_block}-thread block)" if ok
                    else f"not {answer!r}: count the blocks of a launch with one element per thread")


def _whole(answer):
    """A reader's integer answer (int, numpy int or a float with no fraction), else None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, np.integer)):
        return int(answer)
    if isinstance(answer, (float, np.floating)) and float(answer).is_integer():
        return int(answer)
    return None


def check_stencil_blocks(answer, threads_per_block: int = 192, regs_per_thread: int = 40,
                         smem_per_block_bytes: int = 20 * KiB, arch: str = "sm_90") -> bool:
    """Exercise check: resident blocks per SM of the stencil kernel (``m.occupancy``)."""
    o = m.occupancy(threads_per_block, regs_per_thread, smem_per_block_bytes, arch)
    a = _whole(answer)
    if a is None:
        return _verdict(False, f"the answer must be a whole number of blocks, got {answer!r}")
    if a == o.blocks_per_sm:
        return _verdict(True, f"{a} blocks = {o.warps_per_sm} of {o.max_warps_per_sm} warps ({o.occupancy:.0%}), "
                              f"limited by {o.limiter}")
    if a in (o.blocks_limit_warps, o.blocks_limit_shared_memory, o.blocks_limit_blocks):
        return _verdict(False, f"{a} blocks is what one resource allows; the SM holds the fewest that every resource "
                               "allows: count the others (in their allocation units)")
    return _verdict(False, f"not {a}: count the blocks that the warps, the registers (per warp, in 256-register units), "
                           "the shared memory (plus the 1 KiB reserved per block) and the block slots each allow")


def check_branch_cycles(answer, p_taken: float = 1 / 50, cost_taken: float = 2000,
                        cost_not_taken: float = 200) -> bool:
    """Exercise check: mean cycles of a warp with a rare divergent branch (``m.random_branch_time``)."""
    want = m.random_branch_time(p_taken, cost_taken, cost_not_taken)
    a = _whole(answer) if _whole(answer) is not None else (float(answer) if isinstance(answer, (float, np.floating)) else None)
    if a is None or not np.isfinite(a):
        return _verdict(False, f"the answer must be a number of cycles, got {answer!r}")
    if abs(a / want - 1) <= 0.01:
        return _verdict(True, f"{want:,.0f} cycles per warp on average: the long path runs in "
                              f"{1 - (1 - p_taken) ** m.WARP_SIZE:.0%} of warps")
    sorted_avg = (1 - p_taken) * cost_not_taken + p_taken * cost_taken
    if abs(a / sorted_avg - 1) <= 0.01:
        return _verdict(False, f"{a:,.0f} is the per-thread average: a warp pays for the long path when ANY of its "
                               f"{m.WARP_SIZE} lanes takes it")
    return _verdict(False, f"not {a:,.0f}: find the chance that at least one of {m.WARP_SIZE} lanes takes the branch, "
                           "then average the warp's time over both cases")


def check_smem_for_blocks(answer, blocks_per_sm: int = 4, arch: str = "sm_90") -> bool:
    """Exercise check: the most shared memory per block [B] that lets ``blocks_per_sm`` blocks share
    an SM (``m.smem_per_block_for``)."""
    want = m.smem_per_block_for(blocks_per_sm, arch)
    a = _whole(answer)
    if a is None:
        return _verdict(False, f"the answer must be a whole number of bytes, got {answer!r}")
    if a == want:
        return _verdict(True, f"{fmt_bytes(want)} ({want:,} B) per block")
    if a * 1024 == want or a == want // 1024:
        return _verdict(False, f"{a} looks like KiB: give bytes")
    naive = m.arch_limits(arch).smem_per_sm_bytes // blocks_per_sm
    if a == naive:
        return _verdict(False, f"{a:,} B ignores what the driver reserves for each block, and the allocation unit")
    return _verdict(False, f"not {a:,} B: a block is charged its request plus the driver's reserve, rounded up to the "
                           "allocation unit; the SM's shared memory must hold that many times over")
