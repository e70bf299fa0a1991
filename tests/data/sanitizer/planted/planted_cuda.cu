// Planted bugs for `ptxls test FILE.cu --sanitize` (tests/gpu/test_sanitizer_cuda_gpu.py): each
// kernel's bug is on the line whose comment says "planted", and compute-sanitizer must report it
// on that line of this file (nvcc -lineinfo's .loc name it). Each has a fixed twin that is clean.

// @gputest x: in f32[n]; y: out f32[n]; n: size
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 1024
// @gputest ref: y = x.reshape(-1, 256)[:, ::-1].reshape(-1)
__global__ void reverse_tile_oob(const float* x, float* y, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    tile[256 - tid] = i < n ? x[i] : 0.0f;  // planted: 256 - tid, thread 0 writes tile[256]
    __syncthreads();
    if (i < n) {
        y[i] = tile[tid];
    }
}

// @gputest x: in f32[n]; y: out f32[n]; n: size
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 1024
// @gputest ref: y = x.reshape(-1, 256)[:, ::-1].reshape(-1)
__global__ void reverse_tile(const float* x, float* y, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    tile[255 - tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        y[i] = tile[tid];
    }
}

// y[i] = x[i ^ 32]: warps of a block swap values through shared memory, so the barrier is
// needed (within one warp the lanes run converged; across warps nothing orders them).
// @gputest x: in f32[n]; y: out f32[n]; n: size
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 1024
// @gputest ref: y = x.reshape(-1, 2, 32)[:, ::-1, :].reshape(-1)
__global__ void swap_warps_no_sync(const float* x, float* y, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    tile[tid] = i < n ? x[i] : 0.0f;  // planted: the store another warp reads without a barrier
    if (i < n) {
        y[i] = tile[tid ^ 32];  // planted: the load that races with it
    }
}
