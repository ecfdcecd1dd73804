"""Shared fixtures: the built book, built once per test run (shared by pytest-xdist workers)."""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/headless.py, whatever the import mode
import headless  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# ---- markers: `browser` skips (with the reason) when it cannot run; `slow` is deselected by `make unit` ----
# Tests that run an experiment, a subprocess or torchrun, or take a second or more on a 2-core machine.
# Prefer `@pytest.mark.slow` on the test itself; this list marks the existing ones without editing
# each topic's file. (file name, test function name)
SLOW_TESTS = {
    ("test_collectives.py", "test_measure_sweep_public_api"),
    ("test_harness.py", "test_measure_cli_writes_a_record"),
    ("test_harness.py", "test_provenance_first_does_not_break_an_interpreted_kernel"),
    ("test_notebook_order.py", "test_a_shuffling_seed_collects_cells_in_order"),
    ("test_memory_hierarchy.py", "test_static_calculators_have_two_inputs"),
    ("test_memory_hierarchy.py", "test_static_frames_carry_the_models_numbers"),
    ("test_memory_hierarchy.py", "test_experiments_run_scaled_down"),
    ("test_serving.py", "test_kv_memory_matches_the_formula"),
    ("test_serving.py", "test_decode_with_cache_matches_a_full_forward"),
    ("test_serving.py", "test_ceilings_and_gemv_smoke"),
    ("test_serving.py", "test_decode_and_ttft_smoke"),
    ("test_serving.py", "test_compare_and_record_are_json"),
    ("test_serving.py", "test_linear_tuning_logic_on_the_cpu"),
    ("test_simt.py", "test_model_equals_h200_occupancy_api"),
    ("test_simt.py", "test_occupancy_api_experiment"),
    ("test_simt.py", "test_divergence_experiment"),
    ("test_simt.py", "test_memory_latency_and_bandwidth_experiments"),
    ("test_simt.py", "test_launch_overhead_experiment"),
    ("test_simt.py", "test_amdahl_experiment"),
    ("test_tensor_cores.py", "test_throughput_smoke"),
    ("test_tensor_cores.py", "test_shape_sweep_smoke"),
    ("test_tensor_cores.py", "test_precision_experiment_agrees_with_model"),
    ("test_tensor_cores.py", "test_triton_vs_torch_smoke"),
    ("test_tensor_cores.py", "test_cpu_records_are_strict_json"),
    # experiments run for real on the CPU or a simulated device (seconds each): make test runs them, make unit does not
    ("test_training_memory.py", "test_gpu_code_paths_run_on_a_simulated_device"),
    ("test_training_memory.py", "test_accuracy_rows_of_a_gpu_shaped_record_are_finite_and_positive"),
    ("test_training_memory.py", "test_fragmentation_is_gpu_only_and_its_subprocess_reports_why"),
    ("test_training_memory.py", "test_a_gpu_without_bf16_trains_in_fp16_with_the_scaler"),
    ("test_training_memory.py", "test_step_ratio_excludes_the_optimizer_and_the_head"),
    ("test_training_memory.py", "test_accuracy_rows_of_a_run_are_honestly_labelled"),
    ("test_training_memory.py", "test_stock_model_runs_and_its_rows_are_labelled"),
    ("test_simt_depth.py", "test_launch_bounds_make_the_spill_kernel_spill"),
    ("test_simt_depth.py", "test_gather_spill_kernel_keeps_values_live_and_bounds_spill_them"),
    ("test_simt_depth.py", "test_cluster_kernel_compiles_for_sm90"),
}
# Fixtures that launch real work: every test using one is slow (torchrun with gloo, ~10 s).
SLOW_FIXTURES = {"cpu_run"}
# The book build (~2 minutes): every test that needs it, directly or through another fixture, is a
# `build` test, marked or not (a test inserted between a `build` mark and its test took the mark away
# from it, and `make unit` built the whole book: 161 s instead of 45).
BUILD_FIXTURES = {"built_book"}


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run on this machine, or None when they can."""
    if not headless.CHROMIUM:
        return headless.MISSING
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (`make install`)"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    why = browser_unavailable()
    required = os.environ.get("GPUBOOK_REQUIRE_BROWSER", "") not in ("", "0")
    for item in items:
        slow_fixture = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if slow_fixture or (item.path.name, getattr(item, "originalname", item.name)) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if BUILD_FIXTURES.intersection(getattr(item, "fixturenames", ())) and item.get_closest_marker("build") is None:
            item.add_marker(pytest.mark.build)
        if why and item.get_closest_marker("browser") is not None:
            if required:
                raise pytest.UsageError(f"GPUBOOK_REQUIRE_BROWSER is set (CI) but {why}")
            item.add_marker(pytest.mark.skip(reason=f"browser test skipped: {why}"))



@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the whole book with warnings as errors (``-W -n --keep-going``) into
    ``_build/test-book`` once per test run; return its HTML root.

    One build per run, shared by the pytest-xdist workers (tests/book_build.py: a file lock and the
    run's id, ``GPUBOOK_TEST_RUN_ID``, which the root conftest.py sets for the whole run). Under
    ``make test`` the build starts with the run, in the background (``GPUBOOK_BUILD_EARLY=1``), and
    this fixture waits for it. Set GPUBOOK_BUILT_HTML to an existing build (e.g. _build/html) to
    reuse it while iterating.
    """
    reuse = os.environ.get("GPUBOOK_BUILT_HTML")
    if reuse:
        return Path(reuse)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import book_build  # tests/book_build.py (imported here: this file also works alone, tests/test_readme.py)

    run_id = os.environ.get("GPUBOOK_TEST_RUN_ID") or os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
    returncode, log = book_build.ensure_built(run_id)
    assert returncode == 0, book_build.failure_report(log)
    return book_build.OUT / "_build" / "html"


@pytest.fixture(scope="session")
def memory_hierarchy_cpu_run(tmp_path_factory) -> dict:
    """One real ``python -m widgets.measure --topic memory_hierarchy --out <dir>/laptop`` on this
    machine per test run, shared by the pytest-xdist workers (a file lock in the run's common
    temporary folder; the first worker runs it, the others read its result). Two tests check it:
    tests/test_harness.py (the CLI's record) and tests/test_teaching.py (merging it with the H200
    records); the run takes 30-50 s on a 2-core machine, so it is made once, not once per test.

    Returns ``{"returncode", "stderr", "out"}``; ``out`` is the folder holding memory_hierarchy.json.
    """
    import json
    import subprocess

    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "memory_hierarchy_cpu_run" / "laptop"
    result = out.parent / "result.json"
    with FileLock(str(out.parent) + ".lock"):
        if not result.exists():
            out.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run([sys.executable, "-m", "widgets.measure", "--topic", "memory_hierarchy", "--out", str(out)],
                                  capture_output=True, text=True, cwd=ROOT, timeout=600)  # fmt: skip
            result.write_text(json.dumps({"returncode": proc.returncode, "stderr": proc.stderr[-3000:], "out": str(out)}))
    return json.loads(result.read_text())
