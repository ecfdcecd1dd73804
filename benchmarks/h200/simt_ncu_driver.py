"""Launch one of the SIMT chapter's reduction kernels for Nsight Compute (run by simt_ncu.sh).

    python3 benchmarks/h200/simt_ncu_driver.py --kernel reduce_smem_tree --n-elems 67108864

Compiles widgets.experiments.simt_warp.REDUCE_SOURCE for the local GPU, launches the kernel
twice exactly as ``measure_reductions`` does (256 threads per block; the grid-stride kernel with
4 blocks per SM), checks the sum, and exits; ncu profiles the second launch only.
"""

import argparse
import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from widgets.experiments import simt_cuda as sc  # noqa: E402
from widgets.experiments import simt_warp as w  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True, choices=[f"reduce_{v}" for v in w.REDUCE_VARIANTS])
    ap.add_argument("--n-elems", type=int, default=1 << 26)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: nothing to profile", file=sys.stderr)
        return 2
    drv = sc.Driver()
    cubin, _, _ = w.compile_with_report(w.REDUCE_SOURCE, drv.arch())
    func = drv.load(cubin, a.kernel)
    sms = drv.device_attribute("multiprocessor_count")
    n = a.n_elems // 4 * 4
    if a.kernel == "reduce_atomic_thread":
        n = min(n, w.ATOMIC_THREAD_ELEMS)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randint(0, 2, (n,), generator=g, device="cuda").float()
    out = torch.zeros(1, device="cuda")
    t = w.REDUCE_THREADS
    if a.kernel == "reduce_grid_stride":
        grid, count = sms * w.GRID_STRIDE_BLOCKS_PER_SM, n // 4
    else:
        grid, count = -(-n // t), n
    smem = t * 4 if a.kernel == "reduce_smem_tree" else 0
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(2):
        out.zero_()
        drv.launch(func, grid, t, smem, [x.data_ptr(), out.data_ptr(), ctypes.c_longlong(count)], stream)
    torch.cuda.synchronize()
    got, want = float(out.item()), float(x.double().sum())
    if abs(got - want) > 1e-5 * max(want, 1.0):
        print(f"wrong sum: {got} vs {want}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
