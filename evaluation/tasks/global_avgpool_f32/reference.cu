// global average pooling per channel: x is C x HW (C = rows), y[c] = mean of row c; one block per channel
__global__ void global_avgpool_f32(const float* x, float* y, int C, int HW) {
    __shared__ float s[256];
    int c = blockIdx.x;
    if (c >= C) return;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < HW; j += blockDim.x) acc += x[(size_t)c * HW + j];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[c] = s[0] / HW;
}
