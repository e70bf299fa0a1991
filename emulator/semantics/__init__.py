"""Pure value functions for the emulator: PTX ISA semantics of one instruction over all lanes.

No engine state here: numpy arrays in (one element per lane — any shape, usually the
[nwarps*32] or [nwarps, 32] register file slice of the active lanes), numpy arrays out. The
engine decodes the instruction, picks the function, and passes its modifiers as arguments.

How to call (the engine's contract)
===================================

Value types
  f32 / f64        numpy float32 / float64 arrays (view the uint32/uint64 register storage:
                   ``regs.view(np.float32)``); results come back in the same dtype.
  f16, bf16        numpy uint16 arrays of BIT PATTERNS (``half.py``).
  f16x2, bf16x2    numpy uint32 arrays: low 16 bits = element 0, high 16 bits = element 1.
  integers         any numpy integer dtype; the PTX type string says how to read it:
                   "u8" "s8" "u16" "s16" "u32" "s32" "u64" "s64" "b16" "b32" "b64".
                   Results have ``integer.dtype_of(type)`` (s32 → int32, b32 → uint32, ...).
  predicates       numpy bool arrays.

Modifiers
  rnd   float rounding: "rn" (default), "rz", "rm", "rp"; "rna" (cvt to tf32 only).
        Integer rounding of a float (cvt to an integer type, cvt.f32.f32 rounding to an
        integral value): "rni", "rzi", "rmi", "rpi".
        ``div``: also "full" and "approx"; ``rcp``/``sqrt``: "approx" lives in ``approx``.
  ftz   bool: subnormal f32 inputs and results become sign-preserving zeros.
  sat   bool: float results clamped to [0, 1] (NaN → +0); integer .sat clamps to the range.
  relu  bool (f16/bf16 packed and cvt): negative results → +0, NaN → canonical NaN.

Modules
  rounding   round_pair(s, e, fmt, mode): the exact-rounding primitive; Format tables.
  fp         add sub mul fma div rcp sqrt fmin fmax fabs fneg copysign setp testp
             flush_subnormal saturate  (f32 and f64; ``fma`` also serves ``mad.rnd``)
  integer    add sub add_cc sub_cc mul mad mul24 mad24 div rem sad imin imax iabs ineg
             dp4a dp2a  (+ dtype_of, as_type, width, signed)
  bits       shl shr shf popc clz bfind brev bfe bfi prmt lop3
  half       add sub mul fma hmin hmax hneg habs setp for "f16" "bf16" "f16x2" "bf16x2"
  cvt        cvt(x, dst, src, rnd, ftz, sat, relu, satfinite) for every allowed pair;
             cvt_pack_x2 (a → upper half), cvt_f16x2_to_fp8x2, cvt_unpack_fp8x2
  approx     ex2 lg2 rcp_approx rsqrt sqrt_approx sin cos tanh (f32; f64 rcp/rsqrt; f16/bf16
             and x2 from the H200's tables); bounds in emulator/semantics/README.md
  warp       shfl vote match redux activemask over [nwarps, 32] arrays; ``active`` = the
             lanes executing, ``membermask`` the instruction's operand; shfl also returns
             the lanes that read an absent lane (for a finding)
  mma        mma_sync(shape, a, b, c, atype, btype, ctype, dtype, satfinite) on [nwarps, 32, nregs]
             registers; ldmatrix(rows, num, trans) on the 16 bytes read at each lane's
             address; layout(shape, operand, etype) gives the ISA's (row, col) per element
  atomic     atom_op(op, old, operand, type, c=None) → new memory value (the engine
             serialises lanes that share an address; the thread's result is ``old``)

Integer division by zero, NaN encodings and similar choices the ISA leaves open follow the
H200 (README.md, "What the H200 settled").

NaN, inf and out-of-range lanes are ordinary inputs: the float functions run under
``np.errstate(all="ignore")`` and never warn.

Example::

    from ptxls.emulator.semantics import fp, integer
    d = fp.fma(a_f32, b_f32, c_f32, rnd="rz", ftz=True)           # fma.rz.ftz.f32
    hi = integer.mul(x_u32, y_u32, "u32", mode="hi")               # mul.hi.u32
    p = fp.setp("ltu", a, b)                                       # setp.ltu.f32
"""

from . import approx, atomic, bits, cvt, formats, fp, half, integer, mma, rounding, warp

__all__ = [
    "approx", "atomic", "bits", "cvt", "formats", "fp", "half", "integer", "mma", "rounding", "warp",
]  # fmt: skip
