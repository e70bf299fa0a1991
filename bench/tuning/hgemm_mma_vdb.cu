// HGEMM on tensor cores with mma.sync: C[M,N] = A[M,K] @ B[K,N], row-major fp16 inputs, fp32
// accumulation, fp16 output. M any; N and K multiples of 8 (rows of 16 bytes, for cp.async).
// Launch: block 128 (4 warps), grid (cdiv(N,128), cdiv(M,128)); 48 KB static shared memory.
//
// A block computes a 128x128 tile of C; warp w its 64x64 quarter (rows (w/2)*64, cols
// (w%2)*64) as 4x8 m16n8k16 tiles = 128 fp32 accumulators per thread. K is walked 32 at a
// time through a 3-stage cp.async pipeline; the fragments are double-buffered, the one
// barrier per k tile sits between its two k16 steps (as in kernel.ptx).
// Shared tiles are XOR-swizzled in 16-byte chunks so that both the cp.async writes and the
// ldmatrix reads (8 rows x 16 bytes) hit 8 different 16-byte bank groups:
//   A stage: 128 rows x 64 B,  chunk c of row r at r*64  + ((c ^ ((r >> 1) & 3)) * 16)
//   B stage:  32 rows x 256 B, chunk c of row k at k*256 + ((c ^ (k & 7)) * 16)
#include <cuda_fp16.h>
#include <stdint.h>

#define BM 128
#define BN 128
#define BK 32
#define STAGES 3
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BK * BN * 2)

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    // src-size 0 zero-fills the 16 bytes: the matrix edge needs no separate path
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(128, 2)
hgemm_mma(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
          int M, int N, int K) {
    __shared__ __align__(128) unsigned char smem[STAGES * (A_STAGE_BYTES + B_STAGE_BYTES)];
    const uint32_t As = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t Bs = As + STAGES * A_STAGE_BYTES;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int wm = (warp >> 1) * 64, wn = (warp & 1) * 64;

    // global -> shared: A chunk i of this thread = row t/4 + 32i, k chunk t%4;
    //                   B chunk i = k row t/16 + 8i, n chunk t%16
    const int a_row = t >> 2, a_kc = t & 3;
    const int b_row = t >> 4, b_nc = t & 15;
    const uint32_t a_st = a_row * 64 + ((a_kc ^ ((a_row >> 1) & 3)) * 16);
    const uint32_t b_st = b_row * 256 + ((b_nc ^ (b_row & 7)) * 16);

    auto load_stage = [&](int stage, int k0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int r = bm + a_row + 32 * i, k = k0 + a_kc * 8;
            bool ok = r < M && k < K;
            cp_async16(As + stage * A_STAGE_BYTES + a_st + i * 2048,
                       ok ? A + (size_t)r * K + k : A, ok);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int k = k0 + b_row + 8 * i, c = bn + b_nc * 8;
            bool ok = k < K && c < N;
            cp_async16(Bs + stage * B_STAGE_BYTES + b_st + i * 2048,
                       ok ? B + (size_t)k * N + c : B, ok);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };

    // ldmatrix addresses: lane l gives row (l % 16) of the 16x16 block and chunk (l / 16)
    const int lr = lane & 15, lh = lane >> 4;
    const uint32_t a_ld0 = (wm + lr) * 64 + (((lh) ^ ((lr >> 1) & 3)) * 16);
    const uint32_t a_ld1 = (wm + lr) * 64 + (((2 + lh) ^ ((lr >> 1) & 3)) * 16);
    uint32_t b_ld[4];
#pragma unroll
    for (int nj = 0; nj < 4; ++nj)
        b_ld[nj] = lr * 256 + (((wn / 8 + nj * 2 + lh) ^ (lr & 7)) * 16);

    float acc[4][8][4] = {};
    const int ktiles = (K + BK - 1) / BK;
    // fragments of one k16 step of a stage: 4 A tiles (m16) and 4 B pairs (2 x n8)
    auto load_frags = [&](uint32_t (&a)[4][4], uint32_t (&b)[4][4], int stage, int ks) {
        const uint32_t a_base = As + stage * A_STAGE_BYTES, b_base = Bs + stage * B_STAGE_BYTES;
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) ldmatrix_x4(a[mi], a_base + (ks ? a_ld1 : a_ld0) + mi * 1024);
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) ldmatrix_x4_trans(b[nj], b_base + b_ld[nj] + ks * 4096);
    };
    auto mma_step = [&](const uint32_t (&a)[4][4], const uint32_t (&b)[4][4]) {
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
            for (int nj = 0; nj < 4; ++nj) {
                mma16816(acc[mi][2 * nj], a[mi], b[nj][0], b[nj][1]);
                mma16816(acc[mi][2 * nj + 1], a[mi], b[nj][2], b[nj][3]);
            }
    };
    // double-buffered fragments: a k16 step's ldmatrix go out before the previous step's mma;
    // the barrier sits between a tile's two steps, and tile kt+3 goes where tile kt was
    uint32_t a0[4][4], b0[4][4], a1[4][4], b1[4][4];
    load_stage(0, 0);
    load_stage(1, BK);
    load_stage(2, 2 * BK);
    asm volatile("cp.async.wait_group 2;\n" ::);
    __syncthreads();
    load_frags(a0, b0, 0, 0);
    for (int kt = 0; kt < ktiles; ++kt) {
        const int stage = kt % STAGES;
        load_frags(a1, b1, stage, 1);
        mma_step(a0, b0);
        asm volatile("cp.async.wait_group 1;\n" ::);
        __syncthreads();  // tile kt+1 visible to all; everyone is done with tile kt's stage
        load_stage(stage, (kt + 3) * BK);
        load_frags(a0, b0, (kt + 1) % STAGES, 0);
        mma_step(a1, b1);
    }
    asm volatile("cp.async.wait_group 0;\n" ::);

    // accumulator (mi, n8) holds rows g and g+8 of its 16x8 tile, columns 2*(lane%4) + {0,1}
    const int g = lane >> 2, q = (lane & 3) * 2;
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int n8 = 0; n8 < 8; ++n8) {
            int r = bm + wm + mi * 16 + g, c = bn + wn + n8 * 8 + q;
            if (c < N) {
                if (r < M)
                    *reinterpret_cast<__half2*>(C + (size_t)r * N + c) =
                        __floats2half2_rn(acc[mi][n8][0], acc[mi][n8][1]);
                if (r + 8 < M)
                    *reinterpret_cast<__half2*>(C + (size_t)(r + 8) * N + c) =
                        __floats2half2_rn(acc[mi][n8][2], acc[mi][n8][3]);
            }
        }
}
