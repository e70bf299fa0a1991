// max pooling over windows of 3, stride 1, "same" size: y[i] = max(x[i-1], x[i], x[i+1]) over
// the elements inside [0, n)
__global__ void maxpool1d_k3_f32(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float m = x[i];
    if (i > 0) m = fmaxf(m, x[i - 1]);
    if (i + 1 < n) m = fmaxf(m, x[i + 1]);
    y[i] = m;
}
