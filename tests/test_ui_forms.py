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

import pytest

pytest.importorskip("ipywidgets")

MODULES = ("memory_hierarchy", "simt", "tensor_cores", "collectives", "serving", "training_memory")


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


@pytest.mark.parametrize("mod, name", CALCULATORS)
def test_live_figures_carry_the_readout_in_the_title_text_not_a_subtitle(mod, name):
    form = _form(mod, name)
    for fw in form.figures:
        assert not fw.layout.title.subtitle.text, f"{mod}.{name}: subtitle drawn over the title in JupyterLab"


def test_readouts_never_print_python_e_notation():
    from widgets.ui import memory_hierarchy as mh
    from widgets.ui.accuracy import _with_unit
    from widgets.units import KiB, fmt_bytes, fmt_rate

    assert "e+" not in mh.inflight_summary("L40S", 1200)  # was "(1.01e+03 KiB over 142 SMs)"
    assert fmt_bytes(1010 * KiB) == "0.986 MiB" and fmt_rate(999.7e3) == "1 MB/s"
    assert _with_unit(4.8e12, "B/s") == "4.8 TB/s" and _with_unit(0.00179, "s") == "1.79 ms"
