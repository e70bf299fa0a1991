// C = A B with 16 x 16 tiles of A and B staged in shared memory (A: M x K, B: K x N, row-major)
__global__ void gemm_tiled_f32(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[16][16], Bs[16][16];
    int ty = threadIdx.y, tx = threadIdx.x;
    int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (r < M && k0 + tx < K) ? A[(size_t)r * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && c < N) ? B[(size_t)(k0 + ty) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (r < M && c < N) C[(size_t)r * N + c] = acc;
}
