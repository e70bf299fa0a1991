#include <cstdio>
__device__ __noinline__ int collatz(int v) {
    int steps = 0;
    while (v != 1 && steps < 1000) { v = (v & 1) ? 3 * v + 1 : v / 2; ++steps; }
    return steps;
}
__global__ void weird(int* out, int n, int mode) {
    int scratch[24];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 24; ++k) scratch[k] = collatz(i + k + 1);
    int r = 0;
    switch (mode) {
        case 0: r = scratch[i % 24]; break;
        case 1: r = scratch[(i * 7) % 24] * 2; break;
        case 2: r = -scratch[(i * 5) % 24]; break;
        case 3: r = scratch[0] ^ scratch[23]; break;
        default: r = 0;
    }
    if (i == 0) printf("mode %d first %d\n", mode, r);
    if (i < n) out[i] = r;
}
