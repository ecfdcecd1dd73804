"""Random test order never shuffles a notebook's cells (root conftest.py)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Cell:
    def __init__(self, path, n):
        self.path, self.cell_num = Path(path), n


class _Test:
    path = Path("tests/test_x.py")


def test_each_notebooks_cells_go_back_in_order_and_together():
    """In order, and with no other test between two cells of one notebook: pytest would tear the
    notebook's kernel down in between (pytest-randomly shuffles several notebooks' cells together)."""
    a = [_Cell("a.ipynb", n) for n in range(4)]
    b = [_Cell("b.ipynb", n) for n in range(2)]
    t, u = _Test(), _Test()
    items = [a[2], t, b[1], a[0], a[3], u, b[0], a[1]]
    _root_conftest()._keep_notebook_cells_in_order(items)
    assert items == [a[0], a[1], a[2], a[3], t, b[0], b[1], u]


def test_a_shuffling_seed_collects_cells_in_order(tmp_path):
    pytest.importorskip("pytest_randomly", reason="pytest-randomly (requirements.txt) is not installed here")
    nb = ROOT / "book" / "accuracy.ipynb"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "randomly", "--randomly-seed=12345",
         "-p", "no:cacheprovider", "--nbval-lax", str(nb)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    cells = [int(line.rsplit(" ", 1)[1]) for line in out.stdout.splitlines() if "::Cell " in line]
    assert len(cells) > 2 and cells == sorted(cells), out.stdout[-2000:]
