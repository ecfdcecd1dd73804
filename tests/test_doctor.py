"""`python -m widgets.doctor`: the per-chapter verdicts follow the capability rules, tested with
simulated machines on the CPU (no GPU is needed or used).

Capability rules (CUDA C++ Programming Guide, "Compute Capabilities" and the feature tables;
NVIDIA T4 / L4 / A100 / H200 datasheets): sm_75 (T4) has fp16 tensor cores but no bf16 or tf32
tensor-core math, no fp8, no TMA or wgmma; sm_80 (A100) adds bf16 and tf32; sm_89 (L4) adds fp8
but has no wgmma; sm_90 (H100/H200) has all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from widgets import doctor as dr
from widgets.units import GiB

ROOT = Path(__file__).resolve().parents[1]
STACK = {d: "1.0" for d in (*dr.PACKAGES, *dr.FRONT_END)}


def verdicts(m):
    return {v.chapter: v for v in dr.chapter_verdicts(m)}


def cpu_machine(**kw):
    base = dict(packages=dict(STACK, cupy=None), gloo=True, c_compiler=True, occupancy_header=True)
    base.update(kw)
    return dr.Machine(**base)


# --------------------------------------------------------------------------------------------
# Capability rules
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arch, fp16, bf16, fp8, tma, wgmma",
    [
        ("sm_75", True, False, False, False, False),  # T4
        ("sm_80", True, True, False, False, False),  # A100
        ("sm_86", True, True, False, False, False),  # RTX 3090, A10G
        ("sm_89", True, True, True, False, False),  # L4, RTX 4090
        ("sm_90", True, True, True, True, True),  # H100, H200
        ("sm_100", True, True, True, True, False),  # B200: tcgen05, not wgmma
        ("sm_120", True, True, True, True, False),  # RTX 5090: TMA, no wgmma
    ],
)
def test_capability_rules(arch, fp16, bf16, fp8, tma, wgmma):
    cap = dr.capabilities(arch)
    assert (cap["fp16_tc"], cap["bf16_tc"], cap["tf32_tc"], cap["fp8_tc"], cap["tma"], cap["wgmma"]) == (
        fp16,
        bf16,
        bf16,
        fp8,
        tma,
        wgmma,
    )


def test_compute_capability_parses_and_rejects():
    assert dr.compute_capability("sm_75") == (7, 5)
    assert dr.compute_capability("sm_120") == (12, 0)
    assert dr.compute_capability("sm_90a") == (9, 0) and dr.compute_capability("sm_100f") == (10, 0)
    for bad in ("gfx942", "sm_", "sm_9", "75", None, "sm_9a"):
        with pytest.raises(ValueError, match="arch must"):
            dr.compute_capability(bad)


def test_non_nvidia_has_no_nvidia_capabilities():
    assert not any(dr.capabilities("gfx942", "AMD").values())
    assert not any(dr.capabilities(None).values())


# --------------------------------------------------------------------------------------------
# --as: the verdicts the issue asks for
# --------------------------------------------------------------------------------------------
def test_as_t4():
    m = dr.simulate("T4")
    assert (m.arch, m.vendor, m.n_gpus) == ("sm_75", "NVIDIA", 1)
    v = verdicts(m)
    tc = v["tensor_cores"]
    assert tc.status == "scaled"
    assert any("fp8" in s and "sm_89" in s for s in tc.scaled)
    assert any("bf16" in s and "sm_80" in s for s in tc.scaled)
    # 16 GB cannot hold the 4-layer 70B-shaped decoder (10 GiB of bf16 weights) and its 16 GiB MHA cache:
    # the experiment builds 1 of its 4 layers (widgets.doctor.serving_layers), in fp16 (no bf16 tensor cores)
    assert v["serving"].status == "scaled" and any("1 of its 4 layers" in s for s in v["serving"].scaled)
    assert any("fp16" in s and "sm_80" in s for s in v["serving"].scaled)
    assert v["collectives"].status == "scaled"  # one GPU
    assert v["memory_hierarchy"].runs and v["simt"].runs


def test_as_l4():
    v = verdicts(dr.simulate("L4"))
    assert v["tensor_cores"].status == "full"  # fp8 on sm_89; no chapter uses wgmma
    assert v["simt"].status == "full"  # the occupancy model has sm_89
    assert v["serving"].status == "scaled"  # 24 GB < the 4-layer decoder plus its largest cache: fewer layers
    assert any("of its 4 layers" in s for s in v["serving"].scaled)


def test_as_a100():
    v = verdicts(dr.simulate("A100-SXM-80GB"))
    assert v["tensor_cores"].status == "scaled"
    assert [s for s in v["tensor_cores"].scaled if "fp8" in s] and not [
        s for s in v["tensor_cores"].scaled if "bf16" in s
    ]
    assert v["serving"].status == "full"
    assert v["simt"].status == "full"


def test_as_h200_pair_runs_everything_fully_but_the_cupy_query():
    m = replace(dr.simulate("H200-SXM", gpus=2), packages={**dr.simulate("H200-SXM").packages, "cupy": "13.6"})
    v = verdicts(m)
    assert all(x.status == "full" for x in v.values()), {k: x.text() for k, x in v.items()}
    assert verdicts(dr.simulate("H200-SXM", gpus=1))["collectives"].status == "scaled"


def test_amd_gpu_cannot_run_the_cuda_kernels():
    v = verdicts(dr.simulate("MI300X"))
    assert v["simt"].status == "needs" and "NVIDIA" in v["simt"].needs[0]


def test_every_catalog_gpu_gets_a_verdict_for_every_chapter():
    from widgets import hardware

    for name in [*hardware.gpu_names(), *dr.EXTRA_GPUS]:
        v = dr.chapter_verdicts(dr.simulate(name))
        assert [x.chapter for x in v] == list(dr.CHAPTERS)
        assert all(x.text() for x in v)


def test_the_t4_is_a_catalog_entry():
    """The doctor's own T4 table became a catalog entry (widgets.hardware, with sources): --as T4 reads
    the catalog, and plans in the memory a Colab T4 reports (15,079 MiB), not the datasheet's 16 GB."""
    from widgets import hardware

    assert dr.EXTRA_GPUS == {}
    facts = dr.gpu_facts("T4")
    assert facts["source"] == "widgets.hardware catalog" and facts["arch"] == "sm_75"
    assert facts["memory_bytes"] == hardware.get_gpu("T4").memory_bytes == 15079 * 2**20
    for name in ("A10G", "L40S", "H100-PCIe", "RTX-3090", "RTX-5090"):  # the other GPUs added with it
        assert dr.simulate(name).arch == hardware.get_gpu(name).arch


def test_as_rejects_unknown_gpus_and_counts():
    with pytest.raises(ValueError, match="as_gpu must be one of .*T4.*got 'Z80'"):
        dr.simulate("Z80")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="gpus must be"):
            dr.simulate("T4", gpus=bad)
    with pytest.raises(ValueError, match="m must be a Machine"):
        dr.chapter_verdicts({"arch": "sm_90"})


# --------------------------------------------------------------------------------------------
# This kind of machine, and what is missing
# --------------------------------------------------------------------------------------------
def test_cpu_only_machine_runs_every_chapter_scaled_down():
    v = verdicts(cpu_machine())
    assert all(x.status == "scaled" for x in v.values())


def test_missing_packages_are_needs():
    v = verdicts(cpu_machine(packages=dict(STACK, torch=None)))
    assert all(x.status == "needs" and "torch" in x.needs[0] for x in v.values())
    v = verdicts(cpu_machine(packages=dict(STACK, **{"numba-cuda": None})))
    assert v["simt"].status == "needs" and v["memory_hierarchy"].status == "needs"  # the transpose kernels are numba-cuda
    v = verdicts(cpu_machine(packages=dict(STACK, triton=None)))
    assert {k for k, x in v.items() if x.status == "needs"} == {"memory_hierarchy", "tensor_cores", "serving", "attention"}


def test_gpu_without_a_cuda_compiler_cannot_run_simt():
    m = replace(dr.simulate("H200-SXM"), nvcc=None, nvrtc=False)
    assert verdicts(m)["simt"].status == "needs"
    assert verdicts(replace(m, nvcc="12.8"))["simt"].status == "full"


def test_occupancy_arch_coverage_follows_the_model():
    from widgets.models import simt as simt_model

    v = verdicts(dr.simulate("T4"))["simt"]
    if "sm_75" in simt_model.ARCHS:
        assert v.status == "full"
    else:
        assert any("sm_75" in s for s in v.scaled)


def test_cpu_without_occupancy_header_leaves_that_part_out():
    v = verdicts(cpu_machine(occupancy_header=False))["simt"]
    assert any("left out" in s for s in v.scaled)


def test_two_gpus_without_nccl_run_collectives_on_the_cpu():
    """plan() picks NCCL when torch sees two GPUs and has NCCL; without NCCL it runs gloo on the CPU."""
    m = replace(dr.simulate("H200-SXM", gpus=2), nccl=None)
    assert verdicts(m)["collectives"].status == "scaled" and "no NCCL" in verdicts(m)["collectives"].scaled[0]
    one = replace(dr.simulate("H200-SXM"), nccl=None)
    assert verdicts(one)["collectives"].status == "scaled"  # one GPU: gloo on the CPU
    assert verdicts(replace(one, gloo=False))["collectives"].status == "needs"


def test_collectives_rule_follows_the_experiments_plan():
    ex = pytest.importorskip("widgets.experiments.collectives")
    import inspect

    src = inspect.getsource(ex.plan)
    assert "if gpus >= 2 and cap.nccl:" in src and '"nccl"' in src, "plan() changed: update doctor._collectives"
    assert ex.CPU_RANKS == 4 and max(ex.CPU_SWEEP_SIZES) == 2 * 2**20, (
        "the doctor's text says 4 processes, up to 2 MiB"
    )


def test_serving_memory_rule_uses_free_memory():
    need = dr.serving_gpu_bytes()
    big = dr.simulate("H200-SXM")
    assert verdicts(replace(big, free_bytes=int(need) + 1))["serving"].status == "full"
    assert verdicts(replace(big, free_bytes=int(need) - 1))["serving"].status == "scaled"  # 3 of 4 layers
    assert dr.serving_layers(need - 1) == 3 and dr.serving_layers(need) == 4
    one = dr.serving_gpu_bytes(1)
    assert verdicts(replace(big, free_bytes=int(one) - 1))["serving"].status == "needs"
    assert dr.serving_layers(one - 1) == 0 and dr.serving_layers(None) == dr.SERVING_LAYERS


def test_serving_memory_need_matches_the_experiment_and_the_h200_record():
    """The doctor mirrors the serving experiment's GPU sizes; the H200 record's allocator count of
    the MHA cache checks the mirror (and the formula) against a real allocation."""
    ex = pytest.importorskip("widgets.experiments.serving")
    assert dr.SERVING_MAX_KV_TOKENS == max(max(ex.GPU_BATCHES) * 1024, 16 * max(ex.GPU_CONTEXTS))
    kv = json.loads((ROOT / "widgets" / "data" / "h200" / "serving.json").read_text())["results"]["kv_memory"]
    assert kv["config"]["layers"] == dr.SERVING_LAYERS
    assert kv["batch"] * kv["context_tokens"] == dr.SERVING_MHA_TOKENS
    mha = next(r for r in kv["variants"] if r["name"].startswith("MHA"))
    from widgets.models import llms, transformer

    cfg = llms.LLAMA_3_70B.with_layers(dr.SERVING_LAYERS)
    assert (
        transformer.kv_cache_bytes_per_token(cfg.layers, cfg.heads, cfg.head_dim, 2) * dr.SERVING_MHA_TOKENS
        == mha["measured_bytes"]
    )
    # 5.5B bf16 weights (10.2 GiB) + the 16 GiB MHA cache, +10%: between 24 GiB (L4) and 80 GiB (A100)
    assert 24 * GiB < dr.serving_gpu_bytes() < 40 * GiB


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------
def test_table_lists_every_item_the_issue_names():
    m = dr.simulate("L4")
    text = dr.table(m, dr.chapter_verdicts(m))
    for item in (
        "Python",
        "front end",
        "jupyterlab",
        "ipywidgets",
        "torch",
        "driver",
        "GPU",
        "sm_89",
        "GPU memory",
        "Triton",
        "numba-cuda",
        "nvcc / NVRTC",
        "NCCL",
        "tensor cores",
        "TMA / wgmma",
        *dr.CHAPTERS,
    ):
        assert item in text, item


@pytest.mark.parametrize("name, code", [("A100-SXM-80GB", 0), ("T4", 0), ("L4", 0)])
def test_main_exit_status(name, code, capsys):
    assert dr.main(["--as", name]) == code
    out = capsys.readouterr().out
    assert "chapter serving" in out and ("every chapter runs" in out) == (code == 0)


def test_main_rejects_an_unknown_gpu(capsys):
    with pytest.raises(SystemExit) as exc:
        dr.main(["--as", "Z80"])
    assert exc.value.code == 2 and "as_gpu must be one of" in capsys.readouterr().err


@pytest.mark.slow
def test_doctor_on_this_machine_in_under_a_minute():
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "widgets.doctor"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    elapsed = time.perf_counter() - t0
    assert elapsed < 60, elapsed
    assert "chapter memory_hierarchy" in proc.stdout and "Python" in proc.stdout
    import torch

    if not torch.cuda.is_available():  # CI: a CPU with the book's requirements runs every chapter scaled down
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.count("runs, scaled down") == len(dr.CHAPTERS)


def test_main_rejects_gpus_without_as(capsys):
    with pytest.raises(SystemExit) as exc:
        dr.main(["--gpus", "2"])
    assert exc.value.code == 2 and "--gpus goes with --as" in capsys.readouterr().err


@pytest.mark.slow  # probe() runs nvcc and nvidia-smi
def test_probe_notices_a_gpu_that_torch_cannot_use(monkeypatch):
    """A laptop with an NVIDIA GPU and the CPU-only torch: the doctor says why the chapters run on the CPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine's torch uses its GPU")
    real_run = dr._run

    def fake_run(cmd, timeout=10.0):
        if cmd[0] == "nvidia-smi":
            return "NVIDIA GeForce RTX 3090"
        return real_run(cmd, timeout)

    monkeypatch.setattr(dr, "_run", fake_run)
    m = dr.probe()
    assert m.n_gpus == 0 and any("RTX 3090" in n and "CPU" in n for n in m.notes)
    monkeypatch.setattr(
        dr, "_run", lambda cmd, timeout=10.0: None if cmd[0] == "nvidia-smi" else real_run(cmd, timeout)
    )
    assert not any("nvidia-smi" in n for n in dr.probe().notes)


@pytest.mark.slow  # probe() runs nvcc and nvidia-smi
def test_probe_reports_a_missing_myst_front_end(monkeypatch):
    real = dr._version
    monkeypatch.setattr(dr, "_version", lambda d: None if d == "jupyterlab-myst" else (real(d) or "4.0"))
    assert any("jupyterlab-myst" in n for n in dr.probe().notes)
    monkeypatch.setattr(dr, "_version", lambda d: real(d) or "1.0")
    assert not any("jupyterlab-myst" in n for n in dr.probe().notes)


def test_lab_windowing_reads_the_readers_setting_then_the_environments_then_the_default(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(dr, "_labconfig_overrides", lambda: {})
    app, user = tmp_path / "app", tmp_path / "user"
    assert dr.lab_windowing(str(app), str(user)) == ("contentVisibility", "JupyterLab's default")
    (app / "settings" / "overrides.d").mkdir(parents=True)
    ours = app / "settings" / "overrides.d" / "gpu-book.json"
    shutil.copyfile(ROOT / "book" / "jupyterlab" / "overrides.json", ours)  # where make install writes it
    assert dr.lab_windowing(str(app), str(user)) == ("none", str(ours))
    mine = app / "settings" / "overrides.json"  # the reader's environment-wide file is read after the packages'
    mine.write_text('{"@jupyterlab/notebook-extension:tracker": {"windowingMode": "defer"}}')
    assert dr.lab_windowing(str(app), str(user)) == ("defer", str(mine))
    mine.unlink()
    tracker = user / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{\n    // Windowing mode\n    // "defer", "full", "none" or "contentVisibility"\n    "windowingMode": "full"\n}\n')
    assert dr.lab_windowing(str(app), str(user)) == ("full", str(tracker))  # the reader's own setting wins
    tracker.write_text("{ not json")
    assert dr.lab_windowing(str(app), str(user))[0] == "none"  # an unreadable file is passed over
    tracker.unlink()
    monkeypatch.setattr(dr, "_labconfig_overrides", lambda: {dr.LAB_TRACKER: {"windowingMode": "full"}})  # a hub's admin
    assert dr.lab_windowing(str(app), str(user))[0] == "full"  # read after the environment's files
    schema = app / "schemas" / "@jupyterlab" / "notebook-extension" / "tracker.json"
    schema.parent.mkdir(parents=True)
    schema.write_text('{"properties": {"windowingMode": {"default": "defer"}}}')
    monkeypatch.setattr(dr, "_labconfig_overrides", lambda: {})
    ours.unlink()
    assert dr.lab_windowing(str(app), str(user)) == ("defer", "JupyterLab's default")  # the installed schema's default


def test_lab_windowing_note_offers_the_fix_that_works_where_the_mode_comes_from(tmp_path):
    app = str(tmp_path / "app")
    assert dr.lab_windowing_note("none", "anywhere", app) is None
    default = dr.lab_windowing_note("contentVisibility", "JupyterLab's default", app)
    assert "overrides.d" in default and "Settings Editor" in default and "reopen" in default
    mine = dr.lab_windowing_note("full", str(tmp_path / "user" / "tracker.jupyterlab-settings"), app)
    assert "wins over the book's file" in mine and "copy" not in mine  # the book's file could not help


def test_probe_says_when_jupyterlab_would_leave_the_prose_numbers_unevaluated(monkeypatch):
    real = dr._version
    monkeypatch.setattr(dr, "_version", lambda d: real(d) or "4.0")  # JupyterLab and jupyterlab-myst present
    monkeypatch.setattr(dr, "lab_windowing", lambda: ("contentVisibility", "JupyterLab's default"))
    note = [n for n in dr.probe().notes if "Windowing mode" in n]
    assert note and "prose.<key>" in note[0] and "overrides.json" in note[0]
    monkeypatch.setattr(dr, "lab_windowing", lambda: ("none", "overrides.json"))
    assert not any("Windowing mode" in n for n in dr.probe().notes)


# --------------------------------------------------------------------------------------------
# The needs table follows the code: what a chapter's modules import is what the doctor requires
# --------------------------------------------------------------------------------------------
_DIST_OF = {"torch": "torch", "triton": "triton", "numba": "numba-cuda", "plotly": "plotly", "ipywidgets": "ipywidgets"}


def _imports(topic: str) -> tuple[set, set]:
    """Distributions imported by the topic's experiment and ui modules and the package modules they
    import: (at module level, anywhere)."""
    import ast

    todo = [ROOT / "widgets" / "experiments" / f"{topic}.py", ROOT / "widgets" / "ui" / f"{topic}.py"]
    seen, top, anywhere = set(), set(), set()
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                targets = [node.module] if node.module else [a.name for a in node.names]
                todo += [base / (t.replace(".", "/") + ".py") for t in targets]
                continue
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            dists = {_DIST_OF[r] for r in roots if r in _DIST_OF}
            anywhere |= dists
            if node in tree.body:
                top |= dists
    return top, anywhere


@pytest.mark.parametrize("topic", dr.CHAPTERS)
def test_chapter_needs_follow_the_imports(topic):
    top, anywhere = _imports(topic)
    needs = set(dr.CHAPTER_NEEDS[topic])
    assert top <= needs, f"{topic} imports {sorted(top - needs)} at module level, but the doctor does not require it"
    assert needs <= anywhere, (
        f"the doctor requires {sorted(needs - anywhere)} for {topic}, which its modules never import"
    )


def test_chapters_are_the_experiment_topics():
    from widgets.experiments import TOPICS

    assert tuple(dr.CHAPTERS) == tuple(TOPICS)


def test_room_plan_is_the_single_verdicts_side_by_side(capsys):
    text, ok = dr.room(["T4", "A100-SXM-80GB"])
    lines = {ln.split()[0]: ln.split()[1:] for ln in text.splitlines()[1:-1]}
    for chapter in dr.CHAPTERS:
        t4, a100 = (verdicts(dr.simulate(n))[chapter].status for n in ("T4", "A100-SXM-80GB"))
        word = {"full": "fully", "scaled": "scaled", "needs": "NEEDS"}
        assert lines[chapter] == [word[t4], word[a100]]
    assert ok  # serving scales its decoder down to a T4's memory
    assert dr.room(["A100-SXM-80GB", "H200-SXM"])[1]
    assert dr.main(["--as", "T4", "--as", "A100-SXM-80GB"]) == 0
    assert "A100-SXM-80GB" in capsys.readouterr().out


def test_chapter_line_for_a_first_cell():
    line = dr.chapter_line("tensor_cores", dr.simulate("T4"))
    assert line.startswith("On 1 x T4 (simulated) this chapter runs, scaled down:") and "sm_89" in line
    assert "1 of its 4 layers" in dr.chapter_line("serving", dr.simulate("T4"))
    assert "needs" in dr.chapter_line("serving", replace(dr.simulate("T4"), free_bytes=4 * GiB))
    assert "no GPU" in dr.chapter_line("simt", cpu_machine())
    with pytest.raises(ValueError, match="chapter must be one of"):
        dr.chapter_line("no_such_chapter", cpu_machine())


@pytest.mark.slow
def test_probe_notes_colab(monkeypatch):
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-test")
    assert any("Colab" in n for n in dr.probe().notes)


@pytest.mark.slow
def test_probe_treats_a_broken_torch_as_missing(monkeypatch):
    real = dr.importlib.import_module

    def broken(name, *a, **kw):
        if name == "torch":
            raise OSError("libcudart.so.13: cannot open shared object file")
        return real(name, *a, **kw)

    monkeypatch.setattr(dr.importlib, "import_module", broken)
    m = dr.probe()
    assert m.packages["torch"] is None and any("libcudart" in n for n in m.notes)
    assert all(v.status == "needs" for v in dr.chapter_verdicts(m))


def test_json_output_round_trips(capsys):
    assert dr.main(["--as", "L4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["machine"]["arch"] == "sm_89" and data["machine"]["capabilities"]["fp8_tc"] is True
    assert data["chapters"]["serving"]["status"] == "scaled" and data["every_chapter_runs"] is True
    assert set(data["chapters"]) == set(dr.CHAPTERS)
