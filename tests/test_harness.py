"""widgets.experiments.harness and python -m widgets.measure."""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from widgets.experiments import harness


def test_time_fn_reports_the_median_and_spread():
    calls = []
    t = harness.time_fn(lambda: calls.append(1), warmup=2, repeat=5)
    assert t.min_s <= t.median_s <= t.max_s and t.median_s >= 0
    if not torch.cuda.is_available():
        assert t.repeat == min(5, harness.CPU_MAX_REPEAT) and len(calls) == 1 + t.repeat
    with pytest.raises(ValueError, match="repeat"):
        harness.time_fn(lambda: None, repeat=0)


def test_setup_runs_outside_the_timed_region():
    import time

    t = harness.time_fn(lambda: None, setup=lambda: time.sleep(0.02), warmup=0, repeat=2)
    assert t.median_s < 0.01


def test_choose_bytes_without_gpu():
    if torch.cuda.is_available():
        assert 0 < harness.choose_bytes(2**30, 1024) <= 2**30
    else:
        assert harness.choose_bytes(2**30, 1024) == 1024
        assert harness.free_device_bytes() == 0 and harness.l2_bytes() == 0


def test_provenance_has_the_required_fields():
    p = harness.provenance("python -m widgets.measure")
    for key in ("date", "command", "device", "torch", "cuda", "gpu", "driver", "python"):
        assert key in p
    assert p["command"] == "python -m widgets.measure" and p["torch"] == torch.__version__


def test_load_reference_reads_committed_records_and_fails_clearly():
    ref = harness.load_reference("memory_hierarchy")
    assert ref["topic"] == "memory_hierarchy" and "results" in ref
    with pytest.raises(FileNotFoundError, match="no recorded"):
        harness.load_reference("no_such_topic")


def test_describe_run_says_where_it_runs():
    line = harness.describe_run("x")
    assert ("No GPU" in line) != torch.cuda.is_available()


def test_measure_cli_writes_a_record(memory_hierarchy_cpu_run):
    """A real `python -m widgets.measure --topic memory_hierarchy` run (the fixture in tests/conftest.py)."""
    assert memory_hierarchy_cpu_run["returncode"] == 0, memory_hierarchy_cpu_run["stderr"]
    rec = json.loads((Path(memory_hierarchy_cpu_run["out"]) / "memory_hierarchy.json").read_text())
    assert rec["topic"] == "memory_hierarchy"
    assert rec["provenance"]["command"].startswith("python -m widgets.measure --topic memory_hierarchy")
    assert set(rec["results"]) >= {"hbm_bandwidth", "working_set_sweep", "strided_access"}


# --- strict records and their schema -------------------------------------------------------------
_GOOD = {"topic": "t", "provenance": {k: "x" for k in harness.REQUIRED_PROVENANCE}, "results": {"a": 1.0}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("   \n", "empty file"),
        (json.dumps(_GOOD)[:-7], "not valid JSON"),  # truncated
        ("<html>", "not valid JSON"),
        ("null", "a record must be a JSON object .* got null"),
        ("[]", "a record must be a JSON object .* got list"),
        ('{"topic": "t", "results": {}}', "missing field 'provenance'"),
        (json.dumps({**_GOOD, "topic": 3}), "field 'topic' must be a non-empty string"),
        (json.dumps({**_GOOD, "results": None}), "field 'results' must be an object"),
        (json.dumps({**_GOOD, "provenance": {"date": "x"}}), "missing field 'provenance.command'"),
        (json.dumps({**_GOOD, "results": {"a": float("nan")}}), "non-standard JSON constant NaN"),
        (json.dumps({**_GOOD, "results": {"a": float("-inf")}}), "non-standard JSON constant -Infinity"),
    ],
)
def test_a_broken_record_raises_a_value_error_naming_the_file_and_field(tmp_path, text, message):
    p = tmp_path / "broken.json"
    p.write_text(text)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(p))}: .*{message}"):
        harness.load_record(p)


def test_load_record_checks_the_topic(tmp_path):
    p = tmp_path / "t.json"
    harness.write_record(_GOOD, p)
    assert harness.load_record(p, "t") == _GOOD
    with pytest.raises(ValueError, match="field 'topic' is 't', expected 'serving'"):
        harness.load_record(p, "serving")
    with pytest.raises(FileNotFoundError):
        harness.load_record(tmp_path / "missing.json")


@pytest.mark.parametrize("topic, gpu", [("../serving", "h200"), ("serving", "../h200"), ("", "h200"), (None, "h200")])
def test_load_reference_rejects_paths(topic, gpu):
    with pytest.raises(ValueError, match="must be a folder-safe name"):
        harness.load_reference(topic, gpu)


def test_every_committed_record_is_strict_json_with_its_schema():
    from widgets.experiments import TOPICS

    paths = sorted(harness.DATA_DIR.glob("*/*.json"))
    assert any(p.stem in TOPICS for p in paths)
    for p in paths:
        if p.stem in TOPICS:  # a widgets.measure record
            assert harness.load_record(p, p.stem)["topic"] == p.stem
        else:  # a side record (e.g. <topic>_ncu.json from a benchmarks/h200 script): strict JSON at least
            rec = json.loads(p.read_text(), parse_constant=lambda c: pytest.fail(f"{p}: non-standard constant {c}"))
            assert isinstance(rec, dict) and "provenance" in rec, p


def test_non_finite_values_become_null_with_a_reason():
    import math

    import numpy as np

    text = harness.to_json({**_GOOD, "results": {"t": [np.float32(1.5), math.nan, np.int64(7)], "d": {"x": -math.inf}}})
    rec = json.loads(text, parse_constant=lambda c: pytest.fail(c))
    assert rec["results"] == {"t": [1.5, None, 7], "d": {"x": None}}
    assert sorted(rec["nulls"]) == ["results.d.x", "results.t[1]"]
    assert type(rec["results"]["t"][2]) is int


# --- provenance ----------------------------------------------------------------------------------
def test_provenance_carries_the_git_commit(monkeypatch):
    monkeypatch.delenv("GPUBOOK_GIT_COMMIT", raising=False)
    p = harness.provenance("x")
    assert "git_commit" in p and "git_dirty" in p
    if p["git_commit"] is not None:  # a checkout with .git
        head = subprocess.run(["git", "-C", str(harness.REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert p["git_commit"] == head.stdout.strip() and isinstance(p["git_dirty"], bool)


def test_provenance_git_commit_from_the_environment(monkeypatch):
    # the H200 copy of the tree may have no .git: the lead passes the commit in
    monkeypatch.setenv("GPUBOOK_GIT_COMMIT", "0123abc")
    monkeypatch.setenv("GPUBOOK_GIT_DIRTY", "0")
    assert harness.git_state() == {"git_commit": "0123abc", "git_dirty": False}
    monkeypatch.delenv("GPUBOOK_GIT_DIRTY")
    assert harness.git_state() == {"git_commit": "0123abc", "git_dirty": None}


def test_gpu_clock_power():
    reading = harness.gpu_clock_power()
    if not torch.cuda.is_available():
        assert reading is None
    else:
        assert set(reading) >= {"sm_clock_hz", "max_sm_clock_hz", "power_w", "power_limit_w", "temperature_c", "source"}
        if reading["sm_clock_hz"] is not None:
            assert 1e8 < reading["sm_clock_hz"] < 5e9


def test_smi_parser_reads_numbers_and_na(monkeypatch):
    monkeypatch.setattr(harness, "_run", lambda cmd: "1980, 1980, 512.25, 700.00, 41")
    r = harness._smi_reading(0)
    assert r["sm_clock_hz"] == 1.98e9 and r["power_w"] == 512.25 and r["temperature_c"] == 41.0
    monkeypatch.setattr(harness, "_run", lambda cmd: "1755, [N/A], [N/A], 700.00, 41")
    r = harness._smi_reading(0)
    assert r["max_sm_clock_hz"] is None and r["power_w"] is None and r["sm_clock_hz"] == 1.755e9
    monkeypatch.setattr(harness, "_run", lambda cmd: "")
    assert harness._smi_reading(0) is None


# --- the Triton interpreter switch ---------------------------------------------------------------
_KERNEL_AFTER_PROVENANCE = r"""
import os, sys
from widgets.experiments import harness
harness.provenance("first")           # imports triton (used to happen before TRITON_INTERPRET was set)
import torch
from widgets.experiments._triton import triton, tl, INTERPRETED

@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(x_ptr + i, mask=m, other=0.0)
    # tl.sum and tl.cdiv are Triton's own @jit helpers, built when triton is first imported
    tl.store(x_ptr + i, v + tl.sum(v, axis=0) + tl.cdiv(3, 2), mask=m)

dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.arange(4, dtype=torch.float32, device=dev)
kernel[(1,)](x, 4, BLOCK=8)
assert INTERPRETED == (not torch.cuda.is_available()), INTERPRETED
print(x.cpu().tolist())
"""


def test_provenance_first_does_not_break_an_interpreted_kernel(tmp_path):
    # The script runs from a file, not ``python -c``: compiled (GPU) Triton reads a @jit
    # function's source with inspect, which a ``-c`` string does not have.
    script = tmp_path / "kernel_after_provenance.py"
    script.write_text(_KERNEL_AFTER_PROVENANCE)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(harness.REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=str(harness.REPO_ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[8.0, 9.0, 10.0, 11.0]"  # 0..3 + sum 6 + cdiv(3, 2) = 2


def test_the_switch_is_decided_in_the_package_before_triton():
    import widgets.experiments as ex

    assert ex.TRITON_INTERPRETED == (os.environ.get("TRITON_INTERPRET") == "1")
    if not torch.cuda.is_available():
        assert ex.TRITON_INTERPRETED and not ex.TRITON_IMPORTED_TOO_EARLY


# --------------------------------------------------------------------------------------------
# One result type per experiment: harness.Result (to_record / from_record)
# --------------------------------------------------------------------------------------------
from dataclasses import dataclass as _dataclass  # noqa: E402
from typing import Optional as _Optional  # noqa: E402
from typing import Union as _Union  # noqa: E402


@_dataclass(frozen=True)
class _Point(harness.Result):
    size_bytes: int
    time_s: float
    note: _Optional[str] = None


@_dataclass(frozen=True)
class _Sweep(harness.Result):
    device: str
    points: tuple[_Point, ...]
    by_name: dict[str, _Point]
    optional: _Union[_Point, harness.Failed, None] = None
    extra: _Optional[dict] = None


def _sweep():
    return _Sweep("cpu", (_Point(1024, 1e-3), _Point(2048, 2e-3, "slow")), {"a": _Point(1, 1.0)}, harness.Failed("RuntimeError: no"))


def test_result_round_trip_rebuilds_nested_types():
    s = _sweep()
    rec = s.to_record()
    assert rec == {"device": "cpu", "points": [{"size_bytes": 1024, "time_s": 1e-3, "note": None},
                                               {"size_bytes": 2048, "time_s": 2e-3, "note": "slow"}],
                   "by_name": {"a": {"size_bytes": 1, "time_s": 1.0, "note": None}},
                   "optional": {"error": "RuntimeError: no"}, "extra": None}
    back = _Sweep.from_record(json.loads(json.dumps(rec)))
    assert back == s and isinstance(back.points, tuple) and isinstance(back.points[0], _Point)
    assert isinstance(back.optional, harness.Failed) and back.optional.error == "RuntimeError: no"
    assert _Point.from_record({"size_bytes": 1, "time_s": 2}).time_s == 2.0  # JSON int into a float field


def test_result_from_record_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"_Point.from_record: missing field\(s\) time_s"):
        _Point.from_record({"size_bytes": 1})
    assert _Point.from_record({"size_bytes": 1, "time_s": 1.0, "old_field": 3}).size_bytes == 1  # older records load
    with pytest.raises(ValueError, match="old_field are not in _Point"):
        _Point.from_record({"size_bytes": 1, "time_s": 1.0, "old_field": 3}, strict=True)  # a fresh result drops nothing
    with pytest.raises(ValueError, match="needs a mapping"):
        _Point.from_record([1, 2])
    with pytest.raises(ValueError, match="expected a list"):
        _Sweep.from_record({"device": "x", "points": 3, "by_name": {}})


def test_result_is_frozen_and_reads_like_its_record():
    s = _sweep()
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        s.device = "gpu"  # frozen
    assert s["device"] == "cpu" and s["points"][1]["note"] == "slow" and s.get("extra") is None
    assert "points" in s and "nope" not in s and s.keys()[0] == "device"
    with pytest.raises(KeyError):
        s["nope"]


def test_failed_and_attempt():
    got = harness.attempt(lambda: 1 / 0)
    assert isinstance(got, harness.Failed) and got.error.startswith("ZeroDivisionError")
    assert harness.attempt(lambda x: x + 1, 1) == 2
    assert harness.Failed.from_record({"error": "x"}).to_record() == {"error": "x"}


def test_record_and_to_json_take_a_result():
    rec = harness.record("fake", _sweep(), command="test")
    assert rec["results"]["points"][0]["size_bytes"] == 1024
    nan = harness.to_json({"x": _Point(1, math.nan)})
    assert json.loads(nan)["x"]["time_s"] is None and "x.time_s" in json.loads(nan)["nulls"]


@pytest.mark.parametrize("topic", ["memory_hierarchy", "simt", "tensor_cores", "collectives", "serving"])
def test_committed_reference_records_load_typed(topic):
    """Every committed reference record reads back through its topic's result type, and writing it
    again loses nothing (the re-written record holds every original field, plus nulls for fields
    that were added since)."""
    import importlib

    module = importlib.import_module(f"widgets.experiments.{topic}")
    rec = harness.load_reference(topic, getattr(module, "REFERENCE_GPU", harness.REFERENCE_GPU))
    typed = module.RESULTS.from_record(rec["results"])
    assert isinstance(typed, module.RESULTS)
    again = json.loads(harness.to_json({"r": typed.to_record()}))["r"]

    def contains(old, new, where):
        if isinstance(old, dict):
            assert isinstance(new, dict), where
            for k, v in old.items():
                assert k in new, f"{where}.{k} lost"
                contains(v, new[k], f"{where}.{k}")
        elif isinstance(old, list):
            assert isinstance(new, list) and len(new) == len(old), where
            for i, (a, b) in enumerate(zip(old, new)):
                contains(a, b, f"{where}[{i}]")
        else:
            assert old == new, f"{where}: {old!r} != {new!r}"

    contains(rec["results"], again, topic)
    assert module.RESULTS.from_record(again) == typed


@pytest.mark.parametrize("topic", ["memory_hierarchy", "simt", "tensor_cores", "collectives", "serving"])
def test_book_setup_gives_the_typed_reference_and_the_devices(topic):
    """widgets.book.setup(topic): the chapter's hidden setup cell in one call."""
    import importlib

    from widgets import book
    from widgets.prose import prose

    module = importlib.import_module(f"widgets.experiments.{topic}")
    S = book.setup(topic)
    assert isinstance(S.ref, module.RESULTS) and S.record["topic"] == topic
    assert S.ref == module.RESULTS.from_record(S.record["results"])
    assert S.reference_gpu.name == "H200-SXM"  # both reference records were measured on H200s
    # free memory is a live reading (it moves between two calls on a GPU): compare everything else
    assert dataclasses.replace(S.capabilities, free_bytes=0) == dataclasses.replace(harness.capabilities(), free_bytes=0)
    assert (S.capabilities.free_bytes > 0) == harness.on_gpu()  # a reading on a GPU, 0 on a CPU
    if not harness.on_gpu():
        assert S.gpu is None and S.here.startswith("No GPU here")
    assert S.provenance.startswith("Measured on ")
    before = dict(prose.items()) if hasattr(prose, "items") else None
    S.glue("setup_test_key", "1.5 µs")
    assert repr(prose.setup_test_key) == "1.5 µs"
    if before is not None:  # leave the process-wide namespace as it was
        prose.clear()
        prose.update(before)


def test_book_setup_rejects_an_unknown_topic():
    from widgets import book

    with pytest.raises(ValueError, match="topic must be one of"):
        book.setup("no_such_topic")
