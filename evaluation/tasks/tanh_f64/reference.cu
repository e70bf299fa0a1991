// tanh in double precision
__global__ void tanh_f64(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double v = x[i];
        y[i] = tanh(v);
    }
}
