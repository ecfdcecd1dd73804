"""Self-check quizzes that work in the static page, without a kernel.

A quiz is a list of questions, each a multiple choice (:class:`Choice`) or a number with a
tolerance (:class:`Number`). Every accepted answer is computed here, in Python, by the models and
the catalog when the page is built (``widgets/quizzes/<topic>.py``), and embedded in the page as
data: the browser script ``widgets/static/quiz.js`` only compares what the reader typed or picked
with that data (a number against ``[low, high]``, a choice against its index). There is no formula
in JavaScript, so the quiz cannot drift from the models.

    from widgets import quiz
    quiz.show("memory_hierarchy")        # the chapter's quiz (HTML); in a notebook it displays

In the published book the page loads ``quiz.js``/``quiz.css`` (``book/_ext/teaching.py`` adds them
to pages that hold a quiz). In a live notebook the HTML carries the script itself, so the quiz
works in JupyterLab and Colab too: the package ships a copy of both files as package data
(``widgets/static/``, kept identical to ``book/_static`` by tests/test_quiz.py), so a pip install
from git (Colab) has them. ``Quiz.check`` applies the same rule in Python (the tests use it).
"""

from __future__ import annotations

import html
import importlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import _check

TOPICS = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "training_memory", "serving", "attention")
STATIC = Path(__file__).resolve().parent / "static"  # package data, the one home of quiz.{js,css} (the book serves them from here)
CSS_CLASS = "gpubook-quiz"


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question: ``options`` (HTML snippets) and the index of the right one.

    ``why`` explains the answer (shown once the reader answers right or asks for the answer).
    """

    prompt: str
    options: tuple
    answer: int
    why: str

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(f"prompt must be a non-empty string, got {self.prompt!r}")
        if not isinstance(self.options, tuple) or len(self.options) < 2:
            raise ValueError(f"options must be a tuple of two or more strings, got {self.options!r}")
        if len(set(self.options)) != len(self.options):
            raise ValueError(f"options must be distinct, got {self.options!r}")
        _check.integer("answer", self.answer, minimum=0, maximum=len(self.options) - 1)

    def accepts(self, value) -> bool:
        return not isinstance(value, bool) and isinstance(value, int) and value == self.answer

    def data(self) -> dict:
        return {"kind": "choice", "answer": self.answer, "shown": self.options[self.answer]}


@dataclass(frozen=True)
class Number:
    """A question answered with a number in ``unit``.

    ``value`` is the model's answer already in ``unit`` (e.g. GB/s, not B/s); the reader's number
    is accepted when it is within ``rel_tol`` of it (relative) or within ``abs_tol`` (absolute,
    for counts). ``shown`` is how the answer is printed when revealed.
    """

    prompt: str
    value: float
    unit: str
    why: str
    rel_tol: float = 0.02
    abs_tol: float = 0.0
    shown: str = ""

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(f"prompt must be a non-empty string, got {self.prompt!r}")
        _check.finite_result("value", self.value)
        _check.in_range("rel_tol", self.rel_tol, 0.0, 0.5)
        _check.non_negative("abs_tol", self.abs_tol)
        if self.rel_tol == 0 and self.abs_tol == 0:
            raise ValueError("rel_tol and abs_tol cannot both be 0: a typed decimal would never match")

    @property
    def bounds(self) -> tuple[float, float]:
        """The accepted interval ``[low, high]`` (in ``unit``)."""
        half = max(abs(self.value) * self.rel_tol, self.abs_tol)
        return self.value - half, self.value + half

    def accepts(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        low, high = self.bounds
        return low <= value <= high

    def data(self) -> dict:
        low, high = self.bounds
        shown = self.shown or f"{_sig(self.value)} {self.unit}".strip()
        return {"kind": "number", "low": low, "high": high, "unit": self.unit, "shown": shown}


def _sig(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, large numbers with thousands separators and no e-notation
    (25,687 tokens, not 2.569e+04: reader check r10)."""
    if abs(x) < 1e15 and float(x).is_integer() and abs(x) >= 1e4:
        return f"{int(x):,}"
    if 1e4 <= abs(x) < 1e15:
        return f"{float(f'{x:.{digits}g}'):,.0f}"
    return f"{x:.{digits}g}"


@dataclass(frozen=True)
class Quiz:
    """A chapter's quiz: ``topic``, a title and its questions."""

    topic: str
    questions: tuple
    title: str = "Check yourself"
    note: str = ""
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.questions or not all(isinstance(q, (Choice, Number)) for q in self.questions):
            raise ValueError("questions must be a non-empty tuple of Choice and Number")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.topic or ""):
            raise ValueError(f"topic must be a lower-case identifier, got {self.topic!r}")

    def check(self, index: int, answer) -> bool:
        """Whether ``answer`` is accepted for question ``index`` (the rule the page applies)."""
        _check.integer("index", index, minimum=0, maximum=len(self.questions) - 1)
        return self.questions[index].accepts(answer)

    def data(self) -> dict:
        """What the page embeds: per question, the accepted answer (no formula)."""
        return {"topic": self.topic, "questions": [q.data() for q in self.questions]}

    def to_html(self, *, inline_script: bool = False) -> str:
        """The quiz as one HTML block (``inline_script`` adds quiz.js/quiz.css, for a live notebook)."""
        qid = f"quiz-{self.topic}"
        items = []
        for i, q in enumerate(self.questions):
            name = f"{qid}-q{i}"
            if isinstance(q, Choice):
                opts = "".join(
                    f'<label class="gpubook-quiz-option"><input type="radio" name="{name}" value="{k}"> '
                    f"<span>{o}</span></label>"
                    for k, o in enumerate(q.options)
                )
                control = f'<fieldset class="gpubook-quiz-options"><legend class="sr-only">choices</legend>{opts}</fieldset>'
            else:
                unit = f'<span class="gpubook-quiz-unit">{html.escape(q.unit)}</span>' if q.unit else ""
                control = (
                    f'<div class="gpubook-quiz-number"><input type="text" inputmode="decimal" autocomplete="off" '
                    f'name="{name}" aria-label="your answer{" in " + html.escape(q.unit) if q.unit else ""}"> {unit}</div>'
                )
            items.append(
                f'<li class="gpubook-quiz-q" data-index="{i}"><div class="gpubook-quiz-prompt">{q.prompt}</div>'
                f"{control}"
                '<div class="gpubook-quiz-buttons"><button type="button" class="gpubook-quiz-check">Check</button> '
                '<button type="button" class="gpubook-quiz-reveal">Show the answer</button></div>'
                '<p class="gpubook-quiz-feedback" role="status" aria-live="polite"></p>'
                f'<div class="gpubook-quiz-why" hidden>{q.why}</div></li>'
            )
        data = json.dumps(self.data(), separators=(",", ":")).replace("</", "<\\/")
        note = f'<p class="gpubook-quiz-note">{self.note}</p>' if self.note else ""
        out = (
            f'<div class="{CSS_CLASS}" id="{qid}" data-topic="{self.topic}">'
            f'<script type="application/json" class="gpubook-quiz-data">{data}</script>'
            f"{note}<ol>{''.join(items)}</ol>"
            '<p class="gpubook-quiz-js-missing">This quiz checks answers with JavaScript in the page.</p></div>'
        )
        if inline_script:
            try:
                css = (STATIC / "quiz.css").read_text(encoding="utf-8")
                js = (STATIC / "quiz.js").read_text(encoding="utf-8")
            except OSError:  # a broken install without the package data: the quiz shows, checks need quiz.check()
                return out.replace(
                    "This quiz checks answers with JavaScript in the page.",
                    f"This quiz checks answers in the book's pages; here, call <code>quiz.load({self.topic!r}).check(i, answer)</code>.",
                )
            out = f"<style>{css}</style>{out}<script>{js}</script>"
        return out

    def _repr_html_(self) -> str:
        from . import book

        return self.to_html(inline_script=not book.BUILD)


def load(topic: str) -> Quiz:
    """The quiz of ``topic`` (``widgets.quizzes.<topic>.quiz()``), its answers computed now."""
    _check.choice("topic", topic, TOPICS)
    return importlib.import_module(f"widgets.quizzes.{topic}").quiz()


def show(topic: str) -> Quiz:
    """The chapter's quiz, for the last cell of a chapter (displays as HTML in a notebook)."""
    return load(topic)
