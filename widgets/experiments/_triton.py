"""Import Triton so that its kernels run on a GPU, or through Triton's interpreter on a machine
without one (``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` is evaluated).

Experiment modules write ``from ._triton import triton, tl, INTERPRETED``.
"""

import os

import torch

INTERPRETED = not torch.cuda.is_available()
if INTERPRETED:
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

__all__ = ["triton", "tl", "INTERPRETED"]
