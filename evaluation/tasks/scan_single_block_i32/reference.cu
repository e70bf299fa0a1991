// inclusive prefix sum of a whole array of n ints, single block of 1024 threads: each thread
// scans a contiguous chunk, the chunk totals are scanned in shared memory, then added back
__global__ void scan_single_block_i32(const int* x, int* y, int n) {
    __shared__ int tot[1024];
    int t = threadIdx.x;
    int chunk = (n + 1023) / 1024;
    int lo = min(n, t * chunk), hi = min(n, lo + chunk);
    int acc = 0;
    for (int i = lo; i < hi; ++i) acc += x[i];
    tot[t] = acc;
    __syncthreads();
    for (int o = 1; o < 1024; o <<= 1) {
        int v = t >= o ? tot[t - o] : 0;
        __syncthreads();
        tot[t] += v;
        __syncthreads();
    }
    int run = t > 0 ? tot[t - 1] : 0;
    for (int i = lo; i < hi; ++i) { run += x[i]; y[i] = run; }
}
