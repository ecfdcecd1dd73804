"""The headless Chromium that every browser test, benchmark and screenshot drives: which binary,
with which flags (one home for both; the test modules import it, as ``import headless``).

The binary, first found of:

1. ``GPUBOOK_CHROMIUM``, a name on the PATH or a path (to compare two browsers); set but not an
   executable, no browser is used and ``MISSING`` says why;
2. Debian's ``chromium-headless-shell``, the "old" headless shell: the page without a browser
   around it. It is what ``make chromium`` (run by ``make test``) installs. On this 2-core machine
   it opened and drew the same pages for less CPU than ``chromium`` in its (new) headless mode,
   measured for issue 13 back to back with the machine's CPU: the built pages' tests 218 and 231
   -> 188 and 190 CPU s; two chapters in JupyterLab 142 -> 130 CPU s;
3. Debian's ``chromium``, or ``chromium-browser``.

Playwright starts either headless (it passes ``--headless``, and ``--no-sandbox``,
``--disable-dev-shm-usage`` and the like itself).
"""

from __future__ import annotations

import os
import shutil

NAMES = ("chromium-headless-shell", "chromium", "chromium-browser")

# No request the page did not make (no QUIC probe, no sync), no GPU (software drawing, as on a CI machine).
FLAGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync"]


def _executable(path: str | None) -> str | None:
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def chromium_path() -> tuple[str | None, str]:
    """(the Chromium binary the browser tests drive, or None; why there is none)."""
    named = os.environ.get("GPUBOOK_CHROMIUM")
    if named:
        found = _executable(shutil.which(named)) or _executable(named)
        return found, "" if found else f"GPUBOOK_CHROMIUM={named!r} is not an executable (unset it to use the installed Chromium)"
    for name in NAMES:
        found = _executable(shutil.which(name))
        if found:
            return found, ""
    return None, ("headless Chromium is not installed (Debian: `sudo apt-get install chromium-headless-shell`; "
                  "`make test` installs it when run as root)")  # fmt: skip


CHROMIUM, MISSING = chromium_path()


def launch(playwright):
    """Start the browser through Playwright's sync API (``sync_playwright()``'s object)."""
    if CHROMIUM is None:
        raise RuntimeError(MISSING)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
