// y[r] = max of row r; x is rows x cols row-major, one block of 256 threads per row

// block-wide reduction of one value per thread (blockDim.x = 256)
__device__ float block_reduce(float v, float* s, bool is_max) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            float a = s[threadIdx.x], b = s[threadIdx.x + o];
            s[threadIdx.x] = is_max ? fmaxf(a, b) : a + b;
        }
        __syncthreads();
    }
    float r = s[0];
    __syncthreads();
    return r;
}

__global__ void row_max_f32(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float acc = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float v = xr[j]; acc = fmaxf(acc, v); }
    acc = block_reduce(acc, s, true);
    if (threadIdx.x == 0) y[row] = acc;
}
