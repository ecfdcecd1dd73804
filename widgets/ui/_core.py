"""The book's figure and table kit, and the two forms every calculator has.

- ``live_form``: ipywidgets controls; every change recomputes through the model at once and
  updates the table and redraws the figure in place (inside an ``Output`` widget). Needs a kernel
  (JupyterLab, Colab).
- ``grid_figure``: a static calculator: one dropdown over combinations of some inputs and one
  slider over another, stepping through frames precomputed by the same model. Works in the
  published page without a kernel: no formula is written in JavaScript.
- ``style_figure``: the book's look for any figure: one colour per GPU, legend below the plot,
  SI-prefixed ticks, a short title with the model's readout on its own line, light and dark
  templates (the page swaps to ``book_dark`` when the reader picks dark mode).

A model's ``ValueError`` is shown as its sentence, never as a traceback.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from . import _render  # registers the book's plotly renderer; live_bundle for the live forms

ERROR_STYLE = "color:#b00020;font-weight:600"

# Okabe-Ito, colour-blind safe, then two extra tones; series use them in this order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999", "#7f3c8d")

# One fixed colour per GPU, whichever figure draws it. A GPU not named here gets a stable colour
# from its name (the catalog can grow without editing this table).
GPU_COLORS = {
    "H200-SXM": "#0072B2",
    "H100-SXM": "#56B4E9",
    "H100-PCIe": "#7fb7d9",
    "B200": "#CC79A7",
    "A100-SXM-80GB": "#009E73",
    "A100-SXM-40GB": "#5fbf9f",
    "MI300X": "#D55E00",
    "L4": "#E69F00",
    "L40S": "#c98a00",
    "T4": "#999999",
    "A10G": "#8c6d31",
    "RTX-3090": "#7f3c8d",
    "RTX-4090": "#9b59b6",
    "RTX-5090": "#b07cc6",
}

TITLE_CHARS = 42  # a 16-px title line fits a 360-px-wide plot at about this many characters
READOUT_CHARS = 52  # a 12-px readout line likewise
LINE_PX = {"title": 22, "readout": 17}


def gpu_color(name: str) -> str:
    """The colour of GPU ``name`` in every figure of the book."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a GPU name (a non-empty string), got {name!r}")
    if name in GPU_COLORS:
        return GPU_COLORS[name]
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


def series_color(i: int) -> str:
    """The ``i``-th series colour (for series that are not GPUs)."""
    return PALETTE[int(i) % len(PALETTE)]


# ---------------------------------------------------------------------------------------------
# templates


def _template(dark: bool) -> go.layout.Template:
    fg, grid, bg = ("#e6e6e6", "#3a3f47", "rgba(0,0,0,0)") if dark else ("#222222", "#e3e3e3", "rgba(0,0,0,0)")
    axis = dict(
        gridcolor=grid,
        zerolinecolor=grid,
        linecolor=grid,
        exponentformat="SI",
        minorloglabels="none",  # log axes label decades only ("2 5 10 2 5" reads as nonsense)
        separatethousands=False,
        automargin=True,
        title=dict(standoff=8),
    )
    return go.layout.Template(
        layout=dict(
            font=dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=13, color=fg),
            paper_bgcolor=bg,
            plot_bgcolor=bg,
            colorway=list(PALETTE),
            xaxis=axis,
            yaxis=axis,
            hoverlabel=dict(font_size=12),
            legend=dict(bgcolor="rgba(0,0,0,0)"),
            title=dict(font=dict(size=16)),
            # two buttons only (save, reset): a full modebar covers the title on a phone
            modebar=dict(
                remove=["zoom", "pan", "select", "lasso", "zoomIn", "zoomOut", "autoScale", "toggleSpikelines",
                        "hoverClosestCartesian", "hoverCompareCartesian"],  # fmt: skip
                bgcolor="rgba(0,0,0,0)",
            ),
        )
    )


MENU_CHARS = 32  # a dropdown entry this long still fits a 358-px plot at 13 px
MENU_BG = "#e9edf1"  # dropdown menus, light and dark mode alike (book/_static/plotly_theme.js)
# One entry of an open dropdown in plotly.js: 33 px at a 13-px font (less at 10 px) plus a 2-px gap
# (measured in the built page: 13 entries open 455 px tall).
MENU_ENTRY_PX = 35

pio.templates["book_light"] = _template(dark=False)
pio.templates["book_dark"] = _template(dark=True)
TEMPLATE = "book_light"
pio.templates.default = TEMPLATE  # every figure made after importing the kit starts in the book's look


# ---------------------------------------------------------------------------------------------
# words and numbers


def plural(n: float, singular: str, plural_form: str | None = None) -> str:
    """``"1 wave"``, ``"2 waves"``, ``"1.5 waves"``: the count and the right form of the unit."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n):
        raise ValueError(f"n must be a finite number, got {n!r}")
    word = singular if n == 1 else (plural_form or singular + "s")
    count = f"{n:,}" if isinstance(n, int) or float(n).is_integer() else f"{n:.3g}"
    if isinstance(n, float) and n.is_integer():
        count = f"{int(n):,}"
    return f"{count} {word}"


def percent(fraction: float, digits: int = 1) -> str:
    """A fraction as a percentage a reader can use: ``"<0.1%"`` rather than ``"0.0%"``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
        raise ValueError(f"fraction must be a finite number, got {fraction!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 6:
        raise ValueError(f"digits must be an integer in [0, 6], got {digits!r}")
    smallest = 10.0 ** (-digits)
    p = 100.0 * fraction
    if p == 0:
        return "0%"
    if 0 < abs(p) < smallest:
        return f"{'<' if p > 0 else '>-'}{smallest:g}%"
    if abs(p) >= 10 or digits == 0:
        return f"{p:.0f}%"
    return f"{p:.{digits}f}%"


_GLUE = "\x1f"  # stands for a space that must not break: between a number and its unit


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for part in str(text).split("<br>"):
        part = re.sub(r"(\d) (?=[A-Za-zµ%])", r"\1" + _GLUE, part)  # "2 GiB" stays on one line
        lines.extend(line.replace(_GLUE, " ") for line in textwrap.wrap(part, width=width, break_long_words=False) or [""])
    return lines


def _title(title: str | None, readout: str | None) -> tuple[dict, int]:
    """Plotly title dict (title wrapped, the readout as its subtitle) and the pixels it takes."""
    t_lines = _wrap(title, TITLE_CHARS) if title else []
    r_lines = _wrap(readout, READOUT_CHARS) if readout else []
    spec: dict[str, Any] = dict(
        text="<br>".join(t_lines),
        x=0,
        xanchor="left",
        xref="container",
        y=1,
        yanchor="top",
        yref="container",
        pad=dict(t=10, l=8),
        font=dict(size=16),
    )
    if r_lines:
        spec["subtitle"] = dict(text="<br>".join(r_lines), font=dict(size=12))
    px = 14 + LINE_PX["title"] * len(t_lines) + LINE_PX["readout"] * len(r_lines)
    return spec, px


def _lines(title: str | None, readout: str | None) -> int:
    return _title(title, readout)[1]


LEGEND_ROW_PX = 24
LEGEND_ROW_CHARS = 40  # legend entries per row on a 360-px phone: about this many characters


def _legend_px(traces) -> int:
    """Pixels to keep under the x axis for a horizontal legend that wraps on a phone."""
    names = [str(t.name or "") for t in traces if t.showlegend is not False and t.name]
    if len(names) < 2:
        return 0
    rows, width = 1, 0
    for n in names:
        w = len(n) + 6  # the symbol and the gap
        if width and width + w > LEGEND_ROW_CHARS:
            rows, width = rows + 1, 0
        width += w
    return 12 + LEGEND_ROW_PX * rows


# ---------------------------------------------------------------------------------------------
# figures


def style_figure(
    fig: go.Figure,
    *,
    title: str | None = None,
    readout: str | None = None,
    height: int = 440,
    legend: bool | None = None,
) -> go.Figure:
    """Give ``fig`` the book's look, in place, and return it.

    The title is short and wrapped to fit a phone; ``readout`` (the model's numbers) goes on its
    own line under it; the legend sits below the plot, never over the data.
    """
    if isinstance(height, bool) or not isinstance(height, int) or not 200 <= height <= 4000:
        raise ValueError(f"height must be an integer number of pixels in [200, 4000], got {height!r}")
    if title is None and fig.layout.title.text:
        title = fig.layout.title.text
    spec, title_px = _title(title, readout)
    show_legend = legend if legend is not None else sum(1 for t in fig.data if t.showlegend is not False) > 1
    top = title_px + 16
    bottom = 60 + (max(36, _legend_px(fig.data)) if show_legend else 0)
    height += max(0, bottom - 96)
    plot_h = height - top - bottom
    if plot_h < 120:  # the legend is placed in fractions of this height: make it true
        height, plot_h = height + 120 - plot_h, 120
    set_layout(
        fig,
        template=TEMPLATE,
        title=spec,
        height=height,
        margin=dict(t=top, b=bottom, l=56, r=16),
        showlegend=show_legend,
        legend=dict(orientation="h", x=0, xanchor="left", y=-56 / plot_h, yanchor="top"),
    )
    return fig


def _merged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``old`` updated by ``new``, nested mappings merged key by key (as plotly's ``update`` does)."""
    out = dict(old)
    for k, v in new.items():
        out[k] = _merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def set_layout(fig: go.Figure, **props: Any) -> go.Figure:
    """``fig.update_layout(**props)``, in a third of its time; returns ``fig``.

    A nested value (``legend=dict(...)``) is merged into what the layout has, as ``update_layout``
    merges it, and each property is validated as it is set. ``update_layout`` also routes every
    change through plotly's widget-update machinery, which a figure that is not a ``FigureWidget``
    does not need: 8 against 2.4 ms for :func:`style_figure`'s six properties, which every live
    form's refresh and every figure pays (issue 13)."""
    lay = fig.layout
    for k, v in props.items():
        if isinstance(v, Mapping):
            try:
                v = _merged(lay[k].to_plotly_json(), v)
            except KeyError:  # a subplot's axis (xaxis2) the layout does not have yet: nothing to merge
                pass
        lay[k] = v
    return fig


def _numbers(values) -> list[float]:
    out = []
    for v in values if values is not None else ():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            continue
        v = float(v)
        if math.isfinite(v):
            out.append(v)
    return out


def _axis_names(trace) -> tuple[str, str]:
    xa = getattr(trace, "xaxis", None) or "x"
    ya = getattr(trace, "yaxis", None) or "y"
    return "xaxis" + xa[1:], "yaxis" + ya[1:]


def _extents(traces, barmode: str | None) -> dict[str, tuple[float, float, bool, float]]:
    """Per axis (``xaxis``, ``yaxis2``...): the smallest and largest data value the traces draw on
    it, whether bars sit on it (so it should reach 0 and leave room for labels) and the smallest
    positive value (for log axes)."""
    ext: dict[str, list] = {}
    positions: set[str] = set()
    stacks: dict[tuple[str, Any], list[float]] = {}

    def put(axis: str, vals: list[float], bar: bool = False) -> None:
        if not vals:
            return
        e = ext.setdefault(axis, [math.inf, -math.inf, False, math.inf])
        e[0], e[1], e[2] = min(e[0], *vals), max(e[1], *vals), e[2] or bar
        e[3] = min([e[3], *(v for v in vals if v > 0)])

    for t in traces:
        if getattr(t, "visible", None) in (False, "legendonly"):
            continue
        ttype = getattr(t, "type", None)
        if ttype not in ("scatter", "scattergl", "bar", "heatmap"):
            continue
        xa, ya = _axis_names(t)
        x = list(t.x) if t.x is not None else None
        y = list(t.y) if t.y is not None else None
        if ttype == "bar":
            horizontal = t.orientation == "h"
            vals_raw = x if horizontal else y
            cats = y if horizontal else x
            v_axis, c_axis = (xa, ya) if horizontal else (ya, xa)
            if vals_raw is None:
                continue
            base = t.base
            bases = list(base) if isinstance(base, (list, tuple, np.ndarray)) else [base or 0] * len(vals_raw)
            cats = cats if cats is not None else list(range(len(vals_raw)))
            for i, v in enumerate(vals_raw):
                (fv,) = _numbers([v]) or (None,)
                if fv is None:
                    continue
                b = _numbers([bases[i] if i < len(bases) else 0]) or [0.0]
                if barmode in ("stack", "relative"):
                    key = (v_axis, cats[i] if i < len(cats) else i)
                    s = stacks.setdefault(key, [0.0, 0.0])
                    s[0 if fv >= 0 else 1] += fv
                    put(v_axis, [s[0], s[1]], bar=True)
                else:
                    put(v_axis, [b[0], b[0] + fv], bar=True)
            positions.add(c_axis)  # bars have a width: leave their position axis to plotly
        else:
            put(xa, _numbers(x))
            put(ya, _numbers(y))
            if getattr(t, "fill", None) in ("tozeroy",):
                put(ya, [0.0])
            if getattr(t, "fill", None) in ("tozerox",):
                put(xa, [0.0])
    return {k: (lo, hi, bar, pos) for k, (lo, hi, bar, pos) in ext.items() if lo <= hi and k not in positions}


def frame_ranges(traces, layout: Mapping[str, Any]) -> dict[str, list[float]]:
    """The axis ranges one frame needs so that all its data is on the plot.

    An axis the caller fixed (``layout[axis]["range"]``) keeps its range where the data fits and
    is widened where it does not; an axis left to autorange gets the range of this frame's own data
    (from 0 for bars and ``rangemode="tozero"``). Log axes range in decades, as plotly.js expects;
    category axes and reversed axes are left alone."""
    out: dict[str, list[float]] = {}
    for axis, (lo, hi, bar, pos) in _extents(traces, layout.get("barmode")).items():
        spec = layout.get(axis) or {}
        spec = spec.to_plotly_json() if hasattr(spec, "to_plotly_json") else dict(spec)
        if spec.get("type") in ("category", "multicategory", "date") or spec.get("autorange") == "reversed":
            continue
        if spec.get("fixedrange") and spec.get("range") is not None:
            continue
        given = spec.get("range")
        log = spec.get("type") == "log"
        if log:
            if not math.isfinite(pos):
                continue
            lo, hi = math.log10(pos), math.log10(max(hi, pos))
            pad = max(0.1, 0.06 * (hi - lo))  # markers whole, not cut by the axis
            # a bar on a log axis grows from the bottom: leave the smallest one visible
            want = [lo - max(pad, 0.3 if bar else 0), hi + pad]
        else:
            if bar or spec.get("rangemode") == "tozero":
                lo, hi = min(lo, 0.0), max(hi, 0.0)
            span = hi - lo or abs(hi) or 1.0
            pad_hi = 0.12 * span if bar else 0.05 * span
            pad_lo = 0.0 if (bar or spec.get("rangemode") == "tozero") and lo == 0 else 0.05 * span
            want = [lo - pad_lo, hi + pad_hi]
        if given is not None and len(given) == 2 and None not in given:
            g_lo, g_hi = min(given), max(given)
            if g_lo <= lo and hi <= g_hi:
                out[axis] = list(given)
                continue
            want = [min(g_lo, want[0]), max(g_hi, want[1])]
        out[axis] = [float(want[0]), float(want[1])]
    return out


def _range_update(ranges: Mapping[str, list[float]]) -> dict[str, Any]:
    """``Plotly.update``/``relayout`` keys that set these ranges."""
    upd: dict[str, Any] = {}
    for axis, r in ranges.items():
        upd[f"{axis}.range"] = r
        upd[f"{axis}.autorange"] = False
    return upd


def _same(a: Any, b: Any) -> bool:
    """Whether two trace settings are equal (numpy arrays compared by shape and values)."""
    if hasattr(a, "tolist") or hasattr(b, "tolist"):
        a, b = (x.tolist() if hasattr(x, "tolist") else x for x in (a, b))
    try:
        return bool(a == b)
    except ValueError:  # lists holding arrays: treated as different (kept in the restyle)
        return False


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b.c": value}`` for every leaf of nested dicts (lists are leaves).

    A dropdown's ``Plotly.update`` must name leaves, never containers: plotly.js keeps a container
    it is given (``marker``, ``title``) as the figure's own object, and the slider's next
    ``animate`` merges its frame into that object, which is the button's argument: the button then
    restored the last frame the slider showed (its colours and readout) instead of its own
    (review R5-2: the readout said block 8 of 8 while the slider and bars showed block 1).
    """
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


# The tallest figure a phone shows whole: a 390 x 844 screen less the book's header bar (about
# 60 px). The occupancy figure was 820 px: its slider's labels fell below the screen (review R5-4)
PHONE_FIGURE_PX = 760
SLIDER_CHAR_PX = 7  # a slider tick label in plotly.js: about 7 px per character at its 12-px default font
PLOT_MARGIN_PX = {"l": 56, "r": 16}  # grid_figure's side margins; the slider spans the plot between them


def slider_edge_pad(labels: Sequence[str]) -> dict:
    """Side padding [px] of a slider's rail that keeps its first and last tick labels inside the
    figure: plotly.js centres each label on its tick and the rail spans the plot, so half a long
    end label hung past the margin and was cut (review R-15: "ZeRO-3 / FS")."""
    half = [(len(str(labels[i])) * SLIDER_CHAR_PX + 1) // 2 if labels else 0 for i in (0, -1)]  # whole pixels, rounded up
    return {"l": max(0, half[0] - PLOT_MARGIN_PX["l"]), "r": max(0, half[1] - PLOT_MARGIN_PX["r"])}


def grid_figure(
    *,
    slider: tuple[str, Sequence[Any], Callable[[Any], str]],
    choices: tuple[str, Sequence[Any], Callable[[Any], str]],
    frame: Callable[[Any, Any], tuple[list, str, str]],
    layout: Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] | None = None,
    active: tuple[int, int] = (0, 0),
    height: int = 480,
) -> go.Figure:
    """A static calculator over two or more inputs, precomputed by the model.

    Parameters
    ----------
    slider : (name, values, label)
        The input the slider steps through, its values and how each is labelled. ``values`` may
        be a function of the choice (``lambda c: ...``) when each choice has its own positions
        (a row of 2 blocks steps 1..2, a row of 8 blocks 1..8): each choice's slider then offers
        exactly its own, and no frame is made for a position a choice does not have.
    choices : (name, values, label)
        One dropdown over combinations of the other inputs (e.g. ``("H200-SXM", "bf16")``).
    frame : callable
        ``frame(choice, value) -> (traces, title, readout)``; every frame must return the same
        number of traces. ``readout`` carries the model's numbers for that frame.
    layout : mapping, or callable, optional
        Extra layout (axis titles, ranges) applied to every state; a function of the choice
        (``lambda c: ...``) when each choice has its own (an axis range that fits that choice's
        frames: a fast link's timeline on a slow link's axis was a sliver at the left). Only axis
        ranges may differ between choices; the other keys are taken from the active choice.
    active : (choice index, slider index)
        What the page shows before the reader touches anything. Picking another choice keeps the
        slider's value where that choice has it, else its position (or that choice's last).

    Returns
    -------
    plotly.graph_objects.Figure
        With one dropdown (``updatemenus``) and one slider per choice, only the chosen one shown.
    """
    s_name, s_values, s_label = slider
    c_name, c_values, c_label = choices
    c_values = list(c_values)
    if not c_values:
        raise ValueError("choices must hold at least one option")
    # the slider's positions for each choice (the same list for all, unless values is a function)
    values_of = [list(s_values(c)) for c in c_values] if callable(s_values) else [list(s_values)] * len(c_values)
    for c, vals in zip(c_values, values_of):
        if not vals:
            raise ValueError("slider values must hold at least one position" + (f" (choice {c!r} has none)" if callable(s_values) else ""))
    ci0, si0 = active
    if not (0 <= ci0 < len(c_values) and 0 <= si0 < len(values_of[ci0])):
        raise ValueError(f"active must index a choice in [0, {len(c_values) - 1}] and a slider value in "
                         f"[0, {len(values_of[ci0 if 0 <= ci0 < len(c_values) else 0]) - 1}], got {active!r}")  # fmt: skip
    v0 = values_of[ci0][si0]
    # what picking choice ci shows: the same slider value where ci has it, else the same position
    # or ci's last
    entry = ([vals.index(v0) if v0 in vals else min(si0, len(vals) - 1) for vals in values_of] if callable(s_values)
             else [si0] * len(c_values))
    grid: dict[tuple[int, int], tuple[list, str, str]] = {}
    n_traces = None
    has_menu = len(c_values) > 1
    title_px = 0
    for ci, c in enumerate(c_values):
        for si, v in enumerate(values_of[ci]):
            traces, title, readout = frame(c, v)
            traces = list(traces)
            if n_traces is None:
                n_traces = len(traces)
            elif len(traces) != n_traces:
                where = f"frame {si}" if len(c_values) == 1 else f"frame ({c!r}, {v!r})"
                raise ValueError(f"{where} has {len(traces)} traces, the first had {n_traces}")
            grid[ci, si] = (traces, title, readout)
            title_px = max(title_px, _lines(title, readout))

    top = title_px + 16 + (44 if has_menu else 0)
    traces0 = grid[ci0, si0][0]
    show_legend = sum(1 for t in traces0 if t.showlegend is not False) > 1
    legend_px = max(_legend_px(tr) for tr, _ti, _ro in grid.values()) if show_legend else 0
    bottom = 96 + legend_px + 84
    height += max(0, legend_px - 36)  # a legend that wraps takes room from below, not from the plot
    # the legend and the slider are placed in fractions of the plot's height: the figure grows
    # until the plot has the height they were computed for (a clamped estimate put the slider's
    # label over a wrapped legend on a phone)
    plot_h = height - top - bottom
    if plot_h < 140:
        height, plot_h = height + 140 - plot_h, 140
    if has_menu:
        # The open list hangs from the menu's header (10 px above the plot) down to the figure's
        # bottom edge. Where it does not fit, plotly.js shows it in a scroll box scrolled to the
        # active entry, so the entries above the active one were out of sight and could not be
        # clicked (the tensor_cores peak figure: 13 GPUs, H200 third; the browser test's click
        # landed on the svg-container). The figure grows until the whole list fits; the plot
        # takes the extra height.
        need = top + len(c_values) * MENU_ENTRY_PX + 8
        if height < need:
            height, plot_h = need, plot_h + need - height

    def fname(ci: int, si: int) -> str:
        return f"{ci}:{si}" if has_menu else str(si)

    # every state carries its own axis ranges (plotly.js keeps the first state's autorange for
    # every frame otherwise, and data runs off the plot)
    layouts = [dict((layout(c) if callable(layout) else layout) or {}) for c in c_values]
    base_layouts = [go.Layout(lay).to_plotly_json() for lay in layouts]
    ranges = {(ci, si): frame_ranges(tr, base_layouts[ci]) for (ci, si), (tr, _ti, _ro) in grid.items()}
    specs = {key: [t.to_plotly_json() for t in tr] for key, (tr, _ti, _ro) in grid.items()}  # each trace's JSON, once
    frames = [
        dict(
            name=fname(ci, si),
            data=specs[ci, si],
            layout=go.Layout(
                title=_title(ti, ro)[0], **{ax: dict(range=r, autorange=False) for ax, r in ranges[ci, si].items()}
            ).to_plotly_json(),
        )
        for (ci, si), (_tr, ti, ro) in grid.items()
    ]
    sliders = []
    for ci in range(len(c_values)):
        steps = [
            dict(
                method="animate",
                label=s_label(v),
                args=[[fname(ci, si)], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))],
            )
            for si, v in enumerate(values_of[ci])
        ]
        sliders.append(
            dict(
                active=entry[ci],
                visible=ci == ci0,
                currentvalue=dict(prefix=f"{s_name}: ", font=dict(size=13)),
                steps=steps,
                x=0,
                len=1,
                xanchor="left",
                y=-(96 + legend_px) / plot_h,
                yanchor="top",
                pad=dict(t=8, b=4, **slider_edge_pad([s["label"] for s in steps])),
            )
        )

    # leaves only (see _leaves); a leaf every state gives the same value needs no restyle
    leaves = {key: [_leaves(spec) for spec in sp] for key, sp in specs.items()}
    first = leaves[ci0, si0]
    fixed = {k for k in set().union(*first)
             if all(len(sp) == len(first) and all(_same(sp[i].get(k), first[i].get(k)) for i in range(len(sp))) for sp in leaves.values())}
    if "orientation" not in fixed and any("orientation" in sp for sp in first):
        fixed -= {"x", "y"}  # plotly.js swaps x and y on a restyle that sets orientation: only x and y given with it undo that

    def restyle(specs: list) -> dict:
        keys = sorted({k for s in specs for k in s} - fixed)
        return {k: [s.get(k) for s in specs] for k in keys}

    updatemenus = []
    if has_menu:
        buttons = []
        for ci, c in enumerate(c_values):
            _tr, ti, ro = grid[ci, entry[ci]]
            layout_update = {f"sliders[{k}].visible": k == ci for k in range(len(c_values))}
            layout_update[f"sliders[{ci}].active"] = entry[ci]
            layout_update["title.subtitle.text"] = ""  # a choice whose frame has no readout clears the last one
            layout_update.update(_leaves(_title(ti, ro)[0], "title."))
            layout_update.update(_range_update(ranges[ci, entry[ci]]))
            buttons.append(dict(method="update", label=c_label(c), args=[restyle(leaves[ci, entry[ci]]), layout_update]))
        updatemenus.append(
            dict(
                type="dropdown",
                active=ci0,
                buttons=buttons,
                x=0,
                xanchor="left",
                y=1 + 10 / plot_h,
                yanchor="bottom",
                showactive=True,
                pad=dict(r=4, t=0),
                name=c_name,
                # opaque (plotly.js paints a menu in paper_bgcolor, which is transparent here: an open
                # list showed the bars through its entries on a phone, review R-12); light in dark
                # mode too, as book/_static/plotly_theme.js keeps menus
                bgcolor=MENU_BG,
                bordercolor="#5b6570",
                # long entries ("Llama-3-8B, 1 GPU, ZeRO-0, recompute full") in a smaller font, so the
                # menu and its arrow fit a phone-wide plot (review R-13)
                font=dict(color="#222222", size=13 if max(len(str(c_label(c))) for c in c_values) <= MENU_CHARS else 10),
            )
        )
    _tr0, ti0, ro0 = grid[ci0, si0]
    lay = go.Layout(
        template=TEMPLATE,
        title=_title(ti0, ro0)[0],
        height=height,
        margin=dict(t=top, b=bottom, **PLOT_MARGIN_PX),
        showlegend=show_legend,
        legend=dict(orientation="h", x=0, xanchor="left", y=-56 / plot_h, yanchor="top"),
        sliders=sliders,
        updatemenus=updatemenus,
        meta=dict(calculator=True, inputs=[c_name, s_name] if has_menu else [s_name]),
        **layouts[ci0],
    )
    for ax, r in ranges[ci0, si0].items():
        lay.update({ax: dict(range=r, autorange=False)})
    return _assembled(specs[ci0, si0], lay, frames)


def _assembled(data: list[dict], layout: go.Layout, frames: list[dict]) -> go.Figure:
    """A figure from parts plotly has validated already, put together without validating them again.

    ``data`` and each frame's ``data`` are the JSON of traces made as plotly objects (``go.Scatter``...),
    ``layout`` a ``go.Layout``, each frame's ``layout`` the JSON of one. plotly validates a new copy of
    every trace each time one is put in a ``Frame`` and again in a ``Figure``: two thirds of a static
    calculator's build time (issue 13). The figure is then validated as any other for what is changed
    later (``update_layout``, a trace's ``update``): tests/test_ui_core.py checks both.
    """
    fig = go.Figure(dict(data=data, layout=layout.to_plotly_json(), frames=frames), _validate=False)
    # plotly's per-object switch (plotly/basedatatypes.py): validate from here on
    fig._validate = fig.layout._validate = True
    for trace in fig.data:
        trace._validate = True
    return fig


def frames_figure(
    values: Sequence[Any],
    frame: Callable[[Any], tuple[list, str]],
    *,
    slider_prefix: str,
    value_label: Callable[[Any], str] = str,
    layout: Mapping[str, Any] | None = None,
    active: int = 0,
) -> go.Figure:
    """A figure with one slider stepping through precomputed frames (one input).

    Kept for figures that genuinely have one input; calculators use :func:`grid_figure`.
    ``frame(v)`` returns ``(traces, title)``; the title is split at its first ``": "`` or
    ``" | "`` into a short title and the readout line.
    """
    values = list(values)
    if not values:
        raise ValueError("values must hold at least one slider position")
    if not 0 <= active < len(values):
        raise ValueError(f"active must be in [0, {len(values) - 1}], got {active!r}")

    def split(title: str) -> tuple[str, str]:
        for sep in (" | ", ": "):
            if sep in title:
                head, tail = title.split(sep, 1)
                return head, tail
        return title, ""

    def three(_choice, v):
        traces, title = frame(v)
        return (traces, *split(title))

    return grid_figure(
        slider=(slider_prefix.rstrip(": ").strip(), values, value_label),
        choices=("", [None], lambda _c: ""),
        frame=three,
        layout=layout,
        active=(0, active),
    )


# ---------------------------------------------------------------------------------------------
# tables and checks


def error_html(exc: BaseException, sentence: str | None = None) -> str:
    """The model's one-sentence complaint, as HTML.

    ``sentence``: the same complaint in the form's words (:func:`form_sentence`); the model's own
    words then stay in the paragraph's tooltip (``title``), for a reader who reads the model's code."""
    own = str(exc)
    if sentence is None or sentence == own:
        return f'<p class="calc-error" style="{ERROR_STYLE}">Invalid input: {html.escape(own)}</p>'
    tip = html.escape(f"the model's words: {own}", quote=True)
    return f'<p class="calc-error" style="{ERROR_STYLE}" title="{tip}">Invalid input: {html.escape(sentence)}</p>'


_NUM = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NAME = re.compile(r"(?<![\w'\"\[.])([A-Za-z_]\w*)(?:\[(\d+)\])?(?![\w'\"(])")


def _rescale(text: str, scale: float) -> str:
    """The numbers of a ``_check`` sentence (``got X``, ``[low, high] unit``, ``>= X``) divided by
    ``scale``: from the model's unit (seconds, bytes) back to the control's (µs, MiB). A bound
    written with its own unit (``2**60 B (1 EiB)``) is left as written."""
    def num(m: re.Match) -> str:
        return f"{float(m.group(0)) / scale:.6g}"

    def span(m: re.Match) -> str:  # "[0, 1e+06] s" -> "[0, 1000]": the label carries the unit
        return f"[{float(m.group(1)) / scale:.6g}, {float(m.group(2)) / scale:.6g}]"

    text = re.sub(rf"\[({_NUM}), ({_NUM})\](?: [^\s,;]+(?=[,;]))?", span, text)
    text = re.sub(rf"(?<=[<>] ){_NUM}(?=[,;]|$)|(?<=[<>]= ){_NUM}(?=[,;]|$)|(?<=got ){_NUM}(?=[,;\s]|$)", num, text)
    return text


def form_sentence(message: str, controls: Mapping[str, Any], names: Mapping[str, Any] | None = None) -> str:
    """A model's ``ValueError`` sentence in the form's words: each model parameter it names becomes
    the label of the control that sets it (reader review: the form said ``cost_per_path[1]`` where
    the box is labelled "cycles/path", and ``latency_s ... got -4e-07`` for "alpha [µs]" = -0.4).

    ``controls``: key -> ipywidgets control; a control with a ``description`` lends its label to
    the model parameter of the same name. ``names`` adds model parameter -> what sets it: a
    control key, ``(control key, scale)`` where the model's value is the control's times
    ``scale`` (e.g. ``("latency_us", 1e-6)``: the sentence's numbers are divided back), or a plain
    label for a quantity the form derives (``"gradient bytes"``). A snake_case parameter is
    replaced wherever it stands, a plain word (``n``, ``gpu``) only as the sentence's subject
    (``n must ...``, ``accumulate: ...``) or before ``=``; quoted values are never touched.

    >>> class C:
    ...     def __init__(self, d): self.description = d
    >>> form_sentence("latency_s must be >= 0, got -4e-07", {"latency_us": C("alpha [µs]")}, {"latency_s": ("latency_us", 1e-6)})
    '“alpha [µs]” must be >= 0, got -0.4'
    >>> form_sentence("cost_per_path[1] must be > 0, got 0.0", {"cycles": C("cycles/path")}, {"cost_per_path": "cycles"})
    '“cycles/path” entry 2 must be > 0, got 0.0'
    """
    table: dict[str, tuple[str, float]] = {}
    for key, c in controls.items():
        label = getattr(c, "description", "") or ""
        if label:
            table[key] = (label, 1.0)
    for name, target in (names or {}).items():
        key, scale = (target if isinstance(target, tuple) else (target, 1.0))
        label = getattr(controls.get(key), "description", "") or "" if key in controls else key
        if label:
            table[name] = (label, float(scale))

    def swap(m: re.Match) -> str:
        name, index = m.group(1), m.group(2)
        if name not in table:
            return m.group(0)
        after = message[m.end():]
        if "_" not in name and not after.lstrip().startswith("=") and not (m.start() == 0 and re.match(r" must |:", after)):
            return m.group(0)  # a plain word counts as a parameter only as "n must ...", "accumulate: ..." or "n=4"
        label = table[name][0]
        return f"“{label}”" + (f" entry {int(index) + 1}" if index is not None else "")

    first = _NAME.match(message)
    out = _NAME.sub(swap, message)
    if first and first.group(1) in table and table[first.group(1)][1] != 1.0:
        out = _rescale(out, table[first.group(1)][1])
    return out


def verdict(ok: bool, message: str) -> bool:
    """What every exercise check prints: PASS or FAIL with the reason; returns ``ok``."""
    print(("PASS: " if ok else "FAIL: ") + message)
    return ok


def answer_number(answer) -> float | None:
    """A reader's answer to an exercise as a finite float: a real number (int, float, a NumPy scalar, a
    0-d tensor); None for anything else (a string, a bool, None, NaN, an infinity), so that the check
    can say what it wanted instead of reading ``True`` as 1 or ``"3"`` as 3.

    >>> answer_number(3), answer_number(np.float32(0.5)), answer_number("3"), answer_number(True), answer_number(float("nan"))
    (3.0, 0.5, None, None, None)
    """
    if isinstance(answer, (bool, np.bool_, str, bytes)) or not hasattr(answer, "__float__"):
        return None
    try:
        a = float(answer)
    except (TypeError, ValueError):
        return None
    return a if math.isfinite(a) else None


def answer_close(answer, expected: float, rel: float = 0.02) -> bool:
    """Whether a reader's answer (:func:`answer_number`) lies within ``rel`` of ``expected``: the
    exercise checks' one tolerance rule.

    >>> answer_close(101, 100), answer_close(103, 100), answer_close("100", 100)
    (True, False, False)
    """
    a = answer_number(answer)
    return a is not None and abs(a - expected) <= rel * abs(expected)


def table_html(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column result table: (quantity, formatted value with unit)."""
    body = "".join(f"<tr><td>{html.escape(k)}</td><td><b>{html.escape(v)}</b></td></tr>" for k, v in rows)
    return f'<table class="calc-result book-table">{body}</table>'


def html_table(head, rows) -> str:
    """A result table with a header row: ``head`` lists column titles, ``rows`` lists of cells.

    Cells are HTML as given (calculators put ``<b>``, ``<br>`` and ``<code>`` in them), so callers
    escape any text that comes from outside the book."""
    from ..book import key_class

    rows = [list(r) for r in rows]
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="calc-result{key_class([r[0] for r in rows if r])}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


# ---------------------------------------------------------------------------------------------
# the live form


class _NoForm:
    """What ``live_form`` returns while the book is built: displays nothing."""

    def __init__(self, title: str | None):
        self.title = title
        self.controls: dict = {}
        self.shown: list = []
        self.figures: list = []

    def refresh(self, *_):
        return None

    def _repr_html_(self) -> str:
        return ""


STALE_OPACITY = 0.3


def _stale(fig: go.Figure) -> go.Figure:
    """The last valid state, shown under a refused input: faint, its title saying what it is.

    Left as it was, the figure described values the controls no longer held (a learner typed 0
    ranks and the figure still read "16 ranks"; reader review r6 #1)."""
    f = go.Figure(fig)
    for trace in f.data:
        if "opacity" in trace:
            trace.opacity = STALE_OPACITY
    f.layout.title.text = f"Last valid input: {f.layout.title.text}" if f.layout.title.text else "Last valid input"
    return f


def _is_figure(item: Any) -> bool:
    return isinstance(item, go.Figure)


# A FloatLogSlider's readout (d3-format, read in the page): three significant digits in plain notation
# ("0.100", "8,910", "10,000"), not ipywidgets' default ".3g", which wrote "1.00e+4"; counts: ",.0f".
LOG_READOUT = ",.3r"


# ipywidgets 8 leaves a SelectionSlider's readout editable and ignores what is typed there: a reader
# who typed "4 MiB" saw it while the form stayed at 64 MiB (reader check, round 8). live_form makes
# those readouts read-only (the handle, a click on the track and the keys still move the slider).
READONLY_READOUT_CSS = ("<style>.gpubook-SelectionSlider .widget-readout { pointer-events: none; "
                        "-webkit-user-modify: read-only; user-select: none; }</style>")


def log_slider(value: float, low: float, high: float, step: float, *, base: float = 2, label: Callable[[float], str],
               description: str = ""):
    """A slider over a geometric grid (``value * base**(k * step)`` from ``low`` to ``high``), each
    point shown as ``label(point)``: for sizes whose unit changes along the range ("1 KiB",
    "1.41 KiB", ..., "16 GiB"), which no d3 number format of a ``FloatLogSlider`` can write. An
    ipywidgets ``SelectionSlider``; its readout cannot be typed into (ipywidgets 8 leaves it
    editable but ignores what is typed; ``live_form`` makes it read-only), so use it only where the
    labels need units. The grid holds ``value`` exactly, and for base 2 every multiple of ``value``
    by a whole power of 2."""
    import ipywidgets as w

    if not (value > 0 and low > 0 and high >= low and step > 0 and base > 1):
        raise ValueError(f"a log slider needs 0 < low <= high, value > 0, step > 0 and base > 1; got "
                         f"value={value!r}, low={low!r}, high={high!r}, step={step!r}, base={base!r}")
    e0 = math.log(value, base)
    k_lo = min(0, -math.floor((e0 - math.log(low, base)) / step + 1e-9))  # the first grid point at or above low
    k_hi = max(0, math.floor((math.log(high, base) - e0) / step + 1e-9))
    points = [value * base ** round(k * step, 12) for k in range(k_lo, k_hi + 1)]
    return w.SelectionSlider(options=[(label(v), v) for v in points], value=value, description=description)


def slider(value: float, low: float, high: float, step: float = 1, *, description: str = "", log_base: float | None = None,
           readout_format: str | None = None, **kw):
    """An ipywidgets slider whose grid holds ``value`` exactly, so it opens at the calculator's
    default (a slider snaps a value that is not on ``low + k * step`` to the nearest step).

    The grid is shifted (``low`` moves down by less than one step) rather than the value rounded.
    With ``log_base`` the grid is in exponents (a ``FloatLogSlider``). Integers on an integer grid
    give an ``IntSlider``; anything else a ``FloatSlider``."""
    import ipywidgets as w

    if log_base is not None:
        if value <= 0 or low <= 0:
            raise ValueError(f"a log slider needs positive values, got value={value!r}, low={low!r}")
        e, e_lo, e_hi = math.log(value, log_base), math.log(low, log_base), math.log(high, log_base)
        k = math.floor((e - e_lo) / step + 1e-9)
        e_lo = e - k * step
        return w.FloatLogSlider(value=value, base=log_base, min=e_lo, max=max(e_hi, e), step=step, description=description,
                                readout_format=readout_format or LOG_READOUT, **kw)
    k = math.floor((value - low) / step + 1e-9)
    lo = value - k * step
    lo = lo if abs(lo - low) > 1e-12 * max(1.0, abs(low)) else low
    hi = max(high, value)
    if isinstance(value, (int, np.integer)) and float(lo).is_integer() and float(step).is_integer():
        return w.IntSlider(value=int(value), min=int(lo), max=int(hi), step=int(step), description=description, **kw)
    if readout_format is None:
        digits = next((d for d in range(0, 7) if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value))), 6)
        digits = max(digits, next((d for d in range(0, 7) if abs(round(step, d) - step) <= 1e-12), 6))
        readout_format = f".{digits}f"
    return w.FloatSlider(value=float(value), min=float(lo), max=float(hi), step=float(step), description=description,
                         readout_format=readout_format, **kw)


def live_form(
    compute: Callable[..., Any],
    controls: Mapping[str, Any],
    show: Callable[[Any], Any],
    *,
    title: str | None = None,
    names: Mapping[str, Any] | None = None,
):
    """Build a live calculator.

    Parameters
    ----------
    compute : callable
        Called as ``compute(**{name: control.value})``; may raise ``ValueError``.
    controls : mapping of name -> ipywidgets control
        Every control is shown; any change recomputes.
    show : callable
        Turns ``compute``'s result into what is displayed: an HTML string, a plotly figure, or a
        tuple/list of those.
    names : mapping, optional
        Model parameter -> the control that sets it, for error sentences in the form's words
        (:func:`form_sentence`): a control key, ``(key, scale)`` when the compute converts units,
        or a plain label. A model parameter named like its control needs no entry.

    Returns
    -------
    ipywidgets.VBox
        With ``.controls`` (the mapping), ``.output`` (an HTML widget with the tables or the
        error), ``.figures`` (the plotly figures shown now, one per figure, each drawn in an
        ``Output`` widget replaced on every change), ``.shown`` (the items displayed
        by the last refresh: HTML strings and figures) and ``.refresh()``.
    """
    import os

    if os.environ.get("GPUBOOK_BUILD") == "1":
        # The published page hides live forms (they need a kernel): make no widgets, so the page
        # carries no widget state and loads no widget manager.
        return _NoForm(title)

    import ipywidgets as w

    html_out = w.HTML()
    fig_box = w.VBox()
    figures: list[go.Figure] = []  # what each figure shows now
    valid: list[go.Figure] = []  # the figures of the last input the model accepted
    outs: list = []  # one Output widget per figure

    def put_figures(figs: list[go.Figure]) -> None:
        # Each figure is redrawn inside its own Output widget: its outputs are replaced, in one
        # message, by the new state in plotly's JSON mime type, which JupyterLab's plotly extension
        # draws with the one plotly.js it loads per page, as it draws the static figures. (plotly
        # FigureWidgets, used before, each shipped their own 5 MB plotly.js, and on a busy machine a
        # figure sometimes never followed its controls: issue 14.) A figure whose state did not
        # change is not sent again: traitlets sends a value only when it differs.
        while len(outs) < len(figs):
            outs.append(w.Output())
        del outs[len(figs):]
        for out, fig in zip(outs, figs):
            height = fig.layout.height
            if height and out.layout.min_height != f"{int(height)}px":
                out.layout.min_height = f"{int(height)}px"  # no jump while the new state is drawn
            out.outputs = ({"output_type": "display_data", "data": _render.live_bundle(fig.to_dict()), "metadata": {}},)
        figures[:] = figs
        if tuple(fig_box.children) != tuple(outs):
            fig_box.children = tuple(outs)

    def refresh(*_):
        values = {k: c.value for k, c in controls.items()}
        try:
            shown = show(compute(**values))
            items = list(shown) if isinstance(shown, (tuple, list)) else [shown]
        except ValueError as exc:
            items = [error_html(exc, form_sentence(str(exc), controls, names))]
        box.shown = items
        html_out.value = "".join(i for i in items if isinstance(i, str))
        figs = [i for i in items if _is_figure(i)]
        if figs or not any(isinstance(i, str) and "calc-error" in i for i in items):
            valid[:] = figs
            put_figures(figs)
        else:  # a refused input: the last valid figures stay, marked as such
            put_figures([_stale(f) for f in valid])

    parts = ([w.HTML(f"<b>{html.escape(title)}</b>")] if title else []) + [w.VBox(list(controls.values())), html_out, fig_box]
    if any(isinstance(c, w.SelectionSlider) for c in controls.values()):
        parts.append(w.HTML(READONLY_READOUT_CSS, layout=w.Layout(display="none")))  # a <style> applies though hidden
    box = w.VBox(parts)
    for c in controls.values():
        if getattr(c, "description", "") and hasattr(getattr(c, "style", None), "description_width"):
            c.style.description_width = "initial"  # the whole label, units included
        c.observe(refresh, names="value")
        # its kind in the page (ipywidgets gives an IntSlider, a FloatSlider, a FloatLogSlider and a SelectionSlider
        # the same classes): tests/test_jupyterlab.py moves each kind once per chapter
        c.add_class(f"gpubook-{type(c).__name__}")
    box.controls = dict(controls)
    box.output = html_out
    box.figures = figures
    box.refresh = refresh
    refresh()
    return box
