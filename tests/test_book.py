"""The book as a site: its configuration, each chapter's first cell, and the built HTML
(warning-free, every page present, launch and repository buttons, static calculators carry their
frames, each browser asset only on the pages that use it, distinct citation labels, nothing
loaded from the network).

The configuration and notebook checks run without a build; the checks marked ``build`` build
the whole book once (``tests/conftest.py``; set GPUBOOK_BUILT_HTML to reuse a build).
"""

import html
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))

# The first code cell of every chapter, exactly: in Colab or Binder (anywhere without the book's
# package) it installs the package from the repository named in _config.yml; elsewhere it does
# nothing. One visible line of logic; `%pip` installs into the running kernel.
INSTALL_CELL = (
    "import importlib.util\n"
    'if importlib.util.find_spec("widgets") is None:  # Colab, Binder\n'
    f'    %pip install -q "gpu-book-widgets[chapters] @ git+{REPO_URL}"'
)


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


# ---------------------------------------------------------------------------------------------
# configuration and notebooks (no build)


def _parallel_execute():
    import importlib.util

    pytest.importorskip("sphinx.builders", reason="Sphinx is not installed (the H200 image has no Sphinx stack)")

    spec = importlib.util.spec_from_file_location("parallel_execute", ROOT / "book" / "_ext" / "parallel_execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_executes_notebooks_in_parallel_and_stays_warning_free():
    """The build reads (executes) its notebooks in parallel (book/_ext/parallel_execute.py), with
    myst-nb's inline execution that the {eval} prose needs, and -W in both build commands."""
    assert "parallel_execute" in CONFIG["sphinx"]["local_extensions"]
    assert CONFIG["execute"]["execute_notebooks"] == "inline"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"\$\(JB\) build \. --all -W -n --keep-going", makefile)
    assert "GPUBOOK_BUILD_EARLY=1" in makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    import book_build

    assert book_build.build_command(Path("/x"))[2:] == [str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", "/x"]


def test_one_build_per_test_run_and_a_failed_build_is_reported_not_rebuilt(tmp_path, monkeypatch):
    """tests/book_build.py: whoever asks second in a run (the fixture after the early background
    build, another worker) gets the first build's result; a new run builds again."""
    import book_build

    calls = []

    def command(code):
        def build_command(out):
            calls.append(out)
            return [sys.executable, "-c", code]
        return build_command

    out = tmp_path / "test-book"
    monkeypatch.setattr(book_build, "build_command", command("import sys; print('x.md:3: WARNING: bad'); sys.exit(1)"))
    assert book_build.ensure_built("run-1", out)[0] == 1
    returncode, log = book_build.ensure_built("run-1", out)
    assert returncode == 1 and len(calls) == 1, "a failed build is reported again, not rebuilt"
    assert "x.md:3: WARNING: bad" in book_build.failure_report(log)
    monkeypatch.setattr(book_build, "build_command", command("print('build succeeded')"))
    assert book_build.ensure_built("run-2", out) == (0, "build succeeded\n") and len(calls) == 2


def test_build_jobs_come_from_the_environment(monkeypatch):
    pe = _parallel_execute()
    monkeypatch.setenv("GPUBOOK_BUILD_JOBS", "3")
    assert pe.jobs() == 3
    monkeypatch.setenv("GPUBOOK_BUILD_JOBS", "0")
    with pytest.raises(ValueError, match="GPUBOOK_BUILD_JOBS"):
        pe.jobs()
    monkeypatch.delenv("GPUBOOK_BUILD_JOBS")
    assert 1 <= pe.jobs() <= pe.MAX_DEFAULT_JOBS


def test_sphinx_starts_the_notebooks_longest_first(tmp_path):
    """Each notebook is a chunk of its own; Sphinx's own process pool (one process at a time here)
    starts them in the order wanted: a notebook not yet timed first, then the last build's run
    times, longest first, then the text pages; every document exactly once."""
    import time
    from types import SimpleNamespace

    pytest.importorskip("sphinx.util.parallel", reason="Sphinx is not installed (the H200 image has no Sphinx stack)")
    from sphinx.util.parallel import ParallelTasks

    pe = _parallel_execute()
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / pe.RUNTIMES).write_text(json.dumps({"a": 5.0, "b": 30.0, "c": 12.0}))
    docs = ["a", "b", "c", "new", "p1", "p2", "p3"]
    for d in docs:
        suffix = ".md" if d.startswith("p") else ".ipynb"
        (tmp_path / f"{d}{suffix}").write_text(json.dumps({"cells": []}) if suffix == ".ipynb" else "# page")
    env = SimpleNamespace(doc2path=lambda d: str(next(tmp_path.glob(f"{d}.*"))))
    app = SimpleNamespace(env=env, srcdir=str(tmp_path))
    chunks = pe.read_chunks(app, docs, 1)
    assert sorted(d for c in chunks for d in c) == sorted(docs)
    started = []
    tasks = ParallelTasks(1)
    for chunk in chunks:
        # each takes a while (as a notebook does), so that every chunk is queued before the first ends
        tasks.add_task(lambda c: (c, time.monotonic(), time.sleep(0.3)), chunk, lambda arg, result: started.append(result))
    tasks.join()
    order = [c for c, _, _ in sorted(started, key=lambda r: r[1])]
    assert order[:4] == [["new"], ["b"], ["c"], ["a"]]
    assert sorted(d for c in order[4:] for d in c) == ["p1", "p2", "p3"]


def test_chapters_are_named_by_topic():
    for f in toc_files():
        if f.startswith("chapters/"):
            assert not re.match(r"chapters/\d", f), f"{f}: order lives in _toc.yml, not in file names"


def test_launch_and_repository_buttons_are_configured():
    # Jupyter Book 1 replaces (not merges) the html_theme_options it generates from
    # launch_buttons/repository/html with sphinx.config's unless recursive_update is set
    sphinx = CONFIG.get("sphinx", {})
    theme = sphinx.get("config", {}).get("html_theme_options", {})
    assert sphinx.get("recursive_update") is True or {"launch_buttons", "repository_url"} <= set(theme), (
        "set sphinx.recursive_update: true, or the launch and repository buttons vanish"
    )
    assert re.match(r"https://(github\.com|gitlab\.com)/[^/]+/[^/]+$", REPO_URL), REPO_URL
    launch = CONFIG["launch_buttons"]
    assert launch.get("colab_url") and launch.get("binderhub_url")
    hub = launch.get("jupyterhub_url") or ""
    assert "example." not in hub, f"jupyterhub_url {hub!r} is a placeholder: leave it empty unless a hub exists"
    html = CONFIG["html"]
    assert html.get("use_repository_button") and html.get("use_issues_button")


def test_only_the_config_names_the_repository():
    """The repository URL is written in _config.yml; elsewhere only where it must be literal
    (the chapters' install cell, checked below against the config)."""
    for path in [ROOT / "book" / "how_to_use.md", ROOT / "book" / "intro.md"]:
        text = path.read_text()
        assert REPO_URL not in text, f"{path.name} repeats the repository URL: link to the button instead"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_first_code_cell_installs_the_package(chapter):
    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, f"{chapter}: no code cell"
    first = code[0]
    source = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    assert source.strip() == INSTALL_CELL, (
        f"{chapter}: the first code cell must be exactly (URL from _config.yml):\n{INSTALL_CELL}\n"
        f"found:\n{source.strip()[:400]}"
    )
    tags = set(first.get("metadata", {}).get("tags", []))
    assert not tags & {"remove-cell", "remove-input", "hide-input"}, (
        f"{chapter}: the install line must be visible ({tags})"
    )


# ---------------------------------------------------------------------------------------------
# the built book


@pytest.mark.build
def test_every_toc_page_is_built(built_book):
    for f in toc_files():
        assert (built_book / f"{f}.html").exists(), f
    assert (built_book / "index.html").exists()


EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)


@pytest.mark.build
def test_no_doctree_carries_the_build_environment(built_book):
    """book/_ext/lean_doctrees.py: no pickled doctree holds Sphinx's build environment. Nodes left on
    the nested document that autodoc's ``{eval-rst}`` block parsed pickled the whole environment
    with each API page (10 MB a page), and the build spent its largest single cost unpickling them."""
    doctrees = built_book.parent / ".doctrees"
    if not doctrees.is_dir():
        pytest.skip(f"no doctrees beside {built_book}")
    pages = sorted(doctrees.rglob("*.doctree"))
    assert any(p.parent.name == "api" for p in pages), f"no API page in {doctrees}"
    heavy = [str(p.relative_to(doctrees)) for p in pages if b"BuildEnvironment" in p.read_bytes()]
    assert not heavy, f"doctrees that carry the build environment: {heavy}"


@pytest.mark.build
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


@pytest.mark.build
def test_assets_are_served_by_the_book(built_book):
    static = built_book / "_static"
    for name in (
        "plotly.min.js",
        "plotly-cartesian.min.js",
        "plotly_templates.js",
        "plotly_theme.js",
        "gpubook.css",
        "require.min.js",
        "embed-amd.js",
        "mathjax/tex-chtml.js",
    ):
        assert (static / name).exists(), name
    page = (built_book / "chapters" / "memory_hierarchy.html").read_text()
    assert "_static/mathjax/tex-chtml.js" in page
    assert "_static/gpubook.css" in page


PLOTLY_JS = re.compile(r'<script[^>]+src="[^"]*_static/(plotly(?:-cartesian)?\.min\.js)[^"]*"')
WIDGET_JS = re.compile(r'<script[^>]+src="[^"]*_static/(embed-amd\.js|require\.min\.js)')


@pytest.mark.build
@pytest.mark.parametrize("page", toc_files())
def test_each_asset_only_where_it_is_used(built_book, page):
    html = (built_book / f"{page}.html").read_text()
    body = html.split("<body", 1)[1]
    bundles = PLOTLY_JS.findall(html)
    if "plotly-graph-div" in body:
        assert len(bundles) == 1, f"{page}: has figures but loads plotly.js {len(bundles)} times ({bundles})"
        assert "_static/plotly_theme.js" in html
    else:
        assert not bundles, f"{page}: no figure, yet loads {bundles}"
    widgets = WIDGET_JS.findall(html)
    if "application/vnd.jupyter.widget-view+json" in body:
        assert {"embed-amd.js", "require.min.js"} <= set(widgets), f"{page}: shows a widget without the manager"
    else:
        assert not widgets, f"{page}: no widget on the page, yet loads {widgets}"
        assert "application/vnd.jupyter.widget-state+json" not in html, f"{page}: widget state without a widget"


@pytest.mark.build
def test_cartesian_bundle_draws_every_trace_type(built_book):
    """The partial bundle is used only where it holds every trace type of the page's figures."""
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from offline_assets import CARTESIAN_TRACES, trace_types

    for page in toc_files():
        html = (built_book / f"{page}.html").read_text()
        types = trace_types(html)
        bundles = PLOTLY_JS.findall(html)
        if bundles == ["plotly-cartesian.min.js"]:
            assert types is not None and types <= CARTESIAN_TRACES, f"{page}: {types} not all in the cartesian bundle"


@pytest.mark.build
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_launch_and_repository_buttons(built_book, chapter):
    html = (built_book / "chapters" / f"{chapter}.html").read_text()
    org_repo = REPO_URL.split("://", 1)[1].split("/", 1)[1]
    colab = f"https://colab.research.google.com/github/{org_repo}/blob/{BRANCH}/chapters/{chapter}.ipynb"
    assert f'href="{colab}"' in html, f"{chapter}: no Colab button for {colab}"
    assert f"https://mybinder.org/v2/gh/{org_repo}/{BRANCH}" in html, f"{chapter}: no Binder button"
    assert f'href="{REPO_URL}"' in html, f"{chapter}: no repository button"
    assert f"{REPO_URL}/issues/new?" in html, f"{chapter}: no issue button"
    hub = CONFIG["launch_buttons"].get("jupyterhub_url") or ""
    assert ("hub/user-redirect" in html) == bool(hub), f"{chapter}: JupyterHub button shown={not hub}, hub={hub!r}"


def _figures(html):
    """The JSON arguments of each Plotly.newPlot call: (data, layout) text."""
    return re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{", html, re.S)


@pytest.mark.build
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_static_calculators_carry_their_slider_steps(built_book, chapter):
    html = (built_book / "chapters" / f"{chapter}.html").read_text()
    n_sliders = html.count('"sliders"')
    if chapter == "memory_hierarchy":
        assert n_sliders >= 3
    if n_sliders:
        # every slider step animates to a named frame, and the frames are in the page
        assert '"method":"animate"' in html.replace(" ", "")
        assert "Plotly.addFrames" in html or '"frames"' in html


CITATION = re.compile(r'<a class="reference internal" href="[^"#]*references\.html#([^"]+)"[^>]*>([^<]+)</a>')
BIB_ENTRY = re.compile(
    r'<div class="citation" id="([^"]+)"[^>]*>\s*<span class="label"><span class="fn-bracket">\[</span>([^<]+)<'
)


def _label(text: str) -> str:
    """A label as read: entities decoded, non-breaking and repeated spaces as one space."""
    return " ".join(html.unescape(text).replace("\xa0", " ").split())


@pytest.mark.build
def test_every_id_on_a_page_is_unique(built_book):
    """An id names one element of its page (HTML): sphinx-exercise gave every exercise's and
    solution's body the same one (book/_ext/teaching.py makes them unique)."""
    import collections

    dupes = {}
    for page in sorted(built_book.rglob("*.html")):
        if "_static" in page.parts or "jupyter_execute" in page.parts:
            continue
        ids = collections.Counter(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8", errors="replace")))
        same = sorted(k for k, v in ids.items() if v > 1)
        if same:
            dupes[str(page.relative_to(built_book))] = same[:5]
    assert not dupes, f"ids used more than once on a page: {dupes}"


@pytest.mark.build
def test_citation_labels_are_distinct(built_book):
    """Every label a reader sees names one bibliography entry, and the entry carries the same label
    (four NVIDIA guides of 2025 used to cite as the same "[NVIDIA, 2025]")."""
    bib = {k: _label(v) for k, v in BIB_ENTRY.findall((built_book / "book" / "references.html").read_text())}
    assert bib, "no bibliography entries on the references page"
    labels = list(bib.values())
    repeated = sorted({x for x in labels if labels.count(x) > 1})
    assert not repeated, f"bibliography labels used by more than one entry: {repeated}"
    targets, problems = {}, []
    for page in toc_files():
        for target, label in CITATION.findall((built_book / f"{page}.html").read_text()):
            label = _label(label)
            targets.setdefault(label, set()).add(target)
            if bib.get(target) != label:
                problems.append(f"{page}: cites [{label}] but the entry {target} is labelled [{bib.get(target)}]")
    assert targets, "no citation found in any page"
    clashes = {k: sorted(v) for k, v in targets.items() if len(v) > 1}
    assert not clashes, f"one label for several entries: {clashes}"
    assert not problems, "\n".join(problems[:20])


@pytest.mark.build
def test_memory_hierarchy_numbers_come_from_glue(built_book):
    html = (built_book / "chapters" / "memory_hierarchy.html").read_text()
    assert "989 TFLOP/s" in html and "4.8 TB/s" in html and "206" in html
    assert "Invalid input" not in html and "Traceback" not in html


def test_make_test_runs_each_chapter_live_once(monkeypatch):
    """Under make test (GPUBOOK_NBVAL_VIA_JUPYTERLAB=1) a chapter the JupyterLab test runs is not run again by
    nbval; a chapter whose JupyterLab run is skipped or xfail, the accuracy page, and every chapter with the
    variable unset keep their nbval cells."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root)

    def item(nodeid, path, *markers):
        return SimpleNamespace(nodeid=nodeid, path=ROOT / path, iter_markers=lambda: [SimpleNamespace(name=m) for m in markers])

    lab = root.JUPYTERLAB_TEST
    items = [item(lab + "simt]", "tests/test_jupyterlab.py"), item(lab + "serving]", "tests/test_jupyterlab.py", "skip"),
             item(lab + "kernels]", "tests/test_jupyterlab.py", "xfail"),
             item("chapters/simt.ipynb::Cell 0", "chapters/simt.ipynb"), item("chapters/serving.ipynb::Cell 0", "chapters/serving.ipynb"),
             item("chapters/kernels.ipynb::Cell 0", "chapters/kernels.ipynb"), item("book/accuracy.ipynb::Cell 0", "book/accuracy.ipynb")]
    gone = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: gone.extend(items)))
    monkeypatch.delenv("GPUBOOK_NBVAL_VIA_JUPYTERLAB", raising=False)
    kept = list(items)
    root._one_live_run_per_chapter(config, kept)
    assert kept == items and not gone
    monkeypatch.setenv("GPUBOOK_NBVAL_VIA_JUPYTERLAB", "1")
    root._one_live_run_per_chapter(config, kept)
    assert [i.nodeid for i in gone] == ["chapters/simt.ipynb::Cell 0"] and len(kept) == len(items) - 1


def test_make_test_warms_the_caches_once_only_when_they_are_cold(tmp_path, monkeypatch):
    """The root conftest.py collects once before the workers start when a worker would compile much
    (a heavy package or most test modules without their compiled file), and never when Python
    writes no compiled files."""
    import importlib.util
    import os
    import sys

    from _pytest.assertion.rewrite import PYTEST_TAG

    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    pkg = tmp_path / "site" / "gpubook_cold_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    tests = tmp_path / "tests"
    (tests / "__pycache__").mkdir(parents=True)
    for name in ("a", "b", "c"):
        (tests / f"test_{name}.py").write_text("def test(): pass\n")

    def compiled(name):  # a compiled file newer than its source, as pytest writes it
        pyc = tests / "__pycache__" / f"test_{name}.{PYTEST_TAG}.pyc"
        pyc.write_bytes(b"")
        t = (tests / f"test_{name}.py").stat().st_mtime + 1
        os.utime(pyc, (t, t))

    monkeypatch.setattr(root, "WARM_PACKAGES", ())
    assert root.caches_cold(tmp_path), "no test module compiled"
    compiled("a")
    assert root.caches_cold(tmp_path), "two of three test modules not compiled"
    compiled("b")
    assert not root.caches_cold(tmp_path), "one test module to compile is not worth a collection"
    monkeypatch.setattr(root, "WARM_PACKAGES", ("gpubook_cold_pkg",))
    assert root.caches_cold(tmp_path), "a package without its compiled file"
    cached = Path(importlib.util.cache_from_source(str(pkg / "__init__.py")))
    cached.parent.mkdir()
    cached.write_bytes(b"")
    assert not root.caches_cold(tmp_path)
    (tests / "__pycache__" / f"test_b.{PYTEST_TAG}.pyc").unlink()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not root.caches_cold(tmp_path), "nothing would be cached: no collection first"
