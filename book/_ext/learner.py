"""The learner edition: the book without exercise solutions and without instructor notes.

As a Sphinx extension (listed in ``_config.yml``) it does nothing unless the build is a learner
build (``GPUBOOK_LEARNER=1``, which :func:`build` sets). Then it

- removes every exercise solution (sphinx-exercise's ``solution`` directive, dropdown or not);
- removes every element with the class ``instructor`` (e.g. an admonition ``:class: instructor``
  in a page learners also read);
- turns links to the instructor pages (``book/teaching/instructor*``, which the learner table of
  contents leaves out) into plain text, so the build stays warning-free.

- strips the solutions from the page sources the site serves (``_sources/``: the download button).

"Guess first" answers stay: they are part of reading the chapter, not solutions. The launch buttons
(Colab, Binder) open the notebooks in the repository, which hold the solutions: a course that
must hide them publishes the learner edition without launch buttons or points them at a fork.

As a script it builds that edition::

    python book/_ext/learner.py                       # the whole book -> _build/learner/html
    python book/_ext/learner.py --out DIR --only chapters/simt book/teaching/index

(``make learner`` runs the first form.) The learner table of contents is ``_toc.yml`` without the
instructor pages (``--only`` keeps just the listed files, for a quick test build); the learner
configuration is ``_config.yml`` with the instructor pages excluded.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = "GPUBOOK_LEARNER"
INSTRUCTOR_GLOB = "book/teaching/instructor*"
INSTRUCTOR_CLASS = "instructor"


def is_learner_build() -> bool:
    return os.environ.get(ENV) == "1"


def is_instructor_page(docname: str) -> bool:
    return Path(docname).as_posix().split("/")[-1].startswith("instructor") and "teaching" in docname


# ---------------------------------------------------------------------------------------------
# Sphinx extension


def _drop(app, doctree, docname) -> None:
    if not is_learner_build():
        return
    from docutils import nodes

    try:
        from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

        solution_types = (solution_node, solution_start_node, solution_end_node)
    except ImportError:  # pragma: no cover - sphinx-exercise is a book dependency
        solution_types = ()
    doomed = [n for n in doctree.findall(nodes.Element) if isinstance(n, solution_types)]
    doomed += [
        n for n in doctree.findall(nodes.Element) if INSTRUCTOR_CLASS in n.get("classes", []) and n not in doomed
    ]
    for node in doomed:
        if node.parent is not None:
            node.parent.remove(node)


def _instructor_link(app, env, node, contnode):
    """A link to an instructor page in the learner edition becomes its text (no warning)."""
    if not is_learner_build():
        return None
    target = str(node.get("reftarget", ""))
    if node.get("reftype") in ("doc", "ref", "any") and "instructor" in target:
        return contnode
    return None


SOLUTION_BLOCK = re.compile(r"(?ms)^(```|:::)\{solution\}.*?^\1[ \t]*$\n?")


def strip_solutions(markdown: str) -> str:
    """``markdown`` without its ``{solution}`` blocks (backtick or colon fences)."""
    return SOLUTION_BLOCK.sub("", markdown)


def _strip_sources(app, exception) -> None:
    """The page sources the site serves (``_sources/``, the download button) lose their solutions too."""
    if exception or not is_learner_build() or app.builder.format != "html":
        return
    import json

    for f in (Path(app.outdir) / "_sources").rglob("*"):
        if f.suffix == ".ipynb":
            nb = json.loads(f.read_text(encoding="utf-8"))
            for cell in nb.get("cells", []):
                if cell.get("cell_type") == "markdown":
                    src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                    cell["source"] = strip_solutions(src).splitlines(True)
            f.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        elif f.suffix in (".md", ".txt") and f.is_file():
            f.write_text(strip_solutions(f.read_text(encoding="utf-8")), encoding="utf-8")


def setup(app):
    app.connect("doctree-resolved", _drop)
    app.connect("build-finished", _strip_sources)
    app.connect("missing-reference", _instructor_link)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------------------------------------
# the learner build


def learner_toc(toc: dict, only: list[str] | None = None) -> dict:
    """``toc`` without the instructor pages (and, with ``only``, with just those files and the root)."""
    files = _toc_files(toc)
    keep = [f for f in files if not is_instructor_page(f) and (not only or f in set(only))]
    return _keep(toc, keep)


def _toc_files(toc: dict) -> list[str]:
    files = []

    def walk(entries):
        for e in entries:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return files


def _keep(toc: dict, only: list[str] | None) -> dict:
    """``toc`` with just the files in ``only`` (all when None), instructor pages included."""
    if not only:
        return copy.deepcopy(toc)
    keep = set(only)
    toc = copy.deepcopy(toc)

    def prune(entries):
        out = []
        for e in entries:
            if "file" in e and e["file"] not in keep:
                continue
            if "sections" in e:
                e["sections"] = prune(e["sections"])
                if not e["sections"]:
                    del e["sections"]
            out.append(e)
        return out

    parts = []
    for part in toc.get("parts", []):
        part["chapters"] = prune(part.get("chapters", []))
        if part["chapters"]:
            parts.append(part)
    toc["parts"] = parts
    return toc


LAUNCH_REPO_ENV = "GPUBOOK_LEARNER_REPO"  # a learner fork (solutions removed) for the Colab/Binder buttons


def learner_config(config: dict, launch_repo: str | None = None) -> dict:
    """``_config.yml`` for the learner edition: instructor pages excluded; local extensions with
    absolute paths (the configuration file is written outside the repository). The Colab/Binder/
    JupyterHub launch buttons would open the repository's notebooks, solutions included: they point
    at ``launch_repo`` (a learner fork; default: the ``GPUBOOK_LEARNER_REPO`` environment variable)
    or, without one, are removed."""
    config = copy.deepcopy(config)
    launch_repo = launch_repo if launch_repo is not None else os.environ.get(LAUNCH_REPO_ENV, "")
    if launch_repo:
        config.setdefault("repository", {})["url"] = launch_repo
    else:
        buttons = config.setdefault("launch_buttons", {})
        for key in ("colab_url", "binderhub_url", "jupyterhub_url", "thebe"):
            if key in buttons:
                buttons[key] = False if key == "thebe" else ""
    # hidden folders (a developer's scratch tree) are never pages of the book
    config["exclude_patterns"] = list(config.get("exclude_patterns", [])) + [INSTRUCTOR_GLOB, "_build", ".*", ".*/**"]
    config["title"] = f"{config.get('title', 'The book')} (learner edition)"
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {name: str((ROOT / path).resolve()) for name, path in sphinx.get("local_extensions", {}).items()}
    return config


def build(out: Path, only: list[str] | None = None, *, learner: bool = True, strict: bool = True) -> subprocess.CompletedProcess:
    """Build the learner edition into ``out/html``; the log goes to ``out/build.log``.

    ``only`` keeps just those toc files (a quick test build); ``learner=False`` builds the full
    edition of the same files instead (for comparison); ``strict`` makes warnings errors (a build
    of a few pages has links to the pages it left out, so tests pass ``strict=False`` and read the
    log).
    """
    import yaml

    out = Path(out).resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    if learner:
        toc, config = learner_toc(toc, only), learner_config(config)
    else:
        toc, config = _keep(toc, only), learner_config(config)
        config["title"] = yaml.safe_load((ROOT / "_config.yml").read_text()).get("title", "")
        config["exclude_patterns"] = [p for p in config["exclude_patterns"] if p != INSTRUCTOR_GLOB]
    (work / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (work / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(ROOT), "--all", "-n", "--keep-going",
           "--toc", str(work / "_toc.yml"), "--config", str(work / "_config.yml"), "--path-output", str(work)]
    cmd += ["-W"] if strict else []
    env = dict(os.environ, **{ENV: "1" if learner else "0"})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    (out / "build.log").write_text(proc.stdout + proc.stderr)
    html = work / "_build" / "html"
    if proc.returncode == 0 and html.is_dir():
        shutil.rmtree(out / "html", ignore_errors=True)
        shutil.move(str(html), str(out / "html"))
    return proc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python book/_ext/learner.py", description="Build the learner edition of the book.")
    p.add_argument("--out", default=str(ROOT / "_build" / "learner"), help="folder; the site goes to OUT/html")
    p.add_argument("--only", nargs="+", help="toc files to keep (the root page is always kept)")
    args = p.parse_args(argv)
    proc = build(Path(args.out), args.only)
    if proc.returncode:
        sys.stderr.write((proc.stdout + proc.stderr)[-6000:])
        print(f"learner edition: build failed (log: {Path(args.out) / 'build.log'})", file=sys.stderr)
        return proc.returncode
    print(f"learner edition: {Path(args.out) / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
