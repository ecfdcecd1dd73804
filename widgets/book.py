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
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
    """The committed H200 reference record of ``topic`` (raw JSON; :func:`setup` gives it typed)."""
    from .experiments import harness

    return harness.load_reference(topic)


@dataclass(frozen=True)
class Setup:
    """What a chapter's hidden setup cell needs, from :func:`setup`.

    - ``ref``: the topic's reference results, typed (``widgets.experiments.<topic>.RESULTS``
      read by ``from_record``); ``record``: the same record as raw JSON (provenance, and the
      ``widgets.models.*_records`` readers that take a record);
    - ``reference_gpu``: the catalog entry of the GPU the reference was measured on (H200-SXM);
    - ``gpu``: the catalog entry of the reader's GPU, or ``None`` (no GPU, or one the catalog
      lacks: then the chapter says so and uses ``reference_gpu``'s figures);
    - ``capabilities``: what the reader's device can do (``harness.capabilities()``);
    - ``here``: one line saying where this notebook's experiments run.
    """

    topic: str
    record: dict
    ref: Any
    reference_gpu: Any
    gpu: Any
    capabilities: Any
    here: str

    @property
    def prose(self):
        """The notebook's prose namespace (``widgets.prose.prose``: the markdown reads
        ``{eval}`prose.<key>```)."""
        from .prose import prose

        return prose

    def glue(self, key: str, value: Any) -> None:
        """Make ``value`` (formatted text) available to the prose as ``{eval}`prose.<key>```."""
        self.prose[key] = value

    def glue_all(self, values: Mapping[str, Any]) -> None:
        """:meth:`glue` for each ``key: value`` of ``values``."""
        for key, value in values.items():
            self.glue(key, value)

    @property
    def provenance(self) -> str:
        """One sentence naming where and how the reference was measured (HTML)."""
        return provenance_line(self.record)


def setup(topic: str) -> Setup:
    """Everything a chapter's hidden setup cell needs for ``topic``: the reference record (raw and
    typed), the catalog GPUs (the reference's and the reader's) and the reader's device.

    >>> S = setup("memory_hierarchy")   # doctest: +SKIP
    >>> S.ref.hbm_bandwidth.triton_copy_bytes_per_s   # doctest: +SKIP
    """
    import importlib

    from .experiments import TOPICS, harness
    from .hardware import catalog_name_for, get_gpu

    if topic not in TOPICS:
        raise ValueError(f"topic must be one of {', '.join(TOPICS)}; got {topic!r}")
    module = importlib.import_module(f"widgets.experiments.{topic}")
    record = harness.load_reference(topic, getattr(module, "REFERENCE_GPU", harness.REFERENCE_GPU))
    ref = module.RESULTS.from_record(record["results"])
    prov = record["provenance"]
    ref_name = catalog_name_for(prov.get("gpu") or "") or catalog_name_for(prov.get("device") or "")
    if ref_name is None:
        raise ValueError(f"the {topic} reference record was measured on {prov.get('gpu')!r}, which the catalog lacks")
    cap = harness.capabilities()
    here_name = catalog_name_for(cap.device) if cap.gpu else None
    here = harness.describe_run(f"the {topic.replace('_', ' ')} experiments")
    return Setup(topic=topic, record=record, ref=ref, reference_gpu=get_gpu(ref_name),
                 gpu=get_gpu(here_name) if here_name else None, capabilities=cap, here=here)


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


def _cell(c: Any) -> str:
    """A cell's HTML: its text escaped; a list or tuple shows one item per line."""
    if isinstance(c, (list, tuple)):
        return "<br>".join(html.escape(str(x)) for x in c)
    return html.escape(str(c))


# A live notebook has no book/_static/gpubook.css: JupyterLab right-aligns every cell and broke "9.22 ms"
# over two lines (reader check r17). Each table then carries the few rules that keep it readable (Colab
# shows each output in a frame of its own, so one style per table, not one per notebook), the stacked
# cards of STACK_BELOW included: JupyterLab's output area is wide, so a stacking table stays a table
# there unless the output area itself is narrower than that.
STACK_BELOW = "40rem"
"""A stacking table (``table(..., stack=True)``, every :func:`compare_table`) becomes one card per row
when the box it sits in is narrower than this (a CSS container query on ``.book-table-wrap``, in
book/_static/gpubook.css and :data:`LIVE_TABLE_STYLE`): 640 px, under the desktop column (666 to 688
px at 1280 px) and over every comparison table's narrowest width (495 to 650 px)."""

LIVE_TABLE_STYLE = (
    "<style>.book-table-wrap table.book-table th, .book-table-wrap table.book-table td {text-align: left; vertical-align: top}"
    " .book-table-wrap table.book-table td:not(:first-child) {white-space: nowrap}"
    " .book-table-wrap table.book-table td.book-prose {white-space: normal; min-width: 16em; max-width: 28em;"
    " overflow-wrap: anywhere}"
    " .book-table-wrap {container-type: inline-size; overflow-x: auto}"
    f" @container (max-width: {STACK_BELOW}) {{"
    " .book-table-wrap table.book-stack, .book-table-wrap table.book-stack > caption,"
    " .book-table-wrap table.book-stack > tbody, .book-table-wrap table.book-stack > tbody > tr {display: block}"
    " .book-table-wrap table.book-stack {position: relative; width: 100%}"
    " .book-table-wrap table.book-stack > caption {text-align: left}"
    " .book-table-wrap table.book-stack > thead {position: absolute; width: 1px; height: 1px; overflow: hidden;"
    " clip-path: inset(50%); white-space: nowrap}"
    " .book-table-wrap table.book-stack > tbody > tr {padding: 0.3em 0; border-bottom: 1px solid rgba(128, 128, 128, 0.4)}"
    " .book-table-wrap table.book-stack > tbody > tr > td {display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr);"
    " column-gap: 0.75em; white-space: normal; overflow-wrap: anywhere; min-width: 0; max-width: none; border: none;"
    " padding: 0.1em 0.5em; text-align: left}"
    " .book-table-wrap table.book-stack > tbody > tr > td::before {content: attr(data-label); content: attr(data-label) / \"\";"
    " opacity: 0.75}"
    " .book-table-wrap table.book-stack > tbody > tr > td:first-child {display: block; font-weight: 600}"
    " .book-table-wrap table.book-stack > tbody > tr > td:first-child::before {content: none}"
    " .book-table-wrap table.book-stack > tbody > tr > td:empty {display: none}}</style>"
)


def table(rows: Iterable[Iterable[Any]], headers: Iterable[str], *, caption: str | None = None,
          prose_columns: Iterable[int] = (), stack: bool = False) -> str:
    """The book's one HTML table: header row, then rows of already formatted cells (a cell given as
    a list shows one item per line). The caption's text sits in a span that book/_static/gpubook.css
    keeps in view while a wide table scrolls sideways in its box (a caption is as wide as its table).
    The columns numbered in ``prose_columns`` hold sentences: they wrap in a column of 16 to 28 em
    (``td.book-prose``), where numbers stay on one line.

    ``stack=True`` is for a table whose rows are read one at a time (each a record: a quantity, its
    values, what kind of comparison it is), as :func:`compare_table`'s are. In a box narrower than
    :data:`STACK_BELOW` (a phone) each row becomes a card: the first cell its title, every other cell
    on a line of its own after its column's header, so every column shows without scrolling
    sideways. Every cell then carries its header in ``data-label`` (the CSS prints it); the table
    keeps explicit ARIA roles (table, rowgroup, row, columnheader, cell) because a browser may drop a
    table's semantics once CSS lays it out as blocks, so a screen reader still reads a table with
    its column headers (the visible labels are left out of its reading: ``content: ... / ""``).

    The default (no stacking) suits a grid read down its columns: a sweep, a catalog, counters per
    kernel. Cards would put each column's values a card apart, so such a table keeps its layout and
    scrolls sideways in its own box, its first column (the row's name) kept in view."""
    rows = [list(r) for r in rows]
    headers = [str(h) for h in headers]
    wrap = set(prose_columns)
    cls = "book-table" + key_class([r[0] for r in rows if r])
    cap = f'<caption><span class="book-caption">{html.escape(caption)}</span></caption>' if caption else ""
    style = "" if _build() else LIVE_TABLE_STYLE
    if not stack:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f'<td class="book-prose">{_cell(c)}</td>' if j in wrap else f"<td>{_cell(c)}</td>"
                                        for j, c in enumerate(r)) + "</tr>" for r in rows)
        return (f'<div class="book-table-wrap">{style}<table class="{cls}">{cap}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")
    labels = [html.escape(h, quote=True) for h in headers]
    if any(len(r) > len(labels) for r in rows):
        raise ValueError(f"a stacking table's rows must have at most {len(labels)} cells (one per header), "
                         f"got {max(len(r) for r in rows)}")
    head = "".join(f'<th role="columnheader" scope="col">{html.escape(h)}</th>' for h in headers)

    def td(j: int, c: Any) -> str:
        prose = ' class="book-prose"' if j in wrap else ""
        return f'<td role="cell" data-label="{labels[j]}"{prose}>{_cell(c)}</td>'

    body = "".join('<tr role="row">' + "".join(td(j, c) for j, c in enumerate(r)) + "</tr>" for r in rows)
    return (f'<div class="book-table-wrap">{style}<table class="{cls} book-stack" role="table">{cap}'
            f'<thead role="rowgroup"><tr role="row">{head}</tr></thead><tbody role="rowgroup">{body}</tbody></table></div>')


KEY_NOWRAP_CHARS = 22  # a first column of names this short stays on one line (book/_static/gpubook.css)


def key_class(keys: Iterable[Any]) -> str:
    """`` key-nowrap`` when every row name (first cell, tags aside) is short enough to keep on one
    line: the page then never wraps "4 x 16 x 4,096" a word per line in a wide table (reader review
    r4, W-5); longer names wrap in a column at least 11 em wide. Empty otherwise."""
    keys = [re.sub(r"<[^>]*>", "", str(k)) for k in keys]
    return " key-nowrap" if keys and max(len(k) for k in keys) <= KEY_NOWRAP_CHARS else ""


_EXC_NAME = re.compile(r"^(?:[\w.]+(?:Error|Exception|Warning)):\s*")
_TRIED = re.compile(r"tried to allocate (\d[\d.,]*\s*[KMGT]i?B)", re.I)


def short_reason(message: str, limit: int = 60) -> str:
    """An error or refusal message short enough for a table cell, cut where a sentence or clause
    ends, never inside a number or a word.

    A CUDA out-of-memory message becomes ``"out of memory (tried to allocate 16.00 GiB)"``; the
    exception's class name is dropped; otherwise whole sentences are kept while they fit, and a
    first sentence longer than ``limit`` is cut at its last clause (", ", ": ", "; ") or word
    boundary with an ellipsis. A table that cut at a fixed count showed "Tried to allocate 16.0"
    without its unit (reader review r4, W-5).

    >>> short_reason("OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity of 139.80 GiB")
    'out of memory (tried to allocate 16.00 GiB)'
    >>> short_reason("not tried: a shorter sequence already failed")
    'not tried: a shorter sequence already failed'
    """
    text = " ".join(str(message).split())
    text = _EXC_NAME.sub("", text)
    if "out of memory" in text.lower():
        m = _TRIED.search(text)
        return f"out of memory (tried to allocate {m.group(1)})" if m else "out of memory"
    if len(text) <= limit:
        return text
    out = ""
    for sentence in re.split(r"(?<=[.;!?])\s+(?=[A-Z(])", text):
        if len(out) + bool(out) + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    if out:
        return out
    head = text[: limit - 1]
    cut = max(head.rfind(sep) for sep in (", ", ": ", "; "))
    if cut < limit // 2:
        cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(" ,:;") + "…"


def compare_table(
    rows: Iterable[Mapping[str, Any]],
    *,
    reference_label: str = "H200 (reference)",
    here_label: str | None = None,
    caption: str | None = None,
) -> str:
    """Model against the recorded reference, and the reader's device when it ran. Columns: the
    quantity, the reference, the reader's device, the model, measured / model, the label.

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
    # the measured value right after the row's name, the reader's own beside it, then the model and
    # the ratio: on a phone the first columns are what shows before scrolling (reader check r18)
    cols = [("quantity", "quantity"), ("reference", reference_label)]
    here = not _build() and any(r.get("here") is not None for r in rows)
    if here:
        cols.append(("here", here_label or _here_label()))
    # beside the reader's own column, the model and the ratio say whose they are: the reference's (a reader
    # in JupyterLab read the H200's 0.83 as their own, reader check r19)
    ref_name = reference_label.split(" (")[0]
    if any(r.get("model") is not None for r in rows):
        cols.append(("model", f"model ({ref_name})" if here else "model"))
    if any(r.get("ratio") is not None for r in rows):
        cols.append(("ratio", f"{ref_name} / model" if here else "measured / model"))
    if any(r.get("label") is not None for r in rows):
        cols.append(("label", "label"))  # the ledger's word (widgets.accuracy.LABELS), one name everywhere
    body = [[("" if r.get(k) is None else r[k]) for k, _ in cols] for r in rows]
    # a row is read on its own (the quantity, its values, the ratio and what kind of comparison it is):
    # on a phone it stacks into a card, so the ratio shows whole and the kind shows at all (reader check
    # r19: the tables were 495-650 px wide in a 336-358 px box, "0.8" of "0.83" and no kind in view)
    return table(body, [h for _, h in cols], caption=caption, stack=True)


def _here_label() -> str:
    from .experiments import harness

    name = harness.device_name()
    return name if harness.on_gpu() else f"{name}, scaled down"


class Source:
    """A listing of the library's own code, as :func:`show_source` returns it.

    A notebook shows it as a highlighted Python block (``text/markdown``: a fenced code block,
    which the web book highlights like any listing and JupyterLab renders in a notebook, where
    ``{literalinclude}`` shows nothing); ``text`` and ``repr`` give the code itself.
    """

    def __init__(self, text: str, where: str, language: str = "python") -> None:
        self.text = text
        self.where = where
        self.language = language

    def _repr_markdown_(self) -> str:
        longest = max((len(run) for run in self.text.split("\n") for run in _backtick_runs(run)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}{self.language}\n{self.text}\n{fence}\n"

    def __repr__(self) -> str:
        return self.text


def _backtick_runs(line: str) -> list[str]:
    runs, cur = [], ""
    for ch in line:
        if ch == "`":
            cur += ch
        elif cur:
            runs.append(cur)
            cur = ""
    return runs + ([cur] if cur else [])


def _line_numbers(spec: str, count: int) -> list[int]:
    """0-based indices from a ``lines`` spec like Sphinx's: ``"1,36-"``, ``"3-5"``, ``"2"`` (1-based)."""
    picked: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                first, last = int(lo), int(hi) if hi.strip() else count
            else:
                first = last = int(part)
        except ValueError:
            raise ValueError(f"lines must be like '1,36-' or '3-5', got {spec!r}") from None
        if not 1 <= first <= last <= count:
            raise ValueError(f"lines {part!r} of {spec!r} is outside 1..{count} (the listing's lines)")
        picked.extend(range(first - 1, last))
    return picked


def show_source(
    path: str,
    name: str | None = None,
    *,
    start_after: str | None = None,
    end_before: str | None = None,
    lines: str | None = None,
    language: str = "python",
) -> Source:
    """The source of ``name`` (a function, class or ``Class.method``) in the library file ``path``,
    to show as a highlighted listing in a chapter (the last expression of a ``remove-input`` cell).

    It replaces ``{literalinclude}`` with ``:pyobject:``, which JupyterLab renders as nothing: the
    code is read from the file (with :mod:`ast`, nothing is imported, so a Triton or CUDA module
    shows on a machine without either), decorators included, indentation removed.

    Parameters
    ----------
    path : str
        The file, relative to the folder that holds the ``widgets`` package
        (``"widgets/models/attention.py"``).
    name : str, optional
        The object to show (``"attention_flop"``, ``"Layer.forward"``); ``None`` for the part of
        the file that ``start_after``/``end_before`` select.
    start_after, end_before : str, optional
        Show from the line after the first line containing ``start_after``, up to the first later
        line containing ``end_before`` (as Sphinx's options of the same names).
    lines : str, optional
        Keep only these lines of the listing, 1-based (``"1,36-"``: the first, and the 36th on).
    language : str, optional
        The highlighting (``"cuda"`` for CUDA C kept in a Python string); ``"python"`` by default.

    Returns
    -------
    Source
        The listing; a notebook displays it as a Python code block.
    """
    import ast
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    file = (root / path).resolve()
    if not file.is_file() or root not in file.parents:
        raise ValueError(f"path must name a file of the library (relative to {root}), got {path!r}")
    text = file.read_text(encoding="utf-8")
    all_lines = text.splitlines()
    if name is not None:
        body: list[ast.stmt] = ast.parse(text).body
        node: ast.AST | None = None
        for part in name.split("."):
            node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         and n.name == part), None)
            if node is None:
                raise ValueError(f"name must be a function, class or Class.method defined in {path}, got {name!r}")
            body = node.body
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        chosen = all_lines[first - 1 : node.end_lineno]
    else:
        chosen = all_lines
    if start_after is not None:
        at = next((i for i, line in enumerate(chosen) if start_after in line), None)
        if at is None:
            raise ValueError(f"start_after {start_after!r} is on no line of {path}")
        chosen = chosen[at + 1 :]
    if end_before is not None:
        at = next((i for i, line in enumerate(chosen) if end_before in line), None)
        if at is None:
            raise ValueError(f"end_before {end_before!r} is on no line of {path} after the start")
        chosen = chosen[:at]
    if lines is not None:
        chosen = [chosen[i] for i in _line_numbers(lines, len(chosen))]
    listing = textwrap.dedent("\n".join(chosen)).strip("\n")
    if not listing.strip():
        raise ValueError(f"the listing of {path} ({name or 'start_after/end_before'}) is empty")
    if not language.replace("-", "").replace("+", "").isalnum():
        raise ValueError(f"language must be a Pygments lexer name such as 'python' or 'cuda', got {language!r}")
    return Source(listing, f"{path}{'::' + name if name else ''}", language)
