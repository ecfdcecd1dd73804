"""The Model accuracy page's figure and table: every labelled comparison of the book."""

from __future__ import annotations

import plotly.graph_objects as go

from ..accuracy import LABELS, TARGET, Row
from ..book import table  # noqa: F401  (the page uses ui.table too)
from ._core import series_color, set_layout, style_figure

LABEL_COLORS = {label: series_color(i) for i, label in enumerate(LABELS)}
LABEL_SYMBOLS = {"prediction": "circle", "calibrated": "diamond", "fit": "x"}


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _with_unit(v: float, unit: str) -> str:
    """A value in the book's units (4.8 TB/s, 1.79 ms), not Python's e-notation (4.8e+12 B/s)."""
    from ..units import fmt_bytes, fmt_bytes_per_s, fmt_flop_per_s, fmt_rate, fmt_time

    try:
        if unit == "s":
            return fmt_time(v, 4)
        if unit == "ms":
            return fmt_time(v * 1e-3, 4)
        if unit == "us":
            return fmt_time(v * 1e-6, 4)
        if unit == "B/s":
            return fmt_bytes_per_s(v, 4)
        if unit == "GB/s":
            return fmt_bytes_per_s(v * 1e9, 4)
        if unit == "FLOP/s":
            return fmt_flop_per_s(v, 4)
        if unit == "GFLOP/s":  # the kernels ladder's rows: 13.66 TFLOP/s, not 1.366e+04 GFLOP/s
            return fmt_flop_per_s(v * 1e9, 4)
        if unit == "B":
            return fmt_bytes(v, 4)
        if unit == "1/s":
            return fmt_rate(v, "/s", 4)
    except ValueError:  # a value the formatter refuses (negative time...): the plain number
        pass
    if unit == "count" and float(v).is_integer():
        return f"{v:,.0f}"
    if unit == "x":
        return f"{v:.4g}x"
    if unit in ("-", "count", "relative error", ""):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:.4g}"
    return f"{v:,.4g} {unit}" if abs(v) < 1e6 else f"{v:.4g} {unit}"


TOPIC_SHORT = {"memory_hierarchy": "mem", "simt": "simt", "tensor_cores": "tc", "kernels": "kern", "collectives": "coll",
               "training_memory": "train", "serving": "serve", "attention": "attn"}
LABEL_CHARS = 26  # a tick label that leaves a phone-wide plot room for its data


def _short(row: Row) -> str:
    text = f"{TOPIC_SHORT.get(row.topic, row.topic)}: {row.quantity}"
    if len(text) <= LABEL_CHARS:
        return text
    head = LABEL_CHARS // 2 - 2
    return text[:head] + "…" + text[-(LABEL_CHARS - head - 1):]  # keep the end: it names the case


def ratio_figure(rows: list[Row]) -> go.Figure:
    """measured / model for every row, one colour and symbol per label, the target band shaded.

    Rows sit at integer positions with short tick labels (the full name is in the hover and in
    the table below the figure), so the data keep most of a phone's width.
    """
    if not rows:
        raise ValueError("rows must hold at least one comparison")
    fig = go.Figure()
    for label in LABELS:
        sel = [(i, r) for i, r in enumerate(rows) if r.label == label]
        if not sel:
            continue
        fig.add_trace(
            go.Scatter(
                x=[r.ratio for _, r in sel],
                y=[i for i, _ in sel],
                mode="markers",
                name=label,
                marker=dict(color=LABEL_COLORS[label], symbol=LABEL_SYMBOLS[label], size=9),
                customdata=[[f"{r.topic}: {r.quantity} ({r.device})", _with_unit(r.predicted, r.unit), _with_unit(r.measured, r.unit), ""]
                            for _, r in sel],  # fmt: skip
                hovertemplate="%{customdata[0]}<br>model %{customdata[1]} %{customdata[3]}, measured %{customdata[2]}"
                " %{customdata[3]}<br>ratio %{x:.3f}<extra></extra>",
            )
        )
    fig.add_vrect(x0=1 - TARGET, x1=1 + TARGET, fillcolor="#009E73", opacity=0.12, line_width=0)
    fig.add_vline(x=1, line=dict(color="#888", dash="dot"))
    import math

    lo = min(min(r.ratio for r in rows), 1 - TARGET) / 1.3
    hi = max(max(r.ratio for r in rows), 1 + TARGET) * 1.3
    fig.update_xaxes(type="log", title_text="measured / model", dtick=1, range=[math.log10(lo), math.log10(hi)])
    fig.update_yaxes(range=[len(rows) - 0.5, -0.5], tickmode="array", tickvals=list(range(len(rows))),
                     ticktext=[_short(r) for r in rows], tickfont=dict(size=10), showgrid=False)  # fmt: skip
    style_figure(fig, title="Measured against the model", readout=f"shaded: within {TARGET:.0%} of the model",
                 height=min(4000, max(440, 160 + 17 * len(rows))), legend=True)  # fmt: skip
    set_layout(fig, margin=dict(l=8))
    return fig


def rows_table(rows: list[Row]) -> str:
    """Every comparison, in the book's table style."""
    body = [
        (r.topic, r.quantity, r.inputs, _with_unit(r.predicted, r.unit), _with_unit(r.measured, r.unit),
         f"{r.ratio:.2f}", r.label, r.device)  # fmt: skip
        for r in rows
    ]
    return table(body, ["topic", "quantity", "inputs", "model", "measured", "ratio", "label", "device"])
