// y = |a - b|
__global__ void absdiff_f32(const float* a, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float av = a[i];
        float bv = b[i];
        y[i] = fabsf(av - bv);
    }
}
