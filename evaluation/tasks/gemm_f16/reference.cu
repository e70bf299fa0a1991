#include <cuda_fp16.h>
// C = A B with half A and B, float accumulation, half C; one thread per element of C
__global__ void gemm_f16(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}
