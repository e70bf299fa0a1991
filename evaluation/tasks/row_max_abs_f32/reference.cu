__global__ void row_max_abs_f32(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    float m = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, fabsf(x[(size_t)row * cols + j]));
    s[threadIdx.x] = m;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + o]);
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = s[0];
}
