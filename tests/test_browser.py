"""The built site in a real browser: headless Chromium (tests/headless.py, driven by Playwright)
opens every page of the book from a local web server, as a reader would at 1400x900 and on a
390x844 phone.

Checked on each page: launch buttons (Colab URL of this chapter's notebook); both sidebars open
and close on a phone; no build-machine output ("No GPU here", a "this device" column, `FAIL:`, "CPU (x86_64)",
"on this machine:") and
no Python repr; every static calculator has two or more controls and each one changes the figure;
every "Guess first" is followed by an answer hidden until clicked; plots follow dark mode; the
weight budget; zero console errors and warnings; no request leaves the machine; comparison tables
show every column on a phone (cards) and stay tables on a desktop; the accuracy page's tables fit
their column at 1280x900.

Each check is parametrized by page, so a failure names the page and says why. Every page is
opened at 1400x900 in light mode (fixture ``desktop``), the intro and the chapters also on the
phone with the reader's stored choice of dark mode (``phone_dark``); each visit is shared by the
checks that read the page that way, and the root conftest.py keeps a page's checks on one worker.
Reuse a build with GPUBOOK_BUILT_HTML=_build/html.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import headless
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
pytestmark = pytest.mark.browser

if not headless.CHROMIUM:
    pytest.skip(headless.MISSING, allow_module_level=True)


def _toc_pages():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [c["file"] for c in part["chapters"]]
    return pages


PAGES = _toc_pages()
CHAPTER_PAGES = [f"chapters/{c}" for c in CHAPTERS]

# budgets (issue 9): bytes transferred per page (fresh cache, until the network is idle), checked here;
# time to the load event with the local server, recorded by `tests/benchmark.py pages` (a benchmark:
# a timed assertion fails on a busy machine and proves nothing on an idle one)
INTRO_BYTES = 1.5e6
PAGE_BYTES = 5e6
LOAD_S = 3.0


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
        b = headless.launch(p)
        yield b
        b.close()


@dataclass
class Visit:
    """One page opened in a fresh browser context (empty cache), with what it logged and fetched."""

    page: object
    console: list = field(default_factory=list)  # "type: text" of every error/warning
    outside: list = field(default_factory=list)  # URLs of requests that left the machine
    failed: list = field(default_factory=list)
    bytes: int = 0
    load_s: float = 0.0
    bytes_at_load: int = 0  # ``bytes`` when the page had loaded (``_Held``), before figures were drawn
    drawn: tuple = (0, 0, 0)  # len(console), len(failed), len(outside) once loaded and drawn (``_Held``)
    draw_error: str = ""  # why not every figure drew (``_Held``)


def _mark(v: Visit) -> tuple:
    return len(v.console), len(v.failed), len(v.outside)


def _messages_since(v: Visit, mark: tuple, and_the_load: bool = False) -> list[str]:
    """What the page logged, and the requests that failed or left the machine, since ``mark`` (and,
    with ``and_the_load``, while it loaded and drew its figures)."""
    spans = [((0, 0, 0), v.drawn), (mark, None)] if and_the_load else [(mark, None)]
    out = []
    for (c, f, o), end in spans:
        ce, fe, oe = end or (None, None, None)
        out += [*v.console[c:ce]] + [f"failed request: {r}" for r in v.failed[f:fe]]
        out += [f"request left the machine: {r}" for r in v.outside[o:oe]]
    return out


def _open(browser, server, path, *, width=1400, height=900, dark=False) -> Visit:
    ctx = browser.new_context(viewport={"width": width, "height": height})
    if dark:  # what pydata-sphinx-theme stores when the reader picks dark mode
        ctx.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    page = ctx.new_page()
    v = Visit(page)

    def on_console(m):
        if m.type in ("error", "warning"):
            v.console.append(f"{m.type}: {m.text}")

    def on_request(r):
        host = urlparse(r.url).hostname
        if host not in ("127.0.0.1", None) and not r.url.startswith(("data:", "blob:")):
            v.outside.append(r.url)

    def on_finished(r):
        try:
            sizes = r.sizes()
            v.bytes += sizes["responseBodySize"] + sizes["responseHeadersSize"]
        except Exception:  # noqa: BLE001  (a request cancelled by the page has no sizes)
            pass

    page.on("console", on_console)
    page.on("pageerror", lambda e: v.console.append(f"pageerror: {e}"))
    page.on("request", on_request)
    page.on("requestfinished", on_finished)
    page.on("requestfailed", lambda r: v.failed.append(f"{r.url} ({r.failure})"))
    page.goto(f"{server}/{path}.html", wait_until="load")
    page.wait_for_function("() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
    v.load_s = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd / 1000")
    try:
        page.wait_for_load_state("networkidle", timeout=15000)
    except Exception:  # noqa: BLE001  (the byte count below is then a lower bound)
        pass
    page.wait_for_timeout(300)
    return v


def _close(v: Visit):
    v.page.context.close()


def test_each_check_judges_the_load_and_its_own_messages():
    """The bookkeeping that lets a page's checks share one visit: the load's and drawing's messages,
    then each check's own, never another check's."""
    v = Visit(page=None, console=["error: at load"], failed=["a.js"], outside=[])
    v.drawn = _mark(v)
    v.console.append("error: by another check")
    mark = _mark(v)
    v.console.append("error: by this check")
    v.outside.append("https://example.org/x")
    assert _messages_since(v, mark) == ["error: by this check", "request left the machine: https://example.org/x"]
    assert _messages_since(v, mark, and_the_load=True) == [
        "error: at load", "failed request: a.js", "error: by this check", "request left the machine: https://example.org/x"]


class _Held:
    """The page last opened for each way of reading it (one per worker, shared by a page's tests):
    the root conftest.py's scheduler keeps each page's tests on one worker, one after another, so
    each page is opened once per way; it stays open until another page is asked for that way."""

    def __init__(self, server, browser):
        self.server, self.browser, self.held = server, browser, {}

    def get(self, way: str, path: str, **how) -> Visit:
        old = self.held.pop(way, None)
        if old and old[0] == path and urlparse(old[1].page.url).path.endswith(f"/{path}.html"):
            self.held[way] = old
            return old[1]
        if old:  # another page, or a test's click left this one
            _close(old[1])
        v = _open(self.browser, self.server, path, **how)
        v.bytes_at_load = v.bytes
        self.held[way] = (path, v)
        try:
            _draw_all(v.page)
        except Exception as exc:  # noqa: BLE001  (reported by the tests that read the figures)
            v.draw_error = f"not every figure drew: {exc}".splitlines()[0]
        v.drawn = _mark(v)
        return v

    def close(self):
        for _, v in self.held.values():
            _close(v)


@pytest.fixture(scope="module")
def held(server, browser):
    h = _Held(server, browser)
    yield h
    h.close()


@pytest.fixture
def desktop(held):
    """``desktop(path)``: the page as a reader opens it at 1400x900 in light mode (a fresh context:
    empty cache), every figure drawn, shared by the tests that read or use a page at that size (what
    it says and weighs, its static calculators, its guesses, its quiz, its maths). A chapter page is
    4-5 MB and draws 10-30 figures: about 6 CPU s per visit on this machine, so one visit serves
    them all. The tests run in any order (pytest-randomly): each changes only what it alone reads (a
    figure's slider, a guess's answer, a quiz's questions); the weight test judges the load and the
    drawing of the figures (bytes counted when the page had loaded, messages until every figure
    drew), and each test that clicks judges the messages its own clicks caused."""
    return lambda path: held.get("desktop", path)


@pytest.fixture
def phone_dark(held):
    """``phone_dark(path)``: the page on a 390x844 phone with the reader's stored choice of dark
    mode, every figure drawn; shared by the phone test (sidebars, wide tables) and the dark-mode test
    (which ends by switching the page to light). Neither reads what the other changes. Dark mode is
    so checked at phone width only: the plots' colours come from the page's mode
    (book/_static/plotly_theme.js), not from its width."""
    return lambda path: held.get("phone_dark", path, width=390, height=844, dark=True)



@pytest.fixture
def desktop_1280(held):
    """``desktop_1280(path)``: the page at 1280x900 in light mode (the accuracy page's ledger tables
    overflowed their column there by a few pixels: reader check r19), every figure drawn."""
    return lambda path: held.get("desktop_1280", path, width=1280, height=900)

def _draw_all(page):
    """Open every collapsed output that holds a figure, scroll to every figure (the page draws each
    one when it comes near the viewport) and wait until all are drawn."""
    page.evaluate(
        """() => document.querySelectorAll('details:not([open])').forEach(d => {
             if (d.querySelector('.plotly-graph-div')) d.querySelector('summary').click(); })"""
    )
    figs = page.locator(".plotly-graph-div")
    for i in range(figs.count()):
        figs.nth(i).scroll_into_view_if_needed()
        page.wait_for_timeout(50)
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.plotly-graph-div')).every(gd => gd._fullLayout)", timeout=30000
    )
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(200)


# ---------------------------------------------------------------------------------------------
# weight, time, console, network: every page


# Known defects found by a full run and left for later: marked, not hidden (none open). Round 5 fixed
# the serving page's weight (5.14 MB -> 4.59 MB: the renderer's page copy of each figure) and the
# collectives roofline slider (below the fold: the test now scrolls a slider into view first).
KNOWN_DEFECTS: dict[str, str] = {}


def _known(values):
    return [pytest.param(v, marks=pytest.mark.xfail(reason=KNOWN_DEFECTS[v], strict=False)) if v in KNOWN_DEFECTS else v
            for v in values]


# ---------------------------------------------------------------------------------------------
# what the page says


TEXTS = """() => {
  const main = document.querySelector('main') || document.body;
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let prose = [], outputs = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest('script, style, mjx-container, .cell_input, .modebar')) continue;
    if (el.closest('.cell_output')) outputs.push(n.textContent);
    else if (!el.closest('div[class*="highlight"], pre, code')) prose.push(n.textContent);
  }
  const heads = Array.from(main.querySelectorAll('th')).map(th => th.textContent.trim());
  return {prose: prose.join(' '), outputs: outputs.join(' '), heads: heads};
}"""

BUILD_MACHINE = (re.compile(r"\bCPU \((?:x86_64|aarch64|arm64|i[3-6]86|[A-Za-z0-9_ ]*Intel[^)]*|[A-Za-z0-9_ ]*AMD[^)]*)\)"),
                 re.compile(r"on this machine:", re.I))
REPRS = [
    (re.compile(r"\{'"), "a dict repr ({'...)"),
    (re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"), "an object repr (<... object at 0x...>)"),
    (re.compile(r"\bdict\("), "dict(...)"),
    (re.compile(r"\bnp\.(?:float|int)\d*\("), "a NumPy scalar repr (np.float64(...))"),
    (re.compile(r"\barray\(\["), "a NumPy array repr"),
    # a dataclass is named in CamelCase; prose that names a call (memory_summary(abbreviated=True)) is not a repr
    (re.compile(r"\b[A-Z]\w*\(\w+=[^)]*\)"), "a dataclass repr (Name(field=...))"),
]


@pytest.mark.parametrize("path", _known(PAGES))
def test_weight_network_console_and_what_the_page_says(desktop, path):
    """What loading the page took (bytes against the budget; console, failed requests and requests
    leaving the machine while it loaded and drew its figures), a chapter's launch buttons, then, with
    every figure drawn, what it says (no build-machine output, no Python reprs)."""
    v = desktop(path)
    budget = INTRO_BYTES if path == PAGES[0] else PAGE_BYTES
    problems = [v.draw_error] if v.draw_error else []
    if v.bytes_at_load > budget:
        problems.append(f"{v.bytes_at_load / 1e6:.2f} MB transferred, budget {budget / 1e6:.1f} MB")
    console, failed, outside = v.console[: v.drawn[0]], v.failed[: v.drawn[1]], v.outside[: v.drawn[2]]
    if console:
        problems.append(f"console: {console[:5]}")
    if failed:
        problems.append(f"failed requests: {failed[:5]}")
    if outside:
        problems.append(f"requests left the machine: {outside[:5]}")
    if path.startswith("chapters/"):
        problems += [f"launch buttons: {p}" for p in _launch_button_problems(v.page, path.split("/", 1)[1])]
    t = v.page.evaluate(TEXTS)
    everything = t["prose"] + " " + t["outputs"]
    if "No GPU here" in everything:
        problems.append('shows "No GPU here" (the build machine\'s banner)')
    device_cols = [h for h in t["heads"] if "this device" in h.lower()]
    if device_cols:
        problems.append(f'a "this device" column: {device_cols[:3]}')
    if "FAIL:" in everything:
        i = everything.index("FAIL:")
        problems.append(f"prints FAIL: ...{everything[i : i + 80]!r}")
    for rx in BUILD_MACHINE:  # harness.device_name() on a CPU, or a live cell's "here" banner
        m = rx.search(everything)
        if m:
            problems.append(f"prints the build machine's run: ...{everything[max(0, m.start() - 40) : m.end() + 40]!r}")
    for rx, what in REPRS:
        m = rx.search(t["outputs"])
        if m:
            s = t["outputs"]
            problems.append(f"an output shows {what}: ...{s[max(0, m.start() - 40) : m.end() + 40]!r}")
    assert not problems, f"{path}: " + "; ".join(problems)


# ---------------------------------------------------------------------------------------------
# chapters: buttons, calculators, guesses


def _launch_button_problems(page, chapter: str) -> list[str]:
    """A chapter page's header: the launch button, Colab and Binder links, repository and issue buttons."""
    org_repo = REPO_URL.split("://", 1)[1].split("/", 1)[1]
    colab = f"https://colab.research.google.com/github/{org_repo}/blob/{BRANCH}/chapters/{chapter}.ipynb"
    hrefs = page.evaluate(
        "() => Array.from(document.querySelectorAll('.article-header-buttons a, .header-article-items a')).map(a => a.href)"
    )
    launch = page.locator("button[aria-label='Launch interactive content'], .dropdown-launch-buttons button").count()
    problems = []
    if not launch:
        problems.append("no launch button")
    if colab not in hrefs:
        problems.append(f"no Colab link to {colab}")
    if not any(h.startswith("https://mybinder.org/") for h in hrefs):
        problems.append("no Binder link")
    if REPO_URL not in [h.rstrip("/") for h in hrefs]:
        problems.append(f"no repository button to {REPO_URL}")
    if not any(h.startswith(f"{REPO_URL}/issues/new") for h in hrefs):
        problems.append("no issue button")
    return problems


def test_every_chapter_page_is_visited_and_its_launch_buttons_checked():
    """The launch buttons are checked during the one visit of each page (below): every chapter must be in PAGES."""
    assert {f"chapters/{c}" for c in CHAPTERS} <= set(PAGES)


FIG_STATE = """gd => ({title: JSON.stringify([gd.layout.title || '', gd.layout.annotations || [], gd.layout.shapes || []]),
  data: JSON.stringify(gd.data),
  sliders: (gd.layout.sliders || []).map(s => s.active),
  menus: (gd.layout.updatemenus || []).map(m => m.active)})"""

CALCULATORS = """() => Array.from(document.querySelectorAll('.plotly-graph-div'))
  .filter(gd => gd.layout && ((gd.layout.sliders || []).length || (gd.layout.updatemenus || []).length))
  .map(gd => gd.id)"""


def _changed(a, b):
    return a["title"] != b["title"] or a["data"] != b["data"]


@pytest.mark.parametrize("chapter", _known(CHAPTERS))
def test_static_calculators_have_two_controls_that_each_change_the_figure(desktop, chapter):
    v = desktop(f"chapters/{chapter}")
    page, mark = v.page, _mark(v)
    problems = [v.draw_error] if v.draw_error else []
    ids = page.evaluate(CALCULATORS)
    for fig_id in ids:
        fig = page.locator(f'[id="{fig_id}"]')
        fig.scroll_into_view_if_needed()
        gd = fig.element_handle()
        name = page.evaluate("gd => ((gd.layout.title || {}).text || '').split('<br>')[0].slice(0, 50)", gd)
        where = f"figure {name!r}"
        n_controls = page.evaluate(
            "gd => (gd.layout.sliders || []).filter(s => s.visible !== false).length"
            " + (gd.layout.updatemenus || []).filter(m => m.visible !== false).length",
            gd,
        )
        if n_controls < 2:
            problems.append(f"{where}: {n_controls} control (a static calculator needs two or more inputs)")
        # every dropdown: pick another entry
        for i, header in enumerate(fig.locator(".updatemenu-header-group").all()):
            before = page.evaluate(FIG_STATE, gd)
            header.click()
            page.wait_for_timeout(250)
            items = fig.locator(".updatemenu-dropdown-button")
            if items.count() < 2:
                problems.append(f"{where}: dropdown {i} has {items.count()} entries")
                continue
            active = before["menus"][i] if i < len(before["menus"]) else 0
            items.nth(1 if (active or 0) == 0 else 0).click()
            page.wait_for_timeout(500)
            if not _changed(before, page.evaluate(FIG_STATE, gd)):
                problems.append(f"{where}: choosing another entry of dropdown {i} did not change the figure")
        for group in fig.locator(".updatemenu-button").all()[:1]:  # button-type menus
            before = page.evaluate(FIG_STATE, gd)
            group.click()
            page.wait_for_timeout(500)
            if not _changed(before, page.evaluate(FIG_STATE, gd)):
                problems.append(f"{where}: pressing a button did not change the figure")
        # every visible slider: click far from where it is
        for i, rail in enumerate(fig.locator(".slider-container .slider-rail-touch-rect").all()):
            box = rail.bounding_box()
            if not box or box["width"] < 5:
                continue  # a slider hidden by the current dropdown choice
            # a figure taller than the window (collectives' roofline was 1121 px with 26 menu
            # entries before review R5-9): its slider lies below the fold, where a click at its
            # coordinates lands on nothing. A reader scrolls to it first, and so does the test.
            rail.scroll_into_view_if_needed()
            box = rail.bounding_box()
            before = page.evaluate(FIG_STATE, gd)
            steps = page.evaluate("gd => (gd.layout.sliders || []).map(s => s.steps.length)", gd)
            active = [a or 0 for a in before["sliders"]]
            far_right = all(a < (n / 2) for a, n in zip(active, steps)) if steps else True
            x = box["x"] + (0.9 if far_right else 0.1) * box["width"]
            page.mouse.click(x, box["y"] + box["height"] / 2)
            page.wait_for_timeout(500)
            after = page.evaluate(FIG_STATE, gd)
            if after["sliders"] == before["sliders"]:
                problems.append(f"{where}: slider {i} did not move")
            elif not _changed(before, after):
                problems.append(f"{where}: moving slider {i} did not change the figure")
    messages = _messages_since(v, mark)
    if chapter == "memory_hierarchy" and len(ids) < 3:
        problems.append(f"the exemplar chapter has {len(ids)} static calculators, expected 3 or more")
    if messages:
        problems.append(f"console while using the calculators: {messages[:5]}")
    assert not problems, f"{chapter}: " + "; ".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_built_chapter_quiz_works_in_the_page(built_book, desktop, chapter):
    """The chapter's quiz in its built page (its own script and style, no inline script), each
    question answered wrong then right (tests/test_quiz.py checks the quiz alone, offline)."""
    from test_quiz import _answer_all, _quiz  # tests/ is on the path (tests/conftest.py)

    text = (Path(built_book) / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
    assert f'id="quiz-{chapter}"' in text, f"chapters/{chapter}.html has no quiz"
    assert "quiz.js" in text and "quiz.css" in text
    assert "<script>" not in text.split(f'id="quiz-{chapter}"', 1)[1].split("</ol>", 1)[0], "the built page holds no inline quiz script"
    # the page also works opened from the disk (README: open _build/html/index.html): its links to
    # the quiz's script and style are relative (tests/test_quiz.py opens one built page from file://)
    for asset in ("quiz.js", "quiz.css"):
        hrefs = re.findall(rf'(?:src|href)="([^"]*{re.escape(asset)}[^"]*)"', text)
        assert hrefs and not any(h.startswith(("/", "http")) for h in hrefs), f"{asset}: {hrefs}"
    v = desktop(f"chapters/{chapter}")
    mark = _mark(v)
    v.page.wait_for_selector(f"#quiz-{chapter}[data-ready]")
    _answer_all(v.page, f"#quiz-{chapter}", _quiz(chapter))
    messages = _messages_since(v, mark)
    assert not messages, f"while answering the quiz: {messages[:5]}"


GUESSES = """() => {
  const items = Array.from(document.querySelectorAll('.guess, .guess-answer'));
  return items.map((el, i) => ({
    answer: el.classList.contains('guess-answer'),
    next_is_answer: i + 1 < items.length && items[i + 1].classList.contains('guess-answer'),
    title: (el.querySelector('.admonition-title, summary') || el).textContent.trim().slice(0, 60),
  }));
}"""


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_guess_is_answered_behind_a_click(desktop, chapter):
    v = desktop(f"chapters/{chapter}")
    page, mark = v.page, _mark(v)
    problems = []
    items = page.evaluate(GUESSES)
    for it in items:
        if not it["answer"] and not it["next_is_answer"]:
            problems.append(f"guess {it['title']!r} is not followed by a .guess-answer")
    answers = page.locator(".guess-answer")
    for i in range(answers.count()):
        ans = answers.nth(i)
        ans.scroll_into_view_if_needed()
        body = ans.locator(":scope > :not(.admonition-title):not(summary):not(button)")
        if body.count() == 0:
            problems.append(f"answer {i}: empty")
            continue
        if any(body.nth(j).is_visible() for j in range(body.count())):
            problems.append(f"answer {i}: visible before it is clicked")
            continue
        ans.locator(".admonition-title, summary").first.click()
        page.wait_for_timeout(400)
        if not any(body.nth(j).is_visible() for j in range(body.count())):
            problems.append(f"answer {i}: still hidden after a click on its title")
    messages = _messages_since(v, mark)
    if messages:
        problems.append(f"console while opening the answers: {messages[:5]}")
    assert not problems, f"{chapter}: " + "; ".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_solution_opens_where_its_title_is_clicked(desktop, chapter):
    """A hidden solution's title is its toggle, and most of it is sphinx-exercise's link back to the
    exercise ("Solution to Exercise 1 (...)"): a click on that text must open the solution, not jump
    to the exercise (book/_static/gpubook.css)."""
    v = desktop(f"chapters/{chapter}")
    page, mark = v.page, _mark(v)
    url, problems = page.url, []
    sols = page.locator("div.solution.dropdown")
    for i in range(sols.count()):
        sol = sols.nth(i)
        body = sol.locator(":scope > :not(.admonition-title)")
        link = sol.locator(":scope > .admonition-title a.reference")
        if body.count() == 0 or link.count() == 0:
            problems.append(f"solution {i}: {'no body' if body.count() == 0 else 'no exercise link in its title'}")
            continue
        sol.scroll_into_view_if_needed()
        if body.first.is_visible():
            problems.append(f"solution {i}: visible before it is clicked")
            continue
        box = link.first.bounding_box()  # where a reader clicks: on the link's text (the title may take the click)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(300)
        if page.url != url:
            problems.append(f"solution {i}: a click on its title went to {page.url.rsplit('/', 1)[-1]}")
            page.goto(url)
        elif not body.first.is_visible():
            problems.append(f"solution {i}: still hidden after a click on its title's text")
    messages = _messages_since(v, mark)
    if messages:
        problems.append(f"console while opening the solutions: {messages[:5]}")
    assert sols.count(), f"{chapter}: no hidden solution found"
    assert not problems, f"{chapter}: " + "; ".join(problems)


# ---------------------------------------------------------------------------------------------
# phone and dark mode


WIDE_TABLES = """() => {
  document.querySelectorAll('main details:not([open])').forEach(d => { if (d.querySelector('table')) d.open = true; });
  return Array.from(document.querySelectorAll('main table')).filter(t => t.offsetParent).map(t => {
  let box = t.parentElement;
  while (box && box !== document.body && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  const first = t.querySelector('tr > td:first-child');
  const firsts = Array.from(t.querySelectorAll('tr > :first-child'));
  // the caption's text, with the table scrolled to either end: how far it runs out of the box that scrolls
  const cap = t.querySelector('caption .book-caption') || t.querySelector('caption');
  let capOut = 0;
  if (cap && box && box !== document.body) {
    const out = () => { const b = box.getBoundingClientRect(), c = cap.getBoundingClientRect();
                        return Math.max(0, c.right - b.right, b.left - c.left); };
    const x0 = box.scrollLeft;
    capOut = out(); box.scrollLeft = box.scrollWidth; capOut = Math.max(capOut, out()); box.scrollLeft = x0;
  }
  return {wide: t.scrollWidth > t.parentElement.clientWidth + 1, scrolls: !!box && box !== document.body, capOut,
          output: !!t.closest('.cell_output'), sticky: first ? getComputedStyle(first).position === 'sticky' : true,
          // the sticky column's width as a share of the box it scrolls in
          share: first && box && box !== document.body && box.clientWidth
                 ? Math.max(...firsts.map(c => c.getBoundingClientRect().width)) / box.clientWidth : 0,
          name: (t.querySelector('th, td') || {}).textContent || ''};
  });
}"""


STICKY_SHARE_MAX = 0.6  # of a wide table's scroll box, at 390 px (elsewhere 48% at most, review R5-1)

# The prose of every admonition, the hidden answers shown for the measure and hidden again: a line
# that runs past its box (an unbreakable kernel name in an Answer was cut off at 390 px, round 10)
CLIPPED_PROSE = """() => {
  const shown = [];
  document.querySelectorAll('main .admonition.toggle-hidden').forEach(e => { e.classList.remove('toggle-hidden'); shown.push(e); });
  const opened = Array.from(document.querySelectorAll('main details:not([open])')).filter(d => d.querySelector('.admonition p'));
  opened.forEach(d => { d.open = true; });
  const out = Array.from(document.querySelectorAll('main .admonition p')).filter(p => p.offsetParent && p.scrollWidth > p.clientWidth + 1)
    .map(p => `${p.scrollWidth - p.clientWidth} px: ${p.textContent.trim().slice(0, 60)}`);
  shown.forEach(e => e.classList.add('toggle-hidden'));
  opened.forEach(d => { d.open = false; });
  return out;
}"""


# the accuracy page too: its ledgers are wide tables on a phone (round 19 checks their captions there)
@pytest.mark.parametrize("path", [PAGES[0]] + CHAPTER_PAGES + ["book/accuracy"])
def test_phone_sidebars_open_and_close(phone_dark, path):
    """At 390 px: both sidebars open and close; no line of an admonition's prose (hidden answers
    included) runs past its box; and every table wider than the phone scrolls
    sideways in its own box, an output's table with its first column (the row's name) kept in
    view (reader review r4, W-5) and no wider than 60% of that box (review R5-1), its caption in view
    at either end of the scroll (reader review r15)."""
    v = phone_dark(path)
    page, mark = v.page, _mark(v)
    problems = [f"an admonition's line runs past its box by {c}" for c in page.evaluate(CLIPPED_PROSE)]
    for t in page.evaluate(WIDE_TABLES):  # (opens the collapsed outputs that hold a table)
        if t["wide"] and not t["scrolls"]:
            problems.append(f"table {t['name'][:30]!r} is wider than the page and does not scroll in its own box")
        elif t["wide"] and t["output"] and not t["sticky"]:
            problems.append(f"table {t['name'][:30]!r} scrolls, but its first column scrolls out of view")
        elif t["wide"] and t["capOut"] > 1:
            # reader review r15: a caption is as wide as its table, so on a wide table it scrolled out of view with it
            problems.append(f"table {t['name'][:30]!r}: its caption runs {t['capOut']:.0f} px out of its scroll box")
        elif t["wide"] and t["sticky"] and t["share"] > STICKY_SHARE_MAX:
            # review R5-1: unbreakable kernel names made kernels' rung table's sticky column 358 px
            # in a 336-px box: scrolled, it covered every number
            problems.append(f"table {t['name'][:30]!r}: its sticky first column takes {t['share']:.0%} of its "
                            f"scroll box (at most {STICKY_SHARE_MAX:.0%}: the rest is where the numbers scroll)")
    # reader check r18: the theme's "Back to top" pill, centred at the foot of the screen, covered figures' axes
    btt = page.evaluate("""() => { const b = document.getElementById('pst-back-to-top'); if (!b) return null;
      const was = b.style.display; b.style.display = 'block'; const r = b.getBoundingClientRect(); b.style.display = was;
      return {left: r.left, right: r.right, width: r.width, vw: window.innerWidth}; }""")
    if btt and not (btt["left"] >= 0.75 * btt["vw"] and btt["width"] <= 60 and btt["right"] <= btt["vw"]):
        problems.append(f"the 'Back to top' button spans {btt['left']:.0f}-{btt['right']:.0f} px of {btt['vw']} "
                        "(a small button in the right corner keeps figures' axes clear)")
    page.evaluate("() => window.scrollTo(0, 0)")
    for which, toggle_sel, dialog_sel in [
        ("table of contents", ".primary-toggle", "#pst-primary-sidebar-modal, .bd-sidebar-primary"),
        ("page outline", ".secondary-toggle", "#pst-secondary-sidebar-modal, .bd-sidebar-secondary"),
    ]:
        toggle = page.locator(f"{toggle_sel}:visible")
        if toggle.count() == 0:
            if which == "table of contents" or path in CHAPTER_PAGES:
                problems.append(f"no visible button for the {which}")
            continue

        def shown():
            return page.evaluate(
                """sel => Array.from(document.querySelectorAll(sel)).some(e => {
                     const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
                     return r.width > 100 && r.right > 0 && r.left < innerWidth && cs.visibility !== 'hidden' && cs.display !== 'none'
                            && (e.tagName !== 'DIALOG' || e.open); })""",
                dialog_sel,
            )

        if shown():
            problems.append(f"the {which} covers the page before it is asked for")
            continue
        toggle.first.click()
        page.wait_for_timeout(500)
        if not shown():
            problems.append(f"the {which} does not open")
            continue
        page.keyboard.press("Escape")
        page.wait_for_timeout(400)
        if shown():
            page.mouse.click(380, 420)  # outside the drawer
            page.wait_for_timeout(400)
        if shown():
            problems.append(f"the {which} does not close")
    messages = _messages_since(v, mark, and_the_load=True)
    if messages:
        problems.append(f"console: {messages[:5]}")
    assert not problems, f"{path} at 390 px: " + "; ".join(problems)



# The comparison tables (widgets.book.compare_table) of a page: found by their class (book-stack) or by
# their header (quantity | ... (reference) | ...), so that a page built before they stacked is judged too.
# For each: how far its box scrolls sideways, each cell whose text runs past the box or is cut off in its
# cell, whether its header row is in view, and each cell of a stacked card (header row out of view)
# that does not say which column it is.
COMPARE_TABLES = """() => {
  document.querySelectorAll('main details:not([open])').forEach(d => { if (d.querySelector('table')) d.open = true; });
  const heads = t => Array.from(t.querySelectorAll('thead th')).map(h => h.textContent.trim());
  const isCompare = t => t.classList.contains('book-stack') || (heads(t)[0] === 'quantity' && (heads(t)[1] || '').includes('(reference)'));
  return Array.from(document.querySelectorAll('main table.book-table')).filter(t => t.offsetParent && isCompare(t)).map(t => {
    let box = t.parentElement;
    while (box && box !== document.body && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    if (!box || box === document.body) box = t.parentElement;
    const b = box.getBoundingClientRect();
    const thead = t.querySelector('thead');
    const headShown = !!thead && thead.getBoundingClientRect().height > 2;
    const clipped = [], unlabelled = [];
    t.querySelectorAll('tbody tr').forEach(tr => Array.from(tr.children).forEach((td, j) => {
      const text = td.textContent.trim();
      if (!text || getComputedStyle(td).display === 'none') return;
      const range = document.createRange(); range.selectNodeContents(td);
      const c = range.getBoundingClientRect();
      const out = Math.max(0, c.right - b.right, b.left - c.left);
      if (out > 1 || td.scrollWidth > td.clientWidth + 1)
        clipped.push(`${text.slice(0, 25)} (${Math.round(Math.max(out, td.scrollWidth - td.clientWidth))} px)`);
      const label = getComputedStyle(td, '::before').content;
      if (!headShown && j > 0 && (!label || label === 'none' || label === 'normal' || label === '""')) unlabelled.push(text.slice(0, 25));
    }));
    return {name: ((t.querySelector('caption') || {}).textContent || heads(t).join(' | ')).trim().slice(0, 50),
            over: box.scrollWidth - box.clientWidth, boxWidth: box.clientWidth, headShown, clipped, unlabelled};
  });
}"""


@pytest.mark.parametrize("path", [*CHAPTER_PAGES, "book/accuracy"])  # the ledger's tables stack too
def test_comparison_tables_show_every_column_on_a_phone(phone_dark, path):
    """At 390 px every comparison table shows all its columns without scrolling sideways: the ratio
    whole and the kind in view (reader check r19: the tables were 495-650 px wide in a 336-358 px box,
    so a reader saw "0.8" of "0.83" and never the kind). On a phone each row is a card (widgets.book.table's
    stack=True; book/_static/gpubook.css): every line but the title must say which column it is."""
    v = phone_dark(path)
    tables = v.page.evaluate(COMPARE_TABLES)
    problems = [] if tables else ["no comparison table found (widgets.book.compare_table)"]
    for t in tables:
        if t["over"] > 1:
            problems.append(f"table {t['name']!r} scrolls sideways by {t['over']} px in its {t['boxWidth']}-px box")
        if t["clipped"]:
            problems.append(f"table {t['name']!r}: {len(t['clipped'])} cells run out of view, e.g. {t['clipped'][:3]}")
        if t["unlabelled"]:
            problems.append(f"table {t['name']!r}: header row hidden and {len(t['unlabelled'])} cells do not say their "
                            f"column, e.g. {t['unlabelled'][:3]}")
    assert not problems, f"{path} at 390 px: " + "; ".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_comparison_tables_stay_tables_on_a_desktop(desktop, chapter):
    """At 1400 px the comparison tables keep their desktop layout, a plain table with its header row
    (they stack only in a box narrower than widgets.book.STACK_BELOW), and none scrolls sideways."""
    tables = desktop(f"chapters/{chapter}").page.evaluate(COMPARE_TABLES)
    problems = [] if tables else ["no comparison table found (widgets.book.compare_table)"]
    for t in tables:
        if not t["headShown"]:
            problems.append(f"table {t['name']!r} is stacked into cards in a {t['boxWidth']}-px box")
        if t["over"] > 1 or t["clipped"]:
            problems.append(f"table {t['name']!r} scrolls sideways by {t['over']} px ({t['clipped'][:2]})")
    assert not problems, f"{chapter} at 1400 px: " + "; ".join(problems)


# Every result table of the page: its caption (or first header) and how far its box scrolls sideways
TABLE_OVERFLOW = """() => Array.from(document.querySelectorAll('main table.book-table')).filter(t => t.offsetParent).map(t => {
  let box = t.parentElement;
  while (box && box !== document.body && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  if (!box || box === document.body) box = t.parentElement;
  return {name: ((t.querySelector('caption') || t.querySelector('th') || {}).textContent || '').trim().slice(0, 50),
          prose: !!t.querySelector('td.book-prose'), over: box.scrollWidth - box.clientWidth, boxWidth: box.clientWidth,
          width: Math.round(t.getBoundingClientRect().width)};
})"""


@pytest.mark.parametrize("path", ["book/accuracy"])
def test_accuracy_ledgers_fit_a_desktop_column(desktop_1280, path):
    """At 1280 px every table of the accuracy page fits its column: the ledgers (quantity | ratio | label |
    model | measured | inputs) were 705-773 px wide, their numbers kept on one line beside a column of
    sentences at least 16 em wide, and scrolled sideways by a few to 85 px (reader check r19). The
    sentences may break a long token and narrow to 11 em in a narrow column (book/_static/gpubook.css)."""
    tables = desktop_1280(path).page.evaluate(TABLE_OVERFLOW)
    ledgers = [t for t in tables if t["prose"]]
    assert len(ledgers) >= 4, f"{path}: {len(ledgers)} tables with a column of sentences (the ledgers), expected 4 or more"
    over = [f"{t['name']!r} {t['width']} px in {t['boxWidth']} px" for t in tables if t["over"] > 1]
    assert not over, f"{path} at 1280 px: tables scroll sideways: {over}"


PLOT_COLOURS = """() => Array.from(document.querySelectorAll('.plotly-graph-div'))
  .filter(gd => gd._fullLayout)
  .map(gd => ({font: gd._fullLayout.font.color, paper: gd._fullLayout.paper_bgcolor}))"""


def _luminance(colour: str) -> float:
    m = re.match(r"#([0-9a-f]{6})", colour.lower())
    if m:
        rgb = [int(m.group(1)[i : i + 2], 16) for i in (0, 2, 4)]
    else:
        rgb = [float(x) for x in re.findall(r"[\d.]+", colour)[:3]]
    return (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_plots_and_tables_follow_dark_mode(phone_dark, chapter):
    v = phone_dark(f"chapters/{chapter}")
    page, mark = v.page, _mark(v)
    problems = [v.draw_error] if v.draw_error else []
    if page.evaluate("() => document.documentElement.dataset.theme") != "dark":
        problems.append("the page did not start in dark mode")
    dark = page.evaluate(PLOT_COLOURS)
    light_text = [c for c in dark if _luminance(c["font"]) < 0.5]
    if light_text:
        problems.append(f"{len(light_text)} of {len(dark)} plots keep dark text in dark mode ({light_text[0]})")
    panels = page.evaluate(
        """() => Array.from(document.querySelectorAll('.cell_output .text_html'))
             .filter(e => e.querySelector('table, .plotly-graph-div'))
             .map(e => getComputedStyle(e).backgroundColor)"""
    )
    bright = [c for c in panels if not c.endswith(", 0)") and _luminance(c) > 0.5]
    if bright:
        problems.append(f"{len(bright)} tables or plots sit on a light panel in dark mode")
    # dropdown menus stay light in dark mode (CONTROLS_DARK), so their text must stay dark (reader check r10:
    # the menus' explicit dark font was swapped to light, near-white on the light menu)
    menu_text = page.evaluate(
        "() => Array.from(document.querySelectorAll('.updatemenu-header-group .updatemenu-item-text'))"
        ".map(t => getComputedStyle(t).fill)"
    )
    unreadable = [c for c in menu_text if c and c != "none" and _luminance(c) > 0.5]
    if unreadable:
        problems.append(f"{len(unreadable)} of {len(menu_text)} dropdown menus show light text on their light face in dark mode")
    # a slider step applies a frame: the figure stays dark
    rails = page.locator(".plotly-graph-div .slider-container .slider-rail-touch-rect")
    for j in range(rails.count()):
        box = rails.nth(j).bounding_box() if rails.nth(j).is_visible() else None
        if box and box["width"] > 5:
            rails.nth(j).scroll_into_view_if_needed()
            box = rails.nth(j).bounding_box()
            page.mouse.click(box["x"] + 0.7 * box["width"], box["y"] + box["height"] / 2)
            page.wait_for_timeout(600)
            after = [c for c in page.evaluate(PLOT_COLOURS) if _luminance(c["font"]) < 0.5]
            if after:
                problems.append(f"{len(after)} plots turn back to dark text after a slider step in dark mode")
            break
    # back to light: every plot gets its own light look again
    page.evaluate(
        "() => { document.documentElement.dataset.mode = 'light'; document.documentElement.dataset.theme = 'light'; }"
    )
    page.wait_for_timeout(600)
    light = page.evaluate(PLOT_COLOURS)
    dark_bg_text = [c for c in light if _luminance(c["font"]) > 0.5]
    if dark_bg_text:
        problems.append(f"{len(dark_bg_text)} plots keep light text after switching back to light mode")
    messages = _messages_since(v, mark, and_the_load=True)
    if messages:
        problems.append(f"console: {messages[:5]}")
    assert not problems, f"{chapter}: " + "; ".join(problems)


@pytest.mark.parametrize("path", ["chapters/memory_hierarchy"])  # (its id puts it with that page's visit)
def test_maths_renders_offline(desktop, path):
    page = desktop(path).page
    page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=20000)
    assert page.locator("mjx-container").count() > 5
