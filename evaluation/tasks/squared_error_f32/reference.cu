__global__ void squared_error_f32(const float* pred, const float* target, float* err, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float d = pred[i] - target[i]; err[i] = d * d; }
}
