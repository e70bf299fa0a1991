// y[i] = sum_k w[k] * x[i + k] for k in 0..K-1 ("valid": x has n + K - 1 entries), K = 9
__global__ void conv1d_valid_f32(const float* x, const float* w, float* y, int n, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += w[k] * x[i + k];
    y[i] = acc;
}
