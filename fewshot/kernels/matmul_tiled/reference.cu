// Matmul: C[M,N] = A[M,K] @ B[K,N], row-major float32, 16x16 tiles staged in shared memory.
// Launch: block (16,16), grid (ceil(N/16), ceil(M/16)). Any M, N, K (edges are zero-padded).
#define TILE 16
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        // every thread loads one element of each tile; out-of-range elements load 0
        As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // nobody overwrites a tile another thread still reads
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
