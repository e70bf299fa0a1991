// out[c, r] = in[r, c], float32, the same algorithm as kernel.ptx written as idiomatic CUDA:
// the classic shared-memory tile transpose, 32 x 32 tiles padded to 33 columns (no bank
// conflicts), block 32 x 8 with four elements per thread, bounds-checked at the edges.
// Launch: block (32, 8), grid (ceil(cols/32), ceil(rows/32)).
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows,
                          int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
