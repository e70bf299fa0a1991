// y[r] = dot(a[r, :], b[r, :]) for rows of dim floats; one warp per row
__global__ void rowwise_dot_f32(const float* a, const float* b, float* y, int rows, int dim) {
    int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int j = lane; j < dim; j += 32) acc += a[(size_t)row * dim + j] * b[(size_t)row * dim + j];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}
