// y[i] = x[idx[i]] (idx holds positions in x, which has m elements)
__global__ void gather_f32(const float* x, const int* idx, float* y, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[idx[i]];
}
