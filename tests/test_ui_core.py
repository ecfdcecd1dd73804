"""widgets.ui core: live forms, frames figures, the book's plotly renderer."""

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import widgets.ui  # noqa: F401  (registers the renderer)
from widgets.ui import error_html, frames_figure, live_form


def _frame(v):
    return [go.Scatter(x=[0, 1], y=[v, 2 * v])], f"value {v}"


def test_frames_figure_steps_animate_to_their_frames():
    fig = frames_figure([1, 2, 3], _frame, slider_prefix="v: ", active=1)
    assert [f.name for f in fig.frames] == ["0", "1", "2"]
    steps = fig.layout.sliders[0].steps
    assert [list(s.args[0]) for s in steps] == [["0"], ["1"], ["2"]]
    assert fig.layout.sliders[0].active == 1
    assert fig.layout.title.text == "value 2" and list(fig.data[0].y) == [2, 4]
    assert fig.frames[2].layout.title.text == "value 3"


def test_frames_figure_rejects_inconsistent_frames():
    with pytest.raises(ValueError, match="frame 1"):
        frames_figure([1, 2], lambda v: ([go.Scatter()] * v, ""), slider_prefix="")
    with pytest.raises(ValueError, match="values"):
        frames_figure([], _frame, slider_prefix="")
    with pytest.raises(ValueError, match="active"):
        frames_figure([1], _frame, slider_prefix="", active=3)


def test_live_form_shows_the_sentence_not_a_traceback():
    import ipywidgets as w

    def compute(x):
        if x < 0:
            raise ValueError(f"x must be >= 0, got {x}")
        return x * 2

    box = live_form(compute, {"x": w.IntSlider(value=1, min=-5, max=5)}, lambda r: f"<b>{r}</b>")
    assert box.shown == ["<b>2</b>"]
    box.controls["x"].value = 3
    assert box.shown == ["<b>6</b>"]
    box.controls["x"].value = -1
    assert "Invalid input: x must be &gt;= 0, got -1" in box.shown[0]
    assert "Traceback" not in box.shown[0]


def test_error_html_escapes():
    assert "&lt;script&gt;" in error_html(ValueError("<script>"))


def test_renderer_emits_html_without_plotlyjs_or_autoplay(monkeypatch):
    fig = frames_figure([1, 2], _frame, slider_prefix="v: ")
    bundle = pio.renderers["gpubook"].to_mimebundle(fig.to_dict())
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html and "plotly.min.js" not in html and "cdn" not in html.lower()
    assert "Plotly.animate" not in html  # no auto-play: the figure opens on its active frame
    assert "application/vnd.plotly.v1+json" in bundle  # JupyterLab renders this one
    monkeypatch.setenv("GPUBOOK_PLOTLY", "html")  # what the book build sets for its kernels
    assert set(pio.renderers["gpubook"].to_mimebundle(fig.to_dict())) == {"text/html"}


def test_renderer_is_the_default_outside_colab():
    assert pio.renderers.default == "gpubook"
