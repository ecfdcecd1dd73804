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
