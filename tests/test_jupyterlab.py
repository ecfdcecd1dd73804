"""The chapters as a notebook reader meets them: in JupyterLab, with jupyterlab-myst.

Static checks (no browser, part of `make unit`): the prose's numbers are all in the form both the
book and JupyterLab render (``{eval}`prose.<key>```, see widgets/prose.py), each is set in a code
cell above the markdown that reads it (JupyterLab evaluates in order, and so does the build), and
the value type shows without quotes.

The browser test (marker ``browser``): starts JupyterLab (a token, a free port, ``--allow-root``
when root, its own settings and workspace folders), opens each chapter in headless Chromium, runs
all cells and waits for them, then checks that

- no cell raised, and no raw MyST is visible in the rendered markdown (``{glue``, ``{eval}``,
  ``{term}``, ``:::``, ``:class:``, a fenced directive), every ``{eval}`` shows its value (not the
  expression, not an error);
- every live form (the ``ui.*_calculator()`` cells) reacts to its visible controls: the figure and
  the table both change after a control is moved, and come back when it is put back. By default
  (``make test``), each form's first control (each form redraws in its own Output widget) and,
  over the chapter, the first control of each kind (each ipywidgets class: a dropdown, an
  integer, a float, a log and a selection slider, each kind of text field...; ``live_form`` marks each control
  with its class): what differs between controls on the page's side, each kind being its own
  view, readout and parsing, and its own path from the page to the kernel; the same kind in
  another form of the chapter runs the same page code. What each control
  computes is the kernel's side, checked for every control of every form by
  ``test_every_control_moves_the_live_figure_and_table`` without a browser. With
  ``GPUBOOK_JUPYTERLAB_EVERY_CONTROL=1`` this test moves every control in the page.

One kernel at a time (each chapter's is shut down before the next opens), and one JupyterLab page per
worker: the chapters of a stream (the root conftest.py) are opened one after the other in the same
loaded JupyterLab, as a reader goes from chapter to chapter (``_LabPage``). Skipped, with the reason,
when Chromium, playwright, JupyterLab or jupyterlab-myst is missing; CI sets GPUBOOK_REQUIRE_BROWSER=1
and then a missing piece is an error.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import headless
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
import prose_convert  # noqa: E402

from widgets.prose import Prose, Text  # noqa: E402

CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb"))
NB_IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
EVAL_ROLE = re.compile(r"\{eval\}`([^`]*)`")
RAW = ("{glue", "{eval}", "{term}", ":::", ":class:", "```{")


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


# ---------------------------------------------------------------------------------------------
# Static checks (fast; no browser)
# ---------------------------------------------------------------------------------------------


def test_the_build_executes_inline_and_accepts_only_prose_expressions():
    assert CONFIG["execute"]["execute_notebooks"] == "inline", "{eval} roles need myst-nb's inline execution"
    regex = re.compile(CONFIG["sphinx"]["config"]["nb_eval_name_regex"])
    assert regex.match("prose.hbm_bw") and not regex.match("__import__('os')") and not regex.match("prose.a.b")
    assert "prose_eval" in CONFIG["sphinx"]["local_extensions"], "book/_ext/prose_eval.py runs the hidden cells first"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NB_IDS)
def test_prose_numbers_use_the_form_both_renderers_show(path):
    nb = _nb(path)
    left = prose_convert.convert_notebook(json.loads(json.dumps(nb)), str(path.relative_to(ROOT)))
    changes, problems = left
    assert changes == 0, (
        f"{path.relative_to(ROOT)} still has myst-nb glue: convert it with "
        f"`.venv/bin/python tests/tools/prose_convert.py {path.relative_to(ROOT)}`"
    )
    assert not problems, "\n".join(problems)
    regex = re.compile(CONFIG["sphinx"]["config"]["nb_eval_name_regex"])
    bad = [e for c in nb["cells"] if c["cell_type"] == "markdown" for e in EVAL_ROLE.findall(_src(c)) if not regex.match(e)]
    assert not bad, f"{{eval}} expressions the build refuses (only prose.<key>): {bad}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NB_IDS)
def test_every_prose_value_is_set_above_the_markdown_that_reads_it(path):
    refs = prose_convert.forward_references(_nb(path))
    assert not refs, "\n".join(
        f"cell {i}: {{eval}}`prose.{k}` is read before it is set"
        + (f" (cell {j} sets it: move that line above)" if j is not None else " (nothing sets it)")
        for i, k, j in refs
    )


def test_prose_values_show_without_quotes():
    p = Prose()
    p.bw = "4.8 TB/s"
    p.quote = "it's \"x\" \\ y"
    p["n"] = 8
    assert repr(p.bw) == "4.8 TB/s" and repr(p.quote) == "it's \"x\" \\ y" and repr(p.n) == "8"
    assert isinstance(p.bw, Text) and p.bw == "4.8 TB/s"
    import numpy as np

    p.f = np.float64(3.25)
    assert repr(p.f) == "3.25"
    from IPython.lib.pretty import pretty

    assert pretty(p.quote) == "it's \"x\" \\ y"  # IPython's text/plain, what both renderers show


@pytest.mark.parametrize("key", ["1a", "a-b", "_private", "class", "update", "", 3])
def test_prose_refuses_keys_the_markdown_cannot_name(key):
    with pytest.raises(ValueError, match="key must be"):
        Prose()[key] = "x"


def test_a_missing_prose_value_names_the_fix():
    with pytest.raises(AttributeError, match=r"prose\.nope = \.\.\."):
        Prose().nope  # noqa: B018


def test_converter_rewrites_every_glue_form_and_is_idempotent():
    cells = [
        {"cell_type": "code", "id": "c0", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "from myst_nb import glue\nfrom widgets import book\n"},
        {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "Early: {glue:text}`late`."},
        {"cell_type": "code", "id": "c1", "metadata": {"tags": ["remove-cell"]}, "outputs": [], "execution_count": None,
         "source": 'glue("a", f"{1:.1f}", display=False)\nfor k in ("x", "y"):\n    glue(f"n_{k}", k,\n         display=False)\n'
                   'S.glue("b", 2)\nS.glue_all({"c": 3})\nv = [glue("d", 4, display=False)]\n'},
        {"cell_type": "markdown", "id": "m1", "metadata": {},
         "source": "A {glue:text}`a`, {glue}`b`, {glue:}`c`, {glue:text}`n_x`; {glue:text}`a:.2f` and {glue:md}`a`."},
        {"cell_type": "code", "id": "c2", "metadata": {"tags": ["remove-cell"]}, "outputs": [], "execution_count": None,
         "source": 'glue("late", "L", display=False)\n'},
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    changes, problems = prose_convert.convert_notebook(nb, "t")
    src = [_src(c) for c in nb["cells"]]
    code = "\n".join(s for s, c in zip(src, nb["cells"]) if c["cell_type"] == "code")
    assert "from widgets.prose import prose" in code and "myst_nb" not in code
    for line in ('prose.a = f"{1:.1f}"', 'prose[f"n_{k}"] = k', "prose.b = 2", 'prose.update({"c": 3})',
                 'v = [prose.set("d", 4)]', 'prose.late = "L"'):
        assert line in code, line
    md = "\n".join(s for s, c in zip(src, nb["cells"]) if c["cell_type"] == "markdown")
    assert "{eval}`prose.a`, {eval}`prose.b`, {eval}`prose.c`, {eval}`prose.n_x`" in md
    assert "{glue:text}`a:.2f`" in md and "{glue:md}`a`" in md  # reported, not guessed
    assert any("a:.2f" in p for p in problems) and any("glue:md" in p for p in problems)
    # the hidden cell that sets `late` moved above the markdown that reads it
    order = [c["id"] for c in nb["cells"]]
    assert order.index("c2") < order.index("m0"), order
    again = json.loads(json.dumps(nb))
    assert prose_convert.convert_notebook(again, "t")[0] == 0 and again == nb


def test_converter_leaves_a_glue_that_displays_and_keeps_its_import():
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [], "execution_count": None,
            "source": 'from myst_nb import glue\nglue("shown", 5)\nglue("k", 1, display=False)\n'}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    changes, problems = prose_convert.convert_notebook(nb, "t")
    assert changes == 1 and any("displays its value" in p for p in problems)
    assert _src(cell).splitlines() == ["from myst_nb import glue", 'glue("shown", 5)', "prose.k = 1"]


# ---------------------------------------------------------------------------------------------
# The same contract on the kernel's side (fast; no browser): every control of every live form
# moves both the figure and the table, judged from the form's opening state
# ---------------------------------------------------------------------------------------------

UI_MODULES = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "serving", "training_memory", "attention")


def _live_calculators() -> list[tuple[str, str]]:
    import importlib

    out = []
    for mod in UI_MODULES:
        m = importlib.import_module(f"widgets.ui.{mod}")
        out += [(mod, n) for n, fn in sorted(vars(m).items())
                if n.endswith("_calculator") and callable(fn) and getattr(fn, "__module__", "") == m.__name__]
    return out


def _form_state(form) -> tuple[list[str], str]:
    """What the browser test compares, taken from the widgets: each figure's traces, title and
    annotations, and the table's HTML."""
    figs = [json.dumps([fw.to_plotly_json()["data"], fw.layout.title.to_plotly_json(),
                        [a.to_plotly_json() for a in (fw.layout.annotations or ())]], default=str, sort_keys=True)
            for fw in form.figures]
    return figs, form.output.value


def _kernel_moves(c) -> list:
    """The values a reader's moves give a control (as `_moves` does in the browser), the most ordinary first."""
    import ipywidgets as w

    v = c.value
    if isinstance(c, w.Dropdown):
        values = [o[1] if isinstance(o, tuple) else o for o in c.options]
        k = values.index(v)
        return [values[(k + d) % len(values)] for d in range(1, len(values))]
    if isinstance(c, w.Checkbox):
        return [not v]
    if isinstance(c, w.SelectionSlider):  # widgets/ui/_core.py log_slider: right by two, the end, the start
        values = [o[1] if isinstance(o, tuple) else o for o in c.options]
        k = values.index(v)
        return [values[min(k + 2, len(values) - 1)], values[-1], values[0]]
    if isinstance(c, w.FloatLogSlider):
        e = math.log(v, c.base)
        return [c.base ** min(c.max, e + 2 * c.step), c.base ** c.max, c.base ** c.min]
    if isinstance(c, (w.IntSlider, w.FloatSlider)):
        return [min(c.max, v + 2 * c.step), c.max, c.min]
    if isinstance(c, (w.IntText, w.BoundedIntText, w.FloatText, w.BoundedFloatText, w.Text)):
        kind = type(v)
        return [kind(x) if kind is not str else x for x in _text_values(str(v))]
    return []


@pytest.mark.parametrize("mod, name", _live_calculators())
def test_every_control_moves_the_live_figure_and_table(mod, name, monkeypatch):
    import importlib

    pytest.importorskip("ipywidgets")
    monkeypatch.delenv("GPUBOOK_BUILD", raising=False)
    fn = getattr(importlib.import_module(f"widgets.ui.{mod}"), name)
    form = fn()
    opened = _form_state(form)
    assert opened[1], f"{name}: no table"
    failures = []
    for key, c in form.controls.items():
        label = getattr(c, "description", "") or key
        # the mark by which the browser test tells the kinds of control apart
        assert f"gpubook-{type(c).__name__}" in c._dom_classes, f"{name} / {label}: no kind mark"
        if getattr(c, "disabled", False) or getattr(c.layout, "display", None) == "none":
            continue
        table_only = (name, label) in TABLE_ONLY
        start, tried, ok = c.value, [], False
        for v in _kernel_moves(c):
            try:
                c.value = v
            except Exception as exc:  # a value the control itself refuses (a bounded field)  # noqa: BLE001
                tried.append(f"{v!r}: refused ({type(exc).__name__})")
                continue
            figs, table = _form_state(form)
            c.value = start
            assert _form_state(form) == opened, f"{name} / {label}: put back to {start!r}, the form did not return"
            if "calc-error" in table:
                tried.append(f"{v!r}: error")
                continue
            fig, tab = figs != opened[0], table != opened[1]
            if table_only and fig:
                failures.append(f"{name} / {label}: now changes the figure; remove it from TABLE_ONLY")
            if tab and (fig or not opened[0] or table_only):
                ok = True
                break
            tried.append(f"{v!r}: figure changed {fig}, table changed {tab}")
        if not ok:
            failures.append(f"{name} / {label}: no move changed both figure and table ({'; '.join(tried)})")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------------
# JupyterLab in headless Chromium
# ---------------------------------------------------------------------------------------------

# (calculator, control label) -> why that control changes the table but, by design, not the figure.
# The test fails when one of these starts changing the figure too (then remove it from here).
TABLE_ONLY = {
    ("collective_time_calculator", "algorithm"): "the figure draws both algorithms' curves; the choice orders the table",
    ("parallelism_roofline_calculator", "d_model"): "the figure plots communication / computation, in which d_model cancels "
                                                    "(every term is proportional to it); the table's times change",
}
# Every visible control of every form, or (the default, ``make test``) each form's first control and the
# chapter's first control of each kind: see the module's docstring. (About 40 moves in the 8 chapters;
# each kind in each form was 74, and moving controls was a large part of Chromium's work per chapter.)
EVERY_CONTROL = os.environ.get("GPUBOOK_JUPYTERLAB_EVERY_CONTROL", "") not in ("", "0")
RUN_ALL_S = 300  # one chapter's Run All on a busy 2-core machine (its experiments run scaled down)
CONTROL_S = 10  # at most, for one change of one control: recomputation, figure and table


def _lab_missing() -> str | None:
    if importlib.util.find_spec("jupyterlab") is None:
        return "JupyterLab is not installed (`make install` installs requirements.txt)"
    if importlib.util.find_spec("jupyterlab_myst") is None:
        return "jupyterlab-myst is not installed (`make install` installs requirements.txt)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    why = _lab_missing()
    if why:
        if os.environ.get("GPUBOOK_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail(f"GPUBOOK_REQUIRE_BROWSER is set (CI) but {why}")
        pytest.skip(f"JupyterLab test skipped: {why}")
    tmp = tmp_path_factory.mktemp("jupyterlab")
    # JupyterLab saves what it runs (outputs and all): it gets copies, never the repository's notebooks
    site = tmp / "site"
    (site / "chapters").mkdir(parents=True)
    for nb in (ROOT / "chapters").glob("*.ipynb"):
        shutil.copyfile(nb, site / "chapters" / nb.name)
    shutil.copytree(ROOT / "book" / "figures", site / "book" / "figures")  # ```{figure} ../book/figures/...
    shutil.copytree(ROOT / "widgets", site / "widgets", ignore=shutil.ignore_patterns("__pycache__", "data"))  # literalinclude
    settings = tmp / "settings"
    # Every cell in the DOM comes from the environment's JupyterLab settings that `make install` writes
    # (book/jupyterlab/overrides.json, what a reader's JupyterLab gets): the test uses them, not a
    # setting of its own, so that it fails if they are missing. No news pop-up.
    from widgets import doctor

    overrides = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / doctor.LAB_BOOK_FILE
    want = json.loads((ROOT / "book" / "jupyterlab" / "overrides.json").read_text())
    have = json.loads(overrides.read_text()) if overrides.exists() else None
    assert have == want, (f"{overrides} is {'missing' if have is None else 'not the book’s'}: run `make install` "
                          "(it copies book/jupyterlab/overrides.json there: without it jupyterlab-myst leaves the "
                          "numbers below the first screen unevaluated)")
    mode, source = doctor.lab_windowing(user_dir=str(settings))  # what this JupyterLab will use, all layers read
    assert mode == "none", f"JupyterLab's windowing mode here is {mode!r}, from {source}: it wins over the book's file"
    (settings / "@jupyterlab" / "docmanager-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings").write_text(
        json.dumps({"autosave": False})
    )
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.open_browser=False",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={site}",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.expose_app_in_browser=True"]  # window.jupyterapp: chapters are opened from the app (_LabPage)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOOK_")}  # a reader's kernel: live forms
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    log = open(tmp / "jupyterlab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=site)
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() - t0 > 90:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp / "jupyterlab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield {"base": base, "token": token, "log": tmp / "jupyterlab.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(lab):
    pw = pytest.importorskip("playwright.sync_api")
    with pw.sync_playwright() as p:
        b = headless.launch(p)
        yield b
        b.close()


def _api(lab, method: str, path: str):
    req = urllib.request.Request(f"{lab['base']}{path}", method=method, headers={"Authorization": f"token {lab['token']}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return json.loads(body) if body else None


def _shutdown_kernels(lab) -> None:
    """Shut every session and kernel down; one already gone (404) is fine."""
    for kind in ("sessions", "kernels"):
        for item in _api(lab, "GET", f"/api/{kind}") or []:
            try:
                _api(lab, "DELETE", f"/api/{kind}/{item['id']}")
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise


# JupyterLab has started (window.jupyterapp: --LabApp.expose_app_in_browser) and can open a document;
# then JS_RESTORED waits for its layout to be restored
JS_APP_READY = "() => !!window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')"
JS_RESTORED = """async () => { await Promise.race([window.jupyterapp.restored,
  new Promise((_, no) => setTimeout(() => no(new Error('JupyterLab did not restore its layout in 90 s')), 90000))]); }"""
JS_OPEN = "async (path) => { await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'}); }"
# close every tab of the main area without asking to save (disposed, not closed: JupyterLab saves
# nothing, autosave is off and the notebooks are copies); then JS_CLOSED: no notebook and no dialog left
JS_CLOSE_ALL = """() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose(); }"""
JS_CLOSED = "() => !document.querySelector('.jp-Notebook') && !document.querySelector('.jp-Dialog')"


class _LabPage:
    """This worker's JupyterLab page (one stream of chapters, the root conftest.py): JupyterLab is
    loaded once, and each chapter is opened from the app (``docmanager:open``, as a reader opens
    one from the file browser) once the previous chapter is closed and its kernel shut down.
    Loading JupyterLab (its scripts, its extensions and settings, the workspace) was a quarter of
    Chromium's work per chapter when each chapter had a page of its own (issue 13). A chapter that
    fails (or raises) discards its page: the next chapter starts on a fresh page."""

    def __init__(self, lab, browser):
        self.lab, self.browser, self.page, self.outside = lab, browser, None, set()

    def open(self, chapter: str):
        self.outside.clear()
        if self.page is None:
            self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
            self.page.on("request", lambda r: self.outside.add(r.url)
                         if not r.url.startswith((self.lab["base"], "data:", "blob:")) else None)
            self.page.goto(f"{self.lab['base']}/lab?token={self.lab['token']}&reset", timeout=90_000)
            self.page.wait_for_function(JS_APP_READY, timeout=90_000)
            self.page.evaluate(JS_RESTORED)
        self.page.evaluate(JS_OPEN, f"chapters/{chapter}.ipynb")
        return self.page

    def done(self, clean: bool) -> None:
        """After a chapter: close it and keep the page (``clean``), or discard the page. Never raises
        (it runs in a ``finally``: the chapter's own failure is the one to report)."""
        try:
            if self.page is not None and clean:
                self.page.evaluate(JS_CLOSE_ALL)
                self.page.wait_for_function(JS_CLOSED, timeout=10_000)
        except Exception:  # noqa: BLE001  (a page that cannot close its tabs is not reused)
            clean = False
        try:
            if self.page is not None and not clean:
                self.page.close()
        except Exception:  # noqa: BLE001
            pass
        if not clean:
            self.page = None
        try:
            _shutdown_kernels(self.lab)
        except Exception as exc:  # noqa: BLE001
            print(f"note: shutting the kernels down failed: {exc}")

    def close(self) -> None:
        if self.page is not None:
            self.page.close()


@pytest.fixture(scope="module")
def lab_page(lab, browser):
    held = _LabPage(lab, browser)
    yield held
    held.close()


# Page-side helpers (JavaScript run in the page)
# The open notebook's kernel is idle (what the status bar shows as "<kernel> | Idle"), read from the
# app: not from the page's ``innerText``, which lays out and serialises the whole notebook each time it
# is polled, and not from a status bar that may still show the previous chapter's kernel.
JS_IDLE = ("(window.jupyterapp?.shell.currentWidget?.sessionContext?.kernelDisplayStatus === 'idle' "
           "&& !!document.querySelector('.jp-Notebook'))")
JS_STATE = """() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const prompts = cells.map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '');
  const errors = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
      .map(e => e.textContent).filter(t => /Traceback|Error/.test(t));
  const idle = """ + JS_IDLE + """;
  return {n: cells.length, busy: prompts.filter(p => p.includes('*')).length,
          done: prompts.filter(p => /\\[\\d+\\]/.test(p)).length,
          empty: cells.filter(c => !c.querySelector('.cm-content')?.textContent.trim()).length,
          errors, idle};
}"""

JS_MARKDOWN = """() => [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')].map((c, i) => {
  const r = c.querySelector('.myst');  // jupyterlab-myst's rendering (JupyterLab's own is .jp-RenderedMarkdown)
  if (!r) return {i, missing: true, text: c.querySelector('.jp-RenderedMarkdown')?.textContent || '', rawExpr: [], exprErrors: []};
  return {i, missing: false, text: r.textContent,
          rawExpr: [...r.querySelectorAll('code')].map(e => e.textContent).filter(t => /^prose\\.\\w+$/.test(t)),
          exprErrors: [...r.querySelectorAll('.myst-RenderedExpressionError, [data-mime-type="application/vnd.jupyter.stderr"]')]
              .map(e => e.textContent)};
})"""

JS_SCROLL_MARKDOWN = """async () => {
  for (const c of document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')) {
    c.scrollIntoView({block: 'nearest'});
    await new Promise(r => requestAnimationFrame(() => r()));
  }
}"""

# the live forms: code cells whose source is a ui.*_calculator(...) call, with or without arguments
# (fusion_calculator(launch_s) and latency_hiding_calculator(latency_s, ...) take the record's values)
JS_FORMS = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]
  .map((c, i) => ({i, src: c.querySelector('.cm-content')?.textContent || ''}))
  .filter(x => /ui\\.\\w+_calculator\\(/.test(x.src)).map(x => x.i)"""

CONTROLS = (
    ".widget-dropdown, .widget-slider, .widget-text, .widget-inttext, .widget-floattext, .widget-bounded-inttext, "
    ".widget-bounded-floattext, .widget-checkbox"
)
# The state of the form in code cell i: its drawn figures, its table, its controls (each marked for a
# locator), its error, the kernel's idleness, and ``elements``: a mark per figure element, new when
# live_form sent the figure again (it sends one only when its state changed: widgets/ui/_core.py).
# Called as (i) or ([i, n]): then, after reading, figure n (mod their count) is scrolled into view
# (plotly draws an update only when the figure is on screen), one call into the page per poll.
JS_FORM_STATE = """(arg) => {
  const [i, n] = Array.isArray(arg) ? arg : [arg, -1];
  const CONTROLS = '""" + CONTROLS + """';
  const cell = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')][i];
  const out = cell.querySelector('.jp-OutputArea');
  const all = [...out.querySelectorAll('.js-plotly-plot')];
  window.gpubookFigures = window.gpubookFigures || 0;
  const elements = all.map(gd => gd.dataset.gpubookFig || (gd.dataset.gpubookFig = String(++window.gpubookFigures)));
  // drawn figures only (a figure being redrawn in its Output widget has no plot yet)
  const plots = all.filter(gd => gd.querySelector('.main-svg'))
      .map(gd => JSON.stringify([gd.data || null, (gd.layout || {}).title || null,
                                                                                     (gd.layout || {}).annotations || null]));
  const html = [...out.querySelectorAll('.widget-html-content')].map(e => e.innerHTML)
      .filter(h => !/^<b>[^<]*<\\/b>$/.test(h) && !/^<style>/.test(h));  // the title; live_form's readout style
  const controls = [...out.querySelectorAll(CONTROLS)]
      .filter(e => e.offsetParent !== null && !e.querySelector(':disabled'))
      .map((e, k) => { e.dataset.gpubookCtl = `${i}-${k}`;
                       return {cls: e.className, label: (e.querySelector('.widget-label') || {}).textContent || ''}; });
  if (n >= 0 && all.length) all[n % all.length].scrollIntoView({block: 'nearest'});
  return {plots, html, controls, elements, idle: """ + JS_IDLE + """,
          error: out.querySelector('.calc-error') ? out.querySelector('.calc-error').textContent : null};
}"""


# a SelectionSlider's readout takes no typing (widgets/ui/_core.py READONLY_READOUT_CSS)
JS_READOUT_READ_ONLY = """e => { const r = e.querySelector('.widget-readout'); if (!r) return true;
  const s = getComputedStyle(r); return s.pointerEvents === 'none' && s.webkitUserModify === 'read-only'; }"""


JS_PLOTS_DRAWN = """(i) => {
  const cell = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')][i];
  return [...cell.querySelectorAll('.jp-OutputArea .js-plotly-plot')].map(gd => {
    const t = ((gd.layout || {}).title || {}).text || '';
    return `${(gd.data || []).length} traces, title ${t ? JSON.stringify(t.slice(0, 40)) : 'none'}`; }).join('; ') || 'none';
}"""


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        return None


def _fmt_like(x: float, like: str) -> str:
    return str(int(round(x))) if "." not in like and "e" not in like.lower() else f"{x:g}"


def _text_values(old: str) -> list[str]:
    """New values to type into a text control holding ``old``, the most ordinary first."""
    nums = _numbers(old)
    if nums is None:
        return []
    parts = [p.strip() for p in old.split(",")]
    if len(nums) > 1:  # a list (lanes per path, cycles per path): move some from the first to the second
        d = nums[0] / 2 or 1
        tries = ([nums[0] - d, nums[1] + d, *nums[2:]], [nums[0] + nums[1], 0, *nums[2:]])
        return [", ".join(_fmt_like(x, p) for x, p in zip(t, parts)) for t in tries]
    x = nums[0]
    out = [_fmt_like(v, parts[0]) for v in ((x * 2, x / 2, x + 1, x - 1) if x else (1, 2))]
    return [v for v in dict.fromkeys(out) if v != old]


def _moves(ctl) -> tuple[list[tuple[str, object]], object]:
    """The changes a reader might try on one control, each applied from the control's original
    state, and how to put it back: ([(description, apply)], restore)."""
    cls = ctl.get_attribute("class") or ""
    if "widget-dropdown" in cls:
        sel = ctl.locator("select")
        options = sel.locator("option").all_text_contents()
        o = sel.evaluate("s => s.selectedIndex")
        order = [(o + d) % len(options) for d in range(1, len(options))]
        moves = [(f"dropdown {options[o]!r} -> {options[j]!r}", lambda j=j: sel.select_option(index=j)) for j in order]
        return moves, lambda: sel.select_option(index=o)
    if "widget-slider" in cls:
        handle = ctl.locator(".noUi-handle").first
        readout = ctl.locator(".widget-readout")

        keyboard = ctl.page.keyboard  # keys go to the focused handle (a locator's press focuses it again each time)

        def press(*keys):
            before = readout.text_content()
            handle.focus()
            for key in keys:
                keyboard.press(key)
            return f"slider {before} -> {readout.text_content()}"

        start = readout.text_content()

        def back():  # to the value the form opened with, one step at a time (the moves go right first)
            handle.focus()
            for key in ("ArrowLeft", "ArrowRight"):
                for _ in range(200):
                    now = readout.text_content()
                    if now == start:
                        return
                    keyboard.press(key)
                    if readout.text_content() == now:  # at that end of the slider
                        break

        # cumulative: right, further right, the end, then back to the start; put back where it was
        return [("slider right", lambda: press("ArrowRight", "ArrowRight")), ("slider right", lambda: press("PageUp")),
                ("slider end", lambda: press("End")), ("slider home", lambda: press("Home"))], back
    if "widget-checkbox" in cls:
        box = ctl.locator("input")
        return [("checkbox toggled", box.click)], box.click
    inp = ctl.locator("input")
    old = inp.input_value()

    def typed(v):
        inp.fill(v)
        inp.press("Enter")

    return [(f"text {old} -> {v}", lambda v=v: typed(v)) for v in _text_values(old)], lambda: typed(old)


def _settle(page, i: int, before: dict, need_figure: bool) -> tuple[dict, bool, bool]:
    """Wait until the form has recomputed: both figure and table changed, or, with the kernel idle
    and every figure element drawn, nothing in the form changed for a second (at most CONTROL_S).
    live_form sets the table, then sends each figure whose state changed, which replaces its
    element; a replaced element is drawn late on a busy machine, and plotly draws only when the
    figure is on screen, so each figure is brought into view in turn, as a reader would."""
    t0, n, steady_since, last = time.monotonic(), 0, None, None
    if need_figure:
        page.evaluate(JS_FORM_STATE, [i, n])
    while True:
        page.wait_for_timeout(250)
        n += 1
        after = page.evaluate(JS_FORM_STATE, [i, n] if need_figure else i)
        # a figure counts as changed once every figure the form showed is drawn again, in a new state
        fig = after["plots"] != before["plots"] and len(after["plots"]) == len(before["plots"])
        table = after["html"] != before["html"]
        if (fig and table) or after["error"]:
            return after, fig, table
        now = time.monotonic()
        seen = (after["plots"], after["html"], after["elements"])
        drawn = len(after["plots"]) == len(after["elements"])
        steady_since = (steady_since or now) if after["idle"] and drawn and seen == last else None
        last = seen
        # the move changed only one of them, or nothing (a slider already at its end)
        if (steady_since and now - steady_since >= 1.0) or now - t0 > CONTROL_S:
            return after, fig, table


def _settle_back(page, i: int, want: dict) -> dict:
    """After a control is put back: wait (at most CONTROL_S) until the form shows again what it showed
    before the control was moved, table and every figure. Each state is drawn afresh from the
    kernel's JSON (``live_form`` redraws inside an Output widget), so the same state gives the same
    figure data; until then, a figure update still on its way would be credited to the next move."""
    t0 = time.monotonic()
    while True:
        page.wait_for_timeout(100)
        after = page.evaluate(JS_FORM_STATE, i)
        if (after["html"] == want["html"] and after["plots"] == want["plots"]) or time.monotonic() - t0 > CONTROL_S:
            return after


def _check_form(page, i: int, name: str, failures: list[str], notes: list[str], kinds: set[str]) -> None:
    """Move this form's controls in the page: its first control (each form's own redraw), then each
    control of a kind not yet moved in this chapter (``kinds``, updated: each kind's own view, readout
    and parsing); with EVERY_CONTROL, all of them."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(i)
    cell.scroll_into_view_if_needed()
    state = page.evaluate(JS_FORM_STATE, i)
    if not state["controls"]:
        failures.append(f"{name}: no visible control")
        return
    if not state["html"]:
        failures.append(f"{name}: no table shown")
        return
    has_figure = bool(state["plots"])  # a form without a figure (a converter) is checked on its table
    moved_one = False
    for k, control in enumerate(state["controls"]):
        label = control["label"] or f"control {k}"
        kind = re.search(r"gpubook-\w+", control["cls"])  # live_form's mark: the control's ipywidgets class
        kind = kind.group(0) if kind else control["cls"]
        ctl = page.locator(f'[data-gpubook-ctl="{i}-{k}"]')
        if kind == "gpubook-SelectionSlider" and not ctl.evaluate(JS_READOUT_READ_ONLY):
            failures.append(f"{name} / {label}: its readout can be typed into, and ipywidgets ignores what is typed")
        if not EVERY_CONTROL and ((moved_one and kind in kinds) or (name, label) in TABLE_ONLY):
            continue  # this form redrew, and this kind moved in this chapter already (EVERY_CONTROL: all of them)
        kinds.add(kind)
        moved_one = True
        table_only = (name, label) in TABLE_ONLY
        moves, restore = _moves(ctl)
        opened = page.evaluate(JS_FORM_STATE, i)  # each control is judged from the form's opening state
        tried, ok = [], False
        for desc, apply in moves:
            before = page.evaluate(JS_FORM_STATE, i)
            done = apply()
            done = done if isinstance(done, str) else desc
            after, fig, table = _settle(page, i, before, has_figure and not table_only)
            if after["error"]:
                notes.append(f"{name} / {label} ({done}): the form refuses it: {after['error'][:160]}")
                tried.append(f"{done}: error")
                if restore:
                    restore()
                    _settle_back(page, i, opened)
                continue
            if table_only and fig:
                failures.append(f"{name} / {label}: now changes the figure; remove it from TABLE_ONLY")
            if table and (fig or not has_figure or table_only):
                ok = True
                break
            tried.append(f"{done}: figure changed {fig}, table changed {table}")
        if restore:
            restore()
            back = _settle_back(page, i, opened)
            if back["html"] != opened["html"]:
                failures.append(f"{name} / {label}: put back, the table did not return to what it showed before the move")
            elif back["plots"] != opened["plots"]:
                failures.append(f"{name} / {label}: put back, the figure did not return to what it showed before the move")
        if not ok:
            drawn = page.evaluate(JS_PLOTS_DRAWN, i)  # tells a never-drawn (blank) figure from one that stopped following
            failures.append(f"{name} / {label}: no change of it moved both figure and table ({'; '.join(tried) or 'no move to try'}); "
                            f"figures on the page: {drawn}")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_reads_and_reacts_in_jupyterlab(lab_page, chapter):
    failures = _chapter_in_jupyterlab(lab_page, chapter)
    assert not failures, f"{chapter} in JupyterLab:\n  " + "\n  ".join(failures)


def _chapter_in_jupyterlab(lab_page: _LabPage, chapter: str) -> list[str]:
    """Open the chapter in JupyterLab, Run All, read the prose, move the live forms' controls: the
    failures found."""
    failures: list[str] = []
    notes: list[str] = []
    outside = lab_page.outside
    clean = False
    try:
        page = lab_page.open(chapter)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function("() => " + JS_IDLE, timeout=90_000)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        t0 = time.monotonic()
        while True:
            page.wait_for_timeout(1000)
            st = page.evaluate(JS_STATE)
            if st["errors"]:
                pytest.fail(f"{chapter}: a cell raised in JupyterLab:\n" + st["errors"][0][-3000:])
            if st["busy"] == 0 and st["idle"] and st["done"] >= st["n"] - st["empty"]:
                break
            if time.monotonic() - t0 > RUN_ALL_S:
                pytest.fail(f"{chapter}: Run All did not finish in {RUN_ALL_S} s ({st['done']} of {st['n']} cells ran)")
        run_s = time.monotonic() - t0
        page.wait_for_timeout(1500)  # the last markdown cells' expressions

        # as a reader scrolls through (JupyterLab renders what comes into view): one call into the page, a
        # frame drawn at each markdown cell (a locator round trip per cell cost seconds per chapter)
        page.evaluate(JS_SCROLL_MARKDOWN)
        page.wait_for_timeout(1000)
        for md in page.evaluate(JS_MARKDOWN):
            if md["missing"]:
                failures.append(f"markdown cell {md['i']}: not rendered by jupyterlab-myst")
            raw = [r for r in RAW if r in md["text"]]
            if raw:
                i = md["text"].find(raw[0])
                failures.append(f"markdown cell {md['i']}: raw {raw} visible: ...{md['text'][max(0, i - 80):i + 80]!r}")
            if md["rawExpr"]:
                failures.append(f"markdown cell {md['i']}: {{eval}} not evaluated: {md['rawExpr']}")
            if md["exprErrors"]:
                failures.append(f"markdown cell {md['i']}: {{eval}} error: {md['exprErrors'][:3]}")

        forms = page.evaluate(JS_FORMS)
        kinds: set[str] = set()  # the kinds of control moved so far in this chapter
        for i in forms:
            src = page.locator(".jp-Notebook .jp-CodeCell").nth(i).locator(".cm-content").text_content()
            _check_form(page, i, re.search(r"ui\.(\w+_calculator)\(", src).group(1), failures, notes, kinds)
        if outside:
            failures.append(f"requests left the machine: {sorted(outside)[:5]}")
        print(f"{chapter}: Run All {run_s:.0f} s, {len(forms)} live forms, checked in {time.monotonic() - t0:.0f} s")
        for note in notes:
            print("  note:", note)
        clean = not failures
    finally:
        lab_page.done(clean)
    return failures
