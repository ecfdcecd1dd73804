"""Live calculators (ipywidgets forms): every control opens at the calculator's exact default, the
figure shows what the controls choose, and nothing is drawn over anything (reader reviews, round 3).

A slider snaps a value that is not on its grid (``min + k * step``) to the nearest step in the
browser: the latency form opened at 350 ns for a measured 345.5 ns, the launch cost at 9.0 µs for
9.1 µs, the DDP bucket at 26.9 MiB for PyTorch's 25 MiB. So each slider's value must be on its grid.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re

import pytest

pytest.importorskip("ipywidgets")

MODULES = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "serving", "training_memory", "attention")


def _calculators():
    out = []
    for mod in MODULES:
        m = importlib.import_module(f"widgets.ui.{mod}")
        for name, fn in sorted(vars(m).items()):
            if name.endswith("_calculator") and callable(fn) and fn.__module__ == m.__name__:
                out.append((mod, name))
    return out


CALCULATORS = _calculators()


@pytest.fixture(autouse=True)
def _live(monkeypatch):
    monkeypatch.delenv("GPUBOOK_BUILD", raising=False)  # live forms make no widgets in the book build


def _form(mod, name, **kw):
    return getattr(importlib.import_module(f"widgets.ui.{mod}"), name)(**kw)


def _on_grid(c) -> bool:
    import ipywidgets as w

    if isinstance(c, w.FloatLogSlider):
        k = (math.log(c.value, c.base) - c.min) / c.step
    elif isinstance(c, (w.IntSlider, w.FloatSlider)):
        k = (c.value - c.min) / c.step
    else:
        return True
    return abs(k - round(k)) < 1e-6 and c.min <= (math.log(c.value, c.base) if isinstance(c, w.FloatLogSlider) else c.value) <= c.max


def test_there_are_live_forms_to_check():
    assert len(CALCULATORS) >= 20


@pytest.mark.parametrize("mod, name", CALCULATORS)
def test_every_slider_opens_on_its_grid_and_shows_its_whole_label(mod, name):
    form = _form(mod, name)
    for key, c in form.controls.items():
        assert _on_grid(c), f"{mod}.{name}: {key} = {c.value} is not on its slider's grid (min {c.min}, step {c.step})"
        if getattr(c, "description", ""):
            assert c.style.description_width == "initial", f"{mod}.{name}: {key}'s label is cut"


@pytest.mark.parametrize("mod, name", CALCULATORS)
def test_slider_readouts_are_plain_numbers(mod, name):
    """A reader reads a slider's value in its readout: a FloatLogSlider's (d3-format ".3g", ipywidgets'
    default) wrote "1.64e+4" MiB, "1.00e+4" FLOP/B and "4.1e+3" tokens (round-6 leftover). Sizes are
    SelectionSliders labelled with their unit (widgets/ui/_core.py log_slider); any other slider's
    format is plain: d3's r (significant digits), f or d, never e, g or the default."""
    import ipywidgets as w

    form = _form(mod, name)
    for key, c in form.controls.items():
        if isinstance(c, w.SelectionSlider):
            labels = list(c._options_labels)  # what the page shows
            bad = [x for x in labels if re.search(r"\de[+-]?\d", x)]
            assert not bad, f"{mod}.{name}: {key} shows {bad[:3]}"
            assert len(set(labels)) == len(labels), f"{mod}.{name}: {key} has two points with one label"
        elif isinstance(c, (w.FloatLogSlider, w.FloatSlider)):
            assert c.readout_format[-1:] in ("r", "f", "d"), f"{mod}.{name}: {key}'s readout {c.readout_format!r} can write exponents"


def test_a_form_with_a_selection_slider_makes_its_readout_read_only():
    """ipywidgets 8 leaves a SelectionSlider's readout editable and ignores what is typed (a reader
    typed "4 MiB" and the form stayed at 64 MiB): live_form adds the style that makes it read-only
    (checked in the page by tests/test_jupyterlab.py); a form without one gets no style."""
    import ipywidgets as w

    from widgets.ui._core import READONLY_READOUT_CSS

    with_selection = 0
    for mod, name in CALCULATORS:
        form = _form(mod, name)
        styles = [c for c in form.children if isinstance(c, w.HTML) and c.value == READONLY_READOUT_CSS]
        if any(isinstance(c, w.SelectionSlider) for c in form.controls.values()):
            with_selection += 1
            assert len(styles) == 1 and styles[0].layout.display == "none", f"{mod}.{name}: no read-only readout style"
        else:
            assert not styles, f"{mod}.{name}: a readout style without a SelectionSlider"
    assert with_selection >= 3  # message size (two forms) and the DDP bucket


@pytest.mark.parametrize(
    "mod, name, kwargs, control, expected",
    [
        ("simt", "latency_hiding_calculator", dict(latency_s=345.5e-9, bytes_per_s=4.8e12, sms=132), "latency_ns", 345.5),
        ("simt", "latency_hiding_calculator", dict(latency_s=345.5e-9, bytes_per_s=4.8e12, sms=132), "tb_per_s", 4.8),
        ("simt", "latency_hiding_calculator", dict(latency_s=1234e-9, bytes_per_s=3.35e12, sms=114), "sms", 114),
        ("memory_hierarchy", "fusion_calculator", dict(launch_s=9.0999e-6), "launch_us", 9.0999),
        ("collectives", "dp_step_calculator", {}, "bucket_mib", 25.0),
    ],
)
def test_controls_open_at_the_calculators_default_argument(mod, name, kwargs, control, expected):
    form = _form(mod, name, **kwargs)
    c = form.controls[control]
    assert c.value == pytest.approx(expected, rel=1e-9)
    assert _on_grid(c)


@pytest.mark.parametrize("mod, name", [(m, n) for m, n in CALCULATORS])
def test_a_calculators_own_defaults_reach_its_controls(mod, name):
    """Where a calculator takes arguments, each one with a same-named control opens at that value."""
    fn = getattr(importlib.import_module(f"widgets.ui.{mod}"), name)
    form = fn()
    for p in inspect.signature(fn).parameters.values():
        if p.name in form.controls and p.default is not p.empty:
            assert form.controls[p.name].value == pytest.approx(p.default, rel=1e-9), (mod, name, p.name)


def test_derived_defaults_print_without_float_noise():
    form = _form("collectives", "dp_step_calculator")
    for key, c in form.controls.items():
        if isinstance(c.value, float):
            assert len(repr(c.value)) <= 12, f"{key} = {c.value!r}"


def test_ring_step_slider_follows_the_rank_count():
    form = _form("collectives", "ring_allreduce_calculator")
    step, n = form.controls["step"], form.controls["n"]
    assert step.max == 2 * (n.value - 1)
    step.value = step.max
    n.value = 2
    assert step.max == 2 and step.value <= 2
    assert "Invalid input" not in form.output.value
    n.value = 12
    assert step.max == 22
    step.value = 22
    assert "Invalid input" not in form.output.value


def test_fusion_ops_moves_a_marker_on_the_figure():
    form = _form("memory_hierarchy", "fusion_calculator", launch_s=9.1e-6)
    marker = lambda: [tuple(t.x) for t in form.figures[0].data if "your chain" in (t.name or "")]  # noqa: E731
    assert marker() == [(4, 4)]
    form.controls["n_ops"].value = 11
    assert marker() == [(11, 11)]
    form.controls["n_ops"].value = 32  # past the figure's 16 ops: the curves reach it
    assert marker() == [(32, 32)] and max(form.figures[0].data[0].x) >= 32


def test_peak_calculator_answers_every_gpu_it_offers_with_a_number_or_the_reason():
    form = _form("tensor_cores", "peak_calculator")
    for gpu in form.controls["gpu"].options:
        form.controls["gpu"].value = gpu
        assert "Invalid input" not in form.output.value, gpu
    form.controls["gpu"].value = "B200"
    assert "n/a:" in form.output.value and "SM count" in form.output.value


def test_readouts_never_print_python_e_notation():
    from widgets.ui import memory_hierarchy as mh
    from widgets.ui.accuracy import _with_unit
    from widgets.units import KiB, fmt_bytes, fmt_rate

    assert "e+" not in mh.inflight_summary("L40S", 1200)  # was "(1.01e+03 KiB over 142 SMs)"
    assert fmt_bytes(1010 * KiB) == "0.986 MiB" and fmt_rate(999.7e3) == "1 MB/s"
    assert _with_unit(4.8e12, "B/s") == "4.8 TB/s" and _with_unit(0.00179, "s") == "1.79 ms"
    assert _with_unit(13660.0, "GFLOP/s") == "13.66 TFLOP/s"  # the kernels rows (reader check r10: 1.366e+04 GFLOP/s)


# --- error sentences in the form's words (reader review jupyterlab #9) ---------------------------
def _visible_error(form) -> str:
    """The error sentence as the reader sees it (tags and the tooltip stripped), or ''."""
    import html as _html
    import re

    text = _html.unescape(re.sub(r"<[^>]+>", " ", form.output.value))
    return text.split("Invalid input:", 1)[1].strip() if "Invalid input:" in text else ""


class _Control:
    def __init__(self, description=""):
        self.description = description


def test_form_sentence_names_the_control_not_the_model_parameter():
    from widgets.ui._core import form_sentence

    c = {"micro_batch": _Control("Micro-batch"), "latency_us": _Control("alpha [µs]"), "cycles": _Control("cycles/path"),
         "n": _Control("ranks n"), "dtype": _Control("inputs"), "bare": _Control()}
    names = {"latency_s": ("latency_us", 1e-6), "cost_per_path": "cycles", "grad_bytes": "gradient bytes"}
    assert form_sentence("micro_batch must be an integer in [1, 4096], got 0", c) == "“Micro-batch” must be an integer in [1, 4096], got 0"
    # a converted unit: the numbers go back to the control's unit (was "got -4e-07" for a box in µs)
    assert form_sentence("latency_s must be >= 0, got -4e-07", c, names) == "“alpha [µs]” must be >= 0, got -0.4"
    assert form_sentence("latency_s must be in [0, 0.001] s, got 2", c, names) == "“alpha [µs]” must be in [0, 1000], got 2e+06"
    assert form_sentence("cost_per_path[1] must be > 0, got 0.0", c, names) == "“cycles/path” entry 2 must be > 0, got 0.0"
    assert form_sentence("grad_bytes must be <= 2**60 B (1 EiB), got 2e+21", c, names).startswith("“gradient bytes” must")
    # plain words only as the subject or before '='; quoted values and prose are left alone
    assert form_sentence("n must be an integer in [1, 8], got 0", c) == "“ranks n” must be an integer in [1, 8], got 0"
    assert form_sentence("step must be at most 2(n-1) for n = 4", c) == "step must be at most 2(n-1) for “ranks n” = 4"
    assert form_sentence("sums: fp8 only, got dtype='bf16'", c) == "sums: fp8 only, got “inputs”='bf16'"
    assert form_sentence("gpu must be one of 'micro_batch'; got 'x'", c) == "gpu must be one of 'micro_batch'; got 'x'"
    assert form_sentence("bare must be > 0, got -1", c) == "bare must be > 0, got -1"  # no label: the name stays


def test_live_form_error_names_the_control_and_keeps_the_models_words_in_the_tooltip():
    import ipywidgets as w

    from widgets import _check
    from widgets.ui import live_form

    form = live_form(lambda micro_batch: _check.integer("micro_batch", micro_batch, minimum=1),
                     {"micro_batch": w.IntText(value=1, description="Micro-batch")}, str)
    form.controls["micro_batch"].value = 0
    assert _visible_error(form).startswith("“Micro-batch” must be an integer in [1, ")
    assert "micro_batch" not in _visible_error(form)
    assert 'title="the model&#x27;s words: micro_batch must be' in form.output.value


# Every calculator with a free-entry box, and the few cross-control errors a reader can reach:
# whatever the model says, the form names what is on the screen (no snake_case parameter, and a
# subject that is one of the form's labels).
BAD_ENTRIES = {"Text": ("1, 0", "-1, 5", "5"), "FloatText": (0, -1, 1e12), "IntText": (0, -1)}
COMBOS = [
    ("serving", "memory_calculator", (("model", "custom"), ("kv_heads", 64))),
    ("serving", "latency_calculator", (("tp", 2), ("gpu", "L4"))),
    ("tensor_cores", "precision_calculator", (("dtype", "bf16"), ("accumulate", "Hopper fp8, fast"))),
    ("collectives", "collective_time_calculator", (("latency_us", 1e12),)),  # the crossover passes 1 EiB
]


def _check_sentence(form, where):
    import re

    s = _visible_error(form)
    if not s:
        return 0
    unquoted = re.sub(r"“[^”]*”|'[^']*'", "", s)
    assert not re.search(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b", unquoted), f"{where}: {s!r} names a model parameter"
    subject = s.split(" must ", 1)[0] if " must " in s else ""
    if subject.startswith("“"):
        labels = {getattr(c, "description", "") for c in form.controls.values()}
        label = subject[1:].split("”", 1)[0]
        assert label in labels or " " in label, f"{where}: {s!r}: {label!r} is not a control of the form"
    return 1


@pytest.mark.parametrize("mod, name", [(m, n) for m, n in CALCULATORS if n in {
    "divergence_calculator", "gemm_calculator", "precision_calculator", "busbw_calculator", "collective_time_calculator",
    "dp_step_calculator", "time_calculator"}])
def test_error_sentences_name_the_forms_controls(mod, name):
    import ipywidgets as w

    form = _form(mod, name)
    errors = 0
    for key, c in form.controls.items():
        kind = type(c).__name__
        if kind not in BAD_ENTRIES or isinstance(c, (w.BoundedIntText, w.BoundedFloatText)):
            continue
        good = c.value
        for bad in BAD_ENTRIES[kind]:
            c.value = bad
            errors += _check_sentence(form, f"{mod}.{name} {key}={bad!r}")
        c.value = good
    assert errors, f"{mod}.{name}: no bad entry was refused, so nothing was checked"


@pytest.mark.parametrize("mod, name, moves", COMBOS)
def test_cross_control_errors_name_the_forms_controls(mod, name, moves):
    form = _form(mod, name)
    for key, value in moves:
        c = form.controls[key]
        c.value = value
    assert _check_sentence(form, f"{mod}.{name} {moves}") == 1, f"{mod}.{name}: {moves} shows no error"


def test_latency_form_says_when_the_model_does_not_fit():
    """Reader review r6 #12: Llama-3.1-405B on one H200 got latencies with no word that its 752 GiB of
    bf16 weights cannot be on a 140 GiB GPU; the memory form above says it does not fit."""
    form = _form("serving", "latency_calculator")
    assert "fits in memory?" in form.output.value and "NO:" not in form.output.value  # Llama-3-8B, batch 32, 1,280 tokens on one H200 fits
    form.controls["model"].value = "Llama-3.1-405B"
    assert "NO:" in form.output.value and "short" in form.output.value
    assert "does NOT fit" in form.figures[0].layout.title.subtitle.text
    form.controls["tp"].value = 8  # 8 x 140 GiB hold the 405B's bf16 weights and this batch's KV cache
    assert "NO:" not in form.output.value


def test_tile_form_gives_no_attainable_rate_to_a_tile_that_cannot_launch():
    """Reader review r6 #10: 8 stages of a 128x256x64 bf16 tile need 384 KiB of shared memory (an
    H200 SM has 227 KiB for a block), yet the form said "attainable 710 TFLOP/s"."""
    form = _form("tensor_cores", "tile_calculator")
    assert "cannot launch" not in form.output.value and "does NOT fit" not in form.figures[0].layout.title.subtitle.text
    form.controls["stages"].value = 8
    assert "none: the tile does not fit, it cannot launch" in form.output.value
    assert form.figures[0].layout.title.subtitle.text.startswith("would be ")


def test_dp_step_form_says_when_the_bucket_is_capped_and_plots_gib():
    """Reader review r6 #6: bucket slider at 8,192 MiB, title "bucket 2.42 GiB", axis in GB."""
    form = _form("collectives", "dp_step_calculator")
    assert "capped" not in form.figures[0].layout.title.text
    assert form.figures[0].layout.yaxis.title.text == "gradient [GiB]"
    c = form.controls["bucket_mib"]
    c.value = c.options[-1][1]  # the slider's end (7.43 GiB: 25 MiB times a whole number of quarter octaves)
    assert form.figures[0].layout.title.text.replace("<br>", " ").endswith("(capped: the whole gradient)")  # wrapped for a phone
    assert max(form.figures[0].data[0].y) == pytest.approx(1.3e9 * 2 / 2**30)  # 1.3e9 bf16 gradients, in GiB
