// y[r] = index of the largest element of row r (first one on ties); one block of 256 threads per row
__global__ void row_argmax_f32(const float* x, int* y, int rows, int cols) {
    __shared__ float sv[256];
    __shared__ int si[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float best = -INFINITY;
    int bi = 0x7fffffff;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = xr[j];
        if (v > best) { best = v; bi = j; }
    }
    sv[threadIdx.x] = best;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            float a = sv[threadIdx.x], b = sv[threadIdx.x + o];
            int ia = si[threadIdx.x], ib = si[threadIdx.x + o];
            if (b > a || (b == a && ib < ia)) { sv[threadIdx.x] = b; si[threadIdx.x] = ib; }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = si[0];
}
