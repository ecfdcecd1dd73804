"""Calculators for the collectives chapter: collective time (ring and tree), algbw/busbw
converter, the ring all-reduce step by step, the data-parallel overlap estimator, the bandwidth
ladder; plots of measured sweeps against the alpha-beta model; exercise checks.

Each calculator has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``,
plotly frames precomputed by the same model) that works in the published page without a kernel.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .. import _check
from ..hardware import get_gpu, gpu_names
from ..models import collectives as cm
from ..units import GiB, MiB, fmt_bytes, fmt_bytes_per_s, fmt_time
from ._core import grid_figure, live_form, log_slider, percent, plural, set_layout, style_figure, table_html
from ._core import verdict as _verdict


def _mib_label(mib: float) -> str:
    """A size slider's point, given in MiB, as the reader reads it: "1 KiB", "1.41 KiB", "16 GiB"."""
    return fmt_bytes(mib * MiB)


COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
SIZES = np.logspace(3, 11, 161)  # 1 kB ... 100 GB, the x axis of the live time-vs-size plot
STATIC_SIZES = np.logspace(3, 11, 33)  # the same range, coarser, for the static page
H200_NVLINK = get_gpu("H200-SXM").interconnect_bytes_per_s
# The per-step latency of the calculators: NCCL's own tuning model for one NVLink step
# (cm.NCCL_NVLINK_STEP_LATENCY_S, from NVIDIA/nccl src/graph/tuning.cc); every calculator takes it
# as an input, and the chapter shows what a call from Python costs beside it.
ASSUMED_STEP_LATENCY_S = cm.NCCL_NVLINK_STEP_LATENCY_S
RANKS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _gbps(x: float) -> str:
    return fmt_bytes_per_s(x)


def _size(x: float) -> str:
    return fmt_bytes(x)


# --------------------------------------------------------------------------------------------
# 0. Who holds what
# --------------------------------------------------------------------------------------------
_TD = ' style="padding:4px 14px 4px 4px;vertical-align:middle"'
_TR = ' style="border-bottom:1px solid #ddd"'


def _piece_html(label: str) -> str:
    """``x3[1]`` -> x<sub>3</sub>[1]; ``sum[2]`` -> &Sigma;[2]."""
    if label == "-":
        return "&middot;"
    if label.startswith("sum"):
        return "&Sigma;x" + html.escape(label[3:])
    head, _, rest = label[1:].partition("[")
    return f"x<sub>{html.escape(head)}</sub>" + (f"[{html.escape(rest)}" if rest else "")


def collectives_table_html(n: int = 4) -> str:
    """HTML: for each collective, what every rank holds before and after (the model's
    ``collective_semantics``); x<sub>r</sub> is rank r's input, &Sigma;x the sum of all inputs."""
    def cell(pieces_per_rank):
        return "<br>".join(f"rank {r}: " + " ".join(_piece_html(p) for p in pieces) for r, pieces in enumerate(pieces_per_rank))

    rows = "".join(
        f"<tr{_TR}><td{_TD}><code>{op}</code></td><td{_TD}>{cell(cm.collective_semantics(op, n)[0])}</td>"
        f"<td{_TD}>{cell(cm.collective_semantics(op, n)[1])}</td></tr>"
        for op in cm.OPS
    )
    head = f"<tr{_TR}><th{_TD}>collective</th><th{_TD}>before</th><th{_TD}>after</th></tr>"
    return f'<table class="calc-result" style="border-collapse:collapse">{head}{rows}</table>'


# --------------------------------------------------------------------------------------------
# 1. Collective time: ring against tree
# --------------------------------------------------------------------------------------------
def collective_time_summary(op: str, n: int, link_bytes_per_s: float, latency_s: float, size_bytes: float = GiB) -> str:
    """One line: the ring and tree times of ``size_bytes`` and where they cross."""
    ring = cm.collective_time_s(op, size_bytes, n, link_bytes_per_s, latency_s, "ring")
    tree = cm.collective_time_s(op, size_bytes, n, link_bytes_per_s, latency_s, "tree")
    x = cm.ring_tree_crossover_bytes(op, n, link_bytes_per_s, latency_s)
    if x == 0:
        cross = "the ring is never slower"
    elif np.isinf(x):
        cross = "the tree is never slower"
    else:
        cross = f"tree faster below {_size(x)}"
    return f"{_size(size_bytes)}: ring {fmt_time(ring)}, tree {fmt_time(tree)}; {cross}"


def _time_traces(op: str, n: int, link_bytes_per_s: float, latency_s: float, mark_bytes=None, sizes=SIZES) -> list:
    ring = np.array([cm.collective_time_s(op, s, n, link_bytes_per_s, latency_s, "ring") for s in sizes])
    tree = np.array([cm.collective_time_s(op, s, n, link_bytes_per_s, latency_s, "tree") for s in sizes])
    x = cm.ring_tree_crossover_bytes(op, n, link_bytes_per_s, latency_s)
    if 0 < x < np.inf:
        tx = cm.collective_time_s(op, x, n, link_bytes_per_s, latency_s, "ring")
        cross = go.Scatter(x=[x], y=[tx], mode="markers", marker=dict(size=12, color=COLORS[2], symbol="x"), name="crossover",
                           hovertemplate="crossover: %{x:.3s}B, %{y:.3s}s<extra></extra>")  # fmt: skip
    else:
        cross = go.Scatter(x=[None], y=[None], mode="markers", name="crossover", marker=dict(color=COLORS[2], symbol="x"))
    traces = [
        go.Scatter(x=sizes, y=ring, mode="lines", name="ring", line=dict(color=COLORS[0])),
        go.Scatter(x=sizes, y=tree, mode="lines", name="tree (MPICH short-message)", line=dict(color=COLORS[1], dash="dash")),
        cross,
    ]
    if mark_bytes is not None:
        ys = [cm.collective_time_s(op, mark_bytes, n, link_bytes_per_s, latency_s, a) for a in cm.ALGORITHMS]
        traces.append(go.Scatter(x=[mark_bytes] * 2, y=ys, mode="markers", name="your message", marker=dict(size=10, color=COLORS[3])))
    return traces


def _time_layout() -> dict:
    return dict(
        xaxis=dict(type="log", title="message size S [B]", exponentformat="SI"),
        yaxis=dict(type="log", title="time [s]", exponentformat="SI"),
    )


def collective_time_figure(
    link_bytes_per_s: float = H200_NVLINK,
    latency_s: float = ASSUMED_STEP_LATENCY_S,
    ranks=RANKS,
    ops=cm.OPS,
) -> go.Figure:
    """Static: time against message size for the ring and the tree. The dropdown picks the
    collective, the slider the number of ranks; the readout gives a 1 GiB collective and the
    crossover."""
    ranks = list(ranks)
    return grid_figure(
        slider=("ranks", ranks, str),
        choices=("collective", list(ops), str),
        frame=lambda op, n: (
            _time_traces(op, n, link_bytes_per_s, latency_s, sizes=STATIC_SIZES),
            f"{op}, {plural(n, 'rank')}",
            collective_time_summary(op, n, link_bytes_per_s, latency_s),
        ),
        layout=_time_layout(),
        active=(0, ranks.index(8) if 8 in ranks else 0),
        height=500,
    )


def collective_time_calculator():
    """Live: operation, ranks, size, link bandwidth, latency, algorithm -> time, algbw, busbw,
    and the ring/tree crossover."""
    import ipywidgets as w

    controls = {
        "op": w.Dropdown(options=cm.OPS, value="all_reduce", description="operation"),
        "n": w.IntText(value=8, description="ranks n"),
        "size_mib": log_slider(64, 2**-10, 2**14, 0.5, label=_mib_label, description="S"),
        "link_gb_per_s": w.FloatText(value=H200_NVLINK / 1e9, description="link [GB/s]"),
        "latency_us": w.FloatText(value=ASSUMED_STEP_LATENCY_S * 1e6, description="alpha [µs]"),
        "algorithm": w.Dropdown(options=cm.ALGORITHMS, value="ring", description="algorithm"),
    }

    def compute(op, n, size_mib, link_gb_per_s, latency_us, algorithm):
        size = size_mib * MiB
        link, lat = link_gb_per_s * 1e9, latency_us * 1e-6
        t = cm.collective_time_s(op, size, n, link, lat, algorithm)
        other = "tree" if algorithm == "ring" else "ring"
        return dict(op=op, n=n, size=size, link=link, lat=lat, algorithm=algorithm, t=t,
                    t_other=cm.collective_time_s(op, size, n, link, lat, other), other=other,
                    cross=cm.ring_tree_crossover_bytes(op, n, link, lat))  # fmt: skip

    def show(r):
        rows = [
            ("message size S", _size(r["size"])),
            (f"time ({r['algorithm']})", fmt_time(r["t"])),
            (f"time ({r['other']})", fmt_time(r["t_other"])),
            ("algbw = S / t", _gbps(cm.algbw_bytes_per_s(r["size"], r["t"]))),
            ("busbw (nccl-tests)", _gbps(cm.busbw_bytes_per_s(r["op"], r["n"], r["size"], r["t"]))),
            ("tree faster below", "never" if r["cross"] == 0 else ("always" if np.isinf(r["cross"]) else _size(r["cross"]))),
        ]
        fig = go.Figure(_time_traces(r["op"], r["n"], r["link"], r["lat"], mark_bytes=r["size"]))
        set_layout(fig, **_time_layout())
        readout = collective_time_summary(r["op"], r["n"], r["link"], r["lat"], r["size"])
        style_figure(fig, title=f"{r['op']}, {plural(r['n'], 'rank')}", readout=readout, height=480)
        return table_html(rows), fig

    return live_form(compute, controls, show, title="Collective time: ring or tree",
                     names={"size_bytes": "message size",  # S, or the ring/tree crossover the form computes
                            "link_bytes_per_s": ("link_gb_per_s", 1e9), "latency_s": ("latency_us", 1e-6)})


# --------------------------------------------------------------------------------------------
# 2. algbw <-> busbw
# --------------------------------------------------------------------------------------------
def busbw_summary(n: int, busbw: float, size_bytes: float) -> str:
    t = cm.time_from_busbw_s("all_reduce", n, size_bytes, busbw)
    return (
        f"all_reduce of {_size(size_bytes)}: {fmt_time(t)}, algbw {_gbps(cm.algbw_bytes_per_s(size_bytes, t))} "
        f"(factor {cm.busbw_factor('all_reduce', n):.3g}); bar labels: time"
    )


def _busbw_traces(n: int, busbw: float, size_bytes: float) -> list:
    algbw = [cm.algbw_bytes_per_s(size_bytes, cm.time_from_busbw_s(op, n, size_bytes, busbw)) / 1e9 for op in cm.OPS]
    times = [cm.time_from_busbw_s(op, n, size_bytes, busbw) for op in cm.OPS]
    return [
        go.Bar(x=list(cm.OPS), y=[busbw / 1e9] * len(cm.OPS), name="busbw", marker_color=COLORS[0]),
        go.Bar(x=list(cm.OPS), y=algbw, name="algbw = S / t", marker_color=COLORS[1],
               text=[fmt_time(t) for t in times], textposition="outside",
               hovertemplate="%{x}: algbw %{y:.4g} GB/s, t = %{text}<extra></extra>"),
    ]  # fmt: skip


def _busbw_links() -> dict:
    a100 = get_gpu("A100-SXM-80GB").interconnect_bytes_per_s
    ib = cm.NETWORK_LINKS["InfiniBand NDR / 400 GbE RoCE"][0]
    return {f"H200 NVLink, {_gbps(H200_NVLINK)}": H200_NVLINK, f"A100 NVLink, {_gbps(a100)}": a100,
            f"8 x IB NDR per node, {_gbps(8 * ib)}": 8 * ib, f"1 x IB NDR, {_gbps(ib)}": ib}  # fmt: skip


def busbw_figure(links=None, size_bytes: float = GiB, ranks=RANKS[:7]) -> go.Figure:
    """Static: one bus bandwidth seen as algorithm bandwidth by each collective. The dropdown
    picks the bus bandwidth (a link), the slider the number of ranks; bar labels give the time of
    a ``size_bytes`` collective."""
    links = dict(links or _busbw_links())
    names, ranks = list(links), list(ranks)
    top = max(links.values()) / 1e9 * 2.6
    return grid_figure(
        slider=("ranks", ranks, str),
        choices=("busbw", names, str),
        frame=lambda name, n: (
            _busbw_traces(n, links[name], size_bytes), f"busbw {_gbps(links[name])}, {plural(n, 'rank')}", busbw_summary(n, links[name], size_bytes)
        ),
        layout=dict(barmode="group", yaxis=dict(title="GB/s", range=[0, top])),
        active=(0, ranks.index(8) if 8 in ranks else 0),
        height=480,
    )


def busbw_calculator():
    """Live: a measured time -> algbw and busbw; and a bus bandwidth -> the time."""
    import ipywidgets as w

    controls = {
        "op": w.Dropdown(options=cm.OPS, value="all_reduce", description="operation"),
        "n": w.IntText(value=8, description="ranks n"),
        "size_mib": w.FloatText(value=1024, description="S [MiB]"),
        "time_us": w.FloatText(value=6000, description="time [µs]"),
        "busbw_gb_per_s": w.FloatText(value=H200_NVLINK / 1e9, description="busbw [GB/s]"),
    }

    def compute(op, n, size_mib, time_us, busbw_gb_per_s):
        size = size_mib * MiB
        return dict(
            op=op, n=n, size=size, t=time_us * 1e-6,
            algbw=cm.algbw_bytes_per_s(size, time_us * 1e-6),
            busbw=cm.busbw_bytes_per_s(op, n, size, time_us * 1e-6),
            factor=cm.busbw_factor(op, n),
            t_back=cm.time_from_busbw_s(op, n, size, busbw_gb_per_s * 1e9), target=busbw_gb_per_s * 1e9,
        )  # fmt: skip

    def show(r):
        return table_html([
            ("S (nccl-tests: whole buffer)", _size(r["size"])),
            ("measured time", fmt_time(r["t"])),
            ("algbw = S / t", _gbps(r["algbw"])),
            (f"busbw = algbw x {r['factor']:.4g}", _gbps(r["busbw"])),
            (f"time at busbw {_gbps(r['target'])}", fmt_time(r["t_back"]) if np.isfinite(r["t_back"]) else "undefined for n = 1"),
        ])  # fmt: skip

    return live_form(compute, controls, show, title="algbw and busbw (nccl-tests)",
                     names={"size_bytes": ("size_mib", MiB), "time_s": ("time_us", 1e-6), "busbw": ("busbw_gb_per_s", 1e9)})


# --------------------------------------------------------------------------------------------
# 3. The ring all-reduce, step by step
# --------------------------------------------------------------------------------------------
def ring_step_summary(n: int, step: int) -> str:
    if step == 0:
        return f"start: every rank holds its own {plural(n, 'chunk')} ({plural(2 * (n - 1), 'step')} to go)"
    t = cm.ring_allreduce_schedule(n)[step - 1]
    phase = t[0].phase.replace("_", "-")
    verb = "adds it to its copy" if t[0].phase == "reduce_scatter" else "overwrites its copy"
    done = "; done: every rank holds the whole sum" if step == 2 * (n - 1) else ""
    return f"step {step} of {2 * (n - 1)} ({phase}): rank r sends chunk (r - {step - 1}) mod {n} to rank r + 1, which {verb}{done}"


def _ring_traces(n: int, step: int) -> list:
    have = cm.ring_allreduce_contributions(n, step)
    count = have.sum(axis=2)
    # rows listed from the last rank to rank 0, so rank 0 is drawn on top: plotly.js 3 forgets an
    # axis' autorange "reversed" once the static figure's dropdown restyles it
    rows = range(n - 1, -1, -1)
    ranks = [["+".join(str(s) for s in range(n) if have[r, c, s]) for c in range(n)] for r in rows]
    if n <= 5:  # a complete chunk says "all": "0+1+2+3+4" overflows a cell on a 360-px phone
        text = [["all" if count[r, c] == n else ranks[i][c] for c in range(n)] for i, r in enumerate(rows)]
    else:
        text = [[f"{count[r, c]}/{n}" for c in range(n)] for r in rows]
    heat = go.Heatmap(
        z=count[::-1], x=[f"chunk {c}" for c in range(n)], y=[f"rank {r}" for r in rows], text=text, texttemplate="%{text}",
        customdata=ranks, zmin=1, zmax=n, colorscale="Blues", showscale=False, showlegend=False,
        hovertemplate="%{y}, %{x}: holds the data of ranks %{customdata}<extra></extra>",
    )  # fmt: skip
    if step == 0:
        moved = go.Scatter(x=[None], y=[None], mode="markers", name="received this step", showlegend=False)
    else:
        tr = cm.ring_allreduce_schedule(n)[step - 1]
        moved = go.Scatter(
            x=[f"chunk {t.chunk}" for t in tr], y=[f"rank {t.dst}" for t in tr], mode="markers", name="received this step", showlegend=False,
            marker=dict(symbol="circle-open", size=34, color=COLORS[3], line=dict(width=3)),
            hovertext=[f"from rank {t.src}" for t in tr], hovertemplate="%{y} received %{x} %{hovertext}<extra></extra>",
        )  # fmt: skip
    return [heat, moved]


def _ring_layout(n: int | None = None) -> dict:
    # chunk labels below the grid: above it they sat under the static figure's dropdown
    return dict(xaxis=dict(side="bottom"))


def ring_allreduce_figure(n: int = 4, ranks=(2, 3, 4, 5)) -> go.Figure:
    """Static: the ring all-reduce step by step. The dropdown picks the number of ranks, the
    slider the step: each rank count has its own slider with exactly the ``2(n-1) + 1`` positions
    of its ring (start, ``n-1`` reduce-scatter steps, ``n-1`` all-gather steps). Each cell lists
    the ranks whose data that rank's copy of that chunk holds ("all" once complete); circles mark
    what was received in the step."""
    ranks = list(ranks)
    k = int(n)
    if k not in ranks:
        raise ValueError(f"n must be one of {ranks}, got {n!r}")

    def frame(m, s):
        return _ring_traces(m, s), f"ring all-reduce, {plural(m, 'rank')}", ring_step_summary(m, s)

    return grid_figure(
        slider=("step", lambda m: list(range(2 * (m - 1) + 1)), str),  # each ring its own steps, no others
        choices=("ranks", ranks, lambda m: plural(m, "rank")),
        frame=frame,
        layout=_ring_layout(),
        active=(ranks.index(k), 0),
        height=520,
    )


def ring_allreduce_calculator():
    """Live: ranks and step -> who holds what, and the transfers of that step."""
    import ipywidgets as w

    controls = {"n": w.IntSlider(value=4, min=2, max=12, description="ranks n"), "step": w.IntSlider(value=1, min=0, max=6, description="step")}

    def follow_ranks(change):  # a ring of n ranks has 2(n-1) steps: the step slider offers those only
        controls["step"].max = 2 * (change["new"] - 1)  # ipywidgets lowers the value with the max

    controls["n"].observe(follow_ranks, names="value")  # before live_form's own observer: runs first

    def compute(n, step):
        cm.ring_allreduce_contributions(n, step)  # validates step against 2(n-1)
        return n, step

    def show(r):
        n, step = r
        fig = go.Figure(_ring_traces(n, step))
        set_layout(fig, **_ring_layout(n))
        style_figure(fig, title=f"ring all-reduce, {plural(n, 'rank')}", readout=ring_step_summary(n, step), height=200 + 60 * n)
        sends = [] if step == 0 else cm.ring_allreduce_schedule(n)[step - 1]
        rows = [(f"rank {t.src} -> rank {t.dst}", f"chunk {t.chunk} ({t.phase})") for t in sends]
        return (table_html(rows) if rows else "<p>start: nothing sent yet</p>"), fig

    return live_form(compute, controls, show, title="Ring all-reduce, step by step")


# --------------------------------------------------------------------------------------------
# 4. Data parallelism: bucketed all-reduce behind the backward pass
# --------------------------------------------------------------------------------------------
BUCKETS_MIB = (1, 4, 8, 16, 25, 32, 64, 128, 256, 1024, 4096)


def dp_summary(p: cm.DataParallelStep) -> str:
    proto = f" (ring {p.protocol})" if p.protocol else ""
    return (
        f"{plural(p.n_buckets, 'all-reduce')}{proto}, {fmt_time(p.total_comm_s)} of communication; "
        f"exposed {fmt_time(p.exposed_comm_s)} ({percent(p.hidden_fraction)} hidden)"
    )


def _dp_traces(grad_bytes, bucket_bytes, backward_s, n, link, latency, **lat) -> list:
    tl = cm.dp_timeline(grad_bytes, bucket_bytes, backward_s, n, link, latency, **lat)
    xs = [0.0] + [e * 1e3 for _, _, e, _ in tl]
    ys = [0.0] + list(np.cumsum([b for *_, b in tl]) / GiB)  # GiB, as the titles and tables say
    if len(xs) > 201:  # thousands of small buckets: draw 200 of the steps (the page stays light), ends kept
        keep = np.unique(np.linspace(0, len(xs) - 1, 201).round().astype(int))
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
    return [
        go.Scatter(x=[0, backward_s * 1e3], y=[0, grad_bytes / GiB], mode="lines", name="gradients ready (backward)", line=dict(color=COLORS[0])),
        go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv", name="gradients all-reduced", line=dict(color=COLORS[1])),
        go.Scatter(x=[backward_s * 1e3, tl[-1][2] * 1e3], y=[grad_bytes / GiB] * 2, mode="lines+markers", name="exposed",
                   line=dict(color=COLORS[3], width=5)),
    ]  # fmt: skip


def _dp_layout(grad_bytes, x_max_s) -> dict:
    """Axes of the data-parallel timeline; ``x_max_s`` None: the time axis fits each state (from 0)."""
    return dict(
        xaxis=dict(title="time from the start of backward [ms]", rangemode="tozero") if x_max_s is None
        else dict(title="time from the start of backward [ms]", range=[0, x_max_s * 1e3 * 1.05]),
        yaxis=dict(title="gradient [GiB]", range=[0, grad_bytes / GiB * 1.08]),
    )


def dp_step_figure(
    grad_bytes: float,
    backward_s: float,
    n: int,
    link_bytes_per_s=None,
    latency_s=None,
    buckets_mib=BUCKETS_MIB,
    links=None,
    call_latency_s: float = 0.0,
    nodes: int = 1,
    inter_latency_s=None,
    protocol=None,
) -> go.Figure:
    """Static: gradients produced during backward and all-reduced bucket by bucket. The dropdown
    picks the bus bandwidth (``links``: label -> B/s; default ``link_bytes_per_s`` alone), the
    slider the bucket size; the red bar is the exposed communication. The latencies are those of
    ``cm.dp_step``: with ``protocol`` NCCL's for that protocol (``"auto"``: its model's choice per
    bucket), else the alpha-beta ones (``latency_s`` None: ``ASSUMED_STEP_LATENCY_S``)."""
    if latency_s is None:
        latency_s = ASSUMED_STEP_LATENCY_S if protocol is None else 0.0
    if links is None:
        if link_bytes_per_s is None:
            raise ValueError("link_bytes_per_s or links must be given")
        links = {f"busbw {_gbps(link_bytes_per_s)}": link_bytes_per_s}
    links = dict(links)
    sizes = [b * MiB for b in buckets_mib]
    lat = dict(call_latency_s=call_latency_s, nodes=nodes, inter_latency_s=inter_latency_s, protocol=protocol)
    # each state's time axis fits its own step (backward and the last all-reduce): one axis for all states,
    # or per link, made the common states a sliver at the left of the slowest (1 MiB buckets, per-call
    # latency) state's axis (reader checks r9 and r10); the readout gives the times in numbers

    def frame(name, b):
        p = cm.dp_step(grad_bytes, b, backward_s, n, links[name], latency_s, **lat)
        return _dp_traces(grad_bytes, b, backward_s, n, links[name], latency_s, **lat), f"bucket {_size(b)}, {name}", dp_summary(p)

    return grid_figure(
        slider=("bucket", sizes, _size),
        choices=("link", list(links), str),
        frame=frame,
        layout=_dp_layout(grad_bytes, None),
        active=(0, list(buckets_mib).index(25) if 25 in buckets_mib else 0),
        height=480,
    )


def dp_step_calculator():
    """Live: parameters, gradient dtype, bucket, backward time, ranks, nodes, bus bandwidth, NCCL protocol
    (its model's choice per bucket, or one forced) -> exposed communication of one data-parallel step."""
    import ipywidgets as w

    controls = {
        "params_billion": w.FloatText(value=1.3, description="params [1e9]"),
        "grad_elem_bytes": w.Dropdown(options=[("bf16 (2 B)", 2), ("fp32 (4 B)", 4)], value=2, description="gradients"),
        "bucket_mib": log_slider(25, 1, 2**13, 0.25, label=_mib_label, description="bucket"),
        "backward_ms": w.FloatText(value=15, description="backward [ms]"),
        "n": w.IntText(value=16, description="ranks n"),
        "nodes": w.IntText(value=2, description="nodes"),
        "link_gb_per_s": w.FloatText(value=round(8 * cm.NETWORK_LINKS["InfiniBand NDR / 400 GbE RoCE"][0] / 1e9, 6), description="busbw [GB/s]"),
        # NCCL's ring, latency and bandwidth from one protocol (tuning.cc): its model's choice per bucket, or one forced
        "protocol": w.Dropdown(options=[("NCCL's choice (ring)", "auto"), ("LL", "LL"), ("LL128", "LL128"), ("Simple", "Simple")],
                               value="auto", description="protocol"),
    }

    def compute(params_billion, grad_elem_bytes, bucket_mib, backward_ms, n, nodes, link_gb_per_s, protocol):
        g = _check.positive("params_billion", params_billion) * 1e9 * grad_elem_bytes
        args = (g, bucket_mib * MiB, backward_ms * 1e-3, n, link_gb_per_s * 1e9, 0.0)
        lat = dict(nodes=nodes, protocol=protocol)
        return (args, lat), cm.dp_step(*args, **lat)

    def show(r):
        (args, lat), p = r
        fig = go.Figure(_dp_traces(*args, **lat))
        set_layout(fig, **_dp_layout(args[0], max(p.finish_s, args[2])))
        capped = " (capped: the whole gradient)" if args[1] > p.bucket_bytes else ""  # reader review r6 #6
        style_figure(fig, title=f"bucket {_size(p.bucket_bytes)}{capped}", readout=dp_summary(p), height=460)
        return table_html([
            ("gradient bytes", _size(args[0])),
            ("buckets", str(p.n_buckets)),
            ("latency and bandwidth", f"NCCL's ring, {p.protocol} (tuning.cc)" if p.protocol else "one rank: none"),
            ("all-reduce per bucket", fmt_time(p.comm_per_bucket_s)),
            ("communication in all", fmt_time(p.total_comm_s)),
            ("exposed after backward", fmt_time(p.exposed_comm_s)),
            ("hidden behind backward", percent(p.hidden_fraction)),
        ]), fig  # fmt: skip

    return live_form(compute, controls, show, title="Data-parallel step: exposed communication",
                     names={"grad_bytes": "gradient bytes (params x gradient size)", "bucket_bytes": ("bucket_mib", MiB),
                            "backward_s": ("backward_ms", 1e-3), "link_bytes_per_s": ("link_gb_per_s", 1e9)})


# --------------------------------------------------------------------------------------------
# 5. The bandwidth ladder
# --------------------------------------------------------------------------------------------
# Every catalog GPU, the reference H200 first; one without NVLink shows "none" on that rung.
LADDER_GPUS = ("H200-SXM", *(g for g in gpu_names() if g != "H200-SXM"))


def bandwidth_ladder_table(gpu: str = "H200-SXM", n: int = 8, size_bytes: float = GiB) -> str:
    """HTML: each rung's per-direction bandwidth and the ring all-reduce time over it."""
    head = (f"<tr{_TR}><th{_TD}>link ({html.escape(get_gpu(gpu).name)})</th><th{_TD}>per GPU, per direction</th>"
            f"<th{_TD}>{_size(size_bytes)} ring all-reduce, n = {n}</th><th{_TD}>source</th></tr>")  # fmt: skip
    body = "".join(
        f"<tr{_TR}><td{_TD}>{html.escape(name)}</td><td{_TD}><b>{_gbps(bw)}</b></td>"
        f"<td{_TD}>{fmt_time(cm.ring_allreduce_time_s(size_bytes, n, bw, 0, 0))}</td>"
        f"<td{_TD}><small>{html.escape(src)}</small></td></tr>"
        for name, bw, src in cm.bandwidth_ladder(gpu)
    )
    return f'<table class="calc-result" style="border-collapse:collapse">{head}{body}</table>'


LADDER_SHORT = {"NVLink / NVSwitch": "NVLink", "PCIe (to the host)": "PCIe", "InfiniBand NDR / 400 GbE RoCE": "IB NDR / 400GbE",
                "InfiniBand HDR / 200 GbE RoCE": "IB HDR / 200GbE"}  # fmt: skip


def bandwidth_ladder_figure(n: int = 8, size_bytes=None, gpus=LADDER_GPUS, sizes=(MiB, 64 * MiB, GiB)) -> go.Figure:
    """Static: the bandwidth ladder of each catalog GPU. The dropdown picks the message size,
    the slider the GPU; bar labels give the ring all-reduce time of that message on ``n`` GPUs
    over that link alone."""
    names = list(LADDER_SHORT)
    sizes = [size_bytes] if size_bytes is not None else list(sizes)

    def frame(size, gpu):
        rows = {("NVLink / NVSwitch" if name == "Infinity Fabric" else name): bw for name, bw, _ in cm.bandwidth_ladder(gpu)}
        y = [rows.get(k, 0.0) / 1e9 for k in names]
        text = [fmt_time(cm.ring_allreduce_time_s(size, n, rows[k], 0, 0)) if k in rows else "none" for k in names]
        bar = go.Bar(x=[LADDER_SHORT[k] for k in names], y=y, text=text, textposition="outside", marker_color=COLORS[: len(names)],
                     customdata=names, hovertemplate="%{customdata}: %{y:.4g} GB/s per direction<extra></extra>")  # fmt: skip
        g = get_gpu(gpu)
        gpu_link = g.interconnect_bytes_per_s or 0.0
        readout = (f"GPU link {_gbps(gpu_link) if gpu_link else 'none'}, PCIe {_gbps(g.host_bytes_per_s)}; "
                   f"bar labels: ring all-reduce of {_size(size)}, {plural(n, 'GPU')}")
        return [bar], g.name, readout

    top = max(get_gpu(g).interconnect_bytes_per_s or 0 for g in gpus) / 1e9 * 3
    return grid_figure(
        slider=("GPU", list(gpus), str),
        choices=("message", sizes, _size),
        frame=frame,
        layout=dict(yaxis=dict(type="log", title="GB/s per direction (log)", range=[1, np.log10(top)])),
        active=(len(sizes) - 1, 0),
        height=460,
    )


SWEEP_VIEWS = ("bus bandwidth [GB/s]", "time per call [s]")


def sweep_figure(series: dict, ops=cm.OPS) -> go.Figure:
    """Measured collectives against size, with the alpha-beta line fitted to each series (a fit,
    not a prediction). The menu picks what is drawn (bus bandwidth or time per call), the slider
    the collective.

    ``series`` maps a label to ``{op: (sizes_bytes, times_s, n)}``; each label gets its points and
    the line ``latency + S / bandwidth`` fitted to them (``fit_alpha_beta``)."""
    labels = list(series)

    def frame(view, op):
        traces, notes = [], []
        busbw = view == SWEEP_VIEWS[0]
        for label, color in zip(labels, COLORS):
            sizes, times, n = series[label].get(op, ([], [], 2))
            sizes, times = np.asarray(sizes, dtype=float), np.asarray(times, dtype=float)
            grid, fit_y, meas_y = [], [], []
            if sizes.size:
                meas_y = [cm.busbw_bytes_per_s(op, n, s, t) / 1e9 for s, t in zip(sizes, times)] if busbw else list(times)
                try:
                    lat, bw = cm.fit_alpha_beta(sizes, times)
                except ValueError as exc:
                    notes.append(f"{label}: no fit ({exc})")
                else:
                    grid = np.logspace(np.log10(sizes.min()), np.log10(sizes.max()), 60)
                    fit_y = [cm.busbw_bytes_per_s(op, n, s, lat + s / bw) / 1e9 if busbw else lat + s / bw for s in grid]
                    notes.append(f"{label}: alpha {fmt_time(lat)}, busbw {_gbps(bw * cm.busbw_factor(op, n))}")
            traces.append(go.Scatter(x=sizes, y=meas_y, mode="markers", name=f"{label}: measured", marker=dict(color=color, size=8)))
            traces.append(go.Scatter(x=grid, y=fit_y, mode="lines", name=f"{label}: alpha-beta fit", line=dict(color=color, dash="dot")))
        return traces, f"{op}: {view.split(' [')[0]}", "fit: " + "; ".join(notes)

    return grid_figure(
        slider=("collective", list(ops), str),
        choices=("show", list(SWEEP_VIEWS), str),
        frame=frame,
        layout=dict(xaxis=dict(type="log", title="S [B] (nccl-tests convention)", exponentformat="SI"),
                    yaxis=dict(type="log", title="busbw [GB/s] or time [s] (menu)", exponentformat="SI")),
        height=500,
    )  # fmt: skip


def ring_vs_library_figure(series: dict) -> go.Figure:
    """busbw of the hand-written ring and of the library's all_reduce against size.
    ``series`` maps a label to ``(sizes_bytes, ring_busbw, library_busbw)`` [B, B/s, B/s]."""
    fig = go.Figure()
    for (label, (sizes, ring, lib)), color in zip(series.items(), COLORS):
        fig.add_trace(go.Scatter(x=sizes, y=np.asarray(lib) / 1e9, mode="lines+markers", name=f"{label}: all_reduce", line=dict(color=color)))
        fig.add_trace(go.Scatter(x=sizes, y=np.asarray(ring) / 1e9, mode="lines+markers", name=f"{label}: hand-written ring",
                                 line=dict(color=color, dash="dash")))
    set_layout(fig, xaxis=dict(type="log", title="S [B]", exponentformat="SI"), yaxis=dict(type="log", title="busbw [GB/s]"))
    return style_figure(fig, title="hand-written ring vs all_reduce", readout="busbw of each, against message size", height=460)


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_ring_send_chunk(fn, max_ranks: int = 9) -> bool:
    """Check a reader's ``fn(rank, step, n) -> chunk``: the chunk ``rank`` sends at ``step``
    (0-based, ``0 <= step < 2(n-1)``) of a ring all-reduce, against the model's schedule."""
    for n in range(2, max_ranks + 1):
        for step, transfers in enumerate(cm.ring_allreduce_schedule(n)):
            for t in transfers:
                try:
                    got = fn(t.src, step, n)
                except Exception as exc:  # a reader's bug: report it, don't crash the notebook
                    return _verdict(False, f"your function raised {exc!r} for rank={t.src}, step={step}, n={n}")
                if got != t.chunk:
                    return _verdict(False, f"n={n}, step={step} ({t.phase}), rank {t.src}: expected chunk {t.chunk}, got {got!r}")
    return _verdict(True, f"every rank sends the right chunk at every step, for n = 2 to {max_ranks}")


def check_best_bucket(answer_bytes, grad_bytes: float, backward_s: float, n: int, link_bytes_per_s: float, latency_s: float = 0.0,
                      candidates=None, call_latency_s: float = 0.0, nodes: int = 1, inter_latency_s=None, protocol=None) -> bool:
    """Is ``answer_bytes`` the bucket size among ``candidates`` with the least exposed
    communication (ties to the larger bucket), for these inputs (latencies as in ``cm.dp_step``)?"""
    lat = dict(call_latency_s=call_latency_s, nodes=nodes, inter_latency_s=inter_latency_s, protocol=protocol)
    best = cm.best_bucket_bytes(grad_bytes, backward_s, n, link_bytes_per_s, latency_s, candidates, **lat)
    try:
        mine = cm.dp_step(grad_bytes, answer_bytes, backward_s, n, link_bytes_per_s, latency_s, "ring", **lat)
    except ValueError as exc:
        return _verdict(False, str(exc))
    top = cm.dp_step(grad_bytes, best, backward_s, n, link_bytes_per_s, latency_s, "ring", **lat)
    if answer_bytes == best:
        return _verdict(True, f"{_size(best)} exposes {fmt_time(top.exposed_comm_s)}, the least of the candidates")
    return _verdict(False, f"{_size(answer_bytes)} exposes {fmt_time(mine.exposed_comm_s)}; a candidate exposes only {fmt_time(top.exposed_comm_s)}")


# --------------------------------------------------------------------------------------------
# 6. Communication against computation: a roofline per parallelism
# --------------------------------------------------------------------------------------------
ROOFLINE_TOKENS = (64, 2**17)  # x range of the static figure [tokens]; the lines are straight on log-log axes
ROOFLINE_WIDTHS = (4096, 8192, 16384)  # d_model; d_ff = 4 d_model (the page stays light: 78 frames)
ROOFLINE_RANKS = {"node": 8, "network": 64}  # data-parallel ranks in each scope
ROOFLINE_TP_RANKS = {"node": 8, "network": 16}  # tensor parallel: one node, or two whole nodes (every adapter in use)
ROOFLINE_SCOPE_LABEL = {"node": "in a node", "network": "across nodes"}
ROOFLINE_GPUS = LADDER_GPUS


def roofline_dtype(gpu: str) -> tuple:
    """(dtype, note): bf16, or the GPU's fp16 where it has no bf16 tensor cores (with the reason)."""
    g = get_gpu(gpu)
    why = g.why_no_peak("bf16")
    return ("bf16", "") if why is None else ("fp16", f"fp16 peak: {why}")


def _roofline_inputs(gpu: str, scope: str) -> tuple:
    dtype, note = roofline_dtype(gpu)
    return get_gpu(gpu).peak(dtype), cm.roofline_link_bytes_per_s(gpu, scope), note


def _send_link(gpu: str, scope: str) -> float:
    """A pipeline stage's send: the GPU's own link in a node; across nodes its one adapter (a node's other
    adapters carry the other GPUs' sends)."""
    return cm.roofline_link_bytes_per_s(gpu, scope, gpus_per_node=1)


def roofline_summary(gpu: str, scope: str, d_model: int, d_ff: int, tp_ranks=None, dp_ranks=None) -> str:
    c, w, _ = _roofline_inputs(gpu, scope)
    r = ROOFLINE_RANKS[scope] if dp_ranks is None else dp_ranks
    crit = cm.critical_tokens_per_gpu(c, w, r)
    y = cm.tensor_parallel_max_ranks(d_ff, c, w)
    pp = cm.layer_roofline("pipeline", 1024, d_model, d_ff, c, _send_link(gpu, scope), 1)
    return (f"data/FSDP ({r} GPUs) need ≥ {crit:,.0f} tokens per GPU; "
            f"tensor parallel hides its collectives up to {y:.1f} ranks; pipeline send / compute {pp.ratio:.3f}")


def _roofline_traces(gpu: str, scope: str, d_model: int, d_ff: int, tp_ranks=None, dp_ranks=None, layers_per_stage: int = 1,
                     tokens: float | None = None) -> list:
    """The static figure draws the scope's default ranks (ROOFLINE_RANKS, ROOFLINE_TP_RANKS) and one layer
    per stage; the live form draws its own ranks and layers and marks its ``tokens`` on each line."""
    c, w, _ = _roofline_inputs(gpu, scope)
    tp_ranks = ROOFLINE_TP_RANKS[scope] if tp_ranks is None else tp_ranks
    r = ROOFLINE_RANKS[scope] if dp_ranks is None else dp_ranks
    xs = list(ROOFLINE_TOKENS)
    pp_link = _send_link(gpu, scope)

    def ratio(parallelism, t, ranks, link=w):
        return cm.layer_roofline(parallelism, t, d_model, d_ff, c, link, ranks, layers_per_stage=layers_per_stage).ratio

    def ratios(parallelism, ranks, link=w):
        return [ratio(parallelism, t, ranks, link) for t in xs]

    crit = cm.critical_tokens_per_gpu(c, w, r)
    traces = [
        go.Scatter(x=xs, y=[1, 1], mode="lines", name="communication = computation", line=dict(color="#888", dash="dot")),
        go.Scatter(x=xs, y=ratios("data", r), mode="lines", name="data parallel and FSDP", line=dict(color=COLORS[0], width=3)),
        go.Scatter(x=xs, y=ratios("tensor", tp_ranks), mode="lines", name="tensor parallel", line=dict(color=COLORS[1], width=3)),
        go.Scatter(x=xs, y=ratios("pipeline", 1, pp_link), mode="lines",
                   name=f"pipeline, {plural(layers_per_stage, 'layer')} per stage", line=dict(color=COLORS[2], width=3)),
        go.Scatter(x=[crit], y=[1], mode="markers", name="critical batch", marker=dict(color=COLORS[3], size=11, symbol="x")),
    ]  # fmt: skip
    if tokens is not None:
        ys = [ratio("data", tokens, r), ratio("tensor", tokens, tp_ranks), ratio("pipeline", tokens, 1, pp_link)]
        traces.append(go.Scatter(x=[tokens] * 3, y=ys, mode="markers", name="your tokens per GPU",
                                 marker=dict(color=list(COLORS[:3]), size=10, symbol="circle-open", line=dict(width=2))))
    return traces


def _roofline_layout() -> dict:
    return dict(
        xaxis=dict(type="log", title="tokens per GPU (data, FSDP, pipeline) or per tensor-parallel group", exponentformat="SI"),
        yaxis=dict(type="log", title="communication / computation [-]", exponentformat="SI", range=[-3, 2]),
    )


def _roofline_brief(gpu: str, scope: str, d_model: int) -> str:
    """The static figure's readout for one scope (shorter than :func:`roofline_summary`)."""
    c, w, _ = _roofline_inputs(gpu, scope)
    r, tp = ROOFLINE_RANKS[scope], ROOFLINE_TP_RANKS[scope]
    crit = cm.critical_tokens_per_gpu(c, w, r)
    y = cm.tensor_parallel_max_ranks(4 * d_model, c, w)
    pp = cm.layer_roofline("pipeline", 1024, d_model, 4 * d_model, c, _send_link(gpu, scope), 1)
    return (f"{ROOFLINE_SCOPE_LABEL[scope]}: data ({r} GPUs) ≥ {crit:,.0f} tokens per GPU, tensor ({tp}) hides up to "
            f"{y:.1f} ranks, pipeline {pp.ratio:.2g}")


def parallelism_roofline_figure(gpus=ROOFLINE_GPUS, widths=ROOFLINE_WIDTHS, scopes=cm.ROOFLINE_SCOPES) -> go.Figure:
    """Static: communication over computation time of one MLP layer (``d_ff = 4 d_model``) against
    the tokens per GPU, for data parallelism/FSDP, tensor and pipeline parallelism, with the
    collectives in a node (NVLink, solid lines) and across nodes (eight 400 Gb/s adapters per node,
    dashed) drawn together. The dropdown picks the GPU, the slider the model width. Below 1 the
    communication can hide behind the matmuls.

    Both scopes share one plot (review R5-9): a dropdown over GPU x scope had 26 entries and made
    the figure 1,121 px tall (the kit grows a figure until its open menu fits), and the scopes'
    contrast is the point of the figure."""
    scopes = list(scopes)
    dash = {s: ("solid" if i == 0 else "dash") for i, s in enumerate(scopes)}
    SHORT = {"data parallel and FSDP": "data / FSDP", "tensor parallel": "tensor", "pipeline": "pipeline"}  # noqa: N806

    def frame(g, d):
        traces = []
        for i, s in enumerate(scopes):
            part = _roofline_traces(g, s, d, 4 * d)
            for t in part[1 if i else 0:]:  # the dotted "communication = computation" line once
                if t.name == "communication = computation":
                    t.showlegend = False  # the dotted line: the caption and the axis say what it is
                    traces.append(t)
                    continue
                t.name = SHORT.get(t.name.split(",")[0], t.name)  # short legend entries: three rows on a phone
                t.hovertemplate = f"{t.name}, {ROOFLINE_SCOPE_LABEL[s]}: %{{y:.3g}} at %{{x:,.0f}} tokens<extra></extra>"
                t.showlegend = i == 0 and t.mode == "lines"  # each parallelism's colour once; the keys below say the scope
                if t.mode == "lines":
                    t.line.dash = dash[s]
                else:
                    t.marker.symbol = "x" if i == 0 else "x-open"
                traces.append(t)
        for i, s in enumerate(scopes):  # legend keys: the line style and the critical batch's mark of each scope
            traces.append(go.Scatter(x=[None], y=[None], mode="lines+markers", hoverinfo="skip",
                                     name=ROOFLINE_SCOPE_LABEL[s],
                                     line=dict(color="#555555", dash=dash[s]),
                                     marker=dict(color=COLORS[3], size=11, symbol="x" if i == 0 else "x-open")))
        note = _roofline_inputs(g, scopes[0])[2]
        readout = "; ".join(_roofline_brief(g, s, d) for s in scopes) + (" (fp16 peak: no bf16 tensor cores)" if note else "")
        title = f"{g}, d_model {d:,}"
        return traces, title, readout

    layout = _roofline_layout()
    layout["xaxis"]["title"] = "tokens per GPU (tensor: per group)"  # the long title was clipped at both ends on a phone
    gpus = list(gpus)
    return grid_figure(
        slider=("d_model", list(widths), lambda d: f"{d:,}"),
        choices=("GPU", gpus, str),
        frame=frame,
        layout=layout,
        active=(gpus.index("H200-SXM") if "H200-SXM" in gpus else 0, list(widths).index(8192) if 8192 in widths else 0),
        height=640,
    )


def parallelism_roofline_rows(gpu: str, scope: str, tokens: float, d_model: int, d_ff: int, dp_ranks: int, tp_ranks: int,
                              layers_per_stage: int = 1, bytes_per_elem: float = 2.0) -> list:
    """Table rows: per parallelism, the pass, compute and communication time of one layer, ratio and verdict;
    then the bytes of a whole step of that layer under each ZeRO stage."""
    c, w, _ = _roofline_inputs(gpu, scope)
    rows = []
    for p, ranks in (("data", dp_ranks), ("fsdp", dp_ranks), ("tensor", tp_ranks), ("pipeline", 1)):
        link = _send_link(gpu, scope) if p == "pipeline" else w
        r = cm.layer_roofline(p, tokens, d_model, d_ff, c, link, ranks, bytes_per_elem, layers_per_stage)
        verdict = "communication-bound" if r.comm_bound else "compute-bound"
        rows.append((f"{p} ({r.phase})", f"compute {fmt_time(r.compute_s)}, communication {fmt_time(r.comm_s)}: "
                                         f"ratio {r.ratio:.3g}, {verdict}"))
    layer_params = 2 * d_model * d_ff
    for stage in (0, 3):
        t = cm.zero_step_comm_s(layer_params, dp_ranks, stage, w, bytes_per_elem)
        ops = " + ".join(op for op, _ in cm.ZERO_COLLECTIVES[stage])
        rows.append((f"ZeRO-{stage}, whole step of this layer", f"{ops}: {fmt_time(t)}"))
    return rows


def parallelism_roofline_calculator():
    """Live: GPU, scope, tokens, widths, ranks -> compute and communication per parallelism, and the
    crossovers."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=list(ROOFLINE_GPUS), value="H200-SXM", description="GPU"),
        "scope": w.Dropdown(options=[(ROOFLINE_SCOPE_LABEL[s], s) for s in cm.ROOFLINE_SCOPES], value="node", description="links"),
        "tokens": w.FloatLogSlider(value=4096, base=2, min=6, max=17, step=0.5, readout_format=",.0f", description="tokens/GPU"),
        "d_model": w.IntText(value=8192, description="d_model"),
        "d_ff": w.IntText(value=28672, description="d_ff"),
        "dp_ranks": w.IntText(value=8, description="DP ranks"),
        "tp_ranks": w.IntText(value=8, description="TP ranks"),
        "layers_per_stage": w.IntText(value=1, description="layers/stage"),
    }

    def compute(gpu, scope, tokens, d_model, d_ff, dp_ranks, tp_ranks, layers_per_stage):
        rows = parallelism_roofline_rows(gpu, scope, tokens, d_model, d_ff, dp_ranks, tp_ranks, layers_per_stage)
        return dict(gpu=gpu, scope=scope, d_model=d_model, d_ff=d_ff, tp=tp_ranks, dp=dp_ranks, layers=layers_per_stage,
                    tokens=tokens, rows=rows)

    def show(r):
        # the figure draws the form's own ranks, layers per stage and tokens (each control moves it)
        fig = go.Figure(_roofline_traces(r["gpu"], r["scope"], r["d_model"], r["d_ff"], r["tp"], r["dp"], r["layers"], r["tokens"]))
        set_layout(fig, **_roofline_layout())
        style_figure(fig, title=f"{r['gpu']} {ROOFLINE_SCOPE_LABEL[r['scope']]}",
                     readout=roofline_summary(r["gpu"], r["scope"], r["d_model"], r["d_ff"], r["tp"], r["dp"]), height=480)
        return table_html(r["rows"]), fig

    return live_form(compute, controls, show, title="Communication against computation, per parallelism",
                     names={"ranks": "dp_ranks"})


# --------------------------------------------------------------------------------------------
# 7. NCCL's protocols and its choice
# --------------------------------------------------------------------------------------------
H200_NCCL_NVLINK = get_gpu("H200-SXM").interconnect_links * cm.NCCL_NVLINK_BYTES_PER_S_PER_LINK["sm_90"]
PROTOCOL_SIZES = np.logspace(3, 10, 29)  # 1 kB ... 10 GB


def protocol_summary(op: str, n: int, link_bytes_per_s: float = H200_NCCL_NVLINK) -> str:
    switches = cm.nccl_model_switch_bytes(op, n, link_bytes_per_s)
    parts = [f"{a} {p}" + (f" from {_size(s)}" if s > 1 else "") for s, a, p in switches]
    return "NCCL's model picks " + ", ".join(parts)


def _protocol_traces(op: str, n: int, link_bytes_per_s: float = H200_NCCL_NVLINK, measured=None) -> list:
    sizes = list(PROTOCOL_SIZES)

    def busbw(t, s):
        return cm.busbw_bytes_per_s(op, n, s, t) / 1e9

    traces = []
    for i, p in enumerate(cm.PROTOCOLS):
        ys = [busbw(cm.nccl_model_time_s(op, s, n, link_bytes_per_s, "ring", p), s) for s in sizes]
        traces.append(go.Scatter(x=sizes, y=ys, mode="lines", name=f"ring, {p}", line=dict(color=COLORS[i], dash="dash")))
    if op == "all_reduce":
        tree = [busbw(min(t for a, _, t in cm.nccl_model_choice(op, s, n, link_bytes_per_s).times if a == "tree"), s) for s in sizes]
        traces.append(go.Scatter(x=sizes, y=tree, mode="lines", name="tree, best protocol", line=dict(color=COLORS[4], dash="dot")))
    else:
        traces.append(go.Scatter(x=[], y=[], mode="lines", name="tree (all-reduce only)", line=dict(color=COLORS[4], dash="dot")))
    best = [busbw(cm.nccl_model_choice(op, s, n, link_bytes_per_s).time_s, s) for s in sizes]
    traces.append(go.Scatter(x=sizes, y=best, mode="lines", name="NCCL's choice (model)", line=dict(color="#222", width=3)))
    mx, my = measured if measured else ([], [])
    traces.append(go.Scatter(x=list(mx), y=list(my), mode="markers", name="measured, 2 x H200 (reference record)",
                             marker=dict(color=COLORS[3], size=9)))
    return traces


def protocol_figure(measured=None, ops=cm.NCCL_MODEL_OPS, ranks=(2, 4, 8), link_bytes_per_s: float = H200_NCCL_NVLINK) -> go.Figure:
    """Static: bus bandwidth against message size by NCCL's own cost model, one line per ring protocol,
    the tree's best, and the choice; ``measured`` maps an op to ``(sizes, busbw GB/s)`` measured on 2
    ranks (drawn in the 2-rank frames). The dropdown picks the collective, the slider the ranks."""
    measured = dict(measured or {})
    ranks = list(ranks)

    def frame(op, n):
        m = measured.get(op) if n == 2 else None
        return (_protocol_traces(op, n, link_bytes_per_s, m), f"{op}, {plural(n, 'rank')}, NCCL's view of NVLink (NVLS off)",
                protocol_summary(op, n, link_bytes_per_s))

    return grid_figure(
        slider=("ranks", ranks, str),
        choices=("collective", list(ops), str),
        frame=frame,
        layout=dict(xaxis=dict(type="log", title="message size S [B]", exponentformat="SI"),
                    yaxis=dict(type="log", title="bus bandwidth [GB/s]", exponentformat="SI")),
        active=(0, 0),
        height=580,
    )


def protocol_calculator():
    """Live: collective, ranks, size, link -> every ring and tree protocol's modelled time, and NCCL's choice with NVLS off.

    The constants are NCCL's for one node, so the ranks are one NVLink domain's (8 on HGX, up to 72 on NVL72)."""
    import ipywidgets as w

    controls = {
        "op": w.Dropdown(options=cm.NCCL_MODEL_OPS, value="all_reduce", description="operation"),
        "n": w.IntText(value=8, description="ranks n"),  # NCCL's one-node constants: one NVLink domain (8 HGX, 72 NVL72)
        "size_mib": log_slider(1, 2**-10, 2**14, 0.5, label=_mib_label, description="S"),
        "link_gb_per_s": w.FloatText(value=round(H200_NCCL_NVLINK / 1e9, 6), description="link [GB/s]"),
    }

    def compute(op, n, size_mib, link_gb_per_s):
        return dict(op=op, n=n, size=size_mib * MiB, link=link_gb_per_s * 1e9,
                    choice=cm.nccl_model_choice(op, size_mib * MiB, n, link_gb_per_s * 1e9))

    def show(r):
        c = r["choice"]
        rows = [(f"{a}, {p}" + ("  ← NCCL's choice" if (a, p) == (c.algorithm, c.protocol) else ""), fmt_time(t)) for a, p, t in c.times]
        fig = go.Figure(_protocol_traces(r["op"], r["n"], r["link"]))
        # the chosen size on NCCL's choice (the figure follows the size control, not only the table)
        fig.add_trace(go.Scatter(x=[r["size"]], y=[cm.busbw_bytes_per_s(r["op"], r["n"], r["size"], c.time_s) / 1e9], mode="markers",
                                 name=f"your S: {c.algorithm}, {c.protocol}", marker=dict(color="#222", size=11, symbol="circle-open",
                                                                                          line=dict(width=2))))
        set_layout(fig, xaxis=dict(type="log", title="message size S [B]", exponentformat="SI"),
                          yaxis=dict(type="log", title="bus bandwidth [GB/s]", exponentformat="SI"))
        style_figure(fig, title=f"{r['op']}, {plural(r['n'], 'rank')}", readout=protocol_summary(r["op"], r["n"], r["link"]), height=460)
        return table_html(rows), fig

    return live_form(compute, controls, show, title="NCCL's protocols in one NVLink domain (ring and tree; NVLS off): LL, LL128, Simple",
                     names={"size_bytes": ("size_mib", MiB), "link_bytes_per_s": ("link_gb_per_s", 1e9)})


def check_critical_tokens(answer_tokens, gpu: str = "B200", scope: str = "network", ranks: int = cm.MAX_RANKS) -> bool:
    """Is ``answer_tokens`` (tokens per GPU) within 2% of the critical batch of data parallelism for
    ``gpu``'s dense 16-bit peak and its ``scope`` link (``cm.critical_tokens_per_gpu``)?"""
    c, w, _ = _roofline_inputs(gpu, scope)
    want = cm.critical_tokens_per_gpu(c, w, ranks)
    try:
        got = _check.positive("answer_tokens", answer_tokens)
    except ValueError as exc:
        return _verdict(False, str(exc))
    if abs(got - want) <= 0.02 * want:
        return _verdict(True, f"{want:,.0f} tokens per GPU: below that the all-reduce outlasts the backward's matmuls")
    hint = "too high" if got > want else "too low"
    return _verdict(False, f"{got:,.0f} is {hint}: divide the GPU's FLOP/s by the bandwidth its collectives get ({_gbps(w)})")


def check_protocol_switch(answer_bytes, op: str = "all_reduce", n: int = 8, link_bytes_per_s: float = H200_NCCL_NVLINK) -> bool:
    """Is ``answer_bytes`` within 5% of the size where NCCL's cost model leaves the LL protocol
    (``cm.nccl_model_switch_bytes``)?"""
    switches = cm.nccl_model_switch_bytes(op, n, link_bytes_per_s)
    if len(switches) < 2:
        return _verdict(False, "NCCL's model never leaves its first choice for these inputs")
    want, algo, proto = switches[1]
    try:
        got = _check.positive("answer_bytes", answer_bytes)
    except ValueError as exc:
        return _verdict(False, str(exc))
    if abs(got - want) <= 0.05 * want:
        return _verdict(True, f"from {_size(want)} the model prefers {algo} {proto} to LL")
    hint = "too large" if got > want else "too small"
    return _verdict(False, f"{_size(got)} is {hint}: set LL's time equal to LL128's (latency + S / algbw each)")


def check_benchmark_line(algbw_gb_per_s, busbw_gb_per_s, shard_mib, time_64_ms, size_bytes: float = 512 * MiB, time_s: float = 1.6e-3,
                         n: int = 8) -> bool:
    """The 'read a benchmark line' exercise: all_gather_perf on ``n`` GPUs, size ``size_bytes``, time ``time_s``.
    Checks algbw and busbw [GB/s], each rank's shard [MiB] and the time on 64 GPUs at the same busbw [ms], each within 2%."""
    busbw = cm.busbw_bytes_per_s("all_gather", n, size_bytes, time_s)
    want = {
        "algbw_gb_per_s": cm.algbw_bytes_per_s(size_bytes, time_s) / 1e9,
        "busbw_gb_per_s": busbw / 1e9,
        "shard_mib": size_bytes / n / MiB,
        "time_64_ms": cm.time_from_busbw_s("all_gather", 64, size_bytes, busbw) * 1e3,
    }
    got = dict(algbw_gb_per_s=algbw_gb_per_s, busbw_gb_per_s=busbw_gb_per_s, shard_mib=shard_mib, time_64_ms=time_64_ms)
    for name, value in got.items():
        try:
            v = _check.positive(name, value)
        except ValueError as exc:
            return _verdict(False, str(exc))
        if abs(v - want[name]) > 0.02 * want[name]:
            hints = {"algbw_gb_per_s": "algbw is S / t (decimal GB)", "busbw_gb_per_s": "busbw is algbw x (n-1)/n for all-gather",
                     "shard_mib": "S is the all-gather's OUTPUT: n shards", "time_64_ms": "t = (n-1)/n x S / busbw with n = 64"}
            return _verdict(False, f"{name} = {v:g} is off: {hints[name]}")
    return _verdict(True, "all four match nccl-tests' conventions")


def check_tree_crossover(nvlink_bytes, ib_bytes, n: int = 64) -> bool:
    """The 'where the tree wins' exercise: the ring/recursive-doubling crossover of an all-reduce on ``n`` ranks over
    NVLink (the H200's, NCCL's NVLink step latency) and over one NDR adapter (NCCL's network step latency), each
    within 5%."""
    ib = cm.NETWORK_LINKS["InfiniBand NDR / 400 GbE RoCE"][0]
    want = {
        "nvlink_bytes": cm.ring_tree_crossover_bytes("all_reduce", n, H200_NVLINK, cm.NCCL_NVLINK_STEP_LATENCY_S),
        "ib_bytes": cm.ring_tree_crossover_bytes("all_reduce", n, ib, cm.NCCL_NET_STEP_LATENCY_S),
    }
    for name, value in (("nvlink_bytes", nvlink_bytes), ("ib_bytes", ib_bytes)):
        try:
            v = _check.positive(name, value)
        except ValueError as exc:
            return _verdict(False, str(exc))
        if abs(v - want[name]) > 0.05 * want[name]:
            return _verdict(False, f"{name} = {_size(v)} is {'too large' if v > want[name] else 'too small'}: set "
                                   "(2(n-1) - log2 n) alpha equal to (log2 n - 2(n-1)/n) S / B")
    return _verdict(True, f"{_size(want['nvlink_bytes'])} over NVLink, {_size(want['ib_bytes'])} over one adapter: "
                          "the crossover scales with alpha x B")
