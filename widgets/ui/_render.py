"""A plotly renderer that shows in JupyterLab AND in the published book.

plotly 6 in a kernel emits only ``application/vnd.plotly.v1+json``, which myst-nb drops: the figure
would be missing from the HTML. This renderer emits that mime type (JupyterLab renders it) plus a
``text/html`` div without plotly.js (the book loads plotly.js once per page from its own static
files) and without auto-play (a figure with frames would otherwise animate to its last frame).
In Colab, which renders neither, plotly's own ``colab`` renderer is used.

While the book is being built, the book's Sphinx extension sets ``GPUBOOK_PLOTLY=html`` for the
kernels it starts: the page needs only the HTML, and myst-nb would warn about the JSON mime type.
"""

from __future__ import annotations

import json
import os
import sys

import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer


class BookRenderer(MimetypeRenderer):
    def to_mimebundle(self, fig_dict):
        html = pio.to_html(
            fig_dict,
            include_plotlyjs=False,
            full_html=False,
            auto_play=False,
            validate=False,
            config={"displaylogo": False, "responsive": True, "displayModeBar": False},
        )
        if os.environ.get("GPUBOOK_PLOTLY") == "html":
            return {"text/html": html}
        plain = json.loads(pio.to_json(fig_dict, validate=False, remove_uids=False))
        return {"application/vnd.plotly.v1+json": plain, "text/html": html}


pio.renderers["gpubook"] = BookRenderer()
pio.renderers.default = "colab" if "google.colab" in sys.modules else "gpubook"
