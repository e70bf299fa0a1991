"""ptxls eval task triton_scale_shift (Triton source): y = 2 x + 0.5."""

import triton
import triton.language as tl


# @gputest ref: y_ptr = 2 * x_ptr + 0.5
# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 n=i32 BLOCK=512
@triton.jit
def triton_scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 512):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 2.0 * x + 0.5, mask=mask)
