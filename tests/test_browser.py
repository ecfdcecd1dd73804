"""A real browser: headless Chromium (Debian's `chromium`, driven by Playwright) opens each built
chapter from a local web server, moves every static calculator's slider, checks that the figure
changed, and sees no console error and no request leaving the machine."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
pytestmark = pytest.mark.browser

if not CHROMIUM:  # `make test` installs it; fail loudly rather than skip silently
    pytest.fail("headless Chromium is needed: install Debian's `chromium` (make test does)", pytrace=False)

FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_book):
    handler = functools.partial(_Quiet, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


STATE = """id => { const gd = document.getElementById(id);
  return {active: gd.layout.sliders[0].active, steps: gd.layout.sliders[0].steps.length,
          title: (gd.layout.title || {}).text || '',
          data: JSON.stringify(gd.data.map(t => [t.x, t.y]))}; }"""


def _slider_figures(page):
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.plotly-graph-div'))
             .filter(gd => gd.layout && gd.layout.sliders && gd.layout.sliders.length)
             .map(gd => gd.id)"""
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_static_sliders_move_without_errors(server, browser, chapter):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors, outside = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname not in ("127.0.0.1", None) and not r.url.startswith("data:") else None)
    page.goto(f"{server}/chapters/{chapter}.html", wait_until="load")
    page.wait_for_function("() => window.Plotly !== undefined")
    page.wait_for_timeout(500)
    ids = _slider_figures(page)
    if chapter == "memory_hierarchy":
        assert len(ids) >= 3, "the exemplar chapter has three static calculators"
    for fig_id in ids:
        fig = page.locator(f'[id="{fig_id}"]')
        fig.scroll_into_view_if_needed()
        before = page.evaluate(STATE, fig_id)
        rail = fig.locator(".slider-rail-touch-rect").first
        box = rail.bounding_box()
        assert box, f"{chapter}: slider of {fig_id} not drawn"
        # click far from the current position so the slider must move
        x_frac = 0.9 if (before["active"] or 0) < before["steps"] / 2 else 0.1
        page.mouse.click(box["x"] + x_frac * box["width"], box["y"] + box["height"] / 2)
        page.wait_for_timeout(400)
        after = page.evaluate(STATE, fig_id)
        assert after["active"] != before["active"], f"{chapter}: slider of {fig_id} did not move"
        assert after["title"] != before["title"] or after["data"] != before["data"], f"{chapter}: figure {fig_id} did not change"
    page.close()
    assert not errors, f"{chapter}: console errors {errors[:5]}"
    assert not outside, f"{chapter}: requests left the machine: {outside[:5]}"


def test_maths_renders_offline(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/chapters/memory_hierarchy.html", wait_until="load")
    page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=20000)
    assert page.locator("mjx-container").count() > 5
    page.close()
