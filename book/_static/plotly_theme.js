/* Plots follow the page's light/dark mode, and are drawn when the reader gets near them.
 *
 * Drawing: the figures' inline scripts call Plotly.newPlot while the page is parsed; before the
 * page's load event, each call is postponed until its figure comes within 600 px of the viewport
 * (IntersectionObserver), so a chapter with many figures loads as fast as one with none and never
 * draws the figures nobody scrolls to. The promise newPlot returns resolves once the figure is
 * drawn, so the frames the script adds afterwards (addFrames) still follow it.
 *
 * pydata-sphinx-theme sets data-theme="light"|"dark" on <html> (also when the mode is "auto").
 * On load and on every change of that attribute, each plotly figure gets
 *   - dark: the book's dark template (window.GPUBOOK_TEMPLATES.dark, written at build time from
 *     widgets/ui/_core.py) merged over the figure's own template, plus dark surfaces for sliders
 *     and dropdowns; colours the figure sets explicitly are swapped only when they are neutral
 *     (near-black text and lines become light, near-white backgrounds become dark);
 *   - light: back to exactly what the figure had.
 * No number of any figure is computed here: only colours change.
 *
 * A static calculator with a dropdown and a slider (widgets/ui/_core.py grid_figure) has one slider
 * per dropdown choice; a choice's button shows its slider where the figure opened. Here, after a
 * choice, the new slider goes to the value the reader had set (the same label, else the same
 * position, or its last), by playing that frame as the slider would: picking another link no
 * longer puts the bucket size back (reader check, round 9).
 */
(function () {
  "use strict";

  var FG = "#e6e6e6", MUTED = "#9aa4ae", GRID = "#3a3f47", SURFACE = "#2b3036", EDGE = "#5b6570";
  var FALLBACK_DARK = {
    layout: {
      font: { color: FG }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      xaxis: { gridcolor: GRID, zerolinecolor: GRID, linecolor: GRID },
      yaxis: { gridcolor: GRID, zerolinecolor: GRID, linecolor: GRID }
    }
  };
  var CONTROLS_DARK = {
    sliderdefaults: { bgcolor: SURFACE, bordercolor: EDGE, activebgcolor: "#4a5560", tickcolor: MUTED,
                      font: { color: FG }, currentvalue: { font: { color: FG } } },
    // plotly.js paints the hovered and the chosen entry of a dropdown with a fixed light colour
    // (#F4FAFF): a dark menu would put light text on it. Menus stay light, with dark text.
    updatemenudefaults: { bgcolor: "#e9edf1", bordercolor: EDGE, font: { color: "#222222" } },
    legend: { bgcolor: "rgba(0,0,0,0)", font: { color: FG } },
    hoverlabel: { font: { color: FG }, bgcolor: SURFACE, bordercolor: EDGE }
  };

  function isDark() { return document.documentElement.getAttribute("data-theme") === "dark"; }
  function clone(o) { return o === undefined ? undefined : JSON.parse(JSON.stringify(o)); }
  function merge(a, b) {
    var out = (a && typeof a === "object" && !Array.isArray(a)) ? a : {};
    Object.keys(b || {}).forEach(function (k) {
      var v = b[k];
      out[k] = (v && typeof v === "object" && !Array.isArray(v)) ? merge(out[k], v) : clone(v);
    });
    return out;
  }

  var NAMED = { black: [0, 0, 0], white: [255, 255, 255], gray: [128, 128, 128], grey: [128, 128, 128] };
  function rgb(c) {
    if (typeof c !== "string") return null;
    var s = c.trim().toLowerCase(), m;
    if (NAMED[s]) return NAMED[s];
    if ((m = s.match(/^#([0-9a-f]{3})$/))) return m[1].split("").map(function (h) { return parseInt(h + h, 16); });
    if ((m = s.match(/^#([0-9a-f]{6})([0-9a-f]{2})?$/))) return [0, 2, 4].map(function (i) { return parseInt(m[1].substr(i, 2), 16); });
    if ((m = s.match(/^rgba?\(([^)]+)\)$/))) {
      var p = m[1].split(",").map(parseFloat);
      if (p.length === 4 && p[3] === 0) return null; // transparent stays transparent
      return p.slice(0, 3);
    }
    return null;
  }
  function neutral(p) { return Math.max.apply(null, p) - Math.min.apply(null, p) < 40; }
  function lum(p) { return (0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]) / 255; }
  function darkText(c) { var p = rgb(c); return p && neutral(p) && lum(p) < 0.5 ? FG : null; }
  function darkLine(c) {
    var p = rgb(c);
    if (!p || !neutral(p)) return null;
    return lum(p) > 0.75 ? GRID : (lum(p) < 0.5 ? MUTED : null);
  }
  function darkFill(c, control) { var p = rgb(c); return p && neutral(p) && lum(p) > 0.8 ? (control ? SURFACE : "rgba(0,0,0,0)") : null; }

  // explicit colours in the figure's layout: "path" -> dark value
  function layoutSwaps(obj, path, out, inControl) {
    if (!obj || typeof obj !== "object") return;
    Object.keys(obj).forEach(function (k) {
      if (!path && k === "template") return;
      var v = obj[k], p = path ? path + "." + k : k;
      if (Array.isArray(v)) {
        v.forEach(function (item, i) {
          layoutSwaps(item, p + "[" + i + "]", out, inControl || k === "sliders" || k === "updatemenus");
        });
      } else if (v && typeof v === "object") {
        layoutSwaps(v, p, out, inControl);
      } else if (typeof v === "string") {
        var d = null;
        if (/^updatemenus\[/.test(p)) d = null; // menus keep their light look, dark text included (see CONTROLS_DARK)
        else if (k === "color") d = /(^|\.)line$/.test(path) ? darkLine(v) : darkText(v);
        else if (/bgcolor$/.test(k)) d = darkFill(v, inControl);
        else if (/(gridcolor|linecolor|tickcolor|bordercolor)$/.test(k)) d = darkLine(v);
        if (d) out[p] = d;
      }
    });
  }

  function traceSwaps(trace) {
    var out = {};
    [["line", "color"], ["marker", "color"], ["textfont", "color"]].forEach(function (ab) {
      var v = trace[ab[0]] && trace[ab[0]][ab[1]];
      var d = typeof v === "string" ? darkText(v) : null;
      if (d) out[ab.join(".")] = d;
    });
    return out;
  }

  function get(obj, path) {
    return path.replace(/\[(\d+)\]/g, ".$1").split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }

  function toDark(gd) {
    if (!gd._gbSaved) gd._gbSaved = { template: clone(gd.layout.template) || null, layout: {}, traces: [] };
    var saved = gd._gbSaved, T = window.GPUBOOK_TEMPLATES || {};
    var tpl = clone(saved.template) || {};
    tpl.layout = merge(merge(tpl.layout, (T.dark || FALLBACK_DARK).layout), CONTROLS_DARK);
    var update = { template: tpl }, swaps = {};
    layoutSwaps(gd.layout, "", swaps, false);
    Object.keys(swaps).forEach(function (p) {
      if (!(p in saved.layout)) saved.layout[p] = get(gd.layout, p);
      update[p] = swaps[p];
    });
    var p = Plotly.relayout(gd, update);
    gd.data.forEach(function (trace, i) {
      var s = traceSwaps(trace);
      if (!Object.keys(s).length) return;
      saved.traces[i] = saved.traces[i] || {};
      Object.keys(s).forEach(function (k) { if (!(k in saved.traces[i])) saved.traces[i][k] = get(trace, k); });
      Plotly.restyle(gd, s, [i]);
    });
    return p;
  }

  function toLight(gd) {
    var saved = gd._gbSaved;
    if (!saved) return;
    var update = { template: clone(saved.template) };
    Object.keys(saved.layout).forEach(function (p) { update[p] = saved.layout[p] === undefined ? null : saved.layout[p]; });
    Plotly.relayout(gd, update);
    saved.traces.forEach(function (s, i) {
      if (!s) return;
      var u = {};
      Object.keys(s).forEach(function (k) { u[k] = s[k] === undefined ? null : s[k]; });
      Plotly.restyle(gd, u, [i]);
    });
    gd._gbSaved = null;
  }

  function apply(gd) {
    if (!window.Plotly || !gd.layout || !gd._fullLayout) return false;
    var want = isDark() ? "dark" : "light";
    if ((gd._gbMode || "light") !== want) {
      if (want === "dark") toDark(gd); else toLight(gd);
      gd._gbMode = want;
    }
    if (!gd._gbHooked && gd.on) {
      gd._gbHooked = true;
      // a slider step or a dropdown choice applies a frame's layout and data: keep the mode
      gd.on("plotly_animated", function () { if (gd._gbMode === "dark") toDark(gd); });
      keepSliderAcrossChoices(gd);
    }
    return true;
  }

  // ---- a dropdown choice keeps the slider's value (grid_figure: one slider per choice) ----
  function shownSlider(gd) {
    var s = gd.layout.sliders || [];
    for (var i = 0; i < s.length; i++) if (s[i].visible !== false) return i;
    return -1;
  }
  function keepSliderAcrossChoices(gd) {
    if (!(gd.layout.meta && gd.layout.meta.calculator) || (gd.layout.sliders || []).length < 2) return;
    var last = null;
    function remember() {
      var k = shownSlider(gd);
      if (k < 0) return;
      var sl = gd.layout.sliders[k], at = sl.active || 0;
      last = { slider: k, pos: at, label: (sl.steps[at] || {}).label };
    }
    remember();
    gd.on("plotly_sliderchange", function () { setTimeout(remember, 0); });
    gd.on("plotly_buttonclicked", function () {
      var was = last, tries = 0;
      (function follow() {
        var k = shownSlider(gd);
        if (k < 0 || !was) return;
        if (k === was.slider) { if (tries++ < 20) setTimeout(follow, 25); return; } // the choice not applied yet
        var steps = gd.layout.sliders[k].steps, j = -1;
        for (var i = 0; i < steps.length; i++) if (steps[i].label === was.label) { j = i; break; }
        if (j < 0) j = Math.min(was.pos, steps.length - 1);
        var upd = {};
        upd["sliders[" + k + "].active"] = j;
        if (j !== (gd.layout.sliders[k].active || 0)) {
          Plotly.relayout(gd, upd).then(function () { return Plotly.animate(gd, steps[j].args[0], steps[j].args[1]); })
            .then(remember, remember);
        } else remember();
      })();
    });
  }

  function applyAll(tries) {
    var pending = 0;
    document.querySelectorAll(".plotly-graph-div").forEach(function (gd) { if (!apply(gd)) pending++; });
    if (pending && tries > 0) setTimeout(function () { applyAll(tries - 1); }, 100);
  }

  // ---- draw each figure when it comes near the viewport ----
  var P = window.Plotly;
  if (P && P.newPlot && !P._gbLazy && "IntersectionObserver" in window) {
    var draw = P.newPlot, pageLoaded = document.readyState === "complete";
    window.addEventListener("load", function () { pageLoaded = true; });
    var near = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting || !e.target._gbDraw) return;
        near.unobserve(e.target);
        var job = e.target._gbDraw;
        e.target._gbDraw = null;
        job();
      });
    }, { rootMargin: "600px 0px" });
    P._gbLazy = true;
    P.newPlot = function (gd, data, layout, config) {
      var el = typeof gd === "string" ? document.getElementById(gd) : gd;
      if (pageLoaded || !el) return draw.apply(P, arguments);
      var args = arguments;
      return new Promise(function (resolve, reject) {
        el._gbDraw = function () {
          draw.apply(P, args).then(function (g) { apply(g); resolve(g); }, reject);
        };
        near.observe(el);
      });
    };
  }

  new MutationObserver(function () { applyAll(20); })
    .observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  if (document.readyState === "complete") applyAll(50);
  else window.addEventListener("load", function () { applyAll(50); });
})();
