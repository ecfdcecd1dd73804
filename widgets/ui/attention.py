"""Calculators for the attention chapter: HBM traffic of standard and flash attention, the online
softmax step by step, and the memory of the attention matrix. Each has a live form
(``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly frames precomputed by the same
model, :mod:`widgets.models.attention`). The tables of the chapter's measurements and the exercise
checks live here too.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..book import short_reason
from ..book import table as book_table
from ..hardware import get_gpu, gpu_names
from ..models import attention as am
from ..units import GiB, KiB, fmt_bytes, fmt_time
from ._core import answer_close as _close
from ._core import answer_number as _number
from ._core import grid_figure, live_form, plural, series_color, set_layout, style_figure, table_html
from ._core import verdict as _verdict

GPUS = tuple(gpu_names())
SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
READ_SEQ = 16384  # the sequence length the readouts quote


def _dtype16(g) -> str:
    """The 16-bit format attention runs in on ``g``: bf16 where the catalog has its peak, else fp16."""
    return "bf16" if "bf16" in g.peak_flop_per_s else "fp16"


# --------------------------------------------------------------------------------------------
# 1. HBM traffic and time: standard against flash
# --------------------------------------------------------------------------------------------
IO_SETTINGS = ((128, 1), (128, 2), (128, 4), (64, 1), (256, 1))  # (head size, divisor of the chosen GPU's shared memory
# per SM): all of it, half, a quarter, so no GPU is offered more on-chip memory than its SM has (catalog smem_per_sm_bytes);
# (128, 4) and (256, 1) have M < 3 d^2 on every catalog GPU, where Theorem 2's bound exceeds standard attention's bytes
_SHARE = {1: "all", 2: "half", 4: "a quarter"}


def io_point(gpu: str, seq: int, head_dim: int, sram_bytes: float, batch: int = 1, heads: int = 32) -> dict:
    """Bytes and roofline times of one forward pass, standard and flash, on ``gpu`` (16-bit)."""
    g = get_gpu(gpu)
    dt = _dtype16(g)
    peak = g.peak(dt)
    flop = am.attention_flop(batch, heads, seq, seq, head_dim)
    std = am.standard_attention_hbm_bytes(batch, heads, seq, head_dim, 2)
    fl = am.flash_attention_hbm_bytes(batch, heads, seq, head_dim, sram_bytes, 2)
    floor = am.flash_attention_min_hbm_bytes(batch, heads, seq, head_dim, 2)
    return dict(gpu=g.name, dtype=dt, flop=flop, standard_bytes=std, flash_bytes=fl, floor_bytes=floor,
                standard_s=am.attention_time_s(flop, std, peak, g.hbm_bytes_per_s),
                flash_s=am.attention_time_s(flop, fl, peak, g.hbm_bytes_per_s),
                compute_s=am.attention_time_s(flop, 0, peak, g.hbm_bytes_per_s),
                blocks=am.flash_blocks(head_dim, sram_bytes, 2), smem_per_sm_bytes=g.smem_per_sm_bytes)


def io_readout(p: dict, seq: int) -> str:
    b = p["blocks"]
    return (f"N = {seq:,}: standard {fmt_bytes(p['standard_bytes'])} in {fmt_time(p['standard_s'])}, "
            f"Theorem 2's count {fmt_bytes(p['flash_bytes'])} in {fmt_time(p['flash_s'])} (B_c = {b.block_kv} keys "
            f"per pass over Q and O); the matmuls alone {fmt_time(p['compute_s'])}")


def _io_traces(gpu, head_dim, sram_bytes, seqs=SEQS, batch=1, heads=32):
    pts = [io_point(gpu, n, head_dim, sram_bytes, batch, heads) for n in seqs]
    x = list(seqs)
    out = []
    for i, (key, name, dash) in enumerate((("standard_bytes", "standard", "solid"),
                                           ("flash_bytes", "Theorem 2 (Algorithm 1), no cache", "solid"),
                                           ("floor_bytes", "Q, K, V, O once", "dot"))):
        out.append(go.Scatter(x=x, y=[p[key] for p in pts], mode="lines+markers", name=name,
                              line=dict(color=series_color(i), dash=dash),
                              hovertemplate=f"{name}<br>N = %{{x:,}}: %{{y:.3s}}B<extra></extra>"))
    return out, pts


def _io_layout() -> dict:
    return dict(xaxis=dict(title="sequence length N [tokens]", type="log"),
                yaxis=dict(title="HBM bytes, one layer's forward [B]", type="log"))


def io_figure(gpus=GPUS, settings=IO_SETTINGS, seqs=SEQS) -> go.Figure:
    """Static: HBM bytes of one attention forward (batch 1, 32 heads, 16-bit) against N. The
    dropdown picks the GPU, the slider the head size and the on-chip memory per thread block (all,
    half or a quarter of that GPU's shared memory per SM); the
    readout gives the roofline times at N = 16,384 on that GPU."""
    gpus = list(gpus)
    read = READ_SEQ if READ_SEQ in seqs else seqs[-1]

    def frame(gpu, st):
        d, div = st
        sram = get_gpu(gpu).smem_per_sm_bytes // div
        traces, _pts = _io_traces(gpu, d, sram, seqs)
        p = io_point(gpu, read, d, sram)
        title = f"{p['gpu']}, d = {d}, {fmt_bytes(sram)} on chip ({_SHARE.get(div, f'1/{div}')} of its SM's {fmt_bytes(p['smem_per_sm_bytes'])})"
        return traces, title, io_readout(p, read)

    return grid_figure(
        slider=("head size, share of the SM's shared memory", list(settings), lambda st: f"d {st[0]}, {_SHARE.get(st[1], f'1/{st[1]}')}"),
        choices=("GPU", gpus, str),
        frame=frame, layout=_io_layout(), active=(gpus.index("H200-SXM") if "H200-SXM" in gpus else 0, 0), height=420,
    )


def io_calculator():
    """Live: GPU, sequence length, head size, on-chip memory, batch and heads -> bytes and times."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=list(gpu_names()), value="H200-SXM", description="GPU"),
        "seq": w.BoundedIntText(value=8192, min=1, max=am.MAX_SEQ, description="sequence N"),
        "head_dim": w.Dropdown(options=[32, 64, 96, 128, 192, 256], value=128, description="head size d"),
        "sram_kib": w.BoundedIntText(value=228, min=1, max=4096, description="on-chip memory [KiB]"),
        "batch": w.BoundedIntText(value=1, min=1, max=4096, description="batch"),
        "heads": w.BoundedIntText(value=32, min=1, max=1024, description="heads"),
    }

    def compute(gpu, seq, head_dim, sram_kib, batch, heads):
        return io_point(gpu, seq, head_dim, sram_kib * KiB, batch, heads), seq, head_dim, sram_kib, batch, heads

    def show(r):
        p, seq, d, kib, batch, heads = r
        rows = [("FLOP (4 B H N^2 d)", f"{p['flop']:.3g}"), ("standard: HBM bytes", fmt_bytes(p["standard_bytes"])),
                ("Theorem 2's count: HBM bytes (Algorithm 1, no cache)", fmt_bytes(p["flash_bytes"])),
                ("floor: Q, K, V, O once", fmt_bytes(p["floor_bytes"])),
                ("Algorithm 1's blocks B_r × B_c", f"{p['blocks'].block_q} × {p['blocks'].block_kv}"),
                (f"standard: time ({p['dtype']} roofline)", fmt_time(p["standard_s"])),
                ("Theorem 2's count: time", fmt_time(p["flash_s"])),
                ("the matmuls alone", fmt_time(p["compute_s"]))]
        traces, _pts = _io_traces(p["gpu"], d, kib * KiB, batch=batch, heads=heads)
        traces.append(go.Scatter(x=[seq, seq], y=[p["standard_bytes"], p["flash_bytes"]], mode="markers", name=f"your N = {seq:,}",
                                 marker=dict(size=11, color="#222222", symbol="diamond"),
                                 hovertemplate="N = %{x:,}: %{y:.3s}B<extra></extra>"))
        fig = go.Figure(traces)
        set_layout(fig, **_io_layout())
        return table_html(rows), style_figure(fig, title=f"{p['gpu']}, head size {d}, {kib} KiB on chip", readout=io_readout(p, seq),
                                              height=380)

    return live_form(compute, controls, show, title="Attention's HBM traffic", names={"sram_bytes": ("sram_kib", KiB)})


# --------------------------------------------------------------------------------------------
# 2. The online softmax, step by step
# --------------------------------------------------------------------------------------------
ROW_LEN = 16


def stepper_rows() -> dict:
    """Three rows of 16 scores (seeded): rising, a late spike, random; and their values v."""
    rng = np.random.default_rng(0)
    rising = [round(float(v), 2) for v in np.linspace(-1.0, 2.0, ROW_LEN)]
    spike = [round(float(v), 2) for v in rng.normal(0.0, 0.7, ROW_LEN)]
    spike[12] = 4.0
    rand = [round(float(v), 2) for v in rng.normal(0.0, 1.5, ROW_LEN)]
    values = [round(float(v), 2) for v in rng.uniform(-1.0, 1.0, ROW_LEN)]
    return {"rising scores": (rising, values), "a late spike": (spike, values), "random scores": (rand, values)}


STEPPER_BLOCKS = (2, 4, 8)


def stepper_state(x, v, block: int, step: int) -> dict:
    """The online softmax after ``step`` blocks (at most all of them): each seen element's current
    weight exp(x_i - m) / l, the final softmax, and the running state."""
    steps = am.online_softmax_steps(x, block, v)
    k = min(step, len(steps))
    s = steps[k - 1]
    seen = s.seen
    # the current estimate of each seen probability; a model call per element keeps the formula in the model
    est = am.online_softmax(x[:seen], seen)  # normalized over the elements seen so far, as FlashAttention's O_i is
    return dict(state=s, blocks=len(steps), step=k, estimate=est, final=am.softmax(x),
                final_output=steps[-1].output, seen=seen)


def _stepper_traces(x, v, block, step):
    st = stepper_state(x, v, block, step)
    idx = list(range(1, len(x) + 1))
    seen = st["seen"]
    cur_lo = (st["step"] - 1) * block  # the block just processed starts here (0-based)
    colors = [series_color(1) if i >= cur_lo else series_color(0) for i in range(seen)]
    seen_bar = go.Bar(x=idx[:seen] + idx[seen:], y=st["estimate"] + [0.0] * (len(x) - seen), name="weight so far",
                      marker_color=colors + [series_color(0)] * (len(x) - seen), showlegend=False,
                      hovertemplate="element %{x}: %{y:.3f}<extra></extra>")
    # legend keys of their own: the bars' legend swatch takes its first bar's colour, which is the
    # current block's at block 1 (both swatches were orange, review R5-2)
    earlier = go.Bar(x=[None], y=[None], name="weight so far, exp(x - m) / l (earlier blocks)", marker_color=series_color(0), hoverinfo="skip")
    final = go.Scatter(x=idx, y=st["final"], mode="markers", name="softmax of the whole row",
                       marker=dict(symbol="line-ew-open", size=14, color="#444444", line=dict(width=3)),
                       hovertemplate="element %{x}: %{y:.3f}<extra></extra>")
    current = go.Bar(x=[None], y=[None], name="the block just processed", marker_color=series_color(1), hoverinfo="skip")  # legend key
    return [seen_bar, earlier, final, current], st


def stepper_readout(st: dict) -> str:
    s = st["state"]
    tail = "" if st["step"] < st["blocks"] else " (last block: the weights are the softmax)"
    return (f"block {st['step']} of {st['blocks']}: m = {s.running_max:.2f}, l = {s.running_sum:.3f}, "
            f"old sum and output times exp(m_old - m_new) = {s.rescale:.3f}; output {s.output:.3f} "
            f"(final {st['final_output']:.3f}){tail}")


def _stepper_layout() -> dict:
    return dict(xaxis=dict(title="element of the row", dtick=1), yaxis=dict(title="weight", range=[0, 1.05]), barmode="overlay")


def stepper_figure(blocks=STEPPER_BLOCKS) -> go.Figure:
    """Static online-softmax stepper: the dropdown picks a row and a block size, the slider the
    block processed; bars are each seen element's weight so far, the markers the final softmax."""
    rows = stepper_rows()
    choices = [(name, b) for name in rows for b in blocks]

    def steps(c):  # each row and block size steps through exactly its own blocks (reader finding W-2)
        x, v = rows[c[0]]
        return list(range(1, stepper_state(x, v, c[1], 1)["blocks"] + 1))

    def frame(c, k):
        x, v = rows[c[0]]
        traces, st = _stepper_traces(x, v, c[1], k)
        return traces, f"{c[0]}, blocks of {c[1]} ({plural(st['blocks'], 'block')})", stepper_readout(st)

    return grid_figure(slider=("block", steps, str), choices=("row, block size", choices, lambda c: f"{c[0]}, blocks of {c[1]}"),
                       frame=frame, layout=_stepper_layout(), active=(choices.index(("a late spike", 4)), 0), height=440)


def stepper_calculator():
    """Live stepper: a seeded random row (length, scores in [0, spread], seed), block size and step."""
    import ipywidgets as w

    controls = {
        "length": w.BoundedIntText(value=16, min=1, max=64, description="row length"),
        "spread": w.BoundedFloatText(value=2.0, min=0.0, max=50.0, step=0.5, description="score spread"),
        "seed": w.BoundedIntText(value=0, min=0, max=10_000, description="seed"),
        "block": w.BoundedIntText(value=4, min=1, max=64, description="block size"),
        "step": w.BoundedIntText(value=1, min=1, max=64, description="block processed"),
    }

    def compute(length, spread, seed, block, step):
        rng = np.random.default_rng(seed)
        x = [float(v) for v in rng.uniform(0.0, spread, length)]  # scores in [0, spread]
        v = [float(u) for u in rng.uniform(0.0, 1.0, length)]  # one value per score (V with one column)
        return _stepper_traces(x, v, block, step)

    def show(r):
        traces, st = r
        fig = go.Figure(traces)
        set_layout(fig, **_stepper_layout())
        s = st["state"]
        rows = [("blocks processed", f"{st['step']} of {st['blocks']}"), ("running max m", f"{s.running_max:.4g}"),
                ("running sum l", f"{s.running_sum:.4g}"), ("rescale exp(m_old - m_new)", f"{s.rescale:.4g}"),
                ("output so far", f"{s.output:.4g}"), ("final output", f"{st['final_output']:.4g}")]
        return table_html(rows), style_figure(fig, title="online softmax", readout=stepper_readout(st), height=360)

    return live_form(compute, controls, show, title="Online softmax, block by block")


# --------------------------------------------------------------------------------------------
# 3. The attention matrix's memory: where the math path runs out
# --------------------------------------------------------------------------------------------
MATRIX_BATCHES = (1, 2, 4, 8, 16)
MATRIX_HEADS = 32
MATRIX_HEAD_DIM = 128


def matrix_point(gpu: str, batch: int, heads: int, head_dim: int, seq: int, compute_bytes: int = 4) -> dict:
    """Peak memory of SDPA's math path (16-bit inputs, working set in ``compute_bytes``) and of a
    flash kernel, and the longest sequence the math path fits in ``gpu``'s memory."""
    g = get_gpu(gpu)
    cap = g.memory_bytes
    return dict(gpu=g.name, capacity_bytes=cap,
                math_bytes=am.math_path_peak_bytes(batch, heads, seq, head_dim, 2, compute_bytes),
                flash_bytes=am.flash_path_peak_bytes(batch, heads, seq, head_dim, 2),
                matrix_bytes=am.attention_matrix_bytes(batch, heads, seq, seq, compute_bytes),
                longest=am.largest_math_seq(batch, heads, head_dim, cap, 2, compute_bytes))


def matrix_readout(p: dict) -> str:
    return (f"the math path fits up to N = {p['longest']:,} in {p['gpu']}'s {fmt_bytes(p['capacity_bytes'], 4)}; "
            f"at that N a flash kernel needs {fmt_bytes(p['flash_at_longest'])}")


def _matrix_traces(gpu, batch, heads=MATRIX_HEADS, head_dim=MATRIX_HEAD_DIM, seqs=SEQS, compute_bytes=4):
    pts = [matrix_point(gpu, batch, heads, head_dim, n, compute_bytes) for n in seqs]
    x = list(seqs)
    cap = pts[0]["capacity_bytes"] / GiB
    math_t = go.Scatter(x=x, y=[p["math_bytes"] / GiB for p in pts], mode="lines+markers",
                        name=f"math path (S and P, {'fp32' if compute_bytes == 4 else '16-bit'})",
                        line=dict(color=series_color(0)), hovertemplate="N = %{x:,}: %{y:.3g} GiB<extra></extra>")
    flash_t = go.Scatter(x=x, y=[p["flash_bytes"] / GiB for p in pts], mode="lines+markers", name="flash (Q, K, V, O)",
                         line=dict(color=series_color(1)), hovertemplate="N = %{x:,}: %{y:.3g} GiB<extra></extra>")
    cap_t = go.Scatter(x=[x[0], x[-1]], y=[cap, cap], mode="lines", name="GPU memory", line=dict(color="#888888", dash="dash"),
                       hovertemplate=f"{pts[0]['gpu']}: {cap:.0f} GiB<extra></extra>")
    p = dict(pts[0])
    p["longest"] = pts[0]["longest"]
    p["flash_at_longest"] = am.flash_path_peak_bytes(batch, heads, max(p["longest"], 1), head_dim, 2)
    return [math_t, flash_t, cap_t], p


def _matrix_layout() -> dict:
    return dict(xaxis=dict(title="sequence length N [tokens]", type="log"), yaxis=dict(title="peak memory [GiB]", type="log"))


def matrix_figure(gpus=GPUS, batches=MATRIX_BATCHES) -> go.Figure:
    """Static: peak memory of one attention forward (32 heads of 128, bf16 inputs) against N, for
    the math path and a flash kernel; the dropdown picks the GPU, the slider the batch."""
    gpus = list(gpus)

    def frame(gpu, b):
        traces, p = _matrix_traces(gpu, b)
        return traces, f"{p['gpu']}, batch {b} × {MATRIX_HEADS} heads", matrix_readout(p)

    return grid_figure(slider=("batch", list(batches), str), choices=("GPU", gpus, str), frame=frame, layout=_matrix_layout(),
                       active=(gpus.index("H200-SXM") if "H200-SXM" in gpus else 0, 0), height=440)


def matrix_calculator():
    """Live: GPU, batch, heads, head size, sequence and the math path's compute format -> peak memory."""
    import ipywidgets as w

    controls = {
        "gpu": w.Dropdown(options=list(gpu_names()), value="H200-SXM", description="GPU"),
        "batch": w.BoundedIntText(value=1, min=1, max=4096, description="batch"),
        "heads": w.BoundedIntText(value=32, min=1, max=1024, description="heads"),
        "head_dim": w.Dropdown(options=[64, 128, 256], value=128, description="head size d"),
        "seq": w.BoundedIntText(value=16384, min=1, max=am.MAX_SEQ, description="sequence N"),
        "compute_bytes": w.Dropdown(options=[("fp32 (PyTorch's default)", 4), ("16-bit", 2)], value=4,
                                    description="math path computes in"),
    }

    def compute(gpu, batch, heads, head_dim, seq, compute_bytes):
        p = matrix_point(gpu, batch, heads, head_dim, seq, compute_bytes)
        p.update(batch=batch, heads=heads, head_dim=head_dim, seq=seq, compute_bytes=compute_bytes)
        p["flash_at_longest"] = am.flash_path_peak_bytes(batch, heads, max(p["longest"], 1), head_dim, 2)
        return p

    def show(p):
        fits = "yes" if p["math_bytes"] <= p["capacity_bytes"] else "NO: out of memory"
        traces, _p = _matrix_traces(p["gpu"], p["batch"], p["heads"], p["head_dim"], compute_bytes=p["compute_bytes"])
        traces.append(go.Scatter(x=[p["seq"], p["seq"]], y=[p["math_bytes"] / GiB, p["flash_bytes"] / GiB], mode="markers",
                                 name=f"your N = {p['seq']:,}", marker=dict(size=11, color="#222222", symbol="diamond"),
                                 hovertemplate="N = %{x:,}: %{y:.3g} GiB<extra></extra>"))
        fig = go.Figure(traces)
        set_layout(fig, **_matrix_layout())
        table = table_html([("one S (or P) matrix", fmt_bytes(p["matrix_bytes"])), ("math path: peak", fmt_bytes(p["math_bytes"])),
                           ("math path fits?", fits), ("flash: peak", fmt_bytes(p["flash_bytes"])),
                           (f"{p['gpu']} memory", fmt_bytes(p["capacity_bytes"], 4)),
                           ("longest N for the math path", f"{p['longest']:,}")])
        return table, style_figure(fig, title=f"{p['gpu']}, batch {p['batch']} × {p['heads']} heads of {p['head_dim']}",
                                   readout=matrix_readout(p), height=380)

    return live_form(compute, controls, show, title="The attention matrix's memory")


# --------------------------------------------------------------------------------------------
# Tables of the chapter's measurements
# --------------------------------------------------------------------------------------------
def flash_html(flash, short: dict) -> str:
    """The Triton kernel against SDPA's backends: one row per shape and way.

    The row's key comes first (kernel, mask and N), as a wide table's first column stays in view
    while it scrolls on a phone: the shape alone ("4 x 16 x 4,096" in 12 rows) did not tell which
    kernel a number belonged to (review R5-5)."""
    from ..experiments import attention as ex

    rows = []
    for r in ex.flash_table(flash):
        key = f"{short.get(r['name'], r['name'])} ({'causal' if r['causal'] else 'full'}, N = {r['seq']:,})"
        shape = f"{r['batch']} × {r['heads']}"
        if r["error"]:
            rows.append([key, shape, "refused", "-", "-", short_reason(r["error"], 80)])
            continue
        rows.append([key, shape, fmt_time(r["time_s"]), f"{r['tflop_per_s']:.3g}" if r["tflop_per_s"] else "-",
                     fmt_bytes(r["peak_extra_bytes"]) if r["peak_extra_bytes"] is not None else "-",
                     f"{r['max_abs_error']:.2g}" if r["max_abs_error"] is not None else "-"])
    # a row per kernel and shape, read on its own: cards on a phone (the book's table, reader check r19)
    return book_table(rows, ["kernel (mask, N)", "batch × heads", "time", "TFLOP/s", "memory beyond Q, K, V",
                             "max |error| / why refused"], stack=True)


def backend_html(backends, short: dict) -> str:
    """Which backend ran, per dtype x head size x mask x dropout, with its time and the dispatcher's
    choice. The case (dtype, head size, mask, dropout) is the first column, the one that stays in
    view on a phone ("fp16" alone named ~27 rows, review R5-5)."""
    rows = []
    for c in backends.cases:
        ran = ", ".join(short.get(b, b) for b in c.ran) or "none"
        choice = short.get(c.dispatcher_choice, c.dispatcher_choice) if c.dispatcher_choice else "?"
        t = c.times_s.get(c.dispatcher_choice) if c.dispatcher_choice else None
        fastest = min(c.times_s.values()) if c.times_s else None
        cost = f"{t / fastest:.2g} × the fastest" if t and fastest else "-"
        mask = "no mask" if c.mask == "none" else f"{c.mask} mask"
        rows.append([f"{c.dtype}, d {c.head_dim}, {mask}, dropout {c.dropout:g}", ran, choice,
                     fmt_time(t) if t else "-", cost])
    return book_table(rows, ["dtype, head size, mask, dropout", "ran alone", "default choice", "its time", "cost"], stack=True)


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_flop(answer) -> bool:
    """Exercise: forward FLOP of causal attention, batch 4, 32 heads, N = 8192, d = 128, in TFLOP."""
    expected = am.attention_flop(4, 32, 8192, 8192, 128, causal=True) / 1e12
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of TFLOP, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"{expected:.3g} TFLOP: two matmuls of 2 N^2 d each per head, halved by the mask")
    if _close(a, 2 * expected):
        return _verdict(False, f"{a:g} TFLOP counts the masked half: see the convention in 'Causal masking'")
    return _verdict(False, f"{a:g} TFLOP is not right: count the two matmuls of 'Attention's FLOP and bytes', per head, times batch and heads")


def check_standard_bytes(answer) -> bool:
    """Exercise: standard attention's HBM traffic, batch 1, 32 heads, N = 8192, d = 128, bf16, in GB."""
    expected = am.standard_attention_hbm_bytes(1, 32, 8192, 128, 2) / 1e9
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of GB, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"{expected:.3g} GB, nearly all of it the N^2 matrices S and P")
    if _close(a, expected * 1e9 / GiB):
        return _verdict(False, f"{a:g} is in GiB: the exercise asks for decimal GB")
    return _verdict(False, f"{a:g} GB is not right: list each kernel's reads and writes ('The softmax wall')")


def check_block_rows(answer) -> bool:
    """Exercise: FlashAttention's B_r for d = 64 and 100 KB of on-chip memory in bf16 (Algorithm 1)."""
    expected = am.flash_blocks(64, 100_000, 2).block_q
    a = _number(answer)
    if a is None or not a.is_integer():
        return _verdict(False, f"the answer must be a whole number of rows, got {answer!r}")
    if int(a) == expected:
        return _verdict(True, f"B_r = {expected}: the cap at d binds")
    return _verdict(False, f"{a:g} rows is not right: Algorithm 1 takes the smaller of two numbers ('FlashAttention's tiling')")


def check_rescale(answer) -> bool:
    """Exercise: the factor the running sum is multiplied by when the max rises from 2 to 5."""
    expected = am.online_softmax_steps([2.0, 5.0], 1)[1].rescale
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number, got {answer!r}")
    if _close(a, expected, 1e-3):
        return _verdict(True, f"exp(2 - 5) = {expected:.4f}")
    return _verdict(False, f"{a:g} is not right: the old terms were exp(x - m_old); write them relative to m_new ('Online softmax')")


def check_longest_math_seq(answer) -> bool:
    """Exercise: the longest N the math path fits by the chapter's model on an H100 SXM with the catalog's
    memory, batch 1, 32 heads, d = 128, fp32 working set."""
    g = get_gpu("H100-SXM")
    expected = am.largest_math_seq(1, 32, 128, g.memory_bytes, 2, 4)
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a sequence length, got {answer!r}")
    # N grows as the square root of the capacity: the labels 80 GB and 80 GiB give answers only -3.0% and +0.5%
    # away, and a count that leaves terms out lands as near (S and P with the inputs: within 0.1% of the 80 GiB
    # answer), so every wrong reading an answer matches to 0.1% is named; the right answer is held to 0.2%
    wrong = [(am.largest_math_seq(1, 32, 128, 80e9, 2, 4), "the model's count for 80 GB"),
             (am.largest_math_seq(1, 32, 128, 80 * GiB, 2, 4), "the model's count for 80 GiB"),
             (am.largest_seq_scores_only(1, 32, 128, g.memory_bytes, 4, 2), "S and P with the inputs only"),
             (am.largest_seq_scores_only(1, 32, 128, g.memory_bytes, 4), "S and P only")]
    hits = [name for n, name in wrong if _close(a, n, 0.001)]
    if hits and not _close(a, expected, 0.0005):
        return _verdict(False, f"{a:g} matches {' or '.join(hits)}: the exercise gives the catalog's "
                        f"{g.memory_bytes / 1e9:.1f} GB, and the model also counts the output and the fp32 working copies")
    if _close(a, expected, 0.002):
        return _verdict(True, f"about {expected:,} tokens by the model: two fp32 N x N matrices per head fill the "
                        "memory (the H200 measured about one byte per score more: see 'The silent fallback')")
    return _verdict(False, f"{a:g} is not right: by the model the peak holds S and P together in fp32, plus the inputs "
                    "and working copies; use am.largest_math_seq or the calculator ('The silent fallback')")


def check_causal_tflops(answer) -> bool:
    """Exercise: a causal kernel timed at 1.0 ms for batch 2, 16 heads, N = 8192, d = 128: TFLOP/s by the convention."""
    expected = am.attention_flop(2, 16, 8192, 8192, 128, causal=True) / 1e-3 / 1e12
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of TFLOP/s, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"{expected:.0f} TFLOP/s")
    if _close(a, 2 * expected):
        return _verdict(False, f"{a:g} TFLOP/s counts the masked half too: the papers halve the FLOP of causal attention")
    return _verdict(False, f"{a:g} is not right: FLOP by the convention of 'Causal masking', over the time")
