// y[i] = sum_k w[k] * x[i + k - 2] for k in 0..4, x zero outside [0, n) ("same" padding)
__global__ void conv1d_k5_f32(const float* x, const float* w, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 5; ++k) {
        int j = i + k - 2;
        if (j >= 0 && j < n) acc += w[k] * x[j];
    }
    y[i] = acc;
}
