"""Every committed notebook is stored as the house style says: no outputs, null execution counts,
valid nbformat 4, cell ids, and the cell tags the build relies on still present.

These tests read the files on disk (what would be committed); they execute nothing. To fix a
failure: ``.venv/bin/jupyter nbconvert --clear-output --inplace chapters/<topic>.ipynb`` (then
check that the cell tags survived).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _notebooks() -> list[Path]:
    """Every notebook git tracks (falls back to a glob outside a git checkout), never the build's."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        paths = [ROOT / line for line in out.splitlines() if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        paths = []
    if not paths:
        skip = {".venv", "node_modules", "_build", ".ipynb_checkpoints"}
        paths = [p for p in ROOT.rglob("*.ipynb") if not skip.intersection(p.relative_to(ROOT).parts)]
    return sorted(p for p in paths if p.exists())


NOTEBOOKS = _notebooks()
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


def problems(nb: dict) -> list[str]:
    """What keeps ``nb`` (a parsed .ipynb) from being committed: outputs, execution counts,
    missing cell ids, a wrong nbformat. An empty list means it is clean."""
    found = []
    if "widgets" in nb.get("metadata", {}):
        found.append("saved widget state in the notebook's metadata (widgets)")
    if not nb.get("metadata", {}).get("kernelspec", {}).get("name"):
        found.append("no kernelspec in the notebook's metadata (the build would not know which kernel to start)")
    if nb.get("nbformat") != 4:
        found.append(f"nbformat is {nb.get('nbformat')!r}, expected 4")
    for i, cell in enumerate(nb.get("cells", [])):
        where = f"cell {i} ({cell.get('id', 'no id')})"
        if "id" not in cell and nb.get("nbformat_minor", 0) >= 5:
            found.append(f"{where}: no cell id")
        if cell.get("cell_type") == "code":
            if cell.get("outputs"):
                found.append(f"{where}: {len(cell['outputs'])} output(s)")
            if cell.get("execution_count") is not None:
                found.append(f"{where}: execution_count {cell['execution_count']!r}")
        elif cell.get("outputs") or "execution_count" in cell:
            found.append(f"{where}: a {cell.get('cell_type')} cell with outputs or an execution count")
        timing = {"execution", "ExecuteTime"} & set(cell.get("metadata", {}))
        if timing:
            found.append(f"{where}: run timing in its metadata ({', '.join(sorted(timing))})")
        if cell.get("attachments"):
            found.append(f"{where}: attachments (base64 images are not allowed)")
        if "user_expressions" in cell.get("metadata", {}):
            found.append(f"{where}: {{eval}} results saved by JupyterLab (jupyterlab-myst's user_expressions metadata)")
    return found


def test_there_are_notebooks():
    assert any(p.parent.name == "chapters" for p in NOTEBOOKS), "no chapter notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = problems(nb)
    assert not found, (
        f"{path.relative_to(ROOT)} is not output-free:\n  "
        + "\n  ".join(found[:20])
        + f"\nclear it: .venv/bin/jupyter nbconvert --clear-output --inplace {path.relative_to(ROOT)}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_keeps_cell_ids_unique_and_tags_well_formed(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = [c["id"] for c in nb["cells"] if "id" in c]
    assert len(ids) == len(set(ids)), f"{path.name}: duplicate cell ids"
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        assert isinstance(tags, list) and all(isinstance(t, str) and t == t.strip() and t for t in tags), (
            f"{path.name} cell {cell.get('id')}: tags must be a list of non-empty strings, got {tags!r}"
        )


def test_chapters_keep_their_hidden_setup_cells():
    """Clearing outputs must not strip tags: every chapter hides some plumbing (remove-input/remove-cell)."""
    for path in (p for p in NOTEBOOKS if p.parent.name == "chapters"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        tags = {t for c in nb["cells"] for t in c.get("metadata", {}).get("tags", [])}
        assert tags & {"remove-input", "remove-cell"}, f"{path.name}: no remove-input/remove-cell tag left"


# The checker itself must be able to fail.
def _code(**kw):
    cell = {"cell_type": "code", "id": "a", "metadata": {}, "source": "1", "outputs": [], "execution_count": None}
    cell.update(kw)
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": [cell]}


def test_checker_accepts_a_clean_notebook():
    assert problems(_code()) == []


@pytest.mark.parametrize(
    "nb, needle",
    [
        (_code(outputs=[{"output_type": "stream", "name": "stdout", "text": "1"}]), "output"),
        (_code(execution_count=3), "execution_count 3"),
        (
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "cells": [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": None}],
            },
            "no cell id",
        ),
        ({"nbformat": 3, "cells": []}, "nbformat"),
        (
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "cells": [
                    {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "", "attachments": {"a.png": {}}}
                ],
            },
            "attachments",
        ),
        (_code(metadata={"execution": {"iopub.status.busy": "2026-12-01T10:00:00Z"}}), "run timing"),
        ({**_code(), "metadata": {"kernelspec": {"name": "python3"}, "widgets": {}}}, "widget state"),
        ({**_code(), "metadata": {}}, "no kernelspec"),
        (
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {"kernelspec": {"name": "python3"}},
                "cells": [{"cell_type": "markdown", "id": "m", "source": "{eval}`prose.x`",
                           "metadata": {"user_expressions": [{"expression": "prose.x", "result": {"status": "ok"}}]}}],
            },
            "user_expressions",
        ),
    ],
)
def test_checker_catches_each_problem(nb, needle):
    assert any(needle in p for p in problems(nb))
