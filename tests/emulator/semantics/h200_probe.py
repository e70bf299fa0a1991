"""Ground truth from the H200 for the contested semantics the emulator's value functions
choose (NaN encodings, min/max of zeros, .sat of -0, integer division by zero, float→int
saturation, the .approx functions).

Run once on the device (the ``run`` tool), standalone: it needs numpy and cuda-bindings only,
no ptxls import. Every probe is a one-instruction PTX kernel over an input array; the raw
outputs go to $OUT/h200_probe.npz (inputs + outputs per probe) and $OUT/h200_machine.json.
tests/emulator/semantics/h200_import.py turns them into tests/data/emulator/h200_*.{json,npz}.

    python3 tests/emulator/semantics/h200_probe.py  # on the H200, $OUT set
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

REG = {  # PTX register type, load/store type, numpy dtype
    "f32": (".f32", "f32", np.uint32),
    "f64": (".f64", "f64", np.uint64),
    "b16": (".b16", "b16", np.uint16),
    "b32": (".b32", "b32", np.uint32),
    "u32": (".u32", "u32", np.uint32),
    "s32": (".s32", "s32", np.int32),
    "u64": (".u64", "u64", np.uint64),
    "s64": (".s64", "s64", np.int64),
}


def kernel(name: str, instr: str, ins: list[str], out: str) -> str:
    """One entry: y[i] = instr(x0[i], x1[i], x2[i]); instr uses %y %x0 %x1 %x2."""
    params = ", ".join(f".param .u64 pin{k}" for k in range(len(ins)))
    lines = [
        f".visible .entry {name}({params}, .param .u64 pout, .param .u32 pn)",
        "{",
        "  .reg .pred %p; .reg .b32 %i, %n, %t<3>; .reg .b64 %a<8>;",
        f"  .reg {REG[out][0]} %y;",
    ]
    lines += [f"  .reg {REG[t][0]} %x{k};" for k, t in enumerate(ins)]
    lines += [
        "  mov.u32 %t0, %ctaid.x; mov.u32 %t1, %ntid.x; mov.u32 %t2, %tid.x;",
        "  mad.lo.u32 %i, %t0, %t1, %t2;",
        "  ld.param.u32 %n, [pn]; setp.ge.u32 %p, %i, %n; @%p bra DONE;",
    ]
    for k, t in enumerate(ins):
        size = np.dtype(REG[t][2]).itemsize
        lines += [
            f"  ld.param.u64 %a{k}, [pin{k}]; cvta.to.global.u64 %a{k}, %a{k};",
            f"  mul.wide.u32 %a7, %i, {size}; add.u64 %a{k}, %a{k}, %a7;",
            f"  ld.global.{REG[t][1]} %x{k}, [%a{k}];",
        ]
    osize = np.dtype(REG[out][2]).itemsize
    lines += [
        f"  {instr}",
        "  ld.param.u64 %a6, [pout]; cvta.to.global.u64 %a6, %a6;",
        f"  mul.wide.u32 %a7, %i, {osize}; add.u64 %a6, %a6, %a7;",
        f"  st.global.{REG[out][1]} [%a6], %y;",
        "DONE:",
        "  ret;",
        "}",
    ]
    return "\n".join(lines)


def f32(vals) -> np.ndarray:
    return np.asarray(vals, dtype=np.float32).view(np.uint32)


def f64(vals) -> np.ndarray:
    return np.asarray(vals, dtype=np.float64).view(np.uint64)


def specials32() -> np.ndarray:
    v = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, 2.0, 1e-45, -1e-45, 1.1754942e-38,
         1.17549435e-38, -1.17549435e-38, 3.4028235e38, -3.4028235e38, 126.0, 127.0, 128.0,
         -126.0, -149.0, -150.0, 3.14159265, -3.14159265, 1e-30, 10.0, 100.0, 1e6, 0.1,
         -0.1, 9.0, 20.0, -20.0, 88.0, 1e-7]  # fmt: skip
    bits = list(f32(v)) + [0x7FC00000, 0x7FFFFFFF, 0xFFC00000, 0x7F800001, 0x7FC00123]
    return np.array(bits, dtype=np.uint32)


def sample32(rng, n: int) -> np.ndarray:
    q = n // 4
    parts = [
        rng.integers(0, 2**32, q, dtype=np.uint64).astype(np.uint32),
        f32(rng.uniform(-4, 4, q)),
        f32(rng.uniform(-200, 200, q)),
        f32(np.ldexp(rng.uniform(1, 2, n - 3 * q), rng.integers(-140, 128, n - 3 * q))
            * rng.choice([-1, 1], n - 3 * q)),
    ]  # fmt: skip
    return np.concatenate([specials32(), *parts])


def probes(rng) -> list[tuple[str, str, list[str], str, list[np.ndarray]]]:
    X = sample32(rng, 1 << 16)
    P = []
    un32 = ["ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32",
            "rcp.approx.f32", "rcp.approx.ftz.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32",
            "sqrt.approx.f32", "sqrt.approx.ftz.f32", "sin.approx.f32", "sin.approx.ftz.f32",
            "cos.approx.f32", "cos.approx.ftz.f32", "tanh.approx.f32", "abs.f32", "neg.f32",
            "rcp.rn.f32", "sqrt.rn.f32"]  # fmt: skip
    for op in un32:
        P.append((op, f"{op} %y, %x0;", ["f32"], "f32", [X]))
    Y = sample32(rng, 1 << 16)[: X.size]
    for op in ["div.approx.f32", "div.full.f32", "div.approx.ftz.f32", "div.full.ftz.f32"]:
        P.append((op, f"{op} %y, %x0, %x1;", ["f32", "f32"], "f32", [X, Y]))
    H = np.arange(65536, dtype=np.uint16)
    for op in ["ex2.approx.f16", "ex2.approx.ftz.bf16", "tanh.approx.f16", "tanh.approx.bf16"]:
        P.append((op, f"{op} %y, %x0;", ["b16"], "b16", [H]))
    H2 = (np.arange(65536, dtype=np.uint32) * np.uint32(40503)) & np.uint32(0xFFFFFFFF)
    P.append(("tanh.approx.f16x2", "tanh.approx.f16x2 %y, %x0;", ["b32"], "b32", [H2]))
    P.append(("ex2.approx.f16x2", "ex2.approx.f16x2 %y, %x0;", ["b32"], "b32", [H2]))
    D = f64([0.0, -0.0, np.inf, -np.inf, 1.0, 3.0, 1e-310, 1e300, 2.0**-1022, 0.1, 7.0, -2.5])
    D = np.concatenate([D, f64(np.ldexp(rng.uniform(1, 2, 4096), rng.integers(-1000, 1000, 4096)))])
    for op in ["rcp.approx.ftz.f64", "rsqrt.approx.f64", "rsqrt.approx.ftz.f64"]:
        P.append((op, f"{op} %y, %x0;", ["f64"], "f64", [D]))
    # NaN encodings and zero signs: every pair of these specials
    S = np.array([0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,
                  0x7FC00000, 0x7FC00123, 0xFFC00000, 0x7F800001, 0x00000001, 0x80000001],
                 dtype=np.uint32)  # fmt: skip
    A, B = np.repeat(S, S.size), np.tile(S, S.size)
    for op in ["add.f32", "sub.f32", "mul.f32", "div.rn.f32", "min.f32", "max.f32",
               "min.NaN.f32", "max.NaN.f32", "add.sat.f32", "mul.sat.f32", "min.ftz.f32",
               "add.rm.f32", "add.ftz.f32", "copysign.f32"]:  # fmt: skip
        P.append((op, f"{op} %y, %x0, %x1;", ["f32", "f32"], "f32", [A, B]))
    P.append(("fma.rn.f32", "fma.rn.f32 %y, %x0, %x1, %x1;", ["f32", "f32"], "f32", [A, B]))
    S64 = np.array([0, 0x8000000000000000, 0x3FF0000000000000, 0x7FF0000000000000,
                    0xFFF0000000000000, 0x7FF8000000000000, 0x7FF8000000000123,
                    0xFFF8000000000000, 0x7FF0000000000001], dtype=np.uint64)  # fmt: skip
    A64, B64 = np.repeat(S64, S64.size), np.tile(S64, S64.size)
    for op in ["add.f64", "mul.f64", "div.rn.f64", "min.f64", "max.f64", "fma.rn.f64"]:
        ins = "%x0, %x1, %x1" if op.startswith("fma") else "%x0, %x1"
        P.append((op, f"{op} %y, {ins};", ["f64", "f64"], "f64", [A64, B64]))
    P.append(("sqrt.rn.f64", "sqrt.rn.f64 %y, %x0;", ["f64"], "f64", [S64]))
    C = specials32()
    cv = [("cvt.rni.s32.f32", "s32"), ("cvt.rzi.u32.f32", "u32"), ("cvt.rzi.s64.f32", "s64"),
          ("cvt.rzi.u64.f32", "u64"), ("cvt.rn.f16.f32", "b16"), ("cvt.rz.f16.f32", "b16"),
          ("cvt.rn.bf16.f32", "b16"), ("cvt.rn.relu.f16.f32", "b16"),
          ("cvt.rn.satfinite.f16.f32", "b16"), ("cvt.rna.tf32.f32", "b32"),
          ("cvt.rni.f32.f32", "f32"), ("cvt.sat.f32.f32", "f32"), ("cvt.ftz.f32.f32", "f32")]  # fmt: skip
    for op, out in cv:
        P.append((op, f"{op} %y, %x0;", ["f32"], out, [C]))
    A2, B2 = np.repeat(C, C.size), np.tile(C, C.size)
    for op, out in [("cvt.rn.f16x2.f32", "b32"), ("cvt.rn.bf16x2.f32", "b32"),
                    ("cvt.rn.satfinite.e4m3x2.f32", "b16"), ("cvt.rn.satfinite.e5m2x2.f32", "b16")]:  # fmt: skip
        P.append((op, f"{op} %y, %x0, %x1;", ["f32", "f32"], out, [A2, B2]))
    I32 = np.array([7, -7, 0, 1, -1, -(2**31), 2**31 - 1, 13], dtype=np.int32)
    J32 = np.array([0, 2, -1, 3, -3], dtype=np.int32)
    IA, IB = np.repeat(I32, J32.size), np.tile(J32, I32.size)
    for op in ["div.s32", "rem.s32", "div.u32", "rem.u32"]:
        t = op.split(".")[1]
        P.append((op, f"{op} %y, %x0, %x1;", [t, t], t, [IA.view(REG[t][2]), IB.view(REG[t][2])]))
    I64 = np.array([7, -7, 0, -(2**63), 2**63 - 1], dtype=np.int64)
    J64 = np.array([0, 2, -1], dtype=np.int64)
    LA, LB = np.repeat(I64, J64.size), np.tile(J64, I64.size)
    for op in ["div.s64", "rem.s64", "div.u64", "rem.u64"]:
        t = op.split(".")[1]
        P.append((op, f"{op} %y, %x0, %x1;", [t, t], t, [LA.view(REG[t][2]), LB.view(REG[t][2])]))
    return P


def main() -> int:
    from cuda.bindings import driver as cu

    def ok(out):
        if out[0] != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(str(out[0]))
        return out[1] if len(out) == 2 else out[1:]

    rng = np.random.default_rng(20261203)
    P = probes(rng)
    ptx = ".version 8.7\n.target sm_90\n.address_size 64\n\n" + "\n\n".join(
        kernel(f"k{i}", instr, ins, out) for i, (_, instr, ins, out, _) in enumerate(P)
    )
    outdir = os.environ.get("OUT", ".")
    if "--ptx" in sys.argv:
        sys.stdout.write(ptx)
        return 0
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    mod = ok(cu.cuModuleLoadData(ptx.encode() + b"\0"))
    results: dict[str, np.ndarray] = {}
    for i, (name, _, ins, out, arrays) in enumerate(P):
        fn = ok(cu.cuModuleGetFunction(mod, f"k{i}".encode()))
        n = arrays[0].size
        bufs = []
        for k, arr in enumerate(arrays):
            host = np.ascontiguousarray(arr.astype(REG[ins[k]][2]))
            d = int(ok(cu.cuMemAlloc(max(host.nbytes, 1))))
            ok(cu.cuMemcpyHtoD(d, host.ctypes.data, host.nbytes))
            bufs.append(d)
            results[f"{name}|in{k}"] = host
        y = np.zeros(n, dtype=REG[out][2])
        dy = int(ok(cu.cuMemAlloc(max(y.nbytes, 1))))
        args = [np.array([b], dtype=np.uint64) for b in bufs]
        args += [np.array([dy], dtype=np.uint64), np.array([n], dtype=np.uint32)]
        ptrs = np.array([a.ctypes.data for a in args], dtype=np.uint64)
        ok(cu.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, 0, ptrs.ctypes.data, 0))
        ok(cu.cuCtxSynchronize())
        ok(cu.cuMemcpyDtoH(y.ctypes.data, dy, y.nbytes))
        results[f"{name}|out"] = y
        for d in [*bufs, dy]:
            ok(cu.cuMemFree(d))
    np.savez_compressed(os.path.join(outdir, "h200_probe.npz"), **results)
    name = ok(cu.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    major = ok(
        cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev
        )
    )
    minor = ok(
        cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev
        )
    )
    drv = ok(cu.cuDriverGetVersion())
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    machine = {"device": name, "cc": f"{major}.{minor}", "cuda_driver_api": drv, "nvidia_smi": smi,
               "ptx": ".version 8.7 .target sm_90 (driver JIT)", "probes": len(P)}  # fmt: skip
    with open(os.path.join(outdir, "h200_machine.json"), "w") as f:
        json.dump(machine, f, indent=1)
    print(json.dumps(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
