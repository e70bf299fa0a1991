__global__ void normalize_rows_f32(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += xr[j] * xr[j];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    float inv = 1.0f / (sqrtf(s[0]) + 1e-6f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(size_t)row * cols + j] = xr[j] * inv;
}
