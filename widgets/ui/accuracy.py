"""The Model accuracy page's figure and table: every labelled comparison of the book."""

from __future__ import annotations

import plotly.graph_objects as go

from ..accuracy import LABELS, TARGET, Row
from ..book import table  # noqa: F401  (the page uses ui.table too)
from ._core import series_color, style_figure

LABEL_COLORS = {label: series_color(i) for i, label in enumerate(LABELS)}
LABEL_SYMBOLS = {"prediction": "circle", "calibrated": "diamond", "fit": "x"}


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def ratio_figure(rows: list[Row]) -> go.Figure:
    """measured / predicted for every row, one colour per label, the target band shaded."""
    if not rows:
        raise ValueError("rows must hold at least one comparison")
    names = [f"{r.topic}: {r.quantity} ({r.device})" for r in rows]
    fig = go.Figure()
    for label in LABELS:
        sel = [(n, r) for n, r in zip(names, rows) if r.label == label]
        if not sel:
            continue
        fig.add_trace(
            go.Scatter(
                x=[r.ratio for _, r in sel],
                y=[n for n, _ in sel],
                mode="markers",
                name=label,
                marker=dict(color=LABEL_COLORS[label], symbol=LABEL_SYMBOLS[label], size=10),
                customdata=[[_fmt(r.predicted), _fmt(r.measured), r.unit] for _, r in sel],
                hovertemplate="%{y}<br>predicted %{customdata[0]} %{customdata[2]}, measured %{customdata[1]}"
                " %{customdata[2]}<br>ratio %{x:.3f}<extra></extra>",
            )
        )
    fig.add_vrect(x0=1 - TARGET, x1=1 + TARGET, fillcolor="#009E73", opacity=0.12, line_width=0)
    fig.add_vline(x=1, line=dict(color="#888", dash="dot"))
    fig.update_xaxes(type="log", title_text="measured / model")
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names, tickfont=dict(size=11))
    style_figure(fig, title="Measured against the model", readout=f"shaded: within {TARGET:.0%} of the model",
                 height=min(4000, max(440, 150 + 20 * len(rows))), legend=True)  # fmt: skip
    return fig


def rows_table(rows: list[Row]) -> str:
    """Every comparison, in the book's table style."""
    body = [
        (r.topic, r.quantity, r.inputs, f"{_fmt(r.predicted)} {r.unit}", f"{_fmt(r.measured)} {r.unit}",
         f"{r.ratio:.2f}", r.label, r.device)  # fmt: skip
        for r in rows
    ]
    return table(body, ["topic", "quantity", "inputs", "model", "measured", "ratio", "label", "device"])
