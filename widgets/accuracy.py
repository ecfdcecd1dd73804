"""The book's accuracy ledger: every comparison of a model with a measurement, labelled.

Each topic's experiment module exposes ``accuracy_rows(record) -> list[Row]``: it recomputes, from
the raw measurements in a record and today's models, each quantity the chapter compares. The page
``book/accuracy.ipynb`` gathers them for the reference records, so it changes when a record does.

Labels (the book's rule, see the Model accuracy page):

- ``prediction``: the model's inputs are datasheet figures or measurements independent of the
  quantity predicted. Only these count toward accuracy targets.
- ``calibrated``: a constant was measured on a different, named micro-benchmark.
- ``fit``: parameters were fitted to the very data compared.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

LABELS = ("prediction", "calibrated", "fit")


@dataclass(frozen=True)
class Row:
    """One comparison: ``predicted`` and ``measured`` are in the same ``unit``."""

    topic: str
    quantity: str
    inputs: str
    predicted: float
    measured: float
    unit: str
    label: str
    device: str
    note: str = ""

    def __post_init__(self):
        if self.label not in LABELS:
            raise ValueError(f"label must be one of {LABELS}, got {self.label!r}")
        for name in ("predicted", "measured"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")

    @property
    def ratio(self) -> float:
        """measured / predicted (inf when the prediction is 0)."""
        return self.measured / self.predicted if self.predicted else math.inf


def rows_for(topic: str, record: dict) -> list[Row]:
    """The rows of one topic's record (``accuracy_rows`` of ``widgets.experiments.<topic>``)."""
    module = importlib.import_module(f"widgets.experiments.{topic}")
    return list(module.accuracy_rows(record))


DATA_DIR = __import__("pathlib").Path(__file__).resolve().parent / "data"
TARGET = 0.25  # the book's accuracy target for predictions: measured / predicted within 1 +- 0.25


def within(row: Row, tolerance: float = TARGET) -> bool:
    """True when the measurement is within ``tolerance`` of the prediction, either way
    (measured / predicted in [1 - tolerance, 1 + tolerance])."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    return abs(row.ratio - 1.0) <= tolerance


def reference_records() -> list[tuple[str, dict]]:
    """Every committed reference record, as (folder/file, record), sorted."""
    import json

    out = []
    for path in sorted(DATA_DIR.glob("*/*.json")):
        rec = json.loads(path.read_text())
        if isinstance(rec, dict) and "topic" in rec and "results" in rec:
            out.append((f"{path.parent.name}/{path.name}", rec))
    return out


def all_rows() -> list[Row]:
    """The rows of every committed reference record, topic by topic."""
    rows: list[Row] = []
    for _name, rec in reference_records():
        rows.extend(rows_for(rec["topic"], rec))
    return rows


def summary(rows: list[Row], tolerance: float = TARGET) -> dict:
    """Counts by label, and the predictions inside and outside ``tolerance``."""
    preds = [r for r in rows if r.label == "prediction"]
    inside = [r for r in preds if within(r, tolerance)]
    return {
        "rows": len(rows),
        "by_label": {label: sum(r.label == label for r in rows) for label in LABELS},
        "predictions": len(preds),
        "within": len(inside),
        "outside": [r for r in preds if not within(r, tolerance)],
    }
