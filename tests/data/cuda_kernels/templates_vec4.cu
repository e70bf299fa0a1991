template <typename T, int UNROLL>
__global__ void scale_add(const T* __restrict__ a, T* __restrict__ b, T s, long n) {
    long i = (blockIdx.x * (long)blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) if (i + u < n) b[i + u] = s * a[i + u] + b[i + u];
}
__global__ void copy4(const float4* a, float4* b, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) b[i] = a[i];
}
template __global__ void scale_add<float, 4>(const float*, float*, float, long);
template __global__ void scale_add<double, 2>(const double*, double*, double, long);
template __global__ void scale_add<int, 8>(const int*, int*, int, long);
