"""The room's measurements side by side: ``python -m widgets.measure --merge DIR_OR_FILE... [--out DIR]``.

Each learner runs ``python -m widgets.measure --out measurements/`` on their machine; the instructor
collects the folders and merges them. For every record (any ``<topic>.json`` written by
``widgets.measure``, e.g. the book's ``widgets/data/h200``), the topic's ``accuracy_rows(record)``
recomputes each comparison from the raw measurements with today's models, exactly as the book's
Model accuracy page does, so every row keeps its label (prediction / calibrated / fit). The merge
writes

- ``merged.csv`` and ``merged.md``: one row per (machine, topic, quantity): model, measured, ratio, label;
- ``merged.html``: the same table and one plot, each machine's measured / model for every
  quantity, on a log axis with the book's accuracy target shaded (plotly.js inside the file: it
  opens offline).

A record made without a GPU (its provenance's device is a CPU) is compared with the model its topic
uses, which is usually the reference GPU's: its rows are labelled ``different device`` instead of
their label, count in no accuracy figure and stay out of the plot (they show that the method runs,
not how good a model is). The headline counts GPU predictions only, per machine too.

A file that is not a record, or a record whose comparisons cannot be computed, is reported and
skipped; the merge needs at least one comparison (exit status 1 otherwise).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .accuracy import TARGET, Row, rows_for

OUTPUTS = ("merged.csv", "merged.md", "merged.html")
OTHER_DEVICE = "different device"  # the label of a non-GPU record's rows: not a prediction of a GPU model


@dataclass(frozen=True)
class Source:
    """One record file, the machine it was measured on and its comparisons."""

    path: str
    topic: str
    machine: str
    date: str
    rows: tuple
    gpu: bool = True


def is_gpu_record(record: dict) -> bool:
    """Whether ``record`` was measured on a GPU (``harness.device_name`` writes ``CPU (...)`` otherwise)."""
    device = str((record.get("provenance") or {}).get("device") or "")
    return bool(device) and not device.upper().startswith("CPU")


def _machine(record: dict, rows, path: Path) -> str:
    """The device that measured ``record``, with its folder's name (two learners may have the same GPU)."""
    prov = record.get("provenance") or {}
    name = prov.get("gpu") or prov.get("device") or (rows[0].device if rows else "") or "unknown device"
    return f"{name} [{path.parent.name}]" if path.parent.name else str(name)


def record_files(paths) -> list[Path]:
    """The ``*.json`` files under each folder of ``paths`` (not recursive), and each file given."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.glob("*.json")))
        elif p.is_file():
            files.append(p)
        else:
            raise ValueError(f"--merge {p}: no such file or folder")
    return files


def collect(paths) -> tuple[list[Source], list[str]]:
    """Every record under ``paths`` with its comparisons, and one line per file skipped (and why)."""
    sources, skipped = [], []
    for f in record_files(paths):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            skipped.append(f"{f}: not readable JSON ({type(exc).__name__})")
            continue
        if not (isinstance(rec, dict) and isinstance(rec.get("topic"), str) and "results" in rec):
            skipped.append(f"{f}: not a widgets.measure record (no topic/results)")
            continue
        try:
            rows = tuple(rows_for(rec["topic"], rec))
        except Exception as exc:  # noqa: BLE001 - one learner's odd record must not stop the class
            skipped.append(f"{f}: comparisons could not be computed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})")
            continue
        if not rows:
            skipped.append(f"{f}: the record holds no comparison")
            continue
        prov = rec.get("provenance") or {}
        sources.append(Source(str(f), rec["topic"], _machine(rec, rows, f), str(prov.get("date", "")), rows, is_gpu_record(rec)))
    return sources, skipped


def table_rows(sources: list[Source]) -> list[dict]:
    """One dict per comparison, machines side by side (sorted by topic, quantity, machine)."""
    out = []
    for s in sources:
        for r in s.rows:
            out.append({
                "topic": r.topic, "quantity": r.quantity, "machine": s.machine, "model": r.predicted,
                "measured": r.measured, "unit": r.unit, "ratio": r.ratio, "label": r.label if s.gpu else OTHER_DEVICE,
                "within_target": (abs(r.ratio - 1) <= TARGET) if s.gpu else "", "record": s.path, "date": s.date,
            })  # fmt: skip
    return sorted(out, key=lambda d: (d["topic"], d["quantity"], d["machine"]))


def _g(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else str(v)


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


HEAD = ("topic", "quantity", "machine", "model", "measured", "ratio", "label")


def _cells(d: dict) -> list[str]:
    return [d["topic"], d["quantity"], d["machine"], f"{_g(d['model'])} {d['unit']}", f"{_g(d['measured'])} {d['unit']}",
            f"{d['ratio']:.3g}", d["label"]]  # fmt: skip


def to_markdown(rows: list[dict], sources: list[Source], skipped: list[str]) -> str:
    machines = sorted({s.machine for s in sources})
    preds = [d for d in rows if d["label"] == "prediction"]
    others = sorted({s.machine for s in sources if not s.gpu})
    per_machine = "; ".join(
        f"{m}: {sum(d['within_target'] is True for d in preds if d['machine'] == m)} of {sum(d['machine'] == m for d in preds)}"
        for m in machines if m not in others
    )  # fmt: skip
    lines = [
        "# The room's measurements against the models",
        "",
        f"{len(sources)} records from {len(machines)} machine(s): {', '.join(machines)}. Each row's model value is what "
        "the topic's `accuracy_rows` computes from that record with today's models (the book's Model accuracy page); "
        f"ratio = measured / model; {sum(d['within_target'] is True for d in preds)} of {len(preds)} GPU predictions are "
        f"within {TARGET:.0%} (per machine: {per_machine or 'none'}). Only rows labelled *prediction* test a model."
        + (f" Records made without a GPU ({', '.join(others)}) are compared with their topic's model (usually the reference "
           f"GPU's figures): their rows are labelled *{OTHER_DEVICE}*, show that the method runs, count in no figure above "
           "and stay out of the plot." if others else ""),
        "",
        "| " + " | ".join(HEAD) + " |",
        "|" + "---|" * len(HEAD),
    ]
    for d in rows:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in _cells(d)) + " |")
    if skipped:
        lines += ["", "Skipped:", ""] + [f"- {s}" for s in skipped]
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """measured / model per quantity (rows of the plot), one colour per machine, target band shaded."""
    import plotly.graph_objects as go

    from .ui._core import series_color, style_figure

    rows = [d for d in rows if d["label"] != OTHER_DEVICE]  # a CPU against a GPU model would stretch the axis
    keys = list(dict.fromkeys((d["topic"], d["quantity"]) for d in rows))
    pos = {k: i for i, k in enumerate(keys)}
    fig = go.Figure()
    for i, machine in enumerate(sorted({d["machine"] for d in rows})):
        sel = [d for d in rows if d["machine"] == machine and d["ratio"] > 0 and math.isfinite(d["ratio"])]
        fig.add_trace(go.Scatter(
            x=[d["ratio"] for d in sel], y=[pos[(d["topic"], d["quantity"])] for d in sel], mode="markers", name=machine,
            marker=dict(color=series_color(i), size=9, symbol=["circle" if d["label"] == "prediction" else "diamond-open" for d in sel]),
            customdata=[[f"{d['topic']}: {d['quantity']}", _g(d["model"]), _g(d["measured"]), d["unit"], d["label"]] for d in sel],
            hovertemplate="%{customdata[0]}<br>model %{customdata[1]} %{customdata[3]}, measured %{customdata[2]} "
            "%{customdata[3]} (%{customdata[4]})<br>ratio %{x:.3g}<extra>" + html.escape(machine) + "</extra>",
        ))  # fmt: skip
    fig.add_vrect(x0=1 - TARGET, x1=1 + TARGET, fillcolor="#009E73", opacity=0.12, line_width=0)
    fig.add_vline(x=1, line=dict(color="#888", dash="dot"))
    ratios = [d["ratio"] for d in rows if d["ratio"] > 0 and math.isfinite(d["ratio"])] or [1.0]
    low, high = min(min(ratios), 1 - TARGET) / 1.3, max(max(ratios), 1 + TARGET) * 1.3
    fig.update_xaxes(type="log", title_text="measured / model", range=[math.log10(low), math.log10(high)], tickfont=dict(size=14))
    fig.update_yaxes(range=[len(keys) - 0.5, -0.5], tickmode="array", tickvals=list(range(len(keys))),
                     ticktext=[f"{t}: {q}"[:64] for t, q in keys], tickfont=dict(size=13), showgrid=False)  # fmt: skip
    style_figure(fig, title="The room's measurements against the models",
                 readout=f"circles: predictions; shaded: within {TARGET:.0%}", height=min(4000, max(440, 160 + 22 * len(keys))),
                 legend=True)  # fmt: skip
    return fig


def to_html(rows: list[dict], sources: list[Source], skipped: list[str]) -> str:
    import plotly.io as pio

    from .book import table

    plot = pio.to_html(figure(rows), include_plotlyjs=True, full_html=False, auto_play=False)
    md = to_markdown(rows, sources, skipped).splitlines()
    intro = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(md[2])))
    skipped_html = "".join(f"<li>{html.escape(s)}</li>" for s in skipped)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>The room's measurements</title>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:0.85em}"
        "td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>"
        f"<h1>The room's measurements against the models</h1><p>{intro}</p>{plot}"
        + table([_cells(d) for d in rows], list(HEAD))
        + (f"<h2>Skipped</h2><ul>{skipped_html}</ul>" if skipped else "")
        + "</body></html>\n"
    )


def merge(paths, out) -> tuple[list[Path], list[dict], list[str]]:
    """Merge the records under ``paths`` into ``out`` (created); returns the files written, the rows and the skips."""
    sources, skipped = collect(paths)
    rows = table_rows(sources)
    if not rows:
        raise ValueError("--merge found no comparison to merge" + ("; skipped: " + "; ".join(skipped) if skipped else ""))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    texts = {"merged.csv": to_csv(rows), "merged.md": to_markdown(rows, sources, skipped)}
    try:
        texts["merged.html"] = to_html(rows, sources, skipped)
    except ImportError as exc:  # a machine without plotly (pip install plotly) still gets the table
        skipped = [*skipped, f"merged.html not written: {exc} (pip install plotly)"]
    written = []
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written, rows, skipped


def main(paths, out: str = ".") -> int:
    """The ``--merge`` command: one line per file written, skips on stderr; 0, or 1 when nothing merged."""
    import sys

    try:
        written, rows, skipped = merge(paths, out)
    except ValueError as exc:
        print(f"python -m widgets.measure: error: {exc}", file=sys.stderr)
        return 1
    for s in skipped:
        print(f"[skip] {s}", file=sys.stderr)
    machines = len({d["machine"] for d in rows})
    print(f"merged {len(rows)} comparisons from {machines} machine(s):")
    for p in written:
        print(f"  {p}")
    return 0


__all__ = ["Row", "collect", "figure", "main", "merge", "record_files", "table_rows"]
