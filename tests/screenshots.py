"""Screenshots of each chapter of the built book, for reviewers who do not build it.

    .venv/bin/python tests/screenshots.py [_build/html [out_dir]]

writes ``benchmarks/screenshots/<chapter>_1400.png`` (1400x900) and ``<chapter>_390.png``
(390x844, a phone) of the top of each chapter, and ``<chapter>_<width>_figure.png`` of its first
static calculator alone, in light mode.
Viewport-only screenshots at device scale 1 keep each PNG small. Needs headless Chromium (tests/headless.py).
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

import headless

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "screenshots"
SIZES = {"1400": (1400, 900), "390": (390, 844)}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main(html_dir: Path, out: Path = OUT) -> int:
    from playwright.sync_api import sync_playwright

    if not headless.CHROMIUM:
        print(headless.MISSING, file=sys.stderr)
        return 1
    if not (html_dir / "index.html").exists():
        print(f"no built book at {html_dir}: run `make book` first", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html_dir)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    chapters = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
    written = []
    with sync_playwright() as p:
        browser = headless.launch(p)
        for chapter in chapters:
            for label, (w, h) in SIZES.items():
                page = browser.new_page(viewport={"width": w, "height": h}, device_scale_factor=1)
                response = page.goto(f"{base}/chapters/{chapter}.html", wait_until="load")
                if not response or response.status != 200:
                    print(f"chapters/{chapter}.html: not in the build, skipped", file=sys.stderr)
                    page.close()
                    continue
                page.wait_for_timeout(800)
                path = out / f"{chapter}_{label}.png"
                page.screenshot(path=str(path))
                written.append(path)
                calc = page.locator(".plotly-graph-div").first
                if calc.count():
                    calc.scroll_into_view_if_needed()
                    page.evaluate("() => window.scrollBy(0, -60)")
                    # figures are drawn when they come near the viewport
                    page.wait_for_function(
                        "() => document.querySelector('.plotly-graph-div')._fullLayout", timeout=20000
                    )
                    page.wait_for_timeout(400)
                    path = out / f"{chapter}_{label}_figure.png"
                    calc.screenshot(path=str(path))  # the figure alone: a smaller PNG
                    written.append(path)
                page.close()
        browser.close()
    httpd.shutdown()
    for path in written:
        print(f"{path}  {path.stat().st_size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    html = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    sys.exit(main(html, Path(sys.argv[2]) if len(sys.argv) > 2 else OUT))
