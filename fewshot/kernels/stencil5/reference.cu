// 5-point Laplacian with zero outside the grid, the same algorithm as kernel.ptx written as
// idiomatic CUDA: one thread per column strip of eight rows (block 32 x 8 covers 32 columns x
// 64 rows), each output read from its five neighbours with bounds checks.
// Launch: block (32, 8), grid (ceil(cols/32), ceil(rows/64)).
__global__ void stencil5(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int j = blockIdx.x * 32 + threadIdx.x;
    int first = blockIdx.y * 64 + threadIdx.y * 8;
    if (j >= cols) return;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        int i = first + k;
        if (i >= rows) return;
        size_t at = (size_t)i * cols + j;
        float up = i > 0 ? x[at - cols] : 0.f;
        float down = i + 1 < rows ? x[at + cols] : 0.f;
        float left = j > 0 ? x[at - 1] : 0.f;
        float right = j + 1 < cols ? x[at + 1] : 0.f;
        y[at] = up + down + left + right - 4.f * x[at];
    }
}
