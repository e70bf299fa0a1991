// y[i] = x[(i + shift) mod n], shift = 12345 (a rotation)
__global__ void roll_f32(const float* x, float* y, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[(int)(((long long)i + shift) % n)];
}
