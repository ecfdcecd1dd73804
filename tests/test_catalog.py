"""The catalog (widgets.hardware) is the one home of every device fact, and adding a GPU is one entry.

- every catalog GPU has its arch (a compute capability with per-SM limits) and every figure a source;
- the models read their per-arch, per-SM and link facts from the catalog (no second table);
- every calculator offers every catalog GPU, in its live form and in its static figure, or says why a
  GPU cannot apply (fp8 on a T4, per-SM rates of a B200);
- every model that takes a GPU accepts every catalog GPU.

Expected figures of individual GPUs (datasheets, whitepapers) are in tests/test_hardware.py; the
occupancy rules of each arch against NVIDIA's calculator (cuda_occupancy.h) in tests/test_simt.py.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from widgets import hardware as hw
from widgets.hardware import ARCHS, NICS, PCIE_X16_BYTES_PER_S, get_arch, get_gpu, gpu_names

GPUS = gpu_names()
NVIDIA = [n for n in GPUS if get_gpu(n).vendor == "NVIDIA"]
# issue 13: the six GPUs that prove a GPU is one entry; issue 14: the archs the occupancy model covers
NEW_GPUS = {"T4": "sm_75", "A10G": "sm_86", "L40S": "sm_89", "H100-PCIe": "sm_90", "RTX-3090": "sm_86", "RTX-5090": "sm_120"}
REQUIRED_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
FACTS = ("sms", "boost_clock_hz", "hbm_bytes", "hbm_bytes_per_s", "l2_bytes", "smem_per_sm_bytes",
         "registers_per_sm_bytes", "peak_flop_per_s", "interconnect_bytes_per_s", "host_bytes_per_s", "tdp_w",
         "flop_per_clock_per_sm", "pcie_gen")


def _sixteen_bit(name: str) -> str:
    """The GPU's 16-bit tensor-core type: bf16, or fp16 where it has none (T4)."""
    return "bf16" if "bf16" in get_gpu(name).peak_flop_per_s else "fp16"


def _names_in(text: str) -> set:
    """Catalog names that appear in ``text`` as whole names ("L4" is not inside "L40S")."""
    return {n for n in GPUS if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)}


# --------------------------------------------------------------------------------------------
# The catalog itself
# --------------------------------------------------------------------------------------------
def test_the_new_gpus_and_archs_are_in_the_catalog():
    assert set(NEW_GPUS) <= set(GPUS)
    assert {n: get_gpu(n).arch for n in NEW_GPUS} == NEW_GPUS
    assert tuple(ARCHS) == REQUIRED_ARCHS
    assert hw.arch_names() == list(REQUIRED_ARCHS)


@pytest.mark.parametrize("name", GPUS)
def test_every_gpu_has_its_arch_and_a_source_for_every_fact(name):
    g = get_gpu(name)
    if g.vendor == "NVIDIA":
        lim = get_arch(g.arch)  # a ValueError here: an NVIDIA GPU whose arch the catalog lacks
        assert g.arch_limits is lim
        # the GPU's per-SM figures are its arch's (one fact, one value)
        assert g.smem_per_sm_bytes == lim.smem_per_sm_bytes
        assert g.registers_per_sm_bytes == lim.register_file_bytes
    else:  # MI300X (gfx942): no CUDA compute capability, no occupancy rules
        assert g.arch not in ARCHS and g.arch_limits is None
    for f in FACTS:
        assert g.sources.get(f), f"{name}: no source for {f}"
    optional = {"usable_memory_bytes": g.usable_memory_bytes, "datasheet_clock_hz": g.datasheet_clock_hz,
                "interconnect_links": g.interconnect_links}
    for f, value in optional.items():
        if value:
            assert g.sources.get(f), f"{name}: {f} is set without a source"
    # per-SM rates only for data types with a dense peak; a GPU without them says why in the source
    assert set(g.flop_per_clock_per_sm) <= set(g.peak_flop_per_s)
    if not g.flop_per_clock_per_sm:
        assert "not published" in g.sources["flop_per_clock_per_sm"]
    # links: the host link is the PCIe generation's x16 rate; a link count comes with a link rate
    assert g.host_bytes_per_s == PCIE_X16_BYTES_PER_S[g.pcie_gen] * g.pcie_lanes / 16
    assert (g.interconnect_links is None) or g.interconnect_bytes_per_s
    if g.usable_memory_bytes:
        assert 0.85 * g.hbm_bytes < g.usable_memory_bytes <= g.hbm_bytes


def test_sparse_figures_are_never_stored():
    """Dense peaks only: every datasheet figure that the sources call sparse was halved, so the
    stored peak sits within 1.5 % of SMs x clock x per-SM rate (a sparse figure would be at 2x)."""
    from widgets.models import tensor_cores as tc

    for name in GPUS:
        for d in get_gpu(name).flop_per_clock_per_sm:
            assert tc.peak_check(name, d).ratio == pytest.approx(1.0, abs=0.015), (name, d)


def test_every_gpu_is_found_by_its_runtime_name():
    """describe_local_gpu maps the name torch reports to the catalog entry for every GPU."""
    assert set(hw._TORCH_NAMES.values()) == set(GPUS)
    assert hw.catalog_name_for("Tesla T4") == "T4" and hw.catalog_name_for("NVIDIA H100 PCIe") == "H100-PCIe"
    assert hw.catalog_name_for("NVIDIA GeForce RTX 5090") == "RTX-5090"


@pytest.mark.parametrize("arch", REQUIRED_ARCHS)
def test_every_arch_has_sources_and_backs_a_gpu(arch):
    a = ARCHS[arch]
    assert arch == f"sm_{a.compute_capability[0]}{a.compute_capability[1]}"
    for f in ("max_warps_per_sm", "max_blocks_per_sm", "regs_per_sm", "reg_alloc_unit", "max_regs_per_thread",
              "sub_partitions", "smem_per_sm_bytes", "smem_per_block_default_bytes", "smem_reserved_per_block_bytes",
              "smem_alloc_unit_bytes", "smem_carveouts_bytes", "l1_smem_per_sm_bytes", "max_threads_per_block"):
        assert a.sources.get(f), f"{arch}: no source for {f}"
    assert a.smem_per_block_optin_bytes <= a.smem_per_sm_bytes < a.l1_smem_per_sm_bytes
    assert any(get_gpu(n).arch == arch for n in GPUS), f"no catalog GPU has {arch}"


def test_an_arch_record_rejects_a_bad_field():
    a = ARCHS["sm_90"]
    fields = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    with pytest.raises(ValueError, match="^smem_carveouts_bytes"):
        hw.Arch(**{**fields, "smem_carveouts_bytes": (0, 8 * 1024)})  # does not reach 228 KiB
    with pytest.raises(ValueError, match="^max_warps_per_sm"):
        hw.Arch(**{**fields, "max_warps_per_sm": 0})
    with pytest.raises(ValueError, match="^compute_capability"):
        hw.Arch(**{**fields, "compute_capability": "9.0"})
    with pytest.raises(ValueError, match="^arch must be one of"):
        get_arch("sm_70")
    assert hw.Arch(**fields) == a


def test_a_gpu_record_rejects_bad_link_fields():
    g = get_gpu("H200-SXM")
    fields = {f.name: getattr(g, f.name) for f in dataclasses.fields(g)}
    for field, bad in (("pcie_gen", 9), ("pcie_lanes", 3), ("interconnect_links", 0), ("flop_per_clock_per_sm", {"bf16": -1})):
        with pytest.raises(ValueError, match=rf"^{field}"):
            hw.GPU(**{**fields, field: bad})


def test_network_cards_are_in_the_catalog():
    from widgets.models import collectives as cm

    assert NICS and all(link.source and link.bytes_per_s > 0 for link in NICS.values())
    assert cm.NETWORK_LINKS == {n: (link.bytes_per_s, link.source) for n, link in NICS.items()}


def test_the_models_read_the_catalog():
    """No second table: the per-SM rates, datasheet clocks and arch limits the models use are the
    catalog's records."""
    from widgets.models import simt
    from widgets.models import tensor_cores as tc

    assert simt.ARCHS is ARCHS and simt.arch_limits("sm_75") is ARCHS["sm_75"]
    assert tc.FLOP_PER_CLOCK_PER_SM == {n: dict(get_gpu(n).flop_per_clock_per_sm) for n in GPUS if get_gpu(n).flop_per_clock_per_sm}
    assert tc.DATASHEET_CLOCK_HZ["H100-PCIe"]["bf16"] == 1.62e9 and tc.DATASHEET_CLOCK_HZ["H100-PCIe"]["fp32"] == 1.755e9


def test_gpu_queries_replace_typed_lists():
    fp8 = gpu_names(lambda g: "fp8" in g.peak_flop_per_s)
    assert "T4" not in fp8 and "A100-SXM-80GB" not in fp8 and "RTX-3090" not in fp8 and "L40S" in fp8
    assert gpu_names(lambda g: g.arch == "sm_86") == ["A10G", "RTX-3090"]
    with pytest.raises(ValueError, match="^where must be a function"):
        gpu_names("fp8")


@pytest.mark.parametrize(
    "name, dtype, needs",
    [("T4", "bf16", "sm_80"), ("T4", "tf32", "sm_80"), ("T4", "fp8", "sm_89"), ("A100-SXM-80GB", "fp8", "sm_89"),
     ("RTX-3090", "fp8", "sm_89"), ("A10G", "fp8", "sm_89")],
)
def test_a_missing_tensor_core_type_says_which_arch_it_needs(name, dtype, needs):
    """CUDA C++ Programming Guide, warp matrix functions: fp16 from 7.0, bf16/tf32 from 8.0, fp8 from 8.9."""
    g = get_gpu(name)
    assert f"{dtype} needs {needs} or newer" in g.why_no_peak(dtype)
    with pytest.raises(ValueError, match=f"{dtype} needs {needs}"):
        g.peak(dtype)
    assert g.why_no_peak(_sixteen_bit(name)) is None


# --------------------------------------------------------------------------------------------
# Every model that takes a GPU accepts every catalog GPU
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", GPUS)
def test_every_model_accepts_every_gpu(name):
    from widgets import doctor
    from widgets.models import collectives as cm
    from widgets.models import memory_hierarchy as mh
    from widgets.models import serving as sv
    from widgets.models import simt
    from widgets.models import tensor_cores as tc

    g, d = get_gpu(name), _sixteen_bit(name)
    assert mh.roofline_point(name, d, 10.0).peak_flop_per_s == g.peak(d)
    assert mh.smem_bytes_per_s(g.sms, g.boost_clock_hz) > 0
    assert tc.gemm_estimate_for(4096, 4096, 4096, d, name).flop_per_s > 0
    for dtype in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        if g.why_no_rate(dtype) is None:
            assert tc.peak_check(name, dtype).peak_flop_per_s > 0
        else:  # the error carries the reason
            with pytest.raises(ValueError) as err:
                tc.peak_check(name, dtype)
            assert g.why_no_rate(dtype) in str(err.value)
    link = g.interconnect_bytes_per_s or g.host_bytes_per_s
    assert cm.ring_allreduce_time_s(2**30, 8, link, 0, 0) > 0
    assert sv.memory_budget("Llama-3-8B", name, 8192, 1, d, d).hbm_bytes > 0
    if g.arch_limits is not None:
        assert simt.occupancy(256, 32, 0, g.arch).blocks_per_sm >= 1
    else:
        with pytest.raises(ValueError, match="^arch"):
            simt.occupancy(256, 32, 0, g.arch)
    m = doctor.simulate(name)
    assert (m.arch, m.vendor) == (g.arch, g.vendor) and m.total_bytes == g.memory_bytes
    assert len(doctor.chapter_verdicts(m)) == len(doctor.CHAPTERS)


@pytest.mark.parametrize("name", GPUS)
def test_the_serving_latency_model_accepts_every_gpu(name):
    from widgets.models import serving as sv

    d = _sixteen_bit(name)
    r = sv.latency("Llama-3-8B", name, 8, 1024, 128, d, d)
    assert r.tpot_s > 0 and r.ttft_s > 0
    # computed in the weights' 16-bit format, or (bf16 weights on a GPU without bf16 tensor
    # cores, the T4) in the GPU's 16-bit format, with the reason in the result
    assert r.compute_dtype == d or (r.compute_dtype == "fp16" and get_gpu(name).why_no_peak(d) in r.compute_note)
    assert sv.latency("Llama-3-8B", name, 8, 1024, 128, "bf16", "bf16").compute_dtype in ("bf16", "fp16")


# --------------------------------------------------------------------------------------------
# Every calculator offers every catalog GPU (static figures and live forms)
# --------------------------------------------------------------------------------------------
def _dropdown_labels(fig) -> list:
    return [b.label for b in fig.layout.updatemenus[0].buttons]


def _slider_labels(fig) -> list:
    return [s.label for s in fig.layout.sliders[0].steps]


def _figures():
    from widgets.ui import collectives, memory_hierarchy, serving, simt, tensor_cores

    return {
        "tensor_cores.peak_figure": _dropdown_labels(tensor_cores.peak_figure()),
        "tensor_cores.gemm_figure": _dropdown_labels(tensor_cores.gemm_figure(ms=(2048,))),
        "memory_hierarchy.roofline_figure": _dropdown_labels(memory_hierarchy.roofline_figure(intensities=(10.0,))),
        "memory_hierarchy.fusion_figure": _dropdown_labels(memory_hierarchy.fusion_figure(sizes=(2**20,), ops=(1, 4))),
        "memory_hierarchy.inflight_figure": _dropdown_labels(memory_hierarchy.inflight_figure(latencies_ns=(600,))),
        "simt.amdahl_figure": _dropdown_labels(simt.amdahl_figure((0.9,))),
        "collectives.bandwidth_ladder_figure": _slider_labels(collectives.bandwidth_ladder_figure(sizes=(2**30,))),
        "serving.latency_figure": _dropdown_labels(serving.latency_figure(batches=(32,))),
    }


def test_every_static_figure_offers_every_gpu():
    for figure, labels in _figures().items():
        missing = set(GPUS) - _names_in(" | ".join(labels))
        assert not missing, f"{figure} does not offer {sorted(missing)}"


def test_the_occupancy_figure_offers_every_gpus_arch():
    from widgets.ui import simt as ui

    labels = " | ".join(_dropdown_labels(ui.occupancy_figure(block_sizes=(256,))))
    for name in NVIDIA:
        assert get_gpu(name).arch + " " in labels, name
    assert set(ui.ARCH_GPUS) == set(ARCHS)
    assert _names_in(" ".join(ui.ARCH_GPUS.values())) == set(NVIDIA)


def test_the_hierarchy_table_lists_every_gpu():
    from widgets.ui import memory_hierarchy as ui

    assert _names_in(ui.hierarchy_table()) == set(GPUS)


def test_static_figures_say_why_a_gpu_cannot_apply():
    """Where a GPU has no figure (a data type without tensor cores, per-SM rates not published,
    a model that needs bf16), the frame says why instead of leaving a gap or failing."""
    from widgets.ui import serving, tensor_cores

    fig = tensor_cores.peak_figure(gpus=("T4", "B200"), clocks_mhz=(1600,))
    t4 = next(f for f in fig.frames if f.name == "0:0").data[2]
    assert dict(zip(t4.x, t4.customdata))["fp8"] == get_gpu("T4").why_no_rate("fp8")
    b200 = next(f for f in fig.frames if f.name == "1:0")
    assert "no SM count or clock" in b200.layout.title.subtitle.text
    from widgets.ui import memory_hierarchy

    fig = memory_hierarchy.inflight_figure(gpus=("MI300X",), latencies_ns=(600,))
    assert "not a CUDA GPU" in fig.frames[0].layout.title.subtitle.text.replace("<br>", " ")
    fig = serving.latency_figure(choices=(("Llama-3-8B", "T4", "bf16", 1),), batches=(32,))
    assert "bf16 needs<br>sm_80" in fig.frames[0].layout.title.subtitle.text or \
        "bf16 needs sm_80" in fig.frames[0].layout.title.subtitle.text


LIVE_FORMS = [
    ("tensor_cores", "peak_calculator", "gpu"),
    ("tensor_cores", "gemm_calculator", "gpu"),
    ("memory_hierarchy", "roofline_calculator", "gpu"),
    ("memory_hierarchy", "fusion_calculator", "gpu"),
    ("serving", "memory_calculator", "gpu"),
    ("serving", "latency_calculator", "gpu"),
    ("serving", "capacity_calculator", "gpu"),
]


@pytest.fixture
def live(monkeypatch):
    monkeypatch.delenv("GPUBOOK_BUILD", raising=False)  # live forms make no widgets in the book build
    pytest.importorskip("ipywidgets")
    import importlib

    return lambda module, fn: getattr(importlib.import_module(f"widgets.ui.{module}"), fn)()


def _options(control) -> list:
    return [o[1] if isinstance(o, tuple) else o for o in control.options]


@pytest.mark.parametrize("module, fn, control", LIVE_FORMS)
def test_every_live_form_offers_every_gpu(live, module, fn, control):
    form = live(module, fn)
    assert set(GPUS) <= set(_options(form.controls[control])), f"{module}.{fn}"


def test_the_live_occupancy_form_offers_every_arch(live):
    form = live("simt", "occupancy_calculator")
    assert set(_options(form.controls["arch"])) == set(ARCHS)
    form.controls["arch"].value = "sm_75"
    form.refresh()
    assert "of 32" in form.output.value  # 32 warp slots per SM on Turing
    # no shared memory allocated on sm_75 (no 1 KiB reservation): no limit, not INT_MAX blocks
    assert "no limit" in form.output.value and "2,147,483,647" not in form.output.value


@pytest.mark.parametrize(
    "module, fn, values, reason",
    [
        ("tensor_cores", "peak_calculator", {"gpu": "T4", "dtype": "bf16"}, "bf16 needs sm_80 or newer"),
        ("tensor_cores", "peak_calculator", {"gpu": "B200", "dtype": "bf16"}, "no SM count or clock"),
        ("tensor_cores", "gemm_calculator", {"gpu": "T4", "dtype": "fp8"}, "fp8 needs sm_89 or newer"),
        ("memory_hierarchy", "roofline_calculator", {"gpu": "RTX-3090", "dtype": "fp8"}, "fp8 needs sm_89 or newer"),
    ],
)
def test_a_live_form_says_why_a_gpu_cannot_apply(live, module, fn, values, reason):
    form = live(module, fn)
    for k, v in values.items():
        form.controls[k].value = v
    form.refresh()
    assert reason in form.output.value


# --------------------------------------------------------------------------------------------
# The catalog against a real device (benchmarks/h200/catalog_device_check.py)
# --------------------------------------------------------------------------------------------
def _device_check():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "h200" / "catalog_device_check.py"
    spec = importlib.util.spec_from_file_location("catalog_device_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_h200_and_sm_90_records_match_what_an_h200_reported():
    """The H200's device limits as the runtime reported them (recorded in widgets/data/h200/simt.json
    by `python -m widgets.measure`, with the total memory in its provenance) equal the catalog's
    H200-SXM entry and its sm_90 record, compared by the device-check script's own code."""
    from widgets.experiments import harness

    rec = harness.load_reference("simt")
    lim = rec["results"]["occupancy_api"]["device_limits"]
    dev = {"name": rec["provenance"]["gpu"], "compute_capability": f"{lim['compute_capability_major']}.{lim['compute_capability_minor']}",
           "total_memory_bytes": rec["provenance"]["gpu_memory_bytes"], "l2_cache_bytes": None, "errors": {},
           **{k: lim[k] for k in ("multiprocessor_count", "max_threads_per_multiprocessor", "max_blocks_per_multiprocessor",
                                  "max_shared_memory_per_multiprocessor", "max_shared_memory_per_block_optin",
                                  "reserved_shared_memory_per_block", "max_registers_per_multiprocessor")}}
    out = _device_check().compare(dev)
    assert out["catalog_gpu"] == "H200-SXM" and out["arch"] == "sm_90"
    checked = [r for r in out["rows"] if r["match"] is not None]
    assert len(checked) >= 8 and all(r["match"] for r in checked), [r for r in checked if not r["match"]]
    # the script can fail: a wrong SM count is a mismatch
    assert any(r["match"] is False for r in _device_check().compare({**dev, "multiprocessor_count": 114})["rows"])


def test_the_device_check_run_on_the_h200_matches_if_present():
    """Written by the lead's H200 run (see /work/briefs/signals/gpu_catalog.md); skipped until then."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "h200" / "catalog_device_check.json"
    if not path.exists():
        pytest.skip("benchmarks/h200/catalog_device_check.json not written yet (an H200 run writes it)")
    out = json.loads(path.read_text())
    assert not out.get("error"), out.get("error")
    assert out["catalog_gpu"] == "H200-SXM"
    assert [r for r in out["rows"] if r["match"] is False] == []


# --------------------------------------------------------------------------------------------
# Found by discovery: a calculator added later is checked without editing this file
# --------------------------------------------------------------------------------------------
def _ui_functions(suffix: str):
    import importlib
    import inspect
    import pkgutil

    import widgets.ui

    for m in pkgutil.iter_modules(widgets.ui.__path__):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"widgets.ui.{m.name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.endswith(suffix) and fn.__module__ == mod.__name__:
                yield f"{m.name}.{name}", fn


def test_every_live_form_with_a_gpu_or_arch_control_offers_them_all(live):
    import inspect

    seen = 0
    for where, fn in _ui_functions("_calculator"):
        if any(p.default is p.empty for p in inspect.signature(fn).parameters.values()):
            continue
        controls = getattr(fn(), "controls", {})
        if "gpu" in controls:
            seen += 1
            assert set(GPUS) <= set(_options(controls["gpu"])), f"{where} does not offer every catalog GPU"
        if "arch" in controls:
            seen += 1
            assert set(ARCHS) <= set(_options(controls["arch"])), f"{where} does not offer every arch"
    assert seen >= 8  # the forms listed in LIVE_FORMS and the occupancy form, at least


def test_every_static_figure_with_a_gpus_parameter_defaults_to_every_gpu():
    import inspect

    seen = 0
    for where, fn in _ui_functions("_figure"):
        p = inspect.signature(fn).parameters.get("gpus")
        if p is None or p.default is p.empty:
            continue
        seen += 1
        assert set(GPUS) <= set(p.default), f"{where}: gpus defaults to {p.default!r}"
    assert seen >= 5  # peak, amdahl, bandwidth ladder, fusion, in-flight
