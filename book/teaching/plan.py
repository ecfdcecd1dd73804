"""Numbers behind the workshop agendas (book/teaching/agendas.ipynb): nothing here is typed by hand.

- Teaching minutes per chapter section: the words of the section's Markdown cells (the
  chapter notebooks as committed) at ``WORDS_PER_MIN`` words per minute, a teaching rate: half
  the silent-reading rate of Jupyter Book's estimate (an assumption, labelled on the page).
- GPU block of a chapter: the H200 measure time below plus ``FIRST_RUN_MIN`` (kernel start, imports,
  JIT compiles, Colab's install); every taught block gets ``SLACK`` on top.
- CPU build run seconds per chapter (kept for reference, not used in the agendas: the build
  measures nothing): how long the chapter's notebook took to execute top to bottom, as
  myst-nb recorded it in a book build (``chapter_runtimes.json``, made with
  ``python book/teaching/plan.py collect <build>/_build/.doctrees/environment.pickle``; the file
  says which build and machine).
- GPU seconds per chapter: the time ``python -m widgets.measure`` spent on each topic on the H200
  (the ``[done]`` lines of ``benchmarks/h200/measure_*.log``, the latest run of each topic).
- Which chapters need two GPUs, and what each catalog GPU can run: ``widgets.doctor``'s verdicts
  for a simulated machine (``simulate(name, gpus)``).
- Exercise and "Guess first" minutes: counted from the notebooks (``{exercise}`` directives and
  ``guess`` admonitions) times an allowance per item (``EXERCISE_KIND_MIN`` by the exercise's kind, ``GUESS_MIN``). The
  allowances are assumptions, not measurements: the agendas say so.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RUNTIMES = HERE / "chapter_runtimes.json"
SILENT_WORDS_PER_MIN = 200  # Jupyter Book's silent-reading estimate (sphinx wordcount, "minutes" = words / 200)
# Teaching rate, an assumption: a presenter speaks at about 130 words per minute, and teaching with predictions, board
# work and questions runs at roughly half the silent-reading rate (instructor review, issue 15, finding 5).
WORDS_PER_MIN = SILENT_WORDS_PER_MIN // 2
# Minutes per exercise by kind (the exercise's title says its kind), done by learners and discussed briefly.
# Assumptions, not timed in a room yet (instructor review, issue 15, finding 15).
EXERCISE_KIND_MIN = {"By hand": 8, "With the calculator": 10, "With the precision explorer": 10, "Code": 25,
                     "Change the experiment": 25}  # fmt: skip
EXERCISE_OTHER_MIN = 15  # an exercise whose title names no kind
EXERCISE_MIN = EXERCISE_KIND_MIN["With the calculator"]  # the SIMT occupancy exercise of the half-day
FIRST_RUN_MIN = 5  # assumption: first run of a chapter: kernel start, torch import, Triton/numba JIT (Colab: its pip install)
SLACK = 0.15  # assumption: questions, switching between deck and pages; added to every taught block
SETUP_MIN = 30  # set-up check at the start of a half-day or a day (The Carpentries plan 30-60 min for installs)
GUESS_MIN = 2  # assumption: a "Guess first" prompt, answered and revealed
CHAPTERS = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "training_memory", "serving", "attention")

# Hand-written prerequisites (what a chapter's text uses from earlier chapters), checked in tests/test_teaching.py
# against the links and imports in the notebooks: every earlier chapter a notebook links to or imports must be here.
PREREQUISITES = {
    "memory_hierarchy": {},
    "simt": {"memory_hierarchy": "latency, bytes in flight and Little's law"},
    "tensor_cores": {"memory_hierarchy": "the roofline and its ridge point", "simt": "warps, blocks and waves over the SMs"},
    "kernels": {"memory_hierarchy": "coalescing, bank conflicts and tiling", "simt": "occupancy, waves and asynchronous launches",
                "tensor_cores": "the Triton GEMM on tensor cores"},
    "collectives": {"memory_hierarchy": "time = bytes / bandwidth + latency"},
    "training_memory": {"memory_hierarchy": "capacities in GiB, rates in GB/s",
                        "collectives": "the all-reduce, reduce-scatter and all-gather that ZeRO costs"},
    "serving": {"memory_hierarchy": "the roofline: decode is memory-bound, prefill compute-bound",
                "tensor_cores": "the peak FLOP/s per dtype", "collectives": "tensor parallelism's all-reduce"},
    "attention": {"memory_hierarchy": "the roofline, its ridge point and kernel fusion",
                  "tensor_cores": "tiled matmuls on tensor cores", "training_memory": "activations kept for the backward pass"},
}  # fmt: skip


def linked_chapters(topic: str) -> list[str]:
    """Chapters that ``topic``'s notebook links to or whose model or calculator it imports."""
    text = (ROOT / "chapters" / f"{topic}.ipynb").read_text(encoding="utf-8")
    found = []
    for o in CHAPTERS:
        if o == topic:
            continue
        link = re.search(rf"<{o}>`|\({o}\)|\]\({o}\.ipynb|\{{doc\}}`{o}`", text)
        code_use = re.search(rf"(models|ui) import [^\n]*\b{o}\b|widgets\.(models|ui)\.{o}\b", text)
        if link or code_use:
            found.append(o)
    return found


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-.]*")
_ROLE = re.compile(r"\{[a-z:]+\}`([^`<]*)(?:<[^>]*>)?`")  # {term}`text <target>` -> text
_DIRECTIVE_OPTION = re.compile(r"^:[a-z-]+:.*$", re.M)


def words(markdown: str) -> int:
    """Words a reader reads in a Markdown cell: roles reduced to their text, directive options,
    fences and maths dropped (a ``$...$`` span counts as one word)."""
    text = _ROLE.sub(r"\1", markdown)
    text = _DIRECTIVE_OPTION.sub("", text)
    text = re.sub(r"\$\$.*?\$\$", " x ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " x ", text)
    text = re.sub(r"^(```|:::)(\{[a-z-]+\})?", "", text, flags=re.M)  # the fence, not its title
    text = re.sub(r"<[^>]+>", " ", text)
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Section:
    chapter: str
    title: str
    words: int
    exercises: int
    guesses: int
    exercise_titles: tuple = ()

    @property
    def read_min(self) -> float:
        return self.words / WORDS_PER_MIN


@functools.cache  # read once per process: the agendas ask for each chapter many times
def notebook(topic: str) -> dict:
    return json.loads((ROOT / "chapters" / f"{topic}.ipynb").read_text(encoding="utf-8"))


def chapter_title(topic: str) -> str:
    for cell in notebook(topic)["cells"]:
        if cell["cell_type"] == "markdown":
            m = re.search(r"^# (.+)$", "".join(cell["source"]), re.M)
            if m:
                return m.group(1).strip()
    return topic


def sections(topic: str) -> list[Section]:
    """The chapter's ``##`` sections in order (the text before the first one is "Introduction")."""
    return list(_sections(topic))


@functools.cache
def _sections(topic: str) -> tuple:
    out: list[list] = [["Introduction", 0, 0, 0, []]]
    for cell in notebook(topic)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        src = "".join(cell["source"])
        for part in re.split(r"(?m)^(?=## )", src):
            m = re.match(r"## (.+)", part)
            if m:
                out.append([m.group(1).strip(), 0, 0, 0, []])
            cur = out[-1]
            cur[1] += words(part)
            found = re.findall(r"^(?:```|:::)\{exercise\}[ \t]*(.*)$", part, re.M)
            cur[2] += len(found)
            cur[4] += [t.strip() for t in found]
            cur[3] += len(re.findall(r":class:[^\n]*\bguess\b(?!-)", part))
    return tuple(Section(topic, t, w, e, g, tuple(x)) for t, w, e, g, x in out if w or e or g)


def exercise_min(title: str) -> int:
    """Minutes allowed for one exercise, by the kind its title starts with (``EXERCISE_KIND_MIN``)."""
    for kind, minutes in EXERCISE_KIND_MIN.items():
        if title.startswith(kind):
            return minutes
    return EXERCISE_OTHER_MIN


def exercise_titles(topic: str) -> list[str]:
    return [t for s in sections(topic) for t in s.exercise_titles]


def exercises_min(topic: str, k: int | None = None) -> int:
    """Minutes for the chapter's exercises; with ``k``, the ``k`` quickest (an instructor picks those in class)."""
    mins = sorted(exercise_min(t) for t in exercise_titles(topic))
    return sum(mins if k is None else mins[:k])


def runtimes() -> dict:
    """``chapter_runtimes.json``: run seconds per chapter and where they come from."""
    return json.loads(RUNTIMES.read_text(encoding="utf-8"))


@functools.cache  # one git log per measure log, once per process
def gpu_seconds() -> tuple[dict, str]:
    """Seconds ``widgets.measure`` spent per topic on the H200 (latest logged run), and the logs read.

    The logs are ordered by when they were committed (``git log``; a log not committed yet counts as newest, then by
    file time), not by name: ``measure_smoke_*`` sorts after ``measure_final_*`` although it ran earlier."""
    logs = sorted((ROOT / "benchmarks" / "h200").glob("**/measure*.log"), key=_log_time)  # a batch's folder too (batch_r4/)
    found: dict[str, float] = {}
    for log in logs:  # oldest first: later runs replace earlier ones
        for m in re.finditer(r"^\[done\] (\w+) in ([0-9.]+) s", log.read_text(errors="replace"), re.M):
            found[m.group(1)] = float(m.group(2))
    return found, ", ".join(p.relative_to(ROOT).as_posix() for p in logs)


def _log_time(log: Path) -> tuple:
    import subprocess

    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct", "--", str(log)], cwd=ROOT, capture_output=True,
                             text=True, timeout=30).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        out = ""
    return (int(out) if out else float("inf"), log.stat().st_mtime, log.name)


def gpu_min(topic: str) -> float:
    """Minutes of one live GPU run of the chapter's experiments: the H200's measure time plus ``FIRST_RUN_MIN``."""
    return gpu_seconds()[0].get(topic, 0.0) / 60 + FIRST_RUN_MIN


def two_gpu_chapters(gpu: str = "H200-SXM") -> dict:
    """Per chapter: the doctor's verdict on one and on two ``gpu`` (what a second GPU adds)."""
    from widgets import doctor

    one = {v.chapter: v for v in doctor.chapter_verdicts(doctor.simulate(gpu, 1))}
    two = {v.chapter: v for v in doctor.chapter_verdicts(doctor.simulate(gpu, 2))}
    return {c: (one[c], two[c]) for c in CHAPTERS}  # the chapters the agendas teach (the doctor knows more)


def chapter_minutes(topic: str) -> dict:
    """Minutes for one chapter taught in full: teaching the text, one live GPU run (instructor demo on the projector:
    the H200 measure time + a first-run allowance), exercises by kind, guesses."""
    secs = sections(topic)
    return {
        "read": sum(s.read_min for s in secs),
        "run": gpu_min(topic),
        "exercises": sum(s.exercises for s in secs),
        "guesses": sum(s.guesses for s in secs),
        "exercise_min": exercises_min(topic),
        "guess_min": GUESS_MIN * sum(s.guesses for s in secs),
    }


def round5(minutes: float) -> int:
    """Up to the next 5 minutes (an agenda's granularity), at least 5."""
    return max(5, int(5 * math.ceil(minutes / 5 - 1e-9)))


# ---------------------------------------------------------------------------------------------
# collecting run times from a build


def collect(pickle_path: str) -> dict:
    """Run seconds per chapter from a Jupyter Book build's Sphinx environment (myst-nb exec_data)."""
    import datetime
    import pickle
    import platform

    env = pickle.load(open(pickle_path, "rb"))  # noqa: SIM115 - a build's own file
    chapters = {}
    for doc, meta in env.nb_metadata.items():
        data = (meta or {}).get("exec_data") or {}
        if doc.startswith("chapters/") and data.get("runtime"):
            chapters[doc.split("/", 1)[1]] = {
                "run_s": round(float(data["runtime"]), 2),
                "succeeded": bool(data.get("succeeded")),
                "executed_at": datetime.datetime.fromtimestamp(data.get("mtime", 0), datetime.UTC).isoformat(timespec="seconds"),
            }
    return {
        "what": "seconds myst-nb took to execute each chapter top to bottom during a book build (GPUBOOK_BUILD=1: the page "
        "shows the H200 record, the build machine measures nothing), read from the build's environment.pickle",
        "source": str(pickle_path),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "note": "the project's 2-core CPU build machine"},
        "chapters": chapters,
    }


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "collect":
        RUNTIMES.write_text(json.dumps(collect(sys.argv[2]), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RUNTIMES}")
    else:
        print("usage: python book/teaching/plan.py collect <build>/_build/.doctrees/environment.pickle", file=sys.stderr)
        raise SystemExit(2)


# ---------------------------------------------------------------------------------------------
# the three agendas: each adapts to the chapters' current length and says whether it fits

TASTER_BUDGET_MIN = 120  # two hours: six core sections with slack do not fit 90 min at the teaching rate
HALF_DAY_BUDGET_MIN = 210
DAY_BUDGET_MIN = 480  # a teaching day, 09:00-17:00, breaks and lunch included
# A day's breaks: (name, minutes after the day's start, minutes). 09:00 start: a break at 10:30, lunch at 12:30, a
# break at 15:00 (assumptions); taken at the section boundary nearest that time.
DAY_BREAKS = (("Break", 90, 15), ("Lunch", 210, 60), ("Break", 360, 15))
DAY_BREAKS_MIN = sum(b[2] for b in DAY_BREAKS)  # lunch and two breaks
BREAKS_ROW = "Breaks and lunch"  # the two-day agenda's row for them (placed on the clock by :func:`schedule`)
CALC_MIN = 5  # assumption: the instructor moves a calculator's controls, the room predicts
QUIZ_MIN = 1  # assumption: one quiz question, answered in the page
BREAK_MIN = 15
OPEN_MIN = CLOSE_MIN = 5
MERGE_MIN = 30  # the closing discussion of the room's records
MIN_SPLIT_MIN = 20  # a chapter split over two days keeps at least this long on each side (else it starts the next day)
SKIP = ("Exercises", "References")  # exercises are timed by their allowance; references are not read aloud
TASTER_CORE = {
    "memory_hierarchy": "Arithmetic intensity and the roofline",
    "simt": "Occupancy: how many warps fit",
    "tensor_cores": "Peak from first principles",
    "kernels": "The ladder's model",
    "collectives": "Algorithm bandwidth and bus bandwidth",
    "training_memory": "The memory budget",
    "serving": "The memory budget, and the concurrency it allows",
    "attention": "Online softmax",
}


def read_min(topic: str, titles=None) -> float:
    return sum(s.read_min for s in sections(topic) if s.title not in SKIP and (titles is None or s.title in titles))


@functools.cache
def quiz_questions(topic: str) -> int:
    from widgets import quiz

    return len(quiz.load(topic).questions)


def taster() -> dict:
    """Opening, one core section per chapter with its calculator, a guess and a few quiz questions, closing.

    The same number of quiz questions per chapter (3, 2 or 1) if that fits; else each chapter gets as many (up to 3)
    as its block's rounding to 5 minutes leaves room for, possibly none; if even that does not fit, the last chapters
    in the book's order are left for later (named in the closing row; their slides stay in the deck)."""
    def block(c, q):
        core = [s.title for s in sections(c) if s.title == TASTER_CORE[c]]
        if not core:
            raise ValueError(f"{c}: the taster's core section {TASTER_CORE[c]!r} is no longer in the chapter")
        return round5((read_min(c, core) + GUESS_MIN + CALC_MIN + QUIZ_MIN * q) * (1 + SLACK))

    attempts = [(q, len(CHAPTERS)) for q in (3, 2, 1)] + [(None, n) for n in range(len(CHAPTERS), 0, -1)]
    for questions, n in attempts:
        rows = [["Opening: why bytes, FLOP and queues", "", OPEN_MIN]]
        for c in CHAPTERS[:n]:
            most = quiz_questions(c)
            if questions is None:  # as many as fit in the block's rounding
                q = max(k for k in range(min(3, most) + 1) if block(c, k) == block(c, 0))
            else:
                q = min(questions, most)
            quiz = f"{q} quiz question{'s' if q != 1 else ''}" if q else "no quiz question (the quiz as homework)"
            rows.append([chapter_title(c), f"{TASTER_CORE[c]}; calculator; {quiz}", block(c, q)])
        later = [chapter_title(c) for c in CHAPTERS[n:]]
        rows.append(["Closing: what to measure next (the chapters' Predict, then measure)",
                     f"left for later: {'; '.join(later)}" if later else "", CLOSE_MIN])
        total = sum(r[2] for r in rows)
        if total <= TASTER_BUDGET_MIN:
            break
    return {"rows": rows, "total": total, "budget": TASTER_BUDGET_MIN, "fits": total <= TASTER_BUDGET_MIN,
            "left_for_later": [c for c in CHAPTERS[n:]]}


def _full_chapter_min(c: str, exercises: int, quiz: bool = True) -> int:
    m = chapter_minutes(c)
    taught = read_min(c) + exercises_min(c, exercises) + m["guess_min"] + m["run"] + (QUIZ_MIN * quiz_questions(c) if quiz else 0)
    return round5(taught * (1 + SLACK))


def half_day() -> dict:
    """Set-up check, the memory hierarchy in full with part of its exercises, a break, then as much of tensor cores
    (its sections in order) as the rest of the half-day holds."""
    mh, tc = "memory_hierarchy", "tensor_cores"
    n = chapter_minutes(mh)["exercises"]
    for share in (2, 3, 4):  # half, a third, a quarter of the exercises (the quickest ones)
        k = max(1, math.ceil(n / share))
        rows = [["Set-up check: everyone runs the first cells", "", SETUP_MIN],
                [chapter_title(mh), f"all sections; {k} of {n} exercises; the instructor runs the GPU measurement",
                 _full_chapter_min(mh, k, quiz=False)],
                ["Break", "", BREAK_MIN]]  # fmt: skip
        left = HALF_DAY_BUDGET_MIN - sum(r[2] for r in rows)
        taught, used = [], 0.0
        for sec in sections(tc):
            if sec.title in SKIP:
                continue
            cost = (sec.read_min + GUESS_MIN * sec.guesses) * (1 + SLACK)
            if round5(used + cost + gpu_min(tc) * (1 + SLACK)) > left:
                break
            taught.append(sec.title)
            used += cost
        if taught:
            rows.append([chapter_title(tc), f"sections {taught[0]!r} to {taught[-1]!r}; the instructor runs the GPU measurement",
                         round5(used + gpu_min(tc) * (1 + SLACK))])  # fmt: skip
        total = sum(r[2] for r in rows)
        if total <= HALF_DAY_BUDGET_MIN and taught:
            break
    return {"rows": rows, "total": total, "budget": HALF_DAY_BUDGET_MIN, "fits": total <= HALF_DAY_BUDGET_MIN}


def two_day() -> dict:
    """The chapters in book order, packed into two days; all exercises if they fit, else half (the rest as homework),
    down to one per chapter; if even that does not fit, the quizzes go home too, then every exercise; if the
    chapters still outgrow two days, the last chapters in the book's order are left for later (named in the closing
    row, as in :func:`taster`), each dropped chapter giving the others back their exercises first.

    A day holds ``DAY_BUDGET_MIN`` with its breaks (and the first day the set-up check); a chapter that does not fit
    in what is left of a day goes on the next morning (at a section boundary: its rows are marked "continued"),
    with at least ``MIN_SPLIT_MIN`` on each side (with less room left, it starts the next day)."""
    # all exercises, half, ..., one per chapter in class (the rest as homework); then the quizzes as homework too; then
    # every exercise as homework; then one chapter fewer, from all exercises again
    attempts = [(share, True) for share in (1, 2, 3, 4, 6, 12)] + [(12, False), (None, False)]
    for n in range(len(CHAPTERS), 0, -1):
        for share, quiz in attempts:
            days, totals = _pack_days(CHAPTERS[:n], share, quiz)
            if len(days) <= 2 and max(totals) <= DAY_BUDGET_MIN:
                break
        else:
            continue
        break
    rows = [[f"day {i}", *b] for i, d in enumerate(days, 1) for b in d]
    return {"rows": rows, "totals": totals, "budget": DAY_BUDGET_MIN,
            "fits": len(days) <= 2 and max(totals) <= DAY_BUDGET_MIN,
            "left_for_later": list(CHAPTERS[n:])}  # fmt: skip


def _pack_days(chapters, share, quiz: bool):
    """``chapters`` with ``1/share`` of their exercises in class (``None``: none) and the quiz or not, packed
    into days: (days as lists of ``[block, content, minutes]``, minutes per day)."""
    blocks = []
    for c in chapters:
        n = chapter_minutes(c)["exercises"]
        k = 0 if share is None else max(1, math.ceil(n / share))
        what = ("exercises as homework" if k == 0 else f"{k} exercises" if k == n else
                f"{k} of {n} exercises (the rest as homework)") + (", quiz" if quiz else ", quiz as homework")
        blocks.append([chapter_title(c), what, _full_chapter_min(c, k, quiz=quiz)])
    later = [chapter_title(c) for c in CHAPTERS if c not in chapters]
    blocks.append(["Closing: the room's measurements side by side",
                   "merge the room's table and plot (widgets.measure --merge)"
                   + (f"; left for later: {'; '.join(later)}" if later else ""), MERGE_MIN])
    setup = ["Set-up check: everyone runs the first cells", "", SETUP_MIN]
    breaks = [BREAKS_ROW, "at section boundaries", DAY_BREAKS_MIN]
    days, day = [], [setup, breaks]
    for title, what, minutes in blocks:
        left, part = minutes, 0
        while left > 0:
            room = DAY_BUDGET_MIN - sum(x[2] for x in day)
            take = left if left <= room else min(room, left - MIN_SPLIT_MIN)  # leave tomorrow no sliver either
            if take < MIN_SPLIT_MIN and take < left:
                days.append(day)  # too little room to start here: a new day
                day = [breaks]
                continue
            day.append([title if part == 0 else f"{title} (continued)", what, take])
            left, part = left - take, part + 1
    days.append(day)
    return days, [sum(b[2] for b in d) for d in days]


# ---------------------------------------------------------------------------------------------
# the clock: an agenda's blocks with start and end times


def clock_min(hhmm: str) -> int:
    """``"09:00"`` -> 540 (minutes after midnight); ``ValueError`` unless it is a 24-hour ``HH:MM`` time."""
    m = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", hhmm.strip()) if isinstance(hhmm, str) else None
    if m is None:
        raise ValueError(f"start must be a 24-hour time such as '09:00' or '13:30', got {hhmm!r}")
    return 60 * int(m.group(1)) + int(m.group(2))


def clock(minutes: int) -> str:
    """540 -> ``"09:00"``."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


BREAK_SHIFT_MIN = 10  # a break moves by up to this much rather than cut a block into a sliver


def schedule(blocks, start: str = "09:00", breaks=()) -> list[list]:
    """Clock times for an agenda's blocks: rows ``[start, end, block, content, minutes]``.

    ``blocks``: ``[block, content, minutes]`` in order (an agenda's rows; a ``BREAKS_ROW`` row is
    dropped, its breaks placed by ``breaks``). ``breaks``: ``(name, minutes after start, minutes)``;
    a break starts at its time, and a block still running then is split around it (the second
    part is marked "continued": the instructor stops at the nearest section boundary), except that
    a break moves by up to ``BREAK_SHIFT_MIN`` rather than leave a sliver: a block with that little
    left finishes first, and a block due to start that little before a break starts after it. A
    break that the day's blocks end before is not taken. ``ValueError`` if the day would pass midnight.
    """
    t0 = clock_min(start)
    pending = sorted(breaks, key=lambda b: b[1])
    rows, t = [], t0
    for title, content, minutes in blocks:
        if title == BREAKS_ROW:
            continue
        left, part = minutes, 0
        while left > 0:
            due = t0 + pending[0][1] - t if pending else None  # minutes until the next break
            if due is not None and (due <= 0 or (due < BREAK_SHIFT_MIN and part == 0 and rows)):
                name, _at, length = pending.pop(0)  # due now, or so soon that a new block waits for it
                rows.append([clock(t), clock(t + length), name, "", length])
                t += length
                continue
            run = left if due is None or left - due <= BREAK_SHIFT_MIN else due  # a block about to end finishes first
            label = title if part == 0 or title.endswith("(continued)") else f"{title} (continued)"
            rows.append([clock(t), clock(t + run), label, content, run])
            t, left, part = t + run, left - run, part + 1
    if t > 24 * 60:
        raise ValueError(f"starting at {start}, the agenda ({t - t0} min) runs past midnight")
    return rows


def two_day_schedule(start: str = "09:00") -> list[list]:
    """:func:`two_day` on the clock, each day from ``start`` with ``DAY_BREAKS``: rows ``[day, start, end,
    block, content, minutes]``."""
    plan_rows = two_day()["rows"]
    days = sorted({r[0] for r in plan_rows}, key=lambda d: int(d.split()[-1]))
    return [[d, *row] for d in days for row in schedule([r[1:] for r in plan_rows if r[0] == d], start, DAY_BREAKS)]
