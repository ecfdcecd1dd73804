"""Static calculators keep their data on the plot in every state (reader review R-1).

Each frame of a ``grid_figure`` carries the axis ranges its own traces need. Checked twice: in
Python (every frame's range holds its data) and in headless Chromium, where every dropdown entry x
every slider step is applied through plotly.js's own button/step methods and the data is compared
with the axis range plotly.js actually shows.
"""

from __future__ import annotations

import math

import headless
import plotly.graph_objects as go
import pytest

from widgets.ui._core import frame_ranges, grid_figure


def _growing(choice, v):
    # data spans 1000x between frames, and the choices differ by 100x: one fixed range cannot hold it
    scale = {"small": 1.0, "large": 100.0}[choice]
    return (
        [go.Scatter(x=[0, v], y=[0, scale * v * v], name="a"), go.Bar(x=["p", "q"], y=[scale * v, scale], name="b", xaxis="x2", yaxis="y2")],
        f"{choice}", f"v = {v}",
    )


def _fig():
    return grid_figure(
        slider=("v", [1, 3, 10, 30], str),
        choices=("c", ["small", "large"], str),
        frame=_growing,
        layout=dict(yaxis=dict(domain=[0, 0.45], range=[0, 2]), yaxis2=dict(domain=[0.55, 1], anchor="x2"), xaxis2=dict(anchor="y2")),
    )


def _inside(values, rng, log=False):
    lo, hi = min(rng), max(rng)
    for v in values:
        if isinstance(v, (int, float)):
            if log:
                if v <= 0:
                    continue
                v = math.log10(v)
            if not lo - 1e-9 <= v <= hi + 1e-9:
                return False
    return True


def test_every_frame_and_dropdown_state_carries_ranges_that_hold_its_data():
    fig = _fig()
    assert len(fig.frames) == 8
    for fr in fig.frames:
        sc, bar = fr.data
        assert _inside(sc.y, fr.layout.yaxis.range), (fr.name, sc.y, fr.layout.yaxis.range)
        assert _inside(sc.x, fr.layout.xaxis.range)
        assert _inside([0, *bar.y], fr.layout.yaxis2.range)
    # a range the caller fixed is kept where the data fits it
    assert list(fig.frames[0].layout.yaxis.range) == [0, 2]
    # the dropdown sets the range of the state it shows
    for button, ci in zip(fig.layout.updatemenus[0].buttons, (0, 1)):
        upd = button.args[1]
        assert upd["yaxis.autorange"] is False
        assert _inside([{0: 1.0, 1: 100.0}[ci] * 1.0], upd["yaxis.range"])


def test_frame_ranges_on_log_axes_and_stacked_bars():
    traces = [go.Bar(x=[3.0], y=[0], orientation="h"), go.Bar(x=[5.0], y=[0], orientation="h")]
    r = frame_ranges(traces, {"barmode": "stack", "xaxis": {"range": [0, 4]}})
    assert r["xaxis"][1] >= 8.0 and r["xaxis"][0] == 0  # the stack's total, widened from 4
    assert "yaxis" not in r  # bar positions are left to plotly
    r = frame_ranges([go.Scatter(x=[1, 2], y=[0.5, 2000.0])], {"yaxis": {"type": "log", "range": [1, 3]}})
    assert r["yaxis"][0] <= math.log10(0.5) and r["yaxis"][1] >= math.log10(2000)


CHECK = """gd => { const fl = gd._fullLayout; const out = [];
  gd._fullData.forEach((t, i) => { if (t.visible === false || t.visible === 'legendonly') return;
    const xa = fl[(t.xaxis || 'x').replace('x', 'xaxis')], ya = fl[(t.yaxis || 'y').replace('y', 'yaxis')];
    for (const [arr, a, nm] of [[t.y, ya, 'y'], [t.x, xa, 'x']]) {
      if (!arr || !a || !a.range || a.type === 'category') continue;
      if (t.type === 'bar' && ((t.orientation === 'h') !== (nm === 'x'))) continue;
      const lo = Math.min(a.range[0], a.range[1]), hi = Math.max(a.range[0], a.range[1]), span = hi - lo;
      for (const v of Array.from(arr)) { if (typeof v !== 'number' || !isFinite(v)) continue;
        if (a.type === 'log' && v <= 0) continue;
        const vv = a.type === 'log' ? Math.log10(v) : v;
        if (vv > hi + 0.02 * span || vv < lo - 0.02 * span) { out.push(`trace ${i} ${nm}=${v} outside [${lo}, ${hi}]`); break; } } } });
  return out; }"""

APPLY_BUTTON = "([gd, bi]) => { const b = gd.layout.updatemenus[0].buttons[bi]; return Plotly[b.method](gd, ...b.args); }"
APPLY_STEP = """([gd, si]) => { const s = gd.layout.sliders.find(s => s.visible !== false) || gd.layout.sliders[0];
  const st = s.steps[Math.min(si, s.steps.length - 1)]; return Plotly[st.method](gd, ...st.args); }"""


# Every dropdown entry, each at the slider's first, middle and last step (steps: the slider positions
# to visit). Which ranges hold which data is checked for every state, in Python, by
# test_every_frame_and_dropdown_state_carries_ranges_that_hold_its_data; here, that plotly.js applies
# them as each entry and each step is chosen (every state of the fusion figure, 91, cost about 16 CPU
# s of Chromium per run on 2 cores: issue 13).
SAMPLED_STATES = f"""async ([gd, nButtons, steps]) => {{
  const check = {CHECK}, applyButton = {APPLY_BUTTON}, applyStep = {APPLY_STEP};
  const out = [];
  for (let bi = 0; bi < Math.max(nButtons, 1); bi++) {{
    if (nButtons) await applyButton([gd, bi]);
    for (const si of steps) {{
      await applyStep([gd, si]);
      await new Promise(r => setTimeout(r, 5));
      for (const x of check(gd)) out.push([[bi, si], x]);
    }}
  }}
  return out; }}"""


def _figures():
    from widgets.ui import memory_hierarchy as mh
    from widgets.ui import simt

    return {"synthetic": _fig(), "fusion": mh.fusion_figure(), "divergence": simt.divergence_figure()}


@pytest.mark.browser
@pytest.mark.skipif(not headless.CHROMIUM, reason=headless.MISSING)
@pytest.mark.parametrize("name", ["synthetic", "fusion", "divergence"])
def test_in_chromium_each_entry_at_three_slider_steps_keeps_the_data_inside_the_axes(name, tmp_path):
    from playwright.sync_api import sync_playwright

    fig = _figures()[name]
    page_path = tmp_path / f"{name}.html"
    fig.write_html(str(page_path), include_plotlyjs=True, full_html=True, div_id="gd", auto_play=False)
    with sync_playwright() as p:
        b = headless.launch(p)
        page = b.new_page(viewport={"width": 1000, "height": 800})
        page.goto(page_path.as_uri())
        page.wait_for_function("() => document.getElementById('gd') && document.getElementById('gd')._fullLayout")
        gd = page.locator("#gd").element_handle()
        problems = [("initial", x) for x in page.evaluate(CHECK, gd)]
        n_buttons = len(fig.layout.updatemenus[0].buttons) if fig.layout.updatemenus else 0
        n_steps = len(fig.layout.sliders[0].steps)
        steps = sorted({0, n_steps // 2, n_steps - 1})
        # the states in one call into the page (two round trips per state made this test 47 s on 2 cores)
        problems += [(tuple(state), x) for state, x in page.evaluate(SAMPLED_STATES, [gd, n_buttons, steps])]
        b.close()
    assert not problems, f"{len(problems)} states with data off the plot, e.g. {problems[:3]}"


OVERLAP = """() => { const box = s => { const e = document.querySelector(s); if (!e) return null;
  const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {legend: box('.legend'), label: box('.slider-label'), menu: box('.updatemenu-header'), fig: box('#gd')}; }"""


@pytest.mark.browser
@pytest.mark.skipif(not headless.CHROMIUM, reason=headless.MISSING)
def test_on_a_phone_the_slider_label_clears_a_wrapped_legend(tmp_path):
    """Reader review R-14: "micro-batch: 1" was printed over the legend on a 358-px plot; R-13: the
    dropdown of long entries ran past the plot's right edge."""
    from playwright.sync_api import sync_playwright

    from widgets.ui import simt, training_memory

    figs = {"budget": training_memory.budget_figure(), "ladder": training_memory.ladder_figure(),
            "divergence": simt.divergence_figure(), "synthetic": _fig()}
    bad = []
    with sync_playwright() as p:
        b = headless.launch(p)
        for name, fig in figs.items():
            fig.update_layout(width=358)
            path = tmp_path / f"{name}.html"
            fig.write_html(str(path), include_plotlyjs=True, div_id="gd", auto_play=False)
            page = b.new_page(viewport={"width": 390, "height": 844})
            page.goto(path.as_uri())
            page.wait_for_selector(".slider-label")
            r = page.evaluate(OVERLAP)
            leg, lab = r["legend"], r["label"]
            if leg and lab and not (leg[3] <= lab[1] or lab[3] <= leg[1] or leg[2] <= lab[0] or lab[2] <= leg[0]):
                bad.append((name, leg, lab))
            if r["menu"] and r["menu"][2] > r["fig"][2] + 1:  # review R-13: the menu's arrow was cut off
                bad.append((name, "menu", r["menu"], r["fig"]))
            page.close()
        b.close()
    assert not bad, f"slider label over the legend: {bad}"


def test_dropdown_menus_are_opaque():
    """Reader review R-12: an open list was see-through over the plot (plotly.js paints menus in the
    transparent paper colour unless told otherwise)."""
    menu = _fig().layout.updatemenus[0]
    assert menu.bgcolor and "rgba" not in menu.bgcolor and menu.font.color


def test_readouts_wrap_between_quantities_not_inside_one():
    """Reader review R-17: "fused 456 µs (2 / GiB)" broke a number from its unit."""
    from widgets.ui._core import _wrap

    text = "4 ops: eager 1.23 ms (4 GiB moved), fused 456 µs (2 GiB): 2.7x"
    for width in range(20, 60):
        lines = _wrap(text, width)
        assert " ".join(lines) == text
        assert not any(line.rstrip().endswith(("1.23", "456", "(2", "(4")) for line in lines), (width, lines)


# a reader's moves: the slider clicked near its right end, then the dropdown's other entry
SHOWN = """gd => { const k = gd.layout.sliders.findIndex(s => s.visible !== false); const s = gd.layout.sliders[k];
  return {k, active: s.active || 0, label: s.steps[s.active || 0].label,
          readout: (gd.layout.title.subtitle || {}).text || ''}; }"""


@pytest.mark.browser
@pytest.mark.skipif(not headless.CHROMIUM, reason=headless.MISSING)
def test_in_the_book_a_dropdown_choice_keeps_the_slider_value(tmp_path):
    """Reader check, round 9: on the data-parallel figure, picking another link put the bucket size back
    to 25 MiB. book/_static/plotly_theme.js moves the new choice's slider to the value the reader set."""
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    theme = (Path(__file__).resolve().parents[1] / "book" / "_static" / "plotly_theme.js").read_text()
    fig = _fig()  # v in 1, 3, 10, 30 for both choices; opens on (small, 1)
    path = tmp_path / "grid.html"
    fig.write_html(str(path), include_plotlyjs=True, full_html=True, div_id="gd", auto_play=False)
    path.write_text(path.read_text().replace("</body>", f"<script>{theme}</script></body>"))
    with sync_playwright() as p:
        b = headless.launch(p)
        page = b.new_page(viewport={"width": 1000, "height": 900})
        page.goto(path.as_uri())
        page.wait_for_function("() => document.getElementById('gd') && document.getElementById('gd')._gbHooked")
        gd = page.locator("#gd").element_handle()
        rail = page.locator(".slider-container .slider-rail-touch-rect").first
        box = rail.bounding_box()
        page.mouse.click(box["x"] + 0.68 * box["width"], box["y"] + box["height"] / 2)  # the third step, v = 10
        page.wait_for_timeout(300)
        moved = page.evaluate(SHOWN, gd)
        page.locator(".updatemenu-header-group").first.click()
        page.wait_for_timeout(250)
        page.locator(".updatemenu-dropdown-button").nth(1).click()
        page.wait_for_function("gd => gd.layout.sliders.findIndex(s => s.visible !== false) === 1 && "
                               "gd.layout.title.text.startsWith('large')", arg=gd)
        page.wait_for_timeout(500)
        chosen = page.evaluate(SHOWN, gd)
        b.close()
    assert moved["k"] == 0 and moved["label"] == "10", moved
    assert chosen["k"] == 1 and chosen["label"] == "10", chosen  # without the script: "1", where the figure opened
    assert "v = 10" in chosen["readout"], chosen  # the frame of (large, 10) is drawn, not only the slider moved
