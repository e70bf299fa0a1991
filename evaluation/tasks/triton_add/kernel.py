"""ptxls eval task triton_add (Triton source): c = a + b."""

import triton
import triton.language as tl


# @gputest ref: c_ptr = a_ptr + b_ptr
# ptxls: signature a_ptr=*fp32 b_ptr=*fp32 c_ptr=*fp32 n=i32 BLOCK=1024
@triton.jit
def triton_add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)
