// C = u v^T: C[i, j] = u[i] * v[j], u has n entries, v has m
__global__ void outer_f32(const float* u, const float* v, float* C, int n, int m) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)n * m) return;
    C[i] = u[i / m] * v[i % m];
}
