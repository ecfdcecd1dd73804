"""Root conftest: applies to every test path (``tests/`` and the notebooks under ``chapters/``).

Random test order (pytest-randomly) must never shuffle a notebook's cells: nbval runs them in one
kernel, in order. pytest-randomly shuffles inside its hook wrapper before any plain
implementation runs, so this trylast implementation puts each notebook's cells back in order,
in the slots they hold (other tests keep their random places).
"""

import pytest


def _keep_notebook_cells_in_order(items) -> None:
    slots: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        if hasattr(item, "cell_num") and str(item.path).endswith(".ipynb"):
            slots.setdefault(str(item.path), []).append(i)
    for idxs in slots.values():
        cells = sorted((items[i] for i in idxs), key=lambda it: it.cell_num)
        for i, cell in zip(idxs, cells):
            items[i] = cell


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    _keep_notebook_cells_in_order(items)
