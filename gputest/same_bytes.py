"""Whether two device buffers hold the same bytes, decided on the GPU.

Every timed launch's output is checked against the verified launch's. Downloading a gigabyte
after each of 20 launches would make a benchmark take minutes, so a small hand-written kernel
compares the two buffers in place (at memory speed) and only a 4-byte flag comes back; a
buffer that differs is then downloaded and checked element by element against the reference
(a kernel whose result is not bitwise deterministic, such as a sum with atomics, is still
right within the tolerance).

The kernel is PTX text loaded through the driver JIT, so it needs neither ptxas nor nvcc.
"""

from __future__ import annotations

import numpy as np

from . import cuda_driver as cd

# differ(a, b, words, flag): flag[0] = 1 when a[i] != b[i] for some 32-bit word i < words.
# Grid-strided, 16-byte loads; bytes past the last whole 16-byte chunk are compared as words.
# Callers pass sizes rounded down to 4 bytes and compare the remainder on the host.
_PTX = r"""
.version 7.0
.target sm_52
.address_size 64

.visible .entry differ(
    .param .u64 p_a,
    .param .u64 p_b,
    .param .u64 p_words,
    .param .u64 p_flag
)
{
    .reg .pred  %p<4>;
    .reg .b32   %a<4>, %b<4>, %d;
    .reg .b64   %i, %stride, %chunks, %words, %pa, %pb, %off, %x, %y, %flag;

    ld.param.u64        %pa, [p_a];
    ld.param.u64        %pb, [p_b];
    ld.param.u64        %words, [p_words];
    ld.param.u64        %flag, [p_flag];
    cvta.to.global.u64  %pa, %pa;
    cvta.to.global.u64  %pb, %pb;
    cvta.to.global.u64  %flag, %flag;
    mov.u32             %d, %ctaid.x;
    mov.u32             %a0, %ntid.x;
    mov.u32             %a1, %tid.x;
    mul.wide.u32        %i, %d, %a0;
    cvt.u64.u32         %x, %a1;
    add.s64             %i, %i, %x;                 // global thread index
    mov.u32             %a2, %nctaid.x;
    mul.wide.u32        %stride, %a2, %a0;
    shr.u64             %chunks, %words, 2;         // whole 16-byte chunks
    mov.u32             %d, 0;
LOOP:
    setp.ge.u64         %p0, %i, %chunks;
    @%p0 bra            WORDS;
    shl.b64             %off, %i, 4;
    add.s64             %x, %pa, %off;
    add.s64             %y, %pb, %off;
    ld.global.nc.v4.u32 {%a0, %a1, %a2, %a3}, [%x];
    ld.global.nc.v4.u32 {%b0, %b1, %b2, %b3}, [%y];
    xor.b32             %a0, %a0, %b0;
    xor.b32             %a1, %a1, %b1;
    xor.b32             %a2, %a2, %b2;
    xor.b32             %a3, %a3, %b3;
    or.b32              %a0, %a0, %a1;
    or.b32              %a2, %a2, %a3;
    or.b32              %a0, %a0, %a2;
    or.b32              %d, %d, %a0;
    add.s64             %i, %i, %stride;
    bra.uni             LOOP;
WORDS:
    // the words after the last chunk: thread t < words % 4 of the grid
    mov.u32             %a1, %tid.x;
    mov.u32             %a2, %ctaid.x;
    setp.ne.u32         %p1, %a2, 0;
    shl.b64             %x, %chunks, 2;
    cvt.u64.u32         %y, %a1;
    add.s64             %x, %x, %y;
    setp.ge.u64         %p2, %x, %words;
    or.pred             %p1, %p1, %p2;
    @%p1 bra            DONE;
    shl.b64             %off, %x, 2;
    add.s64             %x, %pa, %off;
    add.s64             %y, %pb, %off;
    ld.global.nc.u32    %a0, [%x];
    ld.global.nc.u32    %b0, [%y];
    xor.b32             %a0, %a0, %b0;
    or.b32              %d, %d, %a0;
DONE:
    setp.eq.u32         %p3, %d, 0;
    @%p3 bra            END;
    st.global.u32       [%flag], 1;
END:
    ret;
}
"""


class SameBytes:
    """One JIT-loaded ``differ`` kernel and a 4-byte flag, reused for every comparison."""

    def __init__(self):
        mod, log, err = cd.load_ptx_jit(_PTX)
        if err is not None:
            raise err
        self.module = mod
        self.fn = cd.get_function(mod, "differ")
        self.flag = cd.alloc(4)

    def equal(self, a: int, b: int, nbytes: int) -> bool:
        """True when the ``nbytes`` at device addresses ``a`` and ``b`` are identical."""
        words, rest = divmod(nbytes, 4)
        cd.memset8(self.flag, 0, 4)
        if words:
            args = [np.array([a], np.uint64), np.array([b], np.uint64),
                    np.array([words], np.uint64), np.array([self.flag], np.uint64)]  # fmt: skip
            blocks = max(1, min(4096, (words // 4 + 255) // 256))
            cd.launch(self.fn, (blocks, 1, 1), (256, 1, 1), 0, args)
        flag = cd.download(self.flag, np.zeros(1, np.uint32))
        if flag[0]:
            return False
        if rest:
            tail_a = cd.download(a + 4 * words, np.empty(rest, np.uint8))
            tail_b = cd.download(b + 4 * words, np.empty(rest, np.uint8))
            return bool(np.array_equal(tail_a, tail_b))
        return True
