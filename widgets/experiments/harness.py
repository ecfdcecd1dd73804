"""Timing harness and measurement records shared by every experiment.

- ``time_fn``: device events on a GPU (each repeat timed on the device), a host clock on the CPU;
  warm-up first; the median of the repeats is the answer.
- ``choose_bytes``: problem sizes from the free device memory (a GPU) or a small fixed size (CPU).
- ``provenance``: GPU, driver, CUDA, torch and Triton versions, git commit, date and command, for
  every record; ``gpu_clock_power``: the SM clock and board power now (None on the CPU).
- ``write_record``: strict JSON (NaN and inf become null, each with its reason under ``"nulls"``),
  written atomically (a temporary file renamed over the target).
- ``load_record`` / ``load_reference``: read a record back and check its schema; a broken file
  raises ``ValueError`` naming the file and the missing or bad field.
- ``Result``: the base of every experiment's result type (a frozen dataclass with ``to_record()``
  and ``from_record(dict)``); ``Failed``: what a fail-soft step records instead.
- ``capabilities()``: what this device can do (``widgets.capabilities.Capabilities``), the one
  question every experiment asks before choosing what to run (the doctor asks the same rules).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar, Union

import torch

from .. import _check
from ..capabilities import Capabilities

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
REPO_ROOT = Path(__file__).resolve().parents[2]
REQUIRED_PROVENANCE = ("date", "command", "device", "python", "torch")
REFERENCE_GPU = "h200"
CPU_MAX_REPEAT = 3
MAX_REPEAT = 100_000  # bounds a timing loop


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


def time_fn(
    fn: Callable[[], Any],
    *,
    warmup: int = 3,
    repeat: int = 20,
    setup: Optional[Callable[[], Any]] = None,
) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeat`` timed calls, median reported.

    On a GPU each call is bracketed by CUDA events (device time, but on an otherwise idle GPU the
    interval also holds the launch, since the start event is recorded before the kernel reaches the
    GPU: for kernels of a few microseconds, time many queued launches instead; events resolve about
    0.5 us); on the CPU by ``time.perf_counter``. ``setup()``, if given, runs before
    each call outside the timed region (e.g. to flush the L2 or rotate buffers).

    On the CPU (interpreted kernels, a demonstration of the method) warm-up is capped at 1 call
    and repeats at ``CPU_MAX_REPEAT``, so chapters stay quick without a GPU.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable that runs the work once, got {fn!r:.80}")
    if setup is not None and not callable(setup):
        raise ValueError(f"setup must be None or a callable, got {setup!r:.80}")
    repeat = _check.integer("repeat", repeat, minimum=1, maximum=MAX_REPEAT)
    warmup = _check.integer("warmup", warmup, minimum=0, maximum=MAX_REPEAT)
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


def gpu_kernel_spans(fn: Callable[[], Any]) -> list[tuple[str, float, float]]:
    """The GPU kernels ``fn()`` runs, as ``(name, start_s, end_s)`` in order of start, from a
    torch.profiler trace (CUPTI's kernel records, graph replays' kernels included; copies and
    memsets left out; times in seconds from the trace's start). Raises ``RuntimeError`` without a
    GPU; the profiler's own errors pass through, for the caller to record."""
    if not on_gpu():
        raise RuntimeError("no GPU: a kernel timeline needs CUDA")
    from torch.profiler import ProfilerActivity, profile

    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        synchronize()
    spans = []
    for e in prof.events():
        name = str(getattr(e, "name", ""))
        if not str(getattr(e, "device_type", "")).endswith("CUDA") or not name or name.startswith(("Memcpy", "Memset")):
            continue
        spans.append((name, e.time_range.start * 1e-6, e.time_range.end * 1e-6))  # the profiler's times are in us
    return sorted(spans, key=lambda s: s[1])


def capabilities() -> Capabilities:
    """What this device can do: name, vendor, arch (``sm_90``), free and total memory of GPU 0,
    number of GPUs and whether torch has NCCL. Experiments choose what to run from it (never from
    the GPU's name); tests replace it with a simulated GPU (``doctor.simulate("T4").capabilities``)."""
    nccl = False
    try:
        import torch.distributed as dist

        nccl = bool(dist.is_available() and dist.is_nccl_available())
    except Exception:
        nccl = False
    if not on_gpu():
        return Capabilities(device=device_name(), nccl=nccl)
    props = torch.cuda.get_device_properties(0)
    hip = getattr(torch.version, "hip", None)
    free, total = torch.cuda.mem_get_info(0)
    arch = getattr(props, "gcnArchName", "rocm").split(":")[0] if hip else f"sm_{props.major}{props.minor}"
    return Capabilities(device=props.name, vendor="AMD" if hip else "NVIDIA", arch=arch, free_bytes=int(free),
                        total_bytes=int(total), gpu_count=torch.cuda.device_count(), nccl=nccl)


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


R = TypeVar("R", bound="Result")


class Result:
    """Base of every experiment's result: subclass it with ``@dataclass(frozen=True)``.

    ``to_record()`` is the plain JSON the topic's record holds (field name -> value; a nested
    ``Result`` by its own ``to_record()``; tuples as lists; NaN/inf stay floats here and become
    null with a reason in ``write_record``). ``from_record(d)`` reads it back, typed: nested results,
    ``tuple[X, ...]``, ``list[X]``, ``dict[str, X]`` and ``X | None`` fields are rebuilt from their
    annotations; a field missing from ``d`` takes its default (``ValueError`` naming the class and
    field when it has none); keys the class does not know are ignored (older records). A mapping
    holding ``"error"`` where a result was expected reads as :class:`Failed` when the annotation
    allows it.
    """

    def to_record(self) -> dict:
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} must be a dataclass to be a Result")
        return {f.name: _to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_record(cls: type[R], data: Mapping, *, strict: bool = False) -> R:
        """``data`` (a record's JSON, or the dict an experiment just built) as this type.
        ``strict``: a key that is not a field raises ``ValueError`` (an experiment building its
        result uses it, so nothing it measured is silently dropped); reading a committed record
        does not (a field since removed is ignored)."""
        name = cls.__name__
        if not isinstance(data, Mapping):
            raise ValueError(f"{name}.from_record needs a mapping (a record's results), got {type(data).__name__}")
        hints = _hints(cls)
        kwargs, missing = {}, []
        names = set()
        for f in dataclasses.fields(cls):
            names.add(f.name)
            if not f.init:
                continue
            if f.name in data:
                kwargs[f.name] = _from_plain(hints.get(f.name, Any), data[f.name], f"{name}.{f.name}", strict)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                missing.append(f.name)
        if missing:
            raise ValueError(f"{name}.from_record: missing field(s) {', '.join(missing)} (have {', '.join(sorted(data))})")
        extra = sorted(set(data) - names)
        if strict and extra:
            raise ValueError(f"{name}.from_record: field(s) {', '.join(map(str, extra))} are not in {name}")
        return cls(**kwargs)

    # A result reads like its record too (``r["points"]``, ``r.get("note")``, ``"error" in r``), so
    # code that draws records (the ui's compare-row builders) takes a live result unchanged.
    # Attribute access (``r.points``) is the typed way; nothing can be assigned (frozen).
    def __getitem__(self, key: str):
        if not isinstance(key, str) or key not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default=None):
        try:
            value = self[key]
        except KeyError:
            return default
        return default if value is None else value

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key in {f.name for f in dataclasses.fields(self)}

    def keys(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]


@dataclass(frozen=True)
class Failed(Result):
    """A fail-soft step: it did not run (or crashed), and why; the record keeps ``{"error": ...}``."""

    error: str

    @classmethod
    def of(cls, exc: BaseException) -> Failed:
        return cls(f"{type(exc).__name__}: {str(exc)[:300]}")


def attempt(fn: Callable[..., R], *args, **kwargs) -> Union[R, Failed]:
    """``fn(*args, **kwargs)``, or :class:`Failed` with the error's type and message: one step
    that fails (a kernel the arch cannot compile, out of memory) must not lose the others."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - recorded with its reason
        return Failed.of(exc)


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _to_plain(v):
    if isinstance(v, Result):
        return v.to_record()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _to_plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (list, tuple)):
        return [_to_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _to_plain(x) for k, x in v.items()}
    return v


def _is_result_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, Result)


def _from_plain(t, v, where: str, strict: bool = False):
    """``v`` (plain JSON) as the annotation ``t`` asks."""
    if v is None or t is Any:
        return v
    origin = typing.get_origin(t)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        results = [a for a in args if _is_result_type(a)]
        if isinstance(v, Mapping) and results:
            if "error" in v:  # a failed step: the result types with an ``error`` field first
                results.sort(key=lambda a: "error" not in {f.name for f in dataclasses.fields(a)})
            errors = []
            for a in results:
                try:
                    return a.from_record(v, strict=strict)
                except ValueError as exc:
                    errors.append(str(exc))
            raise ValueError(f"{where}: matches none of {', '.join(a.__name__ for a in results)} ({'; '.join(errors)})")
        for a in args:
            if not _is_result_type(a):
                return _from_plain(a, v, where, strict)
        return v
    if _is_result_type(t):
        if not isinstance(v, Mapping):
            raise ValueError(f"{where}: expected an object for {t.__name__}, got {type(v).__name__}")
        return t.from_record(v, strict=strict)
    if origin in (tuple, list):
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {type(v).__name__}")
        args = typing.get_args(t)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            items = [_from_plain(a, x, f"{where}[{i}]", strict) for i, (a, x) in enumerate(zip(args, v))]
        else:
            a = args[0] if args else Any
            items = [_from_plain(a, x, f"{where}[{i}]", strict) for i, x in enumerate(v)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        args = typing.get_args(t)
        a = args[1] if len(args) == 2 else Any
        if not isinstance(v, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(v).__name__}")
        return {k: _from_plain(a, x, f"{where}.{k}", strict) for k, x in v.items()}
    if t is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def git_state() -> dict:
    """``{"git_commit", "git_dirty"}`` of the code that made a measurement.

    ``GPUBOOK_GIT_COMMIT`` (and optionally ``GPUBOOK_GIT_DIRTY=0/1``) wins when set: a copy of the
    tree on a GPU machine may have no ``.git``. Otherwise ``git rev-parse HEAD`` of this repository
    and whether tracked files differ from it; ``None`` where git cannot say.
    """
    env = os.environ.get("GPUBOOK_GIT_COMMIT", "").strip()
    if env:
        dirty = os.environ.get("GPUBOOK_GIT_DIRTY", "").strip()
        return {"git_commit": env, "git_dirty": {"1": True, "0": False}.get(dirty)}
    commit = _run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"]) or None
    dirty = None
    if commit:
        try:
            proc = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                  capture_output=True, text=True, timeout=20)
            dirty = bool(proc.stdout.strip()) if proc.returncode == 0 else None
        except Exception:
            dirty = None
    return {"git_commit": commit, "git_dirty": dirty}


def _nvml_reading(index: int) -> Optional[dict]:
    try:
        import pynvml  # nvidia-ml-py; torch.cuda's clock_rate/power_draw use it too
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        out = {
            "sm_clock_hz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM) * 1e6,
            "max_sm_clock_hz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM) * 1e6,
            "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3,
            "temperature_c": float(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
            "source": "NVML (pynvml)",
        }
        return out
    except Exception:
        return None


def _smi_reading(index: int) -> Optional[dict]:
    fields = ("clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu")
    line = _run(["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    parts = [x.strip() for x in line.splitlines()[0].split(",")] if line else []
    if len(parts) != len(fields):
        return None

    def num(text, scale=1.0):
        try:
            v = float(text) * scale
        except ValueError:  # "[N/A]"
            return None
        return v if math.isfinite(v) else None

    return {
        "sm_clock_hz": num(parts[0], 1e6),
        "max_sm_clock_hz": num(parts[1], 1e6),
        "power_w": num(parts[2]),
        "power_limit_w": num(parts[3]),
        "temperature_c": num(parts[4]),
        "source": "nvidia-smi",
    }


def gpu_clock_power(index: int = 0) -> Optional[dict]:
    """The GPU's SM clock [Hz], its maximum, board power and power limit [W] and temperature [C]
    right now (NVML through pynvml, else ``nvidia-smi``); ``None`` on the CPU.

    Call it just after a timed run to record the clock it ran at (a power-capped GPU clocks down).
    A field the driver does not report is ``None``.
    """
    if not on_gpu():
        return None
    return _nvml_reading(index) or _smi_reading(index) or {
        "sm_clock_hz": None, "max_sm_clock_hz": None, "power_w": None, "power_limit_w": None,
        "temperature_c": None, "source": "not available (no pynvml, no nvidia-smi)",
    }


def provenance(command: Optional[str] = None) -> dict:
    """Where and how a measurement was made."""
    info = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": command or " ".join([Path(sys.executable).name] + sys.argv),
        "device": device_name(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "host": platform.machine(),
    }
    info.update(git_state())
    try:
        # widgets.experiments set TRITON_INTERPRET before this import could happen (see __init__)
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
        info["clock_power"] = gpu_clock_power()
    else:
        info.update(gpu=None, driver=None, gpu_count=0)
    return info


def record(topic: str, results, command: Optional[str] = None) -> dict:
    """A measurement record: ``{"topic", "provenance", "results"}`` (``results`` a topic's
    :class:`Result`, written by its ``to_record()``, or a plain mapping)."""
    if isinstance(results, Result):
        results = results.to_record()
    return {"topic": topic, "provenance": provenance(command), "results": results}


def _plain(obj, where: str, nulls: dict):
    """``obj`` as plain JSON values; a NaN or an infinity becomes ``None`` and ``nulls[where]``
    says what it was (keep a reason beside it in the results where the experiment knows one)."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        nulls[where] = f"{obj!r} in the measurement (no finite value): written as null"
        return None
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            key = k if isinstance(k, str) else json.dumps(k) if isinstance(k, bool) or k is None else str(k)
            out[key] = _plain(v, f"{where}.{key}", nulls)
        return out
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{where}[{i}]", nulls) for i, v in enumerate(obj)]
    if isinstance(obj, Result):
        return _plain(obj.to_record(), where, nulls)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(asdict(obj), where, nulls)
    if hasattr(obj, "tolist"):  # numpy scalars and arrays, torch tensors
        return _plain(obj.tolist(), where, nulls)
    if hasattr(obj, "item"):
        return _plain(obj.item(), where, nulls)
    try:
        return _plain(float(obj), where, nulls)
    except (TypeError, ValueError):
        raise ValueError(f"record field {where} holds a {type(obj).__name__!r} value ({obj!r:.80}), not a number, "
                         "string, list or mapping") from None


def to_json(rec: dict) -> str:
    """``rec`` as strict JSON text (``allow_nan=False``): NaN and inf become null, and the
    record's ``"nulls"`` maps each such field (``results.x[3].time_s``) to what it was."""
    nulls: dict = {}
    plain = _plain(rec, "record", nulls)
    if nulls:
        previous = plain.get("nulls") if isinstance(plain.get("nulls"), dict) else {}
        plain["nulls"] = {**previous, **{k.removeprefix("record."): v for k, v in nulls.items()}}
    return json.dumps(plain, indent=1, sort_keys=False, allow_nan=False) + "\n"


def write_record(rec: dict, path: os.PathLike) -> Path:
    """Write ``rec`` as strict JSON to ``path`` atomically: a temporary file in the same folder,
    flushed to disk, then renamed over ``path``; a failure leaves any old record untouched."""
    p = Path(path)
    text = to_json(rec)  # fails before touching the disk
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def check_record(rec, where: str = "record", topic: Optional[str] = None) -> dict:
    """Check a record's schema: a JSON object with a ``topic`` string, a ``provenance`` object
    holding ``REQUIRED_PROVENANCE`` and a ``results`` object; ``ValueError`` naming ``where``
    (the file) and the missing or bad field."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: a record must be a JSON object with topic, provenance and results; "
                         f"got {type(rec).__name__ if rec is not None else 'null'}")
    for key in ("topic", "provenance", "results"):
        if key not in rec:
            raise ValueError(f"{where}: missing field {key!r}")
    if not isinstance(rec["topic"], str) or not rec["topic"]:
        raise ValueError(f"{where}: field 'topic' must be a non-empty string, got {rec['topic']!r}")
    if topic is not None and rec["topic"] != topic:
        raise ValueError(f"{where}: field 'topic' is {rec['topic']!r}, expected {topic!r}")
    prov = rec["provenance"]
    if not isinstance(prov, dict):
        raise ValueError(f"{where}: field 'provenance' must be an object, got {prov!r:.80}")
    for key in REQUIRED_PROVENANCE:
        if key not in prov:
            raise ValueError(f"{where}: missing field 'provenance.{key}'")
    if not isinstance(rec["results"], dict):
        raise ValueError(f"{where}: field 'results' must be an object, got {rec['results']!r:.80}")
    return rec


def load_record(path: os.PathLike, topic: Optional[str] = None) -> dict:
    """Read a measurement record written by ``write_record`` and check its schema.

    ``FileNotFoundError`` if there is no file; ``ValueError`` naming the file for an empty,
    truncated or non-JSON file, NaN/Infinity constants, or a missing or bad field.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: cannot read the record ({exc})") from None
    if not text.strip():
        raise ValueError(f"{p}: empty file, not a measurement record")
    try:
        rec = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                         "a truncated or hand-edited record? Measure again") from None
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}; records are strict JSON (null for a missing value)") from None
    return check_record(rec, str(p), topic)


def load_reference(topic: str, gpu: str = REFERENCE_GPU) -> dict:
    """The committed record of ``topic`` measured on ``gpu`` (``widgets/data/<gpu>/<topic>.json``),
    schema-checked (``ValueError`` naming the file and field if it is broken)."""
    for name, value in (("topic", topic), ("gpu", gpu)):
        if not isinstance(value, str) or not value or "/" in value or "\\" in value or value.startswith("."):
            raise ValueError(f"{name} must be a folder-safe name such as 'h200' or 'serving', got {value!r}")
    p = DATA_DIR / gpu / f"{topic}.json"
    if not p.exists():
        raise FileNotFoundError(f"no recorded {gpu} measurement for {topic!r} at {p}")
    return load_record(p, topic)


def describe_run(topic: str) -> str:
    """One line saying where this run happens, for the top of each experiment's output."""
    if on_gpu():
        return f"Measuring {topic} on {device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})."
    return (
        f"No GPU here: {topic} run scaled down on the CPU, so the numbers show the method, not GPU "
        "performance. The recorded H200 result is shown beside it."
    )
