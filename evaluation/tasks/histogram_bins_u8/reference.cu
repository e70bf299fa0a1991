// counts[b] = number of x[i] == b for 256 bins: one block of 256 threads per bin, each block
// counts its bin over the whole input and reduces in shared memory
__global__ void histogram_bins_u8(const unsigned char* x, unsigned int* counts, int n) {
    __shared__ unsigned int s[256];
    int bin = blockIdx.x;
    unsigned int c = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) c += (x[i] == bin);
    s[threadIdx.x] = c;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) counts[bin] = s[0];
}
