// C = A B: A is M x K, B is K x N, C is M x N, all row-major; one thread per element of C
__global__ void gemm_naive_f32(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)r * K + k] * B[(size_t)k * N + c];
    C[(size_t)r * N + c] = acc;
}
