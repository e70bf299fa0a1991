__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
__device__ float sq(float v) { return v * v; }
__global__ void norm(const float* x, float* out, int n) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += sq(x[i]);
    out[threadIdx.x] = s;
}
