// out[c, r] = in[r, c], float32, the same algorithm as kernel.ptx written as idiomatic CUDA:
// a 32 x 32 shared-memory tile padded to 33 columns (no bank conflicts), block 32 x 8; full
// tiles of a matrix whose sides are multiples of 4 move one float4 in and one float4 out per
// thread, other tiles four bounds-checked elements per thread.
// Launch: block (32, 8), grid (ceil(cols/32), ceil(rows/32)).
__global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int rows,
                          int cols) {
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    if (((rows | cols) & 3) == 0 && bx + 32 <= cols && by + 32 <= rows) {
        int t = threadIdx.y * 32 + threadIdx.x, r = t / 8, c = (t % 8) * 4;
        float4 v = *reinterpret_cast<const float4*>(x + (size_t)(by + r) * cols + bx + c);
        tile[r][c] = v.x; tile[r][c + 1] = v.y; tile[r][c + 2] = v.z; tile[r][c + 3] = v.w;
        __syncthreads();
        float4 o = make_float4(tile[c][r], tile[c + 1][r], tile[c + 2][r], tile[c + 3][r]);
        *reinterpret_cast<float4*>(y + (size_t)(bx + r) * rows + by + c) = o;
        return;
    }
    int col = bx + threadIdx.x, row = by + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (col < cols && row + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = x[(size_t)(row + j) * cols + col];
    __syncthreads();
    col = by + threadIdx.x;  // output column = input row
    row = bx + threadIdx.y;  // output row = input column
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (col < rows && row + j < cols)
            y[(size_t)(row + j) * rows + col] = tile[threadIdx.x][threadIdx.y + j];
}
