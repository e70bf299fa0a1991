// 5-point Laplacian with zero outside the grid, the same algorithm as kernel.ptx written as
// idiomatic CUDA: each thread computes a 4-column x 8-row patch (block 32 x 8 covers 128
// columns x 64 rows) with float4 loads of the rows above, at and below, and the two columns
// beside the patch read as single floats. cols a multiple of 4.
// Launch: block (32, 8), grid (ceil(cols/128), ceil(rows/64)).
__global__ void stencil5(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int j = (blockIdx.x * 32 + threadIdx.x) * 4;
    int first = blockIdx.y * 64 + threadIdx.y * 8;
    if (j >= cols) return;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        int i = first + k;
        if (i >= rows) return;
        size_t at = (size_t)i * cols + j;
        float4 c = *reinterpret_cast<const float4*>(x + at);
        float4 u = i > 0 ? *reinterpret_cast<const float4*>(x + at - cols) : zero;
        float4 d = i + 1 < rows ? *reinterpret_cast<const float4*>(x + at + cols) : zero;
        float l = j > 0 ? x[at - 1] : 0.f;
        float r = j + 4 < cols ? x[at + 4] : 0.f;
        *reinterpret_cast<float4*>(y + at) =
            make_float4(u.x + d.x + l + c.y - 4.f * c.x, u.y + d.y + c.x + c.z - 4.f * c.y,
                        u.z + d.z + c.y + c.w - 4.f * c.z, u.w + d.w + c.z + r - 4.f * c.w);
    }
}
