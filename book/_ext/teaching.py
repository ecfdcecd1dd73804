"""The workshop kit's part of the build: quiz assets on the pages that hold a quiz, the taster's
slide deck, and ids of their own for the exercises' and solutions' bodies.

- Quizzes (``widgets/quiz.py``): ``quiz.js`` and ``quiz.css`` (``widgets/static``) are added only to
  pages whose body holds a quiz.
- Slides: one reveal.js deck, ``slides/taster.html`` in the built site, made from the chapters
  themselves when the book is built: per chapter (in ``_toc.yml`` order) its title, each
  "Takeaway" admonition as the page renders it (numbers included, since they come from the
  executed notebook), its drawn diagrams (``book/figures``) and the static calculator of the
  taster's core section (``TASTER_CORE`` in ``book/teaching/plan.py``, shared with the agenda; the
  chapter's first calculator when that section has none), preceded by a "predict first" slide so
  the readout does not answer the question before it is asked. No prose is copied into this file, so the deck
  cannot drift from the chapters. reveal.js (npm, ``package.json``), MathJax and plotly.js are
  served by the book: the deck loads nothing from the network.
- Exercises and solutions (sphinx-exercise 1.2.1) give every body the same id
  (``exercise-content``, ``solution-content``): eleven of each on a page, where an id must be
  unique. Each body's id is its exercise's or solution's own id with ``-content``.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
REVEAL = ROOT / "node_modules" / "reveal.js" / "dist"
REVEAL_FILES = ("reveal.js", "reveal.css", "theme/white.css")
DECK = "slides/taster.html"
QUIZ_MARK = 'class="gpubook-quiz"'


def _taster_core() -> dict:
    """``TASTER_CORE`` of book/teaching/plan.py (topic -> section title), the one list the agenda also uses."""
    import importlib.util
    import sys

    name = "gpubook_plan_for_slides"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "book" / "teaching" / "plan.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    mod = sys.modules[name]
    return dict(mod.TASTER_CORE)


def has_quiz(body: str) -> bool:
    """Whether a page body holds a quiz (widgets.quiz renders ``<div class="gpubook-quiz" ...>``)."""
    return QUIZ_MARK in (body or "")


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    if has_quiz(context.get("body") or ""):
        app.add_js_file("quiz.js")
        app.add_css_file("quiz.css")


# ---------------------------------------------------------------------------------------------
# slides: collected while each chapter is written, assembled when the build finishes


def _is_takeaway(node) -> bool:
    if not isinstance(node, nodes.admonition) or not node.children:
        return False
    title = node.children[0]
    return isinstance(title, nodes.title) and title.astext().strip().lower() == "takeaway"


def _render(app, node, docname: str) -> str:
    try:
        fragment = app.builder.render_partial(node.deepcopy())["fragment"]
    except Exception as exc:  # noqa: BLE001  (fall back to the text: a slide, not a failed build)
        logger.info(f"teaching: takeaway of {docname} rendered as text ({exc!r})")
        fragment = f"<p>{html.escape(node.astext())}</p>"
    # anchors inside the chapter point at the chapter page (the deck is one folder deep, like it)
    return re.sub(r'href="#', f'href="../{docname}.html#', fragment)


def _collect(app, doctree, docname) -> None:
    if app.builder.format != "html" or not docname.startswith("chapters/"):
        return
    title = next(iter(doctree.findall(nodes.title)), None)
    entry = {"docname": docname, "title": title.astext() if title else docname, "takeaways": [], "figures": [], "calculator": None}
    for adm in doctree.findall(nodes.admonition):
        if _is_takeaway(adm):
            body = adm.deepcopy()
            body.children = body.children[1:]  # the title becomes the slide's heading
            body["classes"] = [c for c in body.get("classes", []) if c != "admonition"]
            entry["takeaways"].append(_render(app, body, docname))
    if not entry["takeaways"]:  # a chapter without a takeaway box: its Summary's list
        for sec in doctree.findall(nodes.section):
            head = sec.next_node(nodes.title)
            if head is not None and head.astext().strip() == "Summary":
                items = sec.next_node(nodes.bullet_list)
                if items is not None:
                    entry["takeaways"].append(_render(app, items, docname))
                break
    for img in doctree.findall(nodes.image):
        uri = img.get("uri", "")
        if "figures/" in uri and uri.endswith(".svg"):
            entry["figures"].append((uri, img.get("alt", "")))
    def first_calculator(tree):
        for raw in tree.findall(nodes.raw):
            text = raw.astext()
            if "html" in raw.get("format", "") and "plotly-graph-div" in text and "Plotly.newPlot" in text:
                return text
        return None

    core = _taster_core().get(docname.split("/", 1)[1])
    entry["core"] = core
    for sec in doctree.findall(nodes.section):
        head = sec.next_node(nodes.title)
        if core and head is not None and head.astext().strip() == core:
            entry["calculator"] = first_calculator(sec)
            break
    if entry["calculator"] is None:
        entry["calculator"] = first_calculator(doctree)
    app.env.gpubook_slides = getattr(app.env, "gpubook_slides", {})
    app.env.gpubook_slides[docname] = entry


def _chapter_order(app) -> list[str]:
    import yaml

    try:
        toc = yaml.safe_load(Path(app.config.external_toc_path).read_text()) if getattr(app.config, "external_toc_path", None) else None
    except Exception:  # noqa: BLE001
        toc = None
    toc = toc or yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []
    for part in toc.get("parts", []):
        for c in part.get("chapters", []):
            files.append(c.get("file", ""))
    return [f for f in files if f.startswith("chapters/")]


def _image_path(app, uri: str) -> str | None:
    name = app.builder.images.get(uri) if hasattr(app.builder, "images") else None
    return f"../_images/{name}" if name else None


def deck_html(app, chapters: list[dict]) -> str:
    """The reveal.js deck (HTML) for ``chapters`` (entries made by ``_collect``)."""
    title = html.escape(app.config.html_title or app.config.project or "The book")
    slides = [
        f'<section><h1 class="deck-title">{title}</h1><p>A two-hour taster</p>'
        "<ol>" + "".join(f"<li>{html.escape(c['title'])}</li>" for c in chapters) + "</ol>"
        '<p class="deck-small">Space, PageDown or the arrow keys step through every slide; Esc for an overview. '
        "Made from the chapters when the book was built.</p></section>"
    ]
    for c in chapters:
        link = f"../{c['docname']}.html"
        inner = [f'<section><h2>{html.escape(c["title"])}</h2><p><a href="{link}">Open the chapter</a></p></section>']
        for i, t in enumerate(c["takeaways"], 1):
            n = f" {i}/{len(c['takeaways'])}" if len(c["takeaways"]) > 1 else ""
            inner.append(f'<section><h3>Takeaway{n}</h3><div class="deck-takeaway">{t}</div></section>')
        for uri, alt in c["figures"]:
            src = _image_path(app, uri)
            if src:
                inner.append(
                    f'<section><img class="deck-figure" src="{src}" alt="{html.escape(alt)}">'
                    f'<p class="deck-small">{html.escape(alt)}</p></section>'
                )
        if c["calculator"]:
            core = html.escape(c.get("core") or "the chapter's calculator")
            inner.append(
                f'<section><h3>Predict first: {core}</h3><p>Before the next slide: write down your guess '
                "(the instructor notes give the question). The calculator on the next slide shows the answer.</p></section>"
            )
            inner.append(
                '<section class="deck-calculator"><h3>Calculator</h3>'
                f'<div class="deck-plot">{c["calculator"]}</div>'
                '<p class="deck-small">The chapter\'s static calculator: pick, slide, predict. '
                f'<a href="{link}">More in the chapter</a>.</p></section>'
            )
        slides.append("<section>" + "".join(inner) + "</section>")
    slides.append(
        '<section><h2>Now measure</h2><p>Run a chapter\'s <em>Predict, then measure</em> on your GPU, '
        "then gather the room's records:</p><pre><code>python -m widgets.measure --out mine\n"
        "python -m widgets.measure --merge room/*/ --out room/merged</code></pre></section>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}: taster slides</title>
<link rel="stylesheet" href="../_static/reveal/reveal.css">
<link rel="stylesheet" href="../_static/reveal/theme/white.css">
<script src="../_static/plotly.min.js"></script>
<style>
.reveal h1.deck-title {{ font-size: 1.7em; }} .reveal h2 {{ font-size: 1.4em; }} .reveal h3 {{ font-size: 1.1em; }}
.reveal .deck-takeaway {{ font-size: 0.72em; text-align: left; }}
.reveal .deck-small {{ font-size: 0.5em; color: #555; }}
.reveal img.deck-figure {{ max-height: 62vh; max-width: 90%; background: #fff; }}
.reveal .deck-plot {{ width: 100%; font-size: 0.45em; }}
.reveal ol {{ font-size: 0.7em; }}
.reveal pre code {{ font-size: 0.8em; }}
</style>
</head><body>
<div class="reveal"><div class="slides">
{"".join(slides)}
</div></div>
<script>window.MathJax = {{tex: {{inlineMath: [["\\\\(", "\\\\)"]]}}, startup: {{typeset: true}}}};</script>
<script src="../_static/mathjax/tex-chtml.js" async></script>
<script src="../_static/reveal/reveal.js"></script>
<script>
Reveal.initialize({{hash: true, width: 1200, height: 800, margin: 0.04, navigationMode: "linear"}});
Reveal.on("slidechanged", function (e) {{
  if (window.Plotly) e.currentSlide.querySelectorAll(".plotly-graph-div").forEach(function (d) {{ Plotly.Plots.resize(d); }});
}});
</script>
</body></html>
"""


def _write_deck(app, exception) -> None:
    if exception or app.builder.format != "html":
        return
    collected = getattr(app.env, "gpubook_slides", {})
    chapters = [collected[d] for d in _chapter_order(app) if d in collected]
    if not chapters:
        return
    out = Path(app.outdir)
    static = out / "_static" / "reveal"
    for f in REVEAL_FILES:
        src = REVEAL / f
        if not src.exists():
            logger.warning(f"teaching: {src} is missing: run `npm ci` (make install) before building; the slides need reveal.js")
            return
        (static / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, static / f)
    deck = out / DECK
    deck.parent.mkdir(parents=True, exist_ok=True)
    deck.write_text(deck_html(app, chapters), encoding="utf-8")


def _merge(app, env, docnames, other) -> None:  # parallel reads: keep what each worker collected
    env.gpubook_slides = {**getattr(env, "gpubook_slides", {}), **getattr(other, "gpubook_slides", {})}


CONTENT_IDS = ("exercise-content", "solution-content")  # what sphinx-exercise calls every body


def _unique_content_ids(app, doctree, docname):
    """Each exercise's and solution's body gets an id of its own (see the module docstring)."""
    n = 0
    for section in doctree.findall(nodes.section):
        for same in CONTENT_IDS:
            if same in section["ids"]:
                n += 1
                owner = (section.parent.get("ids") or [None])[0] if section.parent is not None else None
                new = f"{owner}-content" if owner else f"{same}-{n}"
                section["ids"] = [new if i == same else i for i in section["ids"]]


def setup(app):
    # before offline_assets (900), which replaces the page's script list: a file added after it is lost
    app.connect("html-page-context", _page_assets, priority=800)
    app.connect("doctree-resolved", _collect)
    app.connect("doctree-resolved", _unique_content_ids)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _write_deck)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
