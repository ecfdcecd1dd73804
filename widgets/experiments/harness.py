"""Timing harness and measurement records shared by every experiment.

- ``time_fn``: device events on a GPU (each repeat timed on the device), a host clock on the CPU;
  warm-up first; the median of the repeats is the answer.
- ``choose_bytes``: problem sizes from the free device memory (a GPU) or a small fixed size (CPU).
- ``provenance``: GPU, driver, CUDA, torch and Triton versions, date and command, for every record.
- ``load_reference``: the recorded H200 results committed under ``widgets/data/h200/``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import torch

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
REFERENCE_GPU = "h200"
CPU_MAX_REPEAT = 3


def on_gpu() -> bool:
    """True when a CUDA (or ROCm) device is usable."""
    return torch.cuda.is_available()


def device() -> torch.device:
    return torch.device("cuda" if on_gpu() else "cpu")


def device_name() -> str:
    return torch.cuda.get_device_name() if on_gpu() else f"CPU ({platform.processor() or platform.machine()})"


def synchronize() -> None:
    if on_gpu():
        torch.cuda.synchronize()


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the spread of ``repeat`` timed calls."""

    median_s: float
    min_s: float
    max_s: float
    repeat: int
    device: str

    def as_dict(self) -> dict:
        return asdict(self)


def time_fn(
    fn: Callable[[], Any],
    *,
    warmup: int = 3,
    repeat: int = 20,
    setup: Optional[Callable[[], Any]] = None,
) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeat`` timed calls, median reported.

    On a GPU each call is bracketed by CUDA events (device time, no host-side launch jitter
    between the events); on the CPU by ``time.perf_counter``. ``setup()``, if given, runs before
    each call outside the timed region (e.g. to flush the L2 or rotate buffers).

    On the CPU (interpreted kernels, a demonstration of the method) warm-up is capped at 1 call
    and repeats at ``CPU_MAX_REPEAT``, so chapters stay quick without a GPU.
    """
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got repeat={repeat!r}, warmup={warmup!r}")
    if not on_gpu():
        warmup, repeat = min(warmup, 1), min(repeat, CPU_MAX_REPEAT)
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    synchronize()
    times = []
    if on_gpu():
        for _ in range(repeat):
            if setup:
                setup()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
    else:
        import time

        for _ in range(repeat):
            if setup:
                setup()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return Timing(statistics.median(times), min(times), max(times), repeat, device_name())


def free_device_bytes() -> int:
    """Free memory on the current GPU [B], or 0 without one."""
    if not on_gpu():
        return 0
    free, _total = torch.cuda.mem_get_info()
    return int(free)


def l2_bytes() -> int:
    """The device's L2 size as the runtime reports it [B] (0 on the CPU)."""
    if not on_gpu():
        return 0
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))


def choose_bytes(gpu_target_bytes: int, cpu_bytes: int, *, max_fraction_of_free: float = 0.25) -> int:
    """Problem size [B]: on a GPU the target, capped at a fraction of free memory; on the CPU a
    small fixed size (interpreted kernels are slow)."""
    if not on_gpu():
        return int(cpu_bytes)
    return int(min(gpu_target_bytes, max_fraction_of_free * free_device_bytes()))


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def provenance(command: Optional[str] = None) -> dict:
    """Where and how a measurement was made."""
    info = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command or " ".join([Path(sys.executable).name] + sys.argv),
        "device": device_name(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "host": platform.machine(),
    }
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:
        info["triton"] = None
    if on_gpu():
        props = torch.cuda.get_device_properties(0)
        info.update(
            gpu=props.name,
            gpu_count=torch.cuda.device_count(),
            sms=props.multi_processor_count,
            gpu_memory_bytes=props.total_memory,
            l2_bytes=l2_bytes(),
            compute_capability=f"{props.major}.{props.minor}",
            driver=_run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]).splitlines()[0:1] or None,
        )
        if isinstance(info["driver"], list):
            info["driver"] = info["driver"][0] if info["driver"] else None
    else:
        info.update(gpu=None, driver=None, gpu_count=0)
    return info


def record(topic: str, results: dict, command: Optional[str] = None) -> dict:
    """A measurement record: ``{"topic", "provenance", "results"}``."""
    return {"topic": topic, "provenance": provenance(command), "results": results}


def write_record(rec: dict, path: os.PathLike) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(rec, indent=1, sort_keys=False, default=float) + "\n")
    return p


def load_reference(topic: str, gpu: str = REFERENCE_GPU) -> dict:
    """The committed record of ``topic`` measured on ``gpu`` (``widgets/data/<gpu>/<topic>.json``)."""
    p = DATA_DIR / gpu / f"{topic}.json"
    if not p.exists():
        raise FileNotFoundError(f"no recorded {gpu} measurement for {topic!r} at {p}")
    return json.loads(p.read_text())


def describe_run(topic: str) -> str:
    """One line saying where this run happens, for the top of each experiment's output."""
    if on_gpu():
        return f"Measuring {topic} on {device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})."
    return (
        f"No GPU here: {topic} runs scaled down on the CPU, so its numbers show the method, not GPU "
        "performance. The recorded H200 result is shown beside it."
    )
