"""The fp32 matmul ladder in CUDA C, as Python strings compiled at run time (``simt_cuda.compile_cubin``:
nvcc when it is on the machine, else NVRTC), after Simon Boehm's worklog "How to Optimize a CUDA
Matmul Kernel for cuBLAS-like Performance" (2022), kernels 1-6 and 10.

Every kernel computes ``C = A @ B`` for row-major fp32 ``A`` (M x K), ``B`` (K x N), ``C`` (M x N)
of any size: loads past an edge read zeros (the tile is zero-padded) and stores past an edge are
skipped, so 127 x 131 x 129 is as correct as 4096 x 4096 x 4096. The grid is one-dimensional
(``gx`` tiles across N, ``blockIdx.x / gx`` is the tile row), launched by ``simt_cuda.Driver``.

Each rung's source is one string; :func:`source` adds one ``extern "C"`` entry point per tile
configuration (``-D``-free: a template instantiated per config), so one compilation makes every
config of a rung and a compile error loses one rung, not the ladder.
"""

from __future__ import annotations

from dataclasses import dataclass

ARGS = "const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K, int gx, int vec"

NAIVE = r"""
// Rung 1: one thread per output element. Lanes of a warp take consecutive ROWS of C, so each
// load of A is 32 addresses K floats apart (32 sectors per request) and each store strided.
extern "C" __global__ void __launch_bounds__(1024) sgemm_naive(ARGS) {
    const int row = (blockIdx.x / gx) * 32 + threadIdx.x % 32;
    const int col = (blockIdx.x % gx) * 32 + threadIdx.x / 32;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(long long)row * K + k] * B[(long long)k * N + col];
        C[(long long)row * N + col] = acc;
    }
}
"""

COALESCED = r"""
// Rung 2: the same work, lanes of a warp take consecutive COLUMNS: A is one broadcast address
// per warp, B and C are 128 contiguous bytes per warp (4 sectors, coalesced).
extern "C" __global__ void __launch_bounds__(1024) sgemm_coalesced(ARGS) {
    const int row = (blockIdx.x / gx) * 32 + threadIdx.x / 32;
    const int col = (blockIdx.x % gx) * 32 + threadIdx.x % 32;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(long long)row * K + k] * B[(long long)k * N + col];
        C[(long long)row * N + col] = acc;
    }
}
"""

SMEM = r"""
// Rung 3: a 32 x 32 tile of A and of B staged in shared memory, zero-padded past the edges;
// every element loaded from global memory is used 32 times from shared memory.
extern "C" __global__ void __launch_bounds__(1024) sgemm_smem(ARGS) {
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    const int tr = threadIdx.x / 32, tc = threadIdx.x % 32;
    const int row = (blockIdx.x / gx) * 32 + tr, col = (blockIdx.x % gx) * 32 + tc;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[tr][tc] = (row < M && k0 + tc < K) ? A[(long long)row * K + k0 + tc] : 0.0f;
        Bs[tr][tc] = (k0 + tr < K && col < N) ? B[(long long)(k0 + tr) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32; ++k) acc += As[tr][k] * Bs[k][tc];
        __syncthreads();
    }
    if (row < M && col < N) C[(long long)row * N + col] = acc;
}
"""

# Shared loaders for the tiled rungs: a BM x BK tile of A and a BK x BN tile of B, zeros past the
# edges. ``transpose`` stores A as As[k][m] (columns of the tile contiguous) for the vector rungs.
LOADERS = r"""
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void load_scalar(const float* __restrict__ A, const float* __restrict__ B,
        float* As, float* Bs, int M, int N, int K, int row0, int col0, int k0) {
#pragma unroll
    for (int i = threadIdx.x; i < BM * BK; i += NT) {
        const int r = i / BK, c = i % BK, gr = row0 + r, gc = k0 + c;
        As[r * BK + c] = (gr < M && gc < K) ? A[(long long)gr * K + gc] : 0.0f;
    }
#pragma unroll
    for (int i = threadIdx.x; i < BK * BN; i += NT) {
        const int r = i / BN, c = i % BN, gr = k0 + r, gc = col0 + c;
        Bs[r * BN + c] = (gr < K && gc < N) ? B[(long long)gr * N + gc] : 0.0f;
    }
}

// float4 loads (one 16-byte load per thread per step) where the whole vector is inside the matrix
// and rows are 16-byte aligned (vec != 0: K % 4 == 0 and N % 4 == 0), else four guarded loads.
// A is stored transposed: As[k * BM + m].
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void load_vec(const float* __restrict__ A, const float* __restrict__ B,
        float* As, float* Bs, int M, int N, int K, int row0, int col0, int k0, int vec) {
#pragma unroll
    for (int i = threadIdx.x; i < BM * BK / 4; i += NT) {
        const int r = i / (BK / 4), c = (i % (BK / 4)) * 4, gr = row0 + r, gc = k0 + c;
        float4 v;
        if (vec && gr < M && gc + 3 < K) {
            v = *reinterpret_cast<const float4*>(&A[(long long)gr * K + gc]);
        } else {
            v.x = (gr < M && gc + 0 < K) ? A[(long long)gr * K + gc + 0] : 0.0f;
            v.y = (gr < M && gc + 1 < K) ? A[(long long)gr * K + gc + 1] : 0.0f;
            v.z = (gr < M && gc + 2 < K) ? A[(long long)gr * K + gc + 2] : 0.0f;
            v.w = (gr < M && gc + 3 < K) ? A[(long long)gr * K + gc + 3] : 0.0f;
        }
        As[(c + 0) * BM + r] = v.x;
        As[(c + 1) * BM + r] = v.y;
        As[(c + 2) * BM + r] = v.z;
        As[(c + 3) * BM + r] = v.w;
    }
#pragma unroll
    for (int i = threadIdx.x; i < BK * BN / 4; i += NT) {
        const int r = i / (BN / 4), c = (i % (BN / 4)) * 4, gr = k0 + r, gc = col0 + c;
        float4 v;
        if (vec && gr < K && gc + 3 < N) {
            v = *reinterpret_cast<const float4*>(&B[(long long)gr * N + gc]);
        } else {
            v.x = (gr < K && gc + 0 < N) ? B[(long long)gr * N + gc + 0] : 0.0f;
            v.y = (gr < K && gc + 1 < N) ? B[(long long)gr * N + gc + 1] : 0.0f;
            v.z = (gr < K && gc + 2 < N) ? B[(long long)gr * N + gc + 2] : 0.0f;
            v.w = (gr < K && gc + 3 < N) ? B[(long long)gr * N + gc + 3] : 0.0f;
        }
        *reinterpret_cast<float4*>(&Bs[r * BN + c]) = v;
    }
}

// Store TN consecutive results of one row: a float4 store where allowed, else guarded scalars.
template <int TN>
__device__ __forceinline__ void store_row(float* __restrict__ C, const float* acc, int M, int N, int gr, int gc, int vec) {
    if (gr >= M) return;
#pragma unroll
    for (int n = 0; n < TN; n += 4) {
        if (vec && gc + n + 3 < N) {
            *reinterpret_cast<float4*>(&C[(long long)gr * N + gc + n]) = make_float4(acc[n], acc[n + 1], acc[n + 2], acc[n + 3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (n + j < TN && gc + n + j < N) C[(long long)gr * N + gc + n + j] = acc[n + j];
        }
    }
}
"""

BLOCKTILE_1D = r"""
// Rung 4: each thread computes TM outputs of one column (1D register blocking): one value of B
// read from shared memory serves TM multiply-adds.
template <int BM, int BN, int BK, int TM>
__device__ __forceinline__ void sgemm_1d(ARGS) {
    constexpr int NT = BM * BN / TM;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row0 = (blockIdx.x / gx) * BM, col0 = (blockIdx.x % gx) * BN;
    const int tcol = threadIdx.x % BN, trow = threadIdx.x / BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_scalar<BM, BN, BK, NT>(A, B, As, Bs, M, N, K, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + tcol];
#pragma unroll
            for (int m = 0; m < TM; ++m) acc[m] += As[(trow * TM + m) * BK + k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < TM; ++m) {
        const int gr = row0 + trow * TM + m, gc = col0 + tcol;
        if (gr < M && gc < N) C[(long long)gr * N + gc] = acc[m];
    }
}
"""

BLOCKTILE_2D = r"""
// Rung 5: each thread computes a TM x TN block of outputs (2D register blocking): TM + TN values
// read from shared memory serve TM * TN multiply-adds.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void sgemm_2d(ARGS) {
    constexpr int NT = (BM / TM) * (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row0 = (blockIdx.x / gx) * BM, col0 = (blockIdx.x % gx) * BN;
    const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
    float acc[TM * TN] = {0.0f};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_scalar<BM, BN, BK, NT>(A, B, As, Bs, M, N, K, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int m = 0; m < TM; ++m) ra[m] = As[(trow * TM + m) * BK + k];
#pragma unroll
            for (int n = 0; n < TN; ++n) rb[n] = Bs[k * BN + tcol * TN + n];
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m * TN + n] += ra[m] * rb[n];
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) {
            const int gr = row0 + trow * TM + m, gc = col0 + tcol * TN + n;
            if (gr < M && gc < N) C[(long long)gr * N + gc] = acc[m * TN + n];
        }
}
"""

VECTORIZED = r"""
// Rung 6: rung 5 with 16-byte (float4) loads from global and shared memory; A is transposed into
// shared memory so that a thread's TM values of A are contiguous too.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void sgemm_vec(ARGS) {
    constexpr int NT = (BM / TM) * (BN / TN);
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    const int row0 = (blockIdx.x / gx) * BM, col0 = (blockIdx.x % gx) * BN;
    const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
    float acc[TM * TN] = {0.0f};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_vec<BM, BN, BK, NT>(A, B, As, Bs, M, N, K, row0, col0, k0, vec);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int m = 0; m < TM; m += 4) *reinterpret_cast<float4*>(&ra[m]) = *reinterpret_cast<const float4*>(&As[k * BM + trow * TM + m]);
#pragma unroll
            for (int n = 0; n < TN; n += 4) *reinterpret_cast<float4*>(&rb[n]) = *reinterpret_cast<const float4*>(&Bs[k * BN + tcol * TN + n]);
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m * TN + n] += ra[m] * rb[n];
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < TM; ++m) store_row<TN>(C, &acc[m * TN], M, N, row0 + trow * TM + m, col0 + tcol * TN, vec);
}
"""

WARPTILE = r"""
// Rung 7: warp tiling. The block tile (BM x BN) is split into warp tiles (WM x WN); each warp
// walks its tile in WMITER x WNITER sub-tiles, each thread holding TM x TN outputs of every
// sub-tile, so a warp's shared-memory reads are contiguous and its registers are reused across
// sub-tiles. Vector loads as in rung 6.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT>
__device__ __forceinline__ void sgemm_warp_single(ARGS) {
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    static_assert((BM / WM) * (BN / WN) * 32 == NT, "one warp per warp tile");
    static_assert((WSUBN / TN) * (WSUBM / TM) == 32, "a warp's 32 threads cover one sub-tile");
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    const int row0 = (blockIdx.x / gx) * BM, col0 = (blockIdx.x % gx) * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    float acc[WMITER * TM * WNITER * TN] = {0.0f};
    float ra[WMITER * TM], rb[WNITER * TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_vec<BM, BN, BK, NT>(A, B, As, Bs, M, N, K, row0, col0, k0, vec);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int m = 0; m < TM; m += 4)
                    *reinterpret_cast<float4*>(&ra[wm * TM + m]) =
                        *reinterpret_cast<const float4*>(&As[k * BM + wrow * WM + wm * WSUBM + trow * TM + m]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int n = 0; n < TN; n += 4)
                    *reinterpret_cast<float4*>(&rb[wn * TN + n]) =
                        *reinterpret_cast<const float4*>(&Bs[k * BN + wcol * WN + wn * WSUBN + tcol * TN + n]);
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int m = 0; m < TM; ++m)
#pragma unroll
                        for (int n = 0; n < TN; ++n)
                            acc[(wm * TM + m) * (WNITER * TN) + wn * TN + n] += ra[wm * TM + m] * rb[wn * TN + n];
        }
        __syncthreads();
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int m = 0; m < TM; ++m)
                store_row<TN>(C, &acc[(wm * TM + m) * (WNITER * TN) + wn * TN], M, N,
                              row0 + wrow * WM + wm * WSUBM + trow * TM + m,
                              col0 + wcol * WN + wn * WSUBN + tcol * TN, vec);
}

// Double buffering (DB = 1): two shared-memory buffers; the next tile's global loads are issued into
// registers before this tile is computed and stored to the other buffer after it, so the loads'
// latency overlaps the multiply-adds, with one barrier per tile instead of two.
template <int BM, int BN, int BK, int NT>
struct TileRegs {
    float4 a[(BM * BK / 4 + NT - 1) / NT];
    float4 b[(BK * BN / 4 + NT - 1) / NT];
};

template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void fetch(const float* __restrict__ A, const float* __restrict__ B, TileRegs<BM, BN, BK, NT>& r,
        int M, int N, int K, int row0, int col0, int k0, int vec) {
#pragma unroll
    for (int j = 0; j < (BM * BK / 4 + NT - 1) / NT; ++j) {
        const int i = threadIdx.x + j * NT;
        if (i >= BM * BK / 4) break;
        const int rr = i / (BK / 4), c = (i % (BK / 4)) * 4, gr = row0 + rr, gc = k0 + c;
        float4 v;
        if (vec && gr < M && gc + 3 < K) {
            v = *reinterpret_cast<const float4*>(&A[(long long)gr * K + gc]);
        } else {
            v.x = (gr < M && gc + 0 < K) ? A[(long long)gr * K + gc + 0] : 0.0f;
            v.y = (gr < M && gc + 1 < K) ? A[(long long)gr * K + gc + 1] : 0.0f;
            v.z = (gr < M && gc + 2 < K) ? A[(long long)gr * K + gc + 2] : 0.0f;
            v.w = (gr < M && gc + 3 < K) ? A[(long long)gr * K + gc + 3] : 0.0f;
        }
        r.a[j] = v;
    }
#pragma unroll
    for (int j = 0; j < (BK * BN / 4 + NT - 1) / NT; ++j) {
        const int i = threadIdx.x + j * NT;
        if (i >= BK * BN / 4) break;
        const int rr = i / (BN / 4), c = (i % (BN / 4)) * 4, gr = k0 + rr, gc = col0 + c;
        float4 v;
        if (vec && gr < K && gc + 3 < N) {
            v = *reinterpret_cast<const float4*>(&B[(long long)gr * N + gc]);
        } else {
            v.x = (gr < K && gc + 0 < N) ? B[(long long)gr * N + gc + 0] : 0.0f;
            v.y = (gr < K && gc + 1 < N) ? B[(long long)gr * N + gc + 1] : 0.0f;
            v.z = (gr < K && gc + 2 < N) ? B[(long long)gr * N + gc + 2] : 0.0f;
            v.w = (gr < K && gc + 3 < N) ? B[(long long)gr * N + gc + 3] : 0.0f;
        }
        r.b[j] = v;
    }
}

template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void stash(const TileRegs<BM, BN, BK, NT>& r, float* As, float* Bs) {
#pragma unroll
    for (int j = 0; j < (BM * BK / 4 + NT - 1) / NT; ++j) {
        const int i = threadIdx.x + j * NT;
        if (i >= BM * BK / 4) break;
        const int rr = i / (BK / 4), c = (i % (BK / 4)) * 4;
        As[(c + 0) * BM + rr] = r.a[j].x;
        As[(c + 1) * BM + rr] = r.a[j].y;
        As[(c + 2) * BM + rr] = r.a[j].z;
        As[(c + 3) * BM + rr] = r.a[j].w;
    }
#pragma unroll
    for (int j = 0; j < (BK * BN / 4 + NT - 1) / NT; ++j) {
        const int i = threadIdx.x + j * NT;
        if (i >= BK * BN / 4) break;
        const int rr = i / (BN / 4), c = (i % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(&Bs[rr * BN + c]) = r.b[j];
    }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT>
__device__ __forceinline__ void sgemm_warp_double(ARGS) {
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    static_assert((BM / WM) * (BN / WN) * 32 == NT, "one warp per warp tile");
    static_assert((WSUBN / TN) * (WSUBM / TM) == 32, "a warp's 32 threads cover one sub-tile");
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int row0 = (blockIdx.x / gx) * BM, col0 = (blockIdx.x % gx) * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    float acc[WMITER * TM * WNITER * TN] = {0.0f};
    float ra[WMITER * TM], rb[WNITER * TN];
    TileRegs<BM, BN, BK, NT> next;
    fetch<BM, BN, BK, NT>(A, B, next, M, N, K, row0, col0, 0, vec);
    stash<BM, BN, BK, NT>(next, As[0], Bs[0]);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) fetch<BM, BN, BK, NT>(A, B, next, M, N, K, row0, col0, k0 + BK, vec);
        const float* as = As[buf];
        const float* bs = Bs[buf];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int m = 0; m < TM; m += 4)
                    *reinterpret_cast<float4*>(&ra[wm * TM + m]) =
                        *reinterpret_cast<const float4*>(&as[k * BM + wrow * WM + wm * WSUBM + trow * TM + m]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int n = 0; n < TN; n += 4)
                    *reinterpret_cast<float4*>(&rb[wn * TN + n]) =
                        *reinterpret_cast<const float4*>(&bs[k * BN + wcol * WN + wn * WSUBN + tcol * TN + n]);
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int m = 0; m < TM; ++m)
#pragma unroll
                        for (int n = 0; n < TN; ++n)
                            acc[(wm * TM + m) * (WNITER * TN) + wn * TN + n] += ra[wm * TM + m] * rb[wn * TN + n];
        }
        if (more) stash<BM, BN, BK, NT>(next, As[buf ^ 1], Bs[buf ^ 1]);
        __syncthreads();
        buf ^= 1;
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int m = 0; m < TM; ++m)
                store_row<TN>(C, &acc[(wm * TM + m) * (WNITER * TN) + wn * TN], M, N,
                              row0 + wrow * WM + wm * WSUBM + trow * TM + m,
                              col0 + wcol * WN + wn * WSUBN + tcol * TN, vec);
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int DB>
__device__ __forceinline__ void sgemm_warp(ARGS) {
    if constexpr (DB) sgemm_warp_double<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>(A, B, C, M, N, K, gx, vec);
    else sgemm_warp_single<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>(A, B, C, M, N, K, gx, vec);
}
"""


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder: its name, source, the template it instantiates (None: a plain
    kernel) and the configurations tried (tuples of the template's integer parameters)."""

    name: str
    title: str
    body: str
    template: str | None
    params: tuple[str, ...]
    configs: tuple[tuple[int, ...], ...]


RUNGS = (
    Rung("naive", "naive (uncoalesced)", NAIVE, None, (), ((),)),
    Rung("coalesced", "coalesced", COALESCED, None, (), ((),)),
    Rung("smem", "shared-memory tiles 32 x 32", SMEM, None, (), ((),)),
    Rung("blocktile_1d", "1D register blocking", BLOCKTILE_1D, "sgemm_1d", ("BM", "BN", "BK", "TM"),
         ((64, 64, 8, 8),)),
    Rung("blocktile_2d", "2D register blocking", BLOCKTILE_2D, "sgemm_2d", ("BM", "BN", "BK", "TM", "TN"),
         ((128, 128, 8, 8, 8), (64, 64, 8, 4, 4))),
    Rung("vectorized", "vectorized (float4) loads", VECTORIZED, "sgemm_vec", ("BM", "BN", "BK", "TM", "TN"),
         ((128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (64, 128, 16, 8, 8), (128, 64, 16, 8, 8))),
    Rung("warptile", "warp tiling", WARPTILE, "sgemm_warp", ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "NT", "DB"),
         ((128, 128, 16, 64, 64, 4, 8, 4, 128, 0),   # Boehm's kernel 10 configuration
          (128, 128, 16, 64, 32, 2, 8, 4, 256, 0),
          (128, 256, 16, 64, 64, 4, 8, 4, 256, 0),
          (64, 128, 16, 32, 64, 2, 8, 4, 128, 0),
          (128, 128, 16, 64, 32, 1, 8, 8, 256, 0),
          (64, 128, 16, 32, 64, 1, 4, 4, 128, 0),   # Boehm's A100 setting
          (128, 128, 16, 64, 32, 2, 8, 4, 256, 1),  # DB = 1: double-buffered shared memory
          (128, 128, 16, 64, 32, 1, 8, 8, 256, 1),
          (128, 128, 8, 64, 64, 4, 8, 4, 128, 1),
          # the three fastest of 105 configurations tried on the H200 by benchmarks/h200/kernels_warptile_sweep.py
          # (benchmarks/h200/kernels_warptile_sweep.json): 256 threads, 128 x 256 or 256 x 128 tiles, double-buffered
          (128, 256, 16, 32, 128, 1, 8, 8, 256, 1),
          (128, 256, 16, 128, 32, 2, 8, 4, 256, 1),
          (256, 128, 16, 128, 32, 1, 4, 8, 256, 1))),
)
"""The CUDA-core rungs in order, with the tile configurations tried at run time (3-6 for the best rungs)."""

PLAIN_THREADS = 1024
PLAIN_TILE = 32


def kernel_name(rung: Rung, config: tuple[int, ...]) -> str:
    """The ``extern "C"`` name of ``rung`` at ``config`` (``sgemm_smem``, ``sgemm_vec_128_128_8_8_8``)."""
    if rung.template is None:
        return f"sgemm_{rung.name}"
    return rung.template + "_" + "_".join(str(v) for v in config)


def threads_per_block(rung: Rung, config: tuple[int, ...]) -> int:
    """Threads in one block of ``rung`` at ``config``."""
    p = dict(zip(rung.params, config))
    if rung.template is None:
        return PLAIN_THREADS
    if "NT" in p:
        return p["NT"]
    if "TN" in p:
        return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return p["BM"] * p["BN"] // p["TM"]


def tile(rung: Rung, config: tuple[int, ...]) -> tuple[int, int]:
    """The (BM, BN) output tile one block computes."""
    if rung.template is None:
        return PLAIN_TILE, PLAIN_TILE
    p = dict(zip(rung.params, config))
    return p["BM"], p["BN"]


def source(rung: Rung) -> str:
    """The full CUDA C source of ``rung``: loaders, the kernel body and one entry point per config."""
    parts = [LOADERS if rung.template else "", rung.body]
    for config in rung.configs if rung.template else ():
        nt = threads_per_block(rung, config)
        args = ", ".join(str(v) for v in config)
        parts.append(
            f'extern "C" __global__ void __launch_bounds__({nt}) {kernel_name(rung, config)}(ARGS) '
            f"{{ {rung.template}<{args}>(A, B, C, M, N, K, gx, vec); }}\n"
        )
    return "\n".join(parts).replace("ARGS", ARGS)


# The tiny kernel of the cubin patch (benchmarks/h200/kernels_binary.py and the chapter): one
# floating-point immediate, 3.0f, that the compiler puts into the FMUL instruction itself.
TIMES3 = r"""
extern "C" __global__ void times3(float* __restrict__ out, const float* __restrict__ x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * 3.0f;
}
"""
