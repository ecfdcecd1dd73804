"""widgets.hardware: the GPU catalog. Expected values are the vendors' published figures."""

import dataclasses

import pytest

from widgets.hardware import DTYPES, GPU, describe_local_gpu, get_gpu, gpu_names
from widgets.units import GiB, MiB

REQUIRED = ("A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200", "MI300X", "L4", "RTX-4090",
            "T4", "A10G", "L40S", "H100-PCIe", "RTX-3090", "RTX-5090")


def test_catalog_has_the_required_gpus():
    assert set(REQUIRED) <= set(gpu_names())


@pytest.mark.parametrize("name", ["h200-sxm", "H200-SXM", "H200-sxm"])
def test_lookup_is_case_insensitive(name):
    assert get_gpu(name).name == "H200-SXM"


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ValueError) as err:
        get_gpu("V100")
    msg = str(err.value)
    assert "V100" in msg and all(n in msg for n in REQUIRED)


def test_records_are_frozen():
    g = get_gpu("H100-SXM")
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.sms = 1
    with pytest.raises(TypeError):
        g.peak_flop_per_s["bf16"] = 1.0


@pytest.mark.parametrize(
    "name, field, value",
    [
        # NVIDIA H200 datasheet: 4.8 TB/s, 141 GB; dense = half the sparse figure (1,979 TFLOPS bf16 sparse).
        ("H200-SXM", "hbm_bytes_per_s", 4.8e12),
        ("H200-SXM", "hbm_bytes", 141 * GiB),
        # NVIDIA H100 datasheet (SXM): 3.35 TB/s, NVLink 900 GB/s bidirectional.
        ("H100-SXM", "hbm_bytes_per_s", 3.35e12),
        ("H100-SXM", "interconnect_bytes_per_s", 450e9),
        ("H100-SXM", "sms", 132),
        ("H100-SXM", "l2_bytes", 50 * MiB),
        # NVIDIA A100 datasheet (80GB SXM): 2,039 GB/s; whitepaper: 108 SMs, 40 MB L2.
        ("A100-SXM-80GB", "hbm_bytes_per_s", 2.039e12),
        ("A100-SXM-80GB", "sms", 108),
        # AMD MI300X data sheet: 5.3 TB/s, 192 GB, 304 CUs.
        ("MI300X", "hbm_bytes_per_s", 5.3e12),
        ("MI300X", "sms", 304),
        # NVIDIA L4 datasheet: 300 GB/s, 72 W.
        ("L4", "hbm_bytes_per_s", 300e9),
        ("L4", "tdp_w", 72),
        # Ada whitepaper Appendix A: RTX 4090, 1008 GB/s, 128 SMs, 72 MB L2.
        ("RTX-4090", "hbm_bytes_per_s", 1008e9),
        ("RTX-4090", "l2_bytes", 72 * MiB),
        # NVIDIA T4 datasheet: 320 GB/s, 70 W, 16 GB GDDR6, PCIe Gen3 x16; Turing whitepaper: 40 SMs, 1590 MHz.
        ("T4", "hbm_bytes_per_s", 320e9),
        ("T4", "tdp_w", 70),
        ("T4", "hbm_bytes", 16 * GiB),
        ("T4", "sms", 40),
        ("T4", "boost_clock_hz", 1.59e9),
        ("T4", "pcie_gen", 3),
        # A10G (no NVIDIA datasheet; torch reports 80 SMs; Baseten's table: 600 GB/s, 24 GB).
        ("A10G", "sms", 80),
        ("A10G", "hbm_bytes_per_s", 600e9),
        # NVIDIA L40S datasheet: 864 GB/s, 48 GB, 350 W, PCIe Gen4; 18,176 CUDA cores = 142 SMs.
        ("L40S", "hbm_bytes_per_s", 864e9),
        ("L40S", "hbm_bytes", 48 * GiB),
        ("L40S", "sms", 142),
        ("L40S", "tdp_w", 350),
        # NVIDIA H100 datasheet (PCIe): 2 TB/s, NVLink bridge 600 GB/s bidirectional; whitepaper: 114 SMs.
        ("H100-PCIe", "hbm_bytes_per_s", 2.0e12),
        ("H100-PCIe", "interconnect_bytes_per_s", 300e9),
        ("H100-PCIe", "sms", 114),
        ("H100-PCIe", "pcie_gen", 5),
        # GA102 whitepaper Appendix A: RTX 3090, 936 GB/s, 82 SMs, 6144 KB L2; NVLink 112.5 GB/s total.
        ("RTX-3090", "hbm_bytes_per_s", 936e9),
        ("RTX-3090", "sms", 82),
        ("RTX-3090", "l2_bytes", 6 * MiB),
        ("RTX-3090", "interconnect_bytes_per_s", 112.5e9 / 2),
        # RTX Blackwell whitepaper Appendix A: RTX 5090, 1792 GB/s, 170 SMs, 2407 MHz, 32 GB GDDR7.
        ("RTX-5090", "hbm_bytes_per_s", 1792e9),
        ("RTX-5090", "sms", 170),
        ("RTX-5090", "boost_clock_hz", 2.407e9),
        ("RTX-5090", "hbm_bytes", 32 * GiB),
        # Links: A100 12 NVLink 3 links, H100 SXM 18 NVLink 4 links (whitepapers).
        ("A100-SXM-80GB", "interconnect_links", 12),
        ("H100-SXM", "interconnect_links", 18),
        # H100 datasheet (PCIe column): NVLink 600 GB/s over the bridges = 12 links x 25 GB/s x 2 directions.
        ("H100-PCIe", "interconnect_links", 12),
        # B200 device query (github.com/pytorch/ao/pull/4002): "L2 Cache Size: 126.50 MB", 148 SMs.
        ("B200", "l2_bytes", 126.5 * MiB),
        ("B200", "sms", 148),
    ],
)
def test_published_figures(name, field, value):
    assert getattr(get_gpu(name), field) == pytest.approx(value)


@pytest.mark.parametrize(
    "name, dtype, dense",
    [
        ("A100-SXM-80GB", "bf16", 312e12),  # A100 datasheet: 312 TFLOPS dense (624 sparse)
        ("A100-SXM-80GB", "tf32", 156e12),
        ("H100-SXM", "bf16", 989.4e12),  # H100 datasheet: 1,979 TFLOPS with sparsity
        ("H100-SXM", "fp8", 1978.9e12),  # 3,958 with sparsity
        ("H200-SXM", "fp32", 67e12),
        ("MI300X", "bf16", 1307.4e12),  # AMD data sheet, dense
        ("L4", "fp8", 242.5e12),  # L4 datasheet: 485 TFLOPS with sparsity
        ("T4", "fp16", 65e12),  # T4 datasheet: 65 TFLOPS mixed precision (Turing: no sparsity)
        # NVIDIA L40S datasheet prints dense | sparse pairs: TF32 183 | 366*, BF16/FP16 362.05 | 733*, FP8 733 | 1,466*
        # (the dense BF16 figure as printed, not 733/2 = 366.5).
        ("L40S", "fp8", 733e12),
        ("L40S", "bf16", 362.05e12),
        ("L40S", "fp16", 362.05e12),
        ("L40S", "tf32", 183e12),
        ("H100-PCIe", "bf16", 756.5e12),  # H100 datasheet (PCIe): 1,513 with sparsity
        ("H100-PCIe", "fp8", 1513e12),  # 3,026 with sparsity
        ("RTX-3090", "fp16", 71e12),  # GA102 whitepaper: 71 dense with FP32 accumulate (142 sparse)
        ("RTX-5090", "fp8", 419e12),  # RTX Blackwell whitepaper: 419 dense with FP32 accumulate
        ("A10G", "bf16", 70e12),
        # NVIDIA HGX B200 datasheet, 8 GPUs with sparsity: TF32 18, BF16 36, FP8 72 PFLOPS; FP32 600 TFLOPS (dense).
        ("B200", "tf32", 18e15 / 8 / 2),
        ("B200", "bf16", 36e15 / 8 / 2),
        ("B200", "fp8", 72e15 / 8 / 2),
        ("B200", "fp32", 600e12 / 8),
    ],
)
def test_peaks_are_dense(name, dtype, dense):
    assert get_gpu(name).peak(dtype) == pytest.approx(dense)


@pytest.mark.parametrize(
    "name, usable, exposed_by_nvidia_smi",
    [
        # pytorch/ao PR 4002, CUDA device query on a B200: "Total Global Memory: 178.35 GB" (GiB: the same query
        # prints 228.00 KB of shared memory per SM); TensorRT-LLM issue 10278: nvidia-smi total 183359 MiB.
        ("B200", 178.35 * GiB, 183359 * MiB),
        # ArcInstitute/evo2 issue 190, torch on an L4: "total capacity of 22.03 GiB"; modal-client PR 2797:
        # nvidia-smi total 23034 MiB (ECC on by default).
        ("L4", 22.03 * GiB, 23034 * MiB),
        # Public torch logs of 'NVIDIA H100 80GB HBM3': total_memory 81082 to 81090 MiB (smallest stored);
        # modal-client PR 2797: nvidia-smi total 81559 MiB.
        ("H100-SXM", 81082 * MiB, 81559 * MiB),
        # meta-pytorch/torchrec PR 3580, A100 SXM4 80GB boards ('NVIDIA PG509-210'): torch total 81050 MiB,
        # nvidia-smi 81920 MiB.
        ("A100-SXM-80GB", 81050 * MiB, 81920 * MiB),
        # CUDA.jl on an RTX 4090 (pc2/GPUInspector.jl issue 11): 23.988 GiB; vllm issue 7553: nvidia-smi 24564MiB.
        ("RTX-4090", 25_757_220_864, 24564 * MiB),
        # deviceQuery on an RTX 5090 (aikitoria/open-gpu-kernel-modules issue 1): 33677180928 bytes (32117 MBytes).
        ("RTX-5090", 33_677_180_928, None),
        # Our H200 record's provenance (torch total_memory); the catalog's own source: nvidia-smi 143771 MiB.
        ("H200-SXM", 150_109_880_320, 143771 * MiB),
    ],
)
def test_memory_bytes_is_what_the_device_reports_not_the_label(name, usable, exposed_by_nvidia_smi):
    """A program plans in what CUDA reports (totalGlobalMem = torch total_memory), which is below both the
    datasheet label read as GiB (hbm_bytes) and the total nvidia-smi shows (the driver keeps some)."""
    g = get_gpu(name)
    assert g.usable_memory_bytes == pytest.approx(usable, abs=0.5)
    assert g.memory_bytes == g.usable_memory_bytes < g.hbm_bytes
    if exposed_by_nvidia_smi is not None:
        assert g.memory_bytes <= exposed_by_nvidia_smi <= g.hbm_bytes
    assert g.sources["usable_memory_bytes"]


def test_a_gpu_without_a_device_report_says_so():
    """MI300X: no public report of what it exposes was found, so memory_bytes falls back to the label and
    the source string says so (rather than an invented figure)."""
    g = get_gpu("MI300X")
    assert g.usable_memory_bytes is None and g.memory_bytes == g.hbm_bytes == 192 * GiB
    assert "not set" in g.sources["usable_memory_bytes"]


def test_mi300x_fp32_is_the_plain_vector_rate_like_every_fp32_entry():
    """AMD CDNA 3 white paper: FP32 vector 256 FLOP/clk/CU; 304 CUs x 2100 MHz x 256 = 163.4 TFLOPS (data sheet)."""
    g = get_gpu("MI300X")
    assert g.flop_per_clock_per_sm["fp32"] == 256 and g.why_no_rate("fp32") is None
    assert g.sms * g.clock_for("fp32") * 256 == pytest.approx(g.peak("fp32"), rel=1e-3)


def test_b200_peaks_assume_a_clock_below_the_stored_boost():
    """The HGX B200 bf16 peak at 148 SMs and 1965 MHz would need 7737 FLOP/clk/SM, no power of two: the
    peaks assume a lower clock, so the catalog carries no per-SM rate (and says why) until that clock is known."""
    g = get_gpu("B200")
    per_clock = g.peak("bf16") / (g.sms * g.boost_clock_hz)
    assert 7700 < per_clock < 7800  # 8192 (Hopper's 4096 doubled) would need 2.25e15 / (148 x 8192) = 1856 MHz
    assert not g.flop_per_clock_per_sm and "not published" in g.sources["flop_per_clock_per_sm"]
    assert "lower" in g.sources["boost_clock_hz"].lower()


def test_every_gpu_has_every_required_field_with_a_source():
    for name in gpu_names():
        g = get_gpu(name)
        assert g.sms > 0 and g.boost_clock_hz > 1e8 and g.hbm_bytes > 0 and g.hbm_bytes_per_s > 0
        assert g.smem_per_sm_bytes > 0 and g.tdp_w > 0
        assert set(g.peak_flop_per_s) <= set(DTYPES) and "fp16" in g.peak_flop_per_s
        # bf16 tensor cores from sm_80 (NVIDIA) and on CDNA 3; the T4 (sm_75) has none.
        assert ("bf16" in g.peak_flop_per_s) == (g.arch != "sm_75")
        for f in ("peak_flop_per_s", "hbm_bytes_per_s", "sms", "l2_bytes", "interconnect_bytes_per_s", "tdp_w"):
            assert g.sources.get(f), f"{name}: no source for {f}"


def test_missing_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="fp8.*A100|A100.*fp8"):
        get_gpu("A100-SXM-80GB").peak("fp8")


def test_local_gpu_description_without_a_gpu():
    import torch

    g = describe_local_gpu()
    if torch.cuda.is_available():
        assert isinstance(g, GPU) and g.sms > 0
    else:
        assert g is None


def _h200_fields(**change):
    g = get_gpu("H200-SXM")
    kw = {f.name: getattr(g, f.name) for f in dataclasses.fields(g)}
    kw.update(change)
    return kw


@pytest.mark.parametrize(
    "field, value",
    [
        ("sms", 0), ("sms", 2**62), ("sms", True), ("hbm_bytes", -1), ("hbm_bytes", 1.5e9 + 0.5),
        ("hbm_bytes_per_s", float("nan")), ("tdp_w", -700.0), ("l2_bytes", "60 MiB"), ("name", None),
        ("interconnect_bytes_per_s", float("inf")), ("peak_flop_per_s", [1, 2]), ("sources", None),
        ("usable_memory_bytes", 0), ("notes", 3),
    ],
)
def test_a_gpu_record_rejects_a_bad_field_and_names_it(field, value):
    with pytest.raises(ValueError, match=rf"^{field}"):
        GPU(**_h200_fields(**{field: value}))


def test_a_bad_peak_names_the_dtype():
    with pytest.raises(ValueError, match=r"peak_flop_per_s\['bf16'\] must be > 0"):
        GPU(**_h200_fields(peak_flop_per_s={"bf16": 0.0}))


def test_every_catalog_record_passes_its_own_checks():
    for name in gpu_names():
        g = get_gpu(name)
        assert GPU(**_h200_fields(**{f.name: getattr(g, f.name) for f in dataclasses.fields(g)})) == g


def test_lookup_errors_name_the_callers_parameter():
    with pytest.raises(ValueError, match="^gpu must be one of"):
        get_gpu("V100", param="gpu")
    with pytest.raises(ValueError, match="^compute_dtype must be one of"):
        get_gpu("A100-SXM-80GB").peak("fp8", param="compute_dtype")
    with pytest.raises(ValueError, match="^dtype must be one of"):
        get_gpu("H200-SXM").peak(None)


def test_runtime_name_lookup_and_device_index_are_checked():
    from widgets.hardware import catalog_name_for

    assert catalog_name_for(" NVIDIA H200 ") == "H200-SXM"
    assert catalog_name_for("Z80") is None
    with pytest.raises(ValueError, match="^device_name must be a string"):
        catalog_name_for(None)
    with pytest.raises(ValueError, match=r"^device must be an integer in \[0, 1023\]"):
        describe_local_gpu(-1)
