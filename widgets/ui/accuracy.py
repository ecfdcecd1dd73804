"""The Model accuracy page's figure and table: every labelled comparison of the book."""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go

from ..accuracy import LABELS, TARGET, Row, topic_name
from ..book import table  # noqa: F401  (the page uses ui.table too)
from ._core import plural, series_color, set_layout, style_figure

LABEL_COLORS = {label: series_color(i) for i, label in enumerate(LABELS)}
LABEL_SYMBOLS = {"prediction": "circle", "calibrated": "diamond", "fit": "x"}
# each label's lane in a chapter's band of the ratio figure (y grows downwards: the axis is reversed; a
# band spans its index +- 0.5, its top strip down to HEADER holds the chapter's name), and the sub-lanes
# that keep a lane's points at nearly the same ratio apart
LABEL_LANES = {"prediction": -0.12, "calibrated": 0.1, "fit": 0.32}
SUB_LANES, SUB_LANE = 3, 0.055
HEADER = -0.28  # the name strip of a band: from its top (-0.5) to here, above every lane's points
BAND_PX = 76  # a band's height in the figure: its name's line and three lanes

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def display_text(text: str) -> str:
    """A row's words as a reader sees them, wherever the row's label was made: powers written as
    powers ("8192^3" -> "8192³", "N^2" -> "N²"), sizes and factors with a times sign ("2048x2048",
    "1.94x"), and ">=" / "<=" as "≥" / "≤".

    >>> display_text("bf16 GEMM 8191^3, 4 N d + 4 N^2, 2^-10")
    'bf16 GEMM 8191³, 4 N d + 4 N², 2⁻¹⁰'
    >>> display_text("2048x2048 tiles, 1.941x faster, sustained >= 2 s; max(x, y) x4 exp; cutlass_sgemm_256x128_8x4")
    '2048×2048 tiles, 1.941× faster, sustained ≥ 2 s; max(x, y) x4 exp; cutlass_sgemm_256x128_8x4'
    >>> display_text("64 x (256x1536), 2 x NVIDIA H200, 6.6 us; peak x wave")
    '64 × (256×1536), 2 × NVIDIA H200, 6.6 µs; peak x wave'
    """
    text = re.sub(r"\^(-?\d+)", lambda m: m.group(1).translate(_SUPERSCRIPT), str(text))
    # a times sign after a number ("2048x2048", "1.94x"), but not inside a name (a kernel's: "sgemm_256x128_8x4")
    text = re.sub(r"\S+", lambda w: w.group(0) if "_" in w.group(0) else re.sub(r"(?<=\d)x(?=\d|\b)", "×", w.group(0)), text)
    text = re.sub(r"(?<=[\d)]) x (?=[\d(A-Z])", " × ", text)  # "64 x (256×1536)", "2 x NVIDIA H200"
    text = re.sub(r"(?<=\d) us\b", " µs", text)
    return text.replace(">=", "≥").replace("<=", "≤")


def _plain(v: float) -> str:
    """A number without a unit, never in Python's e-notation: 0.002346, 12,345, 2.864 × 10⁻⁷."""
    if v == 0 or 1e-4 <= abs(v) < 1e6:  # where Python's 4-digit "g" format does too
        return f"{v:,.4g}"
    mantissa, exponent = f"{v:.3e}".split("e")
    return f"{float(mantissa):.4g} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


# units of a dimensionless fraction: shown as a percentage; "fraction of X" as "4.5% of X" (the training
# chapter's recomputation overhead: "fraction of the forward + backward time")
FRACTION_UNITS = ("-", "fraction", "")


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
        return f"{v:.4g}×"
    if unit in FRACTION_UNITS:
        return f"{100 * v:.4g}%"
    if unit.startswith("fraction of "):
        return f"{100 * v:.4g}% {unit.removeprefix('fraction ')}"
    if unit in ("count", "relative error"):  # the quantity names what is counted, or the error
        return _plain(v)
    return f"{_plain(v)} {unit}"


HOVER_CHARS = 40  # a hover line that fits a phone's width


def ratio_text(ratio: float) -> str:
    """measured / model as the tables show it: two decimals, or as many more as it takes not to read
    as the target band's edge (a ratio of 0.7496 is outside the band; "0.75" looked like its edge).

    >>> ratio_text(1.234), ratio_text(0.7496), ratio_text(1.2504), ratio_text(0.75)
    ('1.23', '0.7496', '1.2504', '0.75')
    """
    edges = (1 - TARGET, 1 + TARGET)
    for digits in range(2, 7):
        text = f"{ratio:.{digits}f}"
        if float(text) not in edges or ratio in edges:
            return text
    return text


def _lines(text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters; a word longer than a line
    keeps its own line."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _wrap(text: str, width: int = HOVER_CHARS) -> str:
    """``text`` broken into lines of at most ``width`` characters at spaces (plotly's ``<br>``), so
    that a point's hover box fits a phone; a word longer than a line keeps its own line."""
    return "<br>".join(_lines(text, width))


def ratio_figure(rows: list[Row]) -> go.Figure:
    """measured / model for every row: one band per chapter (topic, in the ledger's order, its
    chapter's name and count of comparisons on a line at the band's top), one colour, symbol and
    lane per label, the target band shaded.

    Within a chapter's band the labels keep their own lanes (prediction above, calibrated in the
    middle, fit below) and a lane's points are spread over a few sub-lanes, so that points at
    nearly the same ratio stay apart. Each point's full name, model and measured values are in
    its hover and in the table below the figure: the figure stays a chapter per band, readable on a
    phone, however many comparisons the book makes. The chapters' names sit inside the plot, not as
    the y axis's tick labels, so that the points get the figure's whole width on a phone.
    """
    if not rows:
        raise ValueError("rows must hold at least one comparison")
    topics = list(dict.fromkeys(r.topic for r in rows))
    fig = go.Figure()
    for label in LABELS:
        sel = [r for r in rows if r.label == label]
        if not sel:
            continue
        ys, seen = [], {}
        for r in sel:
            j = seen[r.topic] = seen.get(r.topic, -1) + 1  # this point's place among its chapter's rows of this label
            ys.append(topics.index(r.topic) + LABEL_LANES[label] + SUB_LANE * ((j % SUB_LANES) - (SUB_LANES - 1) / 2))
        fig.add_trace(
            go.Scatter(
                x=[r.ratio for r in sel],
                y=ys,
                mode="markers",
                name=label,
                marker=dict(color=LABEL_COLORS[label], symbol=LABEL_SYMBOLS[label], size=8, opacity=0.85),
                customdata=[[_wrap(f"{topic_name(r.topic)}: {display_text(r.quantity)} ({r.device})"),
                             _wrap(f"model {_with_unit(r.predicted, r.unit)}"), _wrap(f"measured {_with_unit(r.measured, r.unit)}")]
                            for r in sel],  # fmt: skip
                hovertemplate=f"%{{customdata[0]}}<br>{label}<br>%{{customdata[1]}}<br>%{{customdata[2]}}"
                              "<br>ratio %{x:.3f}<extra></extra>",
            )
        )
    fig.add_vrect(x0=1 - TARGET, x1=1 + TARGET, fillcolor="#009E73", opacity=0.12, line_width=0)
    fig.add_vline(x=1, line=dict(color="#888", dash="dot"))
    for k in range(1, len(topics)):  # a thin rule between two chapters' bands
        fig.add_hline(y=k - 0.5, line=dict(color="rgba(128,128,128,0.25)", width=1))
    import math

    lo = min(min(r.ratio for r in rows), 1 - TARGET) / 1.3
    hi = max(max(r.ratio for r in rows), 1 + TARGET) * 1.3
    count = {t: sum(r.topic == t for r in rows) for t in topics}
    ticks = [v for v in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if lo <= v <= hi]
    fig.update_xaxes(type="log", title_text="measured / model", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks],
                     range=[math.log10(lo), math.log10(hi)])
    fig.update_yaxes(range=[len(topics) - 0.5, -0.5], showticklabels=False, ticks="", showgrid=False, zeroline=False)
    for k, t in enumerate(topics):  # the band's name on its own line at its top left, in the theme's text colour
        fig.add_annotation(x=0, xref="paper", xanchor="left", y=k - 0.5, yref="y", yanchor="top", yshift=-2,
                           text=f"<b>{topic_name(t)}</b> ({count[t]})", showarrow=False, font=dict(size=12))  # fmt: skip
    style_figure(fig, title="Measured against the model, by chapter", readout=f"shaded: within {TARGET:.0%} of the model",
                 height=max(440, 170 + BAND_PX * len(topics)), legend=True)  # fmt: skip
    set_layout(fig, margin=dict(l=8))
    return fig


# A model or measured value longer than this breaks over lines of at most as many characters (a list cell:
# one line each), so that "4.508% of the forward + backward time" (the training chapter's fractions) wraps in
# a column as narrow as "1.919 PFLOP/s" needs, and numbers keep their lines (reader check: they did not wrap)
VALUE_LINE_CHARS = 16
# The ledger's columns: what a reader came for first (the ratio and its label beside the quantity, in view
# on a 1366 px screen), then both values, then the model's inputs. A chapter measured on more than one
# device adds a device column; one device is named in its table's caption.
LEDGER_COLUMNS = ("quantity", "ratio", "label", "model", "measured", "inputs")


def ledger_anchor(topic: str) -> str:
    """The id of a chapter's heading in the ledger (``accuracy.html#ledger-simt``)."""
    return "ledger-" + re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")


def value_cell(text: str) -> str | list[str]:
    """A model or measured value as its table cell: the text, or where it is longer than
    ``VALUE_LINE_CHARS`` its lines (a list cell shows one per line).

    >>> value_cell("479.7 TFLOP/s"), value_cell("4.508% of the forward + backward time")
    ('479.7 TFLOP/s', ['4.508% of the', 'forward +', 'backward time'])
    """
    return text if len(text) <= VALUE_LINE_CHARS else _lines(text, VALUE_LINE_CHARS)


def chapter_table(rows: list[Row]) -> str:
    """One chapter's comparisons (``rows``, one topic) as a table: ``LEDGER_COLUMNS``, a long value over
    lines (:func:`value_cell`), the inputs wrapping; the caption counts them by label and names the
    device, or the table gets a device column where they were measured on several."""
    if not rows or len({r.topic for r in rows}) != 1:
        raise ValueError("rows must hold the comparisons of one chapter, at least one")
    devices = list(dict.fromkeys(display_text(r.device) for r in rows))
    body = [[display_text(r.quantity), ratio_text(r.ratio), r.label, value_cell(_with_unit(r.predicted, r.unit)),
             value_cell(_with_unit(r.measured, r.unit)), display_text(r.inputs)] + ([display_text(r.device)] if len(devices) > 1 else [])
            for r in rows]  # fmt: skip
    headers = list(LEDGER_COLUMNS) + (["device"] if len(devices) > 1 else [])
    counts = {label: sum(r.label == label for r in rows) for label in LABELS}
    kinds = ", ".join(plural(n, label, label) if label == "calibrated" else plural(n, label) for label, n in counts.items() if n)
    caption = f"{plural(len(rows), 'comparison')} ({kinds})" + (f", measured on {devices[0]}" if len(devices) == 1 else "")
    # a row is read on its own (quantity, ratio, label, then what went in): on a phone each row is a card
    return table(body, headers, caption=caption, prose_columns=(LEDGER_COLUMNS.index("inputs"),), stack=True)


def rows_tables(rows: list[Row]) -> str:
    """Every comparison, one table per chapter (:func:`chapter_table`) under a heading with the
    chapter's name, in the ledger's order (reader check: one table of every row, with a chapter column,
    was 1,609 px wide and 22,848 px tall, its ratio out of view on a 1366 px screen)."""
    if not rows:
        raise ValueError("rows must hold at least one comparison")
    out = []
    for topic in dict.fromkeys(r.topic for r in rows):
        out.append(f'<h3 id="{ledger_anchor(topic)}">{html.escape(topic_name(topic))}</h3>'
                   + chapter_table([r for r in rows if r.topic == topic]))
    return "\n".join(out)


def outside_table(rows: list[Row]) -> str:
    """The predictions outside the target (``summary(rows)["outside"]``), each with its chapter's reason:
    the quantity first (the scroll box's sticky column, where a long kernel name may break), its ratio
    and chapter, then the reason, which wraps."""
    body = [(display_text(r.quantity), ratio_text(r.ratio), topic_name(r.topic), display_text(r.note) or "see the chapter")
            for r in rows]  # fmt: skip
    return table(body, ["quantity", "ratio", "chapter", "why"], prose_columns=(3,), stack=True)
