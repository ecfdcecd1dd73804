"""Kernels: the fp32 matmul ladder's models and the statistics of timing a kernel (in progress)."""
