"""`make install`'s uv gets the package sources pip is configured with (tests/tools/uv_flags.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import uv_flags  # noqa: E402

LISTING = """:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.find-links='/opt/wheels'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
global.timeout='60'
"""


def test_pip_sources_become_uv_flags_with_pips_index_strategy():
    cfg = uv_flags.parse(LISTING)
    assert cfg == {"find-links": ["/opt/wheels"], "constraint": ["/etc/xdg/pip/constraints.txt"],
                   "extra-index-url": ["file:///opt/pypi/simple", "file:///opt/pypi-more/simple"]}
    assert uv_flags.flags(cfg) == [
        "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
        "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt",
        "--index-strategy", "unsafe-best-match"]


def test_one_index_url_wins_and_nothing_configured_gives_no_flags():
    # as pip lists them (sorted: the environment's first); PIP_INDEX_URL wins over the files
    cfg = uv_flags.parse(":env:.index-url='https://b.example/simple'\nglobal.index-url='https://a.example/simple'\n")
    assert uv_flags.flags(cfg) == ["--index-url", "https://b.example/simple"]  # one index: uv's default strategy is pip's
    assert uv_flags.flags(uv_flags.parse("")) == []
    assert uv_flags.flags(uv_flags.parse("global.cert='/x.crt'\nsomething odd\n")) == []


def test_make_install_uses_the_pinned_uv_with_these_flags():
    root = Path(__file__).resolve().parents[1]
    make = (root / "Makefile").read_text()
    assert "tests/tools/uv_flags.py" in make and "UV_PIN" in make
    assert any(line.startswith("uv==") for line in (root / "requirements.txt").read_text().splitlines())


def test_binder_postbuild_writes_the_jupyterlab_settings_make_install_writes(tmp_path):
    """Binder runs `postBuild` after its install: it must leave the same JupyterLab settings file in
    the environment (sys.prefix) as `make install` does in .venv (Makefile, LAB_OVERRIDES)."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    prefix, shim = tmp_path / "env", tmp_path / "bin"
    shim.mkdir()
    (shim / "python").write_text(f"#!/bin/sh\necho {prefix}\n")  # the environment's python, as Binder has it
    (shim / "python").chmod(0o755)
    subprocess.run(["bash", str(root / "postBuild")], cwd=root, check=True,
                   env={**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    written = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "gpu-book.json"
    assert written.read_bytes() == (root / "book" / "jupyterlab" / "overrides.json").read_bytes()
    makefile = (root / "Makefile").read_text()
    assert "LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/gpu-book.json" in makefile
    assert "cp $< $@" in makefile.split("$(LAB_OVERRIDES): book/jupyterlab/overrides.json")[1].split("\n\n")[0]
