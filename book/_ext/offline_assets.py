"""Serve every browser asset from the book itself: nothing is loaded from a CDN.

- plotly.js: copied from the installed ``plotly`` Python package (so its version always matches
  the figures) and loaded once per page;
- MathJax 3 (``mathjax_path`` points here), require.js and the ipywidgets HTML manager
  (``nb_ipywidgets_js`` points here): copied from ``node_modules`` (``npm ci`` installs them from
  ``package-lock.json``; ``make install`` runs it).

The files go to a folder under the build directory that is added to ``html_static_path``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules"

# destination (relative to _static) -> source (relative to node_modules); folders copied whole
NODE_ASSETS = {
    "require.min.js": "requirejs/require.js",
    "mathjax": "mathjax/es5",
    "embed-amd.js": "@jupyter-widgets/html-manager/dist/embed-amd.js",
}
# the HTML manager's bundled fonts are fetched relative to embed-amd.js
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


def _populate(static: Path) -> None:
    missing = [src for src in NODE_ASSETS.values() if not (NODE / src).exists()]
    if missing:
        raise ExtensionError(
            "offline_assets: missing " + ", ".join(missing) + f" under {NODE}. Run `npm ci` in the "
            "repository root (or `make install`) before building the book."
        )
    static.mkdir(parents=True, exist_ok=True)
    for dst, src in NODE_ASSETS.items():
        s, d = NODE / src, static / dst
        if s.is_dir():
            if not d.exists():
                shutil.copytree(s, d)
        else:
            shutil.copyfile(s, d)
    dist = NODE / "@jupyter-widgets/html-manager/dist"
    for font in dist.iterdir():
        if font.suffix in FONT_SUFFIXES:
            shutil.copyfile(font, static / font.name)
    from plotly.offline import get_plotlyjs

    (static / "plotly.min.js").write_text(get_plotlyjs(), encoding="utf-8")


def _on_config_inited(app: Sphinx, config) -> None:
    # Kernels started by myst-nb inherit this: figures then carry only their HTML, which this
    # page can show (plotly.js is served below); see widgets/ui/_render.py.
    os.environ["GPUBOOK_PLOTLY"] = "html"
    # ...and this: chapters show the recorded reference, not the build machine's run (widgets/book.py).
    os.environ["GPUBOOK_BUILD"] = "1"
    static = Path(app.outdir).parent / "offline_static"
    _populate(static)
    config.html_static_path = list(config.html_static_path) + [str(static)]


def setup(app: Sphinx):
    app.connect("config-inited", _on_config_inited)
    app.connect("html-page-context", _dedupe_scripts)
    # plotly.js once per page, before the figures' inline scripts run
    app.add_js_file("plotly.min.js", priority=200)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """sphinx-thebe registers its inline configuration script twice under Jupyter Book, which
    redeclares a ``const`` and raises a console error on every page: keep one copy of each."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", js) or "", attrs.get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = _point_widget_manager_at_static(unique, context)


def _point_widget_manager_at_static(scripts: list, context) -> list:
    """The ipywidgets HTML manager locates its font files through require.js, relative to the
    module id ``@jupyter-widgets/html-manager/dist/...``, i.e. relative to the page. Map that
    id to this page's ``_static`` folder, where the fonts are."""
    from sphinx.builders.html._assets import _JavaScript

    out = []
    for js in scripts:
        if str(getattr(js, "filename", "") or "").endswith("embed-amd.js"):
            static = context["pathto"]("_static", 1)
            out.append(
                _JavaScript(
                    "",
                    body='require.config({paths: {"@jupyter-widgets/html-manager/dist": "%s"}});' % static,
                )
            )
        out.append(js)
    return out
