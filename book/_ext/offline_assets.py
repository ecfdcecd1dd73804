"""Serve every browser asset from the book itself (nothing from a CDN), and only where a page uses it.

- plotly.js: loaded only on pages whose body holds a plotly figure. The npm partial bundle
  ``plotly.js-cartesian-dist-min`` (1.4 MB instead of 4.8 MB) is used when every trace type of the
  page's figures is in it; otherwise the full bundle copied from the installed ``plotly`` Python
  package (so its version matches the figures) is loaded instead.
- The ipywidgets HTML manager and require.js: myst-nb adds them (and the saved widget state) to
  every notebook page whose metadata holds widget state, even when no widget is displayed (the
  live forms are removed from the HTML). They are kept only on pages that display a widget view.
- MathJax 3 (``mathjax_path`` points here), require.js and the ipywidgets HTML manager
  (``nb_ipywidgets_js`` points here): copied from ``node_modules`` (``npm ci`` installs them from
  ``package-lock.json``; ``make install`` runs it).
- MathJax only on pages with maths (myst-nb asks Sphinx to put it on every page).
- pydata-sphinx-theme's ``fontawesome.js`` (1.5 MB, "so that users can add custom icons") is
  dropped from every page: the theme's CSS already draws every icon the pages use from its web
  fonts.
- ``book/_static``: the book's own CSS (tables in light and dark mode) on every page, and the
  script that gives plots the dark template when the reader picks dark mode, on figure pages only.
  The dark and light templates are written at build time from ``widgets.ui._core`` (one source).
- ``widgets/static``: the quizzes' ``quiz.js`` and ``quiz.css`` (package data, their one home).

The copied files go to a folder under the build directory that is added to ``html_static_path``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules"
BOOK_STATIC = ROOT / "book" / "_static"
# the quiz's script and style: package data of widgets (a pip install, e.g. on Colab, has them too),
# served from there so that they have one home
QUIZ_STATIC = ROOT / "widgets" / "static"

# destination (relative to _static) -> source (relative to node_modules); folders copied whole
NODE_ASSETS = {
    "require.min.js": "requirejs/require.js",
    "mathjax": "mathjax/es5",
    "embed-amd.js": "@jupyter-widgets/html-manager/dist/embed-amd.js",
    "plotly-cartesian.min.js": "plotly.js-cartesian-dist-min/plotly-cartesian.min.js",
}
PLOTLY_FULL = "plotly.min.js"
PLOTLY_CARTESIAN = "plotly-cartesian.min.js"
# trace modules in plotly.js-cartesian-dist (its README: "Contains trace modules ...")
CARTESIAN_TRACES = frozenset(
    "bar box contour heatmap histogram histogram2d histogram2dcontour image pie scatter scatterternary violin".split()
)
# the HTML manager's bundled fonts are fetched relative to embed-amd.js
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_SCRIPTS = ("require.min.js", "embed-amd.js")


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

    (static / PLOTLY_FULL).write_text(get_plotlyjs(), encoding="utf-8")
    (static / "plotly_templates.js").write_text(_templates_js(), encoding="utf-8")


def _templates_js() -> str:
    """``window.GPUBOOK_TEMPLATES = {light, dark}`` from the figure kit's plotly templates (the
    page swaps between them when the reader changes the colour mode)."""
    try:
        import plotly.io as pio

        import widgets.ui._core  # noqa: F401  (registers book_light / book_dark)

        templates = {
            "light": pio.templates["book_light"].to_plotly_json(),
            "dark": pio.templates["book_dark"].to_plotly_json(),
        }
    except Exception as exc:  # noqa: BLE001  (the page script would derive a dark look itself)
        logger.warning(f"offline_assets: cannot export the figure kit's book_light/book_dark plotly templates: {exc!r}")
        templates = {}
    return "window.GPUBOOK_TEMPLATES = " + json.dumps(templates, separators=(",", ":")) + ";\n"


def _on_config_inited(app: Sphinx, config) -> None:
    # Kernels started by myst-nb inherit this: figures then carry only their HTML, which this
    # page can show (plotly.js is served below); see widgets/ui/_render.py.
    os.environ["GPUBOOK_PLOTLY"] = "html"
    # widgets.book: the page shows the reference record, not the build machine's run
    os.environ["GPUBOOK_BUILD"] = "1"
    static = Path(app.outdir).parent / "offline_static"
    _populate(static)
    config.html_static_path = list(config.html_static_path) + [str(static), str(BOOK_STATIC), str(QUIZ_STATIC)]


def setup(app: Sphinx):
    app.connect("config-inited", _on_config_inited)
    # after myst-nb's handler (priority 500), which adds the widget manager to notebook pages
    app.connect("html-page-context", _page_assets, priority=900)
    app.connect("build-finished", _drop_fontawesome_js)
    app.add_css_file("gpubook.css")
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------------------------------------
# per page


def _json_after(text: str, start: int):
    """The JSON value that starts at or after ``start`` (skipping spaces and commas)."""
    i = start
    while i < len(text) and text[i] in " \n\t,":
        i += 1
    return json.JSONDecoder().raw_decode(text, i)[0]


_CALL = re.compile(r"Plotly\.(newPlot|addFrames)\(\s*(['\"])([^'\"]+)\2\s*,")


def trace_types(body: str) -> set[str] | None:
    """Every plotly trace type drawn in ``body`` (initial data and animation frames), or None when
    a figure's arguments cannot be read (then the full bundle is used)."""
    types: set[str] = set()
    for m in _CALL.finditer(body):
        try:
            value = _json_after(body, m.end())
        except ValueError:
            return None
        traces = value if m.group(1) == "newPlot" else [t for f in value for t in (f.get("data") or [])]
        for t in traces:
            if isinstance(t, dict):
                types.add(t.get("type") or "scatter")
    return types


def plotly_bundle(body: str) -> str | None:
    """The plotly.js file this page needs: None without a figure, the cartesian bundle when it has
    every trace type used, else the full bundle."""
    if "plotly-graph-div" not in body:
        return None
    types = trace_types(body)
    if types is not None and types <= CARTESIAN_TRACES:
        return PLOTLY_CARTESIAN
    return PLOTLY_FULL


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body") or ""
    bundle = plotly_bundle(body)
    if bundle:
        # before the figures' inline scripts run; the templates, then the dark-mode swap after it
        app.add_js_file(bundle, priority=200)
        app.add_js_file("plotly_templates.js", priority=201)
        app.add_js_file("plotly_theme.js", priority=202)
    scripts = context.get("script_files")
    if not scripts:
        return
    scripts = _dedupe(scripts)
    if WIDGET_VIEW not in body:
        scripts = [js for js in scripts if not _is_widget_script(js)]
    if not has_maths(body):
        scripts = [js for js in scripts if not _is_mathjax(js, app.config.mathjax_path)]
    context["script_files"] = _point_widget_manager_at_static(scripts, context)


_MATHS = re.compile(r'class="[^"]*\bmath\b|\\\(|\\\[|\$\$')


def has_maths(body: str) -> bool:
    """Whether MathJax has anything to typeset here: Sphinx's maths nodes (from $...$, {math},
    LaTeX outputs) or TeX delimiters in an HTML output."""
    return bool(_MATHS.search(body))


def _is_mathjax(js, mathjax_path: str) -> bool:
    name = str(getattr(js, "filename", js) or "")
    body = (getattr(js, "attributes", {}) or {}).get("body") or ""
    return (
        bool(mathjax_path) and name.split("?")[0].endswith(mathjax_path) or body.lstrip().startswith("window.MathJax")
    )


_FONTAWESOME_JS = re.compile(
    r'[ \t]*(?:<!-- So that users can add custom icons -->\s*)?<script src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?'
)


def _drop_fontawesome_js(app, exception) -> None:
    if exception or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _FONTAWESOME_JS.sub("", text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def _is_widget_script(js) -> bool:
    name = str(getattr(js, "filename", js) or "")
    attrs = getattr(js, "attributes", {}) or {}
    return name.endswith(WIDGET_SCRIPTS) or attrs.get("type") == WIDGET_STATE


def _dedupe(scripts: list) -> list:
    """sphinx-thebe registers its inline configuration script twice under Jupyter Book, which
    redeclares a ``const`` and raises a console error on every page: keep one copy of each."""
    seen, unique = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", js) or "", attrs.get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    return unique


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
                    body=f'require.config({{paths: {{"@jupyter-widgets/html-manager/dist": "{static}"}}}});',
                )
            )
        out.append(js)
    return out
