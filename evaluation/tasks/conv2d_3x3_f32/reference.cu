// 3x3 convolution of an H x W image (H = rows) with zero padding: y[r, c] = sum w[a, b] x[r + a - 1, c + b - 1]
__global__ void conv2d_3x3_f32(const float* x, const float* w, float* y, int H, int W) {
    int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;
    if (r >= H || c >= W) return;
    float acc = 0.0f;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            int rr = r + a - 1, cc = c + b - 1;
            if (rr >= 0 && rr < H && cc >= 0 && cc < W) acc += w[a * 3 + b] * x[(size_t)rr * W + cc];
        }
    y[(size_t)r * W + c] = acc;
}
