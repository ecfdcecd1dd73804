"""What a device can do, in one small frozen record shared by the experiments and the doctor.

The experiments ask :func:`widgets.experiments.harness.capabilities` (which probes this machine
with torch) and run what the device can; ``python -m widgets.doctor`` asks the same rules,
:func:`arch_features`, for this machine or for a catalog GPU the reader does not have
(``--as T4``), so the doctor's verdict and what an experiment runs cannot drift apart.

This module imports neither torch nor the experiments (the doctor must run where torch is
missing or broken).

The rules (CUDA C++ Programming Guide, "Compute Capabilities"; PyTorch's ``torch._scaled_mm``):
tensor-core math in fp16 from sm_70, bf16 and tf32 from sm_80, fp8 from sm_89; the tensor memory
accelerator (TMA) from sm_90; wgmma on sm_90 only (sm_100 uses tcgen05 instead; consumer sm_120
has neither). Triton 3.x generates code for sm_75 and newer, but its tested path is sm_80+.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# (feature, first compute capability that has it), in the order the doctor prints them
TENSOR_CORE_DTYPES: dict[str, tuple[int, int]] = {"fp16": (7, 0), "bf16": (8, 0), "tf32": (8, 0), "fp8": (8, 9)}
TMA_FROM = (9, 0)
WGMMA_ON = (9, 0)
TRITON_TESTED_FROM = (8, 0)


def compute_capability(arch: str) -> tuple[int, int]:
    """``"sm_89"`` -> ``(8, 9)``; ``"sm_120"`` -> ``(12, 0)``; ``"sm_90a"`` -> ``(9, 0)`` (the
    arch-specific suffixes ``a`` and ``f`` do not change the capability).

    >>> compute_capability("sm_75")
    (7, 5)
    """
    m = re.fullmatch(r"sm_(\d+)(\d)[af]?", arch) if isinstance(arch, str) else None
    if m is None:
        raise ValueError(
            f"arch must look like 'sm_75', 'sm_120' or 'sm_90a' (sm_, major and minor digits), got {arch!r}"
        )
    return int(m.group(1)), int(m.group(2))


def arch_name(cc: tuple[int, int]) -> str:
    """``(9, 0)`` -> ``"sm_90"``."""
    return f"sm_{cc[0]}{cc[1]}"


def arch_features(arch: Optional[str], vendor: Optional[str] = "NVIDIA") -> dict[str, bool]:
    """The rules, as flags: ``fp16_tc``, ``bf16_tc``, ``tf32_tc``, ``fp8_tc``, ``tma``, ``wgmma``
    (all False without an NVIDIA arch).

    >>> arch_features("sm_75")["bf16_tc"], arch_features("sm_89")["fp8_tc"], arch_features("sm_100")["wgmma"]
    (False, True, False)
    """
    if arch is None or vendor != "NVIDIA":
        return {f"{d}_tc": False for d in TENSOR_CORE_DTYPES} | {"tma": False, "wgmma": False}
    cc = compute_capability(arch)
    flags = {f"{d}_tc": cc >= first for d, first in TENSOR_CORE_DTYPES.items()}
    flags.update(tma=cc >= TMA_FROM, wgmma=cc == WGMMA_ON)
    return flags


def needs_sentence(feature: str) -> str:
    """``"bf16"`` -> ``"bf16 tensor cores need sm_80"``; ``"tma"`` -> ``"TMA needs sm_90"``."""
    if feature in TENSOR_CORE_DTYPES:
        return f"{feature} tensor cores need {arch_name(TENSOR_CORE_DTYPES[feature])}"
    if feature == "tma":
        return f"TMA needs {arch_name(TMA_FROM)}"
    if feature == "wgmma":
        return f"wgmma exists on {arch_name(WGMMA_ON)} only"
    raise ValueError(f"feature must be one of {', '.join([*TENSOR_CORE_DTYPES, 'tma', 'wgmma'])}, got {feature!r}")


@dataclass(frozen=True)
class Capabilities:
    """What the device an experiment runs on can do.

    ``device`` is the GPU's name (or ``"CPU"``); ``arch`` ``"sm_90"`` style for NVIDIA (``None``
    on the CPU); ``free_bytes``/``total_bytes`` of the first GPU [B] (0 on the CPU);
    ``tensor_core_dtypes`` the formats with tensor-core math; ``simulated`` when it describes a GPU
    this machine does not have (``doctor --as``, tests).
    """

    device: str = "CPU"
    vendor: Optional[str] = None
    arch: Optional[str] = None
    free_bytes: int = 0
    total_bytes: int = 0
    gpu_count: int = 0
    nccl: bool = False
    simulated: bool = False

    @property
    def gpu(self) -> bool:
        return self.gpu_count > 0 and self.arch is not None

    @property
    def nvidia(self) -> bool:
        return self.gpu and self.vendor == "NVIDIA"

    @property
    def compute_capability(self) -> Optional[tuple[int, int]]:
        return compute_capability(self.arch) if self.nvidia else None

    @property
    def features(self) -> dict[str, bool]:
        return arch_features(self.arch if self.nvidia else None, self.vendor)

    @property
    def tensor_core_dtypes(self) -> tuple[str, ...]:
        f = self.features
        return tuple(d for d in TENSOR_CORE_DTYPES if f[f"{d}_tc"])

    @property
    def fp8(self) -> bool:
        return self.features["fp8_tc"]

    @property
    def tma(self) -> bool:
        return self.features["tma"]

    @property
    def wgmma(self) -> bool:
        return self.features["wgmma"]

    @property
    def triton_tested(self) -> bool:
        """Triton's tested path: an NVIDIA GPU of sm_80 or newer (or its interpreter on the CPU)."""
        return not self.gpu or (self.nvidia and self.compute_capability >= TRITON_TESTED_FROM)

    def tensor_cores(self, dtype: str) -> bool:
        """Whether ``dtype`` (fp16, bf16, tf32, fp8) has tensor-core math here."""
        if dtype not in TENSOR_CORE_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(TENSOR_CORE_DTYPES)}, got {dtype!r}")
        return dtype in self.tensor_core_dtypes

    def why_not(self, feature: str) -> Optional[str]:
        """``None`` when the device has ``feature`` (a tensor-core dtype, ``tma`` or ``wgmma``),
        else one sentence: ``"bf16 tensor cores need sm_80; this GPU (Tesla T4) is sm_75"``."""
        have = self.tensor_cores(feature) if feature in TENSOR_CORE_DTYPES else self.features.get(feature)
        if feature not in TENSOR_CORE_DTYPES and have is None:
            needs_sentence(feature)  # raises the ValueError naming the valid features
        if have:
            return None
        where = f"this GPU ({self.device}) is {self.arch}" if self.gpu else "there is no GPU here"
        return f"{needs_sentence(feature)}; {where}"

    def size_bytes(self, gpu_target_bytes: int, cpu_bytes: int, fraction_of_free: float = 0.25) -> int:
        """A problem size [B]: on a GPU the target capped at ``fraction_of_free`` of free memory
        (a 15 GiB T4 gets less than a 141 GiB H200); on the CPU ``cpu_bytes``."""
        if not self.gpu:
            return int(cpu_bytes)
        return int(min(gpu_target_bytes, fraction_of_free * self.free_bytes))
