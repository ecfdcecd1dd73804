"""Import Triton so that its kernels run on a GPU, or through Triton's interpreter on a machine
without one. The decision (``TRITON_INTERPRET=1`` before the first import of ``triton``) is made
once, in ``widgets/experiments/__init__.py``, which Python runs before this module.

Experiment modules write ``from ._triton import triton, tl, INTERPRETED``.
"""

import warnings

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from . import TRITON_IMPORTED_TOO_EARLY, TRITON_INTERPRETED

INTERPRETED = TRITON_INTERPRETED

if TRITON_IMPORTED_TOO_EARLY:
    warnings.warn(
        "triton was imported before widgets.experiments on a machine without a GPU, so Triton's "
        "interpreter is not fully active and kernels may fail ('Cannot call @triton.jit'd outside of "
        "the scope of a kernel'). Restart the kernel and import widgets before triton, or set "
        "TRITON_INTERPRET=1 before starting Python.",
        RuntimeWarning,
        stacklevel=2,
    )

__all__ = ["triton", "tl", "INTERPRETED"]
