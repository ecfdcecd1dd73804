"""The book build the tests share: the whole book, warnings as errors, built once per test run.

``ensure_built(run_id)`` builds into ``_build/test-book`` unless this test run (``run_id``) has
built it already, under a file lock shared by every pytest-xdist worker, and returns the build's
exit status and log. The ``built_book`` fixture (tests/conftest.py) calls it; so does ``make test``
at the very start of the run, in the background (the root conftest.py: ``GPUBOOK_BUILD_EARLY=1``),
so that the build runs while the workers start and collect, not after. Whoever comes second waits
on the lock and reads the first one's result: a failed build is reported, not built again.

    .venv/bin/python tests/book_build.py RUN_ID    # what the background start runs
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "test-book"
STATUS = "build-status.json"  # this run's id, the build's exit status, when it started, its wall time


def build_command(out: Path) -> list[str]:
    jb = Path(sys.executable).with_name("jupyter-book")
    exe = str(jb if jb.exists() else shutil.which("jupyter-book"))
    return [exe, "build", str(ROOT), "--all", "-W", "-n", "--keep-going", "--path-output", str(out)]


def ensure_built(run_id: str, out: Path = OUT) -> tuple[int, str]:
    """Build the book into ``out`` once for ``run_id``; return (exit status, log)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        status = out / STATUS
        if status.exists():
            done = json.loads(status.read_text())
            if done.get("run_id") == run_id:
                return done["returncode"], (out / "build.log").read_text()
        shutil.rmtree(out, ignore_errors=True)
        started, t0 = time.time(), time.monotonic()
        proc = subprocess.run(build_command(out), capture_output=True, text=True, cwd=ROOT)
        log = proc.stdout + proc.stderr
        out.mkdir(parents=True, exist_ok=True)
        (out / "build.log").write_text(log)
        status.write_text(json.dumps({"run_id": run_id, "returncode": proc.returncode, "started": started,
                                      "wall_s": round(time.monotonic() - t0, 1)}))
        return proc.returncode, log


def failure_report(log: str) -> str:
    """The lines of a failed build's log worth reading (warnings are errors)."""
    lines = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line]
    return "book build failed (warnings are errors):\n" + "\n".join(lines)[-8000:]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: tests/book_build.py RUN_ID")
    raise SystemExit(ensure_built(sys.argv[1])[0])
