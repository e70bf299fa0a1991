"""Row softmax in Triton (a reduction per row), for ptxls's Triton support: the '# ptxls:
signature' line gives Triton the types, the '# @gputest' lines give the GPU test its 2-D shape
(rows of 781 columns; one Triton program of 4 warps per row).

    ptxls lower examples/softmax_triton.py --kernel softmax_kernel --backend triton -o sm.ptx
"""

import triton
import triton.language as tl

COLS = 781  # the test's row length (odd, not a power of two: the mask matters)


# ptxls: signature out_ptr=*fp32 in_ptr=*fp32 n_rows=i32 n_cols=i32 BLOCK_SIZE=1024
# @gputest out_ptr: out f32[n*781]; in_ptr: in f32[n*781]; n_rows: size; n_cols: i32 = 781
# @gputest launch: grid=n block=128; sizes: 0 1 7 4096 65536
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    if row < n_rows:
        offsets = tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        x = tl.load(in_ptr + row * n_cols + offsets, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        numerator = tl.exp(x)
        denominator = tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * n_cols + offsets, numerator / denominator, mask=mask)
