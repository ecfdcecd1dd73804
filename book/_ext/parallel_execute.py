"""The book's notebooks execute in parallel: one notebook per process, several at a time.

myst-nb executes a notebook while Sphinx reads it (``execute_notebooks: inline``: the prose's
``{eval}`` roles are evaluated in the chapter's live kernel, book/_ext/prose_eval.py), so a serial
read executes the chapters one after the other: 388 s of a 15-minute ``make test`` on 2 cores
(benchmarks/fresh_clone_make_test.json, 8 chapters). Sphinx can read in forked processes
(``sphinx-build -j N``), but ``jupyter-book build`` has no option for it. This extension

- sets the number of reading processes (``GPUBOOK_BUILD_JOBS``; default: the CPU count, at most 4;
  ``GPUBOOK_BUILD_JOBS=1`` reads serially, as before);
- cuts the documents so that each executed notebook is read in a process of its own, the notebooks
  first, the longest first (as long as the last build of this checkout took, kept in
  ``_build/notebook_runtimes.json``; without one, a notebook not yet timed goes first and the others
  by the size of their code, a rough proxy), the short text pages after them in a few chunks; each
  notebook still runs once, top to bottom, in its own kernel, and its warnings and errors come back
  to the main process (Sphinx replays a process's log there, so ``-W`` still fails the build);
- writes the HTML serially (book/_ext/teaching.py collects the quiz pages while writing and is not
  safe for parallel writing; writing is not where the time goes);
- declares the two Jupyter Book extensions that say nothing about parallel reading
  (``sphinx_multitoc_numbering``: patches the section numbering, which the main process assigns
  after reading; ``sphinx_jupyterbook_latex``: node classes and transforms applied per document)
  safe for it, as their code shows; any other undeclared extension still makes Sphinx warn (an
  error under ``-W``) and read serially.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import sphinx.builders
from sphinx.application import Sphinx
from sphinx.util.parallel import make_chunks

REVIEWED_READ_SAFE = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")
MAX_DEFAULT_JOBS = 4
TEXT_CHUNKS = 2  # the pages that execute nothing: this many chunks
RUNTIMES = "notebook_runtimes.json"


def jobs() -> int:
    """Reading processes: ``GPUBOOK_BUILD_JOBS`` or the CPU count (at most 4)."""
    value = os.environ.get("GPUBOOK_BUILD_JOBS", "").strip()
    if value:
        n = int(value)
        if n < 1:
            raise ValueError(f"GPUBOOK_BUILD_JOBS={value!r}: give a number of processes, 1 or more")
        return n
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_JOBS))


def _code_chars(path: str) -> int:
    """Characters of code in a notebook (how much it runs, roughly)."""
    try:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f).get("cells", [])
    except (OSError, ValueError):
        return 0
    return sum(len("".join(c.get("source", ""))) for c in cells if c.get("cell_type") == "code")


def runtimes_path(app: Sphinx) -> Path:
    """Where the notebooks' run times of the last build are kept: ``<source>/_build``, which every
    build of this checkout shares (``make book``'s and the tests' builds alike)."""
    return Path(app.srcdir) / "_build" / RUNTIMES


def _last_runtimes(app: Sphinx) -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(runtimes_path(app).read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _keep_runtimes(app: Sphinx, env) -> None:
    """After reading: each executed notebook's run time (myst-nb's ``exec_data``), for the next build."""
    times = _last_runtimes(app)
    for doc, meta in getattr(env, "nb_metadata", {}).items():
        runtime = ((meta or {}).get("exec_data") or {}).get("runtime")
        if runtime:
            times[doc] = round(float(runtime), 2)
    try:
        runtimes_path(app).parent.mkdir(parents=True, exist_ok=True)
        runtimes_path(app).write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass  # a read-only checkout: the next build orders by code size


def read_chunks(app: Sphinx, docnames: list[str], nproc: int) -> list[list[str]]:
    """The chunks Sphinx reads in parallel: each notebook alone, longest first, then the other
    pages in :data:`TEXT_CHUNKS` chunks, in the order Sphinx's pool starts them.

    ``sphinx.util.parallel.ParallelTasks`` starts the first ``nproc`` chunks at once, then always
    the last one still waiting (``dict.popitem``): the list is arranged so that the start order is
    the order above.
    """
    paths = {d: str(app.env.doc2path(d)) for d in docnames}
    last = _last_runtimes(app)
    notebooks = sorted((d for d in docnames if paths[d].endswith(".ipynb")),
                       key=lambda d: (d in last, -last.get(d, 0.0), -_code_chars(paths[d])))
    others = [d for d in docnames if d not in notebooks]
    size = max(1, -(-len(others) // TEXT_CHUNKS))
    wanted = [[d] for d in notebooks] + [others[i:i + size] for i in range(0, len(others), size)]
    return wanted[:nproc] + wanted[nproc:][::-1]


def _builder_inited(app: Sphinx) -> None:
    for name in REVIEWED_READ_SAFE:
        ext = app.extensions.get(name)
        if ext is not None and ext.parallel_read_safe is None:
            ext.parallel_read_safe = True
    app.builder.allow_parallel = False  # serial writing (see the module docstring)
    _CURRENT["app"] = app
    sphinx.builders.make_chunks = _chunks  # the name Builder._read_parallel calls


_CURRENT: dict[str, Sphinx] = {}  # the application being built (a process may build several in turn)


def _chunks(arguments, nproc, maxbatch=10):
    app = _CURRENT.get("app")
    if app is not None and getattr(app.builder, "env", None) is not None and all(isinstance(d, str) for d in arguments):
        return read_chunks(app, list(arguments), nproc)
    return make_chunks(arguments, nproc, maxbatch)


def setup(app: Sphinx):
    app.parallel = jobs()
    app.connect("builder-inited", _builder_inited)
    app.connect("env-updated", _keep_runtimes)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
