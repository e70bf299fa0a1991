// y[b, j, i] = x[b, i, j] for a batch of square-ish matrices (rows x cols each, batch = n)
__global__ void batched_transpose_f32(const float* x, float* y, int batch, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long per = (long long)rows * cols;
    if (i >= batch * per) return;
    long long b = i / per;
    int k = (int)(i % per);
    int c = k / rows, r = k % rows;
    y[i] = x[b * per + (size_t)r * cols + c];
}
