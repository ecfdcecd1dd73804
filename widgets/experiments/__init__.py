"""Experiments: time real work on the reader's device and return typed results.

Each ``measure_*`` returns a frozen dataclass subclassing ``harness.Result`` (``to_record()`` is its
JSON, ``from_record(dict)`` reads it back typed). Each topic module ``widgets.experiments.<topic>``
exposes ``RESULTS`` (its record's type, e.g. ``SimtResults``) and ``run_all() -> RESULTS``, which
``python -m widgets.measure`` calls and records with provenance; ``widgets.book.setup(topic)`` reads
the committed reference back through ``RESULTS.from_record``. What runs is chosen from
``harness.capabilities()`` (compute capability, tensor-core dtypes, free memory, GPU count, NCCL),
never from the GPU's name.

The Triton interpreter switch lives here, in one place, and runs before anything in this package
can import ``triton``: on a machine without a CUDA device ``TRITON_INTERPRET=1`` is set, so every
``@triton.jit`` function (Triton's own ``tl.sum``, ``tl.cdiv``... included, which are decorated when
``triton`` is first imported) is built for the interpreter, whatever is called first
(``harness.provenance()``, a chapter's kernel, ``python -m widgets.measure``). An explicit
``TRITON_INTERPRET`` in the environment is respected.
"""

import os as _os
import sys as _sys


def _decide_triton_interpreter() -> tuple[bool, bool]:
    """(interpret, set_here): whether Triton runs interpreted, and whether this module set it."""
    set_by_user = _os.environ.get("TRITON_INTERPRET")
    if set_by_user is not None:
        return set_by_user.strip().lower() in ("1", "true", "yes", "on"), False
    import torch

    interpret = not torch.cuda.is_available()
    if interpret:
        _os.environ["TRITON_INTERPRET"] = "1"
    return interpret, interpret


_TRITON_WAS_IMPORTED = "triton" in _sys.modules
TRITON_INTERPRETED, _SET_HERE = _decide_triton_interpreter()
"""True when Triton kernels run through its interpreter (no CUDA device, or TRITON_INTERPRET=1)."""

TRITON_IMPORTED_TOO_EARLY: bool = _SET_HERE and _TRITON_WAS_IMPORTED
"""True when ``triton`` was imported before this package decided (e.g. ``import triton`` first in a
notebook): its own jit helpers are then compiled-mode objects and interpreted kernels that call
them fail. ``widgets.experiments._triton`` warns; restart and import ``widgets`` first."""

TOPICS = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "training_memory", "serving", "attention")
