"""The built book: warning-free, every page present, static calculators carry their slider
steps, and nothing is loaded from the network."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.build


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


def test_every_toc_page_is_built(built_book):
    for f in toc_files():
        assert (built_book / f"{f}.html").exists(), f
    assert (built_book / "index.html").exists()


def test_chapters_are_named_by_topic():
    for f in toc_files():
        if f.startswith("chapters/"):
            assert not re.match(r"chapters/\d", f), f"{f}: order lives in _toc.yml, not in file names"


EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)


def test_no_page_loads_anything_from_the_network(built_book):
    pages = list(built_book.rglob("*.html"))
    assert pages
    for page in pages:
        html = page.read_text(errors="replace")
        bad = [m.group(0) for m in EXTERNAL.finditer(html)]
        # links to other sites (<a href>) are fine; resources are not
        assert not bad, f"{page.relative_to(built_book)} loads {bad[:3]}"
    for css in built_book.rglob("*.css"):
        text = css.read_text(errors="replace")
        assert not re.search(r"@import\s+url\(\s*['\"]?https?:", text), css
        assert not re.search(r"url\(\s*['\"]?https?://[^)]*\.(woff2?|ttf|otf|eot)", text), css


def test_assets_are_served_by_the_book(built_book):
    static = built_book / "_static"
    for name in ("plotly.min.js", "require.min.js", "embed-amd.js", "mathjax/tex-chtml.js"):
        assert (static / name).exists(), name
    page = (built_book / "chapters" / "memory_hierarchy.html").read_text()
    assert "_static/plotly.min.js" in page and "_static/mathjax/tex-chtml.js" in page


def _figures(html):
    """The JSON arguments of each Plotly.newPlot call: (data, layout) text."""
    return re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{", html, re.S)


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb")))
def test_static_calculators_carry_their_slider_steps(built_book, chapter):
    html = (built_book / "chapters" / f"{chapter}.html").read_text()
    n_sliders = html.count('"sliders"')
    if chapter == "memory_hierarchy":
        assert n_sliders >= 3
    if n_sliders:
        # every slider step animates to a named frame, and the frames are in the page
        assert '"method":"animate"' in html.replace(" ", "")
        assert "Plotly.addFrames" in html or '"frames"' in html


def test_memory_hierarchy_numbers_come_from_glue(built_book):
    html = (built_book / "chapters" / "memory_hierarchy.html").read_text()
    assert "989 TFLOP/s" in html and "4.8 TB/s" in html and "206" in html
    assert "Invalid input" not in html and "Traceback" not in html
