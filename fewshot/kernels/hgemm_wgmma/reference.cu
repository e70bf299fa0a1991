// HGEMM with Hopper's warpgroup MMA (wgmma.mma_async, sm_90a): C[M,N] = A[M,K] @ B[K,N],
// row-major fp16 in, fp32 accumulate, fp16 out. M any; N and K multiples of 8.
// Launch: block 256 (2 warpgroups), grid (cdiv(N,128), cdiv(M,256)), dynamic shared memory
// 197632 bytes. Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a.
//
// The block computes its 256 (m) x 128 (n) tile of C as C^T = B^T A^T: wgmma's shared-memory
// operand is the A tile (K-major, 128-byte swizzle, described by a matrix descriptor), its
// register operand the B^T fragments, read from the row-major B tile with ldmatrix.trans.
// Warpgroup g owns n = 64g..64g+63 of the tile, one m64n256k16 wgmma per 16 k (128 fp32
// accumulators per thread). K advances 64 per step through a 4-stage cp.async pipeline two
// tiles ahead; wgmma.wait_group 1 keeps one step's MMAs in flight while the next is prepared.
#include <cuda_fp16.h>
#include <stdint.h>

#define BM 256
#define BN 128
#define BK 64
#define STAGES 4
#define STAGE_BYTES 49152  // A tile 32 KB (256 rows x 128 B) + B tile 16 KB (64 rows x 256 B)
#define A_BYTES 32768

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    // src-size 0 zero-fills the 16 bytes: the matrix edge needs no separate path
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void wgmma_m64n256k16_rs(float (&d)[128], const uint32_t (&a)[4],
                                                    uint64_t desc) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "{%128, %129, %130, %131}, %132, 1, 1, 1, 0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

__global__ void __launch_bounds__(256, 1)
hgemm_wgmma(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
            int M, int N, int K) {
    extern __shared__ __align__(1024) unsigned char dyn_smem[];
    // the 128-byte swizzle works on address bits: stages must start 1024-aligned
    const uint32_t smem = ((uint32_t)__cvta_generic_to_shared(dyn_smem) + 1023u) & ~1023u;
    const int t = threadIdx.x, lane = t & 31, wg = t >> 7, w4 = (t >> 5) & 3;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // copies per stage: A chunks (row t/8 + 32i, k chunk t%8), B chunks (k row t/16 + 16i,
    // n chunk t%16); swizzle: chunk c of row r at r*rowbytes + ((c ^ (r & 7)) * 16)
    const int a_row = t >> 3, a_c = t & 7, b_row = t >> 4, b_c = t & 15;
    const uint32_t a_dst = smem + a_row * 128 + ((a_c ^ (a_row & 7)) << 4);
    const uint32_t b_dst = smem + A_BYTES + b_row * 256 + ((b_c ^ (b_row & 7)) << 4);
    auto issue = [&](int stage, int k0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            int r = bm + a_row + 32 * i, k = k0 + a_c * 8;
            bool ok = r < M && k < K;
            cp_async16(a_dst + stage * STAGE_BYTES + i * 4096, ok ? A + (size_t)r * K + k : A, ok);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int k = k0 + b_row + 16 * i, c = bn + b_c * 8;
            bool ok = k < K && c < N;
            cp_async16(b_dst + stage * STAGE_BYTES + i * 4096, ok ? B + (size_t)k * N + c : B, ok);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };

    // ldmatrix.x4.trans addresses of this warp's B^T fragments (n = wg*64 + w4*16 ..+15)
    const int lk = (lane & 7) + ((lane >> 4) << 3);
    const int lc = wg * 8 + w4 * 2 + ((lane >> 3) & 1);
    const uint32_t b_ld = smem + A_BYTES + lk * 256 + ((lc ^ (lane & 7)) << 4);
    // descriptor: 128-byte swizzle, stride between 8-row groups 1024 B, leading offset 1
    const uint64_t desc0 = 0x4000004000010000ull;

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    const int ktiles = (K + BK - 1) / BK;
    issue(0, 0);
    issue(1, BK);
    // A wgmma reads its fragment registers while it runs, and the last step's wgmma is still
    // running when the next step loads fragments: consecutive steps must use different
    // registers (frag[0], frag[1]), and the set about to be rewritten is kept alive until the
    // wait that retires the wgmma reading it. (One rolled loop with one fragment array reused
    // the same registers every step: a race, and wrong results, on the H200.)
    uint32_t frag[2][4][4] = {};
    auto step = [&](int kt, uint32_t (&a)[4][4]) {
        const int rs = kt % STAGES;
        asm volatile("cp.async.wait_group 1;\n" ::);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
#pragma unroll
        for (int s = 0; s < 4; ++s)  // the wgmma of step kt-2, which read them, has retired
            asm volatile("" ::"r"(a[s][0]), "r"(a[s][1]), "r"(a[s][2]), "r"(a[s][3]));
        __syncthreads();
        issue((kt + 2) % STAGES, (kt + 2) * BK);
#pragma unroll
        for (int s = 0; s < 4; ++s) ldmatrix_x4_trans(a[s], b_ld + rs * STAGE_BYTES + s * 4096);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        const uint64_t desc = desc0 | ((smem + rs * STAGE_BYTES) >> 4);
#pragma unroll
        for (int s = 0; s < 4; ++s) wgmma_m64n256k16_rs(d, a[s], desc + 2 * s);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    };
    // two steps per trip, one fragment set each; an odd last step after the loop
    int kt = 0;
    for (; kt + 1 < ktiles; kt += 2) {
        step(kt, frag[0]);
        step(kt + 1, frag[1]);
    }
    if (kt < ktiles) step(kt, frag[0]);
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 4; ++s)  // live until the last wgmma reading them has retired
        asm volatile("" ::"r"(frag[0][s][0]), "r"(frag[0][s][1]), "r"(frag[0][s][2]),
                     "r"(frag[0][s][3]), "r"(frag[1][s][0]), "r"(frag[1][s][1]),
                     "r"(frag[1][s][2]), "r"(frag[1][s][3]));
    asm volatile("cp.async.wait_group 0;\n" ::);

    // C^T accumulators: n rows wg*64 + w4*16 + lane/4 (and +8), m columns 8i + 2*(lane%4) + {0,1}
    const int n = bn + wg * 64 + w4 * 16 + (lane >> 2);
    const int m0 = bm + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        int m = m0 + 8 * i;
        if (m < M) {
            if (n < N) C[(size_t)m * N + n] = __float2half_rn(d[4 * i]);
            if (n + 8 < N) C[(size_t)m * N + n + 8] = __float2half_rn(d[4 * i + 2]);
        }
        if (m + 1 < M) {
            if (n < N) C[(size_t)(m + 1) * N + n] = __float2half_rn(d[4 * i + 1]);
            if (n + 8 < N) C[(size_t)(m + 1) * N + n + 8] = __float2half_rn(d[4 * i + 3]);
        }
    }
}
