/* The book's quizzes (widgets/quiz.py renders them). No formula here: every accepted answer was
   computed by the models when the page was built and sits in the quiz's JSON data; this script
   only compares the reader's answer with it (a number with [low, high], a choice with its index). */
(function () {
  "use strict";

  // The readings of what the reader typed (usually one; two when a comma could be a decimal or a thousands
  // separator, as in 1,099). A trailing unit or % is dropped: "48 TFLOP/s", "25 %".
  function parseNumbers(text) {
    var m = String(text).trim().match(/^([+-]?[\d.,\s_\u00a0\u202f]*\d(?:e[+-]?\d+)?|[+-]?\.\d+(?:e[+-]?\d+)?)\s*(.*)$/i);
    if (!m || (m[2] && !/^(%|[a-z\u00b5])/i.test(m[2]))) return [];
    var s = m[1].replace(/[\s_\u00a0\u202f]/g, "");
    var readings = [];
    if (/^[+-]?\d{1,3},\d{3}$/.test(s)) readings = [s.replace(",", ""), s.replace(",", ".")];  // 1,099: both
    else if (/^[+-]?\d+,\d+$/.test(s)) readings = [s.replace(",", ".")];                      // a decimal comma: 4,8
    else readings = [s.replace(/,(?=\d{3}(\D|$))/g, "")];                                     // thousands: 1,234.5
    return readings.filter(function (r) { return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(r); }).map(Number);
  }

  function setFeedback(li, ok, text) {
    var fb = li.querySelector(".gpubook-quiz-feedback");
    fb.textContent = text;
    fb.classList.remove("gpubook-quiz-right", "gpubook-quiz-wrong");
    if (ok !== null) fb.classList.add(ok ? "gpubook-quiz-right" : "gpubook-quiz-wrong");
    li.classList.toggle("gpubook-quiz-done", ok === true);
  }

  function showWhy(li) {
    var why = li.querySelector(".gpubook-quiz-why");
    if (why) why.hidden = false;
  }

  function check(li, q) {
    if (q.kind === "choice") {
      var picked = li.querySelector("input[type=radio]:checked");
      if (!picked) { setFeedback(li, null, "Pick one of the answers first."); return; }
      if (Number(picked.value) === q.answer) { setFeedback(li, true, "Right."); showWhy(li); }
      else setFeedback(li, false, "Not this one. Try again, or show the answer.");
      return;
    }
    var input = li.querySelector("input[type=text]");
    var xs = parseNumbers(input.value);
    if (!xs.length) { setFeedback(li, null, "Type a number" + (q.unit ? " in " + q.unit : "") + " (e.g. 12.5 or 1.2e3)."); return; }
    var hit = xs.filter(function (v) { return v >= q.low && v <= q.high; });
    var x = hit.length ? hit[0] : xs[0];
    if (x >= q.low && x <= q.high) { setFeedback(li, true, "Right: the model gives " + q.shown + "."); showWhy(li); }
    else setFeedback(li, false, (x < q.low ? "Too low." : "Too high.") + " Try again, or show the answer.");
  }

  function reveal(li, q) {
    setFeedback(li, null, "The answer: " + q.shown + ".");
    if (q.kind === "choice") {
      var radios = li.querySelectorAll("input[type=radio]");
      if (radios[q.answer]) radios[q.answer].checked = true;
    }
    showWhy(li);
  }

  function init(root) {
    if (root.getAttribute("data-ready")) return;
    var holder = root.querySelector("script.gpubook-quiz-data");
    if (!holder) return;
    var data = JSON.parse(holder.textContent);
    root.setAttribute("data-ready", "1");
    root.querySelectorAll("li.gpubook-quiz-q").forEach(function (li) {
      var q = data.questions[Number(li.getAttribute("data-index"))];
      li.querySelector(".gpubook-quiz-check").addEventListener("click", function () { check(li, q); });
      li.querySelector(".gpubook-quiz-reveal").addEventListener("click", function () { reveal(li, q); });
      var input = li.querySelector("input[type=text]");
      if (input) input.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); check(li, q); } });
    });
  }

  function initAll() { document.querySelectorAll(".gpubook-quiz").forEach(init); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
