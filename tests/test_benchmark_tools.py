"""The benchmark script's own tools (tests/benchmark.py): what kind of process a CPU second went to,
and the sampler that adds it up beside a command."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark  # noqa: E402  (tests/benchmark.py: a script beside the tests, not a package)


def test_process_kind_examples():
    assert doctest.testmod(benchmark).failed == 0


@pytest.mark.parametrize(
    ("cmd", "ancestors", "kind"),
    [
        (
            "python -m ipykernel_launcher -f a.json",
            ["python .venv/bin/jupyter-book build . --all"],
            "kernel, book build",
        ),
        ("python -m ipykernel_launcher -f a.json", ["python -m pytest -n 6"], "kernel, other (nbval, tests)"),
        ("python .venv/bin/jupyter-lab --no-browser", ["python -m pytest"], "jupyterlab server"),
        # how tests/test_jupyterlab.py starts it (round 19's first record counted its kernels as "other")
        ("/x/.venv/bin/python -m jupyterlab --no-browser --port 1", ["python -m pytest"], "jupyterlab server"),
        ("python -m ipykernel_launcher -f a.json", ["/x/.venv/bin/python -m jupyterlab --no-browser"],
         "kernel, JupyterLab (chapters run live)"),
        (
            "node .venv/lib/python3.11/site-packages/playwright/driver/package/cli.js run-driver",
            [],
            "playwright driver",
        ),
        ("python -c import sys;exec(eval(sys.stdin.readline()))", ["python -m pytest -n 6"], "pytest workers"),
        ("/usr/lib/chromium/headless_shell --type=gpu-process", ["node ... playwright ..."], "chromium"),
    ],
)
def test_process_kind_by_own_command_and_ancestry(cmd, ancestors, kind):
    assert benchmark.process_kind(cmd, ancestors) == kind


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_cpu_by_kind_counts_a_busy_child_of_the_command():
    """A command that keeps a child Python busy for ~1.5 CPU s: the sampler gives that child's CPU to
    its kind, within what the command used in all (a sampler that missed the tree, or counted the
    whole machine, fails one of the bounds)."""
    import subprocess

    busy = "import time; t = time.process_time()\nwhile time.process_time() - t < 1.5: pass"
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {busy!r}])"]
    )
    sampler = benchmark.CpuByKind(proc.pid, every_s=0.05).start()
    proc.wait()
    kinds = sampler.stop()
    assert 1.0 <= kinds.get("other", 0) <= 3.0, kinds
    assert set(kinds) <= {"other"}, kinds
