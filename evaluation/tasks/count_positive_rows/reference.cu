__global__ void count_positive_rows(const float* x, int* counts, int rows, int cols) {
    __shared__ int s[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    int c = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) c += x[(size_t)row * cols + j] > 0.0f;
    s[threadIdx.x] = c;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) counts[row] = s[0];
}
