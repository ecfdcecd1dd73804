"""Root conftest: applies to every test path (``tests/`` and the notebooks under ``chapters/``).

Random test order (pytest-randomly) must never shuffle a notebook's cells: nbval runs them in one
kernel, in order. pytest-randomly shuffles inside its hook wrapper before any plain
implementation runs, so this trylast implementation puts each notebook's cells back in order and
together, where its first cell fell (other tests keep their random places).

`make test` spreads the work over pytest-xdist workers with ``--dist loadfile`` and the scheduler
below (``pytest_xdist_make_scheduler``, used by the controller, which loads only this conftest): a
file's tests stay on one worker (a notebook's cells run in order in one kernel; module fixtures
such as a small built book or a torchrun are made once), except the files in SPREAD_FILES, whose
tests are long and independent: each goes to whichever worker is free. Work starts with the longest
pieces (FIRST: the JupyterLab chapters and the test that triggers the book build), then the others
by size. Under ``make test`` the book build starts with the run instead (``GPUBOOK_BUILD_EARLY=1``,
below), and the tests that wait for it go last. (xdist's own ``loadgroup`` does not work with pytest 9: it renames ``item._nodeid``, which
pytest 9's ``nodeid`` no longer reads, so grouped tests were scattered and a notebook's cells ran
in several kernels.)
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

SPREAD_FILES = {"test_browser.py", "test_jupyterlab.py", "test_quiz.py", "test_ui_ranges.py", "test_fuzz.py",
                "test_docstrings.py"}
# scopes that start first, in this order (prefixes of a scope)
FIRST = ("tests/test_book.py", "tests/test_jupyterlab.py::test_chapter_runs_reads_and_reacts_in_jupyterlab",
         "chapters/")


# The JupyterLab chapter runs go in JUPYTERLAB_STREAMS queues (GPUBOOK_JUPYTERLAB_STREAMS, default 2),
# each run one chapter at a time in one JupyterLab and one Chromium. Two, not four: each queue has its
# JupyterLab server, browser and worker, and four at once on 2 cores spent more CPU on the same work
# (the 8 chapters alone: benchmarks/jupyterlab_streams/streams_4_vs_2.log; issue 13), while the other
# workers keep both cores busy. With 4 at once on 2 cores, plotly FigureWidgets once stayed blank and
# never followed their controls (issue 14: benchmarks/jupyterlab_stress/figurewidget_at_55a4032.log);
# live forms now redraw inside an Output widget, and all 8 chapters pass 4 at once
# (benchmarks/jupyterlab_stress/output_widget.log).
JUPYTERLAB_TEST = "tests/test_jupyterlab.py::test_chapter_runs_reads_and_reacts_in_jupyterlab["
JUPYTERLAB_STREAMS = int(os.environ.get("GPUBOOK_JUPYTERLAB_STREAMS", "2"))
if JUPYTERLAB_STREAMS < 1:
    raise ValueError(f"GPUBOOK_JUPYTERLAB_STREAMS={JUPYTERLAB_STREAMS}: give 1 or more queues")
BROWSER_TESTS = "tests/test_browser.py::"


CHAPTERS = sorted(p.stem for p in (Path(__file__).parent / "chapters").glob("*.ipynb"))


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the test itself in a SPREAD_FILES file
    (a JupyterLab chapter run: its stream; a built page's tests in tests/test_browser.py: that page,
    whose visits they share, tests/test_browser.py::_Held)."""
    if nodeid.startswith(JUPYTERLAB_TEST):
        chapter = nodeid[len(JUPYTERLAB_TEST):].rstrip("]")
        k = CHAPTERS.index(chapter) if chapter in CHAPTERS else 0
        return f"{JUPYTERLAB_TEST}stream {k % JUPYTERLAB_STREAMS}]"
    if nodeid.startswith(BROWSER_TESTS) and nodeid.endswith("]"):
        page = nodeid.rsplit("[", 1)[1].rstrip("]")  # "chapters/simt", "book/teaching/index", or a chapter: "simt"
        return f"{BROWSER_TESTS}[{'chapters/' + page if page in CHAPTERS else page}]"
    path = nodeid.split("::", 1)[0]
    return nodeid if Path(path).name in SPREAD_FILES else path


def early_build() -> bool:
    """Whether the book build started with the run (``make test``: GPUBOOK_BUILD_EARLY=1)."""
    return os.environ.get("GPUBOOK_BUILD_EARLY", "") not in ("", "0") and not os.environ.get("GPUBOOK_BUILT_HTML")


def scope_order(scope: str, size: int, needs_build: bool = False) -> tuple:
    """Sort key of a scope: FIRST prefixes in their order, then the largest (most tests) first.

    When the build started with the run (:func:`early_build`), no test needs to trigger it: the
    scopes with a test that waits for it (the ``built_book`` fixture) go last, so that the workers
    do everything else while it runs; FIRST's ``tests/test_book.py`` then keeps no special place.
    """
    first = FIRST[1:] if early_build() else FIRST
    for k, prefix in enumerate(first):
        if scope.startswith(prefix):
            return (k, 0, -size)
    return (len(first), int(needs_build and early_build()), -size)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False  # the workers' collection order (below) is the queue's order
    return SpreadFileScheduling(config, log)


def _longest_first(items) -> None:
    """Sort ``items`` (stably) by their scope's :func:`scope_order`; every worker sorts alike."""
    sizes: dict[str, int] = {}
    needs_build: set[str] = set()
    for item in items:
        sc = scope_of(item.nodeid)
        sizes[sc] = sizes.get(sc, 0) + 1
        if "built_book" in getattr(item, "fixturenames", ()):
            needs_build.add(sc)
    items.sort(key=lambda it: scope_order(scope_of(it.nodeid), sizes[scope_of(it.nodeid)],
                                          scope_of(it.nodeid) in needs_build))


def _keep_notebook_cells_in_order(items) -> None:
    """Each notebook's cells in order and together, where its first cell fell; other tests keep their
    places. Together: pytest-randomly shuffles nbval's cells of several notebooks as one bucket (they
    have no module), and pytest tears a notebook's kernel down when a test of another file runs
    between two of its cells, so a cell after that ran in a fresh kernel (NameError)."""
    cells: dict[str, list] = {}
    for item in items:
        if hasattr(item, "cell_num") and str(item.path).endswith(".ipynb"):
            cells.setdefault(str(item.path), []).append(item)
    if not cells:
        return
    out = []
    for item in items:
        key = str(item.path) if hasattr(item, "cell_num") and str(item.path).endswith(".ipynb") else None
        if key is None:
            out.append(item)
        elif key in cells:  # the notebook's first slot: all of its cells, in order
            out += sorted(cells.pop(key), key=lambda it: it.cell_num)
    items[:] = out


# ---- the book build starts with the run (``make test``: GPUBOOK_BUILD_EARLY=1) ----
# The controller (the one process that is not an xdist worker) names the run (GPUBOOK_TEST_RUN_ID,
# inherited by the workers: tests/conftest.py's ``built_book`` builds once per id) and, under
# ``make test``, starts the build in the background at once, so that it runs while the workers start
# and collect (about a minute on 2 cores) and while the first tests run; the fixture then waits for
# it (tests/book_build.py: a file lock; a failed build is reported by the fixture, not rebuilt).
_EARLY_BUILD: subprocess.Popen | None = None
_XDIST_CONTROLLER = False  # this process hands tests to xdist workers (set below); the timeline at the end


def pytest_configure(config):
    global _EARLY_BUILD, _XDIST_CONTROLLER
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("GPUBOOK_WARMING_CACHES"):
        return
    _XDIST_CONTROLLER = bool(getattr(config.option, "numprocesses", None))
    run_id = os.environ.setdefault("GPUBOOK_TEST_RUN_ID", uuid.uuid4().hex)
    if early_build() and not config.option.collectonly:
        script = Path(__file__).parent / "tests" / "book_build.py"
        _EARLY_BUILD = subprocess.Popen([sys.executable, str(script), run_id], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
    if _XDIST_CONTROLLER and not config.option.collectonly and caches_cold():
        _warm_caches(config)


# ---- one cold start, not one per worker (``make test`` on a fresh clone) ----
# `make install` installs the packages without compiled files (pip --no-compile), and pytest compiles
# each test module with its asserts rewritten; each is cached once compiled (__pycache__). The xdist
# workers start together, so on a fresh clone every worker compiled the same modules: six workers
# collecting at once took 108-111 CPU s of this 2-core machine, one collection first and then the six
# 77 CPU s (measured for issue 13, back to back on a clean checkout). So when the caches are cold, the
# controller runs one collection (no test runs) before the workers start; it fills the caches the
# workers then read. Warm, it does nothing: a collection costs 7-8 CPU s.
WARM_PACKAGES = ("torch", "plotly", "numpy", "ipywidgets", "sphinx")  # what every worker imports (tests/, doctests)


def caches_cold(root: Path | None = None) -> bool:
    """Whether a worker would compile much: a heavy package, or half the test modules, not compiled
    yet (nor fresh). False when Python writes no compiled files (PYTHONDONTWRITEBYTECODE)."""
    import importlib.util

    if sys.dont_write_bytecode:
        return False
    for name in WARM_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and not os.path.exists(importlib.util.cache_from_source(spec.origin)):
            return True
    from _pytest.assertion.rewrite import PYTEST_TAG

    tests = sorted(((root or Path(__file__).parent) / "tests").glob("test_*.py"))
    stale = 0
    for t in tests:
        pyc = t.parent / "__pycache__" / f"{t.stem}.{PYTEST_TAG}.pyc"
        stale += not (pyc.exists() and pyc.stat().st_mtime >= t.stat().st_mtime)
    return stale * 2 > len(tests)


def _warm_caches(config) -> None:
    """Collect once, in a subprocess (the run's own arguments, no workers), and wait for it. Its
    outcome is not the run's: the workers collect again and report any error themselves."""
    args = [*config.invocation_params.args, "-n", "0", "--collect-only", "-q", "-p", "no:randomly"]
    env = {**os.environ, "GPUBOOK_WARMING_CACHES": "1"}
    t0 = time.monotonic()
    try:
        subprocess.run([sys.executable, "-m", "pytest", *args], cwd=config.invocation_params.dir, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pass
    config.stash[_WARMED] = time.monotonic() - t0


_WARMED = pytest.StashKey[float]()


def pytest_report_header(config):
    if _WARMED in config.stash:
        return f"caches were cold: one collection first, so the workers compile nothing again ({config.stash[_WARMED]:.0f} s)"


def pytest_unconfigure(config):
    """An early build the run no longer waits for (its tests deselected, the run interrupted) stops."""
    if _EARLY_BUILD is not None and _EARLY_BUILD.poll() is None:
        try:
            os.killpg(_EARLY_BUILD.pid, signal.SIGTERM)
        except ProcessLookupError:  # it ended meanwhile
            pass
        _EARLY_BUILD.wait()


# ---- one live run per chapter (``make test``: GPUBOOK_NBVAL_VIA_JUPYTERLAB=1) ----
# nbval-lax runs a chapter's cells live and fails on an exception; the JupyterLab test runs the same
# chapter live too (Run All in a real JupyterLab, failing on any cell's traceback), then moves its
# controls. Where the JupyterLab test will run a chapter (collected, not skipped, not xfail), make test
# does not run the chapter's cells a second time through nbval. Without Chromium (the JupyterLab test
# skipped) or with the variable unset (the H200 validation, a developer's `pytest chapters/x.ipynb`),
# nbval runs every chapter as before.
def _one_live_run_per_chapter(config, items) -> None:
    if os.environ.get("GPUBOOK_NBVAL_VIA_JUPYTERLAB", "") in ("", "0"):
        return
    lab = {it.nodeid[len(JUPYTERLAB_TEST):-1] for it in items if it.nodeid.startswith(JUPYTERLAB_TEST)
           and not any(m.name in ("skip", "skipif", "xfail") for m in it.iter_markers())}
    drop = [it for it in items if str(it.path).endswith(".ipynb") and Path(str(it.path)).parent.name == "chapters"
            and Path(str(it.path)).stem in lab]
    if drop:
        config.hook.pytest_deselected(items=drop)
        kept = set(map(id, drop))
        items[:] = [it for it in items if id(it) not in kept]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    _one_live_run_per_chapter(config, items)
    _keep_notebook_cells_in_order(items)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: its collection order is the scheduler's queue
        _longest_first(items)


# ---- a timeline of the run, for `make bench` (GPUBOOK_TIMELINE=<file>) ----
# One JSON line per test from the process that ran it: the worker, the test, when it started and
# ended (CLOCK_MONOTONIC, one clock for every process of the machine: this machine's wall clock was
# seen to jump by 78 s during a run). tests/benchmark.py sets it and summarises where the workers waited.
# The xdist controller sees every worker's tests again (relayed reports) and writes nothing.
# "cpu_s": the CPU time of the test's process and of the child processes it waited for (a kernel, a
# build, torchrun); not of Chromium's renderers or JupyterLab's kernels, which it does not wait for.
_TIMELINE_START: dict[str, tuple[float, float]] = {}


def _cpu_s() -> float:
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def pytest_runtest_logstart(nodeid, location):
    if os.environ.get("GPUBOOK_TIMELINE") and not _XDIST_CONTROLLER:
        _TIMELINE_START[nodeid] = (time.monotonic(), _cpu_s())


def pytest_runtest_logfinish(nodeid, location):
    if nodeid in _TIMELINE_START:
        start, cpu = _TIMELINE_START.pop(nodeid)
        row = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "test": nodeid,
               "start": start, "end": time.monotonic(), "cpu_s": round(_cpu_s() - cpu, 3)}
        with open(os.environ["GPUBOOK_TIMELINE"], "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
