// softplus: log(1 + exp(x))
__global__ void softplus_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = log1pf(expf(v));
    }
}
