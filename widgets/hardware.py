"""GPU catalog: one frozen record per GPU, every figure with its source.

Conventions
-----------
- ``peak_flop_per_s`` holds DENSE tensor/vector peaks. Datasheets often print the 2:4
  structured-sparsity figure first; that figure is twice the dense one and is never stored here.
  ``"fp32"`` is the plain (non-tensor) FP32 rate; ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
  are matrix-unit rates with FP32 accumulation where the vendor gives a choice.
- Rates are decimal (B/s, FLOP/s). Capacities are bytes; HBM, caches and shared memory are
  binary-sized hardware, so "80 GB" of HBM on a datasheet is stored as 80 GiB: ``nvidia-smi`` on
  an A800/A100-SXM4-80GB reports 81920 MiB = 80 GiB (github.com/dexmal/dexbotic/issues/41).
  ``hbm_bytes`` is that datasheet capacity. What a program can allocate is less: the driver keeps
  some (an A100-SXM4-40GB's deviceQuery reports 42,298,834,944 B = 39.4 GiB,
  github.com/bottlerocket-os/bottlerocket/pull/3873). ``usable_memory_bytes`` holds what the device
  reports (``torch.cuda.get_device_properties().total_memory``) where it was measured, else None;
  ``GPU.memory_bytes`` returns it, or the datasheet capacity when it is unknown. Memory budgets
  plan in ``memory_bytes`` (and keep a stated reserve on top).
- ``interconnect_bytes_per_s`` is the GPU-to-GPU link (NVLink, Infinity Fabric) PER DIRECTION:
  half of the bidirectional total that datasheets print. ``host_bytes_per_s`` is the PCIe link
  to the host, also per direction.
- ``None`` means the vendor does not publish the figure.

This module imports only the standard library; ``describe_local_gpu`` imports torch lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Optional

from . import _check
from .units import GiB, KiB, MiB

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class GPU:
    """One GPU's published figures. All rates decimal, all capacities in bytes."""

    name: str
    vendor: str
    arch: str
    sms: int
    boost_clock_hz: float
    hbm_bytes: int
    hbm_bytes_per_s: float
    l2_bytes: Optional[int]
    smem_per_sm_bytes: int
    registers_per_sm_bytes: int
    peak_flop_per_s: Mapping[str, float]
    interconnect_bytes_per_s: Optional[float]
    host_bytes_per_s: float
    tdp_w: float
    memory_type: str = "HBM"
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    usable_memory_bytes: Optional[int] = None

    def __post_init__(self):
        _validate_gpu(self)
        object.__setattr__(self, "peak_flop_per_s", MappingProxyType(dict(self.peak_flop_per_s)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    @property
    def memory_bytes(self) -> int:
        """Device memory a program can plan in [B]: ``usable_memory_bytes`` as the device reports
        it where known, else the datasheet capacity ``hbm_bytes``."""
        return self.usable_memory_bytes if self.usable_memory_bytes else self.hbm_bytes

    def peak(self, dtype: str, *, param: str = "dtype") -> float:
        """Dense peak FLOP/s for ``dtype``; ``ValueError`` if this GPU has no such rate.

        ``param`` is the caller's name for ``dtype`` in that message (e.g. ``"compute_dtype"``).
        """
        key = dtype.lower() if isinstance(dtype, str) else None
        if key not in self.peak_flop_per_s:
            raise ValueError(
                f"{param} must be one of {', '.join(map(repr, self.peak_flop_per_s))} for {self.name}; "
                f"got {dtype!r}"
            )
        return self.peak_flop_per_s[key]


MAX_SMS = 100_000  # bounds a count that sizes loops and arrays in the models


def _validate_gpu(g: GPU) -> None:
    """Check a GPU record field by field (``ValueError`` naming the field); store exact ints.

    Rates, clocks and power may be 0: ``describe_local_gpu`` writes 0 for a figure the runtime
    does not report (a model that needs the figure rejects the 0 itself).
    """
    put = lambda k, v: object.__setattr__(g, k, v)  # noqa: E731 - the record is frozen
    for k in ("name", "vendor", "arch", "memory_type"):
        _check.text(k, getattr(g, k))
    _check.text("notes", g.notes, empty=True)
    put("sms", _check.integer("sms", g.sms, minimum=1, maximum=MAX_SMS))
    for k in ("hbm_bytes", "smem_per_sm_bytes", "registers_per_sm_bytes"):
        put(k, _check.integer(k, getattr(g, k), minimum=1 if k == "hbm_bytes" else 0))
    put("l2_bytes", _check.optional(_check.integer, "l2_bytes", g.l2_bytes, minimum=0))
    put("usable_memory_bytes", _check.optional(_check.integer, "usable_memory_bytes", g.usable_memory_bytes, minimum=1))
    for k in ("boost_clock_hz", "hbm_bytes_per_s", "host_bytes_per_s", "tdp_w"):
        _check.non_negative(k, getattr(g, k))
    _check.optional(_check.non_negative, "interconnect_bytes_per_s", g.interconnect_bytes_per_s)
    for k, check in (("peak_flop_per_s", _check.positive), ("sources", _check.text)):
        table = getattr(g, k)
        if not isinstance(table, Mapping):
            raise ValueError(f"{k} must be a mapping from names to values, got {table!r}"[:200])
        for key, value in table.items():
            _check.text(f"{k} key", key)
            check(f"{k}[{key!r}]", value)


_NV_H100_SRC = "NVIDIA H100 Tensor Core GPU datasheet (SXM column), dense = sparse/2"
_NV_H200_SRC = "NVIDIA H200 Tensor Core GPU datasheet (SXM column), dense = sparse/2"
_NV_HOPPER_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3 and SM section"

_CATALOG = {
    g.name.lower(): g
    for g in [
        GPU(
            name="A100-SXM-80GB",
            vendor="NVIDIA",
            arch="sm_80",
            sms=108,
            boost_clock_hz=1.410e9,
            hbm_bytes=80 * GiB,
            hbm_bytes_per_s=2.039e12,
            l2_bytes=40 * MiB,
            smem_per_sm_bytes=164 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
            interconnect_bytes_per_s=300e9,
            host_bytes_per_s=32e9,
            tdp_w=400,
            memory_type="HBM2e",
            sources={
                "peak_flop_per_s": "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense",
                "hbm_bytes_per_s": "NVIDIA A100 datasheet: 2,039 GB/s (80GB SXM)",
                "sms": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs, 1410 MHz boost",
                "boost_clock_hz": "NVIDIA A100 whitepaper, Table 1",
                "l2_bytes": "NVIDIA A100 whitepaper: 40 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.0: up to 164 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide, compute capabilities table: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA A100 datasheet: NVLink 600 GB/s bidirectional -> 300 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction",
                "tdp_w": "NVIDIA A100 datasheet: 400 W (SXM)",
            },
        ),
        GPU(
            name="H100-SXM",
            vendor="NVIDIA",
            arch="sm_90",
            sms=132,
            boost_clock_hz=1.980e9,
            hbm_bytes=80 * GiB,
            hbm_bytes_per_s=3.35e12,
            l2_bytes=50 * MiB,
            smem_per_sm_bytes=228 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12},
            interconnect_bytes_per_s=450e9,
            host_bytes_per_s=64e9,
            tdp_w=700,
            memory_type="HBM3",
            sources={
                "peak_flop_per_s": _NV_H100_SRC + ": FP32 67, TF32 989/2, BF16 1979/2, FP16 1979/2, FP8 3958/2 TFLOPS",
                "hbm_bytes_per_s": "NVIDIA H100 datasheet: 3.35 TB/s (SXM)",
                "sms": _NV_HOPPER_WP + ": H100 SXM5 has 132 SMs",
                "boost_clock_hz": "NVIDIA H100 datasheet/whitepaper: 1980 MHz max boost (SXM5)",
                "l2_bytes": _NV_HOPPER_WP + ": 50 MB L2 (H100 SXM5)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA H100 datasheet: NVLink 900 GB/s bidirectional -> 450 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction",
                "tdp_w": "NVIDIA H100 datasheet: up to 700 W (SXM)",
            },
        ),
        GPU(
            name="H200-SXM",
            vendor="NVIDIA",
            arch="sm_90",
            sms=132,
            boost_clock_hz=1.980e9,
            hbm_bytes=141 * GiB,
            hbm_bytes_per_s=4.8e12,
            l2_bytes=60 * MiB,
            smem_per_sm_bytes=228 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12},
            interconnect_bytes_per_s=450e9,
            host_bytes_per_s=64e9,
            tdp_w=700,
            memory_type="HBM3e",
            usable_memory_bytes=150_109_880_320,
            sources={
                "peak_flop_per_s": _NV_H200_SRC + ": FP32 67, TF32 989/2, BF16 1979/2, FP16 1979/2, FP8 3958/2 TFLOPS",
                "hbm_bytes": "NVIDIA H200 datasheet: 141 GB HBM3e, stored as 141 GiB (HBM capacities are binary); "
                "nvidia-smi reports 143771 MiB (140.4 GiB)",
                "usable_memory_bytes": "torch.cuda.get_device_properties(0).total_memory on an H200 SXM: 150,109,880,320 B "
                "(139.8 GiB), recorded as provenance gpu_memory_bytes in widgets/data/h200/serving.json",
                "hbm_bytes_per_s": "NVIDIA H200 datasheet: 4.8 TB/s",
                "sms": "torch.cuda.get_device_properties on an H200 SXM: 132 multiprocessors (recorded in widgets/data/h200)",
                "boost_clock_hz": "same GH100 die and clocks as the H100 SXM5: 1980 MHz",
                "l2_bytes": "torch.cuda.get_device_properties on an H200 SXM: L2 of 62914560 bytes (60 MiB)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA H200 datasheet: NVLink 900 GB/s bidirectional -> 450 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction",
                "tdp_w": "NVIDIA H200 datasheet: up to 700 W (SXM)",
            },
        ),
        GPU(
            name="B200",
            vendor="NVIDIA",
            arch="sm_100",
            sms=148,
            boost_clock_hz=1.965e9,
            hbm_bytes=180 * GiB,
            hbm_bytes_per_s=8.0e12,
            l2_bytes=126 * MiB,
            smem_per_sm_bytes=228 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 75e12, "tf32": 1.1e15, "bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15},
            interconnect_bytes_per_s=900e9,
            host_bytes_per_s=64e9,
            tdp_w=1000,
            memory_type="HBM3e",
            sources={
                "peak_flop_per_s": "NVIDIA DGX B200 / HGX B200 datasheet (8 GPUs, sparse) divided by 8 and by 2 for dense: FP32 75 TFLOPS, TF32 1.1, BF16/FP16 2.25, FP8 4.5 PFLOPS",
                "hbm_bytes": "NVIDIA DGX B200 datasheet: 1,440 GB for 8 GPUs = 180 GB per GPU",
                "hbm_bytes_per_s": "NVIDIA DGX B200 datasheet: 64 TB/s for 8 GPUs = 8 TB/s per GPU",
                "sms": "CUDA device query of a B200 (148 SMs); not in the datasheet",
                "boost_clock_hz": "not in the datasheet; reported device query value, approximate",
                "l2_bytes": "CUDA device query of a B200 (126 MB); not in the datasheet",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 10.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVLink 5: 1.8 TB/s bidirectional per GPU -> 900 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction",
                "tdp_w": "NVIDIA HGX B200: 1000 W per GPU",
            },
            notes="Blackwell figures from system datasheets; SM count and clock are not published per GPU.",
        ),
        GPU(
            name="MI300X",
            vendor="AMD",
            arch="gfx942",
            sms=304,
            boost_clock_hz=2.100e9,
            hbm_bytes=192 * GiB,
            hbm_bytes_per_s=5.3e12,
            l2_bytes=32 * MiB,
            smem_per_sm_bytes=64 * KiB,
            registers_per_sm_bytes=512 * KiB,
            peak_flop_per_s={"fp32": 163.4e12, "tf32": 653.7e12, "bf16": 1307.4e12, "fp16": 1307.4e12, "fp8": 2614.9e12},
            interconnect_bytes_per_s=448e9,
            host_bytes_per_s=64e9,
            tdp_w=750,
            memory_type="HBM3",
            sources={
                "peak_flop_per_s": "AMD Instinct MI300X data sheet: FP32 vector 163.4 (FP64 vector is 81.7), TF32 653.7, BF16/FP16 1307.4, FP8 2614.9 TFLOPS (dense)",
                "hbm_bytes": "AMD Instinct MI300X data sheet: 192 GB HBM3",
                "hbm_bytes_per_s": "AMD Instinct MI300X data sheet: 5.3 TB/s",
                "sms": "AMD Instinct MI300X data sheet: 304 compute units (an 'SM' here is a CU)",
                "boost_clock_hz": "AMD Instinct MI300X data sheet: 2100 MHz peak engine clock",
                "l2_bytes": "AMD CDNA 3 white paper: 4 MB L2 per XCD x 8 XCDs (plus 256 MB Infinity Cache, not counted)",
                "smem_per_sm_bytes": "AMD CDNA 3 ISA / white paper: 64 KB LDS per CU",
                "registers_per_sm_bytes": "AMD CDNA 3 white paper: 512 KB vector register file per CU",
                "interconnect_bytes_per_s": "AMD MI300X data sheet: 896 GB/s peak Infinity Fabric (7 links) -> 448 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction",
                "tdp_w": "AMD Instinct MI300X data sheet: 750 W",
            },
            notes="AMD calls the SM a compute unit (CU) and shared memory LDS.",
        ),
        GPU(
            name="L4",
            vendor="NVIDIA",
            arch="sm_89",
            sms=58,
            boost_clock_hz=2.040e9,
            hbm_bytes=24 * GiB,
            hbm_bytes_per_s=300e9,
            l2_bytes=48 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 30.3e12, "tf32": 60e12, "bf16": 121e12, "fp16": 121e12, "fp8": 242.5e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=32e9,
            tdp_w=72,
            memory_type="GDDR6",
            sources={
                "peak_flop_per_s": "NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120/2, BF16/FP16 242/2, FP8 485/2 TFLOPS",
                "hbm_bytes": "NVIDIA L4 datasheet: 24 GB GDDR6 (not HBM; the field holds device memory)",
                "hbm_bytes_per_s": "NVIDIA L4 datasheet: 300 GB/s",
                "sms": "NVIDIA Ada GPU Architecture whitepaper: AD104 in L4 with 58 SMs",
                "boost_clock_hz": "NVIDIA L4 datasheet: 2040 MHz max boost",
                "l2_bytes": "NVIDIA Ada whitepaper: 48 MB L2 (AD104)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.9: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on L4",
                "host_bytes_per_s": "NVIDIA L4 datasheet: PCIe Gen4 x16, 32 GB/s per direction",
                "tdp_w": "NVIDIA L4 datasheet: 72 W",
            },
        ),
        GPU(
            name="RTX-4090",
            vendor="NVIDIA",
            arch="sm_89",
            sms=128,
            boost_clock_hz=2.520e9,
            hbm_bytes=24 * GiB,
            hbm_bytes_per_s=1008e9,
            l2_bytes=72 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 82.6e12, "tf32": 82.6e12, "bf16": 165.2e12, "fp16": 165.2e12, "fp8": 330.3e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=32e9,
            tdp_w=450,
            memory_type="GDDR6X",
            sources={
                "peak_flop_per_s": "NVIDIA Ada GPU Architecture whitepaper, Appendix A (RTX 4090), dense, FP32 accumulate: FP32 82.6, TF32 82.6, BF16/FP16 165.2, FP8 330.3 TFLOPS",
                "hbm_bytes": "NVIDIA RTX 4090 specifications: 24 GB GDDR6X (device memory, not HBM)",
                "hbm_bytes_per_s": "NVIDIA Ada whitepaper, Appendix A: 1008 GB/s",
                "sms": "NVIDIA Ada whitepaper, Appendix A: 128 SMs",
                "boost_clock_hz": "NVIDIA Ada whitepaper, Appendix A: 2520 MHz boost",
                "l2_bytes": "NVIDIA Ada whitepaper, Appendix A: 72 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.9: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on RTX 4090",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction",
                "tdp_w": "NVIDIA RTX 4090 specifications: 450 W total graphics power",
            },
        ),
    ]
}


def gpu_names() -> list[str]:
    """Names of every GPU in the catalog, in catalog order."""
    return [g.name for g in _CATALOG.values()]


def get_gpu(name: str, *, param: str = "name") -> GPU:
    """Look a GPU up by name, case-insensitively (a ``GPU`` record is returned as it is).

    ``param`` is the caller's name for ``name`` in the error (a model passes ``param="gpu"``).

    >>> get_gpu("h200-sxm").hbm_bytes_per_s
    4800000000000.0
    """
    if not isinstance(param, str) or not param:
        raise ValueError(f"param must be a parameter name (a string), got {param!r}")
    if isinstance(name, GPU):
        return name
    if isinstance(name, str) and name.lower() in _CATALOG:
        return _CATALOG[name.lower()]
    raise ValueError(f"{param} must be one of {', '.join(gpu_names())}; got {name!r}")


# Names torch reports, mapped to catalog entries.
_TORCH_NAMES = {
    "nvidia h200": "H200-SXM",
    "nvidia h100 80gb hbm3": "H100-SXM",
    "nvidia h100": "H100-SXM",
    "nvidia a100-sxm4-80gb": "A100-SXM-80GB",
    "nvidia b200": "B200",
    "nvidia l4": "L4",
    "nvidia geforce rtx 4090": "RTX-4090",
    "amd instinct mi300x": "MI300X",
}


def catalog_name_for(device_name: str) -> Optional[str]:
    """The catalog entry for a name as ``torch.cuda.get_device_name`` reports it, or None."""
    return _TORCH_NAMES.get(_check.text("device_name", device_name, empty=True).strip().lower())


def describe_local_gpu(device: int = 0) -> Optional[GPU]:
    """The reader's GPU: its catalog record when known, else a record built from
    ``torch.cuda.get_device_properties`` (figures the runtime cannot report are left at 0 or
    empty and say so in ``sources``). ``None`` without a CUDA device."""
    device = _check.integer("device", device, minimum=0, maximum=1023)
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    count = torch.cuda.device_count()
    if device >= count:  # torch would raise an AssertionError ("Invalid device id")
        raise ValueError(f"device must be a CUDA device index in [0, {count - 1}], got {device!r}")
    props = torch.cuda.get_device_properties(device)
    known = catalog_name_for(props.name)
    if known:
        return get_gpu(known)
    clock_khz = getattr(props, "clock_rate", 0) or 0
    smem = getattr(props, "shared_memory_per_multiprocessor", 0) or 0
    regs = getattr(props, "regs_per_multiprocessor", 65536) or 65536
    runtime = "torch.cuda.get_device_properties"
    return GPU(
        name=props.name,
        vendor="unknown",
        arch=f"sm_{props.major}{props.minor}",
        sms=props.multi_processor_count,
        boost_clock_hz=clock_khz * 1e3,
        hbm_bytes=props.total_memory,
        hbm_bytes_per_s=0.0,
        l2_bytes=getattr(props, "L2_cache_size", None),
        smem_per_sm_bytes=smem,
        registers_per_sm_bytes=regs * 4,
        peak_flop_per_s={},
        interconnect_bytes_per_s=None,
        host_bytes_per_s=0.0,
        tdp_w=0.0,
        memory_type="unknown",
        sources={
            "sms": runtime,
            "hbm_bytes": runtime,
            "l2_bytes": runtime,
            "smem_per_sm_bytes": runtime,
            "peak_flop_per_s": "not reported by the runtime: measure it (python -m widgets.measure)",
            "hbm_bytes_per_s": "not reported by the runtime: measure it (python -m widgets.measure)",
        },
        notes="Not in the catalog: described from the CUDA runtime; rates must be measured.",
    )
