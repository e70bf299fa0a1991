// SGEMM C[M,N] = A[M,K] @ B[K,N], row-major float32, register-tiled (the classic 128x128x8
// design): a block of 256 threads computes a 128x128 tile of C, each thread an 8x8 sub-tile
// held in 64 registers. K is walked 8 at a time through two shared-memory buffers: the next
// tile's global loads are issued before the current tile's 512 FMAs, and stored to the other
// buffer after them, so one barrier per step suffices and the load latency hides behind math.
// A is stored transposed (As[k][m], rows padded to 132) so each thread reads its 8 A values
// with two 16-byte shared loads; B as Bs[k][n]. Any M, N, K (edges load zeros, stores are
// guarded). Launch: block 256, grid (cdiv(N,128), cdiv(M,128)).
#define BM 128
#define BN 128
#define BK 8
#define APAD 132

__global__ void __launch_bounds__(256, 2)
sgemm_128x128(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK][APAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    // global -> shared mapping: A: k = t%8, rows t/8 + 32i; B: k = t/32, cols t%32 + 32i
    const int a_k = t % 8, a_r = t / 8;
    const int b_k = t / 32, b_c = t % 32;
    // compute mapping: rows ty*4+{0..3} and 64+ty*4+{0..3}; cols likewise with tx
    const int tx = t % 16, ty = t / 16;

    float acc[8][8] = {};
    float pa[4], pb[4];

    auto load_tile = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int r = bm + a_r + 32 * i, k = k0 + a_k;
            pa[i] = (r < M && k < K) ? A[(size_t)r * K + k] : 0.0f;
            int c = bn + b_c + 32 * i, kb = k0 + b_k;
            pb[i] = (kb < K && c < N) ? B[(size_t)kb * N + c] : 0.0f;
        }
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            As[buf][a_k][a_r + 32 * i] = pa[i];
            Bs[buf][b_k][b_c + 32 * i] = pb[i];
        }
    };

    load_tile(0);
    store_tile(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tile(k0 + BK);  // in flight while we compute
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
            float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][64 + ty * 4]);
            float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
            float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + tx * 4]);
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) store_tile(buf ^ 1);  // the other buffer: everyone finished reading it
        __syncthreads();
        buf ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c < N) C[(size_t)r * N + c] = acc[i][j];
        }
    }
}
