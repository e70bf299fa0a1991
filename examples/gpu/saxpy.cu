// y = alpha * x + y, in place: an inout output, a float scalar and a numpy reference.
// @gputest y: inout f32[n]; alpha: f32 = 2.5
// @gputest ref: y = alpha * x + y
__global__ void saxpy(const float* x, float* y, float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = alpha * x[i] + y[i];
    }
}
