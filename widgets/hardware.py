"""GPU catalog: one frozen record per GPU, every figure with its source.

Notes
-----
- ``peak_flop_per_s`` holds DENSE tensor/vector peaks. Datasheets often print the 2:4
  structured-sparsity figure first; that figure is twice the dense one and is never stored here.
  ``"fp32"`` is the plain (non-tensor) FP32 rate; ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``
  are matrix-unit rates with FP32 accumulation where the vendor gives a choice.
- Rates are decimal (B/s, FLOP/s). Capacities are bytes. Caches and shared memory are exact
  binary sizes. Device memory is not: ``hbm_bytes`` is the datasheet's LABEL ("80 GB", "141 GB")
  read as GiB, a convention of this catalog and neither what is soldered on nor what the driver
  exposes. The stacks are binary-sized (the H200 carries 6 x 24 GiB = 144 GiB of HBM3e and is sold
  as "141 GB"), and the total the driver exposes depends on the part, ECC and the driver: an
  A100-SXM4-80GB shows 81920 MiB in ``nvidia-smi`` with some drivers (github.com/dexmal/dexbotic/issues/41)
  and 81252 MiB with driver 450 (github.com/keyu-tian/SparK/issues/8); an H100 SXM shows 81559 MiB =
  79.65 GiB, an L4 23034 MiB = 22.49 GiB (github.com/modal-labs/modal-client/pull/2797).
- What a program can allocate is less again: CUDA's ``totalGlobalMem`` (= torch's ``total_memory``)
  leaves out what the driver keeps (an A100-SXM4-40GB's deviceQuery reports 42,298,834,944 B = 39.4
  GiB, github.com/bottlerocket-os/bottlerocket/pull/3873; an H200 reports 139.8 GiB of its "141 GB").
  ``usable_memory_bytes`` holds that figure, from a cited public device report (or our own H200
  record), for every GPU that has one; ``GPU.memory_bytes`` returns it and falls back to
  ``hbm_bytes`` only where no trustworthy report was found (the source string then says so; on
  the NVIDIA data-centre parts the fallback overstates by 0.35-0.85 GiB). Memory budgets plan in
  ``memory_bytes`` (and keep a stated reserve on top).
- ``interconnect_bytes_per_s`` is the GPU-to-GPU link (NVLink, Infinity Fabric) PER DIRECTION:
  half of the bidirectional total that datasheets print. ``host_bytes_per_s`` is the PCIe link
  to the host, also per direction.
- ``None`` means the vendor does not publish the figure.
- Per-SM facts live in two places: what a compute capability allows every kernel (warps, blocks,
  registers, shared memory and their allocation units: :class:`Arch`, in :data:`ARCHS`, keyed
  ``"sm_75"`` ... ``"sm_120"``; each NVIDIA GPU names its arch) and what one product's SM computes
  per clock (``GPU.flop_per_clock_per_sm``: GeForce and some cloud parts halve the FP32-accumulate
  tensor rate of the same arch, so it belongs to the GPU, not the arch).
- Links: ``interconnect_bytes_per_s`` with ``interconnect_links`` (NVLink or Infinity Fabric links),
  ``pcie_gen``/``pcie_lanes`` behind ``host_bytes_per_s``, and the network cards of a node in
  :data:`NICS`.

Adding a GPU is one ``GPU(...)`` entry below with a source for every figure; ``tests/test_catalog.py``
checks that every calculator offers it and every model accepts it.

This module imports only the standard library; ``describe_local_gpu`` imports torch lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Optional

from . import _check
from .capabilities import TENSOR_CORE_DTYPES
from .dtypes import PEAK_DTYPES
from .units import GiB, KiB, MiB

DTYPES = PEAK_DTYPES  # the keys of peak_flop_per_s: format names of widgets.dtypes ("fp8" is E4M3)
# The first NVIDIA compute capability with tensor-core math in each data type (CUDA C++ Programming
# Guide, warp matrix functions: fp16 from Volta 7.0, tf32 and bf16 from Ampere 8.0; PTX ISA, mma with
# .e4m3/.e5m2 operands: fp8 from Ada, sm_89): the capability rules' table, one home for the doctor,
# the experiments and the catalog's "why not" sentences.
TENSOR_CORE_MIN_CC = TENSOR_CORE_DTYPES

WARP_SIZE = 32
_KB = 1024  # the Programming Guide's "KB" of shared memory and caches is KiB


# --------------------------------------------------------------------------------------------
# Compute capabilities: what one SM allows every kernel
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arch:
    """What one SM of a compute capability offers to resident blocks.

    Every figure is one that NVIDIA's occupancy calculator, ``cuda_occupancy.h``, uses (its
    ``cudaOcc*`` helper named in ``sources``) or that a device of this compute capability reports
    through ``cudaDeviceProp`` (the CUDA C++ Programming Guide, "Technical Specifications per
    Compute Capability"). Capacities in bytes (binary), registers in 32-bit registers.
    """

    arch: str
    compute_capability: tuple
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    regs_per_block: int
    reg_alloc_unit: int  # registers, per warp
    max_regs_per_thread: int
    sub_partitions: int
    smem_per_sm_bytes: int  # largest carve-out
    smem_per_block_optin_bytes: int
    smem_per_block_default_bytes: int
    smem_reserved_per_block_bytes: int
    smem_alloc_unit_bytes: int
    smem_carveouts_bytes: tuple  # the shared-memory sizes an SM can be configured to
    l1_smem_per_sm_bytes: int  # the unified L1 data cache + shared memory of one SM, all carve-outs together
    max_threads_per_block: int = 1024
    family: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        _check.text("arch", self.arch)
        cc = self.compute_capability
        if not (isinstance(cc, tuple) and len(cc) == 2 and all(isinstance(v, int) and v >= 0 for v in cc)):
            raise ValueError(f"compute_capability must be a (major, minor) tuple of integers, got {cc!r}")
        for k in ("max_warps_per_sm", "max_blocks_per_sm", "regs_per_sm", "regs_per_block", "reg_alloc_unit",
                  "max_regs_per_thread", "sub_partitions", "smem_per_sm_bytes", "smem_per_block_optin_bytes",
                  "smem_per_block_default_bytes", "smem_alloc_unit_bytes", "l1_smem_per_sm_bytes", "max_threads_per_block"):
            object.__setattr__(self, k, _check.integer(k, getattr(self, k), minimum=1))
        object.__setattr__(self, "smem_reserved_per_block_bytes",
                           _check.integer("smem_reserved_per_block_bytes", self.smem_reserved_per_block_bytes, minimum=0))
        if not isinstance(self.family, str):
            raise ValueError(f"family must be a text label such as 'Hopper', got {self.family!r}"[:200])
        if not isinstance(self.smem_carveouts_bytes, (tuple, list)):
            raise ValueError("smem_carveouts_bytes must be a sequence of shared-memory sizes [B], "
                             f"got {self.smem_carveouts_bytes!r}"[:200])
        carve = tuple(_check.integer("smem_carveouts_bytes", v, minimum=0) for v in self.smem_carveouts_bytes)
        if not carve or list(carve) != sorted(carve) or carve[-1] != self.smem_per_sm_bytes:
            raise ValueError(f"smem_carveouts_bytes must rise to smem_per_sm_bytes ({self.smem_per_sm_bytes}), got {carve!r}")
        object.__setattr__(self, "smem_carveouts_bytes", carve)
        if not isinstance(self.sources, Mapping):
            raise ValueError(f"sources must be a mapping from field names to sources, got {self.sources!r}"[:200])
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * WARP_SIZE

    @property
    def register_file_bytes(self) -> int:
        """One SM's register file, ``regs_per_sm`` 32-bit registers [B]."""
        return self.regs_per_sm * 4


_HDR = "cuda_occupancy.h (CUDA 13.0)"
_PG = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability"
_ARCH_COMMON_SOURCES = {
    "reg_alloc_unit": _HDR + ", cudaOccRegAllocationGranularity: 256 registers per warp (compute capability 3.x to 12.x)",
    "sub_partitions": _HDR + ", cudaOccSubPartitionsPerMultiprocessor: 4 (compute capability 7.x to 12.x)",
    "regs_per_sm": _PG + ": 64K 32-bit registers per SM and per block",
    "regs_per_block": _PG + ": 64K 32-bit registers per block",
    "max_regs_per_thread": _PG + ": 255 registers per thread (the header tests numRegs > 256; ptxas never emits more than 255)",
    "smem_per_block_default_bytes": _PG + ": 48 KB per block without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)",
    "smem_carveouts_bytes": _HDR + ", cudaOccAlignUpShmemSizeVoltaPlus: the shared-memory sizes the SM can be set to",
    "max_blocks_per_sm": _HDR + ", cudaOccMaxBlocksPerMultiprocessor",
    "max_threads_per_block": _PG + ": 1024 threads per block (every compute capability since 2.0)",
}
_SMEM_UNIT_128 = _HDR + ", cudaOccSMemAllocationGranularity: 128 B on compute capability 8.x to 12.x"
_RESERVED_1K = ("cudaDevAttrReservedSharedMemoryPerBlock: 1 KB on compute capability 8.0 and later (" + _HDR
                + ", cudaOccSMemPerBlock: 'Starting Ampere, CUDA driver reserves additional shared memory per block')")


def _carveouts(*kib):
    return tuple(k * _KB for k in kib)


def _arch(arch, cc, family, *, warps, blocks, smem_kib, optin_kib, carveouts, l1_kib, sources,
          smem_unit=128, reserved=_KB):
    src = {**_ARCH_COMMON_SOURCES, "smem_alloc_unit_bytes": _SMEM_UNIT_128, "smem_reserved_per_block_bytes": _RESERVED_1K}
    return Arch(
        arch=arch,
        compute_capability=cc,
        family=family,
        max_warps_per_sm=warps,
        max_blocks_per_sm=blocks,
        regs_per_sm=65536,
        regs_per_block=65536,
        reg_alloc_unit=256,
        max_regs_per_thread=255,
        sub_partitions=4,
        smem_per_sm_bytes=smem_kib * _KB,
        smem_per_block_optin_bytes=optin_kib * _KB,
        smem_per_block_default_bytes=48 * _KB,
        smem_reserved_per_block_bytes=reserved,
        smem_alloc_unit_bytes=smem_unit,
        smem_carveouts_bytes=carveouts,
        l1_smem_per_sm_bytes=l1_kib * _KB,
        sources={**src, **sources},
    )


_CARVEOUTS_TU10X = _carveouts(32, 64)
_CARVEOUTS_GA100 = _carveouts(0, 8, 16, 32, 64, 100, 132, 164)
_CARVEOUTS_GA10X = _carveouts(0, 8, 16, 32, 64, 100)
_CARVEOUTS_GH100 = _carveouts(0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

ARCHS: Mapping[str, Arch] = MappingProxyType({
    "sm_75": _arch("sm_75", (7, 5), "Turing", warps=32, blocks=16, smem_kib=64, optin_kib=64,
                   carveouts=_CARVEOUTS_TU10X, l1_kib=96, smem_unit=256, reserved=0, sources={
        "max_warps_per_sm": _PG + ", 7.5: 1024 threads = 32 warps per SM",
        "max_blocks_per_sm": _HDR + ", cudaOccMaxBlocksPerMultiprocessor: 16 on Turing (7.5); Programming Guide, 7.5: 16",
        "smem_per_sm_bytes": _PG + ", 7.5: 64 KB shared memory per SM and per block (opt-in)",
        "smem_carveouts_bytes": _HDR + ", cudaOccAlignUpShmemSizeVoltaPlus: 'Turing supports 32KB and 64KB shared mem'",
        "l1_smem_per_sm_bytes": _PG + ", 7.5: the unified data cache (L1 + shared memory) is 96 KB per SM",
        "smem_alloc_unit_bytes": _HDR + ", cudaOccSMemAllocationGranularity: 256 B on compute capability 7.x",
        "smem_reserved_per_block_bytes": _HDR + ", cudaOccSMemPerBlock adds the driver's reservation only from "
        "compute capability 8.0 (Ampere); Turing reserves none",
    }),
    "sm_80": _arch("sm_80", (8, 0), "Ampere (GA100)", warps=64, blocks=32, smem_kib=164, optin_kib=163,
                   carveouts=_CARVEOUTS_GA100, l1_kib=192, sources={
        "l1_smem_per_sm_bytes": _PG + ", 8.0: the unified data cache (L1 + shared memory) is 192 KB per SM",
        "max_warps_per_sm": _PG + ", 8.0 (A100): 2048 threads = 64 warps per SM",
        "smem_per_sm_bytes": _PG + ", 8.0: 164 KB shared memory per SM, 163 KB per block (opt-in)",
    }),
    "sm_86": _arch("sm_86", (8, 6), "Ampere (GA10x)", warps=48, blocks=16, smem_kib=100, optin_kib=99,
                   carveouts=_CARVEOUTS_GA10X, l1_kib=128, sources={
        "l1_smem_per_sm_bytes": _PG + ", 8.6: the unified data cache (L1 + shared memory) is 128 KB per SM",
        "max_warps_per_sm": _PG + ", 8.6: 1536 threads = 48 warps per SM",
        "smem_per_sm_bytes": _PG + ", 8.6: 100 KB shared memory per SM, 99 KB per block (opt-in)",
    }),
    "sm_89": _arch("sm_89", (8, 9), "Ada", warps=48, blocks=24, smem_kib=100, optin_kib=99,
                   carveouts=_CARVEOUTS_GA10X, l1_kib=128, sources={
        "l1_smem_per_sm_bytes": _PG + ", 8.9: the unified data cache (L1 + shared memory) is 128 KB per SM",
        "max_warps_per_sm": _PG + ", 8.9: 1536 threads = 48 warps per SM",
        "smem_per_sm_bytes": _PG + ", 8.9: 100 KB shared memory per SM, 99 KB per block (opt-in)",
    }),
    "sm_90": _arch("sm_90", (9, 0), "Hopper", warps=64, blocks=32, smem_kib=228, optin_kib=227,
                   carveouts=_CARVEOUTS_GH100, l1_kib=256, sources={
        "l1_smem_per_sm_bytes": _PG + ", 9.0: the unified data cache (L1 + shared memory) is 256 KB per SM",
        "max_warps_per_sm": _PG + ", 9.0 (H100/H200): 2048 threads = 64 warps per SM",
        "smem_per_sm_bytes": _PG + ", 9.0: 228 KB shared memory per SM, 227 KB per block (opt-in)",
    }),
    "sm_100": _arch("sm_100", (10, 0), "Blackwell (data center)", warps=64, blocks=32, smem_kib=228, optin_kib=227,
                    carveouts=_CARVEOUTS_GH100, l1_kib=256, sources={
        "l1_smem_per_sm_bytes": _PG + ", 10.0: the unified data cache (L1 + shared memory) is 256 KB per SM",
        "max_warps_per_sm": _PG + ", 10.0 (B200): 2048 threads = 64 warps per SM",
        "max_blocks_per_sm": _HDR + ", cudaOccMaxBlocksPerMultiprocessor: 32 for 10.0 (24 for 10.1)",
        "smem_per_sm_bytes": _PG + ", 10.0: 228 KB shared memory per SM, 227 KB per block (opt-in); "
        + _HDR + " configures 10.0 up to 228 KB",
    }),
    "sm_120": _arch("sm_120", (12, 0), "Blackwell (GeForce/workstation)", warps=48, blocks=24, smem_kib=100, optin_kib=99,
                    carveouts=_CARVEOUTS_GA10X, l1_kib=128, sources={
        "l1_smem_per_sm_bytes": _PG + ", 12.0: the unified data cache (L1 + shared memory) is 128 KB per SM",
        "max_warps_per_sm": _PG + ", 12.0: 1536 threads = 48 warps per SM",
        "max_blocks_per_sm": _HDR + ", cudaOccMaxBlocksPerMultiprocessor: 24 for every 12.x",
        "smem_per_sm_bytes": _PG + ", 12.0: 100 KB shared memory per SM, 99 KB per block (opt-in); "
        + _HDR + ", cudaOccAlignUpShmemSizeVoltaPlus: 12.0 configures at most 100 KB",
    }),
})


def arch_names() -> list[str]:
    """The compute capabilities the catalog describes, oldest first.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Returns
    -------
    list of str
        Names such as ``"sm_75"`` ... ``"sm_120"``.

    Examples
    --------
    >>> arch_names()[0]
    'sm_75'
    """
    return list(ARCHS)


def get_arch(arch: str, *, param: str = "arch") -> Arch:
    """The per-SM limits of one compute capability.

    Explained in :ref:`simt` > Occupancy: how many warps fit.

    Parameters
    ----------
    arch : str
        A compute capability of the catalog (``"sm_75"`` ... ``"sm_120"``).
    param : str, optional
        The caller's name for ``arch`` in the error message.

    Returns
    -------
    Arch
        Warp, block, register and shared-memory limits of one SM, each with its source.

    Raises
    ------
    ValueError
        If ``arch`` is not in the catalog (the message names ``param``).

    Examples
    --------
    >>> get_arch("sm_75").max_warps_per_sm, get_arch("sm_120").max_blocks_per_sm
    (32, 24)
    """
    if not isinstance(param, str) or not param:
        raise ValueError(f"param must be a parameter name (a string), got {param!r}")
    return ARCHS[_check.choice(param, arch, ARCHS)]


# --------------------------------------------------------------------------------------------
# Network cards: what one GPU of a node reaches other nodes through
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NetworkLink:
    """One network port per GPU (as in DGX/HGX nodes), PER DIRECTION [B/s]."""

    name: str
    bytes_per_s: float
    source: str

    def __post_init__(self):
        _check.text("name", self.name)
        _check.positive("bytes_per_s", self.bytes_per_s)
        _check.text("source", self.source)


NICS: Mapping[str, NetworkLink] = MappingProxyType({
    link.name: link
    for link in (
        NetworkLink("InfiniBand NDR / 400 GbE RoCE", 400e9 / 8,
                    "400 Gb/s per port (IBTA NDR 4x; IEEE 802.3 400GbE), / 8 bits: 50 GB/s per direction; "
                    "NVIDIA DGX H200 datasheet: 8 x ConnectX-7 400 Gb/s, one per GPU"),
        NetworkLink("InfiniBand HDR / 200 GbE RoCE", 200e9 / 8,
                    "200 Gb/s per port (IBTA HDR 4x; IEEE 802.3 200GbE), / 8 bits: 25 GB/s per direction; "
                    "NVIDIA DGX A100 datasheet: 8 x ConnectX-6 200 Gb/s"),
    )
})

# PCIe per direction for an x16 link [B/s], as the catalog has always rounded it: Gen3 8 GT/s,
# Gen4 16 GT/s, Gen5 32 GT/s per lane (PCI-SIG base specifications), 128b/130b coding ignored. The
# exact rates are 15.75 / 31.5 / 63.0 GB/s (x 128/130), so every stored host rate is ~1.6% high.
PCIE_X16_BYTES_PER_S = MappingProxyType({3: 16e9, 4: 32e9, 5: 64e9})


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
    # Dense FLOP one SM completes per clock, per dtype (an FMA counts 2), where the vendor's
    # architecture documents give it; {} where they do not (the per-SM model then says so).
    flop_per_clock_per_sm: Mapping[str, float] = field(default_factory=dict)
    # The clock a datasheet peak assumes [Hz] where it is below the boost clock (H100: the tensor-core
    # peaks imply 1830 MHz SXM5, 1620 MHz PCIe = peak / (SMs x FLOP/clk/SM); the datasheet prints no
    # clock); other peaks assume boost_clock_hz.
    datasheet_clock_hz: Mapping[str, float] = field(default_factory=dict)
    interconnect_links: Optional[int] = None  # NVLink (or Infinity Fabric) links per GPU
    pcie_gen: Optional[int] = None
    pcie_lanes: Optional[int] = None

    def __post_init__(self):
        _validate_gpu(self)
        for k in ("peak_flop_per_s", "sources", "flop_per_clock_per_sm", "datasheet_clock_hz"):
            object.__setattr__(self, k, MappingProxyType(dict(getattr(self, k))))

    @property
    def arch_limits(self) -> Optional[Arch]:
        """The per-SM limits of this GPU's compute capability (:data:`ARCHS`); None for a GPU
        that is not CUDA (MI300X, ``gfx942``) or an arch the catalog does not describe."""
        return ARCHS.get(self.arch)

    def clock_for(self, dtype: str) -> float:
        """The clock [Hz] the datasheet's ``dtype`` peak assumes: ``datasheet_clock_hz`` where the
        catalog has one (published, or derived from the peak and the per-SM rate), else ``boost_clock_hz``."""
        return self.datasheet_clock_hz.get(dtype, self.boost_clock_hz)

    @property
    def memory_bytes(self) -> int:
        """Device memory a program can plan in [B].

        ``usable_memory_bytes`` as the device reports it where known, else the datasheet
        capacity ``hbm_bytes``.
        """
        return self.usable_memory_bytes if self.usable_memory_bytes else self.hbm_bytes

    def peak(self, dtype: str, *, param: str = "dtype") -> float:
        """Dense peak FLOP/s for ``dtype``; ``ValueError`` if this GPU has no such rate.

        ``param`` is the caller's name for ``dtype`` in that message (e.g. ``"compute_dtype"``).
        """
        key = dtype.lower() if isinstance(dtype, str) else None
        if key not in self.peak_flop_per_s:
            why = f" ({self.why_no_peak(key)})" if key in DTYPES else ""
            raise ValueError(
                f"{param} must be one of {', '.join(map(repr, self.peak_flop_per_s))} for {self.name}; "
                f"got {dtype!r}{why}"
            )
        return self.peak_flop_per_s[key]

    def why_no_peak(self, dtype: str) -> Optional[str]:
        """None when the catalog has a dense ``dtype`` peak for this GPU, else the reason, as a
        calculator shows it (e.g. ``"T4 (sm_75) has no bf16 tensor cores: bf16 needs sm_80 or newer"``)."""
        if dtype in self.peak_flop_per_s:
            return None
        need = TENSOR_CORE_MIN_CC.get(dtype)
        lim = self.arch_limits
        if need and lim and lim.compute_capability < need:
            return (f"{self.name} ({self.arch}) has no {dtype} tensor cores: {dtype} needs "
                    f"sm_{need[0]}{need[1]} or newer")
        if not self.peak_flop_per_s:  # a GPU described from the CUDA runtime (describe_local_gpu)
            return f"{self.name} is not in the catalog: its peaks are not known here (measure them)"
        return f"{self.name}: the vendor publishes no dense {dtype} figure"

    def why_no_rate(self, dtype: str) -> Optional[str]:
        """None when the catalog has a per-SM ``dtype`` rate (``flop_per_clock_per_sm``) for this
        GPU, else the reason (no such tensor cores, or no per-SM figure published)."""
        if dtype in self.flop_per_clock_per_sm:
            return None
        no_peak = self.why_no_peak(dtype)
        if no_peak:
            return no_peak
        if not self.flop_per_clock_per_sm:
            why = self.sources.get("flop_per_clock_per_sm")
            return f"{self.name}: no per-SM rates in the catalog" + (f" ({why})" if why else "")
        return f"{self.name}: no per-SM {dtype} rate in the catalog"


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
    for k, check in (("peak_flop_per_s", _check.positive), ("sources", _check.text),
                     ("flop_per_clock_per_sm", _check.positive), ("datasheet_clock_hz", _check.positive)):
        table = getattr(g, k)
        if not isinstance(table, Mapping):
            raise ValueError(f"{k} must be a mapping from names to values, got {table!r}"[:200])
        for key, value in table.items():
            _check.text(f"{k} key", key)
            check(f"{k}[{key!r}]", value)
    put("interconnect_links", _check.optional(_check.integer, "interconnect_links", g.interconnect_links, minimum=1, maximum=64))
    put("pcie_gen", _check.optional(_check.integer, "pcie_gen", g.pcie_gen, minimum=1, maximum=7))
    lanes = _check.optional(_check.integer, "pcie_lanes", g.pcie_lanes, minimum=1, maximum=16)
    if lanes is not None and lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"pcie_lanes must be one of 1, 2, 4, 8, 16 (or None), got {g.pcie_lanes!r}")
    put("pcie_lanes", lanes)


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
            usable_memory_bytes=81050 * MiB,
            flop_per_clock_per_sm={"fp32": 128, "tf32": 1024, "bf16": 2048, "fp16": 2048},
            interconnect_links=12,
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), tensor-core section and Table 1: "
                "1024 dense FP16/BF16 FMA per clock per SM (2048 FLOP), TF32 half of that, 64 FP32 lanes (128 FLOP)",
                "interconnect_links": "NVIDIA A100 whitepaper: 12 third-generation NVLink links, 25 GB/s per direction each",
                "pcie_gen": "NVIDIA A100 datasheet: PCIe Gen4",
                "peak_flop_per_s": "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS dense",
                "hbm_bytes": "NVIDIA A100 datasheet: 80 GB HBM2e, the label stored as 80 GiB (nvidia-smi shows 81920 MiB with "
                "recent drivers, 81252 MiB with driver 450: github.com/keyu-tian/SparK/issues/8)",
                "usable_memory_bytes": "torch GPUMemoryStats on 'NVIDIA PG509-210' boards (the A100 SXM4 80GB board; "
                "nvidia-smi 81920 MiB) in github.com/meta-pytorch/torchrec/pull/3580: total=81050 MiB (79.15 GiB); an "
                "A100 80GB PCIe reports 81049 MiB (mixbench, github.com/ekondis/mixbench/issues/47)",
                "hbm_bytes_per_s": "NVIDIA A100 datasheet: 2,039 GB/s (80GB SXM)",
                "sms": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs, 1410 MHz boost",
                "boost_clock_hz": "NVIDIA A100 whitepaper, Table 1",
                "l2_bytes": "NVIDIA A100 whitepaper: 40 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.0: up to 164 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide, compute capabilities table: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA A100 datasheet: NVLink 600 GB/s bidirectional -> 300 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction (31.5 after 128b/130b coding, rounded as every PCIe generation here)",
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
            usable_memory_bytes=81082 * MiB,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192},
            datasheet_clock_hz={"tf32": 1.830e9, "bf16": 1.830e9, "fp16": 1.830e9, "fp8": 1.830e9},
            interconnect_links=18,
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": _NV_HOPPER_WP + ": 4096 dense FP16/BF16 FLOP per clock per SM (twice A100), FP8 twice "
                "that, TF32 half; 128 FP32 lanes (256 FLOP)",
                "datasheet_clock_hz": "derived, not printed: the H100 datasheet gives peaks but no clocks, so the clock its "
                "tensor-core peaks assume is peak / (SMs x FLOP/clk/SM) = 989.4 TFLOPS / (132 x 4096) = 1830 MHz (exact); "
                "glennklockwood.com/garden/processors/h100 repeats 1.83 GHz (low precision), 1.98 GHz (high precision)",
                "derived_from_peaks": "tf32, bf16, fp16, fp8: the tensor-core clock (datasheet_clock_hz, 1830 MHz) was "
                "derived from these peaks, so SMs x clock x FLOP/clk/SM gives them back by construction",
                "interconnect_links": _NV_HOPPER_WP + ": 18 fourth-generation NVLink links, 25 GB/s per direction each",
                "pcie_gen": "NVIDIA H100 datasheet: PCIe Gen5 x16",
                "peak_flop_per_s": _NV_H100_SRC + ": FP32 67, TF32 989/2, BF16 1979/2, FP16 1979/2, FP8 3958/2 TFLOPS",
                "hbm_bytes": "NVIDIA H100 datasheet (SXM): 80 GB HBM3, the label stored as 80 GiB (nvidia-smi shows "
                "81559 MiB = 79.65 GiB: github.com/modal-labs/modal-client/pull/2797)",
                "usable_memory_bytes": "torch.cuda.get_device_properties on 'NVIDIA H100 80GB HBM3' (the SXM5 part): "
                "total_memory=81082MB (torch 2.0.1), 81089MB (torch 2.7) and 81090MB (8 GPUs, Stanford CS336 spring 2025 "
                "lecture notes) in public logs (torch prints MiB; it varies with the driver); the smallest, 81082 MiB, is stored",
                "hbm_bytes_per_s": "NVIDIA H100 datasheet: 3.35 TB/s (SXM)",
                "sms": _NV_HOPPER_WP + ": H100 SXM5 has 132 SMs",
                "boost_clock_hz": "1980 MHz maximum boost (SXM5), the commonly reported figure (glennklockwood.com/garden/processors/h100: "
                "1.98 GHz); the datasheet prints no clock, but its FP32 67 TFLOPS is 132 SMs x 256 FLOP/clk x 1980 MHz = 66.9",
                "l2_bytes": _NV_HOPPER_WP + ": 50 MB L2 (H100 SXM5)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA H100 datasheet: NVLink 900 GB/s bidirectional -> 450 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction (63.0 after 128b/130b coding, rounded as every PCIe generation here)",
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
            flop_per_clock_per_sm={"fp32": 256, "tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192},
            datasheet_clock_hz={"tf32": 1.830e9, "bf16": 1.830e9, "fp16": 1.830e9, "fp8": 1.830e9},
            interconnect_links=18,
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "the GH100 SM of the H100 (" + _NV_HOPPER_WP + "): 4096 dense FP16/BF16 FLOP per "
                "clock per SM, FP8 twice that, TF32 half; 128 FP32 lanes (256 FLOP)",
                "datasheet_clock_hz": "same peaks as the H100 SXM at the same SM count, so the same derived clock: "
                "989.4 TFLOPS / (132 x 4096 FLOP/clk) = 1830 MHz (the datasheet prints no clock)",
                "derived_from_peaks": "tf32, bf16, fp16, fp8: the tensor-core clock (datasheet_clock_hz, 1830 MHz) was "
                "derived from these peaks, so SMs x clock x FLOP/clk/SM gives them back by construction",
                "interconnect_links": "NVIDIA H200 datasheet: NVLink 900 GB/s, the H100 SXM5's 18 fourth-generation links",
                "pcie_gen": "NVIDIA H200 datasheet: PCIe Gen5 128 GB/s (bidirectional, x16)",
                "peak_flop_per_s": _NV_H200_SRC + ": FP32 67, TF32 989/2, BF16 1979/2, FP16 1979/2, FP8 3958/2 TFLOPS",
                "hbm_bytes": "NVIDIA H200 datasheet: 141 GB HBM3e; the LABEL stored as 141 GiB (the catalog's convention). "
                "It is neither the physical memory (6 x 24 GiB HBM3e stacks = 144 GiB) nor what the device exposes "
                "(nvidia-smi 143771 MiB = 140.4 GiB; torch total_memory 139.8 GiB, usable_memory_bytes)",
                "usable_memory_bytes": "torch.cuda.get_device_properties(0).total_memory on an H200 SXM: 150,109,880,320 B "
                "(139.8 GiB), recorded as provenance gpu_memory_bytes in widgets/data/h200/serving.json",
                "hbm_bytes_per_s": "NVIDIA H200 datasheet: 4.8 TB/s",
                "sms": "torch.cuda.get_device_properties on an H200 SXM: 132 multiprocessors (recorded in widgets/data/h200)",
                "boost_clock_hz": "same GH100 die, SM count and FP32 peak (67 TFLOPS) as the H100 SXM5, so its 1980 MHz: "
                "132 x 256 FLOP/clk x 1980 MHz = 66.9 TFLOPS",
                "l2_bytes": "torch.cuda.get_device_properties on an H200 SXM: L2 of 62914560 bytes (60 MiB)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA H200 datasheet: NVLink 900 GB/s bidirectional -> 450 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction (63.0 after 128b/130b coding, rounded as every PCIe generation here)",
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
            l2_bytes=126 * MiB + 512 * KiB,
            smem_per_sm_bytes=228 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 75e12, "tf32": 1.125e15, "bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15},
            interconnect_bytes_per_s=900e9,
            host_bytes_per_s=64e9,
            tdp_w=1000,
            memory_type="HBM3e",
            usable_memory_bytes=round(178.35 * GiB),
            interconnect_links=18,
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "not published: NVIDIA's B200 datasheets give no SM count or clock",
                "interconnect_links": "NVIDIA NVLink 5 (Blackwell): 18 links per GPU, 100 GB/s bidirectional each = 1.8 TB/s",
                "pcie_gen": "NVIDIA HGX B200: PCIe Gen5 x16 to the host",
                "peak_flop_per_s": "NVIDIA HGX B200 datasheet (8 GPUs; tensor figures sparse) divided by 8, and by 2 for dense: "
                "FP32 600/8 = 75 TFLOPS, TF32 18/16 = 1.125, BF16/FP16 36/16 = 2.25, FP8 72/16 = 4.5 PFLOPS",
                "hbm_bytes": "NVIDIA DGX B200 datasheet: 1,440 GB for 8 GPUs = a 180 GB label per GPU, stored as 180 GiB "
                "(the catalog's convention). The device exposes less: nvidia-smi shows 183359 MiB = 179.06 GiB "
                "(driver 580.95.05, github.com/NVIDIA/TensorRT-LLM/issues/10278); see usable_memory_bytes",
                "usable_memory_bytes": "CUDA device query on a B200 in github.com/pytorch/ao/pull/4002: 'Total Global "
                "Memory: 178.35 GB' (totalGlobalMem in GiB: the same query prints shared memory per SM as 228.00 KB = "
                "228 KiB), stored as 178.35 GiB, +-0.005 GiB as printed",
                "hbm_bytes_per_s": "NVIDIA DGX B200 datasheet: 64 TB/s for 8 GPUs = 8 TB/s per GPU (the datasheet figure, "
                "kept by the book's rule). Since early 2026 the driver reports a 7680-bit bus (not 8192): 7680/8 B x "
                "3996 MHz x 2 = 7.67 TB/s (github.com/pytorch/ao/pull/4002), so a fraction of 8 TB/s reads ~4% low",
                "sms": "CUDA device query of a B200: 148 SMs (github.com/pytorch/ao/pull/4002); not in the datasheet",
                "boost_clock_hz": "not in the datasheet; an approximate reported boost clock. The datasheet peaks assume "
                "a LOWER clock: 2.25 PFLOPS / (148 x 1965 MHz) = 7737 FLOP/clk/SM is no power of two (8192 would need "
                "1855 MHz), so per-SM rates added later need datasheet_clock_hz too",
                "l2_bytes": "CUDA device query of a B200: 'L2 Cache Size: 126.50 MB' = 126.5 MiB = 132,644,864 B "
                "(github.com/pytorch/ao/pull/4002); not in the datasheet",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 10.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVLink 5: 1.8 TB/s bidirectional per GPU -> 900 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction (63.0 after 128b/130b coding, rounded as every PCIe generation here)",
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
            flop_per_clock_per_sm={"fp32": 256, "tf32": 1024, "bf16": 2048, "fp16": 2048, "fp8": 4096},
            interconnect_links=7,
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "AMD CDNA 3 architecture white paper, peak FLOP per clock per CU: FP32 vector 256 "
                "(the plain FP32 rate, as \"fp32\" is for every GPU here: 304 x 2100 MHz x 256 = 163.4 TFLOPS), dense "
                "matrix TF32 1024, FP16/BF16 2048, FP8 4096",
                "usable_memory_bytes": "not set: no public report of what an MI300X exposes to a program "
                "(torch total_memory) was found; memory_bytes falls back to the 192 GB label stored as 192 GiB, "
                "which overstates what can be allocated by the driver's reserve",
                "interconnect_links": "AMD Instinct MI300X data sheet: 7 Infinity Fabric links (896 GB/s peak in all)",
                "pcie_gen": "AMD Instinct MI300X data sheet: PCIe Gen5 x16",
                "peak_flop_per_s": "AMD Instinct MI300X data sheet: FP32 vector 163.4 (FP64 vector is 81.7), TF32 653.7, BF16/FP16 1307.4, FP8 2614.9 TFLOPS (dense)",
                "hbm_bytes": "AMD Instinct MI300X data sheet: 192 GB HBM3, the label stored as 192 GiB (8 x 24 GiB stacks)",
                "hbm_bytes_per_s": "AMD Instinct MI300X data sheet: 5.3 TB/s",
                "sms": "AMD Instinct MI300X data sheet: 304 compute units (an 'SM' here is a CU)",
                "boost_clock_hz": "AMD Instinct MI300X data sheet: 2100 MHz peak engine clock",
                "l2_bytes": "AMD CDNA 3 white paper: 4 MB L2 per XCD x 8 XCDs (plus 256 MB Infinity Cache, not counted)",
                "smem_per_sm_bytes": "AMD CDNA 3 ISA / white paper: 64 KB LDS per CU",
                "registers_per_sm_bytes": "AMD CDNA 3 white paper: 512 KB vector register file per CU",
                "interconnect_bytes_per_s": "AMD MI300X data sheet: 896 GB/s peak Infinity Fabric (7 links) -> 448 GB/s per direction",
                "host_bytes_per_s": "PCIe Gen5 x16: 64 GB/s per direction (63.0 after 128b/130b coding, rounded as every PCIe generation here)",
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
            usable_memory_bytes=round(22.03 * GiB),
            flop_per_clock_per_sm={"fp32": 256, "tf32": 512, "bf16": 1024, "fp16": 1024, "fp8": 2048},
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "NVIDIA Ada GPU Architecture whitepaper (Ada SM: 4 tensor cores, 128 FP32 lanes) and the L4 "
                "datasheet's peaks at 58 SMs x 2040 MHz: full-rate FP32 accumulation, 1024 dense FP16/BF16 FLOP per clock per SM",
                "pcie_gen": "NVIDIA L4 datasheet: PCIe Gen4 x16",
                "peak_flop_per_s": "NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120/2, BF16/FP16 242/2, FP8 485/2 TFLOPS",
                "hbm_bytes": "NVIDIA L4 datasheet: 24 GB GDDR6 (not HBM; the field holds device memory), the label stored as "
                "24 GiB. ECC is on by default and reserves part of it: nvidia-smi shows 23034 MiB = 22.49 GiB "
                "(github.com/modal-labs/modal-client/pull/2797)",
                "usable_memory_bytes": "torch on an L4 (github.com/ArcInstitute/evo2/issues/190): 'GPU 0 has a total "
                "capacity of 22.03 GiB' (the CUDA total torch reports), stored as 22.03 GiB, +-0.005 GiB as printed",
                "hbm_bytes_per_s": "NVIDIA L4 datasheet: 300 GB/s",
                "sms": "58 SMs, derived: the L4 datasheet's FP32 30.3 TFLOPS / (128 lanes x 2 FLOP x 2040 MHz) = 58.0 (7424 "
                "CUDA cores); torch reports multi_processor_count=58 (no L4 SM count was found in the datasheet or the Ada whitepaper)",
                "boost_clock_hz": "2040 MHz maximum boost, the commonly reported figure (the L4 datasheet prints no clock); "
                "consistent with its FP32 30.3 TFLOPS: 58 SMs x 256 FLOP/clk x 2040 MHz = 30.29 TFLOPS",
                "l2_bytes": "NVIDIA Ada whitepaper: 48 MB L2 (AD104)",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.9: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on L4",
                "host_bytes_per_s": "NVIDIA L4 datasheet: PCIe Gen4 x16, 32 GB/s per direction (31.5 after 128b/130b coding, rounded)",
                "tdp_w": "NVIDIA L4 datasheet: 72 W",
                "derived_from_peaks": "fp32, tf32, bf16, fp16, fp8: the SM count was derived from the FP32 peak and the "
                "per-SM tensor rates from the tensor peaks at 58 SMs x 2040 MHz, so SMs x clock x FLOP/clk/SM gives them "
                "back by construction (to the rounding of the printed figures)",
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
            usable_memory_bytes=25_757_220_864,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 256, "bf16": 512, "fp16": 512, "fp8": 1024},
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "flop_per_clock_per_sm": "NVIDIA Ada GPU Architecture whitepaper, Appendix A (RTX 4090): 512 dense FP16 FLOP per "
                "clock per SM with FP32 accumulation (the GeForce half rate), FP8 twice that, TF32 half",
                "pcie_gen": "NVIDIA RTX 4090 specifications: PCIe Gen4",
                "peak_flop_per_s": "NVIDIA Ada GPU Architecture whitepaper, Appendix A (RTX 4090), dense, FP32 accumulate: FP32 82.6, TF32 82.6, BF16/FP16 165.2, FP8 330.3 TFLOPS",
                "hbm_bytes": "NVIDIA RTX 4090 specifications: 24 GB GDDR6X (device memory, not HBM), the label stored as 24 GiB",
                "usable_memory_bytes": "25,757,220,864 B = 24564 MiB = 23.988 GiB: CUDA.jl's total on an RTX 4090 "
                "(github.com/pc2/GPUInspector.jl/issues/11: '22.434 GiB / 23.988 GiB available'), the same as "
                "nvidia-smi's 24564MiB total on RTX 4090s (github.com/vllm-project/vllm/issues/7553)",
                "hbm_bytes_per_s": "NVIDIA Ada whitepaper, Appendix A: 1008 GB/s",
                "sms": "NVIDIA Ada whitepaper, Appendix A: 128 SMs",
                "boost_clock_hz": "NVIDIA Ada whitepaper, Appendix A: 2520 MHz boost",
                "l2_bytes": "NVIDIA Ada whitepaper, Appendix A: 72 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.9: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on RTX 4090",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction (31.5 after 128b/130b coding, rounded as every PCIe generation here)",
                "tdp_w": "NVIDIA RTX 4090 specifications: 450 W total graphics power",
            },
        ),
        GPU(
            name="T4",
            vendor="NVIDIA",
            arch="sm_75",
            sms=40,
            boost_clock_hz=1.590e9,
            hbm_bytes=16 * GiB,
            hbm_bytes_per_s=320e9,
            l2_bytes=4 * MiB,
            smem_per_sm_bytes=64 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 8.1e12, "fp16": 65e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=16e9,
            tdp_w=70,
            memory_type="GDDR6",
            usable_memory_bytes=15079 * MiB,
            flop_per_clock_per_sm={"fp32": 128, "fp16": 1024},
            pcie_gen=3,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA T4 Tensor Core GPU datasheet: FP32 8.1, mixed precision (FP16/FP32) 65 TFLOPS "
                "(Turing has no 2:4 sparsity: dense); no TF32, BF16 or FP8 tensor cores on sm_75",
                "hbm_bytes": "NVIDIA T4 datasheet: 16 GB GDDR6 (device memory, not HBM), stored as 16 GiB",
                "usable_memory_bytes": "torch.cuda.get_device_properties on Colab T4s: total_memory=15079MB to 15109MB in public "
                "logs (torch prints MiB; it varies with the driver); the smallest, 15079 MiB, is stored",
                "hbm_bytes_per_s": "NVIDIA T4 datasheet: 320+ GB/s",
                "sms": "NVIDIA Turing GPU Architecture whitepaper (2018), Tesla T4: 40 SMs (2560 CUDA cores); torch reports "
                "multi_processor_count=40",
                "boost_clock_hz": "NVIDIA Turing whitepaper, Tesla T4: 1590 MHz boost",
                "l2_bytes": "NVIDIA Turing whitepaper: TU104 has a 4 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 7.5: up to 64 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on T4",
                "host_bytes_per_s": "NVIDIA T4 datasheet: PCIe Gen3 x16, 16 GB/s per direction (15.75, rounded as every PCIe "
                "generation here)",
                "tdp_w": "NVIDIA T4 datasheet: 70 W",
                "flop_per_clock_per_sm": "NVIDIA Turing whitepaper: 8 tensor cores per SM x 64 FP16 FMA per clock = 1024 FLOP "
                "(full-rate FP32 accumulation on the Tesla part: 40 x 1024 x 1590 MHz = 65 TFLOPS); 64 FP32 lanes = 128 FLOP",
                "pcie_gen": "NVIDIA T4 datasheet: PCIe Gen3 x16",
            },
            notes="Colab's free GPU. Turing: fp16 tensor cores only (bf16 and tf32 need sm_80, fp8 sm_89).",
        ),
        GPU(
            name="A10G",
            vendor="NVIDIA",
            arch="sm_86",
            sms=80,
            boost_clock_hz=1.710e9,
            hbm_bytes=24 * GiB,
            hbm_bytes_per_s=600e9,
            l2_bytes=6 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 35e12, "tf32": 35e12, "bf16": 70e12, "fp16": 70e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=32e9,
            tdp_w=300,
            memory_type="GDDR6",
            usable_memory_bytes=22587 * MiB,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 256, "bf16": 512, "fp16": 512},
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA publishes no A10G datasheet (an AWS EC2 G5 part); NVIDIA's A10G figures as tabulated in "
                "baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference: FP32 35, TF32 35, BF16/FP16 70 TFLOPS dense "
                "(80 SMs x 1710 MHz x 512 FLOP: the GeForce-like half FP32-accumulate rate, unlike the A10's 125)",
                "hbm_bytes": "AWS EC2 G5: 24 GB GDDR6 per A10G, stored as 24 GiB",
                "usable_memory_bytes": "torch.cuda.get_device_properties on an A10G (a public CI log, CUDA 13.0): total_memory=22587MB (MiB)",
                "hbm_bytes_per_s": "A10G as tabulated by Baseten (same memory as the A10): 600 GB/s",
                "sms": "torch.cuda.get_device_properties on an A10G: multi_processor_count=80 (public CI log)",
                "boost_clock_hz": "A10G maximum clock 1710 MHz (nvidia-smi; Baseten's table); implied by 35 TFLOPS / (80 x 256)",
                "l2_bytes": "NVIDIA Ampere GA102 GPU Architecture whitepaper: GA102 has a 6 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.6: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on A10G (AWS G5 instances link GPUs through PCIe)",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction (31.5 after 128b/130b coding, rounded as every PCIe generation here)",
                "tdp_w": "A10G: 300 W (Baseten's table)",
                "flop_per_clock_per_sm": "GA10x SM (GA102 whitepaper): 4 tensor cores; at the A10G's published peaks, 512 dense "
                "FP16/BF16 FLOP per clock per SM with FP32 accumulation, TF32 half; 128 FP32 lanes = 256 FLOP",
                "pcie_gen": "AWS EC2 G5: PCIe Gen4",
                "derived_from_peaks": "tf32, bf16, fp16: the per-SM tensor rates were inferred from these peaks at 80 SMs x "
                "1710 MHz (no NVIDIA document gives an A10G per-SM rate), so SMs x clock x FLOP/clk/SM gives them back by "
                "construction",
            },
            notes="AWS-only variant of the A10 (GA102); NVIDIA publishes no datasheet for it, so its figures are "
            "third-party tabulations checked against SMs x clock x per-SM rate.",
        ),
        GPU(
            name="L40S",
            vendor="NVIDIA",
            arch="sm_89",
            sms=142,
            boost_clock_hz=2.520e9,
            hbm_bytes=48 * GiB,
            hbm_bytes_per_s=864e9,
            l2_bytes=96 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 91.6e12, "tf32": 183e12, "bf16": 362.05e12, "fp16": 362.05e12, "fp8": 733e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=32e9,
            tdp_w=350,
            memory_type="GDDR6",
            usable_memory_bytes=45589 * MiB,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 512, "bf16": 1024, "fp16": 1024, "fp8": 2048},
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA L40S datasheet, the dense figures as printed (it prints dense | sparse pairs, "
                "'* with sparsity'): FP32 91.6, TF32 183 | 366*, BF16 and FP16 362.05 | 733*, FP8 733 | 1,466* TFLOPS. The "
                "BF16/FP16 dense figure is not half the sparse one (366.5) and is 1.2% below 142 SMs x 2520 MHz x 1024 "
                "FLOP/clk = 366.4 TFLOPS; stored as printed (the L40/L40S table as reproduced at "
                "mullet.se/product.html?product_id=355414)",
                "hbm_bytes": "NVIDIA L40S datasheet: 48 GB GDDR6 with ECC (device memory, not HBM), stored as 48 GiB",
                "usable_memory_bytes": "torch.cuda.get_device_properties on an L40S (public blog log): total_memory=45589MB (MiB)",
                "hbm_bytes_per_s": "NVIDIA L40S datasheet: 864 GB/s",
                "sms": "NVIDIA L40S datasheet: 18,176 CUDA cores = 142 Ada SMs of 128; torch reports multi_processor_count=142",
                "boost_clock_hz": "2520 MHz boost: the datasheet's FP32 91.6 TFLOPS / (18,176 cores x 2 FLOP)",
                "l2_bytes": "NVIDIA Ada GPU Architecture whitepaper: AD102 has a 96 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.9: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA L40S datasheet: no NVLink",
                "host_bytes_per_s": "NVIDIA L40S datasheet: PCIe Gen4 x16, 64 GB/s bidirectional -> 32 GB/s per direction (31.5 after "
                "128b/130b coding, rounded)",
                "tdp_w": "NVIDIA L40S datasheet: 350 W maximum power",
                "flop_per_clock_per_sm": "Ada SM (NVIDIA Ada whitepaper: 4 fourth-generation tensor cores, 128 FP32 lanes) at "
                "full-rate FP32 accumulation, inferred from the datasheet's dense TF32 and FP8 peaks at 142 SMs x 2520 MHz: "
                "TF32 512, FP8 2048 FLOP per clock per SM (142 x 2048 x 2520 MHz = 733.0 TFLOPS); FP16/BF16 half the FP8 "
                "rate, 1024, as on every Ada SM (142 x 1024 x 2520 MHz = 366.4 TFLOPS, 1.2% above the printed 362.05)",
                "derived_from_peaks": "fp32, tf32, fp8: the boost clock was derived from the FP32 peak and the TF32 and FP8 "
                "per-SM rates from those peaks at 142 SMs x 2520 MHz, so SMs x clock x FLOP/clk/SM gives them back by "
                "construction; the BF16/FP16 rate is not taken from its own peak",
                "pcie_gen": "NVIDIA L40S datasheet: PCIe Gen4 x16",
            },
        ),
        GPU(
            name="H100-PCIe",
            vendor="NVIDIA",
            arch="sm_90",
            sms=114,
            boost_clock_hz=1.755e9,
            hbm_bytes=80 * GiB,
            hbm_bytes_per_s=2.0e12,
            l2_bytes=50 * MiB,
            smem_per_sm_bytes=228 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 51e12, "tf32": 378e12, "bf16": 756.5e12, "fp16": 756.5e12, "fp8": 1513e12},
            interconnect_bytes_per_s=300e9,
            host_bytes_per_s=64e9,
            tdp_w=350,
            memory_type="HBM2e",
            usable_memory_bytes=81008 * MiB,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192},
            datasheet_clock_hz={"tf32": 1.620e9, "bf16": 1.620e9, "fp16": 1.620e9, "fp8": 1.620e9},
            interconnect_links=12,
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA H100 Tensor Core GPU datasheet (PCIe column), dense = sparse/2: FP32 51, TF32 756/2, "
                "BF16/FP16 1513/2, FP8 3026/2 TFLOPS",
                "hbm_bytes": "NVIDIA H100 datasheet (PCIe): 80 GB HBM2e, stored as 80 GiB",
                "usable_memory_bytes": "torch.cuda.get_device_properties on an H100 PCIe (public log): total_memory=81008MB (MiB)",
                "hbm_bytes_per_s": "NVIDIA H100 datasheet (PCIe): 2 TB/s",
                "sms": _NV_HOPPER_WP + ": H100 PCIe has 114 SMs; torch reports multi_processor_count=114",
                "boost_clock_hz": "1755 MHz maximum boost (PCIe), the commonly reported figure; the datasheet prints no clock, "
                "but its FP32 51 TFLOPS is 114 SMs x 256 FLOP/clk x 1755 MHz = 51.2 (rounded)",
                "l2_bytes": _NV_HOPPER_WP + ": 50 MB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA H100 datasheet (PCIe): NVLink bridge 600 GB/s bidirectional -> 300 GB/s per direction",
                "host_bytes_per_s": "NVIDIA H100 datasheet (PCIe): PCIe Gen5 128 GB/s bidirectional -> 64 GB/s per direction (63.0 after "
                "128b/130b coding, rounded)",
                "tdp_w": "NVIDIA H100 datasheet (PCIe): 300-350 W; the upper figure stored",
                "flop_per_clock_per_sm": "the GH100 SM (" + _NV_HOPPER_WP + "): 4096 dense FP16/BF16 FLOP per clock per SM, FP8 "
                "twice that, TF32 half; 128 FP32 lanes = 256 FLOP",
                "datasheet_clock_hz": "derived, not printed (the datasheet gives no clocks): the clock the PCIe board's "
                "tensor-core peaks assume, 756.5 TFLOPS / (114 x 4096 FLOP/clk) = 1620 MHz (exact); the FP32 peak at "
                "the maximum boost",
                "derived_from_peaks": "tf32, bf16, fp16, fp8: the tensor-core clock (datasheet_clock_hz, 1620 MHz) was "
                "derived from these peaks, so SMs x clock x FLOP/clk/SM gives them back by construction",
                "interconnect_links": "NVIDIA H100 datasheet (PCIe): NVLink 600 GB/s over the bridges = 12 fourth-generation "
                "links of 25 GB/s per direction (the SXM entry's arithmetic: 18 links for 900 GB/s)",
                "pcie_gen": "NVIDIA H100 datasheet (PCIe): PCIe Gen5 x16",
            },
        ),
        GPU(
            name="RTX-3090",
            vendor="NVIDIA",
            arch="sm_86",
            sms=82,
            boost_clock_hz=1.695e9,
            hbm_bytes=24 * GiB,
            hbm_bytes_per_s=936e9,
            l2_bytes=6 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 35.6e12, "tf32": 35.6e12, "bf16": 71e12, "fp16": 71e12},
            interconnect_bytes_per_s=56.25e9,
            host_bytes_per_s=32e9,
            tdp_w=350,
            memory_type="GDDR6X",
            usable_memory_bytes=24268 * MiB,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 256, "bf16": 512, "fp16": 512},
            interconnect_links=4,
            pcie_gen=4,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA Ampere GA102 GPU Architecture whitepaper, Appendix A (RTX 3090), dense, FP32 accumulate: "
                "FP32 35.6, TF32 35.6, BF16 71, FP16 71 TFLOPS (142 with FP16 accumulate; sparse figures twice these)",
                "hbm_bytes": "NVIDIA GA102 whitepaper, Appendix A: 24 GB GDDR6X (device memory, not HBM), stored as 24 GiB",
                "usable_memory_bytes": "torch.cuda.get_device_properties on an RTX 3090 (Hugging Face docs): total_memory=24268MB (MiB)",
                "hbm_bytes_per_s": "NVIDIA GA102 whitepaper, Appendix A: 936 GB/s",
                "sms": "NVIDIA GA102 whitepaper, Appendix A: 82 SMs",
                "boost_clock_hz": "NVIDIA GA102 whitepaper, Appendix A: 1695 MHz boost",
                "l2_bytes": "NVIDIA GA102 whitepaper, Appendix A: 6144 KB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 8.6: up to 100 KB shared memory per SM",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "NVIDIA GA102 whitepaper: third-generation NVLink, four x4 links of 14.0625 GB/s per "
                "direction = 56.25 GB/s per direction (112.5 GB/s total) between two RTX 3090s",
                "interconnect_links": "NVIDIA GA102 whitepaper: four x4 NVLink links",
                "host_bytes_per_s": "PCIe Gen4 x16: 32 GB/s per direction (31.5 after 128b/130b coding, rounded as every PCIe generation here)",
                "tdp_w": "NVIDIA GA102 whitepaper, Appendix A: 350 W total graphics power",
                "flop_per_clock_per_sm": "NVIDIA GA102 whitepaper, Appendix A: 512 dense FP16/BF16 FLOP per clock per SM with FP32 "
                "accumulation (the GeForce half rate), TF32 half; 128 FP32 lanes = 256 FLOP",
                "pcie_gen": "NVIDIA GA102 whitepaper: PCIe Gen4",
            },
        ),
        GPU(
            name="RTX-5090",
            vendor="NVIDIA",
            arch="sm_120",
            sms=170,
            boost_clock_hz=2.407e9,
            hbm_bytes=32 * GiB,
            hbm_bytes_per_s=1792e9,
            l2_bytes=96 * MiB,
            smem_per_sm_bytes=100 * KiB,
            registers_per_sm_bytes=256 * KiB,
            peak_flop_per_s={"fp32": 104.8e12, "tf32": 104.8e12, "bf16": 209.5e12, "fp16": 209.5e12, "fp8": 419e12},
            interconnect_bytes_per_s=None,
            host_bytes_per_s=64e9,
            tdp_w=575,
            memory_type="GDDR7",
            usable_memory_bytes=33_677_180_928,
            flop_per_clock_per_sm={"fp32": 256, "tf32": 256, "bf16": 512, "fp16": 512, "fp8": 1024},
            pcie_gen=5,
            pcie_lanes=16,
            sources={
                "peak_flop_per_s": "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix A (RTX 5090), dense, FP32 accumulate: "
                "FP32 104.8, TF32 104.8, BF16/FP16 209.5, FP8 419 TFLOPS (sparse figures twice these)",
                "hbm_bytes": "NVIDIA RTX 5090 specifications: 32 GB GDDR7 (device memory, not HBM), the label stored as 32 GiB",
                "usable_memory_bytes": "CUDA deviceQuery on RTX 5090s: 33,677,180,928 B (driver 570.133.04, "
                "github.com/aikitoria/open-gpu-kernel-modules/issues/1) and 33,680,457,728 B "
                "(github.com/NVIDIA/nccl/issues/1637); the smaller is stored",
                "hbm_bytes_per_s": "NVIDIA RTX Blackwell whitepaper, Appendix A: 1792 GB/s",
                "sms": "NVIDIA RTX Blackwell whitepaper, Appendix A: 170 SMs (21,760 CUDA cores)",
                "boost_clock_hz": "NVIDIA RTX Blackwell whitepaper, Appendix A: 2407 MHz boost",
                "l2_bytes": "NVIDIA RTX Blackwell whitepaper, Appendix A: 98,304 KB L2",
                "smem_per_sm_bytes": "CUDA C++ Programming Guide, compute capability 12.0: up to 100 KB shared memory per SM "
                "(cuda_occupancy.h configures at most 100 KB)",
                "registers_per_sm_bytes": "CUDA C++ Programming Guide: 64K 32-bit registers per SM",
                "interconnect_bytes_per_s": "no NVLink on RTX 5090",
                "host_bytes_per_s": "NVIDIA RTX 5090 specifications: PCIe Gen5 x16, 64 GB/s per direction (63.0 after 128b/130b coding, rounded)",
                "tdp_w": "NVIDIA RTX 5090 specifications: 575 W total graphics power",
                "flop_per_clock_per_sm": "NVIDIA RTX Blackwell whitepaper, Appendix A: 512 dense FP16/BF16 FLOP per clock per SM "
                "with FP32 accumulation (the GeForce half rate; 170 x 512 x 2407 MHz = 209.5 TFLOPS), FP8 twice, TF32 half; "
                "128 FP32 lanes = 256 FLOP",
                "pcie_gen": "NVIDIA RTX 5090 specifications: PCIe Gen5",
            },
        ),
    ]
}


def gpus(where: Optional[Callable[[GPU], bool]] = None) -> list[GPU]:
    """Every GPU record in the catalog, in catalog order; with ``where``, those it accepts.

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    where : callable or None, optional
        A function of a :class:`GPU` record returning True or False; None keeps every GPU.

    Returns
    -------
    list of GPU
        The records.

    Raises
    ------
    ValueError
        If ``where`` is not callable.

    Examples
    --------
    >>> [g.name for g in gpus(lambda g: "fp8" in g.peak_flop_per_s and g.vendor == "NVIDIA")][:3]
    ['H100-SXM', 'H200-SXM', 'B200']
    """
    if where is not None and not callable(where):
        raise ValueError(f"where must be a function of a GPU record returning True or False, got {where!r}")
    return [g for g in _CATALOG.values() if where is None or where(g)]


def gpu_names(where: Optional[Callable[[GPU], bool]] = None) -> list[str]:
    """Names of every GPU in the catalog, in catalog order; with ``where``, of those it accepts.

    A calculator builds its list of GPUs this way, never by typing names.

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    where : callable or None, optional
        A function of a :class:`GPU` record returning True or False; None keeps every GPU.

    Returns
    -------
    list of str
        Catalog names, e.g. ``"H200-SXM"``.

    Raises
    ------
    ValueError
        If ``where`` is not callable.

    Examples
    --------
    >>> "H200-SXM" in gpu_names()
    True
    """
    return [g.name for g in gpus(where)]


def get_gpu(name: str, *, param: str = "name") -> GPU:
    """Look a GPU up by name, case-insensitively (a :class:`GPU` record is returned as it is).

    Explained in :ref:`memory_hierarchy` > The hierarchy, level by level.

    Parameters
    ----------
    name : str or GPU
        A catalog name (see :func:`gpu_names`) or a record.
    param : str, optional
        The caller's name for ``name`` in the error message (a model passes ``param="gpu"``).

    Returns
    -------
    GPU
        The catalog record: every figure with its source; rates decimal, capacities in bytes.

    Raises
    ------
    ValueError
        If ``name`` is not in the catalog (the message names ``param`` and lists the names).

    Examples
    --------
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
    "tesla t4": "T4",
    "nvidia t4": "T4",
    "nvidia a10g": "A10G",
    "nvidia l40s": "L40S",
    "nvidia h100 pcie": "H100-PCIe",
    "nvidia geforce rtx 3090": "RTX-3090",
    "geforce rtx 3090": "RTX-3090",
    "nvidia geforce rtx 5090": "RTX-5090",
    "amd instinct mi300x": "MI300X",
}


def catalog_name_for(device_name: str) -> Optional[str]:
    """The catalog entry for a device name as ``torch.cuda.get_device_name`` reports it.

    Explained in :ref:`tensor_cores` > Predict, then measure.

    Parameters
    ----------
    device_name : str
        The name torch reports, e.g. ``"NVIDIA H200"`` (case and surrounding spaces ignored).

    Returns
    -------
    str or None
        The catalog name, or None when the device is not in the catalog.

    Raises
    ------
    ValueError
        If ``device_name`` is not a string.

    Examples
    --------
    >>> catalog_name_for("NVIDIA H200"), catalog_name_for("my laptop")
    ('H200-SXM', None)
    """
    return _TORCH_NAMES.get(_check.text("device_name", device_name, empty=True).strip().lower())


def describe_local_gpu(device: int = 0) -> Optional[GPU]:
    """The reader's GPU: its catalog record when known, else a record built from the CUDA runtime.

    Built from ``torch.cuda.get_device_properties``; figures the runtime cannot report are left
    at 0 or empty and say so in ``sources``. Imports torch only when called.

    Explained in :ref:`tensor_cores` > Predict, then measure.

    Parameters
    ----------
    device : int, optional
        CUDA device index [-], 0 to the number of devices - 1.

    Returns
    -------
    GPU or None
        The record, or None without torch or without a CUDA device.

    Raises
    ------
    ValueError
        If ``device`` is not an integer or not a device index of this machine.
    """
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
