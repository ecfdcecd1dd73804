#!/usr/bin/env bash
# The set-up doctor on a real GPU: `python -m widgets.doctor` probes this machine (torch, CUDA,
# driver, GPU, compute capability, free memory, Triton, numba-cuda, nvcc/NVRTC, GPUs, NCCL) and
# prints each chapter's verdict; then its tests run here, where the probe sees a GPU.
#
#   bash benchmarks/h200/doctor.sh            (from the repository root; writes $OUT/doctor_h200.txt)
#
# Expected on one H200 with the book's stack: "1 x NVIDIA H200, sm_90", every chapter "runs fully"
# except collectives (one GPU: gloo on the CPU) and memory_hierarchy's L2 fetch-granularity query
# if cupy is missing; exit status 0. Installs nothing.
set -uo pipefail

OUT="${OUT:-benchmarks/h200}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
{
  echo "# python -m widgets.doctor on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  "$PY" -m widgets.doctor
  echo "# exit status: $?"
  echo "# python -m widgets.doctor --as H200-SXM --gpus 2"
  "$PY" -m widgets.doctor --as H200-SXM --gpus 2 | tail -6
  echo "# tests/test_doctor.py and tests/test_notebooks.py on this machine"
  "$PY" -m pytest -q -p no:cacheprovider tests/test_doctor.py tests/test_notebooks.py 2>&1 | tail -15
} 2>&1 | tee "$OUT/doctor_h200.txt"
