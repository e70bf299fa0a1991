"""A Triton kernel for ptxls: "Lower to PTX with Triton (reference)", "Show PTX for this kernel",
and GPU tests of a lowering against this kernel itself (see README.md, "Triton").

    ptxls lower examples/vec_add_triton.py --kernel add_kernel --backend triton -o add.ptx
"""

import triton
import triton.language as tl


# ptxls: signature x_ptr=*fp32 y_ptr=*fp32 out_ptr=*fp32 n_elements=i32 BLOCK_SIZE=1024
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    """How the kernel is launched from PyTorch (never run by ptxls)."""
    out = x.new_empty(x.shape)
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out
