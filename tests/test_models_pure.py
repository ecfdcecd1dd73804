"""widgets.models (and units, hardware) import with the standard library and numpy only."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import widgets.models

BLOCKER = r"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "ipywidgets", "plotly", "triton", "numba", "IPython", "myst_nb"}:
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, Block())
import importlib
for mod in MODULES:
    importlib.import_module(mod)
for name in ("torch", "ipywidgets", "plotly", "triton"):
    assert name not in sys.modules, name
print("ok", len(MODULES))
"""


def test_models_import_without_torch_or_ipywidgets():
    pkg = Path(widgets.models.__file__).parent
    modules = ["widgets.units", "widgets.hardware", "widgets.models"] + [
        f"widgets.models.{m.name}" for m in pkgutil.iter_modules([str(pkg)])
    ]
    assert "widgets.models.memory_hierarchy" in modules
    code = f"MODULES = {modules!r}\n" + BLOCKER
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"ok {len(modules)}"


def test_blocker_really_blocks():
    code = "MODULES = ['widgets.ui']\n" + BLOCKER
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "blocked" in proc.stderr
