// y = alpha * x + y
__global__ void axpy_f32(const float* x, float* y, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float yv = y[i];
        y[i] = alpha * xv + yv;
    }
}
