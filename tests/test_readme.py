"""The README's install paths tell the truth: the Python floor it states is the one the pins in
requirements.txt need (their own ``Requires-Python``) and the one pyproject and the Makefile enforce;
the extra, the torch pin, the make targets and the modules it names exist; ``--allow-root`` goes
with every JupyterLab command; its claim about a Colab T4 is the doctor's verdict."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def pins() -> dict[str, str]:
    """name -> exact version for every ``name==version`` line of requirements.txt."""
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact:
            out[req.name] = exact[0]
    return out


def readme_floor() -> tuple[int, int]:
    found = set(re.findall(r"Python (3\.\d+) or newer", README))
    assert len(found) == 1, f"the README should state one Python floor as 'Python 3.N or newer', found {sorted(found)}"
    major, minor = found.pop().split(".")
    return int(major), int(minor)


def floor_of(spec: str) -> tuple[int, int]:
    """The oldest Python 3.x that ``spec`` (a Requires-Python) allows."""
    s = SpecifierSet(spec)
    for minor in range(6, 30):
        if Version(f"3.{minor}") in s or Version(f"3.{minor}.0") in s:
            return 3, minor
    raise ValueError(f"spec must allow some Python 3.x, got {spec!r}")


def needed_floor() -> tuple[tuple[int, int], list[str]]:
    """The oldest Python every pinned package (as installed, at its pinned version) supports, and
    the packages that set it."""
    floors = {}
    for name, version in pins().items():
        try:
            installed = md.version(name)
        except md.PackageNotFoundError:
            continue
        if Version(installed).base_version != Version(version).base_version:
            continue  # metadata of another version says nothing about the pin
        spec = md.metadata(name).get("Requires-Python")
        if spec:
            floors[name] = floor_of(spec)
    assert floors, "no pinned package is installed: run make install"
    top = max(floors.values())
    return top, sorted(n for n, f in floors.items() if f == top)


def test_floor_of():
    assert floor_of(">=3.11") == (3, 11)
    assert floor_of(">=3.10,<3.16") == (3, 10)
    assert floor_of(">=3.7, <4") == (3, 7)
    with pytest.raises(ValueError):
        floor_of("<3")


def test_readme_python_floor_is_what_the_pins_need():
    need, setters = needed_floor()
    assert readme_floor() == need, f"README says Python {readme_floor()}, the pins need {need} ({', '.join(setters)})"
    assert "3.10+" not in README and "Python 3.10" not in README


def test_pyproject_and_makefile_enforce_the_same_floor():
    major, minor = readme_floor()
    assert floor_of(PYPROJECT["project"]["requires-python"]) == (major, minor)
    assert f"sys.version_info < ({major}, {minor})" in MAKEFILE


def test_the_chapters_extra_exists_and_holds_what_the_chapters_import():
    assert '".[chapters]"' in README and "[chapters]" in README
    extra = {Requirement(r).name for r in PYPROJECT["project"]["optional-dependencies"]["chapters"]}
    assert {"torch", "triton", "plotly", "ipywidgets", "numba-cuda"} <= extra
    assert PYPROJECT["project"]["dependencies"] == ["numpy"], "the README says the bare package brings numpy alone"


def test_cpu_torch_command_uses_the_pinned_version():
    pinned = pins()["torch"]
    lines = [ln for ln in README.splitlines() if "download.pytorch.org/whl/cpu" in ln and "pip install" in ln]
    assert lines, "the README gives the CPU-only torch install"
    assert all(f"torch=={pinned}" in ln for ln in lines), (lines, pinned)
    assert "TORCH_INDEX" in README and "TORCH_INDEX" in MAKEFILE


def test_every_jupyterlab_command_mentions_allow_root():
    cmds = [ln for ln in README.splitlines() if re.search(r"jupyter lab\b", ln) and not ln.startswith(("#", "**"))]
    assert cmds
    for ln in cmds:
        assert "--allow-root" in ln, f"say when --allow-root applies: {ln!r}"


def test_make_targets_named_in_the_readme_exist():
    targets = set(re.findall(r"^([A-Za-z][\w-]*):", MAKEFILE, re.M))
    named = set(re.findall(r"`make ([a-z][\w-]*)", README)) | set(re.findall(r"^make ([a-z][\w-]*)", README, re.M))
    assert {"book", "test", "unit", "lint", "bench", "install"} <= named
    assert named <= targets, f"README names make targets the Makefile lacks: {sorted(named - targets)}"


def test_modules_named_in_the_readme_exist():
    mods = set(re.findall(r"python -m (widgets(?:\.\w+)+)", README))
    assert "widgets.doctor" in mods and "widgets.measure" in mods
    for mod in mods:
        assert importlib.util.find_spec(mod) is not None, mod


def test_colab_t4_claim_is_the_doctors_verdict():
    from widgets import doctor

    m = re.search(r"on Colab's T4 GPU runtime (\w+) of the (\w+)\s+chapters\s+run"
                  r"(?:,\s+(\w+) of them\s+scaled\s+down)?", README)
    assert m, "the README says how many chapters a Colab T4 runs"
    words = {"no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
    verdicts = doctor.chapter_verdicts(doctor.simulate("T4"))
    assert words[m.group(2)] == len(doctor.CHAPTERS) == len(verdicts)
    runs = len(verdicts) if m.group(1) == "all" else words[m.group(1)]
    assert runs == sum(v.runs for v in verdicts)
    scaled = sum(v.status == "scaled" for v in verdicts)
    assert (words[m.group(3)] if m.group(3) else 0) == scaled, f"the doctor scales down {scaled} chapters on a T4"
    needs = {pkg for c in doctor.CHAPTERS for pkg in doctor.CHAPTER_NEEDS.get(c, ())}
    assert "numba-cuda" not in needs or "numba-cuda" in README, "say which package the T4 verdict assumes"
    blocked = [v.chapter for v in verdicts if not v.runs]
    assert all(f"({c})" in README for c in blocked)


def test_pip_installs_of_the_extra_are_held_to_the_tested_pins():
    lines = [ln for ln in README.splitlines() if re.search(r"pip install -e \S*\[chapters\]", ln)]
    assert lines, "the README gives the pip install of the [chapters] extra"
    for ln in lines:
        assert "-c requirements.txt" in ln, f"hold the extra to the tested versions: {ln!r}"
    said = re.search(r"pinned\s+torch\s+([\d.]+)\s+and\s+plotly\s+([\d.]+)", README)
    assert said, "the README names the pinned torch and plotly"
    assert (said.group(1), said.group(2)) == (pins()["torch"], pins()["plotly"])


# --------------------------------------------------------------------------------------------
# What the README says about the browser marker (tests/conftest.py), run in a scratch project
# --------------------------------------------------------------------------------------------
def _run_browser_probe(tmp_path, env_extra):
    import os
    import shutil
    import subprocess
    import sys

    (tmp_path / "tests").mkdir()
    for name in ("conftest.py", "headless.py"):
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "test_probe.py").write_text(
        "import pytest\n\n@pytest.mark.browser\ndef test_needs_chromium():\n    pass\n\ndef test_plain():\n    pass\n"
    )
    bin_dir = tmp_path / "bin"  # a PATH with python but without chromium
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("GPUBOOK_REQUIRE_BROWSER", "GPUBOOK_CHROMIUM", "PYTEST_ADDOPTS")}
    env.update(PATH=str(bin_dir), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_browser_tests_skip_with_the_reason_without_chromium(tmp_path):
    proc = _run_browser_probe(tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped" in proc.stdout and "Chromium is not installed" in proc.stdout


@pytest.mark.slow
def test_ci_refuses_to_skip_the_browser_tests(tmp_path):
    proc = _run_browser_probe(tmp_path, {"GPUBOOK_REQUIRE_BROWSER": "1"})
    assert proc.returncode != 0
    assert "GPUBOOK_REQUIRE_BROWSER" in proc.stdout + proc.stderr
    assert "GPUBOOK_REQUIRE_BROWSER=$${CI:+1}" in MAKEFILE


def test_first_set_up_figures_are_the_benchmark_record():
    """The README's install time and sizes are the ones `tests/benchmark.py fresh-install` recorded."""
    import json

    rec = json.loads((ROOT / "benchmarks" / "fresh_clone_make_install.json").read_text())
    m = re.search(
        r"`make install` took (\d+) s and left\s+`\.venv` at ([\d.]+) GiB and `node_modules` at ([\d.]+) GiB", README
    )
    assert m, "the README states the first set-up's time and disk"
    assert int(m.group(1)) == round(rec["steps"]["make_install"]["wall_s"])
    assert float(m.group(2)) == round(rec["disk_bytes"][".venv"] / 2**30, 1)
    assert float(m.group(3)) == round(rec["disk_bytes"]["node_modules"] / 2**30, 2)
    assert rec["steps"]["make_install"]["returncode"] == 0


def test_every_test_conftest_marks_slow_still_exists():
    """tests/conftest.py marks existing tests slow by name: a renamed test would silently rejoin
    `make unit`. Every (file, name) it lists must still be a test function in that file."""
    from conftest import SLOW_TESTS

    for file, name in sorted(SLOW_TESTS):
        path = ROOT / "tests" / file
        assert path.exists(), f"conftest.SLOW_TESTS names {file}, which is gone"
        found = re.search(rf"^def {name}\(", path.read_text(encoding="utf-8"), re.M)
        assert found, f"conftest.SLOW_TESTS names {file}::{name}, which is gone (renamed?)"


def test_colab_install_line_uses_the_repository_in_config():
    import yaml

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    lines = [ln for ln in README.splitlines() if "%pip install" in ln]
    assert lines and all(f"@ git+{url}" in ln for ln in lines), (lines, url)


def test_plotly_imports_no_iri_grammar():
    """The jsonschema pin in requirements.txt: importing plotly.io (which imports nbformat and
    jsonschema) must not import rfc3987-syntax, which builds its lark parsers at import, 1.2-1.8 s
    in every kernel, worker and server. A newer jsonschema, or anything that imports rfc3987_syntax
    again, fails here."""
    import subprocess
    import sys

    code = "import sys, plotly.io, nbformat; print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"plotly.io imported {out}: keep jsonschema at the pin in requirements.txt (see its comment)"
