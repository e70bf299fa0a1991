__global__ void transpose_add_f32(const float* a, const float* b, float* c, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)rows * cols) return;
    int r = (int)(i / cols), k = (int)(i % cols);
    c[i] = a[i] + b[(size_t)k * rows + r];
}
