"""tests/headless.py: which Chromium the browser tests drive (fake executables on a scratch PATH)."""

from __future__ import annotations

import headless


def _fake(bin_dir, name):
    exe = bin_dir / name
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return str(exe)


def test_the_headless_shell_comes_first_then_chromium(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUBOOK_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert headless.chromium_path()[0] is None
    assert "not installed" in headless.chromium_path()[1]
    full = _fake(tmp_path, "chromium")
    assert headless.chromium_path() == (full, "")
    shell = _fake(tmp_path, "chromium-headless-shell")
    assert headless.chromium_path() == (shell, "")


def test_gpubook_chromium_overrides_and_a_bad_one_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _fake(tmp_path, "chromium-headless-shell")
    other = _fake(tmp_path, "my-chromium")
    monkeypatch.setenv("GPUBOOK_CHROMIUM", "my-chromium")
    assert headless.chromium_path() == (other, "")
    monkeypatch.setenv("GPUBOOK_CHROMIUM", other)
    assert headless.chromium_path() == (other, "")
    for bad in ("no-such-browser", str(tmp_path)):  # not on the PATH; a folder
        monkeypatch.setenv("GPUBOOK_CHROMIUM", bad)
        path, why = headless.chromium_path()
        assert path is None and "GPUBOOK_CHROMIUM" in why and bad in why
