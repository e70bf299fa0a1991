"""Whether two device buffers hold the same bytes, decided on the GPU.

Every timed launch's output is checked against the verified launch's. Downloading a gigabyte
after each of 20 launches would make a benchmark take minutes, so a small hand-written kernel
compares the two buffers in place (at memory speed) and only a 4-byte flag comes back; a
buffer that differs is then downloaded and checked element by element against the reference
(a kernel whose result is not bitwise deterministic, such as a sum with atomics, is still
right within the tolerance).

A float32 output whose bits differ from run to run — a decoupled look-back scan adds its
predecessors' sums in an order that depends on which of them had published first — is checked
against the reference on the GPU too (``NearReference``: the host rule of compare.py, in float64,
a 4-byte answer). Checked on the host instead, every timed launch of a 2^26-element scan cost
seconds of numpy: the worker went quiet past its timeout ("the kernel is hung"), and the GPU
sat idle between timed launches.

The kernel is PTX text loaded through the driver JIT, so it needs neither ptxas nor nvcc.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import cuda_driver as cd
from .compare import _max_abs_finite, as_bits
from .dtypes import DType, poison

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

// beyond_tol_f32(got, exp, count, floor, tol, poison, flag): flag[0] = 1 when some element
// i < count of the float32 output `got` fails the host check of compare.py against the
// reference `exp`: bits differ and (got still holds the poison bits, or
// |got - exp| / max(|exp|, floor) is above tol or NaN), computed in float64 as numpy does.
// Equal values (+0/-0) and NaN where the reference is NaN pass, as on the host.
.visible .entry beyond_tol_f32(
    .param .u64 p_got,
    .param .u64 p_exp,
    .param .u64 p_count,
    .param .f64 p_floor,
    .param .f64 p_tol,
    .param .u32 p_poison,
    .param .u64 p_flag
)
{
    .reg .pred  %p<8>;
    .reg .b32   %g, %e, %poison, %bad, %t0, %t1;
    .reg .f32   %gf, %ef;
    .reg .f64   %gd, %ed, %diff, %scale, %err, %floor, %tol;
    .reg .b64   %i, %stride, %count, %pg, %pe, %off, %x, %y, %flag;

    ld.param.u64        %pg, [p_got];
    ld.param.u64        %pe, [p_exp];
    ld.param.u64        %count, [p_count];
    ld.param.f64        %floor, [p_floor];
    ld.param.f64        %tol, [p_tol];
    ld.param.u32        %poison, [p_poison];
    ld.param.u64        %flag, [p_flag];
    cvta.to.global.u64  %pg, %pg;
    cvta.to.global.u64  %pe, %pe;
    cvta.to.global.u64  %flag, %flag;
    mov.u32             %t0, %ctaid.x;
    mov.u32             %t1, %ntid.x;
    mul.wide.u32        %i, %t0, %t1;
    mov.u32             %t0, %tid.x;
    cvt.u64.u32         %x, %t0;
    add.s64             %i, %i, %x;                 // global thread index
    mov.u32             %t0, %nctaid.x;
    mul.wide.u32        %stride, %t0, %t1;
    mov.u32             %bad, 0;
LOOP:
    setp.ge.u64         %p0, %i, %count;
    @%p0 bra            DONE;
    shl.b64             %off, %i, 2;
    add.s64             %x, %pg, %off;
    add.s64             %y, %pe, %off;
    ld.global.nc.u32    %g, [%x];
    ld.global.nc.u32    %e, [%y];
    add.s64             %i, %i, %stride;
    setp.eq.u32         %p1, %g, %e;                // same bits: right
    @%p1 bra            LOOP;
    setp.eq.u32         %p2, %g, %poison;           // never written
    @%p2 bra            BAD;
    mov.b32             %gf, %g;
    mov.b32             %ef, %e;
    cvt.f64.f32         %gd, %gf;
    cvt.f64.f32         %ed, %ef;
    testp.notanumber.f64 %p3, %gd;
    testp.notanumber.f64 %p4, %ed;
    and.pred            %p5, %p3, %p4;              // NaN where the reference is NaN
    setp.eq.f64         %p6, %gd, %ed;              // +0 / -0
    or.pred             %p5, %p5, %p6;
    @%p5 bra            LOOP;
    sub.rn.f64          %diff, %gd, %ed;
    abs.f64             %diff, %diff;
    abs.f64             %scale, %ed;
    max.f64             %scale, %scale, %floor;     // a NaN reference left diff NaN already
    div.rn.f64          %err, %diff, %scale;
    setp.le.f64         %p7, %err, %tol;            // false for NaN: wrong
    @%p7 bra            LOOP;
BAD:
    mov.u32             %bad, 1;
DONE:
    setp.eq.u32         %p0, %bad, 0;
    @%p0 bra            END;
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
        self.beyond_tol_f32 = cd.get_function(mod, "beyond_tol_f32")
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

    def within_tol_f32(self, got: int, expected: int, count: int, floor: float, tol: float,
                       poison_bits: int) -> bool:  # fmt: skip
        """True when every element of the float32 buffer at ``got`` passes compare.py's check
        against the float32 reference at ``expected`` (see ``beyond_tol_f32``)."""
        cd.memset8(self.flag, 0, 4)
        if count:
            args: list[np.ndarray] = [np.array([got], np.uint64), np.array([expected], np.uint64),
                    np.array([count], np.uint64), np.array([floor], np.float64),
                    np.array([tol], np.float64), np.array([poison_bits], np.uint32),
                    np.array([self.flag], np.uint64)]  # fmt: skip
            blocks = max(1, min(4096, (count + 255) // 256))
            cd.launch(self.beyond_tol_f32, (blocks, 1, 1), (256, 1, 1), 0, args)
        return not cd.download(self.flag, np.zeros(1, np.uint32))[0]


class NearReference:
    """The reference's outputs on the device, for checking timed launches whose bytes differ
    from the verified launch's: uploaded on first need, freed by ``free()``. ``within`` says True
    only when the GPU found every element within the tolerance by compare.py's rule; False
    means "check on the host" (another dtype, or something is wrong there: the host check then
    says what)."""

    def __init__(self, expected: dict[str, np.ndarray], tol: float | None):
        self.expected = expected
        self.tol = tol
        self.uploaded: dict[str, tuple[int, float]] = {}  # name -> (device copy, floor)

    def within(self, same: SameBytes, name: str, dt: DType, ptr: int, count: int) -> bool:
        ref = self.expected.get(name)
        if dt.name != "f32" or ref is None or ref.dtype != np.float32 or len(ref) != count:
            return False
        if name not in self.uploaded:
            dev = cd.alloc(ref.nbytes)
            cd.upload(dev, np.ascontiguousarray(ref))
            floor = max(_max_abs_finite(dt, ref) * 1e-3, np.finfo(np.float64).tiny)
            self.uploaded[name] = (dev, floor)
        dev, floor = self.uploaded[name]
        tol = dt.rtol if self.tol is None else self.tol
        poison_bits = int(as_bits(poison(dt, 1))[0])
        return same.within_tol_f32(ptr, dev, count, floor, tol, poison_bits)

    def free(self) -> None:
        for dev, _ in self.uploaded.values():
            with contextlib.suppress(cd.CudaError):  # a dead context frees nothing
                cd.free(dev)
        self.uploaded = {}
