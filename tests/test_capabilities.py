"""Capabilities, not names: one set of rules (widgets.capabilities) for the experiments and the doctor.

Published facts the rules encode (CUDA C++ Programming Guide, "Compute Capabilities" and the
"Arithmetic Instructions"/"Warp Matrix Functions" sections; NVIDIA T4, A100, L4, H100 datasheets;
PyTorch ``torch._scaled_mm``, which needs compute capability 8.9 for float8):
- sm_75 (T4, Turing): fp16 tensor cores, no bf16 or tf32 tensor-core math, no fp8, no TMA/wgmma;
- sm_80 (A100) and sm_86 (A10G, RTX 3090): add bf16 and tf32;
- sm_89 (L4, L40S, RTX 4090): add fp8 (E4M3/E5M2);
- sm_90 (H100, H200): add TMA and wgmma; sm_100 (B200): TMA, tcgen05 instead of wgmma;
  sm_120 (RTX 5090): fp8, TMA, no wgmma.

The tests run on the CPU: ``harness.capabilities`` is replaced by a simulated GPU
(``doctor.simulate(name).capabilities``) and the experiments' plans are compared with the doctor's
per-chapter verdicts, which must say the same thing.
"""

from __future__ import annotations

import pytest

from widgets import doctor
from widgets.capabilities import Capabilities, arch_features, compute_capability, needs_sentence
from widgets.hardware import get_gpu, gpu_names

NVIDIA_GPUS = [n for n in gpu_names() if get_gpu(n).vendor == "NVIDIA"]


@pytest.mark.parametrize(
    "arch, dtypes, fp8, tma, wgmma",
    [
        ("sm_75", ("fp16",), False, False, False),  # T4
        ("sm_80", ("fp16", "bf16", "tf32"), False, False, False),  # A100
        ("sm_86", ("fp16", "bf16", "tf32"), False, False, False),  # A10G, RTX 3090
        ("sm_89", ("fp16", "bf16", "tf32", "fp8"), True, False, False),  # L4, L40S, RTX 4090
        ("sm_90", ("fp16", "bf16", "tf32", "fp8"), True, True, True),  # H100, H200
        ("sm_100", ("fp16", "bf16", "tf32", "fp8"), True, True, False),  # B200: tcgen05, not wgmma
        ("sm_120", ("fp16", "bf16", "tf32", "fp8"), True, True, False),  # RTX 5090
    ],
)
def test_rules_match_the_published_capabilities(arch, dtypes, fp8, tma, wgmma):
    cap = Capabilities(device="x", vendor="NVIDIA", arch=arch, free_bytes=1, total_bytes=1, gpu_count=1)
    assert cap.tensor_core_dtypes == dtypes
    assert (cap.fp8, cap.tma, cap.wgmma) == (fp8, tma, wgmma)
    assert cap.compute_capability == compute_capability(arch)
    assert arch_features(arch) == doctor.capabilities(arch)  # one code path


def test_no_gpu_and_other_vendors_have_no_nvidia_features():
    cpu = Capabilities()
    assert not cpu.gpu and cpu.tensor_core_dtypes == () and cpu.compute_capability is None
    amd = Capabilities(device="MI300X", vendor="AMD", arch="gfx942", gpu_count=1)
    assert amd.gpu and not amd.nvidia and amd.tensor_core_dtypes == ()
    assert cpu.why_not("bf16") == "bf16 tensor cores need sm_80; there is no GPU here"


def test_why_not_sentences():
    t4 = doctor.simulate("T4").capabilities
    assert t4.why_not("fp16") is None
    assert t4.why_not("bf16") == "bf16 tensor cores need sm_80; this GPU (T4) is sm_75"
    assert t4.why_not("fp8") == "fp8 tensor cores need sm_89; this GPU (T4) is sm_75"
    assert t4.why_not("tma") == "TMA needs sm_90; this GPU (T4) is sm_75"
    assert needs_sentence("wgmma") == "wgmma exists on sm_90 only"
    with pytest.raises(ValueError, match="feature must be one of"):
        t4.why_not("fp4")
    with pytest.raises(ValueError, match="dtype must be one of"):
        t4.tensor_cores("int8")


def test_sizes_follow_free_memory():
    """A 15 GiB T4 gets a smaller problem than a 141 GiB H200 for the same target; the CPU its own size."""
    t4, h200 = (doctor.simulate(n).capabilities for n in ("T4", "H200-SXM"))
    target = 32 * 2**30
    assert t4.size_bytes(target, 1) == int(0.25 * t4.free_bytes) < target
    assert h200.size_bytes(target, 1) == target
    assert Capabilities().size_bytes(target, 4096) == 4096


def test_simulated_machine_is_the_catalog_gpu():
    for name in gpu_names():
        g = get_gpu(name)
        cap = doctor.simulate(name, gpus=2).capabilities
        assert (cap.device, cap.arch, cap.vendor, cap.gpu_count, cap.simulated) == (g.name, g.arch, g.vendor, 2, True)
        assert cap.total_bytes == doctor.gpu_facts(name)["memory_bytes"] <= int(g.hbm_bytes) and cap.nccl


def test_this_machine_probe():
    from widgets.experiments import harness

    cap = harness.capabilities()
    assert cap.gpu == harness.on_gpu()
    if not cap.gpu:
        assert cap.device.startswith("CPU") and cap.free_bytes == 0 and cap.arch is None
    else:
        assert cap.free_bytes > 0 and cap.gpu_count >= 1


# --------------------------------------------------------------------------------------------
# The experiments choose from capabilities, and agree with the doctor
# --------------------------------------------------------------------------------------------
def _verdict(name: str, chapter: str) -> doctor.Verdict:
    return next(v for v in doctor.chapter_verdicts(doctor.simulate(name)) if v.chapter == chapter)


@pytest.mark.parametrize("name", NVIDIA_GPUS)
def test_tensor_core_plan_matches_the_doctor(name):
    """For every NVIDIA catalog GPU: the data types the experiment leaves out are exactly those the
    doctor's verdict names as left out, each with the arch it needs; the 16-bit format of the sweep
    is fp16 exactly where the doctor says so."""
    from widgets.experiments import tensor_cores as tc

    cap = doctor.simulate(name).capabilities
    plan = tc.dtype_plan(cap)
    skipped = {d for d, why in plan.items() if why is not None}
    v = _verdict(name, "tensor_cores")
    said = " ".join(v.scaled)
    for d in ("bf16", "tf32", "fp8"):
        assert (d in skipped) == (f"{d} " in said or f"{d} rows" in said or f"and {d} rows" in said), (name, d, plan, said)
    for d in skipped:
        assert "need" in plan[d] and cap.arch in plan[d]
    assert "fp32" not in skipped and "fp16" not in skipped
    assert (tc.gemm_dtype(cap) == "fp16") == ("run in fp16" in said)
    assert (v.status == "full") == (not skipped)


def test_tensor_cores_as_t4_measures_fp16_and_fp32(monkeypatch):
    """--as T4, run for real on the CPU: the throughput experiment measures fp32 and fp16 (and the
    all-zero run in fp16), and records bf16, tf32 and fp8 with null times and the sm_80/sm_89 reasons."""
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as tc

    t4 = doctor.simulate("T4").capabilities
    monkeypatch.setattr(harness, "capabilities", lambda: t4)
    res = tc.measure_dtype_throughput(n=32, repeat=1, sustained_s=0.001, windows=1)
    by = {}
    for r in res:
        by.setdefault(r.dtype, []).append(r)
    assert {d for d, rs in by.items() if all(r.flop_per_s is not None for r in rs)} == {"fp32", "fp16"}
    assert [r.data for r in by["fp16"]] == ["randn", "zeros"]  # the all-zero run in the T4's 16-bit format
    for d, need in (("bf16", "sm_80"), ("tf32", "sm_80"), ("fp8", "sm_89")):
        (row,) = by[d]
        assert row.time_s is None and need in row.note and "sm_75" in row.note
    assert tc.gemm_dtype() == "fp16"


def test_tensor_cores_as_h200_plans_everything(monkeypatch):
    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as tc

    monkeypatch.setattr(harness, "capabilities", lambda: doctor.simulate("H200-SXM").capabilities)
    assert tc.gemm_dtype() == "bf16"
    plan = tc.dtype_plan()
    assert all(why is None for d, why in plan.items() if d != "fp8")
    # fp8 additionally needs torch._scaled_mm, which every torch the book pins has
    assert plan["fp8"] is None


def test_precision_emulates_what_the_device_lacks(monkeypatch):
    """On a T4 the precision experiment cannot use bf16/tf32 tensor cores: it emulates them (inputs
    rounded to the format, fp32 product) and says why in ``method``; fp16 is not emulated."""
    import torch

    from widgets.experiments import harness
    from widgets.experiments import tensor_cores as tc

    monkeypatch.setattr(harness, "capabilities", lambda: doctor.simulate("T4").capabilities)
    a = torch.randn(16, 32, dtype=torch.float64)
    b = torch.randn(32, 16, dtype=torch.float64)
    # a CPU tensor takes the CPU path whatever the capabilities: check the GPU branch's rule directly
    for d in ("bf16", "tf32"):
        method = tc._lowp_matmul(d, a, b)[3]
        assert method.startswith("emulated")
    assert harness.capabilities().why_not("bf16") is not None and harness.capabilities().why_not("fp16") is None


def test_serving_names_the_gpu_that_ran(monkeypatch):
    """The serving record names the catalog GPU of the device that ran, never a fixed H200."""
    import torch

    from widgets.experiments import serving
    from widgets.hardware import catalog_name_for, gpu_names

    if torch.cuda.is_available():  # a GPU: the catalog entry of this device (None only if the catalog lacks it)
        expected = catalog_name_for(torch.cuda.get_device_name(0))
        assert serving.local_gpu_name() == expected
        assert expected is None or expected in gpu_names()
    else:
        assert serving.local_gpu_name() is None  # a CPU: no catalog GPU, said as None
    rec = {"provenance": {"gpu": "NVIDIA L4", "device": "NVIDIA L4"}}
    assert serving.record_gpu_name(rec) == "L4"
    assert serving.record_gpu_name({"provenance": {"device": "CPU (x86_64)"}}) is None


def test_simt_bandwidth_cap_says_where_it_came_from():
    from widgets.experiments import harness, simt

    peak, source = simt.hbm_bytes_per_s_here()
    if not harness.on_gpu():
        assert peak is None and "no GPU" in source
    else:
        assert peak > 0 and ("datasheet" in source or "measured" in source)


@pytest.mark.parametrize("name", gpu_names())
def test_serving_sizes_its_decoder_from_free_memory_as_the_doctor_says(name, monkeypatch):
    """The serving experiment builds as many of its decoder's 4 layers as fit in free memory (a T4:
    1) and runs fp16 where there are no bf16 tensor cores; the doctor's verdict says exactly that."""
    import torch

    from widgets.experiments import harness, serving

    m = doctor.simulate(name)
    cap = m.capabilities
    monkeypatch.setattr(harness, "capabilities", lambda: cap)
    layers = serving.decoder_layers()
    v = _verdict(name, "serving")
    said = " ".join(v.scaled)
    assert (layers < doctor.SERVING_LAYERS) == (f"{layers} of its {doctor.SERVING_LAYERS} layers" in said), (name, layers, said)
    fp16 = serving._dtype() == torch.float16
    assert fp16 == ("runs in fp16" in said) == (cap.nvidia and not cap.tensor_cores("bf16"))
    if name in ("H200-SXM", "A100-SXM-80GB", "H100-SXM"):
        assert layers == doctor.SERVING_LAYERS and v.status in ("full",) and serving._dtype() == torch.bfloat16
    if name == "T4":
        assert layers == 1 and v.status == "scaled"


def test_serving_refuses_a_gpu_too_small_for_one_layer(monkeypatch):
    from dataclasses import replace

    from widgets.experiments import serving

    small = replace(doctor.simulate("T4").capabilities, free_bytes=4 * 2**30)
    with pytest.raises(serving.NotEnoughGpuMemory, match="one decoder layer"):
        serving.decoder_layers(small)
    assert issubclass(serving.NotEnoughGpuMemory, ValueError)


@pytest.mark.parametrize("gpus, nccl, backend", [(2, True, "nccl"), (2, False, "gloo"), (1, True, "gloo")])
def test_collectives_plan_follows_gpu_count_and_nccl(gpus, nccl, backend, monkeypatch):
    from dataclasses import replace

    from widgets.experiments import collectives, harness

    m = replace(doctor.simulate("H200-SXM", gpus=gpus), nccl="2.27" if nccl else None)
    monkeypatch.setattr(harness, "capabilities", lambda: m.capabilities)
    p = collectives.plan()
    assert p.backend == backend and (p.nproc == gpus if backend == "nccl" else p.nproc == collectives.CPU_RANKS)
    v = _verdict_of(m, "collectives")
    assert (v.status == "full") == (backend == "nccl")
    if backend == "gloo":
        assert "gloo" in v.scaled[0] and ("no NCCL" in v.scaled[0]) == (gpus >= 2)


def _verdict_of(machine, chapter: str) -> doctor.Verdict:
    return next(v for v in doctor.chapter_verdicts(machine) if v.chapter == chapter)
