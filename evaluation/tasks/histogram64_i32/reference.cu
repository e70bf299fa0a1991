// counts[b] = number of x[i] == b for values in [0, 64): shared-memory bins with atomics, one
// block (1024 threads) over the whole input
__global__ void histogram64_i32(const int* x, int* counts, int n) {
    __shared__ int bins[64];
    if (threadIdx.x < 64) bins[threadIdx.x] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&bins[x[i]], 1);
    __syncthreads();
    if (threadIdx.x < 64) counts[threadIdx.x] = bins[threadIdx.x];
}
