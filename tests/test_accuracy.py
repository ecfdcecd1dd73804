"""The accuracy ledger (book/accuracy.ipynb): rows, labels, and the committed records."""

import copy
import html
import math
import re

import pytest

from widgets import accuracy
from widgets.accuracy import Row


def _row(**kw):
    base = dict(topic="t", quantity="q", inputs="i", predicted=2.0, measured=1.5, unit="s", label="prediction", device="d")
    base.update(kw)
    return Row(**base)


def test_ratio_is_measured_over_predicted():
    assert _row().ratio == pytest.approx(0.75)
    assert _row(predicted=0.0, measured=1.0).ratio == math.inf


@pytest.mark.parametrize("bad", [{"label": "guess"}, {"predicted": float("nan")}, {"measured": float("inf")},
                                 {"measured": True}, {"predicted": "1"}])  # fmt: skip
def test_row_rejects_bad_fields(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        _row(**bad)


def test_within_is_symmetric_about_one():
    assert accuracy.within(_row(measured=2.5), 0.25) and not accuracy.within(_row(measured=2.6), 0.25)
    assert accuracy.within(_row(measured=1.5), 0.25) and not accuracy.within(_row(measured=1.4), 0.25)
    with pytest.raises(ValueError, match="tolerance"):
        accuracy.within(_row(), 0)


def test_summary_counts_labels_and_only_predictions_toward_the_target():
    rows = [_row(), _row(label="fit", measured=100.0), _row(measured=1.0), _row(label="calibrated", measured=9.0)]
    s = accuracy.summary(rows)
    assert s["by_label"] == {"prediction": 2, "calibrated": 1, "fit": 1}
    assert (s["predictions"], s["within"]) == (2, 1)  # 0.75 is inside 25%; 0.5 is not; the fit does not count
    assert [r.measured for r in s["outside"]] == [1.0]


def test_every_committed_record_yields_labelled_rows():
    """The page's promise: >= 25 labelled comparisons, recomputed from the records by today's models."""
    rows = accuracy.all_rows()
    assert len(rows) >= 25
    topics = {r.topic for r in rows}
    assert {"memory_hierarchy", "simt", "tensor_cores", "collectives", "serving"} <= topics
    for r in rows:
        assert r.label in accuracy.LABELS and r.inputs and r.unit and r.device
        assert math.isfinite(r.ratio) and r.ratio > 0


def test_every_topic_has_at_least_one_real_prediction():
    rows = accuracy.all_rows()
    for topic in {r.topic for r in rows}:
        assert any(r.label == "prediction" for r in rows if r.topic == topic), topic


def test_rank_agreement_hand_derived():
    """Spearman's rho by hand: ranks (1,2,3,4) against (2,1,4,3): d^2 = 1+1+1+1 = 4, rho = 1 - 6*4/(4*15) = 0.6;
    ties share their average rank; the model's tied first choices are all reported."""
    from widgets.accuracy import rank_agreement

    r = rank_agreement([4, 3, 2, 1], [30, 40, 10, 20])
    assert r.rho == pytest.approx(0.6) and r.top_measured_ranks == (2,) and r.last_measured_rank == 3
    t = rank_agreement([5, 5, 1], [1, 3, 2])
    assert t.top_measured_ranks == (1, 3) and t.last_measured_rank == 2
    assert rank_agreement([1.0, 0.995, 0.5], [1, 2, 3], rel_tie=0.01).top_measured_ranks == (2, 3)
    for bad in (([1, 2], [1, 2]), ([1, 2, 3], [1, 2]), ([1, 2, float("nan")], [1, 2, 3])):
        with pytest.raises(ValueError):
            rank_agreement(*bad)


def test_ratio_figure_draws_one_band_per_chapter_with_every_comparison_in_it():
    """The page's figure: a band per chapter (its tick names it with its count), every row one point
    in its chapter's band and its label's lane; a chapter's many rows do not make the figure tall."""
    from widgets.ui import accuracy as ui

    rows = [_row(topic="simt", label="prediction", measured=1.0 + k / 100) for k in range(40)]
    rows += [_row(topic="serving", label="fit"), _row(topic="simt", label="calibrated"), _row(topic="serving", label="prediction")]
    fig = ui.ratio_figure(rows)
    assert [a.text for a in fig.layout.annotations] == ["<b>SIMT execution</b> (41)", "<b>Serving</b> (2)"]
    for k, a in enumerate(fig.layout.annotations):  # each name on its own line at its band's top, left of the points
        assert (a.xref, a.x, a.xanchor, a.yref, a.y, a.yanchor) == ("paper", 0, "left", "y", k - 0.5, "top")
        assert a.font.color is None  # the theme's text colour, light or dark
    # the names are not the y axis's tick labels: on a phone those took ~45% of the width from the points
    assert fig.layout.yaxis.showticklabels is False and fig.layout.margin.l <= 16
    points = [(t.name, x, y) for t in fig.data for x, y in zip(t.x, t.y)]
    assert len(points) == len(rows) and sorted(x for _, x, _ in points) == sorted(r.ratio for r in rows)
    for name, _, y in points:
        band = round(y)  # 0: simt, 1: serving
        assert abs(y - band - ui.LABEL_LANES[name]) <= ui.SUB_LANE * (ui.SUB_LANES - 1) / 2 + 1e-12
        assert ui.HEADER + 0.05 <= y - band <= 0.45  # below the band's name strip, above the next band (marker radius ~0.05)
    assert {round(y) for name, _, y in points if name == "fit"} == {1}  # the serving fit sits in serving's band
    assert len({y for name, _, y in points if name == "prediction" and round(y) == 0}) == ui.SUB_LANES  # spread, not stacked
    assert fig.layout.height == ui.ratio_figure(rows[:1] + rows[-3:]).layout.height  # 41 rows of simt: no taller
    with pytest.raises(ValueError, match="at least one"):
        ui.ratio_figure([])
    # the hover: the comparison's name in lines that fit a phone, its label, both values
    long = ui.ratio_figure([_row(topic="tensor_cores", quantity="a long name " * 6, label="fit")])
    name = long.data[0].customdata[0][0]
    assert name.startswith("Tensor cores: a long") and all(len(line) <= ui.HOVER_CHARS for line in name.split("<br>"))
    assert "<br>fit<br>%{customdata[1]}<br>%{customdata[2]}<br>" in long.data[0].hovertemplate
    # every hover line fits a phone, the values' lines too ("model 4.508% of the forward + backward time")
    for r in accuracy.all_rows():
        for cell in ui.ratio_figure([r]).data[0].customdata[0]:
            assert all(len(line) <= ui.HOVER_CHARS for line in cell.split("<br>") if " " in line), (r.quantity, cell)


def test_the_ledger_runs_in_the_books_chapter_order():
    from widgets.experiments import TOPICS

    topics = list(dict.fromkeys(r.topic for r in accuracy.all_rows()))
    assert topics == [t for t in TOPICS if t in topics] and len(topics) >= 6


def _chapter_title(topic: str) -> str:
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / f"{topic}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise AssertionError(f"chapters/{topic}.ipynb has no title")


def test_topic_names_are_the_chapters_own_titles():
    """One display name per chapter (figure bands, hovers, tables): its title as the book gives it, up to
    the colon, read from the chapter itself so the two cannot drift (reader check A4: "simt",
    "tensor_cores:")."""
    from widgets.experiments import TOPICS

    assert set(accuracy.TOPIC_NAMES) == set(TOPICS)
    for topic in TOPICS:
        title = _chapter_title(topic)
        assert title.split(":")[0] == accuracy.topic_name(topic), (topic, title)
    assert accuracy.topic_name("simt").startswith("SIMT ") and accuracy.topic_name("a_new_topic") == "a new topic"


def _cells(html: str, column: int) -> list[str]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", tr)[column] for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", html) if "<td" in tr]


def test_the_page_names_chapters_one_way_and_writes_powers_as_powers():
    """Over the committed ledger: every band, hover and table row names its chapter by its display name,
    and no label, input or note shows a caret ("bf16 GEMM 8191^3" reads 8191³; reader check A4, A5)."""
    from widgets.ui import accuracy as ui

    rows = accuracy.all_rows()
    names = set(accuracy.TOPIC_NAMES.values())
    assert any("^" in r.quantity for r in rows)  # the records' labels do carry carets: the page converts them
    fig = ui.ratio_figure(rows)
    for a in fig.layout.annotations:
        assert a.text.split("</b>")[0].removeprefix("<b>") in names
    for trace in fig.data:
        for hover in trace.customdata:
            assert hover[0].split(":")[0] in names and "^" not in hover[0] and "_" not in hover[0].split(":")[0]
    assert "8191³" in "".join(t.customdata[i][0].replace("<br>", " ") for t in fig.data for i in range(len(t.customdata)))
    table = ui.rows_tables(rows)
    assert "^" not in table and "8191³" in table
    assert set(re.findall(r"<h3[^>]*>(.*?)</h3>", table)) <= names and len(_cells(table, 0)) == len(rows)
    outside = accuracy.summary(rows)["outside"]
    assert outside and set(_cells(ui.outside_table(outside), 2)) <= names and "^" not in ui.outside_table(outside)
    assert ui.display_text("4 N d + 4 N^2; 8192^3; 2^-10") == "4 N d + 4 N²; 8192³; 2⁻¹⁰"


def test_every_value_shows_its_unit_and_fractions_read_as_percentages():
    """A dimensionless fraction ("-": the training chapter's recomputation overhead, the extra time over the
    step's) reads as a percentage, not "model 0.04508, measured 0.241" (reader check A5); no value is in
    Python's e-notation."""
    from widgets.ui import accuracy as ui

    assert ui._with_unit(0.04508, "-") == "4.508%" and ui._with_unit(0.241, "fraction") == "24.1%"
    assert ui._with_unit(0.045, "fraction of the step") == "4.5% of the step"
    assert ui._with_unit(2.864e-7, "relative error") == "2.864 × 10⁻⁷" and ui._with_unit(0.002346, "relative error") == "0.002346"
    assert ui._with_unit(35, "registers") == "35 registers" and ui._with_unit(8388608, "count") == "8,388,608"
    rows = accuracy.all_rows()
    def fraction(unit):
        return unit in ui.FRACTION_UNITS or unit.startswith("fraction of ")

    fractions = [r for r in rows if fraction(r.unit)]
    assert any("recomputation" in r.quantity and r.unit == "fraction of the forward + backward time" for r in fractions)
    table = ui.rows_tables(rows)
    for r in rows:
        for v in (ui._with_unit(r.predicted, r.unit), ui._with_unit(r.measured, r.unit)):
            assert "e-" not in v and "e+" not in v, (r.quantity, v)
            if fraction(r.unit):  # the table shows it over lines: "4.508% of the<br>forward +<br>backward time"
                assert "%" in v and "<br>".join(ui.value_cell(v)) in table, (r.quantity, v)


def _tables(page: str) -> list[tuple[str, str]]:
    """(heading, table) pairs of the ledger's HTML, in order."""
    return re.findall(r"<h3[^>]*>(.*?)</h3><div class=\"book-table-wrap\">(.*?)</table></div>", page, re.S)


def test_the_ledger_is_one_table_per_chapter_ratio_first_and_every_row_kept():
    """Reader check (1366 px): one table of every row was 1,609 px wide with the ratio at 1,295 px and the
    chapter's name on every row. Now one table per chapter under its name (an anchor to link to), the
    columns quantity | ratio | label | model | measured | inputs, the device in the caption, every row's
    values as before, in the ledger's order."""
    from widgets.ui import accuracy as ui

    rows = accuracy.all_rows()
    page = ui.rows_tables(rows)
    tables = _tables(page)
    topics = list(dict.fromkeys(r.topic for r in rows))
    assert [h for h, _ in tables] == [html.escape(accuracy.topic_name(t)) for t in topics]
    assert re.findall(r'<h3 id="([^"]+)"', page) == [ui.ledger_anchor(t) for t in topics] and ui.ledger_anchor("simt") == "ledger-simt"
    for topic, (_, t) in zip(topics, tables):
        sel = [r for r in rows if r.topic == topic]
        devices = {ui.display_text(r.device) for r in sel}
        heads = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", t)
        assert heads == list(ui.LEDGER_COLUMNS) + (["device"] if len(devices) > 1 else []), (topic, heads)
        assert heads[:3] == ["quantity", "ratio", "label"] and "chapter" not in heads
        caption = re.search(r'<span class="book-caption">(.*?)</span>', t).group(1)
        assert caption.startswith(f"{len(sel)} comparison"), caption
        assert (len(devices) == 1) == all(f"measured on {html.escape(d)}" in caption for d in devices), caption
        body = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", t) if "<td" in tr]
        assert len(body) == len(sel)
        for r, cells in zip(sel, body):  # every row's data, as it was, in its new place
            assert cells[0] == html.escape(ui.display_text(r.quantity)) and cells[1] == ui.ratio_text(r.ratio) and cells[2] == r.label
            assert cells[3].replace("<br>", " ") == html.escape(ui._with_unit(r.predicted, r.unit))
            assert cells[4].replace("<br>", " ") == html.escape(ui._with_unit(r.measured, r.unit))
            assert cells[5] == html.escape(ui.display_text(r.inputs))
        assert re.search(r'<td[^>]*class="book-prose"[^>]*>' + re.escape(body[0][5]) + "</td>", t)  # the inputs wrap (td.book-prose)
        assert 'class="book-table' in t and "book-stack" in t  # a card per row on a phone (widgets.book.table)
    # a chapter measured on two devices keeps a device column; a long value breaks into short lines
    two = ui.chapter_table([_row(topic="simt", device="NVIDIA H200"), _row(topic="simt", device="2 x NVIDIA H200")])
    assert re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", two)[-1] == "device" and "measured on" not in two
    assert re.search(r"<td[^>]*>2 × NVIDIA H200</td>", two)
    long = ui.value_cell("4.508% of the forward + backward time")
    assert " ".join(long) == "4.508% of the forward + backward time" and max(map(len, long)) <= ui.VALUE_LINE_CHARS < 37
    assert ui.value_cell("1.919 PFLOP/s") == "1.919 PFLOP/s"
    for bad in ([], [_row(topic="a"), _row(topic="b")]):
        with pytest.raises(ValueError):
            ui.chapter_table(bad)
    with pytest.raises(ValueError):
        ui.rows_tables([])


def test_the_outside_list_puts_the_quantity_and_its_ratio_first():
    from widgets.ui import accuracy as ui

    outside = accuracy.summary(accuracy.all_rows())["outside"]
    t = ui.outside_table(outside)
    assert re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", t) == ["quantity", "ratio", "chapter", "why"]
    assert _cells(t, 1) == [ui.ratio_text(r.ratio) for r in outside]
    # a reason counts in words that agree with their count: "1 wave", never "1 waves" (reader check)
    assert not any(re.search(r"(?<![\d.,])1 waves\b", r.note) for r in accuracy.all_rows())
    assert any(r.note == "1 wave" for r in outside if r.topic == "tensor_cores")


def test_the_labels_have_one_home_and_the_page_shows_it():
    """The labels' definitions live in widgets.accuracy.LABEL_RULES and the page shows those sentences
    (prose, never typed), with the line between them explicit: a prediction takes no measured speed, time or
    behaviour (datasheet, counting rules, the run's conditions); a calibrated comparison takes one from another,
    named benchmark; a fit takes the data compared (reader check: "measurements of something else" and "one
    constant measured on a different micro-benchmark" overlapped)."""
    import json
    from pathlib import Path

    assert tuple(accuracy.LABEL_RULES) == accuracy.LABELS
    rules = accuracy.LABEL_RULES
    assert "datasheet" in rules["prediction"] and "counting rules" in rules["prediction"] and "conditions set for the run" in rules["prediction"]
    assert "never a clock the GPU chose under the load compared" in rules["prediction"] and "power governor" in rules["fit"]
    assert "never a measured speed, time or behaviour" in rules["prediction"]
    assert "measured speed, time or behaviour" in rules["calibrated"] and "another, named" in rules["calibrated"]
    assert "never from the data compared" in rules["calibrated"] and "very data compared" in rules["fit"]
    nb = json.loads((Path(__file__).resolve().parents[1] / "book" / "accuracy.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"])
    for label in accuracy.LABELS:
        assert f"\n{label}\n: {{eval}}`prose.acc_rule_{label}`." in text, label
    assert "accuracy.LABEL_RULES" in text and "something else*" not in text


def test_the_simt_launch_and_reduction_rows_say_where_their_inputs_come_from():
    """Reader check: the launch rows' host time per launch read as circular ("from the tiny-kernel loop",
    or nothing); they now name the slope's two loops, the rounds and the turns, from the record's own fields.
    Sizes read as the book writes them elsewhere (fmt_bytes: "1 GiB", not "1024 MiB")."""
    from widgets.experiments import harness
    from widgets.experiments import simt as exp
    from widgets.units import fmt_bytes

    rec = harness.load_reference("simt")
    lo = rec["results"]["launch_overhead"]
    rows = exp.accuracy_rows(rec)
    launch = [r for r in rows if "launched eagerly" in r.quantity]
    assert len(launch) == 2
    source = (f"host time per launch: slope between separate loops of {lo['calibration_short_n_kernels']:,} and "
              f"{lo['calibration_n_kernels']:,} launches ({lo['rounds']} rounds, in turns)")
    for r in launch:
        assert source in r.inputs and "tiny-kernel loop" not in r.inputs, r.inputs
    assert launch[1].quantity == f"{lo['kernel_bound']['n_kernels']:,} add_ kernels on {fmt_bytes(lo['kernel_bound']['nbytes'])} launched eagerly"
    older = {k: v for k, v in lo.items() if k not in ("calibration_short_n_kernels", "rounds", "calibration_in_turns")}
    assert exp._host_per_launch_source(older) == f"host time per launch: a separate loop of {lo['calibration_n_kernels']:,} launches"
    reductions = [r for r in rows if r.quantity.startswith("reduction, ")]
    sizes = {v["bytes_read"] for v in rec["results"]["reductions"]["variants"].values() if isinstance(v, dict) and "bytes_read" in v}
    assert reductions and sizes
    for r in reductions:
        assert any(f": {fmt_bytes(b)}" in r.quantity for b in sizes), r.quantity
    assert any(": 1 GiB" in r.quantity for r in reductions) and not any("1024 MiB" in r.quantity for r in reductions)


def _simt_record():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parents[1] / "widgets" / "data" / "h200" / "simt.json").read_text())


def test_the_simt_issue_predictions_are_in_the_ledger_as_the_chapter_makes_them():
    """Reader check: two comparisons the SIMT chapter labels prediction were missing. Recomputed here from
    the committed H200 record with the chapter's own formulas (chapters/simt.ipynb, sections 2 and 5):

    - the divergent kernel's time per path, t(1) - fixed, against its SASS inner loop's instructions per
      iteration x iterations x warps / (SMs x 4 schedulers x the catalog's boost clock);
    - Amdahl's parallel part on one SM (the one-worker step's), against the spin kernel's SASS count x
      spin_iters x units x 32 warps (one 1,024-thread block) / (4 schedulers x the catalog's boost clock).

    The clock is the datasheet's (round 19: a clock read during the run compared is a measured behaviour,
    LABEL_RULES): a run whose NVML reading changes leaves the prediction where it was and only the note
    says what was read. A record without the SASS count gives no row. Outside the target, a row carries its reason for the page."""
    from widgets.experiments import simt as exp
    from widgets.hardware import catalog_name_for, get_gpu
    from widgets.models import simt as m

    rec = _simt_record()
    h200 = get_gpu(catalog_name_for(rec["provenance"]["gpu"]))
    rows = {r.quantity: r for r in exp.accuracy_rows(rec)}
    # section 2: "The prediction from that count and the boost clock alone: 157 µs per path, against 214 µs measured"
    d = rec["results"]["divergence"]
    lp, one = d["sass_inner_loop"], next(p for p in d["points"] if p["paths_taken"] == 1)
    clock = h200.boost_clock_hz
    sms, warps = d.get("sms") or h200.sms, d["threads"] // 32
    pred = m.issue_time_s(lp["instructions_per_iteration"], d["iters"], sms, warps, clock)
    assert pred == pytest.approx(lp["instructions_per_iteration"] * d["iters"] * warps / (sms * 4 * clock))  # by hand
    div = rows["time per path of the divergent kernel (one-path run less the no-work run)"]
    assert div.label == "prediction" and div.unit == "s"
    assert div.predicted == pytest.approx(pred, rel=1e-12) and div.measured == pytest.approx(one["time_s"] - d["fixed_time_s"], rel=1e-12)
    assert f"{lp['instructions_per_iteration']:g} instructions per iteration" in div.inputs and f"{clock / 1e6:,.0f} MHz" in div.inputs
    # section 5: "its inner loop holds N instructions per iteration, which predicts 161 ms (... measured over predicted 1.12)"
    a = rec["results"]["amdahl"]
    spin, one_worker = a["spin_sass_inner_loop"], a["points"][0]
    assert one_worker["workers"] == 1 and "1024-thread block" in a["worker"]
    pred_a = m.issue_time_s(spin["instructions_per_iteration"], a["spin_iters"] * a["units"], 1, 1024 // 32, h200.boost_clock_hz)
    am = rows["Amdahl's parallel part on one SM (median of the one-worker steps)"]
    assert am.label == "prediction" and am.predicted == pytest.approx(pred_a, rel=1e-12)
    assert am.measured == one_worker["parallel_s"] and am.ratio == pytest.approx(one_worker["parallel_s"] / pred_a)
    assert "boost clock" in am.inputs and "SASS" in am.inputs
    # the run's clock is no input of a prediction: read at half, the prediction stays and the note says it
    slow = copy.deepcopy(rec)
    slow["results"]["divergence"]["one_path_double_iters_sm_clock_mhz"] = clock / 2e6
    slow_row = next(r for r in exp.accuracy_rows(slow) if r.quantity == div.quantity)
    assert slow_row.predicted == pytest.approx(div.predicted) and f"{clock / 2e6:,.0f} MHz during the run" in slow_row.note
    # no SASS count recorded (no nvdisasm on the measuring machine): no row, nothing guessed
    bare = copy.deepcopy(rec)
    bare["results"]["divergence"]["sass_inner_loop"] = None
    bare["results"]["amdahl"]["spin_sass_inner_loop"] = None
    quantities = {r.quantity for r in exp.accuracy_rows(bare)}
    assert div.quantity not in quantities and am.quantity not in quantities
    # a prediction outside the target gives its reason on the page, as every such row does
    for r in (div, am):
        assert r.note.startswith("an issue floor"), r.note
    rows_all = accuracy.all_rows()
    outside = {r.quantity for r in accuracy.summary(rows_all)["outside"]}
    assert (div.quantity in outside) == (not accuracy.within(div)) and (am.quantity in outside) == (not accuracy.within(am))


# ---------------------------------------------------------------------------------------------
# Round 19: every topic's rows but simt's (another helper's) against LABEL_RULES, and their typography
# ---------------------------------------------------------------------------------------------
def _all_rows():
    return list(accuracy.all_rows())


# what a row's own strings must show for its label to be checkable against LABEL_RULES (audited row by row in
# round 19): a prediction's inputs name nothing measured or fitted; a calibrated row
# names the measurement it takes (and where from); a fit says why it is one
_MEASURED_WORDS = ("measured", "fitted", "timed", "same repeats", "calibrat", "plateau", "this sweep")
_CALIBRATED_WORDS = ("measured", "calibrat", "timed", "plateau", "experiment 1", "busbw", "Fasi", "DeepSeek",
                     "micro-benchmark", "slope between", "one-stream run")
_FIT_WORDS = ("fitted", "by construction", "same repeats", "from the ncu counters of this kernel", "chosen by hand",
              "corrected after", "same sweep")


def test_each_rows_inputs_name_what_makes_its_label():
    """A prediction whose inputs say a measured or fitted number went in, a calibrated row that names no
    measurement, or a fit that does not say why it is one, is a label the reader cannot check (the clock-rescaled
    tensor-core rows were fits whose strings named only a run condition, the NVML clock)."""
    bad = []
    for r in _all_rows():
        both = f"{r.inputs} | {r.note}"
        if r.label == "prediction" and any(w in r.inputs for w in _MEASURED_WORDS):
            bad.append((r.topic, r.quantity, r.label, r.inputs))
        if r.label == "calibrated" and not any(w in both for w in _CALIBRATED_WORDS):
            bad.append((r.topic, r.quantity, r.label, both))
        if r.label == "fit" and not any(w in both for w in _FIT_WORDS):
            bad.append((r.topic, r.quantity, r.label, both))
    assert not bad, bad


def test_the_ledger_writes_times_and_minus_signs():
    """Every quantity and inputs string a reader sees writes × for multiplication (sizes
    "2048×2048", factors "2 × the dense peak", "peak × wave efficiency") and − (U+2212) for minus, not ASCII x and
    -; identifiers (kernel names with underscores) and hyphenated words keep theirs."""
    bad = set()
    for r in _all_rows():
        for text in (r.quantity, r.inputs):
            words = " ".join(w for w in text.split() if "_" not in w)  # identifiers keep their x: sgemm_256x128_8x4
            if re.search(r"\dx(\d|\b)|(?<=[\w)]) x (?=[\w(])|(?<=[\w)]) - (?=[\w(])", words):
                bad.add((r.topic, text))
    assert not bad, sorted(bad)


# Places a chapter may still type a label's name: not a ledger row's label, each with the reason.
_TYPED_LABELS_OK = {
    ("memory_hierarchy", "58a6ee5f"): "the measured roofline's ridge (a GEMM's and a copy's rates): no ledger row",
    ("memory_hierarchy", "73c253bd"): "the labels' names, defined by LABEL_RULES' sentences beside them",
    ("simt", "03c82df4"): "the labels' names, each defined where the chapter opens",
    ("memory_hierarchy", "e4e90beb"): "the size sweep's model lines with simt's launch cost: no ledger row",
    ("collectives", "779ba219"): "the critical batch with the tensor-cores chapter's measured GEMM rate: no ledger row",
    ("collectives", "e8ae0d31"): "the table's three labels, defined for this chapter's rows",
    ("serving", "ea8c85e9"): "the speculative speed-ups from measured costs: projections, no ledger row",
    ("serving", "a30faec5"): "the same projections' table header: no ledger row",
    ("training_memory", "ee2e188d"): "the table's rows without a record (not measured yet): no ledger row to ask",
}
_TYPED_LABEL = re.compile(
    r"\*\*(prediction|calibrated|fit|Calibrated)\*\*"  # a label in bold
    r"|\blabell?ed \*?(prediction|calibrated|fit)\b"  # "labelled fit"
    r"|\b[Tt]he (prediction|calibrated|fit) rows?\b"  # "the calibrated rows add ..."
    r"|\bis a (fit|prediction), not\b"  # "that row is a fit, not a prediction"
    r"|label=\"(prediction|calibrated|fit)\""  # a comparison table's label
    r"|\((a )?(fit|prediction|calibrated)\)\""  # a caption's "(a fit)"
)


def test_chapters_quote_the_ledgers_labels_never_type_them():
    """Round 19: where a chapter says which label a ledger row carries, in its
    prose or a comparison table, the label comes from the row (a prose key, widgets.accuracy.label_of), so a
    relabelled row changes the text too (the tensor-cores chapter still called the clock-rescaled rows a fit, the
    kernels chapter its spread-of-the-mean row a prediction). The few typed label names left are listed, each with
    why it is no ledger row's label."""
    import json
    from pathlib import Path

    found = []
    for topic in accuracy.TOPIC_NAMES:
        nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / f"{topic}.ipynb").read_text())
        for cell in nb["cells"]:
            for m in _TYPED_LABEL.finditer("".join(cell["source"])):
                found.append((topic, cell.get("id"), m.group(0)))
    allowed = {(t, i): [m for tt, ii, m in found if (tt, ii) == (t, i)] for t, i in _TYPED_LABELS_OK}
    assert all(allowed.values()), [k for k, v in allowed.items() if not v]  # an entry left over: remove it
    assert len(allowed[("serving", "a30faec5")]) == 1  # the header only: the verification plot's label is the ledger's
    typed = [f for f in found if (f[0], f[1]) not in _TYPED_LABELS_OK]
    assert not typed, typed
