"""Shared fixtures: the built book, built once per test run (shared by pytest-xdist workers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "test-book"


def _build(out: Path) -> None:
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    out.mkdir(parents=True, exist_ok=True)
    (out / "build.log").write_text(log)
    assert proc.returncode == 0, "book build failed (warnings are errors):\n" + "\n".join(
        line for line in log.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line
    )[-8000:]


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the whole book with warnings as errors (``-W -n --keep-going``) into
    ``_build/test-book`` once per test run; return its HTML root.

    Set GPUBOOK_BUILT_HTML to an existing build (e.g. _build/html) to reuse it while iterating.
    """
    reuse = os.environ.get("GPUBOOK_BUILT_HTML")
    if reuse:
        return Path(reuse)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(OUT) + ".lock"):
        marker = OUT / "built-by-run"
        if not (marker.exists() and marker.read_text() == run_id):
            shutil.rmtree(OUT, ignore_errors=True)
            _build(OUT)
            marker.write_text(run_id)
    return OUT / "_build" / "html"
