"""Nsight Compute, read the same way by every chapter that profiles: what each warp state means, the
name of the counters that hold them, and the check every counter read from a record passes.

The SIMT chapter introduces the warp states (its section 9, with the reduction kernels); the kernels
chapter reads them for its GEMM ladder. Both take the meanings from :data:`STALL_MEANINGS`, so the
two chapters cannot describe one state in two ways.
"""

from __future__ import annotations

import math
import re

# Nsight Compute's warp states (the Kernel Profiling Guide, "Warp Stall Reasons"; cited in the book as
# simt_nsight_compute): what a warp was doing in a cycle of the cycles between two of its instructions,
# keyed as in the counter names (STALL_METRIC). ``selected`` is the cycle of the issue itself. Two keys
# differ from the Guide's list: ``no_instruction`` (the Guide's PC-sampling name is no_instructions) and
# Hopper's ``gmma``, which the Guide describes as the warpgroup-arrive state (WARPGROUP.ARRIVES or
# WARPGROUP.WAIT; a pairing inferred from Nsight Compute's own Warpgroup Arrive rule, which reads this counter).
# Ordered from the states the book's kernels show most to the rare ones (the kernels chapter's legend
# lists them in this order).
STALL_MEANINGS = {
    "lg_throttle": "waiting for room in the queue of local and global memory instructions to L1",
    "long_scoreboard": "waiting for the result of an L1TEX operation (a global, local, surface or texture access)",
    "mio_throttle": "waiting for room in the MIO queue (shared memory, special math, dynamic branches)",
    "short_scoreboard": ("waiting for the result of an MIO operation (shared memory, special math, a dynamic branch, a shuffle "
                         "or special-register read) or of an indexed constant load"),
    "barrier": "waiting at a block-wide barrier (__syncthreads) for the block's other warps",
    "not_selected": "ready, but passed over for another warp's instruction",
    "selected": "issuing an instruction",
    "wait": "waiting on a fixed-latency dependency (an arithmetic result whose latency the compiler knows and waits out)",
    "dispatch_stall": "ready, but the dispatcher held the instruction back (a pipeline or other conflict)",
    "math_pipe_throttle": "waiting for the math pipe it needs to be free",
    "no_instruction": "waiting for an instruction fetch or on an instruction-cache miss",
    "branch_resolving": "waiting for a branch target to be computed and the program counter updated",
    "drain": "waiting at its exit for its outstanding memory operations (in practice stores and atomics) to complete",
    "membar": "waiting at a memory barrier (fence)",
    "imc_miss": "waiting on a miss in the immediate-constant cache (the constant-bank operands of an instruction)",
    "misc": "stalled for other reasons",
    "sleeping": "asleep (nanosleep, or every thread yielded or blocked)",
    "tex_throttle": "waiting for room in the texture queue",
    "gmma": ("waiting at a warpgroup arrive or wait (wgmma.fence, wgmma.wait_group): for the warpgroup's other warps, "
             "or for its asynchronous wgmma to finish"),
}

# The two units the states name (the Guide's L1TEX and MIO Throttle entries and its units table), one gloss for both chapters.
UNIT_GLOSS = ("L1TEX is the SM's L1 data cache, which also holds shared memory: every global, local, surface and texture "
              "access goes through it, and a warp waiting for such a result is on the long scoreboard. MIO (memory "
              "input/output) is the instruction queue in front of the shared-memory, special-math and dynamic-branch "
              "(BRX, JMX) pipelines: a warp waiting for an MIO result, shared memory included, is on the short scoreboard.")

STALL_METRIC = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
"""The counter of one warp state: warps in that state per issued instruction; group 1 is the state."""


def stall_meaning(state: str) -> str:
    """What the warp state ``state`` (a key of :data:`STALL_MEANINGS`, as in the counter's name) means.

    >>> stall_meaning("barrier")
    "waiting at a block-wide barrier (__syncthreads) for the block's other warps"
    """
    if state not in STALL_MEANINGS:
        raise ValueError(f"unknown warp state {state!r}; Nsight Compute's are {sorted(STALL_MEANINGS)}")
    return STALL_MEANINGS[state]


def ncu_count(metrics, name: str, where: str, record: str):
    """Counter ``name`` of ``metrics`` (a record's dict of Nsight Compute values) as a float, or None
    where the record lacks it; a value that is not a finite number >= 0 raises ValueError naming
    ``record`` and the field (``where``)."""
    v = metrics.get(name) if isinstance(metrics, dict) else None
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{record} record field {where}.metrics[{name!r}] must be a finite number >= 0 or null, got {v!r}")
    return float(v)
