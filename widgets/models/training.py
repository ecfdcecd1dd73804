"""The training-memory models under the module name issue 17 gave them (``widgets.models.training``).

A thin alias: every function lives, is documented and is tested in :mod:`widgets.models.training_memory`
(the book names files by topic). Import from there in new code.

Explained in :ref:`training_memory` > The five buckets.
"""

from .training_memory import (  # noqa: F401
    activation_bytes_per_layer,
    mfu,
    training_flop,
    training_state_bytes,
    zero_state_bytes_per_gpu,
)

__all__ = ["training_state_bytes", "zero_state_bytes_per_gpu", "activation_bytes_per_layer", "training_flop", "mfu"]
