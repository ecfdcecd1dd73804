"""The two forms every calculator has.

- ``live_form``: ipywidgets controls; every change recomputes through the model at once. Needs a
  kernel (JupyterLab, Colab).
- ``frames_figure``: a plotly figure whose slider steps through frames precomputed by the same
  model. Works in the published page without a kernel: no formula is written in JavaScript.

A model's ``ValueError`` is shown as its sentence, never as a traceback.
"""

from __future__ import annotations

import html
from typing import Any, Callable, Iterable, Mapping, Sequence

import plotly.graph_objects as go

from . import _render  # noqa: F401  (registers the book's plotly renderer)

ERROR_STYLE = "color:#b00020;font-weight:600"


def error_html(exc: BaseException) -> str:
    """The model's one-sentence complaint, as HTML."""
    return f'<p class="calc-error" style="{ERROR_STYLE}">Invalid input: {html.escape(str(exc))}</p>'


def verdict(ok: bool, message: str) -> bool:
    """What every exercise check prints: PASS or FAIL with the reason; returns ``ok``."""
    print(("PASS: " if ok else "FAIL: ") + message)
    return ok


def table_html(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column result table: (quantity, formatted value with unit)."""
    body = "".join(f"<tr><td>{html.escape(k)}</td><td><b>{html.escape(v)}</b></td></tr>" for k, v in rows)
    return f'<table class="calc-result">{body}</table>'


def live_form(
    compute: Callable[..., Any],
    controls: Mapping[str, Any],
    show: Callable[[Any], Any],
    *,
    title: str | None = None,
):
    """Build a live calculator.

    Parameters
    ----------
    compute : callable
        Called as ``compute(**{name: control.value})``; may raise ``ValueError``.
    controls : mapping of name -> ipywidgets control
        Every control is shown; any change recomputes.
    show : callable
        Turns ``compute``'s result into what is displayed: an HTML string, a plotly figure, or a
        tuple/list of those.

    Returns
    -------
    ipywidgets.VBox
        With ``.controls`` (the mapping), ``.output`` (the Output widget), ``.shown`` (the items
        displayed by the last refresh: HTML strings and figures) and ``.refresh()``.
    """
    import ipywidgets as w
    from IPython.display import HTML

    out = w.Output()

    def refresh(*_):
        values = {k: c.value for k, c in controls.items()}
        try:
            shown = show(compute(**values))
            items = list(shown) if isinstance(shown, (tuple, list)) else [shown]
        except ValueError as exc:
            items = [error_html(exc)]
        box.shown = items
        # Fill the Output directly: `with out: display(...)` sometimes stalled notebook execution
        # (nbclient waiting on the widget's output capture) for the whole cell timeout.
        out.outputs = ()
        for item in items:
            out.append_display_data(HTML(item) if isinstance(item, str) else item)

    parts = ([w.HTML(f"<b>{html.escape(title)}</b>")] if title else []) + [w.VBox(list(controls.values())), out]
    box = w.VBox(parts)
    for c in controls.values():
        c.observe(refresh, names="value")
    box.controls = dict(controls)
    box.output = out
    box.refresh = refresh
    refresh()
    return box


def frames_figure(
    values: Sequence[Any],
    frame: Callable[[Any], tuple[list, str]],
    *,
    slider_prefix: str,
    value_label: Callable[[Any], str] = str,
    layout: Mapping[str, Any] | None = None,
    active: int = 0,
) -> go.Figure:
    """A figure with one slider stepping through precomputed frames.

    ``frame(v)`` returns ``(traces, title)`` for slider value ``v``; every frame must return the
    same number of traces, in the same order. The title carries the model's answers for that
    step, so the numbers move with the slider without a kernel.
    """
    values = list(values)
    if not values:
        raise ValueError("values must hold at least one slider position")
    if not 0 <= active < len(values):
        raise ValueError(f"active must be in [0, {len(values) - 1}], got {active!r}")
    frames = []
    n_traces = None
    for i, v in enumerate(values):
        traces, title = frame(v)
        if n_traces is None:
            n_traces = len(traces)
        elif len(traces) != n_traces:
            raise ValueError(f"frame {i} has {len(traces)} traces, frame 0 had {n_traces}")
        frames.append(go.Frame(name=str(i), data=traces, layout=go.Layout(title_text=title)))
    first = frames[active]
    fig = go.Figure(data=first.data, frames=frames)
    steps = [
        dict(
            method="animate",
            label=value_label(v),
            args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))],
        )
        for i, v in enumerate(values)
    ]
    fig.update_layout(
        title_text=first.layout.title.text,
        sliders=[dict(active=active, currentvalue=dict(prefix=slider_prefix), steps=steps, pad=dict(t=40))],
        margin=dict(t=90),
        template="plotly_white",
        **(layout or {}),
    )
    return fig
