"""Can this machine run the book's chapters? One table, in well under a minute.

    python -m widgets.doctor              # this machine
    python -m widgets.doctor --as T4      # a GPU you do not have (any catalog GPU)
    python -m widgets.doctor --as H200-SXM --gpus 2
    python -m widgets.doctor --as T4 --as L4 --as A100-SXM-80GB   # a room plan: chapters x GPUs

The table lists Python and the packages the chapters use, the notebook front end (ipywidgets,
JupyterLab, jupyterlab-myst), torch with its CUDA and the driver, the GPU (name, compute
capability, free memory), Triton, numba-cuda, nvcc/NVRTC, the number of GPUs and NCCL, with a note
where JupyterLab would leave the prose's numbers unevaluated (:func:`lab_windowing`); then, for
each chapter, one verdict:

- **runs fully**: every experiment runs at the sizes of the recorded H200 reference;
- **runs, scaled down**: it runs top to bottom, with the parts listed made smaller, run on the
  CPU, or left out (and the chapter says why);
- **needs ...**: something the chapter's experiments cannot do without.

The exit status is 0 when every chapter runs at least scaled down, 1 otherwise.

``--as NAME`` answers for a GPU the reader does not have, from capability rules (compute
capability, tensor-core data types, memory), assuming the book's requirements are installed
(``pip install "gpu-book-widgets[chapters]"``) and the GPU is otherwise idle. What each chapter
needs is written once, in :data:`CHAPTER_NEEDS` and :func:`chapter_verdicts`, from reading
``widgets/experiments/*.py``; ``tests/test_doctor.py`` checks it with simulated machines.
"""

from __future__ import annotations

import argparse
import functools
import glob
import importlib
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Optional

from .capabilities import Capabilities, arch_features, compute_capability
from .units import GiB

CHAPTERS = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "training_memory", "serving", "attention")

# Packages reported in the table (distribution names), in order: the chapters' stack, then the front end.
PACKAGES = ("numpy", "torch", "triton", "numba", "numba-cuda", "cuda-bindings", "cupy", "plotly", "myst-nb")
FRONT_END = ("ipywidgets", "ipykernel", "jupyterlab", "jupyterlab-myst")

# What a chapter cannot start without, whatever the device (imports at the top of its modules).
CHAPTER_NEEDS: dict[str, tuple[str, ...]] = {
    "memory_hierarchy": ("torch", "triton", "numba-cuda", "plotly", "ipywidgets"),  # numba-cuda: the transpose kernels
    "simt": ("torch", "numba-cuda", "plotly", "ipywidgets"),
    "tensor_cores": ("torch", "triton", "plotly", "ipywidgets"),
    "kernels": ("torch", "plotly", "ipywidgets"),  # triton only for the tensor-core rung, on a GPU (fail-soft)
    "collectives": ("torch", "plotly", "ipywidgets"),
    "training_memory": ("torch", "plotly", "ipywidgets"),
    "serving": ("torch", "triton", "plotly", "ipywidgets"),
    "attention": ("torch", "triton", "plotly", "ipywidgets"),
}
INSTALL_HINT = 'pip install "gpu-book-widgets[chapters]" (or make install)'

# GPUs that ``--as`` knows although the catalog (widgets.hardware) does not have them: none. Every
# GPU a reader may name (T4, L4, A100, ...) is a catalog entry with its sources; a GPU added here
# instead (vendor, arch, memory_bytes, source) would answer ``--as`` without one.
EXTRA_GPUS: dict[str, dict] = {}

# The serving chapter's GPU run (widgets/experiments/serving.py): a Llama-3-70B-shaped decoder cut
# to SERVING_LAYERS layers in bf16, decode sweeps up to SERVING_MAX_KV_TOKENS cached tokens, and a
# multi-head (MHA) KV cache of SERVING_MHA_TOKENS tokens allocated for real (measure_kv_memory's
# GPU defaults: batch 16, context 8192). tests/test_doctor.py checks these against the experiment.
SERVING_LAYERS = 4
SERVING_MAX_KV_TOKENS = max(256 * 1024, 16 * 32768)  # batch 256 at 1024 tokens; batch 16 at 32768 tokens
SERVING_MHA_TOKENS = 16 * 8192
# A margin for activations, logits, the allocator and CUDA graphs' pools: chosen, not measured (the
# H200 record's largest transient, the 2048-token prefill, was 0.68 GB, under 3% of the rest).
SERVING_HEADROOM = 1.10


# JupyterLab's notebook windowing (its "Windowing mode" setting). jupyterlab-myst 2.7.0 takes a markdown
# cell's {eval} expressions from the cell as last rendered (src/actions.ts), and JupyterLab 4 by default
# renders only the cells in view: Run All left the numbers below the first screen as `prose.<key>` (the
# Makefile's LAB_OVERRIDES says what was measured). `make install` writes book/jupyterlab/overrides.json
# into the environment's overrides.d, where JupyterLab reads a package's defaults.
LAB_TRACKER = "@jupyterlab/notebook-extension:tracker"
LAB_DEFAULT_WINDOWING = "contentVisibility"  # JupyterLab 4.6's default, when its schema cannot be read
LAB_BOOK_FILE = os.path.join("overrides.d", "gpu-book.json")  # under the application folder's settings


def _settings_json(path: str) -> Optional[dict]:
    """A JupyterLab settings file (JSON5, as JupyterLab reads user settings: comments, trailing
    commas), or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    try:
        import json5  # jupyterlab_server's own parser, installed with JupyterLab

        data = json5.loads(text) if text.strip() else {}
    except ImportError:
        try:
            data = json.loads("\n".join(x for x in text.splitlines() if not x.lstrip().startswith("//")) or "{}")
        except ValueError:
            return None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _lab_dirs() -> tuple[str, str]:
    """(application folder, user-settings folder) of this Python's JupyterLab, found as JupyterLab
    finds them (``jupyterlab.commands``: ``$JUPYTERLAB_DIR``, the environment, a ``--user`` or system
    install...); without JupyterLab, the environment's and ``~/.jupyter``'s."""
    try:
        from jupyterlab.commands import get_app_dir, get_user_settings_dir

        return get_app_dir(), get_user_settings_dir()
    except Exception:  # noqa: BLE001  (no JupyterLab, or one that moved these: the usual places)
        config = os.environ.get("JUPYTER_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".jupyter")
        return (os.environ.get("JUPYTERLAB_DIR") or os.path.join(sys.prefix, "share", "jupyter", "lab"),
                os.environ.get("JUPYTERLAB_SETTINGS_DIR") or os.path.join(config, "lab", "user-settings"))


def _labconfig_overrides() -> dict:
    """The ``default_setting_overrides`` of Jupyter's ``labconfig`` folders (what a JupyterHub's
    administrator may set), read as jupyterlab_server reads them; {} without jupyter_server."""
    try:
        from jupyter_server.services.config.manager import ConfigManager

        return ConfigManager(config_dir_name="labconfig").get("default_setting_overrides") or {}
    except Exception:  # noqa: BLE001
        return {}


def lab_windowing(app_dir: Optional[str] = None, user_dir: Optional[str] = None) -> tuple[str, str]:
    """The notebook windowing mode this Python's JupyterLab starts with, and where it comes from.

    As jupyterlab_server combines them, later winning: JupyterLab's default (its tracker schema in
    ``app_dir``), the environment's overrides in ``app_dir``'s ``settings`` (the packages'
    ``overrides.d/*.json``, where ``make install`` writes the book's, then ``overrides.json``), the
    ``labconfig`` folders' ``default_setting_overrides``, and last the reader's own setting in
    ``user_dir``. The folders default to JupyterLab's own (:func:`_lab_dirs`). The mode applies to a
    notebook when it is opened.
    """
    if app_dir is None or user_dir is None:
        found_app, found_user = _lab_dirs()
        app_dir, user_dir = app_dir or found_app, user_dir or found_user
    schema = _settings_json(os.path.join(app_dir, "schemas", "@jupyterlab", "notebook-extension", "tracker.json")) or {}
    default = ((schema.get("properties") or {}).get("windowingMode") or {}).get("default")
    found = (default if isinstance(default, str) else LAB_DEFAULT_WINDOWING, "JupyterLab's default")
    settings = os.path.join(app_dir, "settings")
    layers = [(path, ((_settings_json(path) or {}).get(LAB_TRACKER) or {}))
              for path in [*sorted(glob.glob(os.path.join(settings, "overrides.d", "*.json"))), os.path.join(settings, "overrides.json")]]
    layers.append(("Jupyter's labconfig default_setting_overrides", _labconfig_overrides().get(LAB_TRACKER) or {}))
    user = os.path.join(user_dir, "@jupyterlab", "notebook-extension", "tracker.jupyterlab-settings")
    layers.append((user, _settings_json(user) or {}))
    for source, values in layers:
        if isinstance(values, dict) and isinstance(values.get("windowingMode"), str):
            found = (values["windowingMode"], source)
    return found


def lab_windowing_note(mode: str, source: str, app_dir: Optional[str] = None) -> Optional[str]:
    """What the doctor says when JupyterLab would leave the prose's numbers out (None when the mode is
    ``"none"``): the fix that works where the mode comes from."""
    if mode == "none":
        return None
    app_dir = app_dir or _lab_dirs()[0]
    book_file = os.path.join(app_dir, "settings", LAB_BOOK_FILE)
    why = (f"JupyterLab renders only the cells in view (Windowing mode {mode!r}, from {source}): after Run All the "
           "prose's numbers below the first screen stay prose.<key>. ")
    settings_editor = "pick Settings > Settings Editor > Notebook > Windowing mode > None, then reopen the notebook"
    if source == "JupyterLab's default" or os.path.dirname(source) == os.path.join(app_dir, "settings", "overrides.d"):
        return why + f"Fix: {settings_editor}, or copy the book's book/jupyterlab/overrides.json to {book_file}"
    return why + f"That setting wins over the book's file: {settings_editor} (or edit {source})"


# --------------------------------------------------------------------------------------------
# What a machine has
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Machine:
    """Everything the verdicts depend on. ``probe()`` fills it from this machine; ``simulate()``
    from a catalog GPU; tests build it directly."""

    python: str = platform.python_version()
    packages: dict = field(default_factory=dict)  # distribution name -> version, None when absent
    gpu_name: Optional[str] = None
    vendor: Optional[str] = None  # "NVIDIA", "AMD"; None without a GPU
    arch: Optional[str] = None  # "sm_90", "gfx942"
    total_bytes: Optional[int] = None
    free_bytes: Optional[int] = None
    n_gpus: int = 0
    torch_cuda: Optional[str] = None  # the CUDA (or HIP) version torch was built with
    driver: Optional[str] = None
    nccl: Optional[str] = None  # NCCL version, None when torch has no NCCL
    gloo: bool = True  # torch.distributed's CPU backend
    nvcc: Optional[str] = None
    nvrtc: bool = False  # NVRTC through cuda-python (cuda.bindings), the fallback compiler
    c_compiler: bool = False  # for NVIDIA's occupancy calculator (cuda_occupancy.h) on a CPU
    occupancy_header: bool = False
    simulated: bool = False
    notes: tuple = ()

    def has(self, dist: str) -> bool:
        return self.packages.get(dist) is not None

    @property
    def gpu(self) -> bool:
        return self.n_gpus > 0 and self.arch is not None

    @property
    def nvidia(self) -> bool:
        return self.gpu and self.vendor == "NVIDIA"

    @property
    def cc(self) -> Optional[tuple]:
        """Compute capability (major, minor) of an NVIDIA arch such as ``"sm_89"``; None otherwise."""
        return compute_capability(self.arch) if self.nvidia else None

    @property
    def capabilities(self) -> Capabilities:
        """This machine as the experiments see it (``harness.capabilities()`` on a real machine):
        tests replace ``harness.capabilities`` with ``simulate("T4").capabilities``."""
        return Capabilities(
            device=self.gpu_name or "CPU",
            vendor=self.vendor if self.gpu else None,
            arch=self.arch if self.gpu else None,
            free_bytes=int(self.free_bytes or 0) if self.gpu else 0,
            total_bytes=int(self.total_bytes or 0) if self.gpu else 0,
            gpu_count=self.n_gpus if self.gpu else 0,
            nccl=bool(self.nccl),
            simulated=self.simulated,
        )


def capabilities(arch: Optional[str], vendor: Optional[str] = "NVIDIA") -> dict:
    """What the chapters ask of an NVIDIA GPU, from its compute capability: the flags of
    :func:`widgets.capabilities.arch_features`, the rules the experiments use too (fp16 tensor cores
    from sm_70, bf16 and tf32 from sm_80, fp8 from sm_89, TMA from sm_90, wgmma on sm_90 only)."""
    return arch_features(arch, vendor)


def _version(dist: str) -> Optional[str]:
    """Installed version of distribution ``dist``; for ``cupy``, whichever wheel provides it
    (``cupy-cuda12x``, ``cupy-cuda13x``, ...). None when absent."""
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        pass
    if dist == "cupy":
        for provider in _providers("cupy"):
            try:
                return md.version(provider)
            except md.PackageNotFoundError:
                continue
    return None


@functools.cache
def _providers(module: str) -> tuple:
    """Distributions that provide top-level ``module`` (scans every installed distribution once)."""
    return tuple(md.packages_distributions().get(module, ()))


def _run(cmd: list, timeout: float = 10.0) -> Optional[str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _nvcc_version() -> Optional[str]:
    cands = [
        os.environ.get("NVCC"),
        shutil.which("nvcc"),
        os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"),
    ]
    for cand in cands:
        if cand and os.path.exists(cand):
            out = _run([cand, "--version"])
            if out:
                last = [line for line in out.splitlines() if "release" in line]
                return last[0].split("release")[-1].split(",")[0].strip() if last else "present"
    return None


def probe() -> Machine:
    """Describe this machine (imports torch once; no GPU work beyond asking for free memory)."""
    packages = {d: _version(d) for d in (*PACKAGES, *FRONT_END)}
    notes = []
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        notes.append("Colab: the front end is Colab's own (jupyterlab and jupyterlab-myst do not apply)")
    kw: dict = {}
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:  # not installed, or broken: the chapters need it
        torch = None
        packages["torch"] = None  # installed but broken counts as missing: every chapter needs it
        notes.append(f"torch does not import: {type(exc).__name__}: {str(exc)[:200]}")
    if torch is not None:
        kw["torch_cuda"] = torch.version.cuda or getattr(torch.version, "hip", None)
        try:
            import torch.distributed as dist

            kw["gloo"] = bool(dist.is_available() and dist.is_gloo_available())
            nccl = dist.is_available() and dist.is_nccl_available()
        except Exception:
            kw["gloo"], nccl = False, False
        if torch.cuda.is_available():
            from .experiments import harness  # the experiments' own probe: one code path for both

            hip = getattr(torch.version, "hip", None)
            cap = harness.capabilities()
            kw.update(
                gpu_name=cap.device,
                n_gpus=cap.gpu_count,
                total_bytes=cap.total_bytes,
                free_bytes=cap.free_bytes,
                vendor=cap.vendor,
                arch=cap.arch,
            )
            if nccl:
                try:
                    v = torch.cuda.nccl.version()
                    kw["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
                except Exception:
                    kw["nccl"] = "present"
            smi = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) if not hip else None
            kw["driver"] = smi.splitlines()[0].strip() if smi else None
    if torch is not None and not kw.get("n_gpus"):
        smi = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
        if smi:
            why = (
                "torch is a CPU-only build"
                if not kw.get("torch_cuda")
                else "torch cannot reach it (driver too old for its CUDA?)"
            )
            notes.append(f"nvidia-smi sees {smi.splitlines()[0].strip()}, but {why}: the chapters will run on the CPU")
    if packages.get("jupyterlab") and not packages.get("jupyterlab-myst"):
        notes.append(
            "JupyterLab without jupyterlab-myst shows the prose's {eval} roles and admonitions raw: pip install jupyterlab-myst"
        )
    if packages.get("jupyterlab") and packages.get("jupyterlab-myst"):
        note = lab_windowing_note(*lab_windowing())
        if note:
            notes.append(note)
    kw["nvcc"] = _nvcc_version()
    kw["nvrtc"] = importlib.util.find_spec("cuda") is not None and _find("cuda.bindings.nvrtc")
    kw["c_compiler"] = bool(shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang"))
    kw["occupancy_header"] = _occupancy_header()
    return Machine(python=platform.python_version(), packages=packages, notes=tuple(notes), **kw)


def _find(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _occupancy_header() -> bool:
    """cuda_occupancy.h, as the SIMT chapter looks for it (the CUDA toolkit or Triton's backend)."""
    try:
        from .experiments import simt_cuda

        return simt_cuda.occupancy_header_path() is not None
    except Exception:
        return False


def gpu_facts(name: str) -> dict:
    """vendor, arch, memory and source of a GPU by name: the catalog first, then :data:`EXTRA_GPUS`."""
    from . import hardware

    if isinstance(name, str):
        try:
            g = hardware.get_gpu(name)
        except ValueError:
            g = None
        if g is not None:
            return dict(
                name=g.name,
                vendor=g.vendor,
                arch=g.arch,
                memory_bytes=int(g.memory_bytes),  # what the device reports as usable where known
                source="widgets.hardware catalog",
            )
        for key, facts in EXTRA_GPUS.items():
            if key.lower() == name.lower():
                return dict(name=key, **facts)
    known = [
        *hardware.gpu_names(),
        *(k for k in EXTRA_GPUS if k.lower() not in {n.lower() for n in hardware.gpu_names()}),
    ]
    raise ValueError(f"as_gpu must be one of {', '.join(known)}; got {name!r}")


def simulate(name: str, gpus: int = 1, base: Optional[Machine] = None) -> Machine:
    """The machine a reader with ``gpus`` x ``name`` would have, with the book's requirements
    installed (torch with CUDA or ROCm and NCCL/RCCL, Triton, numba-cuda and its NVRTC; nvcc not assumed)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(f"gpus must be an integer >= 1, got {gpus!r}")
    facts = gpu_facts(name)
    base = base or Machine()
    packages = dict(base.packages)
    for dist in (
        "numpy",
        "torch",
        "triton",
        "numba",
        "numba-cuda",
        "cuda-bindings",
        "plotly",
        "myst-nb",
        "ipywidgets",
        "ipykernel",
    ):
        packages[dist] = packages.get(dist) or "assumed"
    nvidia = facts["vendor"] == "NVIDIA"
    return replace(
        base,
        packages=packages,
        gpu_name=facts["name"],
        vendor=facts["vendor"],
        arch=facts["arch"],
        total_bytes=facts["memory_bytes"],
        free_bytes=facts["memory_bytes"],
        n_gpus=gpus,
        torch_cuda=base.torch_cuda or "assumed",
        driver=None,
        nccl="assumed",
        gloo=True,
        nvrtc=nvidia,
        simulated=True,
        notes=(
            f"simulated: {gpus} x {facts['name']} ({facts['source']}), the book's requirements installed, the GPU idle",
        ),
    )


# --------------------------------------------------------------------------------------------
# What each chapter can do there
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    chapter: str
    status: str  # "full" | "scaled" | "needs"
    scaled: tuple = ()  # parts made smaller, moved to the CPU or left out, each with its reason
    needs: tuple = ()  # what is missing to run at all
    caveats: tuple = ()  # runs, but outside what the book has tested

    @property
    def runs(self) -> bool:
        return self.status != "needs"

    def text(self) -> str:
        if self.status == "needs":
            head = "needs " + "; ".join(self.needs)
        elif self.status == "scaled":
            head = "runs, scaled down: " + "; ".join(self.scaled)
        else:
            head = "runs fully"
        return head + ("" if not self.caveats else " (" + "; ".join(self.caveats) + ")")


def serving_gpu_bytes(layers: int = SERVING_LAYERS) -> float:
    """Device memory the serving chapter's GPU run needs [B] with the decoder cut to ``layers``
    layers: its bf16 weights plus the largest KV cache it allocates, with :data:`SERVING_HEADROOM`."""
    from .models import llms, transformer

    cfg = llms.LLAMA_3_70B.with_layers(layers)
    weights = transformer.weight_bytes(cfg.params, 2)
    gqa = cfg.kv_bytes_per_token(2) * SERVING_MAX_KV_TOKENS
    mha = transformer.kv_cache_bytes_per_token(cfg.layers, cfg.heads, cfg.head_dim, 2) * SERVING_MHA_TOKENS
    return (weights + max(gqa, mha)) * SERVING_HEADROOM


def serving_layers(free_bytes: Optional[float]) -> int:
    """How many of the decoder's :data:`SERVING_LAYERS` layers the serving experiment builds on a GPU
    with ``free_bytes`` free: the most that fit (:func:`serving_gpu_bytes`), 0 when not even one does.
    ``widgets.experiments.serving`` sizes its decoder with this (a 15 GiB T4: 1 layer; a 24 GB L4: 2;
    80 GB and up: all 4). ``None`` (free memory unknown) assumes the whole decoder fits."""
    if free_bytes is None:
        return SERVING_LAYERS
    fits = [n for n in range(1, SERVING_LAYERS + 1) if serving_gpu_bytes(n) <= free_bytes]
    return max(fits, default=0)


# The training-memory chapter's GPU run (widgets/experiments/training_memory.py): a GPT-style decoder
# 2048 wide, 16 heads, 2048 tokens, a 32000-token vocabulary and up to TRAINING_SHAPE["layers"] layers
# (1.1e9 parameters), trained with mixed-precision AdamW at micro-batches up to TRAINING_MAX_BATCH; it
# keeps as many layers as fit in TRAINING_FREE_FRACTION of free memory, then halves the sequence.
TRAINING_SHAPE = {"hidden": 2048, "heads": 16, "seq": 2048, "vocab": 32000, "layers": 20}
TRAINING_MAX_BATCH = 4
TRAINING_FREE_FRACTION = 0.6


def training_shape(free_bytes: Optional[float]) -> Optional[dict]:
    """The shape of the training experiment's model on a GPU with ``free_bytes`` free (the most
    layers of ``TRAINING_SHAPE`` whose 16 bytes per parameter and activations at micro-batch
    ``TRAINING_MAX_BATCH`` fit in ``TRAINING_FREE_FRACTION`` of it, the sequence halved down to 256
    tokens if not even one layer does), or None when nothing fits. ``None`` free memory: the full shape.
    ``widgets.experiments.training_memory`` sizes its model with this."""
    from .models import training_memory as tm

    shape = dict(TRAINING_SHAPE)
    if free_bytes is None:
        return shape
    while shape["seq"] >= 256:
        h, v, s = shape["hidden"], shape["vocab"], shape["seq"]
        for layers in range(TRAINING_SHAPE["layers"], 0, -1):
            params = tm.gpt_params(layers, h, v, s)
            need = tm.training_state_bytes(params) + tm.activation_bytes(s, TRAINING_MAX_BATCH, h, shape["heads"], layers, v)
            if need <= TRAINING_FREE_FRACTION * free_bytes:
                shape["layers"] = layers
                return shape
        shape["seq"] //= 2
    return None


def _gib(nbytes: float) -> str:
    return f"{nbytes / GiB:.1f} GiB"


def chapter_verdicts(m: Machine) -> list[Verdict]:
    """One :class:`Verdict` per chapter for machine ``m`` (the rules, read from the experiments)."""
    if not isinstance(m, Machine):
        raise ValueError(f"m must be a Machine (from probe() or simulate()), got {type(m).__name__}")
    out = []
    for chapter in CHAPTERS:
        missing = [d for d in CHAPTER_NEEDS[chapter] if not m.has(d)]
        if missing:
            out.append(Verdict(chapter, "needs", needs=(f"{', '.join(missing)} ({INSTALL_HINT})",)))
            continue
        scaled, needs, caveats = _RULES[chapter](m, capabilities(m.arch if m.nvidia else None, m.vendor))
        status = "needs" if needs else ("scaled" if scaled else "full")
        out.append(Verdict(chapter, status, tuple(scaled), tuple(needs), tuple(caveats)))
    return out


def _cpu_note(what: str) -> str:
    return f"{what} (no GPU: runs on the CPU at small sizes)"


def _memory_hierarchy(m: Machine, cap: dict):
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("bandwidth, working-set and strided sweeps in Triton's interpreter"))
        return scaled, needs, caveats
    if not m.nvidia:
        caveats.append(f"Triton on {m.vendor} GPUs is untested here")
    elif m.cc < (8, 0):
        caveats.append(f"Triton supports sm_80 and newer; its fp32 load kernels on {m.arch} are untested here")
    if not m.has("cupy"):
        scaled.append("the L2 fetch-granularity query left out (needs cupy)")
    return scaled, needs, caveats


def _simt(m: Machine, cap: dict):
    from .models import simt as simt_model

    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(
            _cpu_note("latency and divergence kernels in numba-cuda's simulator; launch and Amdahl on the host")
        )
        if not (m.c_compiler and m.occupancy_header):
            scaled.append(
                "the occupancy comparison left out (needs cuda_occupancy.h, shipped with Triton or CUDA, and a C compiler)"
            )
        else:
            scaled.append("occupancy answered by NVIDIA's calculator (cuda_occupancy.h) for sm_90, not by a driver")
        scaled.append("bandwidth against occupancy shown for one simulated SM")
        return scaled, needs, caveats
    if not m.nvidia:
        needs.append("an NVIDIA GPU (CUDA C and numba-cuda kernels), or no GPU (then it runs on the CPU)")
        return scaled, needs, caveats
    if not (m.nvcc or m.nvrtc):
        needs.append("a CUDA C compiler: nvcc (the CUDA toolkit) or NVRTC (pip install cuda-bindings)")
    if m.arch not in simt_model.ARCHS:
        have = ", ".join(simt_model.ARCHS)
        scaled.append(
            f"the occupancy model has no {m.arch} rules (it has {have}): the driver's answers are shown without the model's"
        )
    return scaled, needs, caveats


def _tensor_cores(m: Machine, cap: dict):
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("GEMMs at n = 256, Triton GEMM in the interpreter in fp16; no tf32 or fp8"))
        return scaled, needs, caveats
    if not m.nvidia:
        caveats.append(f"tensor-core rules for {m.vendor} GPUs are not in the doctor; untested here")
        return scaled, needs, caveats
    if not cap["fp16_tc"]:
        needs.append(f"tensor cores (sm_70 or newer; this GPU is {m.arch})")
    # what widgets.experiments.tensor_cores.dtype_plan and gemm_dtype do with the same rules
    # (tests/test_capabilities.py checks that the two agree for every catalog GPU)
    if not cap["bf16_tc"]:
        scaled.append(
            f"bf16 and tf32 rows left out (bf16 and tf32 tensor cores need sm_80; this GPU is {m.arch}): the shape "
            "sweep and the Triton GEMMs run in fp16, the precision experiment emulates bf16 and tf32"
        )
        caveats.append(f"Triton GEMMs on {m.arch} are untested here (Triton's tested path is sm_80 and newer; they fail soft)")
    if not cap["fp8_tc"]:
        scaled.append(f"fp8 rows left out (fp8 tensor cores need sm_89; this GPU is {m.arch})")
    return scaled, needs, caveats


def _kernels(m: Machine, cap: dict):
    # what widgets.experiments.kernels.measure_ladder does: CUDA C compiled at run time (nvcc or
    # NVRTC) and loaded through the CUDA driver API on an NVIDIA GPU; numpy emulation elsewhere
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("the ladder's tiling emulated in numpy at 33 x 35 x 37, host-clock timing only; the H200 record is shown"))
        return scaled, needs, caveats
    if not m.nvidia:
        scaled.append(f"the CUDA C ladder needs an NVIDIA GPU (this is a {m.vendor} GPU): numpy emulation instead; timing runs")
        return scaled, needs, caveats
    if not cap["bf16_tc"]:
        scaled.append(f"the Triton tensor-core rung left out (bf16/tf32 tensor cores need sm_80; this GPU is {m.arch})")
    if not (m.nvcc or m.nvrtc):
        needs.append("a CUDA C compiler for the ladder: nvcc (the CUDA toolkit) or NVRTC (pip install cuda-bindings)")
    return scaled, needs, caveats


def _collectives(m: Machine, cap: dict):
    scaled, needs, caveats = [], [], []
    if m.gpu and m.n_gpus >= 2 and m.nccl:  # the experiment's plan(): NCCL when torch sees 2+ GPUs and has NCCL
        if not m.nvidia:
            caveats.append(f"NCCL's {m.vendor} counterpart (RCCL) is untested here")
        return scaled, needs, caveats
    if not m.gloo:
        needs.append("torch.distributed with the gloo backend")
        return scaled, needs, caveats
    why = "one GPU" if m.n_gpus == 1 else "no GPU" if not m.gpu else f"{m.n_gpus} GPUs but no NCCL in this torch"
    scaled.append(
        f"collectives run on the CPU with gloo, 4 processes, up to 2 MiB ({why}; NCCL across 2+ GPUs runs them fully)"
    )
    return scaled, needs, caveats


def _serving(m: Machine, cap: dict):
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("a 4M-parameter decoder in fp32, no CUDA graphs, no Triton"))
        return scaled, needs, caveats
    have = m.free_bytes if m.free_bytes is not None else m.total_bytes
    layers = serving_layers(have)  # what widgets.experiments.serving builds (tests/test_capabilities.py)
    if layers == 0:
        needs.append(
            f"about {_gib(serving_gpu_bytes(1))} of free GPU memory for one layer of the Llama-3-70B-shaped decoder in "
            f"16-bit and its largest KV cache; this GPU has {_gib(have)}"
        )
    elif layers < SERVING_LAYERS:
        scaled.append(
            f"the Llama-3-70B-shaped decoder cut to {layers} of its {SERVING_LAYERS} layers to fit {_gib(have)} "
            f"(all {SERVING_LAYERS} need about {_gib(serving_gpu_bytes())})"
        )
    if m.nvidia and not cap["bf16_tc"]:
        scaled.append(f"the decoder runs in fp16, not bf16 (bf16 tensor cores need sm_80; this GPU is {m.arch})")
    if not m.nvidia:
        caveats.append(f"CUDA graphs and the Triton skinny matmul are untested on {m.vendor} GPUs")
    return scaled, needs, caveats


def _training_memory(m: Machine, cap: dict):
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("a 2-layer, 64-wide GPT in bf16, no allocator counts, no out-of-memory search"))
        return scaled, needs, caveats
    have = m.free_bytes if m.free_bytes is not None else m.total_bytes
    shape = training_shape(have)
    full = TRAINING_SHAPE
    if shape is None:
        needs.append(f"more free GPU memory for one layer of the 2048-wide GPT at 256 tokens; this GPU has {_gib(have)}")
    elif shape != full:
        scaled.append(f"the GPT cut to {shape['layers']} of its {full['layers']} layers at {shape['seq']} tokens to fit {_gib(have)}")
    if m.nvidia and not cap["bf16_tc"]:
        scaled.append(f"the model trains in fp16 with a loss scaler (torch.amp.GradScaler), not bf16 "
                      f"(bf16 tensor cores need sm_80; this GPU is {m.arch})")
    return scaled, needs, caveats


def _attention(m: Machine, cap: dict):
    # what widgets.experiments.attention does: Triton kernels (interpreted on a CPU), SDPA's backends
    scaled, needs, caveats = [], [], []
    if not m.gpu:
        scaled.append(_cpu_note("the Triton kernels through Triton's interpreter in fp16 at N <= 256; SDPA's CPU backends"))
        return scaled, needs, caveats
    if m.nvidia and not cap["bf16_tc"]:
        scaled.append(f"fp16 instead of bf16, and SDPA's flash backend refuses (it needs sm_80; this GPU is {m.arch}): recorded as refused")
    if not m.nvidia:
        caveats.append(f"the Triton kernels and SDPA's fused backends are untested on {m.vendor} GPUs")
    return scaled, needs, caveats


_RULES = {
    "memory_hierarchy": _memory_hierarchy,
    "simt": _simt,
    "tensor_cores": _tensor_cores,
    "kernels": _kernels,
    "collectives": _collectives,
    "training_memory": _training_memory,
    "serving": _serving,
    "attention": _attention,
}


def chapter_line(chapter: str, machine: Optional[Machine] = None) -> str:
    """One sentence for a chapter's first cell: what this machine (or ``machine``) can run of it.

    >>> chapter_line("collectives", simulate("H200-SXM", gpus=2))
    'On 2 x H200-SXM (simulated) this chapter runs fully. Whole table: python -m widgets.doctor'
    """
    if chapter not in CHAPTERS:
        raise ValueError(f"chapter must be one of {', '.join(CHAPTERS)}; got {chapter!r}")
    m = machine if machine is not None else probe()
    v = next(x for x in chapter_verdicts(m) if x.chapter == chapter)
    where = f"{m.n_gpus} x {m.gpu_name}" if m.gpu else "this machine (no GPU)"
    if m.simulated:
        where += " (simulated)"
    return f"On {where} this chapter {v.text()}. Whole table: python -m widgets.doctor"


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------
def machine_rows(m: Machine) -> list[tuple[str, str]]:
    """(item, value) rows describing ``m``."""

    def v(dist):
        return m.packages.get(dist) or "not installed"

    cap = capabilities(m.arch if m.nvidia else None, m.vendor)
    rows = [("Python", m.python + ("" if sys.version_info >= (3, 11) or m.simulated else " (the book needs 3.11+)"))]
    rows += [(d, v(d)) for d in ("numpy", "plotly", "myst-nb")]
    rows.append(("front end", ", ".join(f"{d} {v(d)}" for d in FRONT_END)))
    rows.append(("torch", f"{v('torch')}" + (f", CUDA {m.torch_cuda}" if m.torch_cuda else ", CPU build")))
    rows.append(("driver", m.driver or ("n/a" if not m.gpu else "unknown")))
    if m.gpu:
        cc = f"sm_{m.cc[0]}{m.cc[1]}" if m.cc else m.arch
        rows.append(("GPU", f"{m.n_gpus} x {m.gpu_name}, {cc}"))
        mem = (
            f"{_gib(m.free_bytes)} free of {_gib(m.total_bytes)}"
            if m.free_bytes is not None and m.total_bytes
            else "unknown"
        )
        rows.append(("GPU memory", mem))
        if m.nvidia:
            have = [k for k in ("fp16_tc", "bf16_tc", "tf32_tc", "fp8_tc") if cap[k]]
            rows.append(("tensor cores", ", ".join(k.split("_")[0] for k in have) or "none"))
            rows.append(("TMA / wgmma", f"{'yes' if cap['tma'] else 'no'} / {'yes' if cap['wgmma'] else 'no'}"))
    else:
        rows.append(("GPU", "none (chapters run scaled down on the CPU)"))
    rows.append(("Triton", v("triton")))
    rows.append(("numba-cuda", v("numba-cuda")))
    rows.append(("nvcc / NVRTC", f"{m.nvcc or 'not found'} / {'yes' if m.nvrtc else 'no'}"))
    rows.append(("NCCL", m.nccl or ("not in this torch" if m.has("torch") else "n/a")))
    for note in m.notes:
        rows.append(("note", note))
    return rows


def table(m: Machine, verdicts: list[Verdict]) -> str:
    rows = machine_rows(m) + [("", "")] + [(f"chapter {x.chapter}", x.text()) for x in verdicts]
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}".rstrip() for a, b in rows)


def as_dict(m: Machine, verdicts: list[Verdict]) -> dict:
    """The machine and its verdicts as plain JSON-able data."""
    machine = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(m).items()}
    machine["capabilities"] = capabilities(m.arch if m.nvidia else None, m.vendor)
    chapters = {
        v.chapter: {"status": v.status, "scaled": list(v.scaled), "needs": list(v.needs), "caveats": list(v.caveats)}
        for v in verdicts
    }
    return {"machine": machine, "chapters": chapters, "every_chapter_runs": all(v.runs for v in verdicts)}


def room(names, gpus: int = 1) -> tuple[str, bool]:
    """For an instructor planning a room: one row per chapter, one column per GPU in ``names``,
    each cell the verdict's first word (fully / scaled / NEEDS). Returns the text and whether every
    chapter runs on every GPU."""
    cols = []
    for name in names:
        m = simulate(name, gpus)
        cols.append((m.gpu_name, {v.chapter: v for v in chapter_verdicts(m)}))
    word = {"full": "fully", "scaled": "scaled", "needs": "NEEDS"}
    width = max(len(c) for c in CHAPTERS)
    heads = [n for n, _ in cols]
    lines = [f"{'chapter':<{width}}  " + "  ".join(f"{h:<13}" for h in heads).rstrip()]
    for c in CHAPTERS:
        lines.append(f"{c:<{width}}  " + "  ".join(f"{word[v[c].status]:<13}" for _, v in cols).rstrip())
    lines.append(f"({gpus} GPU{'s' if gpus != 1 else ''} each; python -m widgets.doctor --as NAME explains a column)")
    return "\n".join(lines), all(v.runs for _, vs in cols for v in vs.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m widgets.doctor", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--as",
        dest="as_gpu",
        metavar="GPU",
        action="append",
        help="answer for this GPU instead (a catalog name, e.g. T4); give it several times for a room plan",
    )
    ap.add_argument("--gpus", type=int, default=1, help="with --as: how many of them (default 1)")
    ap.add_argument(
        "--json", action="store_true", help="print the machine and the verdicts as JSON (e.g. to collect a class's)"
    )
    args = ap.parse_args(argv)
    if args.gpus != 1 and not args.as_gpu:
        ap.error("--gpus goes with --as (this machine's GPUs are counted, not given)")
    t0 = time.perf_counter()
    try:
        if args.as_gpu and len(args.as_gpu) > 1:
            text, ok = room(args.as_gpu, args.gpus)
            print(text)
            return 0 if ok else 1
        m = (
            simulate(
                args.as_gpu[0], args.gpus, base=Machine(packages={d: _version(d) for d in (*PACKAGES, *FRONT_END)})
            )
            if args.as_gpu
            else probe()
        )
    except ValueError as exc:
        ap.error(str(exc))
    verdicts = chapter_verdicts(m)
    ok = all(x.runs for x in verdicts)
    if args.json:
        print(json.dumps(as_dict(m, verdicts), indent=1))
        return 0 if ok else 1
    print(table(m, verdicts))
    print(f"\n{'every chapter runs' if ok else 'some chapters cannot run'} ({time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
