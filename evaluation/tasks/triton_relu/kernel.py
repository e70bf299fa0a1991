"""ptxls eval task triton_relu (Triton source): y = max(x, 0)."""

import triton
import triton.language as tl


# @gputest ref: y_ptr = maximum(x_ptr, 0)
# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 n=i32 BLOCK=1024
@triton.jit
def triton_relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)
