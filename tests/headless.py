"""The headless Chromium that every browser test, benchmark and screenshot drives: which binary,
with which flags (one home for both; the test modules import it, as ``import headless``).

The binary, first found of:

1. ``GPUBOOK_CHROMIUM``, a name on the PATH or a path (to compare two browsers);
2. Debian's ``chromium-headless-shell``, the "old" headless shell: the page without a browser
   around it. It is what ``make chromium`` (run by ``make test``) installs. On this 2-core machine
   it opened and drew the same pages for less CPU than ``chromium --headless=new``, measured for
   issue 13 back to back with the machine's CPU: the built pages' tests 218 and 231 -> 188 and 190
   CPU s; two chapters in JupyterLab 142 -> 130 CPU s;
3. Debian's ``chromium`` (``--headless=new``), or ``chromium-browser``.
"""

from __future__ import annotations

import os
import shutil

NAMES = ("chromium-headless-shell", "chromium", "chromium-browser")
MISSING = ("headless Chromium is not installed (Debian: `sudo apt-get install chromium-headless-shell`; "
           "`make test` installs it when run as root)")  # fmt: skip

# No request the page did not make: no QUIC probe, no background fetches, no component updates,
# no sync; no GPU (software drawing, as on a CI machine).
COMMON_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The Chromium binary the browser tests drive, or None when there is none."""
    named = os.environ.get("GPUBOOK_CHROMIUM")
    if named:
        return shutil.which(named) or (named if os.access(named, os.X_OK) else None)
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def flags(path: str | None) -> list[str]:
    """Launch flags for ``path``: the full browser needs ``--headless=new``; the shell is headless."""
    shell = path is not None and "headless-shell" in os.path.basename(path)
    return ([] if shell else ["--headless=new"]) + COMMON_FLAGS


CHROMIUM = chromium_path()
FLAGS = flags(CHROMIUM)


def launch(playwright):
    """Start the browser through Playwright's sync API (``sync_playwright()``'s object)."""
    if CHROMIUM is None:
        raise RuntimeError(MISSING)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
