// Reduction: y[row] = sum of x[row, 0:cols], one block per row (row-major x).
// blockDim.x must be a multiple of 32 and at most 1024.
__global__ void row_sum(const float* x, float* y, int rows, int cols) {
    __shared__ float warp_sums[32];
    int row = blockIdx.x;
    if (row >= rows) return;  // uniform over the block, so safe before __syncthreads
    const float* xr = x + (size_t)row * cols;

    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];

    // reduce within each warp with shuffles
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffff, s, off);

    // one partial per warp through shared memory, then warp 0 reduces the partials
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x >> 5;
        s = lane < nwarps ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffff, s, off);
        if (lane == 0) y[row] = s;
    }
}
