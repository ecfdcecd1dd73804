"""The SIMT chapter's figures as a reader sees them (review of the built chapter): labels that land
on the plot, legends and subtitles that name what is drawn, the model drawn where it bends, and
speed-ups written as the book writes them (3 significant figures, ×)."""

import re

import numpy as np
import pytest

from widgets.experiments import simt_warp as sw
from widgets.experiments.harness import load_reference
from widgets.experiments.simt import amdahl_predictions
from widgets.hardware import get_gpu
from widgets.models import simt as m
from widgets.ui import simt as ui

A_DIGIT_THEN_X = re.compile(r"\dx\b")  # "1.9x", "2x slower": the book writes ×


@pytest.fixture(scope="module")
def record():
    return load_reference("simt")["results"]


@pytest.fixture(scope="module")
def reductions(record):
    return sw.Reductions.from_record(record["reductions"])


def _frames(fig):
    return list(fig.frames)


# --------------------------------------------------------------------------------------------
# 1. Reduction: bytes read per second
# --------------------------------------------------------------------------------------------
def test_reduction_copy_label_lands_on_the_log_axis(reductions):
    """An annotation's y on a log axis is log10 of the value (plotly's rule): the raw 4,123 GB/s put
    the label at 10^4123, off the plot, and plotly.js dropped it."""
    fig = ui.reduction_plot(reductions)
    assert fig.layout.yaxis.type == "log"
    copy_gb_s = reductions.copy.bytes_per_s / 1e9
    (label,) = [a for a in fig.layout.annotations if a.text == "copy: bytes moved per s"]
    assert label.yref == "y" and label.y == pytest.approx(np.log10(copy_gb_s))
    bars = np.asarray(fig.data[0].y, dtype=float)
    assert bars.min() / 10 < 10 ** label.y < bars.max() * 10  # among the bars, not decades away
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == pytest.approx(copy_gb_s)  # a shape's y is the data value


def test_reduction_subtitle_names_each_mark_as_drawn(reductions):
    """The subtitle said "dashes: the model" over short solid ticks, and the only dashed line was
    the copy's rate: the default readout names each mark, and each mark is drawn as it says."""
    fig = ui.reduction_plot(reductions)
    sub = fig.layout.title.subtitle.text.replace("<br>", " ")
    assert sub == ui.REDUCTION_READOUT
    bars, model = fig.data
    assert bars.type == "bar" and "bars: measured" in sub
    assert model.marker.symbol.startswith("line-ew") and "ticks: the model" in sub  # a short horizontal tick per bar
    assert fig.layout.shapes[0].line.dash == "dot" and "dotted line: the copy's rate" in sub
    assert "dash" not in sub  # nothing dashed is drawn, so nothing dashed is named
    assert all(s.line.dash != "dash" for s in fig.layout.shapes) and model.line.dash is None


# --------------------------------------------------------------------------------------------
# 2. Amdahl: measured and the law, with the ceiling 1/(1 - p)
# --------------------------------------------------------------------------------------------
def test_amdahl_plot_draws_the_ceiling_dotted(record):
    """The notebook's call, unchanged: ``ratio_plot(amdahl_series(record, label), ...)`` draws the
    law's ceiling 1/(1 − p) (p as the comparison table takes it) as a dotted line, labelled."""
    import copy

    am = record["amdahl"]
    series = ui.amdahl_series(am, "H200 (SMs)")
    fig = ui.ratio_plot(series, "workers", "speed-up of a whole step", title="Amdahl: measured and the law",
                        readout="dashed: the law with p from the one-worker steps' parts (calibrated)")
    ceiling = amdahl_predictions(copy.deepcopy(am))["ceiling"]
    (line,) = [t for t in fig.data if "ceiling" in t.name]
    assert line.name == "H200 (SMs): ceiling 1/(1 − p)" and line.line.dash == "dot" and line.mode == "lines"
    assert list(line.y) == pytest.approx([ceiling, ceiling])
    workers = [p["workers"] for p in am["points"]]
    assert list(line.x) == [min(workers), max(workers)]
    # the ceiling is above every measured and predicted speed-up: the curve bends toward it
    assert all(max(t.y) < ceiling for t in fig.data if t is not line)
    # measured and predicted drawn as before
    styles = {t.name: (t.mode, t.line.dash) for t in fig.data}
    assert styles["H200 (SMs): measured"] == ("lines+markers", None) and styles["H200 (SMs): model (calibrated)"] == ("lines", "dash")


def test_amdahl_series_without_a_ceiling():
    """A result without the one-worker steps' parts (or with no serial part: p = 1) has no ceiling
    series: the series stay the measured and predicted ones."""
    bare = {"points": [dict(workers=1, speedup=1.0, predicted_speedup=1.0), dict(workers=2, speedup=1.8, predicted_speedup=1.9)]}
    assert list(ui.amdahl_series(bare, "Y")) == ["Y: measured", "Y: model (calibrated)"]
    no_serial = {"points": [dict(workers=1, time_s=1.0, serial_s=0.0, parallel_s=1.0, speedup=1.0, predicted_speedup=1.0),
                            dict(workers=2, time_s=0.5, serial_s=0.0, parallel_s=0.5, speedup=2.0, predicted_speedup=2.0)]}
    assert list(ui.amdahl_series(no_serial, "Y")) == ["Y: measured", "Y: model (calibrated)"]


# --------------------------------------------------------------------------------------------
# 3. The Amdahl comparison table: 3 significant figures, ×
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, text", [(1.894, "1.89×"), (2.0, "2.00×"), (1.9667, "1.97×"), (33.02, "33.0×"),
                                         (126.4, "126×"), (9.996, "10.0×"), (0.5, "0.500×")])
def test_fmt_speedup(value, text):
    assert ui.fmt_speedup(value) == text


def test_amdahl_compare_rows_three_figures_and_times_sign():
    """Hand-derived: one worker takes 1 s (0.03 s serial, 0.97 s parallel: p = 0.97); two take
    0.528 s. Measured 1 / 0.528 = 1.894; the law 1 / (0.03 + 0.97 / 2) = 1 / 0.515 = 1.942;
    measured / law 0.975; the ceiling 1 / 0.03 = 33.3. Two figures wrote "1.9x | 1.9x", as if the
    law were exact."""
    rec = {"points": [dict(workers=1, time_s=1.0, serial_s=0.03, parallel_s=0.97),
                      dict(workers=2, time_s=0.528, serial_s=0.03, parallel_s=0.498)]}
    rows = ui.amdahl_compare_rows(rec, rec, workers=(2,))
    speed, ceiling = rows
    assert (speed["reference"], speed["model"], speed["ratio"], speed["here"]) == ("1.89×", "1.94×", "0.98", "1.89×")
    assert ceiling["reference"] == "33.3×" and ceiling["quantity"].startswith("ceiling 1/(1 − p)")
    assert not any(A_DIGIT_THEN_X.search(str(v)) for row in rows for v in row.values())


# --------------------------------------------------------------------------------------------
# 4. Same-address atomics: the model on a dense grid, a short axis title
# --------------------------------------------------------------------------------------------
def test_contention_model_drawn_where_it_bends():
    """min(k x rate_one, cap) bends at k = cap / rate_one (162 here), between the measured 32 and
    4,096: the line is the model on a dense grid of k, so it bends there instead of running straight
    between the measured counts."""
    pts = tuple(sw.ContentionPoint(k, 1000, 1.0, r, True) for k, r in ((1, 5e8), (4, 1.9e9), (32, 1.2e10), (4096, 8e10), (65536, 8.1e10)))
    res = sw.Reductions(n_elems=1, nbytes=4, device="t", simulated=False, contention=sw.Contention(pts))
    fig = ui.contention_plot(res)
    model, measured = fig.data
    assert list(measured.x) == [p.addresses for p in pts]  # the measurements as before
    x, y = np.asarray(model.x), np.asarray(model.y)
    assert x[0] == 1 and x[-1] == 65536 and np.all(np.diff(x) > 0) and len(x) > 100
    assert list(y) == [m.atomic_throughput_per_s(int(k), 5e8, 8.1e10) for k in x]  # the model function itself
    bend = x[np.argmax(y >= 8.1e10)]  # the first k at the cap
    assert 162 <= bend <= 162 * 2 ** (1 / 8)
    assert np.sum((x > 32) & (x < 4096)) > 50
    assert set(measured.x) <= set(x)  # through every measured count


def test_contention_axis_title_fits_a_phone(reductions):
    """"addresses the atomics are spread over" (37 characters) was clipped on a 390-px phone."""
    fig = ui.contention_plot(reductions)
    assert len(fig.layout.xaxis.title.text) <= 24
    assert len(fig.data[0].x) > len(fig.data[1].x)  # and the recorded sweep's model is dense too


# --------------------------------------------------------------------------------------------
# 5. The Amdahl calculator's legend: SMs or CUs as the catalog says
# --------------------------------------------------------------------------------------------
def test_amdahl_figure_legend_unit_matches_the_dropdown():
    fig = ui.amdahl_figure((0.9, 0.99))
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert "MI300X (304 CUs)" in labels
    for f in _frames(fig):
        ci = int(f.name.split(":")[0])
        gpu = ui.AMDAHL_GPUS[ci]
        unit = labels[ci].rsplit(" ", 1)[1].rstrip(")")
        assert f.data[3].name == f"{gpu}: {get_gpu(gpu).sms} {unit}"
        assert unit == ("CUs" if get_gpu(gpu).vendor == "AMD" else "SMs")
    mi = ui.AMDAHL_GPUS.index("MI300X")
    assert {f.data[3].name for f in _frames(fig) if f.name.startswith(f"{mi}:")} == {"MI300X: 304 CUs"}


# --------------------------------------------------------------------------------------------
# 6. Divergence: "no slowdown" at one path; × in this file's titles and tables
# --------------------------------------------------------------------------------------------
def test_divergence_title_at_one_path():
    one = m.warp_divergence([32], [100])
    assert ui.divergence_title(one) == "1 path: no slowdown"
    two = m.warp_divergence([16, 16], [100, 100])
    assert ui.divergence_title(two) == "2 paths: 2× slower"
    fig = ui.divergence_figure()
    titles = {f.layout.title.text for f in _frames(fig)}
    assert {t for t in titles if t.startswith("1 path:")} == {"1 path: no slowdown"}


def test_no_speedup_written_with_an_x():
    """The static figures' titles, readouts and dropdowns, and the Amdahl table, write × (as the
    book's accuracy ledger does), never "2x"."""
    figs = [ui.divergence_figure(), ui.amdahl_figure((0.5, 0.95, 1.0)), ui.overlap_figure()]
    for fig in figs:
        texts = [f.layout.title.text for f in _frames(fig)] + [f.layout.title.subtitle.text for f in _frames(fig)]
        texts += [b.label for menu in fig.layout.updatemenus for b in menu.buttons]
        assert not [t for t in texts if t and A_DIGIT_THEN_X.search(t)]
    assert ui.overlap_readout(4e-3, 4e-3, 8).endswith("2.40× (at most 3.00×)")
    assert "×" in ui.amdahl_readout(0.95) and not A_DIGIT_THEN_X.search(ui.amdahl_readout(0.95))


def test_divergence_calculator_slowdown_row():
    box = ui.divergence_calculator()
    box.controls["lanes"].value = "32"
    box.controls["cycles"].value = "100"
    text = " ".join(item for item in box.shown if isinstance(item, str))
    assert "none (1×)" in text and not A_DIGIT_THEN_X.search(text)
    assert box.figures[0].layout.title.text == "1 path: no slowdown"
    box.controls["lanes"].value = "8, 24"
    box.controls["cycles"].value = "400, 100"
    assert "1.25×" in " ".join(item for item in box.shown if isinstance(item, str))


# --------------------------------------------------------------------------------------------
# 7. Same-address atomics: ticks a reader can read the cap against
# --------------------------------------------------------------------------------------------
def test_contention_y_axis_has_a_tick_per_decade_and_the_cap_labelled(reductions):
    """Reader check r18, finding 9: the y axis showed only "1G" and "10G" under a range that reached about
    97G, so the model's cap (62.4G per s) and the top two points had no tick to be read against. A tick
    at every decade the data reaches, the axis up to the next decade, and the cap labelled at its level."""
    fig = ui.contention_plot(reductions)
    model, measured = fig.data
    ys = [p.atomics_per_s for p in reductions.contention.points]
    cap = max(ys)
    lo, hi = fig.layout.yaxis.range
    assert lo <= np.log10(min(ys)) and np.log10(cap) <= hi  # every measurement on the plot
    assert all(lo <= np.log10(v) <= hi for v in model.y)  # and the model
    shown = [t for t in fig.layout.yaxis.tickvals if lo <= np.log10(t) <= hi]
    assert shown == [10.0 ** k for k in range(int(np.ceil(lo)), int(np.floor(hi)) + 1)] and len(shown) >= 3
    assert shown[-1] > cap  # a tick above the cap: 100G, not only 1G and 10G under it
    (label,) = [a for a in fig.layout.annotations if a.text.startswith("cap ")]
    assert label.text == f"cap {cap / 1e9:.3g}G/s" and label.yref == "y" and label.y == pytest.approx(np.log10(cap))
    assert len(label.text) <= 12  # it ends before the model's bend on a 358-px phone plot


# --------------------------------------------------------------------------------------------
# 8. Launch overhead: ten kernels, eager and from a graph, drawn from the timeline's means
# --------------------------------------------------------------------------------------------
def test_launch_timeline_is_drawn_from_the_records_means_inside_the_axes(record):
    """Reader check r18, finding 5: a two-row timeline, eager against graph, ten kernels each with the gaps
    between them. The record keeps the timeline's sums (not each kernel's span), so every kernel is drawn
    at the mean kernel time and every gap at the mean gap, and the subtitle says it is not a trace."""
    tl = record["launch_overhead"]["kernel_bound"]["timeline"]
    fig = ui.launch_timeline_plot(tl)
    kernels, gaps = fig.data
    assert (kernels.name, gaps.name) == ("kernel", "gap between kernels") and fig.layout.showlegend
    assert kernels.orientation == gaps.orientation == "h"
    assert set(kernels.y) == set(gaps.y) == {"eager", "graph"}
    n = ui.LAUNCH_TIMELINE_KERNELS
    for row in ("eager", "graph"):
        part = tl[row]
        k = [x for x, y in zip(kernels.x, kernels.y) if y == row]
        g = [x for x, y in zip(gaps.x, gaps.y) if y == row]
        assert len(k) == n and len(g) == n - 1
        assert k == pytest.approx([part["kernel_sum_s"] / part["n"] * 1e6] * n)  # µs, the mean kernel
        assert g == pytest.approx([part["gap_sum_s"] / (part["n"] - 1) * 1e6] * (n - 1))  # the mean gap
        # kernel, gap, kernel...: each gap starts where its kernel ends, the next kernel where the gap ends
        kb = [b for b, y in zip(kernels.base, kernels.y) if y == row]
        gb = [b for b, y in zip(gaps.base, gaps.y) if y == row]
        assert gb == pytest.approx([a + x for a, x in zip(kb, k)][:-1])
        assert kb[1:] == pytest.approx([a + x for a, x in zip(gb, g)])
    # the eager row is longer by the gaps' difference, the graph's gaps are the shorter
    ends = {row: max(b + x for b, x, y in zip(kernels.base, kernels.x, kernels.y) if y == row) for row in ("eager", "graph")}
    assert ends["eager"] > ends["graph"]
    lo, hi = fig.layout.xaxis.range
    assert lo <= 0 and max(ends.values()) <= hi <= 1.1 * max(ends.values())  # every bar inside the axis, little room wasted
    assert fig.layout.xaxis.title.text and "µs" in fig.layout.xaxis.title.text
    sub = fig.layout.title.subtitle.text.replace("<br>", " ")
    assert "means, not a trace" in sub and sub == ui.launch_timeline_readout(tl)
    assert "33.3 µs" in sub and "2.05 µs" in sub and "268 ns" in sub  # the record's means, as the chapter prints them


def test_launch_timeline_refuses_what_is_not_a_timeline():
    good = {"n": 3, "kernel_sum_s": 3e-5, "gap_sum_s": 2e-6}
    fig = ui.launch_timeline_plot({"eager": good, "graph": dict(good, gap_sum_s=2e-7)}, n_kernels=3)
    assert len(fig.data[0].x) == 6 and len(fig.data[1].x) == 4
    for bad in (None, {}, {"eager": good}, {"eager": good, "graph": dict(good, n=1)}, {"eager": good, "graph": {"n": 3}}):
        with pytest.raises(ValueError, match="timeline"):
            ui.launch_timeline_plot(bad)
    with pytest.raises(ValueError, match="n_kernels"):
        ui.launch_timeline_plot({"eager": good, "graph": good}, n_kernels=0)


def test_occupancy_readout_writes_times():
    """The occupancy calculator's subtitle said "128 threads x 37 regs": the book writes ×."""
    text = ui.occupancy_readout(m.occupancy(128, 37, 0, "sm_90"))
    assert text.startswith("sm_90: 128 threads × 37 regs, ") and " x " not in text
