// y[i] = x[i ^ 1]: neighbouring lanes of a warp swap values through shared memory. The source
// of the lowering loop's racecheck check (bench/race_check_loop.py): a PTX lowering without
// the barrier gets the right numbers (the warp runs converged) but races, and racecheck says so.
// @gputest x: in f32[n]; y: out f32[n]; n: size
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 256 1024 65536
// @gputest ref: y = x.reshape(-1, 2)[:, ::-1].reshape(-1)
__global__ void swap_lanes(const float* x, float* y, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    tile[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        y[i] = tile[tid ^ 1];
    }
}
