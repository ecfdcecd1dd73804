"""widgets.ui core: live forms, frames figures, the book's plotly renderer."""

import json

import headless
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


# --- the figure kit -------------------------------------------------------------------------
from widgets.ui._core import GPU_COLORS, gpu_color, grid_figure, percent, plural, set_layout, style_figure  # noqa: E402


def _grid_frame(choice, v):
    gpu, scale = choice
    return [go.Scatter(x=[0, 1], y=[v, scale * v], name=gpu), go.Scatter(x=[0], y=[v], name="mark")], "Roofline", f"{gpu}: {scale * v} at {v}"


def _grid(**kw):
    return grid_figure(
        slider=("intensity", [1, 2, 3], str),
        choices=("GPU", [("H200-SXM", 2), ("A100-SXM-80GB", 5)], lambda c: c[0]),
        frame=_grid_frame,
        **kw,
    )


def test_grid_figure_has_a_dropdown_and_one_slider_per_choice():
    fig = _grid(active=(1, 2))
    assert len(fig.layout.updatemenus) == 1 and len(fig.layout.updatemenus[0].buttons) == 2
    assert len(fig.layout.sliders) == 2
    assert [s.visible for s in fig.layout.sliders] == [False, True]
    assert list(fig.data[0].y) == [3, 15]  # the active frame: A100 choice, v = 3
    assert "A100-SXM-80GB: 15 at 3" in fig.layout.title.subtitle.text
    # each slider animates to its own choice's frames
    assert [list(s.args[0]) for s in fig.layout.sliders[0].steps] == [["0:0"], ["0:1"], ["0:2"]]
    assert {f.name for f in fig.frames} == {f"{c}:{s}" for c in range(2) for s in range(3)}


def test_grid_figure_dropdown_changes_the_data_and_swaps_the_slider():
    fig = _grid(active=(0, 1))
    b_h200, b_a100 = fig.layout.updatemenus[0].buttons
    data, layout = b_a100.args
    assert list(data["y"][0]) == [2, 10]  # A100 at the active slider value 2
    assert layout["sliders[1].visible"] is True and layout["sliders[0].visible"] is False
    assert list(b_h200.args[0]["y"][0]) == [2, 4]


def test_grid_figure_takes_a_layout_per_choice():
    """Each choice keeps its own axis (``layout`` a function of the choice): the A100 choice's
    frames (y up to 15) on an axis to 20, the H200's (y up to 6) on one to 8."""
    fig = _grid(active=(0, 1), layout=lambda c: dict(yaxis=dict(title="y", range=[0, 8 if c[0] == "H200-SXM" else 20])))
    assert list(fig.layout.yaxis.range) == [0, 8] and fig.layout.yaxis.title.text == "y"
    frames = {f.name: f for f in fig.frames}
    assert list(frames["0:2"].layout.yaxis.range) == [0, 8] and list(frames["1:0"].layout.yaxis.range) == [0, 20]
    b_h200, b_a100 = fig.layout.updatemenus[0].buttons
    assert b_a100.args[1]["yaxis.range"] == [0, 20] and b_h200.args[1]["yaxis.range"] == [0, 8]


def test_grid_figure_rejects_bad_grids():
    with pytest.raises(ValueError, match="choices"):
        grid_figure(slider=("v", [1], str), choices=("c", [], str), frame=_grid_frame)
    with pytest.raises(ValueError, match="active"):
        _grid(active=(2, 0))
    with pytest.raises(ValueError, match="traces"):
        grid_figure(slider=("v", [1, 2], str), choices=("c", [("a", 1), ("b", 2)], str),
                    frame=lambda c, v: ([go.Scatter()] * (1 if c[0] == "a" else 2), "t", "r"))


def test_grid_figure_assembled_unvalidated_is_valid_plotly_and_validates_later_changes():
    """grid_figure puts its figure together from parts plotly validated already (issue 13: two
    thirds of a static calculator's build time went to validating copies again). What it makes must
    pass plotly's full validation unchanged, and the figure must validate what is changed later."""
    fig = _grid(active=(1, 2), layout=dict(yaxis=dict(title="y", type="log")))
    as_json = json.loads(fig.to_json())
    again = go.Figure(as_json)  # validated from scratch: raises on any property plotly does not know
    assert json.loads(again.to_json()) == as_json
    assert len(fig.frames) == 6 and fig.frames[0].data[0].type == "scatter"
    with pytest.raises(ValueError):
        fig.update_layout(yaxis=dict(no_such_property=1))
    with pytest.raises(ValueError):
        fig.layout.height = "tall"
    with pytest.raises(ValueError):
        fig.data[0].update(no_such_property=1)


def test_set_layout_does_what_update_layout_does():
    def start():
        fig = go.Figure([go.Scatter(x=[1, 2], y=[3, 4])], layout=dict(legend=dict(traceorder="reversed"), title=dict(text="t", font=dict(size=9))))
        fig.add_trace(go.Scatter(x=[1], y=[1], yaxis="y2"))
        return fig
    kw = dict(template="book_light", height=500, legend=dict(orientation="h", y=-0.2), title=dict(text="new", x=0),
              yaxis2=dict(overlaying="y", side="right"), xaxis_title="x [s]", margin=dict(t=40))
    a, b = start(), start()
    a.update_layout(**kw)
    assert set_layout(b, **kw) is b
    assert json.loads(a.to_json()) == json.loads(b.to_json())
    assert b.layout.legend.traceorder == "reversed" and b.layout.title.font.size == 9  # merged, not replaced
    with pytest.raises(ValueError):
        set_layout(b, legend=dict(no_such_property=1))
    with pytest.raises(ValueError):
        set_layout(b, height=-5)


def test_style_figure_puts_the_legend_below_and_wraps_long_titles():
    fig = go.Figure([go.Scatter(x=[1], y=[1], name="a"), go.Scatter(x=[1], y=[2], name="b")])
    style_figure(fig, title="A title much longer than a phone-wide plot can hold on one line", readout="x = 1")
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.y < 0
    assert "<br>" in fig.layout.title.text and fig.layout.title.subtitle.text == "x = 1"
    assert fig.layout.template.layout.xaxis.exponentformat == "SI"


def test_every_catalog_gpu_has_a_colour_and_named_gpus_keep_theirs():
    from widgets.hardware import gpu_names

    for name in gpu_names():
        assert gpu_color(name).startswith("#")
    assert gpu_color("H200-SXM") == GPU_COLORS["H200-SXM"]
    with pytest.raises(ValueError, match="name"):
        gpu_color("")


@pytest.mark.parametrize(
    "n, word, expected", [(1, "wave", "1 wave"), (2, "wave", "2 waves"), (1.0, "sector", "1 sector"), (1.5, "wave", "1.5 waves"),
                          (1, "GPU", "1 GPU"), (4, "H200", "4 H200s")],  # fmt: skip
)
def test_plural(n, word, expected):
    assert plural(n, word) == expected


@pytest.mark.parametrize("f, expected", [(0.0, "0%"), (0.0004, "<0.1%"), (0.05, "5.0%"), (0.854, "85%"), (1.0, "100%")])
def test_percent(f, expected):
    assert percent(f) == expected


def _shown_figure(out) -> dict:
    """The plotly JSON the page was sent in a live form's figure Output widget (one display)."""
    (msg,) = out.outputs
    assert msg["output_type"] == "display_data"
    return msg["data"]["application/vnd.plotly.v1+json"]


def test_live_form_redraws_its_figure_in_place():
    import ipywidgets as w

    def show(v):
        return "<b>t</b>", go.Figure([go.Scatter(x=[0, 1], y=[0, v])])

    box = live_form(lambda x: x, {"x": w.IntSlider(value=1, min=0, max=9)}, show)
    (out,) = box.children[-1].children
    assert isinstance(out, w.Output) and list(box.figures[0].data[0].y) == [0, 1]
    assert list(_shown_figure(out)["data"][0]["y"]) == [0, 1]
    box.controls["x"].value = 7
    assert box.children[-1].children == (out,), "the same Output widget, redrawn"
    assert list(_shown_figure(out)["data"][0]["y"]) == [0, 7] and list(box.figures[0].data[0].y) == [0, 7]


def test_live_form_sends_each_refresh_as_one_complete_update():
    """What reaches the page on a move is one message per changed figure: its Output widget's
    outputs replaced by the final state (the readout already in the title's text), drawn by the
    page's one plotly.js (no FigureWidget, no plotly.js in the message); an unchanged figure sends
    nothing."""
    import ipywidgets as w

    def show(v):
        bars = lambda: go.Figure([go.Bar(x=["a", "b"], y=[1, 2])])  # noqa: E731  (traces independent of v)
        figs = [style_figure(bars(), title="bars", readout=f"v is {v}"), style_figure(bars(), title="fixed")]
        return "<b>t</b>", *figs

    box = live_form(lambda x: x, {"x": w.IntSlider(value=1, min=0, max=9)}, show)
    moving, fixed = box.children[-1].children
    sent = []
    moving.observe(lambda ch: sent.append("moving"), names="outputs")
    fixed.observe(lambda ch: sent.append("fixed"), names="outputs")
    box.controls["x"].value = 7
    assert sent == ["moving"], sent
    shown = _shown_figure(moving)
    title = shown["layout"]["title"]
    assert title["text"] == "bars" and title["subtitle"]["text"] == "v is 7"  # as the static figures: readout as subtitle
    assert shown["config"]["displaylogo"] is False and "plotly.min.js" not in json.dumps(shown)
    assert moving.layout.min_height == f"{shown['layout']['height']}px"  # no jump while it is redrawn
    assert box.figures[0].layout.title.subtitle.text == "v is 7"


def test_a_refused_input_leaves_the_last_valid_figure_faint_and_says_so():
    """Reader review r6 #1: the figure under an error sentence read "16 ranks" with the box at 0."""
    import ipywidgets as w

    def compute(n):
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        return n

    def show(n):
        return "<b>t</b>", style_figure(go.Figure([go.Scatter(x=[0, 1], y=[0, n])]), title=f"{n} ranks")

    box = live_form(compute, {"n": w.IntText(value=4)}, show)
    (out,) = box.children[-1].children
    box.controls["n"].value = 16
    box.controls["n"].value = 0
    assert "calc-error" in box.output.value
    shown = _shown_figure(out)
    assert shown["layout"]["title"]["text"] == "Last valid input: 16 ranks"
    assert shown["data"][0]["opacity"] < 0.5 and list(shown["data"][0]["y"]) == [0, 16]
    box.controls["n"].value = 4  # back to a valid input: drawn in full again, as it opened
    shown = _shown_figure(out)
    assert shown["layout"]["title"]["text"] == "4 ranks" and "opacity" not in shown["data"][0]


def test_live_form_in_colab_sends_plotly_own_colab_bundle(monkeypatch):
    import sys
    import types

    import ipywidgets as w

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    box = live_form(lambda x: x, {"x": w.IntSlider(value=1)}, lambda v: go.Figure([go.Scatter(y=[v])]))
    (out,) = box.children[-1].children
    (msg,) = out.outputs
    assert set(msg["data"]) == {"text/html"} and "plotly" in msg["data"]["text/html"]


def test_live_form_makes_no_widgets_while_the_book_is_built(monkeypatch):
    import ipywidgets as w

    monkeypatch.setenv("GPUBOOK_BUILD", "1")
    box = live_form(lambda x: x, {"x": w.IntSlider(value=1)}, lambda r: f"<b>{r}</b>")
    assert box._repr_html_() == "" and box.shown == []


# --- the page's copy of a figure (widgets/ui/_render.page_copy) ---------------------------------
def test_page_copy_rounds_floats_and_keeps_integers_exact():
    from widgets.ui._render import page_copy

    d = page_copy({"data": [{"type": "scatter", "x": [1048576.0, 3], "y": [14.957040548324585, 1 / 3, float("inf")]}],
                   "layout": {"legend": {"y": -0.123456789}}})
    assert d["data"][0]["x"] == [1048576, 3] and isinstance(d["data"][0]["x"][0], int)
    assert d["data"][0]["y"][:2] == [14.957, 0.333333] and d["data"][0]["y"][2] == float("inf")
    assert d["layout"]["legend"]["y"] == -0.123457


def test_page_copy_writes_shared_settings_once_and_keeps_what_differs():
    """A grid figure's frames repeat each trace's name, colour and hover template and the title's
    font and anchors: the page copy writes them once (plotly.js merges a frame into its trace);
    whatever differs between two states (y, the title's text) stays in every frame."""
    from widgets.ui._render import page_copy

    def frame(choice, v):
        return ([go.Bar(x=["a", "b"], y=[v / 3, choice * v / 7], name="bars", marker_color="#0072B2",
                        hovertemplate="%{y:.3g} GiB<extra></extra>")], f"choice {choice}", f"readout {v}")

    fig = grid_figure(slider=("v", [1, 2, 3], str), choices=("c", [1, 2], str), frame=frame)
    full, lite = fig.to_dict(), page_copy(fig.to_dict())
    assert [f["name"] for f in lite["frames"]] == [f.name for f in fig.frames]
    for f_full, f_lite in zip(full["frames"], lite["frames"]):
        t = f_lite["data"][0]
        assert "name" not in t and "marker" not in t and "hovertemplate" not in t and t["type"] == "bar"
        assert t["y"] == pytest.approx(list(f_full["data"][0]["y"]), rel=1e-6)  # what differs is kept
        assert f_lite["layout"]["title"]["text"] == f_full["layout"]["title"]["text"]
        assert f_lite["layout"]["title"]["subtitle"]["text"] == f_full["layout"]["title"]["subtitle"]["text"]
        assert "font" not in f_lite["layout"]["title"]  # the same in every frame and in the figure
    assert lite["data"][0]["name"] == "bars" and lite["data"][0]["hovertemplate"].startswith("%{y")
    for b in lite["layout"]["updatemenus"][0]["buttons"]:
        # leaves only (review R5-2: a container given to Plotly.update became the figure's own
        # object, and the slider's animate wrote later frames into the button's argument)
        assert "y" in b["args"][0] and "name" not in b["args"][0] and "marker.color" not in b["args"][0]
        assert "title.text" in b["args"][1] and "title.subtitle.text" in b["args"][1]
    assert len(pio.to_json(lite)) < 0.8 * len(pio.to_json(full))
    # a setting that differs in one frame only is kept in all of them
    fig.frames[3].data[0].marker.color = "#D55E00"
    assert all("marker" in f["data"][0] for f in page_copy(fig.to_dict())["frames"])


def test_grid_figure_gives_each_choice_its_own_slider_positions():
    """Slider values as a function of the choice: each choice's slider offers exactly its own
    positions, no frame exists for a position it lacks, and picking a choice keeps the slider's
    value where that choice has it (else its last position)."""

    def frame(n, k):
        return [go.Bar(x=list(range(n)), y=[1 if i < k else 0 for i in range(n)])], f"{n} blocks", f"block {k} of {n}"

    fig = grid_figure(slider=("block", lambda n: list(range(1, n + 1)), str), choices=("blocks", [2, 4, 8], str),
                      frame=frame, active=(1, 2))
    assert [len(s.steps) for s in fig.layout.sliders] == [2, 4, 8]
    assert [s.steps[-1].label for s in fig.layout.sliders] == ["2", "4", "8"]
    assert len(fig.frames) == 2 + 4 + 8 and {f.name for f in fig.frames} == {
        st.args[0][0] for sl in fig.layout.sliders for st in sl.steps}
    assert all(int(f.layout.title.subtitle.text.split()[1]) <= int(f.layout.title.subtitle.text.split()[3]) for f in fig.frames)
    assert [s.active for s in fig.layout.sliders] == [1, 2, 2]  # block 3: kept where it exists, else the last
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.args[1][f"sliders[{i}].active"] for i, b in enumerate(buttons)] == [1, 2, 2]
    assert buttons[0].args[1]["title.subtitle.text"] == "block 2 of 2"
    with pytest.raises(ValueError, match="choice 4"):
        grid_figure(slider=("block", lambda n: [] if n == 4 else [1], str), choices=("blocks", [2, 4], str), frame=frame)
    with pytest.raises(ValueError, match="active"):
        grid_figure(slider=("block", lambda n: list(range(1, n + 1)), str), choices=("blocks", [2, 4], str), frame=frame,
                    active=(0, 3))


def test_attention_stepper_has_no_dead_slider_positions():
    """Reader finding W-2: the online-softmax stepper's slider ran 1..8 for rows of 2 and 4 blocks."""
    from widgets.ui import attention as ui

    fig = ui.stepper_figure()
    for button, sl in zip(fig.layout.updatemenus[0].buttons, fig.layout.sliders):
        blocks = int(button.label.rsplit(" ", 1)[1])
        assert len(sl.steps) == -(-ui.ROW_LEN // blocks), button.label  # a 16-element row: 8, 4 or 2 blocks
    for f in fig.frames:
        sub = f.layout.title.subtitle.text.replace("<br>", " ")
        k, n = sub.split(":")[0].split()[1::2]
        assert int(k) <= int(n), sub


def test_short_reason_cuts_at_sentence_or_word_never_inside_a_number():
    """Reader review r4 W-5: a table cell cut at 60 characters read "Tried to allocate 16.0" without
    its unit. The message below is PyTorch's CUDA out-of-memory text as the H200 attention record
    holds it (widgets/data/h200/attention.json, math path at the longest N)."""
    import json
    import re
    from pathlib import Path

    from widgets.book import short_reason

    oom = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity of 139.80 GiB "
           "of which 9.72 GiB is free. Including non-PyTorch memory, this process has 130.08 GiB memory in use.")
    assert short_reason(oom) == "out of memory (tried to allocate 16.00 GiB)"
    assert short_reason("CUDA out of memory.") == "out of memory"
    assert short_reason("not tried: a shorter sequence already failed") == "not tried: a shorter sequence already failed"
    two = "No available kernel. Aborting execution. See the warnings above for the reasons each kernel was refused."
    assert short_reason(two, 45) == "No available kernel. Aborting execution."
    long = "Flash attention requires the last dimension of q, k and v to be a multiple of 8 and at most 256, got 512"
    cut = short_reason(long, 60)
    assert len(cut) <= 60 and cut.endswith("…") and long.startswith(cut[:-1])
    digits = "x " + "1234567.89 " * 12
    assert short_reason(digits, 30) == "x 1234567.89 1234567.89…"  # never inside a number
    record = Path(__file__).resolve().parents[1] / "widgets/data/h200/attention.json"
    if record.exists():  # every error the record holds fits a cell and ends on a whole word or number
        errors = {json.loads(f'"{e}"') for e in re.findall(r'"error": "((?:[^"\\]|\\.)+)"', record.read_text())}
        for e in errors:
            s = short_reason(e)
            words = s.rstrip("…").split()
            assert len(s) <= 60 and (s.startswith("out of memory") or words[-1] in e.split()), (e, s)


def test_tables_keep_short_row_names_on_one_line():
    """W-5: "4 x 16 x 4,096" wrapped a word per line in a wide table. Tables whose row names are
    all short carry ``key-nowrap`` (book/_static/gpubook.css keeps that column on one line and in
    view while the table scrolls); long names wrap."""
    from pathlib import Path

    from widgets.book import KEY_NOWRAP_CHARS, compare_table
    from widgets.ui._core import html_table

    assert 'class="book-table key-nowrap book-stack"' in compare_table([dict(quantity="math, N = 16,384", reference="1 GiB")])
    long = "x" * (KEY_NOWRAP_CHARS + 1)
    assert 'class="book-table book-stack"' in compare_table([dict(quantity="a", reference="1"), dict(quantity=long, reference="2")])
    assert 'class="calc-result key-nowrap"' in html_table(["shape", "t"], [["<b>4 x 16 x 4,096</b>", "1 ms"]])
    assert 'class="calc-result"' in html_table(["shape", "t"], [[long, "1 ms"]])
    css = (Path(__file__).resolve().parents[1] / "book/_static/gpubook.css").read_text()
    assert "table.key-nowrap td:first-child" in css and "position: sticky" in css


def test_page_copy_keeps_x_and_y_in_a_restyle_that_sets_orientation():
    """plotly.js swaps a trace's x and y when a restyle sets its orientation (to null on a scatter
    too); the x and y given in the same call put them back. Found by comparing every state of the
    book's figures in Chromium (training_memory's ladder: the memory line lay along y after a
    dropdown choice)."""
    from widgets.ui._render import page_copy

    def frame(gpu, v):
        return ([go.Bar(x=[v], y=["per GPU"], orientation="h", name="weights"),
                 go.Scatter(x=[gpu, gpu], y=[-0.45, 0.45], mode="lines", name="memory")], "ladder", f"{v}")

    fig = grid_figure(slider=("v", [1, 2], str), choices=("GPU", [80, 141], str), frame=frame)
    lite = page_copy(fig.to_dict())
    for b in lite["layout"]["updatemenus"][0]["buttons"]:
        # the same orientation in every state: the kit leaves it (and the line's fixed y) out of
        # the restyle, so nothing is swapped; were it restyled, x and y would have to come with it
        restyle = b["args"][0]
        assert "orientation" not in restyle or restyle["y"][1] == [-0.45, 0.45]
    assert all("y" not in f["data"][1] for f in lite["frames"])  # frames merge: no swap there

    def turning(gpu, v):  # an orientation that changes with the choice keeps x and y with it
        bar = go.Bar(x=[v], y=["per GPU"], orientation="h") if gpu == 80 else go.Bar(x=["per GPU"], y=[v], orientation="v")
        return [bar, go.Scatter(x=[gpu, gpu], y=[-0.45, 0.45], mode="lines")], "ladder", f"{v}"

    fig = grid_figure(slider=("v", [1, 2], str), choices=("GPU", [80, 141], str), frame=turning)
    for b in page_copy(fig.to_dict())["layout"]["updatemenus"][0]["buttons"]:
        assert "orientation" in b["args"][0] and b["args"][0]["y"][1] == [-0.45, 0.45]


def test_the_tallest_calculators_fit_a_phone_screen():
    """Review R5-4/R5-9: simt's occupancy figure (820 px) put its slider's labels below a phone's
    screen, and collectives' roofline (1,121 px, a 26-entry menu) could not show its readout and
    slider together. Both fit a 390 x 844 phone under the book's header."""
    from widgets.ui import collectives, simt
    from widgets.ui._core import PHONE_FIGURE_PX

    for fig in (simt.occupancy_figure(), collectives.parallelism_roofline_figure()):
        assert fig.layout.height <= PHONE_FIGURE_PX, (fig.layout.title.text, fig.layout.height)
        # the slider's rail and labels (about 84 px under its top) stay inside the figure
        plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert -fig.layout.sliders[0].y * plot_h + 84 <= fig.layout.margin.b


@pytest.mark.browser
@pytest.mark.skipif(not headless.CHROMIUM, reason=headless.MISSING)
def test_in_chromium_a_dropdown_change_shows_the_frame_its_slider_lands_on(tmp_path):
    """Review R5-2, the reader's steps through plotly.js's own button and step methods: step a
    choice to its end, pick another, come back. The figure must show exactly the frame (choice,
    slider position): before the fix the readout still said "block 8 of 8" and the bars kept the
    last frame's colours while the slider said 1 (plotly.js had merged the slider's frames into the
    button's own title and marker objects)."""

    from playwright.sync_api import sync_playwright

    from widgets.ui import attention as ui

    fig = ui.stepper_figure()
    frames = {f.name: f for f in fig.frames}
    path = tmp_path / "stepper.html"
    fig.write_html(str(path), include_plotlyjs=True, full_html=True, div_id="gd", auto_play=False)
    button = "([gd, bi]) => { const b = gd.layout.updatemenus[0].buttons[bi]; return Plotly[b.method](gd, ...b.args); }"
    step = """([gd, si]) => { const s = gd.layout.sliders.find(s => s.visible !== false);
      const st = s.steps[si < 0 ? s.steps.length + si : si]; return Plotly[st.method](gd, ...st.args); }"""
    shown = """gd => ({sub: gd.layout.title.subtitle.text, colors: gd.data[0].marker.color, y: gd.data[0].y,
      slider: gd.layout.sliders.findIndex(s => s.visible !== false),
      active: gd.layout.sliders.find(s => s.visible !== false).active || 0})"""
    bad = []
    with sync_playwright() as p:
        b = headless.launch(p)
        page = b.new_page()
        page.goto(path.as_uri())
        page.wait_for_function("() => document.getElementById('gd') && document.getElementById('gd')._fullLayout")
        gd = page.locator("#gd").element_handle()
        choice = None
        for what, js, arg in [("pick 0", button, 0), ("end", step, -1), ("pick 1", button, 1), ("pick 0", button, 0),
                              ("middle", step, 2), ("pick 2", button, 2), ("pick 0", button, 0)]:
            page.evaluate(js, [gd, arg])
            page.wait_for_timeout(30)
            s = page.evaluate(shown, gd)
            if js is button:  # the slider it shows, at the position the button sets
                choice, pos = arg, s["active"]
                if s["slider"] != arg:
                    bad.append(f"after {what}: slider {s['slider']} shown")
            else:
                pos = arg % len(fig.layout.sliders[choice].steps)
            f = frames[f"{choice}:{pos}"]
            if s["sub"] != f.layout.title.subtitle.text or list(s["colors"]) != list(f.data[0].marker.color) \
                    or [round(v, 9) for v in s["y"]] != [round(v, 9) for v in f.data[0].y]:
                bad.append(f"after {what}: frame {f.name} but the readout says {s['sub'][:20]!r}")
        b.close()
    assert not bad, bad


def test_notebook_figures_are_drawn_on_white_so_a_dark_jupyterlab_theme_keeps_them_readable():
    """Reader review r6: in JupyterLab's dark theme the light template's dark text sat on the dark
    page (the book's templates are transparent). The JSON JupyterLab draws gets a white background;
    the published page's HTML keeps the transparent one (the page swaps templates itself)."""
    from widgets.ui import _render

    fig = style_figure(go.Figure([go.Scatter(y=[1, 2])]), title="t")
    bundle = _render.BookRenderer().to_mimebundle(fig.to_dict())
    layout = bundle["application/vnd.plotly.v1+json"]["layout"]
    assert layout["paper_bgcolor"] == layout["plot_bgcolor"] == "#ffffff"
    assert '"paper_bgcolor":"#ffffff"' not in bundle["text/html"].replace(" ", "")
    own = go.Figure(layout=dict(paper_bgcolor="#123456")).to_dict()
    assert _render.plotly_json(own)["layout"]["paper_bgcolor"] == "#123456"  # a figure's own colour is kept


def test_book_table_prose_columns_wrap_and_a_live_table_carries_its_style(monkeypatch):
    """A column of sentences wraps (td.book-prose, 16 to 28 em in book/_static/gpubook.css: the accuracy
    ledger was 2,648 px wide); a live notebook, which has no gpubook.css, gets the table's few rules
    with it (JupyterLab right-aligned every cell and broke "9.22 ms" over two lines); the built book
    does not."""
    from pathlib import Path

    from widgets import book

    monkeypatch.delenv("GPUBOOK_BUILD", raising=False)
    live = book.table([["a", "a long sentence", "9.22 ms"]], ["k", "why", "t"], prose_columns=(1,))
    assert '<td class="book-prose">a long sentence</td><td>9.22 ms</td>' in live
    assert live.count("<style>") == 1 and "td.book-prose {white-space: normal" in live and "text-align: left" in live
    monkeypatch.setenv("GPUBOOK_BUILD", "1")
    built = book.table([["a", "a long sentence", "9.22 ms"]], ["k", "why", "t"], prose_columns=(1,))
    assert "<style>" not in built and '<td class="book-prose">' in built
    css = (Path(__file__).resolve().parents[1] / "book/_static/gpubook.css").read_text()
    rule = css[css.index("table.book-table td.book-prose {"):].split("}")[0]
    assert "white-space: normal" in rule and "max-width: 28em" in rule


def test_book_table_lines_and_a_caption_that_stays_in_view():
    """A list cell shows one item per line, each escaped; the caption's text sits in the span that
    book/_static/gpubook.css pins to the scroll box's left edge, at most the box wide (reader review r15:
    a wide table's caption scrolled out of view with it)."""
    from pathlib import Path

    from widgets.book import table

    out = table([["naive", ["lg_throttle 295.3", "a<b 1.0"]]], ["rung", "states"], caption="Why <the> warps waited")
    assert "<td>lg_throttle 295.3<br>a&lt;b 1.0</td>" in out
    assert '<caption><span class="book-caption">Why &lt;the&gt; warps waited</span></caption>' in out
    css = (Path(__file__).resolve().parents[1] / "book/_static/gpubook.css").read_text()
    rule = css[css.index("caption .book-caption {"):]
    assert "position: sticky" in rule.split("}")[0] and "max-width: 100cqw" in rule.split("}")[0]
    assert "container-type: inline-size" in css



def test_a_stacking_table_labels_every_cell_and_keeps_its_table_roles(monkeypatch):
    """Reader check r19: on a 390-px phone the comparison tables scrolled sideways and a reader saw "0.8"
    of a ratio "0.83" and never the kind. A stacking table (every compare_table; book.table's stack=True)
    becomes a card per row in a narrow box: each cell carries its column's header in data-label (printed
    by the CSS) and the table keeps explicit ARIA roles, so a screen reader still gets a table with its
    column headers once the CSS lays it out as blocks. A plain table's markup is unchanged."""
    import re
    from pathlib import Path

    from widgets import book

    monkeypatch.setattr(book, "_build", lambda: True)
    row = dict(quantity="q <1>", reference=["2 ms", "3 ms"], model="1 ms", ratio="2.00", label="calibrated")
    out = book.compare_table([row, dict(quantity="r", reference="5 ms")], caption="c", reference_label='H200 "ref" <a>')
    assert '<table class="book-table key-nowrap book-stack" role="table">' in out
    assert '<thead role="rowgroup"><tr role="row"><th role="columnheader" scope="col">quantity</th>' in out
    assert '<th role="columnheader" scope="col">H200 &quot;ref&quot; &lt;a&gt;</th>' in out and '<tbody role="rowgroup">' in out
    cells = re.findall(r'<td role="cell" data-label="([^"]*)">(.*?)</td>', out)
    assert cells[:5] == [("quantity", "q &lt;1&gt;"), ("H200 &quot;ref&quot; &lt;a&gt;", "2 ms<br>3 ms"), ("model", "1 ms"),
                         ("measured / model", "2.00"), ("label", "calibrated")]
    assert cells[5:] == [("quantity", "r"), ("H200 &quot;ref&quot; &lt;a&gt;", "5 ms"), ("model", ""),
                         ("measured / model", ""), ("label", "")]  # empty: left out of the card (td:empty)
    assert out.count('<tr role="row">') == 3 and "<td>" not in out
    prose = book.table([["a", "why", "1 ms"]], ["k", "note", "t"], prose_columns=(1,), stack=True)
    assert '<td role="cell" data-label="note" class="book-prose">why</td>' in prose
    plain = book.table([["a", "why", "1 ms"]], ["k", "note", "t"], prose_columns=(1,))
    assert "role=" not in plain and "data-label" not in plain and "book-stack" not in plain
    assert "<tr><th>k</th><th>note</th><th>t</th></tr>" in plain and '<tr><td>a</td><td class="book-prose">why</td>' in plain
    with pytest.raises(ValueError, match="at most 2 cells"):
        book.table([["a", "b", "c"]], ["k", "v"], stack=True)
    # the cards: below STACK_BELOW of the table's own box, in the book's CSS and in a live notebook's copy
    css = (Path(__file__).resolve().parents[1] / "book/_static/gpubook.css").read_text()
    assert f"@container (max-width: {book.STACK_BELOW})" in css and f"@container (max-width: {book.STACK_BELOW})" in book.LIVE_TABLE_STYLE
    cards = css[css.index(f"@container (max-width: {book.STACK_BELOW})"):]
    for rule in ("content: attr(data-label) / \"\"", "td:empty", "clip-path: inset(50%)", "display: grid"):
        assert rule in cards and rule in book.LIVE_TABLE_STYLE, rule
    assert ".book-table-wrap {container-type: inline-size" in book.LIVE_TABLE_STYLE and "container-type: inline-size" in css

def test_compare_table_puts_the_measured_value_first(monkeypatch):
    """Reader check r18: on a phone only the first two columns show before the table scrolls, and
    the measured value and its ratio were fourth and fifth. The order is quantity, reference, the
    reader's device (live notebooks only), model, measured / model, label. Beside the reader's column the
    model and the ratio name the reference they belong to (reader check r19)."""
    import re

    import widgets.book as book

    row = dict(quantity="q", reference="2 ms", here="3 ms", model="1 ms", ratio="2.00", label="calibrated")
    heads = lambda html: re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", html)  # noqa: E731
    monkeypatch.setattr(book, "_build", lambda: False)
    assert heads(book.compare_table([row], here_label="here")) == ["quantity", "H200 (reference)", "here", "model (H200)",
                                                                   "H200 / model", "label"]
    monkeypatch.setattr(book, "_build", lambda: True)  # the published book: no reader's column
    assert heads(book.compare_table([row])) == ["quantity", "H200 (reference)", "model", "measured / model", "label"]


def test_exercise_answers_have_one_reading_rule():
    """Every exercise check reads a reader's number the same way (widgets.ui._core.answer_number and
    answer_close): a bool is not 1, a string is not a number, NaN and infinities are refused; before
    round 19 four modules had their own rule, and training_memory's and serving's read True as 1.0 and
    "3" as 3."""
    import importlib
    import inspect

    import numpy as np
    import torch

    from widgets.ui import _core

    assert _core.answer_number(torch.tensor(2.5)) == 2.5 and _core.answer_number(np.int64(7)) == 7.0
    for bad in (True, np.bool_(True), "3", b"3", None, float("nan"), float("inf"), [1.0], 1j):
        assert _core.answer_number(bad) is None, bad
        assert not _core.answer_close(bad, 1.0)
    assert _core.answer_close(1.019, 1.0) and not _core.answer_close(1.021, 1.0) and _core.answer_close(-0.99, -1.0)
    for name in ("attention", "kernels", "serving", "training_memory"):
        src = inspect.getsource(importlib.import_module(f"widgets.ui.{name}"))
        assert "def _close(" not in src and "def _number(" not in src, f"widgets/ui/{name}.py reads answers its own way"
