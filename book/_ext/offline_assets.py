"""Serve every browser asset from the book itself: nothing is loaded from a CDN.

- plotly.js: copied from the installed ``plotly`` Python package (so its version always matches
  the figures) and loaded once per page;
- MathJax 3 (``mathjax_path`` points here), require.js and the ipywidgets HTML manager
  (``nb_ipywidgets_js`` points here): copied from ``node_modules`` (``npm ci`` installs them from
  ``package-lock.json``; ``make install`` runs it).

The files go to a folder under the build directory that is added to ``html_static_path``.
"""

from __future__ import annotations

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
    static = Path(app.outdir).parent / "offline_static"
    _populate(static)
    config.html_static_path = list(config.html_static_path) + [str(static)]


def setup(app: Sphinx):
    app.connect("config-inited", _on_config_inited)
    # plotly.js once per page, before the figures' inline scripts run
    app.add_js_file("plotly.min.js", priority=200)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
