"""widgets.experiments.harness and python -m widgets.measure."""

import json
import subprocess
import sys

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


def test_measure_cli_writes_a_record(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "widgets.measure", "--topic", "memory_hierarchy", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads((tmp_path / "memory_hierarchy.json").read_text())
    assert rec["topic"] == "memory_hierarchy"
    assert rec["provenance"]["command"].startswith("python -m widgets.measure --topic memory_hierarchy")
    assert set(rec["results"]) >= {"hbm_bandwidth", "working_set_sweep", "strided_access"}
