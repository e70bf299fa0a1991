// Elementwise c[i] = a[i] + b[i], float32, the same algorithm as kernel.ptx written as idiomatic
// CUDA: each block owns 2048 consecutive floats; a full block's threads each handle two float4
// (1024 elements apart, so every warp access is contiguous); the last, partial block falls back
// to one bounds-checked float per thread and step. Launch: block 256, grid ceil(n/2048).
__global__ void vec_add(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int n) {
    unsigned first = blockIdx.x * 2048u;
    if (first + 2048u <= (unsigned)n) {
        unsigned i = first + threadIdx.x * 4u;
        const float4* a4 = reinterpret_cast<const float4*>(a + i);
        const float4* b4 = reinterpret_cast<const float4*>(b + i);
        float4* c4 = reinterpret_cast<float4*>(c + i);
        float4 x0 = a4[0], x1 = a4[256], y0 = b4[0], y1 = b4[256];
        c4[0] = make_float4(x0.x + y0.x, x0.y + y0.y, x0.z + y0.z, x0.w + y0.w);
        c4[256] = make_float4(x1.x + y1.x, x1.y + y1.y, x1.z + y1.z, x1.w + y1.w);
        return;
    }
    for (unsigned k = 0, i = first + threadIdx.x; k < 8 && i < (unsigned)n; ++k, i += 256)
        c[i] = a[i] + b[i];
}
