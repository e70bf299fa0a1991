// w[b] = sum of weights[i] with bin[i] == b (32 bins): one warp per bin, warp shuffles
__global__ void weighted_hist32_f32(const int* bin, const float* weights, float* w, int n) {
    int b = blockIdx.x;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += 32) if (bin[i] == b) acc += weights[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (threadIdx.x == 0) w[b] = acc;
}
