"""ptxls eval task triton_sigmoid (Triton source): y = sigmoid(x)."""

import triton
import triton.language as tl


# @gputest ref: y_ptr = 1 / (1 + exp(-x_ptr))
# @gputest tol: 2e-5
# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 n=i32 BLOCK=1024
@triton.jit
def triton_sigmoid(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 1.0 / (1.0 + tl.exp(-x)), mask=mask)
