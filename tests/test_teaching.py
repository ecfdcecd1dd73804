"""The workshop kit (issue 15): the Teaching part, the learner edition, the taster's slides, the
merge of the room's records, and the licence.

- Fast checks: the toc and the files, the licence, the agenda's arithmetic helpers, the learner
  toc/config, the merge's error paths.
- ``slow``: ``--merge`` of the committed H200 records with a CPU record made here by the real CPU
  experiments of one topic (never a typed measurement).
- ``build``: a small learner edition (one chapter and the Teaching pages, to keep the time low),
  grepped for solution and instructor text that the full build (``built_book``) does contain; the
  taster deck in the full build, offline (no http(s) URL; every file it loads exists).
- ``browser``: the deck opens in headless Chromium with every non-file request aborted.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import headless
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "book" / "teaching"


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


learner = _module("gpubook_learner", ROOT / "book" / "_ext" / "learner.py")
plan = _module("gpubook_plan", TEACHING / "plan.py")


def _toc_files(toc):
    return learner._toc_files(toc)


# ---------------------------------------------------------------------------------------------
# files, toc, licence


def test_teaching_part_is_in_the_book():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = [p.get("caption") for p in toc["parts"]]
    assert "Teaching" in captions
    files = _toc_files(toc)
    for f in ("index", "agendas", "setup", "closing", "instructor_notes"):
        assert f"book/teaching/{f}" in files
    for topic in plan.CHAPTERS:
        assert f"book/teaching/instructor_{topic}" in files, f"no instructor notes for {topic}"
    for f in files:
        if f.startswith("book/teaching/"):
            assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f


def test_agendas_teach_every_chapter_of_the_toc():
    """plan.CHAPTERS is the toc's chapters in the toc's order: a new chapter cannot be left out of the agendas."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chapters = [f.split("/", 1)[1] for f in _toc_files(toc) if f.startswith("chapters/")]
    assert list(plan.CHAPTERS) == chapters


def test_instructor_notes_name_the_misconceptions():
    text = " ".join((TEACHING / f"instructor_{t}.md").read_text() for t in plan.CHAPTERS)
    for needle in ("Dense against sparse peaks", "GB or GiB", "algbw against busbw", "More occupancy is always faster",
                   "The OOM message names the culprit"):  # fmt: skip
        assert needle in text, f"the instructor notes do not discuss {needle!r}"
    for t in plan.CHAPTERS:
        page = (TEACHING / f"instructor_{t}.md").read_text()
        assert "## Demo live" in page and "## Give as exercises" in page and "## Misconceptions" in page, t


def test_licence_covers_code_and_prose():
    text = (ROOT / "LICENSE").read_text()
    assert "MIT License" in text and "Permission is hereby granted" in text
    assert "CC BY 4.0" in text and "creativecommons.org/licenses/by/4.0" in text
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT AND CC-BY-4.0" and project["license-files"] == ["LICENSE"]
    assert "LICENSE" in (ROOT / "README.md").read_text()


def test_reveal_is_pinned_exactly():
    pkg = json.loads((ROOT / "package.json").read_text())
    version = pkg["devDependencies"]["reveal.js"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "pin an exact version"
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/reveal.js"]["version"] == version


# ---------------------------------------------------------------------------------------------
# the agendas' numbers


def test_word_count_reads_text_not_markup():
    assert plan.words("The {term}`ridge point <Ridge point>` is $F/B$ here.") == 6
    assert plan.words(":::{admonition} Takeaway\n:class: important\nCount bytes.\n:::") == 3
    assert plan.words("") == 0


def test_sections_cover_each_chapter():
    for topic in plan.CHAPTERS:
        secs = plan.sections(topic)
        titles = [s.title for s in secs]
        assert "Exercises" in titles and "Predict, then measure" in titles, (topic, titles)
        assert sum(s.exercises for s in secs) >= 3, f"{topic}: exercises not counted"
        assert sum(s.guesses for s in secs) >= 1, f"{topic}: no 'Guess first' counted"
        assert all(s.words >= 0 for s in secs)


def test_recorded_run_times_and_gpu_seconds():
    # the CPU build's run times are kept for reference only (the agendas use the H200's measure times): a chapter newer
    # than the last `plan.py collect` may be missing; every GPU measure time must be there
    rt = plan.runtimes()
    assert set(rt["chapters"]) <= set(plan.CHAPTERS) and all(c["run_s"] > 0 for c in rt["chapters"].values())
    gpu, logs = plan.gpu_seconds()
    assert set(gpu) == set(plan.CHAPTERS) and "benchmarks/h200/" in logs
    assert plan.round5(0.1) == 5 and plan.round5(10) == 10 and plan.round5(10.2) == 15


def test_each_agenda_fits_its_time():
    """The agendas adapt (fewer quiz questions, a share of the exercises, chapters packed into days); when
    the chapters outgrow even that, this fails and the page says so."""
    t, h, d = plan.taster(), plan.half_day(), plan.two_day()
    assert t["fits"] and t["total"] == sum(r[2] for r in t["rows"]) <= plan.TASTER_BUDGET_MIN, t
    taught = {r[0] for r in t["rows"]}
    for c in plan.CHAPTERS:  # every chapter is taught in the taster or named as left for later
        assert (plan.chapter_title(c) in taught) != (plan.chapter_title(c) in t["rows"][-1][1]), c
    assert h["fits"] and h["total"] <= 210, h
    assert h["rows"][0][0].startswith("Set-up check") and any(r[0] == "Break" for r in h["rows"]), h
    assert d["fits"] and len(d["totals"]) == 2 and max(d["totals"]) <= plan.DAY_BUDGET_MIN, d
    assert d["rows"][0][1].startswith("Set-up check"), d
    assert sum(r[1] == "Breaks and lunch" for r in d["rows"]) == 2, "each day has its breaks and lunch"
    covered = [r[1] for r in d["rows"]]
    later = d["left_for_later"]
    assert later == list(plan.CHAPTERS[len(plan.CHAPTERS) - len(later):]), "only the last chapters are left for later"
    for c in plan.CHAPTERS:  # every chapter is taught or named in the closing row as left for later
        assert (plan.chapter_title(c) in covered) != (c in later), c
        assert (c in later) == (plan.chapter_title(c) in d["rows"][-1][2]), c


def test_teaching_rate_and_exercise_kinds():
    """Taught, not silently read (half the silent rate); exercises timed by the kind their title names."""
    assert plan.WORDS_PER_MIN < plan.SILENT_WORDS_PER_MIN
    assert plan.exercise_min("By hand: SAXPY") < plan.exercise_min("With the calculator: x") < plan.exercise_min("Code: x")
    assert plan.exercise_min("Change the experiment: x") == plan.EXERCISE_KIND_MIN["Change the experiment"]
    assert plan.exercise_min("Something else") == plan.EXERCISE_OTHER_MIN
    for topic in plan.CHAPTERS:
        titles = plan.exercise_titles(topic)
        assert len(titles) == plan.chapter_minutes(topic)["exercises"] and all(titles), topic
        assert plan.exercises_min(topic) == sum(plan.exercise_min(t) for t in titles)
        assert plan.exercises_min(topic, 1) == min(plan.exercise_min(t) for t in titles)


def test_gpu_logs_are_ordered_by_time_not_name(tmp_path, monkeypatch):
    """measure_smoke_* (earlier) sorts after measure_final_* by name; the later run must win."""
    if not (ROOT / ".git").exists():
        pytest.skip("no git history here (e.g. a tree copied without .git): the logs' commit times are unknown")
    gpu, logs = plan.gpu_seconds()
    names = [p.rsplit("/", 1)[1] for p in logs.split(", ")]
    if "measure_smoke_2026-12-01.log" in names and "measure_final_2026-12-01.log" in names:
        assert names.index("measure_smoke_2026-12-01.log") < names.index("measure_final_2026-12-01.log")
        final = (ROOT / "benchmarks" / "h200" / "measure_final_2026-12-01.log").read_text()
        last = dict(re.findall(r"^\[done\] (\w+) in ([0-9.]+) s", final, re.M))
        paths = logs.split(", ")
        later = paths[[p.rsplit("/", 1)[1] for p in paths].index("measure_final_2026-12-01.log") + 1:]
        rerun = {t for p in later for t in re.findall(r"^\[done\] (\w+) in", (ROOT / p).read_text(), re.M)}
        assert all(gpu[t] == float(v) for t, v in last.items() if t not in rerun)  # a later batch's run wins
        assert all(t in gpu for t in rerun)


def test_prerequisite_map_covers_the_links():
    """The hand-written map agrees with the notebooks: every earlier chapter linked or imported is a prerequisite."""
    assert set(plan.PREREQUISITES) == set(plan.CHAPTERS)
    for c in plan.CHAPTERS:
        earlier = [o for o in plan.linked_chapters(c) if plan.CHAPTERS.index(o) < plan.CHAPTERS.index(c)]
        assert set(earlier) <= set(plan.PREREQUISITES[c]), (c, earlier)
        assert all(plan.CHAPTERS.index(o) < plan.CHAPTERS.index(c) for o in plan.PREREQUISITES[c]), c
    assert all("memory_hierarchy" in plan.PREREQUISITES[c] for c in plan.CHAPTERS[1:]), "the roofline is the common ground"


def test_two_gpu_chapters_come_from_the_doctor():
    verdicts = plan.two_gpu_chapters("H200-SXM")
    assert set(verdicts) == set(plan.CHAPTERS)
    changed = [c for c, (one, two) in verdicts.items() if one.status != two.status]
    assert "collectives" in changed  # NCCL across two GPUs (the doctor's rule), gloo on the CPU with one


# ---------------------------------------------------------------------------------------------
# learner edition: toc and config (no build)


def test_learner_toc_and_config_leave_out_the_instructor_pages():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    full = _toc_files(toc)
    mine = _toc_files(learner.learner_toc(toc))
    assert [f for f in full if not learner.is_instructor_page(f)] == mine
    assert not any("instructor" in f for f in mine) and "book/teaching/agendas" in mine
    small = _toc_files(learner.learner_toc(toc, ["chapters/simt", "book/teaching/instructor_simt"]))
    assert small == ["chapters/simt"]
    config = learner.learner_config(yaml.safe_load((ROOT / "_config.yml").read_text()))
    assert learner.INSTRUCTOR_GLOB in config["exclude_patterns"]
    assert all(Path(p).is_absolute() for p in config["sphinx"]["local_extensions"].values())
    # launch buttons would open the repository's notebooks with their solutions: gone, or pointed at a learner fork
    base = yaml.safe_load((ROOT / "_config.yml").read_text())
    bare = learner.learner_config(base, launch_repo="")
    assert not any(bare["launch_buttons"].get(k) for k in ("colab_url", "binderhub_url", "jupyterhub_url"))
    fork = learner.learner_config(base, launch_repo="https://github.com/someone/learner-fork")
    assert fork["repository"]["url"] == "https://github.com/someone/learner-fork"
    assert fork["launch_buttons"] == base["launch_buttons"]


# ---------------------------------------------------------------------------------------------
# merge


def test_merge_refuses_nothing_to_merge(tmp_path):
    from widgets import merge

    (tmp_path / "notes.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="no comparison"):
        merge.merge([tmp_path], tmp_path / "out")
    with pytest.raises(ValueError, match="no such file"):
        merge.merge([tmp_path / "missing"], tmp_path / "out")
    out = subprocess.run([sys.executable, "-m", "widgets.measure", "--merge", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and "no comparison" in out.stderr


def test_merge_keeps_a_cpu_record_out_of_the_headline_and_the_plot(tmp_path):
    """A record whose provenance names a CPU (here the H200 record with its device renamed: the labelling, not the
    numbers, is under test) is labelled 'different device', counted in no headline and left out of the plot."""
    from widgets import merge

    rec = json.loads((ROOT / "widgets" / "data" / "h200" / "memory_hierarchy.json").read_text())
    (tmp_path / "h200").mkdir()
    (tmp_path / "h200" / "memory_hierarchy.json").write_text(json.dumps(rec))
    rec["provenance"] = {**rec["provenance"], "device": "CPU (x86_64)"}
    rec["provenance"].pop("gpu", None)
    (tmp_path / "laptop").mkdir()
    (tmp_path / "laptop" / "memory_hierarchy.json").write_text(json.dumps(rec))
    sources, _ = merge.collect([tmp_path / "h200", tmp_path / "laptop"])
    rows = merge.table_rows(sources)
    gpu = [d for d in rows if "laptop" not in d["machine"]]
    cpu = [d for d in rows if "laptop" in d["machine"]]
    assert cpu and all(d["label"] == merge.OTHER_DEVICE and d["within_target"] == "" for d in cpu)
    assert gpu and not any(d["label"] == merge.OTHER_DEVICE for d in gpu)
    preds = [d for d in gpu if d["label"] == "prediction"]
    md = merge.to_markdown(rows, sources, [])
    assert f"{sum(d['within_target'] for d in preds)} of {len(preds)} GPU predictions" in md and "different device" in md
    fig = merge.figure(rows)
    assert [t.name for t in fig.data] == [gpu[0]["machine"]]


@pytest.mark.slow
def test_merge_h200_and_a_cpu_record(tmp_path, memory_hierarchy_cpu_run):
    """The committed H200 records and a CPU record made now (the memory hierarchy's real CPU run, made
    once per test run by the fixture in tests/conftest.py)."""
    from widgets import accuracy, merge

    assert memory_hierarchy_cpu_run["returncode"] == 0, memory_hierarchy_cpu_run["stderr"]
    cpu = Path(memory_hierarchy_cpu_run["out"])
    h200 = ROOT / "widgets" / "data" / "h200"
    out = tmp_path / "merged"
    run = subprocess.run([sys.executable, "-m", "widgets.measure", "--merge", str(h200), str(cpu), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    for name in merge.OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    # every comparison of every record, recomputed independently here
    expected = 0
    for f in [*sorted(h200.glob("*.json")), cpu / "memory_hierarchy.json"]:
        rec = json.loads(f.read_text())
        if "topic" in rec and "results" in rec:
            expected += len(accuracy.rows_for(rec["topic"], rec))
    rows = list(__import__("csv").DictReader((out / "merged.csv").open()))
    assert len(rows) == expected
    machines = {r["machine"] for r in rows}
    assert any("H200" in m for m in machines) and any("laptop" in m for m in machines) and len(machines) == 2
    for r in rows:
        assert r["label"] in accuracy.LABELS if "H200" in r["machine"] else r["label"] == merge.OTHER_DEVICE
        assert abs(float(r["ratio"]) - float(r["measured"]) / float(r["model"])) <= 1e-9 * abs(float(r["ratio"]))
    html = (out / "merged.html").read_text()
    assert html.count("plotly-graph-div") == 1 and "Plotly.newPlot" in html
    fig = json.loads(re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", html, re.S).group(1))
    assert {t["name"] for t in fig} == {m for m in machines if "H200" in m}, "one trace per GPU machine, no CPU in the plot"
    md = (out / "merged.md").read_text()
    assert md.count("\n| memory_hierarchy |") + md.count("\n| simt |") > 10


# ---------------------------------------------------------------------------------------------
# builds


def _solution_phrases() -> dict[str, list[str]]:
    """Per chapter, plain-text phrases from each exercise solution (what the learner edition must not hold)."""
    out = {}
    for topic in plan.CHAPTERS:
        nb = json.loads((ROOT / "chapters" / f"{topic}.ipynb").read_text())
        phrases = []
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            for m in re.finditer(r"```\{solution\}[^\n]*\n(?::[^\n]*\n)*\n?(.*?)```", src, re.S):
                for sentence in re.split(r"(?<=[.:;])\s+", m.group(1)):
                    plain = re.sub(r"\s+", " ", sentence).strip()
                    if len(plain) >= 25 and not re.search(r"[`${}\\*_<>\[\]()|#=]", plain):
                        phrases.append(plain[:60])
                        break
        out[topic] = phrases
    return out


INSTRUCTOR_PHRASES = ("Misconceptions learners bring", "Give as exercises", "For instructors")


def _html_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*.html"))


@pytest.mark.build
@pytest.mark.slow
def test_small_learner_edition_has_no_solutions_or_instructor_notes(tmp_path, built_book):
    topic = "simt"  # any chapter with exercises; one keeps the build short
    phrases = _solution_phrases()[topic]
    assert len(phrases) >= 3, "the grep needs solution text to look for"
    # control: the full book holds them, so the grep below can fail
    full = (Path(built_book) / "chapters" / f"{topic}.html").read_text()
    import html as _h

    full_text = _h.unescape(re.sub(r"<[^>]+>", "", full))
    present = [p for p in phrases if p in re.sub(r"\s+", " ", full_text)]
    assert present, f"none of the solution phrases is in the full build: {phrases}"
    full_teaching = _html_text(Path(built_book) / "book" / "teaching")
    assert all(p in full_teaching for p in INSTRUCTOR_PHRASES)

    only = [f"chapters/{topic}", "book/teaching/index", "book/teaching/agendas", "book/teaching/setup",
            "book/teaching/closing", "book/teaching/instructor_notes", f"book/teaching/instructor_{topic}",
            "book/references"]  # fmt: skip  (the bibliography: the chapter's citations resolve)
    proc = learner.build(tmp_path / "learner", only, strict=False)
    log = (tmp_path / "learner" / "build.log").read_text()
    assert proc.returncode == 0, log[-4000:]
    # the only warnings allowed: links to pages this small build left out
    left_out = r"unknown document|undefined label|not included in any toctree|term not in glossary"
    warnings = [w for w in re.findall(r"WARNING: .*", log) if not re.search(left_out, w)]
    assert not warnings, warnings
    html = tmp_path / "learner" / "html"
    assert (html / "chapters" / f"{topic}.html").exists()
    assert not list((html / "book" / "teaching").glob("instructor*")), "instructor pages in the learner edition"
    text = re.sub(r"\s+", " ", _h.unescape(re.sub(r"<[^>]+>", "", _html_text(html))))
    for p in present:
        assert p not in text, f"solution text in the learner edition: {p!r}"
    for p in INSTRUCTOR_PHRASES:
        assert p not in text, f"instructor text in the learner edition: {p!r}"
    chapter = (html / "chapters" / f"{topic}.html").read_text()
    assert not re.search(r'class="[^"]*\bsolution\b', chapter), "a solution block survived"
    assert re.search(r'class="[^"]*\bsolution\b', full), "the full build's solutions are not where this test looks"
    source = html / "_sources" / "chapters" / f"{topic}.ipynb"  # what the download button serves
    assert source.exists() and "{solution}" not in source.read_text() and "{exercise}" in source.read_text()
    assert not list((html / "_sources").rglob("instructor*"))
    assert "guess-answer" in chapter, "the answers to 'Guess first' stay in the learner edition"
    assert 'class="gpubook-quiz"' in chapter, "the quiz stays in the learner edition"


def _deck(built_book) -> tuple[Path, str]:
    deck = Path(built_book) / "slides" / "taster.html"
    assert deck.exists(), "the taster deck is not in the build"
    return deck, deck.read_text(encoding="utf-8")


@pytest.mark.build
def test_taster_deck_is_in_the_build_and_offline(built_book):
    deck, text = _deck(built_book)
    assert not re.search(r"https?://", text), re.findall(r"https?://\S{0,60}", text)[:5]
    for ref in re.findall(r'(?:src|href)="([^"#]+)"', text):
        assert (deck.parent / ref).resolve().exists(), f"the deck loads {ref}, which is not in the build"
    assert text.count("Takeaway") >= len(plan.CHAPTERS), "one takeaway slide per chapter at least"
    for topic in plan.CHAPTERS:
        assert f'href="../chapters/{topic}.html"' in text, f"no section for {topic}"
    assert text.count("plotly-graph-div") >= 3 and "deck-figure" in text


@pytest.mark.build
@pytest.mark.browser
def test_taster_deck_opens_offline_in_chromium(built_book):
    if not headless.CHROMIUM:
        pytest.skip(headless.MISSING)
    pw = pytest.importorskip("playwright.sync_api")
    deck, _ = _deck(built_book)
    with pw.sync_playwright() as p:
        b = headless.launch(p)
        page = b.new_page()
        outside, errors = [], []

        def route(r):
            if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(deck.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        total = page.evaluate("() => Reveal.getTotalSlides()")
        assert total >= 2 * len(plan.CHAPTERS)
        page.keyboard.press("ArrowRight")
        assert page.evaluate("() => Reveal.getIndices().h") == 1
        b.close()
    assert not outside, outside
    assert not errors, errors


def test_deck_uses_the_core_sections_calculator_after_a_predict_slide():
    """No build: a fake doctree with two calculators; the deck takes the one in the taster's core section (shared
    TASTER_CORE), puts a 'Predict first' slide before it, and steps linearly (Space and arrows reach every slide)."""
    pytest.importorskip("docutils", reason="docutils is not installed (the deck is made by the book's Sphinx extension)")
    pytest.importorskip("sphinx.util", reason="Sphinx is not installed (the deck is made by the book's Sphinx extension)")
    from types import SimpleNamespace

    from docutils import nodes

    teaching = _module("gpubook_teaching_ext", ROOT / "book" / "_ext" / "teaching.py")
    assert teaching._taster_core() == plan.TASTER_CORE

    def section(title, *children):
        return nodes.section("", nodes.title(text=title), *children)

    def calc(name):
        return nodes.raw("", f'<div class="plotly-graph-div" id="{name}"></div><script>Plotly.newPlot("{name}")</script>', format="html")

    tree = nodes.document(None, None)
    tree += section("SIMT execution", section("Divergence", calc("divergence")), section(plan.TASTER_CORE["simt"], calc("occupancy")))
    app = SimpleNamespace(builder=SimpleNamespace(format="html", images={}), env=SimpleNamespace(),
                          config=SimpleNamespace(html_title="Book", project="Book"))
    teaching._collect(app, tree, "chapters/simt")
    entry = app.env.gpubook_slides["chapters/simt"]
    assert "occupancy" in entry["calculator"] and "divergence" not in entry["calculator"]
    deck = teaching.deck_html(app, [entry])
    assert deck.index("Predict first") < deck.index('id="occupancy"')
    assert 'navigationMode: "linear"' in deck and "Arrow keys to move" not in deck
    assert "--out room/merged" in deck



# ---------------------------------------------------------------------------------------------
# exercise checks: a FAIL line points to the method, never to the answer (reviews of round 3:
# check_waves printed "ceil(5120/128) x ceil(5120/256) = 800", check_activation_gib the formula
# with the exercise's values filled in)


def _by_hand_checks():
    """(name, check, its answers recomputed from the models, wrong answers to try). Each check takes
    the exercise's defaults; the answers come from the models, as the checks compute them."""
    from widgets import hardware as hw
    from widgets.models import llms
    from widgets.models import memory_hierarchy as mh
    from widgets.models import serving as sv
    from widgets.models import simt as sm
    from widgets.models import tensor_cores as tc
    from widgets.models import training_memory as tm
    from widgets.ui import memory_hierarchy as umh
    from widgets.ui import serving as usv
    from widgets.ui import simt as usm
    from widgets.ui import tensor_cores as utc
    from widgets.ui import training_memory as utm
    from widgets.units import GiB

    waves = tc.gemm_waves(5120, 5120, 128, 256, 132)
    rate = tc.FLOP_PER_CLOCK_PER_SM["A100-SXM-80GB"]["bf16"]
    clocks = tc.instruction_clocks(16, 8, 16, rate)
    g8, g70 = llms.get_model("Llama-3-8B").params, llms.get_model("Llama-3-70B").params
    state = tm.training_state_bytes(g8) / 1e9
    act = tm.activation_bytes_per_layer(2048, 1, 12288, 96) / GiB
    days = tm.training_time_s(175e9, 300e9, 1024, hw.get_gpu("A100-SXM-80GB").peak("bf16"), 0.5) / 86400
    mfu = tm.mfu(5e4, 1.3e9, hw.get_gpu("H100-SXM").peak("bf16"))
    batch = tm.memory_budget("Llama-3-8B", "H200-SXM", 1, 4096, stage=3, gpus=8, recompute="full").max_micro_batch
    zero = next(k for k in range(4) if tm.zero_state_bytes_per_gpu(g70, 64, k) <= 80 * GiB)
    kv = llms.LLAMA_3_70B.kv_bytes_per_sequence(32768, "fp8") / GiB
    ridge = sv.decode_step("Llama-3-8B", "H100-SXM", 1, 0).ridge_batch
    peak = tc.peak_check("H100-SXM", "fp8").peak_flop_per_s
    e5m2 = tc.number_format("fp8_e5m2").max_normal
    h100 = hw.get_gpu("H100-SXM")
    inflight = mh.littles_law_bytes_in_flight(h100.hbm_bytes_per_s, 700e-9) / h100.sms / 1024
    atomics = sm.reduction_atomics(1 << 26, "block", 256)
    fusion = (mh.elementwise_chain_bytes(2**26, 3, 2), mh.elementwise_chain_bytes(2**26, 3, 2, fused=True))
    # simt's by-hand exercises (Hopper SM): the stencil kernel's occupancy (by hand: 8 blocks, registers), the rare
    # branch's mean warp time (1 - (49/50)^32 of warps run the 2,000-cycle path), four blocks' shared memory (56 KiB)
    stencil = sm.occupancy(192, 40, 20 * 1024).blocks_per_sm
    branch = sm.random_branch_time(1 / 50, 2000, 200)
    smem4 = sm.smem_per_block_for(4)
    return [
        ("tensor_cores.check_waves", utc.check_waves, waves, [(0, 0, 0.0), (waves[0], 0, 0.0), (waves[0], waves[1], 0.0)]),
        ("tensor_cores.check_mma_clocks", utc.check_mma_clocks, (clocks, tc.TENSOR_CORES_PER_SM), [(0, 0), (clocks * 3, 4), (clocks, 0)]),
        ("tensor_cores.check_peak", utc.check_peak, (peak,), [(0,), (peak * 0.7,)]),
        ("tensor_cores.check_format_max", lambda a: utc.check_format_max("fp8_e5m2", a), (e5m2,), [(0,), (448,)]),
        *_kernels_checks(),
        ("training_memory.check_state_gb", utm.check_state_gb, (state,), [(0,), (state * 1.5,), ("x",)]),
        ("training_memory.check_zero_stage", utm.check_zero_stage, (zero,), [(k,) for k in range(4) if k != zero]),
        ("training_memory.check_activation_gib", utm.check_activation_gib, (act,), [(0,), (act * 1.5,), ("x",)]),
        ("training_memory.check_full_recompute_cost", utm.check_full_recompute_cost, (1 / 3,), [(0,), (0.5,), ("x",)]),
        ("training_memory.check_gpt3_days", utm.check_gpt3_days, (days,), [(0,), (days * 1.5,), ("x",)]),
        ("training_memory.check_mfu", utm.check_mfu, (mfu,), [(0,), (mfu * 1.5,), ("x",)]),
        ("training_memory.check_max_batch", utm.check_max_batch, (batch,), [(batch + 1,), (max(1, batch - 1),), ("x",)]),
        ("serving.check_kv_cache_gib", usv.check_kv_cache_gib, (kv,), [(0,), (kv * 1.5,)]),
        ("serving.check_ridge_batch", usv.check_ridge_batch, (ridge,), [(0,), (ridge * 1.5,)]),
        ("memory_hierarchy.check_bytes_in_flight", umh.check_bytes_in_flight, (inflight,), [(0,), (inflight * 1.5,)]),
        ("memory_hierarchy.check_fusion_bytes", umh.check_fusion_bytes, fusion, [(0, 0), (fusion[0], 0)]),
        ("simt.check_atomics", usm.check_atomics, (atomics,), [(0,), (atomics * 2,)]),
        ("simt.check_stencil_blocks", usm.check_stencil_blocks, (stencil,), [(0,), (stencil + 2,), (stencil - 1,), ("x",)]),
        ("simt.check_branch_cycles", usm.check_branch_cycles, (branch,), [(200,), (0.98 * 200 + 0.02 * 2000,), ("x",)]),
        ("simt.check_smem_for_blocks", usm.check_smem_for_blocks, (smem4,), [(0,), (smem4 // 1024,), (228 * 1024 // 4,), ("x",)]),
    ]


def _kernels_checks():
    """The kernels chapter's checks, with their answers from widgets.models.kernels."""
    from widgets.models import kernels as km
    from widgets.ui import kernels as uk

    naive = km.rung_cost("naive").wavefronts_per_warp
    smem = km.tile_summary("vectorized", bm=128, bn=128, bk=16).smem_bytes_per_block
    inten = km.tile_summary("vectorized", tm=8, tn=8).smem_flop_per_byte
    reps = km.repeats_needed(0.05, 1.0, 0.01)
    err = km.host_timing_error(5e-6, 20e-6)
    return [
        ("kernels.check_naive_wavefronts", uk.check_naive_wavefronts, (naive,), [(0,), (32,), (64,), ("x",)]),
        ("kernels.check_smem_per_block", uk.check_smem_per_block, (smem,), [(0,), (smem / 2,), (16,), ("x",)]),
        ("kernels.check_thread_intensity", uk.check_thread_intensity, (inten,), [(0,), (inten * 2,), ("x",)]),
        ("kernels.check_repeats", uk.check_repeats, (reps,), [(0,), (reps * 2,), (25,), ("x",)]),
        ("kernels.check_host_error", uk.check_host_error, (err,), [(0,), (err * 100,), (err + 1,), ("x",)]),
        ("kernels.check_patched_result", uk.check_patched_result, (35.0,), [(0,), (21,), ("x",)]),
    ]


def _numbers(text):
    return [float(x.replace(",", "")) for x in re.findall(r"(?<![\w.])\d[\d,]*\.?\d*(?:e[+-]?\d+)?", text)]


def test_check_hints_point_to_the_method_not_the_answer(capsys):
    for name, check, answers, wrongs in _by_hand_checks():
        for args in wrongs:
            assert check(*args) is False, f"{name}{args} passed a wrong answer"
            out = capsys.readouterr().out
            assert out.startswith("FAIL: "), (name, args, out)
            echoed = [float(a) for a in args if isinstance(a, (int, float))]
            for x in _numbers(out):
                for want in answers:
                    if want and not any(x == e for e in echoed):
                        assert abs(x / want - 1) > 0.005, f"{name}{args} gives the answer away: {out.strip()!r}"
        assert check(*answers) is True, f"{name} refuses the models' answer {answers}"
        assert capsys.readouterr().out.startswith("PASS: ")


def test_hint_test_can_fail(capsys):
    """The scan above catches a hint that states the answer (the old check_waves line)."""
    def leaky(tiles):
        from widgets.ui._core import verdict
        return verdict(False, f"tiles: ceil(5120/128) x ceil(5120/256) = {800}, not {tiles}")

    leaky(0)
    out = capsys.readouterr().out
    assert any(abs(x / 800 - 1) <= 0.005 for x in _numbers(out))


# ---------------------------------------------------------------------------------------------
# the clock schedule (instructor review, issue 15, finding 14: no clock times, no breaks)


def test_schedule_by_hand():
    """A 100-min block across a break at +60 min is split around it; a block with <= 10 min left finishes
    first (the break moves); a block due to start < 10 min before a break starts after it."""
    rows = plan.schedule([["A", "a", 100], ["B", "b", 50]], "09:00", [("Break", 60, 15)])
    assert rows == [["09:00", "10:00", "A", "a", 60], ["10:00", "10:15", "Break", "", 15],
                    ["10:15", "10:55", "A (continued)", "a", 40], ["10:55", "11:45", "B", "b", 50]]
    assert plan.schedule([["A", "", 65]], "09:00", [("Break", 60, 15)]) == [["09:00", "10:05", "A", "", 65]]  # no later block
    assert plan.schedule([["A", "", 65], ["B", "", 5]], "09:00", [("Break", 60, 15)])[1] == ["10:05", "10:20", "Break", "", 15]
    late = plan.schedule([["A", "", 55], ["B", "", 30]], "13:30", [("Break", 60, 15)])
    assert late == [["13:30", "14:25", "A", "", 55], ["14:25", "14:40", "Break", "", 15], ["14:40", "15:10", "B", "", 30]]
    with pytest.raises(ValueError, match="24-hour time"):
        plan.schedule([["A", "", 5]], "9am")
    with pytest.raises(ValueError, match="midnight"):
        plan.schedule([["A", "", 120]], "23:00")


def _contiguous(rows, start):
    assert rows[0][0] == start
    assert all(a[1] == b[0] for a, b in zip(rows, rows[1:])), rows
    assert all(plan.clock_min(r[1]) - plan.clock_min(r[0]) == r[-1] for r in rows), rows


@pytest.mark.parametrize("start", ["09:00", "13:30"])
def test_taster_and_half_day_on_the_clock(start):
    for agenda in (plan.taster(), plan.half_day()):
        rows = plan.schedule(agenda["rows"], start)
        _contiguous(rows, start)
        assert plan.clock_min(rows[-1][1]) - plan.clock_min(start) == agenda["total"]
        assert [r[2] for r in rows] == [r[0] for r in agenda["rows"]]  # no break added, none dropped


def test_two_day_course_on_the_clock():
    d = plan.two_day()
    rows = plan.two_day_schedule("09:00")
    for day in sorted({r[0] for r in rows}):
        mine = [r[1:] for r in rows if r[0] == day]
        _contiguous(mine, "09:00")
        assert plan.clock_min(mine[-1][1]) <= plan.clock_min("17:00"), mine[-1]
        lunch = [r for r in mine if r[2] == "Lunch"]
        if plan.clock_min(mine[-1][1]) > plan.clock_min("12:30") + plan.BREAK_SHIFT_MIN:  # a day that runs past lunch has one
            assert len(lunch) == 1 and lunch[0][4] == 60
            assert abs(plan.clock_min(lunch[0][0]) - plan.clock_min("12:30")) <= plan.BREAK_SHIFT_MIN, lunch
        else:
            assert not lunch
    # every taught chapter's minutes survive the splitting at breaks and at the day's end
    for c in plan.CHAPTERS:
        if c in d["left_for_later"]:
            continue
        title = plan.chapter_title(c)
        planned = sum(r[3] for r in d["rows"] if r[1] in (title, f"{title} (continued)"))
        on_clock = sum(r[5] for r in rows if r[3] in (title, f"{title} (continued)"))
        assert planned == on_clock > 0, c
