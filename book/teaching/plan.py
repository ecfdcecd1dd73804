"""Numbers behind the workshop agendas (book/teaching/agendas.ipynb): nothing here is typed by hand.

- Reading minutes per chapter section: the words of the section's Markdown cells (the
  chapter notebooks as committed) at ``WORDS_PER_MIN`` words per minute, the rate Jupyter Book's
  own reading-time estimate uses.
- Run minutes per chapter: how long the chapter's notebook took to execute top to bottom, as
  myst-nb recorded it in a book build (``chapter_runtimes.json``, made with
  ``python book/teaching/plan.py collect <build>/_build/.doctrees/environment.pickle``; the file
  says which build and machine).
- GPU seconds per chapter: the time ``python -m widgets.measure`` spent on each topic on the H200
  (the ``[done]`` lines of ``benchmarks/h200/measure_*.log``, the latest run of each topic).
- Which chapters need two GPUs, and what each catalog GPU can run: ``widgets.doctor``'s verdicts
  for a simulated machine (``simulate(name, gpus)``).
- Exercise and "Guess first" minutes: counted from the notebooks (``{exercise}`` directives and
  ``guess`` admonitions) times an allowance per item (``EXERCISE_MIN``, ``GUESS_MIN``). The
  allowances are assumptions, not measurements: the agendas say so.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RUNTIMES = HERE / "chapter_runtimes.json"
WORDS_PER_MIN = 200  # Jupyter Book's reading-time estimate (sphinx wordcount, "minutes" = words / 200)
EXERCISE_MIN = 10  # assumption: one exercise, done by a learner, discussed briefly
GUESS_MIN = 2  # assumption: a "Guess first" prompt, answered and revealed
CHAPTERS = ("memory_hierarchy", "simt", "tensor_cores", "collectives", "training_memory", "serving")

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

    @property
    def read_min(self) -> float:
        return self.words / WORDS_PER_MIN


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
    out: list[list] = [["Introduction", 0, 0, 0]]
    for cell in notebook(topic)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        src = "".join(cell["source"])
        for part in re.split(r"(?m)^(?=## )", src):
            m = re.match(r"## (.+)", part)
            if m:
                out.append([m.group(1).strip(), 0, 0, 0])
            cur = out[-1]
            cur[1] += words(part)
            cur[2] += len(re.findall(r"^```\{exercise\}|^:::\{exercise\}", part, re.M))
            cur[3] += len(re.findall(r":class:[^\n]*\bguess\b(?!-)", part))
    return [Section(topic, t, w, e, g) for t, w, e, g in out if w or e or g]


def runtimes() -> dict:
    """``chapter_runtimes.json``: run seconds per chapter and where they come from."""
    return json.loads(RUNTIMES.read_text(encoding="utf-8"))


def gpu_seconds() -> tuple[dict, str]:
    """Seconds ``widgets.measure`` spent per topic on the H200 (latest logged run), and the logs read."""
    logs = sorted((ROOT / "benchmarks" / "h200").glob("measure*.log"))
    found: dict[str, float] = {}
    for log in logs:  # sorted by name (dated): later runs replace earlier ones
        for m in re.finditer(r"^\[done\] (\w+) in ([0-9.]+) s", log.read_text(errors="replace"), re.M):
            found[m.group(1)] = float(m.group(2))
    return found, ", ".join(f"benchmarks/h200/{p.name}" for p in logs)


def two_gpu_chapters(gpu: str = "H200-SXM") -> dict:
    """Per chapter: the doctor's verdict on one and on two ``gpu`` (what a second GPU adds)."""
    from widgets import doctor

    one = {v.chapter: v for v in doctor.chapter_verdicts(doctor.simulate(gpu, 1))}
    two = {v.chapter: v for v in doctor.chapter_verdicts(doctor.simulate(gpu, 2))}
    return {c: (one[c], two[c]) for c in CHAPTERS}  # the chapters the agendas teach (the doctor knows more)


def chapter_minutes(topic: str) -> dict:
    """Minutes for one chapter taught in full: reading, running, exercises, guesses."""
    secs = sections(topic)
    run = runtimes()["chapters"].get(topic, {}).get("run_s", 0.0)
    return {
        "read": sum(s.read_min for s in secs),
        "run": run / 60,
        "exercises": sum(s.exercises for s in secs),
        "guesses": sum(s.guesses for s in secs),
        "exercise_min": EXERCISE_MIN * sum(s.exercises for s in secs),
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

TASTER_BUDGET_MIN = 90
HALF_DAY_BUDGET_MIN = 210
DAY_BUDGET_MIN = 360  # sessions of a teaching day, breaks not counted
CALC_MIN = 5  # assumption: the instructor moves a calculator's controls, the room predicts
QUIZ_MIN = 1  # assumption: one quiz question, answered in the page
BREAK_MIN = 15
OPEN_MIN = CLOSE_MIN = 5
MERGE_MIN = 30  # the closing discussion of the room's records
SKIP = ("Exercises", "References")  # exercises are timed by their allowance; references are not read aloud
TASTER_CORE = {
    "memory_hierarchy": "Arithmetic intensity and the roofline",
    "simt": "Occupancy: how many warps fit",
    "tensor_cores": "Peak from first principles",
    "collectives": "Algorithm bandwidth and bus bandwidth",
    "training_memory": "The memory budget",
    "serving": "The memory budget, and the concurrency it allows",
}


def read_min(topic: str, titles=None) -> float:
    return sum(s.read_min for s in sections(topic) if s.title not in SKIP and (titles is None or s.title in titles))


def quiz_questions(topic: str) -> int:
    from widgets import quiz

    return len(quiz.load(topic).questions)


def taster() -> dict:
    """Opening, one core section per chapter with its calculator, a guess and a few quiz questions, closing."""
    for questions in (3, 2, 1):
        rows = [["Opening: why bytes, FLOP and queues", "", OPEN_MIN]]
        for c in CHAPTERS:
            core = [s.title for s in sections(c) if s.title == TASTER_CORE[c]]
            if not core:
                raise ValueError(f"{c}: the taster's core section {TASTER_CORE[c]!r} is no longer in the chapter")
            q = min(questions, quiz_questions(c))
            rows.append([chapter_title(c), f"{TASTER_CORE[c]}; calculator; {q} quiz questions",
                         round5(read_min(c, core) + GUESS_MIN + CALC_MIN + QUIZ_MIN * q)])  # fmt: skip
        rows.append(["Closing: what to measure next (the chapters' Predict, then measure)", "", CLOSE_MIN])
        total = sum(r[2] for r in rows)
        if total <= TASTER_BUDGET_MIN:
            break
    return {"rows": rows, "total": total, "budget": TASTER_BUDGET_MIN, "fits": total <= TASTER_BUDGET_MIN}


def _full_chapter_min(c: str, exercises: int, quiz: bool = True) -> int:
    m = chapter_minutes(c)
    return round5(read_min(c) + exercises * EXERCISE_MIN + m["guess_min"] + m["run"] + (QUIZ_MIN * quiz_questions(c) if quiz else 0))


def half_day() -> dict:
    """The memory hierarchy and tensor cores in full with part of their exercises; SIMT's occupancy if it fits."""
    pair = ("memory_hierarchy", "tensor_cores")
    n = {c: chapter_minutes(c)["exercises"] for c in pair}
    for share in (2, 3, 4):  # half, a third, a quarter of the exercises
        k = {c: max(1, math.ceil(n[c] / share)) for c in pair}
        rows = []
        for c in pair:
            rows.append([chapter_title(c), f"all sections; {k[c]} of {n[c]} exercises; measure on the GPU", _full_chapter_min(c, k[c], quiz=False)])
            if c == pair[0]:
                rows.append(["Break", "", BREAK_MIN])
        occ = "Occupancy: how many warps fit"
        extra = ["SIMT execution", f"{occ}; one exercise", round5(read_min("simt", [occ]) + EXERCISE_MIN)]
        if sum(r[2] for r in rows) + extra[2] <= HALF_DAY_BUDGET_MIN:
            rows.append(extra)
        total = sum(r[2] for r in rows)
        if total <= HALF_DAY_BUDGET_MIN:
            break
    return {"rows": rows, "total": total, "budget": HALF_DAY_BUDGET_MIN, "fits": total <= HALF_DAY_BUDGET_MIN}


def two_day() -> dict:
    """Every chapter in book order, packed into two days; all exercises if they fit, else half (the rest as homework)."""
    for share in (1, 2):
        blocks = []
        for c in CHAPTERS:
            n = chapter_minutes(c)["exercises"]
            k = math.ceil(n / share)
            what = f"{k} exercises, quiz" if k == n else f"{k} of {n} exercises (the rest as homework), quiz"
            blocks.append([chapter_title(c), what, _full_chapter_min(c, k)])
        blocks.append(["Closing: the room's measurements side by side", "--merge table and plot", MERGE_MIN])
        days, day = [], []
        for b in blocks:
            if day and sum(x[2] for x in day) + b[2] > DAY_BUDGET_MIN:
                days.append(day)
                day = []
            day.append(b)
        days.append(day)
        totals = [sum(b[2] for b in d) for d in days]
        if len(days) <= 2 and max(totals) <= DAY_BUDGET_MIN:
            break
    rows = [[f"day {i}", *b] for i, d in enumerate(days, 1) for b in d]
    return {"rows": rows, "totals": totals, "budget": DAY_BUDGET_MIN,
            "fits": len(days) <= 2 and max(totals) <= DAY_BUDGET_MIN}  # fmt: skip
