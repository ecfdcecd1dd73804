"""A plotly renderer that shows in JupyterLab AND in the published book.

plotly 6 in a kernel emits only ``application/vnd.plotly.v1+json``, which myst-nb drops: the figure
would be missing from the HTML. This renderer emits that mime type (JupyterLab renders it) plus a
``text/html`` div without plotly.js (the book loads plotly.js once per page from its own static
files) and without auto-play (a figure with frames would otherwise animate to its last frame).
In Colab, which renders neither, plotly's own ``colab`` renderer is used.

While the book is being built, the book's Sphinx extension sets ``GPUBOOK_PLOTLY=html`` for the
kernels it starts: the page needs only the HTML, and myst-nb would warn about the JSON mime type.

The HTML carries :func:`page_copy` of the figure (the same states in about half the bytes: page
weight budget, tests/test_browser.py); the JSON for JupyterLab is the figure as made.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

# Significant digits the page keeps of a float: more than any hover format of the book shows (.3g,
# .4g, .0f of a five-digit number, .3f below 1000), far fewer than the 17 that JSON writes by
# default. An integral float is written as an integer, exactly (1048576.0 -> 1048576).
PAGE_DIGITS = 6


def _rounded(v: Any, digits: int) -> Any:
    """A copy of a JSON-like value with every float kept to ``digits`` significant digits."""
    if isinstance(v, dict):
        return {k: _rounded(x, digits) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_rounded(x, digits) for x in v]
    if isinstance(v, np.ndarray):
        return _rounded(v.tolist(), digits)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return f
        if f.is_integer() and abs(f) < 2**53:
            return int(f)
        return float(f"{f:.{digits}g}")
    return v


def _prune_layout(frames: list[dict], base: Mapping[str, Any]) -> None:
    """Drop from every frame's layout the settings that equal the figure's own in every frame
    (the title's font, padding and anchors): plotly.js merges a frame's layout into the figure's."""
    for k in set().union(*(f.keys() for f in frames)):
        if not all(k in f for f in frames) or k not in base:
            continue
        if all(isinstance(f[k], dict) for f in frames) and isinstance(base[k], dict):
            _prune_layout([f[k] for f in frames], base[k])
            if all(not f[k] for f in frames):
                for f in frames:
                    del f[k]
        elif all(f[k] == base[k] for f in frames):
            for f in frames:
                del f[k]


def page_copy(fig_dict: Mapping[str, Any], digits: int = PAGE_DIGITS) -> dict:
    """The figure as the published page carries it: the same states, fewer bytes.

    - floats keep ``digits`` significant digits (coordinates to what the eye and the hovers show);
    - a trace setting that is the same in every frame (its name, colour, hover template, mostly)
      is written once, in the figure's data, not again in each frame and dropdown entry: plotly.js
      merges a frame's data into the trace it updates (``Plots.extendTrace``), so what a frame
      leaves out keeps the value every state shares;
    - likewise the frames' layout settings that never change (the title's font and anchors).

    Nothing is dropped that differs between two states, so every slider step and dropdown entry
    shows what the full figure shows. Figures whose frames update only some traces are only
    rounded.
    """
    d = _rounded(dict(fig_dict), digits)
    data, frames = d.get("data") or [], d.get("frames") or []
    if not frames or not all(len(f.get("data") or []) == len(data) and "traces" not in f for f in frames):
        return d
    shared: list[set] = []  # per trace: the settings every frame repeats unchanged
    for i, trace in enumerate(data):
        keys = {k for k, v in trace.items() if k != "type" and all(k in f["data"][i] and f["data"][i][k] == v for f in frames)}
        shared.append(keys)
        for f in frames:
            for k in keys:
                f["data"][i].pop(k, None)
    for menu in (d.get("layout") or {}).get("updatemenus") or []:
        for button in menu.get("buttons") or []:
            args = button.get("args") or []
            if button.get("method") != "update" or len(args) != 2 or not isinstance(args[0], dict):
                continue
            restyle = args[0]
            if "orientation" in restyle:
                # plotly.js swaps a trace's x and y when a restyle sets its orientation (even to
                # null on a scatter): only the x and y given after it in the same call undo that
                continue
            for k in list(restyle):
                vals = restyle[k]
                if isinstance(vals, list) and len(vals) == len(data) and all(
                    k in shared[i] and vals[i] == data[i].get(k) for i in range(len(data))
                ):
                    del restyle[k]
    layouts = [f.get("layout") for f in frames]
    if all(isinstance(lay, dict) for lay in layouts):
        _prune_layout(layouts, d.get("layout") or {})
    return d


# What JupyterLab's plotly extension is told besides the figure (the book's HTML gets the same).
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "displayModeBar": False}


# The figure's own background in JupyterLab: the book's templates are transparent (the published
# page swaps light and dark templates itself), and in JupyterLab's dark theme the light template's
# dark text then sat on a near-black page (reader review r6, JupyterLab dark theme).
NOTEBOOK_BACKGROUND = "#ffffff"
_TRANSPARENT = (None, "rgba(0,0,0,0)", "transparent")


def plotly_json(fig_dict: Mapping[str, Any]) -> dict:
    """The figure as JupyterLab's plotly extension (``jupyterlab-plotly``) renders it: plain JSON
    with the book's plot config (plotly.js comes once per page from that extension, not per figure),
    on an opaque white background where the figure's own is transparent, so that it reads the same
    in JupyterLab's light and dark themes."""
    plain = json.loads(pio.to_json(fig_dict, validate=False, remove_uids=False))
    plain["config"] = dict(PLOT_CONFIG)
    layout = plain.setdefault("layout", {})
    template = (layout.get("template") or {}).get("layout") or {}
    for key in ("paper_bgcolor", "plot_bgcolor"):
        if layout.get(key, template.get(key)) in _TRANSPARENT:
            layout[key] = NOTEBOOK_BACKGROUND
    return plain


def live_bundle(fig_dict: Mapping[str, Any]) -> dict:
    """The mime bundle a live form puts in its figure's Output widget on every change.

    JupyterLab (and VS Code, Notebook 7) render ``application/vnd.plotly.v1+json`` with the
    plotly.js their extension loaded once; Colab renders neither that nor the book's script-less
    HTML, so there plotly's own ``colab`` bundle (HTML that loads plotly.js) is used."""
    if "google.colab" in sys.modules:
        return pio.renderers["colab"].to_mimebundle(dict(fig_dict))
    return {"application/vnd.plotly.v1+json": plotly_json(fig_dict)}


class BookRenderer(MimetypeRenderer):
    def to_mimebundle(self, fig_dict):
        html = pio.to_html(
            page_copy(fig_dict),
            include_plotlyjs=False,
            full_html=False,
            auto_play=False,
            validate=False,
            config=PLOT_CONFIG,
        )
        if os.environ.get("GPUBOOK_PLOTLY") == "html":
            return {"text/html": html}
        return {"application/vnd.plotly.v1+json": plotly_json(fig_dict), "text/html": html}


pio.renderers["gpubook"] = BookRenderer()
pio.renderers.default = "colab" if "google.colab" in sys.modules else "gpubook"
