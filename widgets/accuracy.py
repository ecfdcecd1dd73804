"""The book's accuracy ledger: every comparison of a model with a measurement, labelled.

Each topic's experiment module exposes ``accuracy_rows(record) -> list[Row]``: it recomputes, from
the raw measurements in a record and today's models, each quantity the chapter compares. The page
``book/accuracy.ipynb`` gathers them for the reference records, so it changes when a record does.

Labels: ``LABEL_RULES`` (the one home of their definitions; the Model accuracy page shows them). What
separates a prediction from a calibrated comparison is whether a measurement goes in: a prediction takes
none (datasheet figures, counting rules and the conditions of the run only), a calibrated comparison
takes one from another, named benchmark, a fit takes its parameters from the data it is compared with.
Only predictions count toward the accuracy target.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

LABELS = ("prediction", "calibrated", "fit")

# What each label means: the rule a row's inputs must follow to carry it (book/accuracy.ipynb shows these
# sentences; a row's ``inputs`` name what went in, so a reader can check it against them). The line between a
# prediction and a calibrated comparison: a measured speed, time or behaviour among the inputs.
LABEL_RULES = {
    "prediction": ("the model's inputs are datasheet figures, counting rules (instructions, bytes, sectors, the "
                   "occupancy rules) or the conditions set for the run (a locked clock or the datasheet's, the registers "
                   "the compiler gave a kernel), never a measured speed, time or behaviour, and never a clock the GPU "
                   "chose under the load compared"),
    "calibrated": ("at least one input is a measured speed, time or behaviour (a copy's bandwidth, a pointer chase's "
                   "latency, how an accumulator rounds), taken from another, named micro-benchmark, run or publication, "
                   "never from the data compared"),
    "fit": ("the model's parameters come from the very data compared (a clock the power governor chose during the "
            "run compared is one), or the code measured was written to match the model: the comparison explains or "
            "checks the data's own consistency, it does not predict"),
}

# Each topic's name where the ledger shows it (the figure's bands, the hovers, the tables): the short
# title of its chapter, the first heading of chapters/<topic>.ipynb up to its colon (a test holds
# them together), never the key with its underscores.
TOPIC_NAMES = {
    "memory_hierarchy": "The memory hierarchy",
    "simt": "SIMT execution",
    "tensor_cores": "Tensor cores",
    "kernels": "Kernels",
    "collectives": "Collective communication",
    "training_memory": "Training memory",
    "serving": "Serving",
    "attention": "Attention and FlashAttention",
}


def topic_name(topic: str) -> str:
    """The name a reader sees for ``topic``: its chapter's short title (``TOPIC_NAMES``); a topic
    without a chapter, its key in words.

    >>> topic_name("simt"), topic_name("new_topic")
    ('SIMT execution', 'new topic')
    """
    return TOPIC_NAMES.get(topic, topic.replace("_", " "))


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


def label_of(rows, pick) -> str:
    """The one label of the rows ``pick`` selects, for a chapter's prose to quote (a label typed into the
    text would not follow when a row is relabelled). Several rows may be picked if they share it.

    >>> rows = [Row("t", "copy time", "datasheet", 1.0, 1.1, "s", "prediction", "d"),
    ...         Row("t", "copy time", "the Triton copy's measured bandwidth", 1.0, 1.0, "s", "calibrated", "d")]
    >>> label_of(rows, lambda r: "datasheet" in r.inputs)
    'prediction'

    Raises
    ------
    ValueError
        If ``pick`` selects no row, or rows of more than one label.
    """
    got = {r.label for r in rows if pick(r)}
    if len(got) != 1:
        raise ValueError(f"pick must select rows of exactly one label, got {sorted(got) or 'no rows'}")
    return got.pop()


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
    """The rows of every committed reference record, topic by topic in the book's chapter order
    (``widgets.experiments.TOPICS``; a topic not there after them, in the records' order)."""
    topics = importlib.import_module("widgets.experiments").TOPICS  # as rows_for reaches them: at run time
    rows: list[Row] = []
    for _name, rec in reference_records():
        rows.extend(rows_for(rec["topic"], rec))
    return sorted(rows, key=lambda r: topics.index(r.topic) if r.topic in topics else len(topics))


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


@dataclass(frozen=True)
class RankAgreement:
    """How well a model orders several configurations (:func:`rank_agreement`)."""

    n: int
    rho: float  # Spearman's rank correlation (average ranks for ties): 1 = same order, 0 = none, -1 = reversed
    top_measured_ranks: tuple[int, ...]  # measured ranks (1 = fastest) of the configurations the model puts first (ties)
    last_measured_rank: int  # measured rank of the (first) configuration the model puts last


def _average_ranks(values) -> list[float]:
    """Ranks 1..n of ``values`` from the largest, tied values sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def rank_agreement(predicted, measured, rel_tie: float = 0.0) -> RankAgreement:
    """Does a model order configurations as they measured? Spearman's rho over ``predicted`` and
    ``measured`` (same length, at least 3, finite), and where the model's first and last choices measured.
    Predictions within ``rel_tie`` of the largest count as tied for first.

    >>> r = rank_agreement([3, 2, 1], [30, 20, 10]); (r.rho, r.top_measured_ranks, r.last_measured_rank)
    (1.0, (1,), 3)
    >>> rank_agreement([3, 2, 1], [10, 20, 30]).rho
    -1.0
    """
    p, m = [float(x) for x in predicted], [float(x) for x in measured]
    if len(p) != len(m) or len(p) < 3:
        raise ValueError(f"need two sequences of the same length, at least 3, got {len(p)} and {len(m)}")
    if not all(math.isfinite(x) for x in p + m):
        raise ValueError("predicted and measured must be finite")
    if not 0 <= rel_tie < 1:
        raise ValueError(f"rel_tie must be in [0, 1), got {rel_tie}")
    rp, rm = _average_ranks(p), _average_ranks(m)
    mp, mm = sum(rp) / len(rp), sum(rm) / len(rm)
    cov = sum((a - mp) * (b - mm) for a, b in zip(rp, rm))
    var = math.sqrt(sum((a - mp) ** 2 for a in rp) * sum((b - mm) ** 2 for b in rm))
    rho = cov / var if var else 0.0
    strict = sorted(range(len(m)), key=lambda i: -m[i])
    measured_rank = {i: strict.index(i) + 1 for i in range(len(m))}
    top = max(p)
    firsts = tuple(sorted(measured_rank[i] for i in range(len(p)) if p[i] >= top * (1 - rel_tie)))
    last = min(range(len(p)), key=lambda i: p[i])
    return RankAgreement(len(p), round(rho, 12), firsts, measured_rank[last])
