"""Shared fixtures: the built book (built once per test worker that needs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build the whole book with warnings as errors into a temporary folder; return its HTML root.

    Set GPUBOOK_BUILT_HTML to an existing build (e.g. _build/html) to reuse it while iterating.
    """
    reuse = os.environ.get("GPUBOOK_BUILT_HTML")
    if reuse:
        return Path(reuse)
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else shutil.which("jupyter-book")), "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    assert proc.returncode == 0, "book build failed (warnings are errors):\n" + "\n".join(
        line for line in log.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line
    )[-8000:]
    return out / "_build" / "html"
