"""Launch the chapter's strided-read kernel for Nsight Compute (run by memory_hierarchy_ncu.sh).

    python3 benchmarks/h200/memory_hierarchy_ncu_driver.py --stride 16 --n-elems 16777216

Launches ``strided_read_kernel`` twice with the chapter's launch configuration (BLOCK 4096, 8
warps): the first launch compiles and warms up, the script tells ncu to profile only the second
(``--launch-skip 1 --launch-count 1``).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from widgets.experiments.memory_hierarchy_kernels import strided_read_kernel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stride", type=int, required=True)
    ap.add_argument("--n-elems", type=int, required=True)
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--num-warps", type=int, default=8)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: nothing to profile", file=sys.stderr)
        return 2
    g = torch.Generator(device="cuda").manual_seed(0)
    src = torch.rand(a.n_elems * a.stride, generator=g, device="cuda")
    n_programs = -(-a.n_elems // a.block)
    partial = torch.empty(n_programs, device="cuda", dtype=torch.float32)
    for _ in range(2):
        strided_read_kernel[(n_programs,)](src, partial, a.n_elems, a.stride, BLOCK=a.block, num_warps=a.num_warps)
    torch.cuda.synchronize()
    expected = src[:: a.stride][: a.n_elems].double().sum().item()
    got = partial.double().sum().item()
    if abs(got - expected) > 1e-3 * abs(expected):
        print(f"wrong sum: {got} vs {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
