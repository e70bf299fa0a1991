// out[c, r] = in[r, c], float32, the same algorithm as kernel.ptx written as idiomatic CUDA:
// two 32 x 32 shared-memory tiles stacked vertically per block (input rows by .. by+63),
// padded to 33 columns (no bank conflicts), block 32 x 8; when both tiles are full and the
// matrix's sides are multiples of 4, each thread moves one float4 of each tile in (both loads
// before the barrier) and one float4 of each out; otherwise the tiles go one after the other,
// four bounds-checked elements per thread each.
// Launch: block (32, 8), grid (ceil(cols/32), ceil(rows/64)).
__global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int rows,
                          int cols) {
    __shared__ float tile[2][32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 64;
    if (((rows | cols) & 3) == 0 && bx + 32 <= cols && by + 64 <= rows) {
        int t = threadIdx.y * 32 + threadIdx.x, r = t / 8, c = (t % 8) * 4;
        const float* src = x + (size_t)(by + r) * cols + bx + c;
        float4 v = *reinterpret_cast<const float4*>(src);
        float4 w = *reinterpret_cast<const float4*>(src + (size_t)32 * cols);
        tile[0][r][c] = v.x; tile[0][r][c + 1] = v.y; tile[0][r][c + 2] = v.z; tile[0][r][c + 3] = v.w;
        tile[1][r][c] = w.x; tile[1][r][c + 1] = w.y; tile[1][r][c + 2] = w.z; tile[1][r][c + 3] = w.w;
        __syncthreads();
        float* dst = y + (size_t)(bx + r) * rows + by + c;
        *reinterpret_cast<float4*>(dst) =
            make_float4(tile[0][c][r], tile[0][c + 1][r], tile[0][c + 2][r], tile[0][c + 3][r]);
        *reinterpret_cast<float4*>(dst + 32) =
            make_float4(tile[1][c][r], tile[1][c + 1][r], tile[1][c + 2][r], tile[1][c + 3][r]);
        return;
    }
    for (int half = 0; half < 2 && by + 32 * half < rows; ++half) {
        int top = by + 32 * half;
        if (half) __syncthreads();  // every read of the first tile is done
        int col = bx + threadIdx.x, row = top + threadIdx.y;
#pragma unroll
        for (int j = 0; j < 32; j += 8)
            if (col < cols && row + j < rows)
                tile[0][threadIdx.y + j][threadIdx.x] = x[(size_t)(row + j) * cols + col];
        __syncthreads();
        col = top + threadIdx.x;  // output column = input row
        row = bx + threadIdx.y;   // output row = input column
#pragma unroll
        for (int j = 0; j < 32; j += 8)
            if (col < rows && row + j < cols)
                y[(size_t)(row + j) * rows + col] = tile[0][threadIdx.x][threadIdx.y + j];
    }
}
