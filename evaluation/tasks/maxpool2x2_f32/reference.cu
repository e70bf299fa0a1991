// 2x2 max pooling, stride 2: x is (2 H) x (2 W), y is H x W (H = rows)
__global__ void maxpool2x2_f32(const float* x, float* y, int H, int W) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)H * W) return;
    int r = (int)(i / W), c = (int)(i % W);
    const float* p = x + (size_t)(2 * r) * (2 * W) + 2 * c;
    y[i] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[2 * W], p[2 * W + 1]));
}
