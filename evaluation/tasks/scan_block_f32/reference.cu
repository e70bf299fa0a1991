// inclusive prefix sum of each row of up to 1024 floats: one block of 1024 threads per row,
// Hillis-Steele scan in shared memory
__global__ void scan_block_f32(const float* x, float* y, int rows, int cols) {
    __shared__ float s[1024];
    int row = blockIdx.x;
    if (row >= rows) return;
    int j = threadIdx.x;
    s[j] = j < cols ? x[(size_t)row * cols + j] : 0.0f;
    __syncthreads();
    for (int o = 1; o < 1024; o <<= 1) {
        float v = j >= o ? s[j - o] : 0.0f;
        __syncthreads();
        s[j] += v;
        __syncthreads();
    }
    if (j < cols) y[(size_t)row * cols + j] = s[j];
}
