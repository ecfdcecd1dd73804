"""Calculators for the serving chapter: KV cache and memory budget, latency, capacity planning.

Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``, plotly frames
precomputed by the same model) that works in the published page without a kernel. Plots of the
chapter's measurements and the exercise checks live here too.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .. import _check
from ..hardware import get_gpu, gpu_names
from ..models import llms, transformer
from ..models import serving as sv
from ..units import GiB, fmt_bytes, fmt_bytes_per_s, fmt_flop, fmt_time
from ._core import answer_close as _close
from ._core import grid_figure, html_table, live_form, plural, series_color, set_layout, style_figure, table_html
from ._core import verdict as _verdict

MEMORY_PARTS = (("weights", "#1f77b4"), ("activations", "#9467bd"), ("runtime reserve", "#7f7f7f"), ("KV cache", "#ff7f0e"), ("free", "#d9f0d3"))
SERVING_GPUS = tuple(gpu_names())  # every catalog GPU
DTYPES = tuple(transformer.STORAGE_DTYPES)
CUSTOM = "custom"


def _fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def _fmt_usd(x: float) -> str:
    """Money as ``0.163 USD``: a "$" pair in a plotly string, or in an output MathJax reads,
    would be typeset as LaTeX."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:,.3g} USD"


def resolve_model(model: str, layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32000):
    """A preset by name, or (``model == "custom"``) a dense model built from the other fields."""
    if model == CUSTOM:
        return transformer.custom_model(layers, hidden_size, heads, kv_heads, head_dim, intermediate_size, vocab_size)
    return llms.get_model(model)


def _custom_controls(w):
    return {
        "layers": w.BoundedIntText(value=32, min=1, max=512, description="layers"),
        "hidden_size": w.BoundedIntText(value=4096, min=64, max=65536, step=64, description="hidden"),
        "heads": w.BoundedIntText(value=32, min=1, max=512, description="heads"),
        "kv_heads": w.BoundedIntText(value=8, min=1, max=512, description="KV heads"),
        "head_dim": w.BoundedIntText(value=128, min=8, max=1024, description="head dim"),
        "intermediate_size": w.BoundedIntText(value=14336, min=64, max=262144, description="FFN"),
        "vocab_size": w.BoundedIntText(value=32000, min=1, max=1_000_000, description="vocab"),
    }


CUSTOM_FIELDS = ("layers", "hidden_size", "heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size")


def _show_custom_only_when_chosen(controls: dict) -> None:
    """The custom model's fields are shown only while the model dropdown says "custom" (they are
    ignored for a preset, so showing them editable would mislead)."""

    def sync(_change=None):
        custom = controls["model"].value == CUSTOM
        for k in CUSTOM_FIELDS:
            controls[k].layout.display = None if custom else "none"
            controls[k].disabled = not custom

    controls["model"].observe(sync, names="value")
    sync()


# --------------------------------------------------------------------------------------------
# 1. KV cache and memory budget
# --------------------------------------------------------------------------------------------
def memory_summary(b: sv.MemoryBudget, context_tokens: int) -> str:
    verdict = "fits" if b.fits else f"does NOT fit ({fmt_bytes(-b.free_bytes)} short)"
    return (
        f"{b.model} on {b.tp} × {b.gpu}, {b.batch} × {context_tokens} tokens: KV cache {fmt_bytes(b.kv_bytes)}, {verdict}"
        f"<br>at most {b.max_concurrent_seqs} sequences of that length"
    )


def _memory_traces(b: sv.MemoryBudget) -> list:
    values = (b.weight_bytes, b.activation_bytes, b.overhead_bytes, b.kv_bytes, max(b.free_bytes, 0.0))
    return [
        go.Bar(
            x=[v / GiB], y=["per GPU"], orientation="h", name=name, marker_color=color,
            hovertemplate=f"{name}: %{{x:.3g}} GiB<extra></extra>",
        )
        for (name, color), v in zip(MEMORY_PARTS, values)
    ]


def _memory_layout(cap_gib: float, max_gib: float) -> dict:
    return dict(
        barmode="stack", xaxis=dict(title="memory [GiB]", range=[0, max(max_gib, cap_gib) * 1.05]),
        yaxis=dict(showticklabels=False),
        shapes=[dict(type="line", x0=cap_gib, x1=cap_gib, y0=-0.5, y1=0.5, line=dict(color="#888888", width=3, dash="dash"))],
        annotations=[dict(x=cap_gib, y=0.55, text=f"usable {cap_gib:.1f} GiB", showarrow=False)],
    )


# (model, weight dtype, context, GPU) the static memory calculator offers: the H200 scenarios, then
# Llama-3-8B at 8k tokens on every other catalog GPU (in int4 on the T4, whose 15 GiB bf16 weights fill)
MEMORY_CHOICES = (("Llama-3-8B", "bf16", 8192, "H200-SXM"), ("Llama-3-8B", "bf16", 32768, "H200-SXM"), ("Mistral-7B", "bf16", 32768, "H200-SXM"),
                  ("Llama-3-70B", "fp8", 8192, "H200-SXM"), ("Llama-3-70B", "fp8", 32768, "H200-SXM"),
                  *(("Llama-3-8B", "int4" if g == "T4" else "bf16", 8192, g) for g in gpu_names() if g != "H200-SXM"))
MEMORY_BATCHES = (1, 8, 16, 32, 64, 96, 128, 192, 256)


def _ctx_label(c: int) -> str:
    return f"{c // 1024}k" if c % 1024 == 0 else f"{c:,}"


def memory_figure(choices=MEMORY_CHOICES, gpu: str = "H200-SXM", batches=None, kv_dtype: str = "bf16", tp: int = 1,
                  active=("Llama-3-8B", "bf16", 8192, "H200-SXM")) -> go.Figure:
    """Static memory budget: the dropdown picks (model, weight dtype, context[, GPU]) (a choice
    without a GPU is on ``gpu``), the slider how many such sequences are served; the dashed line is
    the chosen GPU's usable memory."""
    batches = _check.integers_list("batches", batches if batches is not None else MEMORY_BATCHES, minimum=0, maximum=transformer.MAX_COUNT)
    choices = [tuple(c) if len(c) == 4 else (*c, gpu) for c in choices]
    if not choices:
        raise ValueError("choices must hold at least one (model, weight dtype, context)")
    budgets = {(c, b): sv.memory_budget(c[0], c[3], c[2], b, c[1], kv_dtype, tp) for c in choices for b in batches}
    caps = [budgets[c, batches[0]].hbm_bytes / GiB for c in choices]
    max_gib = max(x.used_bytes for x in budgets.values()) / GiB

    def frame(c, b):
        x = budgets[c, b]
        verdict = "fits" if x.fits else f"does NOT fit ({fmt_bytes(-x.free_bytes)} short)"
        readout = (f"KV cache {fmt_bytes(x.kv_bytes)}: {verdict}; at most "
                   f"{plural(x.max_concurrent_seqs, 'sequence')} of that length")
        return _memory_traces(x), f"{c[0]} ({c[1]}) on {c[3]}, {b} x {_ctx_label(c[2])} tokens", readout

    act = tuple(active) if len(active) == 4 else (*active, gpu)
    ci = choices.index(act) if act in choices else 0
    # one fixed x range per choice (the largest bar of its slider, or the GPU), kept by every
    # frame and by the dropdown, so no bar runs off and the range never jumps within a choice
    ranges = [[0, max(cap, max(budgets[c, b].used_bytes for b in batches) / GiB) * 1.05] for c, cap in zip(choices, caps)]
    fig = grid_figure(
        slider=("sequences", batches, str),
        choices=("model, weights, context, GPU", choices, lambda c: f"{c[0]} {c[1]}, {_ctx_label(c[2])}, {c[3]}"),
        frame=frame, layout=_memory_layout(caps[ci], max_gib), active=(ci, batches.index(64) if 64 in batches else 0), height=420,
    )
    _pin_x_range(fig, ranges, ci)
    _pin_usable_line(fig, caps)
    return fig


def _pin_usable_line(fig: go.Figure, caps: list) -> None:
    """The dashed "usable memory" line of each choice's GPU, in every frame of that choice and in its
    dropdown button (frames named ``"ci:si"``, or ``"si"`` with one choice)."""
    def parts(cap):
        shapes = [dict(type="line", x0=cap, x1=cap, y0=-0.5, y1=0.5, line=dict(color="#888888", width=3, dash="dash"))]
        return shapes, [dict(x=cap, y=0.55, text=f"usable {cap:.1f} GiB", showarrow=False)]

    for fr in fig.frames:
        ci = int(fr.name.split(":")[0]) if ":" in fr.name else 0
        fr.layout.shapes, fr.layout.annotations = parts(caps[ci])
    for menu in fig.layout.updatemenus:
        for ci, button in enumerate(menu.buttons):
            shapes, notes = parts(caps[ci])
            args = list(button.args)
            args[1] = {**args[1], "shapes": shapes, "annotations": notes}
            button.args = args


def _pin_x_range(fig: go.Figure, ranges: list, ci0: int) -> None:
    """Give every frame of choice ``ci`` (frames named ``"ci:si"``, or ``"si"`` with one choice)
    and its dropdown button the x range ``ranges[ci]``."""
    set_layout(fig, xaxis=dict(range=ranges[ci0], autorange=False))
    for fr in fig.frames:
        ci = int(fr.name.split(":")[0]) if ":" in fr.name else 0
        fr.layout.xaxis = dict(range=ranges[ci], autorange=False)
    for menu in fig.layout.updatemenus:
        for ci, button in enumerate(menu.buttons):
            args = list(button.args)
            args[1] = {**args[1], "xaxis.range": ranges[ci], "xaxis.autorange": False}
            button.args = args


def kv_per_sequence_figure(models=("Llama-3-8B", "Mistral-7B", "Llama-3-70B", "Llama-3.1-405B", "DeepSeek-V3"), kv_dtypes=("bf16", "fp8"),
                           contexts=None) -> go.Figure:
    """Static KV cache of ONE sequence per model: the dropdown sets the cache's dtype, the slider
    the context length. Mistral's sliding window caps its cache; DeepSeek-V3's latent cache is
    small for its size."""
    contexts = _check.integers_list("contexts", contexts if contexts is not None else (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
                                    minimum=0, maximum=transformer.MAX_COUNT)
    ms = [llms.get_model(m) for m in models]
    dts = [_check.choice("kv_dtypes", d, transformer.STORAGE_DTYPES) for d in kv_dtypes]
    top = max(m.kv_bytes_per_sequence(max(contexts), d) for m in ms for d in dts) / GiB

    def frame(dt, c):
        sizes = [m.kv_bytes_per_sequence(c, dt) for m in ms]
        bar = go.Bar(
            x=[m.name for m in ms], y=[v / GiB for v in sizes], marker_color=[series_color(i) for i in range(len(ms))],
            text=[fmt_bytes(v) for v in sizes], textposition="outside", hovertemplate="%{x}: %{text}<extra></extra>",
        )
        big = max(range(len(ms)), key=lambda i: sizes[i])
        small = min(range(len(ms)), key=lambda i: sizes[i])
        readout = f"largest {ms[big].name} {fmt_bytes(sizes[big])}, smallest {ms[small].name} {fmt_bytes(sizes[small])}"
        return [bar], f"KV cache of one {_ctx_label(c)}-token sequence ({dt})", readout

    return grid_figure(
        slider=("context [tokens]", contexts, _ctx_label), choices=("KV cache dtype", dts, str), frame=frame,
        layout=dict(yaxis=dict(title="KV cache of one sequence [GiB]", range=[0, top * 1.2])),
        active=(0, contexts.index(32768) if 32768 in contexts else 0), height=440,
    )


def memory_calculator():
    """Live memory budget: a preset or custom model, dtypes, context, batch, GPU and tensor
    parallelism -> bytes, fits or not, the most sequences that fit."""
    import ipywidgets as w

    controls = {
        "model": w.Dropdown(options=list(llms.PRESETS) + [CUSTOM], value="Llama-3-8B", description="model"),
        "gpu": w.Dropdown(options=[g for g in gpu_names()], value="H200-SXM", description="GPU"),
        "tp": w.Dropdown(options=[1, 2, 4, 8], value=1, description="GPUs (TP)"),
        "weight_dtype": w.Dropdown(options=DTYPES, value="bf16", description="weights"),
        "kv_dtype": w.Dropdown(options=DTYPES, value="bf16", description="KV cache"),
        "context_tokens": w.BoundedIntText(value=8192, min=1, max=2_000_000, description="context"),
        "batch": w.BoundedIntText(value=64, min=0, max=100_000, description="batch"),
        **_custom_controls(w),
    }

    def compute(model, gpu, tp, weight_dtype, kv_dtype, context_tokens, batch, **custom):
        m = resolve_model(model, **custom)
        return m, context_tokens, kv_dtype, sv.memory_budget(m, gpu, context_tokens, batch, weight_dtype, kv_dtype, tp)

    def show(result):
        m, ctx, kv_dtype, b = result
        rows = [
            ("KV cache per token", fmt_bytes(m.kv_bytes_per_token(kv_dtype))),
            ("KV cache per sequence (per GPU)", fmt_bytes(b.kv_bytes_per_seq)),
            ("weights (per GPU)", fmt_bytes(b.weight_bytes)),
            ("activations, runtime reserve", f"{fmt_bytes(b.activation_bytes)}, {fmt_bytes(b.overhead_bytes)}"),
            ("KV cache of the batch", fmt_bytes(b.kv_bytes)),
            ("GPU memory (usable, as the device reports it)", fmt_bytes(b.hbm_bytes)),
            ("fits?", "yes" if b.fits else f"no: {fmt_bytes(-b.free_bytes)} short"),
            ("max concurrent sequences", _fmt_int(b.max_concurrent_seqs)),
        ]
        fig = go.Figure(_memory_traces(b))
        set_layout(fig, **_memory_layout(b.hbm_bytes / GiB, b.used_bytes / GiB))
        head, tail = memory_summary(b, ctx).split("<br>")
        return table_html(rows), style_figure(
            fig,
            title=f"{b.model}, {b.batch} x {_ctx_label(ctx)} tokens",
            readout=f"{head.split(': ', 1)[1]}; {tail}",
            height=380,
        )

    box = live_form(compute, controls, show, title="KV cache and memory budget")
    _show_custom_only_when_chosen(controls)  # after live_form has laid the fields out
    return box


# --------------------------------------------------------------------------------------------
# 2. Latency: TTFT, TPOT, tokens/s, and decode on the roofline
# --------------------------------------------------------------------------------------------
LATENCY_BATCHES = (1, 8, 32, 128, 1024)  # few slider values: the dropdown holds every catalog GPU


def _latency_readout(r: sv.Latency) -> str:
    s = r.step
    line = (f"TTFT {fmt_time(r.ttft_s)}, TPOT {fmt_time(r.tpot_s)}, {_fmt_int(r.tokens_per_s)} tokens/s; "
            f"matmuls {s.bound}-bound, attention {s.attention_bound}-bound")
    return line + (f"<br>{r.compute_note}" if r.compute_note else "")


def _compute_row(dtype: str, note: str) -> tuple:
    """The table row that says which format's peak the arithmetic was counted at, and why when it
    is not the weights' (e.g. fp16 on a T4, which has no bf16 tensor cores)."""
    return ("computed in", dtype + (f" ({note.rsplit('; computed in', 1)[0]})" if note else " (the format of the weights)"))


def _latency_curves(model, gpu, prompt_tokens, output_tokens, weight_dtype, kv_dtype, tp, grid) -> list:
    ctx = prompt_tokens + output_tokens // 2
    steps = [sv.decode_step(model, gpu, b, ctx, weight_dtype, kv_dtype, tp) for b in grid]
    ms = lambda xs: [x * 1e3 for x in xs]  # noqa: E731
    return [
        go.Scatter(
            x=list(grid),
            y=ms([s.memory_s for s in steps]),
            mode="lines",
            name="memory time (weights + KV)",
            line=dict(color=series_color(0), dash="dot"),
        ),
        go.Scatter(
            x=list(grid),
            y=ms([s.compute_s for s in steps]),
            mode="lines",
            name="compute time",
            line=dict(color=series_color(3), dash="dot"),
        ),
        go.Scatter(
            x=list(grid),
            y=ms([s.time_s for s in steps]),
            mode="lines",
            name="decode step (TPOT)",
            line=dict(color="#777777"),
        ),
    ]


def _latency_marker(r: sv.Latency) -> go.Scatter:
    return go.Scatter(
        x=[r.batch],
        y=[r.tpot_s * 1e3],
        mode="markers",
        marker=dict(size=13, color=series_color(1), line=dict(color="#444444", width=1)),
        name="this batch",
        hovertemplate="batch %{x}: %{y:.3g} ms per step<extra></extra>",
    )


# (model, GPU, weight dtype, tensor parallelism) the static latency calculator offers: the H200
# scenarios, then Llama-3-8B in bf16 on every other catalog GPU (a T4, without bf16 tensor cores,
# computes in fp16 and says so; one the model cannot answer says why)
LATENCY_CHOICES = (("Llama-3-8B", "H200-SXM", "bf16", 1), ("Llama-3-8B", "H100-SXM", "bf16", 1), ("Llama-3-8B", "L4", "bf16", 1),
                   ("Llama-3-70B", "H200-SXM", "fp8", 1), ("Llama-3-70B", "H200-SXM", "bf16", 4), ("DeepSeek-V3", "H200-SXM", "fp8", 8),
                   *(("Llama-3-8B", g, "bf16", 1) for g in gpu_names() if g not in ("H200-SXM", "H100-SXM", "L4")))


def _latency_unavailable(reason: str) -> list:
    """The latency figure's traces, empty, for a choice the model cannot answer (``reason`` is the
    readout): every frame holds the same traces."""
    names = ("memory time (weights + KV)", "compute time", "decode step (TPOT)", "this batch")
    return [go.Scatter(x=[], y=[], mode="lines", name=n, showlegend=False, hoverinfo="skip") for n in names]


def latency_figure(choices=LATENCY_CHOICES, prompt_tokens: int = 1024, output_tokens: int = 256,
                   batches=LATENCY_BATCHES, kv_dtype: str = "bf16") -> go.Figure:
    """Static latency model: decode step time against batch (memory and compute bounds) for
    each (model, GPU, weight dtype, tp) of the dropdown; the slider moves along the batch and
    the readout gives TTFT, TPOT and tokens/s."""
    batches = _check.integers_list("batches", batches, minimum=1, maximum=transformer.MAX_COUNT)
    grid = np.unique(np.round(np.logspace(0, math.log10(max(batches)), 40))).astype(int).tolist()
    choices = [tuple(c) for c in choices]
    curves, res, why = {}, {}, {}
    for c in choices:
        try:
            curves[c] = _latency_curves(c[0], c[1], prompt_tokens, output_tokens, c[2], kv_dtype, c[3], grid)
            res.update({(c, b): sv.latency(c[0], c[1], b, prompt_tokens, output_tokens, c[2], kv_dtype, c[3]) for b in batches})
        except ValueError as exc:  # a choice the model cannot answer (e.g. tp > 1 without a link): the frame says why
            why[c] = get_gpu(c[1]).why_no_peak(c[2]) or str(exc)

    def frame(c, b):
        if c in why:
            return _latency_unavailable(why[c]), f"{c[0]} on {c[3]} x {c[1]}: not modelled", why[c]
        r = res[c, b]
        return curves[c] + [_latency_marker(r)], f"{c[0]} on {c[3]} x {c[1]}, batch {b}", _latency_readout(r)  # the readout says a fallback

    return grid_figure(
        slider=("batch", batches, str),
        choices=("model, GPU, weights", choices, lambda c: f"{c[0]} {c[2]}, {c[3]} x {c[1]}"),
        frame=frame, active=(0, batches.index(32) if 32 in batches else 0),
        layout=dict(xaxis=dict(type="log", title="batch [sequences]"), yaxis=dict(type="log", title="time per decode step [ms]")),
    )


def latency_calculator():
    """Live latency model: model, GPU, batch, prompt and output lengths -> TTFT, TPOT, tokens/s
    and where decode sits on the roofline."""
    import ipywidgets as w

    controls = {
        "model": w.Dropdown(options=list(llms.PRESETS) + [CUSTOM], value="Llama-3-8B", description="model"),
        "gpu": w.Dropdown(options=list(SERVING_GPUS), value="H200-SXM", description="GPU"),
        "tp": w.Dropdown(options=[1, 2, 4, 8], value=1, description="GPUs (TP)"),
        "batch": w.BoundedIntText(value=32, min=1, max=100_000, description="batch"),
        "prompt_tokens": w.BoundedIntText(value=1024, min=1, max=1_000_000, description="prompt"),
        "output_tokens": w.BoundedIntText(value=256, min=1, max=1_000_000, description="output"),
        "weight_dtype": w.Dropdown(options=DTYPES, value="bf16", description="weights"),
        "kv_dtype": w.Dropdown(options=DTYPES, value="bf16", description="KV cache"),
        **_custom_controls(w),
    }

    def compute(model, gpu, tp, batch, prompt_tokens, output_tokens, weight_dtype, kv_dtype, **custom):
        m = resolve_model(model, **custom)
        r = sv.latency(m, gpu, batch, prompt_tokens, output_tokens, weight_dtype, kv_dtype, tp)
        # the same question the memory form answers, at the longest context this batch reaches
        budget = sv.memory_budget(m, gpu, prompt_tokens + output_tokens, batch, weight_dtype, kv_dtype, tp)
        return m, gpu, tp, weight_dtype, kv_dtype, r, budget

    def show(result):
        m, gpu, tp, wd, kd, r, budget = result
        s = r.step
        short = "" if budget.fits else f"{fmt_bytes(-budget.free_bytes)} short"
        rows = [
            ("fits in memory?", "yes" if budget.fits else
             f"NO: {short} (weights, KV cache, activations, reserve); the times below are for memory it does not have"),
            ("TTFT (prefill, no queue)", fmt_time(r.ttft_s)),
            ("TPOT (one decode step)", fmt_time(r.tpot_s)),
            ("end-to-end latency", fmt_time(r.e2e_s)),
            ("output tokens/s (batch)", _fmt_int(r.tokens_per_s)),
            ("tokens/s per sequence", f"{1 / r.tpot_s:,.1f}"),
            ("step reads", f"{fmt_bytes(s.weight_bytes)} weights + {fmt_bytes(s.kv_bytes)} KV"),
            ("step computes", fmt_flop(s.flop)),
            ("bound", f"matmuls {s.bound}-bound, attention {s.attention_bound}-bound ({s.attention_intensity:.3g} FLOP/B)"),
            ("turns compute-bound at batch", "never (KV cache grows as fast)" if math.isinf(s.ridge_batch) else f"{s.ridge_batch:.0f}"),
            _compute_row(r.compute_dtype, r.compute_note),
        ]
        grid = np.unique(np.round(np.logspace(0, 3, 40))).astype(int).tolist()
        fig = go.Figure(_latency_curves(m, gpu, r.prompt_tokens, r.output_tokens, wd, kd, tp, grid) + [_latency_marker(r)])
        set_layout(fig, xaxis=dict(type="log", title="batch [sequences]"), yaxis=dict(type="log", title="time per decode step [ms]"))
        readout = _latency_readout(r)
        if not budget.fits:  # reader review r6 #12: "836 ms TTFT on one H200" for a model that cannot be loaded on it
            readout = f"does NOT fit in memory ({short}): times as if it did<br>{readout}"
        return table_html(rows), style_figure(fig, title=f"{m.name} on {tp} x {gpu}, batch {r.batch:g}", readout=readout)

    box = live_form(compute, controls, show, title="Latency model")
    _show_custom_only_when_chosen(controls)  # after live_form has laid the fields out
    return box


# --------------------------------------------------------------------------------------------
# 3. Capacity planner
# --------------------------------------------------------------------------------------------
TPOT_TARGETS_MS = (10, 15, 20, 30, 50, 100)
RATES = tuple(float(r) for r in np.round(np.logspace(0, 4, 25), 3))


def capacity_summary(p: sv.CapacityPlan, rate: float, target_s: float) -> str:
    if not p.feasible:
        return f"{rate:g} requests/s at TPOT <= {target_s * 1e3:g} ms: infeasible ({p.reason})"
    return (
        f"{rate:g} requests/s at TPOT <= {target_s * 1e3:g} ms: {plural(p.gpus, 'GPU')}, batch {p.batch:.1f} per replica,"
        f"<br>{_fmt_usd(p.cost_per_million_output_tokens)} per million output tokens"
    )


def _capacity_frame(model, gpu, target_ms, prompt_tokens, output_tokens, price, tp, rates, rate, weight_dtype="bf16"):
    target = target_ms / 1e3
    rates = sorted(set(rates) | {rate})  # the marker's rate is one of the curve's points
    plans = [sv.plan_capacity(model, gpu, r, prompt_tokens, output_tokens, target, price, tp, weight_dtype) for r in rates]
    ok = [p.feasible for p in plans]
    cost = [p.cost_per_million_output_tokens if f else None for p, f in zip(plans, ok)]
    extra = [[p.gpus, p.batch] if f else [None, None] for p, f in zip(plans, ok)]
    here = plans[rates.index(rate)]  # the marker's plan is one of the curve's
    floor = min((c for c in cost if c is not None), default=None)
    traces = [
        go.Scatter(x=list(rates), y=cost, mode="lines+markers", name="cost per million output tokens", customdata=extra,
                   hovertemplate="%{x:.3g} requests/s: %{y:.3g} USD per M tokens, %{customdata[0]} GPUs, batch %{customdata[1]:.1f}<extra></extra>",
                   line=dict(color=series_color(0))),
        go.Scatter(x=[rate], y=[here.cost_per_million_output_tokens if here.feasible else None], mode="markers",
                   marker=dict(size=13, color=series_color(1), line=dict(color="#444444", width=1)), name=f"{rate:g} requests/s"),
    ]
    if here.feasible:
        reps = f" ({plural(here.replicas, 'replica')})" if here.replicas > 1 else ""
        readout = (f"TPOT <= {target_ms:g} ms, {rate:g} req/s: {plural(here.gpus, 'GPU')}{reps}, "
                   f"batch {here.batch:.0f}, "
                   f"{_fmt_usd(here.cost_per_million_output_tokens)}/M tokens")
        if floor is not None:
            readout += f"; floor {_fmt_usd(floor)}/M tokens"
    else:
        readout = f"TPOT <= {target_ms:g} ms, {rate:g} req/s: infeasible ({here.reason.split(':')[0]})"
    return traces, f"{model}, {prompt_tokens}-token prompts" + (f", in {here.compute_dtype}" if here.compute_note else ""), readout


# (model, GPU, prompt tokens, weight dtype, tp) the static capacity planner offers; the T4 holds
# Llama-3-8B only in int4 (bf16 weights fill its 15 GiB) and computes in fp16 (its title says so)
CAPACITY_CHOICES = (("Llama-3-8B", "H200-SXM", 1024, "bf16", 1), ("Llama-3-8B", "H200-SXM", 8192, "bf16", 1),
                    ("Llama-3-8B", "H100-SXM", 1024, "bf16", 1), ("Llama-3-70B", "H200-SXM", 1024, "fp8", 1),
                    ("Llama-3-8B", "T4", 1024, "int4", 1),
                    *(("Llama-3-8B", g, 1024, "bf16", 1) for g in gpu_names() if g not in ("H200-SXM", "H100-SXM", "T4")))
# 4 rates per decade and 5 TPOT targets: every catalog GPU is a choice and each frame plans every
# rate, so choices x targets x rates is the build's cost (kept at what 5 choices x 6 x 41 cost before)
CAPACITY_RATES = tuple(float(r) for r in np.round(np.logspace(0, 4, 17), 3))
CAPACITY_TARGETS_MS = (10, 20, 30, 50, 100)


def _capacity_label(c) -> str:
    """A dropdown label short enough for a phone: ``Llama-3-8B bf16, H200, 1k`` (the prompt's length last)."""
    tp = f" TP{c[4]}" if c[4] > 1 else ""
    return f"{c[0]} {c[3]}, {c[1].replace('-SXM', '')}{tp}, {_ctx_label(c[2])}"


def capacity_figure(choices=CAPACITY_CHOICES, output_tokens: int = 256, gpu_hour_price: float = 3.0, rate: float = 20.0,
                    targets_ms=CAPACITY_TARGETS_MS, rates=CAPACITY_RATES) -> go.Figure:
    """Static capacity planner: the dropdown picks (model, GPU, prompt length, weight dtype, tp),
    the slider the TPOT target; the curve is the cost per million output tokens against the
    request rate (GPUs and batch in the hover), the readout the plan at ``rate`` requests/s and
    the cheapest cost over the rates."""
    targets = _check.numbers_list("targets_ms", targets_ms, check=_check.positive)
    r = _check.positive("rate", rate)
    rates = _check.numbers_list("rates", rates, check=_check.positive)
    choices = [tuple(c) for c in choices]
    return grid_figure(
        slider=("TPOT target [ms]", targets, lambda t: f"{t:g}"),
        choices=("model, GPU, prompt", choices, _capacity_label),
        frame=lambda c, t: _capacity_frame(c[0], c[1], t, c[2], output_tokens, gpu_hour_price, c[4], rates, r, c[3]),
        layout=dict(xaxis=dict(type="log", title="request rate [requests/s]"), yaxis=dict(type="log", title="USD per million output tokens")),
        active=(0, targets.index(50.0) if 50.0 in targets else 0),
    )


def capacity_calculator():
    """Live capacity planner: request rate, prompt and output lengths, TPOT target, GPU and its
    hourly price -> GPUs needed, achieved batch, cost per million tokens."""
    import ipywidgets as w

    controls = {
        "model": w.Dropdown(options=list(llms.PRESETS), value="Llama-3-8B", description="model"),
        "gpu": w.Dropdown(options=list(SERVING_GPUS), value="H200-SXM", description="GPU"),
        "tp": w.Dropdown(options=[1, 2, 4, 8], value=1, description="TP per replica"),
        "arrival_rate_per_s": w.BoundedFloatText(value=20.0, min=0.001, max=1e6, description="requests/s"),
        "prompt_tokens": w.BoundedIntText(value=1024, min=1, max=1_000_000, description="prompt"),
        "output_tokens": w.BoundedIntText(value=256, min=1, max=1_000_000, description="output"),
        "tpot_target_ms": w.BoundedFloatText(value=50.0, min=0.1, max=10_000, description="TPOT <= [ms]"),
        "gpu_hour_price": w.BoundedFloatText(value=3.0, min=0.0, max=1000, description="USD/GPU-hour"),
        "weight_dtype": w.Dropdown(options=DTYPES, value="bf16", description="weights"),
        "kv_dtype": w.Dropdown(options=DTYPES, value="bf16", description="KV cache"),
    }

    def compute(model, gpu, tp, arrival_rate_per_s, prompt_tokens, output_tokens, tpot_target_ms, gpu_hour_price, weight_dtype, kv_dtype):
        target = float(tpot_target_ms) / 1e3
        plan = sv.plan_capacity(model, gpu, arrival_rate_per_s, prompt_tokens, output_tokens, target, gpu_hour_price, tp, weight_dtype, kv_dtype)
        return plan, arrival_rate_per_s, target

    def show(result):
        p, rate, target = result
        if not p.feasible:
            note = f" ({p.compute_note})" if p.compute_note else ""
            return f"<p><b>Infeasible:</b> {p.reason}</p><p>Computed in {p.compute_dtype}{note}.</p>"
        rows = [
            ("GPUs", f"{p.gpus} ({p.replicas} replica(s) of {p.gpus // p.replicas})"),
            ("batch per replica (Little's law)", f"{p.batch:.1f}"),
            ("largest batch: memory / latency target", f"{p.max_batch_memory} / {p.max_batch_latency:.1f}"),
            ("TPOT achieved", fmt_time(p.tpot_s)),
            ("TTFT (prefill alone, no queueing)", fmt_time(p.ttft_s)),
            ("TTFT of a chunked prompt (no queueing)", f"{fmt_time(p.ttft_chunked_s)} ({plural(p.prefill_steps, 'step')})"),
            ("end-to-end latency (prefill alone + decode)", fmt_time(p.e2e_s)),
            ("utilization of the replicas", f"{p.utilization:.0%} (at most {p.max_utilization:.0%})"),
            ("output tokens/s", _fmt_int(p.output_tokens_per_s)),
            ("per million output tokens", _fmt_usd(p.cost_per_million_output_tokens)),
            ("per million tokens (in + out)", _fmt_usd(p.cost_per_million_tokens)),
            _compute_row(p.compute_dtype, p.compute_note),
        ]
        return table_html(rows), f"<p>{capacity_summary(p, rate, target).replace('<br>', ' ')}</p>"

    return live_form(compute, controls, show, title="Capacity planner")


# --------------------------------------------------------------------------------------------
# Tables and plots of the chapter (data in, figures out)
# --------------------------------------------------------------------------------------------
def presets_table() -> str:
    """The presets with their KV cache per token in bf16 (HTML)."""
    head = [
        "model",
        "layers",
        "hidden",
        "heads / KV heads",
        "head dim",
        "attention",
        "parameters (active)",
        "KV per token (bf16)",
        "weights read per token at batch 1 (bf16)",
    ]
    rows = []
    for m in llms.PRESETS.values():
        att = m.attention.upper() + (f", window {m.sliding_window}" if m.sliding_window else "")
        if m.attention == "mla":
            att += f" (rank {m.kv_lora_rank} + RoPE {m.rope_head_dim})"
        params = f"{m.params / 1e9:.3g}B" + (f" ({m.active_params / 1e9:.3g}B)" if m.active_params != m.params else "")
        rows.append([m.name, m.layers, m.hidden_size, f"{m.heads} / {m.kv_heads}", m.head_dim, att, params,
                     fmt_bytes(m.kv_bytes_per_token(2)), f"{transformer.weight_bytes(m.step_params(1), 2) / 1e9:.3g} GB"])
    return html_table(head, rows)


def sweep_plot(x, series: dict, *, x_title: str, y_title: str = "time [ms]", log_x: bool = True, log_y: bool = True, scale: float = 1e3,
               title: str = "", spread: dict | None = None) -> go.Figure:
    """Lines of ``series`` (label -> y values, or (x, y) pairs) against ``x``; measured series are
    drawn with markers, model series (labels starting with "model") dashed. ``spread`` maps a
    label to ``(min values, max values)`` of the repeats: drawn as error bars around the median."""
    fig = go.Figure()
    spread = spread or {}
    for i, (label, ys) in enumerate(series.items()):
        color = series_color(i)
        xs, ys = (ys if isinstance(ys, tuple) else (x, ys))
        model_line = label.lower().startswith("model")
        err = None
        if label in spread and spread[label][0] and spread[label][1]:
            lo, hi = spread[label]
            err = dict(type="data", symmetric=False, array=[(h - m) * scale for h, m in zip(hi, ys)],
                       arrayminus=[(m - lo_) * scale for lo_, m in zip(lo, ys)], thickness=1.5, width=4)
        fig.add_trace(go.Scatter(
            x=list(xs), y=[None if v is None else v * scale for v in ys], name=label, line=dict(color=color, dash="dash" if model_line else "solid"),
            mode="lines" if model_line else "lines+markers", error_y=err,
        ))
    set_layout(fig, xaxis=dict(type="log" if log_x else "linear", title=x_title), yaxis=dict(type="log" if log_y else "linear", title=y_title))
    return style_figure(fig, title=title or None, height=420)


def ratio_plot(x, series: dict, *, x_title: str, title: str = "") -> go.Figure:
    """Measured/predicted ratios against ``x``, with the +-25% band shaded."""
    fig = go.Figure()
    for i, (label, ys) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=list(x), y=list(ys), name=label, mode="lines+markers", line=dict(color=series_color(i))))
    fig.add_hrect(y0=0.75, y1=1.25, fillcolor="green", opacity=0.08, line_width=0)
    fig.add_hline(y=1.0, line_dash="dot")
    set_layout(fig, xaxis=dict(type="log", title=x_title), yaxis=dict(title="measured / model", rangemode="tozero"))
    return style_figure(fig, title=title or None, height=380)


def kv_memory_table(kv: dict) -> str:
    """Allocator against formula for each KV layout of a ``measure_kv_memory`` record (HTML)."""
    head = ["layout", "formula", "allocator", "measured / formula"]
    rows = [
        [
            v["name"],
            fmt_bytes(v["formula_bytes"]),
            fmt_bytes(v["measured_bytes"]),
            f"{v['measured_bytes'] / v['formula_bytes']:.4f}",
        ]
        for v in kv["variants"]
    ]
    from .. import book

    return book.table(rows, head, stack=True)  # a row per layout, read on its own: cards on a phone


def paged_kv_table(paged: dict) -> str:
    """A paged KV cache filled by ``measure_paged_kv``: model against what was measured (HTML)."""
    from .. import book

    bt = paged["block_tokens"]
    blocks_model = sv.paged_kv_blocks(list(paged["lengths"]), bt)
    pool_model = sv.paged_kv_cache_bytes(paged["kv_bytes_per_token"], paged["num_blocks"] * bt, bt)
    rows = [
        (
            "pool of {:,} blocks of {} tokens".format(paged["num_blocks"], bt),
            fmt_bytes(pool_model),
            fmt_bytes(paged["pool_measured_bytes"]),
            f"{paged['pool_measured_bytes'] / pool_model:.4f}",
        ),
        (
            f"blocks taken by {paged['batch']} sequences",
            _fmt_int(blocks_model),
            _fmt_int(paged["blocks_used"]),
            f"{paged['blocks_used'] / blocks_model:.4f}",
        ),
        (
            "bytes those blocks hold",
            fmt_bytes(paged["exact_bytes"]) + " of tokens",
            fmt_bytes(paged["used_bytes"]),
            f"{paged['used_bytes'] / paged['exact_bytes']:.4f}",
        ),
        (
            "a dense cache sized for the longest",
            fmt_bytes(paged["dense_max_bytes"]),
            "",
            f"{paged['dense_max_bytes'] / paged['exact_bytes']:.4f}",
        ),
    ]
    # read a row at a time, like a comparison table: cards on a phone (widgets.book.table)
    return book.table(rows, ["quantity", "model", "measured", "ratio"], caption=paged["method"], stack=True)


def nvml_phrase(n) -> str:
    """What NVML read during a timing (``NvmlSampler.summary()``), as a phrase."""
    if not n or n.get("sm_clock_mhz_median") is None:
        return "no clock or power reading" + (f" ({n['reason']})" if n and n.get("reason") else "")
    return (f"SM clock {n['sm_clock_mhz_median']:,.0f} MHz (min {n['sm_clock_mhz_min']:,.0f}), "
            f"power {n['power_w_median']:,.0f} W (max {n['power_w_max']:,.0f})")


def ceilings_line(c: dict) -> str:
    """One line for a ``measure_ceilings`` record: medians, the spread of the repeats and NVML's
    readings where the record has them."""
    line = f"{c['device']}: copy {fmt_bytes_per_s(c['copy_bytes_per_s'])}, {c['dtype']} GEMM {c['gemm_flop_per_s'] / 1e12:.3g} TFLOP/s (medians)"
    if c.get("copy_bytes_per_s_min") is not None:
        line += (f"; repeats spread copy {fmt_bytes_per_s(c['copy_bytes_per_s_min'])} to {fmt_bytes_per_s(c['copy_bytes_per_s_max'])}, "
                 f"GEMM {c['gemm_flop_per_s_min'] / 1e12:.3g} to {c['gemm_flop_per_s_max'] / 1e12:.3g} TFLOP/s; "
                 f"during the GEMM: {nvml_phrase(c.get('gemm_nvml'))}")
    return line


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def check_kv_cache_gib(answer) -> bool:
    """Exercise: the KV cache of ONE Llama-3-70B sequence of 32768 tokens with an fp8 cache, in GiB."""
    want = llms.LLAMA_3_70B.kv_bytes_per_sequence(32768, "fp8") / GiB
    if _close(answer, want, 0.01):
        return _verdict(True, f"{want:g} GiB: 2 x 80 layers x 8 KV heads x 128 x 1 B = 160 KiB per token, x 32768 tokens")
    if _close(answer, 2 * want, 0.01):
        return _verdict(False, "that is the bf16 cache: fp8 stores 1 byte per element")
    if _close(answer, want / 2, 0.01):
        return _verdict(False, "count both keys and values")
    if _close(answer, want * 8, 0.01):
        return _verdict(False, "Llama-3-70B has 8 KV heads, not 64: grouped-query attention")
    return _verdict(False, f"{answer!r} GiB is off; count 2 (K and V) x layers x KV heads x head_dim x bytes per token")


def check_ridge_batch(answer) -> bool:
    """Exercise: the batch at which Llama-3-8B decode in bf16 on an H100 turns compute-bound,
    ignoring the KV cache (a context of 0 tokens)."""
    s = sv.decode_step("Llama-3-8B", "H100-SXM", 1, 0)
    want = s.ridge_batch
    if _close(answer, want, 0.03):
        return _verdict(
            True,
            f"about {want:.0f}: peak / bandwidth = {get_gpu('H100-SXM').peak('bf16') / get_gpu('H100-SXM').hbm_bytes_per_s:.0f} FLOP/B, "
            "and bf16 weights bring 2 FLOP per 2 bytes",
        )
    if _close(answer, want * 2, 0.05):
        return _verdict(False, "each weight is 2 bytes and does 2 FLOP per sequence: the ratio is 1 FLOP per byte per sequence")
    return _verdict(False, f"{answer!r} is off; solve weight_bytes / bandwidth = batch x 2 x params / peak")


def check_kv_formula(fn, trials: int = 200, seed: int = 0) -> bool:
    """Check a reader's ``fn(layers, kv_heads, head_dim, context_tokens, batch, bytes_per_elem) ->
    bytes`` against the model on random configurations."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        args = (int(rng.integers(1, 128)), int(rng.integers(1, 64)), int(rng.choice([64, 96, 128, 256])),
                int(rng.integers(1, 200_000)), int(rng.integers(1, 256)), float(rng.choice([0.5, 1, 2, 4])))
        want = transformer.kv_cache_bytes(transformer.kv_cache_bytes_per_token(*args[:3], args[5]), args[3], args[4])
        try:
            got = fn(*args)
        except Exception as exc:  # a reader's bug: report it, don't crash the notebook
            return _verdict(False, f"your function raised {exc!r} for {args}")
        if not _close(got, want, 1e-9):
            return _verdict(False, f"for (layers, kv_heads, head_dim, context, batch, bytes) = {args}: expected {want:.6g} B, got {got!r}")
    return _verdict(True, f"{trials} random configurations match 2 x layers x kv_heads x head_dim x context x batch x bytes")


def check_gpus_needed(answer, rate: float = 50.0, tpot_target_s: float = 0.03) -> bool:
    """Exercise: GPUs to serve ``rate`` requests/s of 1024 prompt + 256 output tokens of Llama-3-8B
    on H200s at a TPOT target, with the capacity planner's model."""
    p = sv.plan_capacity("Llama-3-8B", "H200-SXM", rate, 1024, 256, tpot_target_s, 3.0)
    if not isinstance(answer, (int, np.integer)) or isinstance(answer, bool):
        return _verdict(False, f"give a whole number of GPUs, got {answer!r}")
    if answer == p.gpus:
        return _verdict(True, f"{plural(p.gpus, 'GPU')}, each running about {p.batch:.0f} sequences")
    return _verdict(False, f"{plural(answer, 'GPU')} is {'too many' if answer > p.gpus else 'too few'}; use plan_capacity or the planner")


# --------------------------------------------------------------------------------------------
# Depth: speculative decoding, the latency-throughput frontier, paged KV waste
# --------------------------------------------------------------------------------------------
SPEC_DRAFT_COSTS = (0.02, 0.05, 0.1, 0.2, 0.4)
SPEC_ACCEPTANCE = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
SPEC_MAX_K = 16


def speculative_readout(a: float, c: float, v: float = 1.0, max_k: int = SPEC_MAX_K) -> str:
    """The best draft length and its speed-up, and the expected tokens per step there."""
    k, s = sv.speculative_best_draft_tokens(a, c, v, max_k)
    if k == 0:
        return (f"a = {a:g}, c = {c:g}, v = {v:g}: no draft length beats plain decoding (1.00x; it takes a > c at v = 1, "
                f"more when v > 1); decode plainly")
    e = sv.speculative_expected_tokens(a, k)
    out = f"a = {a:g}, c = {c:g}: best k = {k}, {e:.2f} tokens per target pass, speed-up {s:.2f}x"
    if k == max_k:
        out += (f" (k = {max_k} is the search limit, not an optimum: with v fixed for every k nothing stops longer "
                f"drafts; in a server v grows with k once the batch times k + 1 tokens nears the ridge)")
    return out


def _speculative_frame(c: float, a: float, v: float, max_k: int):
    ks = list(range(0, max_k + 1))
    ss = [sv.speculative_speedup(a, k, c, v) for k in ks]
    kb, sb = sv.speculative_best_draft_tokens(a, c, v, max_k)
    traces = [
        go.Scatter(x=ks, y=ss, mode="lines+markers", name="speed-up", line=dict(color=series_color(0)),
                   hovertemplate="k = %{x}: %{y:.2f}x<extra></extra>"),
        go.Scatter(x=[0, max_k], y=[1.0, 1.0], mode="lines", name="plain decoding", line=dict(color="#888888", dash="dot"),
                   hoverinfo="skip"),
        go.Scatter(x=[kb], y=[sb], mode="markers", name="best k", marker=dict(size=13, color=series_color(1), line=dict(color="#444444", width=1)),
                   hovertemplate="best k = %{x}: %{y:.2f}x<extra></extra>"),
    ]
    return traces, f"speculative decoding, draft cost c = {c:g}", speculative_readout(a, c, v, max_k)


def speculative_figure(draft_costs=SPEC_DRAFT_COSTS, acceptance_rates=SPEC_ACCEPTANCE, verify_cost_ratio: float = 1.0,
                       max_draft_tokens: int = SPEC_MAX_K) -> go.Figure:
    """Static speculative-decoding calculator: the dropdown picks the draft's cost ratio ``c``, the
    slider the acceptance rate ``a``; the curve is the speed-up against the draft length ``k``
    (:func:`widgets.models.serving.speculative_speedup`), the marker the best ``k``."""
    cs = _check.numbers_list("draft_costs", draft_costs, check=_check.non_negative)
    aa = _check.numbers_list("acceptance_rates", acceptance_rates, check=_check.fraction)
    v = _check.positive("verify_cost_ratio", verify_cost_ratio)
    kmax = _check.integer("max_draft_tokens", max_draft_tokens, minimum=1, maximum=sv.MAX_DRAFT_TOKENS)
    top = max(sv.speculative_best_draft_tokens(a, min(cs), v, kmax)[1] for a in aa)
    return grid_figure(
        slider=("acceptance rate a", aa, lambda a: f"{a:g}"),
        choices=("draft cost c", cs, lambda c: f"draft step = {c:g} x target step"),
        frame=lambda c, a: _speculative_frame(c, a, v, kmax),
        layout=dict(xaxis=dict(title="draft tokens per step k", range=[-0.5, kmax + 0.5]),
                    yaxis=dict(title="speed-up over plain decoding [x]", range=[0, top * 1.08])),
        active=(cs.index(0.05) if 0.05 in cs else 0, aa.index(0.8) if 0.8 in aa else 0), height=440,
    )


def speculative_calculator():
    """Live speculative-decoding calculator: acceptance rate, draft cost ratio, verification cost
    ratio -> speed-up against draft length and the best draft length."""
    import ipywidgets as w

    controls = {
        "a": w.FloatSlider(value=0.8, min=0.0, max=0.99, step=0.01, description="acceptance a"),
        "c": w.FloatSlider(value=0.05, min=0.0, max=1.0, step=0.01, description="draft cost c"),
        "v": w.FloatSlider(value=1.0, min=1.0, max=3.0, step=0.05, description="verify cost v"),
    }

    def compute(a, c, v):
        return a, c, v, sv.speculative_best_draft_tokens(a, c, v, SPEC_MAX_K)

    def show(result):
        a, c, v, (k, s) = result
        traces, title, readout = _speculative_frame(c, a, v, SPEC_MAX_K)
        fig = go.Figure(traces)
        set_layout(fig, xaxis=dict(title="draft tokens per step k"), yaxis=dict(title="speed-up over plain decoding [x]", rangemode="tozero"))
        rows = [("best draft length k", str(k)), ("speed-up at that k", f"{s:.2f}x"),
                ("tokens per target pass", f"{sv.speculative_expected_tokens(a, k):.2f}")]
        return table_html(rows), style_figure(fig, title=title, readout=readout)

    return live_form(compute, controls, show, title="Speculative decoding")


# (model, GPU, weight dtype) the static frontier offers: Llama-3-8B on every catalog GPU (int4 on
# the T4, whose 15 GiB bf16 weights would fill), and Llama-3-70B in fp8 on an H200
FRONTIER_CHOICES = (("Llama-3-8B", "H200-SXM", "bf16"), ("Llama-3-70B", "H200-SXM", "fp8"),
                    *(("Llama-3-8B", g, "int4" if g == "T4" else "bf16") for g in gpu_names() if g != "H200-SXM"))
FRONTIER_CONTEXTS = (1024, 4096, 16384)
FRONTIER_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _frontier_frame(model, gpu, dtype, ctx, batches, tpot_target_s):
    try:
        pts = sv.decode_frontier(model, gpu, ctx, batches, dtype, dtype if dtype in ("bf16", "fp8") else "bf16")
    except ValueError as exc:
        pts, why = [], str(exc)
    else:
        why = "" if pts else f"{model} in {dtype} leaves no room for a {ctx:,}-token sequence on {gpu}"
    x = [p.total_tokens_per_s for p in pts]
    y = [p.user_tokens_per_s for p in pts]
    info = [[p.batch, p.step_s * 1e3, p.mbu * 100, p.mfu * 100] for p in pts]
    ok = [p for p in pts if p.step_s <= tpot_target_s and p.on_frontier]
    traces = [
        go.Scatter(x=x, y=y, mode="lines+markers+text", text=[str(p.batch) for p in pts], textposition="top right", name="batch",
                   customdata=info, line=dict(color=series_color(0)),
                   hovertemplate="batch %{customdata[0]}: %{customdata[1]:.3g} ms per step, %{y:.0f} tokens/s per user, "
                                 "%{x:.3g} tokens/s total; MBU %{customdata[2]:.0f}%, MFU %{customdata[3]:.0f}%<extra></extra>"),
        go.Scatter(x=[ok[-1].total_tokens_per_s] if ok else [], y=[ok[-1].user_tokens_per_s] if ok else [], mode="markers",
                   name=f"largest batch within TPOT {tpot_target_s * 1e3:g} ms",
                   marker=dict(size=14, color=series_color(1), line=dict(color="#444444", width=1))),
    ]
    if why:
        return traces, f"{model} ({dtype}) on {gpu}, {ctx:,}-token context", why
    best = ok[-1] if ok else None
    readout = (f"batch 1: {pts[0].user_tokens_per_s:.0f} tokens/s per user; batch {pts[-1].batch}: "
               f"{pts[-1].total_tokens_per_s:,.0f} tokens/s total at {pts[-1].user_tokens_per_s:.0f} per user")
    off = [p.batch for p in pts if not p.on_frontier]
    if off:
        readout += (f"<br>off the frontier (another batch is as fast per user and in total): batch "
                    f"{', '.join(str(b) for b in off)}")
    if best is not None:
        readout += f"<br>within TPOT {tpot_target_s * 1e3:g} ms: batch {best.batch}, {best.total_tokens_per_s:,.0f} tokens/s (MBU {best.mbu:.0%})"
    return traces, f"{model} ({dtype}) on {gpu}, {ctx:,}-token context", readout


def frontier_figure(choices=FRONTIER_CHOICES, contexts=FRONTIER_CONTEXTS, batches=FRONTIER_BATCHES, tpot_target_s: float = 0.05) -> go.Figure:
    """Static latency-throughput frontier: per-user against total decode tokens/s, one point per
    batch (:func:`widgets.models.serving.decode_frontier`); the dropdown picks (model, GPU, weights),
    the slider the context; the marker is the largest batch within a TPOT target."""
    ctxs = _check.integers_list("contexts", contexts, minimum=1, maximum=transformer.MAX_COUNT)
    bs = _check.integers_list("batches", batches, minimum=1, maximum=2**20, max_len=64)
    t = _check.positive("tpot_target_s", tpot_target_s)
    choices = [tuple(c) for c in choices]
    return grid_figure(
        slider=("context [tokens]", ctxs, lambda c: f"{c:,}"),
        choices=("model, GPU, weights", choices, lambda c: f"{c[0]} {c[2]}, {c[1]}"),
        frame=lambda c, ctx: _frontier_frame(c[0], c[1], c[2], ctx, bs, t),
        layout=dict(xaxis=dict(type="log", title="total tokens/s [1/s]"), yaxis=dict(type="log", title="tokens/s per user [1/s]")),
        height=480,
    )


KV_WASTE_CHOICES = ((2048, 16), (8192, 16), (32768, 16), (8192, 1), (8192, 128), (8192, 512))
KV_WASTE_MEAN_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


def _kv_waste_frame(max_tokens, block, frac, model, gpu):
    mean = max(1.0, frac * max_tokens)
    w = sv.kv_cache_waste(max_tokens, mean, block)
    cont = sv.memory_budget(model, gpu, max_tokens, 0).max_concurrent_seqs
    paged = sv.memory_budget(model, gpu, w.paged_context_tokens, 0).max_concurrent_seqs
    rows = ["contiguous (max length)", f"paged ({block}-token blocks)"]
    traces = [
        go.Bar(y=rows, x=[w.used_tokens, w.used_tokens], orientation="h", name="tokens held", marker_color="#ff7f0e",
               hovertemplate="%{x:,.0f} tokens held<extra></extra>"),
        go.Bar(y=rows, x=[w.contiguous_tokens - w.used_tokens, w.paged_tokens - w.used_tokens], orientation="h", name="reserved, unused",
               marker_color="#bbbbbb", hovertemplate="%{x:,.0f} slots wasted<extra></extra>"),
    ]
    readout = (f"waste {w.contiguous_waste:.0%} contiguous, {w.paged_waste:.1%} paged; "
               f"{model} on {gpu}: {plural(cont, 'sequence')} -> {plural(paged, 'sequence')}")
    if cont >= 1:
        # decode tokens/s at both batches, each sequence holding the mean: more sequences buy
        # throughput only while the step is not already proportional to the batch
        pts = sv.decode_frontier(model, gpu, max(1, round(mean)), (cont, paged))
        if len(pts) == 2:
            readout += (f"<br>decode: {pts[0].total_tokens_per_s:,.0f} -> {pts[1].total_tokens_per_s:,.0f} tokens/s "
                        f"({pts[1].total_tokens_per_s / pts[0].total_tokens_per_s:.2f}x)")
    return traces, f"max {max_tokens:,} tokens, mean {mean:,.0f} held", readout


def kv_waste_figure(choices=KV_WASTE_CHOICES, mean_fractions=KV_WASTE_MEAN_FRACTIONS, model: str = "Llama-3-8B",
                    gpu: str = "H200-SXM") -> go.Figure:
    """Static PagedAttention calculator: the dropdown picks (max length, block size), the slider the
    mean length as a fraction of the max; bars show the slots held and wasted per sequence, the
    readout the waste and the batch it buys for ``model`` on ``gpu``
    (:func:`widgets.models.serving.kv_cache_waste`)."""
    fr = _check.numbers_list("mean_fractions", mean_fractions, check=lambda n, v: _check.in_range(n, v, 1e-6, 1.0))
    choices = [tuple(c) for c in choices]
    return grid_figure(
        slider=("mean length / max", fr, lambda f: f"{f:g}"),
        choices=("max length, block", choices, lambda c: f"max {c[0]:,} tokens, {plural(c[1], 'token')} per block"),
        frame=lambda c, f: _kv_waste_frame(c[0], c[1], f, model, gpu),
        layout=dict(barmode="stack", xaxis=dict(title="token slots per sequence"), yaxis=dict(autorange="reversed")),
        active=(0, fr.index(0.2) if 0.2 in fr else 0), height=380,
    )


def check_speculative_speedup(answer) -> bool:
    """Exercise: speed-up of speculative decoding at a = 0.7, k = 3, c = 0.1, with v = 1."""
    want = sv.speculative_speedup(0.7, 3, 0.1)
    if _close(answer, want, 0.01):
        e = sv.speculative_expected_tokens(0.7, 3)
        return _verdict(True, f"{want:.2f}x: (1 - 0.7^4) / (1 - 0.7) = {e:.3f} tokens per step, over 3 x 0.1 + 1 = 1.3 step times")
    if _close(answer, sv.speculative_expected_tokens(0.7, 3), 0.01):
        return _verdict(False, "that is the tokens per step: divide by the step's cost, k c + 1 target steps")
    if _close(answer, (1 - 0.7 ** 3) / 0.3 / 1.3, 0.01):
        return _verdict(False, "the target's own pass always adds a token: the exponent is k + 1")
    return _verdict(False, f"{answer!r} is off; speed-up = (1 - a^(k+1)) / ((1 - a)(k c + 1))")


def check_paged_batch_gain(answer) -> bool:
    """Exercise: how many times more sequences a paged cache (16-token blocks) holds than a
    contiguous one reserving 8192 tokens, when sequences hold 1024 tokens on average."""
    want = sv.kv_cache_waste(8192, 1024, 16).batch_gain
    if _close(answer, 8.0, 0.001):
        return _verdict(False, "close: a paged sequence also wastes half a block on average ((16 - 1) / 2 slots)")
    worst = 8192 / (1024 + 16 - 1)
    if _close(answer, worst, 0.001):
        return _verdict(True, f"{worst:.2f}x with a last block of 15 empty slots (the worst case); with lengths spread "
                              f"evenly over a block it is half empty on average, {want:.2f}x")
    if _close(answer, want, 0.01):
        return _verdict(True, f"{want:.2f}x: 8192 reserved slots against 1024 + 7.5 held on average")
    return _verdict(False, f"{answer!r} is off; compare the slots each sequence reserves: max length against mean + (block - 1) / 2")
