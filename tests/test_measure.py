"""python -m widgets.measure: --out is checked before measuring, records are written atomically,
one failing topic does not stop the others, and the run ends with one line per failure.

Fake topic modules stand in for the real experiments so these tests take a second."""

from __future__ import annotations

import json
import math
import os
import sys
import types
from dataclasses import dataclass
from typing import Optional, Union

import pytest

from widgets import measure
from widgets.experiments import harness


@pytest.fixture
def topics(monkeypatch):
    """Install fake topic modules; returns the list of topics whose run_all() was called."""
    ran: list[str] = []

    def make(name, run):
        mod = types.ModuleType(f"widgets.experiments.{name}")

        def run_all():
            ran.append(name)
            return run()

        mod.run_all = run_all
        monkeypatch.setitem(sys.modules, mod.__name__, mod)

    make("fake_ok", lambda: {"bandwidth_bytes_per_s": 1.5e9, "sizes": [1, 2, 3]})
    make("fake_nan", lambda: {"time_s": math.nan, "rows": [{"dtype": "fp8", "time_s": math.inf, "reason": "no fp8 on the CPU"}]})
    make("fake_crash", lambda: 1 / 0)
    make("fake_unwritable", lambda: {"thing": object()})
    real_import = measure.importlib.import_module

    def import_module(name, *a, **k):
        if name == "widgets.experiments.fake_broken_import":  # a topic whose own import is broken
            raise ImportError("cannot import name 'missing_kernel' from 'widgets.experiments._triton'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(measure.importlib, "import_module", import_module)
    monkeypatch.setattr(measure, "TOPICS", ("fake_ok", "fake_nan", "fake_crash", "fake_unwritable", "fake_broken_import"))
    monkeypatch.setattr(harness, "provenance", lambda command=None: {
        "date": "2026-01-01T00:00:00+00:00", "command": command, "device": "test", "python": "3", "torch": "0",
        "git_commit": None, "git_dirty": None})
    return ran


def test_out_that_is_a_file_stops_before_any_experiment(topics, tmp_path, capsys):
    f = tmp_path / "not_a_folder"
    f.write_text("x")
    assert measure.main(["--topic", "fake_ok", "--out", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"python -m widgets.measure: error: --out {f} is a file, not a folder"]
    assert topics == []


def test_out_that_cannot_be_created_stops_before_any_experiment(topics, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert measure.main(["--topic", "fake_ok", "--out", str(f / "sub")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be created" in err[0] and str(f / "sub") in err[0]
    assert topics == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write to a read-only folder")
def test_out_that_is_read_only_stops_before_any_experiment(topics, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert measure.main(["--topic", "fake_ok", "--out", str(ro)]) == 2
    finally:
        ro.chmod(0o700)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not writable" in err[0]
    assert topics == []


def test_unwritable_out_is_detected_by_a_probe_write(topics, tmp_path, monkeypatch, capsys):
    # works as root too: the probe file cannot be created
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(measure.tempfile, "mkstemp", refuse)
    assert measure.main(["--topic", "fake_ok", "--out", str(tmp_path)]) == 2
    assert "not writable (Permission denied)" in capsys.readouterr().err
    assert topics == []


def test_missing_out_is_created_and_the_record_written(topics, tmp_path):
    out = tmp_path / "a" / "b"
    assert measure.main(["--topic", "fake_ok", "--out", str(out)]) == 0
    rec = harness.load_record(out / "fake_ok.json", "fake_ok")
    assert rec["results"] == {"bandwidth_bytes_per_s": 1.5e9, "sizes": [1, 2, 3]}
    assert rec["provenance"]["command"] == f"python -m widgets.measure --topic fake_ok --out {out}"
    assert sorted(p.name for p in out.iterdir()) == ["fake_ok.json"]  # no temporary or probe files left


def test_failures_do_not_stop_the_other_topics_and_are_listed_at_the_end(topics, tmp_path, capsys):
    argv = ["--out", str(tmp_path)]
    for t in ("fake_crash", "fake_broken_import", "fake_unwritable", "fake_ok", "fake_nan"):
        argv += ["--topic", t]
    assert measure.main(argv) == 1
    assert topics == ["fake_crash", "fake_unwritable", "fake_ok", "fake_nan"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake_nan.json", "fake_ok.json"]
    fails = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[FAIL]")]
    assert len(fails) == 3
    assert fails[0].startswith("[FAIL] fake_crash: run_all() failed") and "ZeroDivisionError" in fails[0]
    assert fails[1].startswith("[FAIL] fake_broken_import: import failed")
    assert fails[2].startswith("[FAIL] fake_unwritable: measured, but the record was not written")


def test_a_nan_is_written_as_null_with_its_reason_and_reads_back(topics, tmp_path):
    assert measure.main(["--topic", "fake_nan", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "fake_nan.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    rec = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))
    assert rec["results"]["time_s"] is None and rec["results"]["rows"][0]["time_s"] is None
    assert set(rec["nulls"]) == {"results.time_s", "results.rows[0].time_s"}
    assert rec["nulls"]["results.time_s"].startswith("nan")
    assert rec["results"]["rows"][0]["reason"] == "no fp8 on the CPU"
    assert harness.load_record(tmp_path / "fake_nan.json")["results"]["time_s"] is None


def test_a_failed_write_leaves_the_old_record_and_no_temporary_file(tmp_path):
    path = tmp_path / "t.json"
    good = {"topic": "t", "provenance": {k: "x" for k in harness.REQUIRED_PROVENANCE}, "results": {"a": 1}}
    harness.write_record(good, path)
    before = path.read_text()
    with pytest.raises(ValueError, match=r"record field record\.results\.a holds a 'object' value"):
        harness.write_record({**good, "results": {"a": object()}}, path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_an_interrupted_write_leaves_the_old_record(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    good = {"topic": "t", "provenance": {k: "x" for k in harness.REQUIRED_PROVENANCE}, "results": {"a": 1}}
    harness.write_record(good, path)
    before = path.read_text()

    def boom(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(harness.os, "replace", boom)
    with pytest.raises(OSError, match="No space left"):
        harness.write_record({**good, "results": {"a": 2}}, path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_an_unknown_topic_is_rejected_by_the_parser(topics, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        measure.main(["--topic", "nope", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err
    assert topics == []


def test_the_real_cli_refuses_a_file_as_out_before_measuring(tmp_path):
    import subprocess
    import time

    f = tmp_path / "record.json"
    f.write_text("{}")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "widgets.measure", "--out", str(f)], capture_output=True, text=True,
                          timeout=300, cwd=str(harness.REPO_ROOT))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"python -m widgets.measure: error: --out {f} is a file, not a folder"]
    assert "[run ]" not in proc.stdout and f.read_text() == "{}"
    assert time.perf_counter() - t0 < 120  # no experiment ran


@dataclass(frozen=True)
class Row(harness.Result):  # module level: from_record resolves the annotations by name
    size_bytes: int
    time_s: float


@dataclass(frozen=True)
class Typed(harness.Result):
    rows: tuple[Row, ...]
    optional: Union[Row, harness.Failed, None] = None
    note: Optional[str] = None


def test_a_typed_result_is_recorded_by_its_to_record_and_reads_back(topics, tmp_path, monkeypatch):
    """A topic's run_all() returns its frozen result type (harness.Result); the record holds its
    to_record() and reads back typed through from_record."""
    result = Typed((Row(4096, 1e-3), Row(8192, math.inf)), harness.Failed("RuntimeError: no fp8 here"))
    mod = types.ModuleType("widgets.experiments.fake_typed")
    mod.run_all = lambda: result
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(measure, "TOPICS", ("fake_typed",))
    assert measure.main(["--topic", "fake_typed", "--out", str(tmp_path)]) == 0
    rec = harness.load_record(tmp_path / "fake_typed.json", "fake_typed")
    assert rec["results"]["rows"][0] == {"size_bytes": 4096, "time_s": 1e-3}
    assert rec["results"]["rows"][1]["time_s"] is None and "results.rows[1].time_s" in rec["nulls"]
    back = Typed.from_record(rec["results"])
    assert back.rows[0] == Row(4096, 1e-3) and back.optional == harness.Failed("RuntimeError: no fp8 here")
