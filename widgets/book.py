"""What a chapter's hidden cells call: the reference record, the reader's own run, and the tables
that put the two side by side.

The published page shows the recorded H200 reference as the result, never the build machine's run:
while the book is built (``GPUBOOK_BUILD=1``, set by the book's Sphinx extension for the kernels it
starts) :func:`measure_here` returns ``None`` and measures nothing. In a live notebook (JupyterLab,
Colab) and under nbval it runs the experiment on the reader's device, and the tables gain a
column for it.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional, TypeVar

T = TypeVar("T")

LABELS = ("prediction", "calibrated", "fit")


def _build() -> bool:
    return os.environ.get("GPUBOOK_BUILD") == "1"


BUILD: bool = _build()
"""True while the published book is being built; False in a live notebook and under nbval."""


def measure_here(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Optional[T]:
    """``fn(*args, **kwargs)`` in a live notebook; ``None`` while the book is built."""
    if _build():
        return None
    return fn(*args, **kwargs)


def device_note() -> None:
    """In a live notebook, print one line saying where the experiments run (nothing in the book)."""
    if _build():
        return
    from .experiments import harness

    print(harness.describe_run("this chapter's experiments"))


def reference(topic: str) -> dict:
    """The committed H200 reference record of ``topic``."""
    from .experiments import harness

    return harness.load_reference(topic)


def provenance_line(record: Mapping[str, Any]) -> str:
    """One sentence naming where and how a record was measured."""
    p = record.get("provenance", {}) if isinstance(record, Mapping) else {}
    parts = [p.get("gpu") or p.get("device") or "unknown device"]
    for key, name in (("driver", "driver"), ("cuda", "CUDA"), ("torch", "torch"), ("triton", "Triton")):
        if p.get(key):
            parts.append(f"{name} {p[key]}")
    date = str(p.get("date", ""))[:10]
    commit = p.get("git_commit")
    tail = f", {date}" if date else ""
    if commit:
        tail += f", commit {str(commit)[:10]}"
    cmd = p.get("command")
    return f"Measured on {', '.join(parts)}{tail}" + (f" with <code>{html.escape(cmd)}</code>." if cmd else ".")


def table(rows: Iterable[Iterable[Any]], headers: Iterable[str], *, caption: str | None = None) -> str:
    """The book's one HTML table: header row, then rows of already formatted cells."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<div class="book-table-wrap"><table class="book-table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def compare_table(
    rows: Iterable[Mapping[str, Any]],
    *,
    reference_label: str = "H200 (reference)",
    here_label: str | None = None,
    caption: str | None = None,
) -> str:
    """Model against the recorded reference, and the reader's device when it ran.

    Each row is a mapping with ``quantity`` and ``reference`` (formatted strings) and optional
    ``model``, ``label`` (prediction / calibrated / fit), ``ratio`` and ``here``. The column for
    the reader's device appears only when some row has ``here`` (never in the published book).
    """
    rows = [dict(r) for r in rows]
    for i, r in enumerate(rows):
        if "quantity" not in r or "reference" not in r:
            raise ValueError(f"rows[{i}] must have 'quantity' and 'reference', got keys {sorted(r)}")
        if r.get("label") is not None and r["label"] not in LABELS:
            raise ValueError(f"rows[{i}]['label'] must be one of {LABELS}, got {r['label']!r}")
    cols = [("quantity", "quantity")]
    if any(r.get("model") is not None for r in rows):
        cols.append(("model", "model"))
    if any(r.get("label") is not None for r in rows):
        cols.append(("label", "kind"))
    cols.append(("reference", reference_label))
    if any(r.get("ratio") is not None for r in rows):
        cols.append(("ratio", "measured / model"))
    if not _build() and any(r.get("here") is not None for r in rows):
        cols.append(("here", here_label or _here_label()))
    body = [[("" if r.get(k) is None else r[k]) for k, _ in cols] for r in rows]
    return table(body, [h for _, h in cols], caption=caption)


def _here_label() -> str:
    from .experiments import harness

    name = harness.device_name()
    return name if harness.on_gpu() else f"{name}, scaled down"
