/* The book's quizzes (widgets/quiz.py renders them). No formula here: every accepted answer was
   computed by the models when the page was built and sits in the quiz's JSON data; this script
   only compares the reader's answer with it (a number with [low, high], a choice with its index). */
(function () {
  "use strict";

  function parseNumber(text) {
    var s = String(text).trim().replace(/[\s_\u00a0\u202f]/g, "");
    if (/^[+-]?\d+,\d+$/.test(s)) s = s.replace(",", ".");   // a decimal comma: 4,8
    else s = s.replace(/,(?=\d{3}(\D|$))/g, "");              // thousands separators: 1,234.5
    if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) return NaN;
    return Number(s);
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
    var x = parseNumber(input.value);
    if (!isFinite(x)) { setFeedback(li, null, "Type a number" + (q.unit ? " in " + q.unit : "") + " (e.g. 12.5 or 1.2e3)."); return; }
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
