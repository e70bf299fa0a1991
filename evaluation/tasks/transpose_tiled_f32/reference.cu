// y = transpose(x): x is rows x cols, y is cols x rows; 32x32 tiles through shared memory,
// block (32, 8)
__global__ void transpose_tiled_f32(const float* x, float* y, int rows, int cols) {
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += 8) {
        int r = by + k, c = bx + threadIdx.x;
        if (r < rows && c < cols) tile[k][threadIdx.x] = x[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += 8) {
        int c = bx + k, r = by + threadIdx.x;
        if (r < rows && c < cols) y[(size_t)c * rows + r] = tile[threadIdx.x][k];
    }
}
