// y = silu(g) * u (the SwiGLU gate)
__global__ void swiglu_f32(const float* g, const float* u, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float gv = g[i];
        float uv = u[i];
        y[i] = gv / (1.0f + expf(-gv)) * uv;
    }
}
