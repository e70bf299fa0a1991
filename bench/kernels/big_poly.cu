// Generates ~24k lines of PTX (two heavily unrolled instantiations) for the diagnostics benchmark.
template <int N>
__global__ void poly(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.f;
#pragma unroll
    for (int k = 0; k < N; ++k) { acc = fmaf(acc, v, (float)(k % 7) * 0.5f); if (acc > 1e4f) acc = __sinf(acc); }
    y[i] = acc;
}
template __global__ void poly<1500>(const float*, float*, int);
template __global__ void poly<1501>(const float*, float*, int);
