// y[i] = x[i ^ 32]: each thread takes the value of the thread 32 lanes away (another warp),
// through shared memory. The source of the lowering loop's racecheck check (bench/
// race_check_loop.py): a PTX lowering that drops the barrier passes the numbers but races.
// @gputest x: in f32[n]; y: out f32[n]; n: size
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 256 1024 65536
// @gputest ref: y = x.reshape(-1, 2, 32)[:, ::-1, :].reshape(-1)
__global__ void swap_warps(const float* x, float* y, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    tile[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        y[i] = tile[tid ^ 32];
    }
}
