// y = alpha * x + y in double
__global__ void axpy_f64(const double* x, double* y, double alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double xv = x[i];
        double yv = y[i];
        y[i] = alpha * xv + yv;
    }
}
