"""Turn the raw H200 probe output (h200_probe.py's $OUT) into the committed data:

- tests/data/emulator/h200_machine.json   the machine facts of the run;
- tests/data/emulator/h200_facts.json     exact results of the non-approximate probes
                                          (NaN encodings, zero signs, .sat, cvt, div by 0);
- tests/data/emulator/h200_approx_f32.npz inputs/outputs of every f32/f64 .approx probe
                                          (specials + a 4096-element sample each);
- emulator/semantics/data/h200_half_approx.npz  the H200's full 65536-entry tables of
                                          ex2/tanh .approx for f16 and bf16 (the emulator's
                                          value for those instructions).

    python tests/emulator/semantics/h200_import.py DIR_WITH_h200_probe.npz
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "emulator"
PKG = ROOT / "emulator" / "semantics" / "data"

APPROX = ("ex2.approx", "lg2.approx", "rcp.approx", "rsqrt.approx", "sqrt.approx", "sin.approx",
          "cos.approx", "tanh.approx", "div.approx", "div.full")  # fmt: skip
HALF = {"ex2_f16": "ex2.approx.f16", "ex2_bf16": "ex2.approx.ftz.bf16",
        "tanh_f16": "tanh.approx.f16", "tanh_bf16": "tanh.approx.bf16"}  # fmt: skip
N_SPECIALS = 39  # h200_probe.specials32() length: kept in every sample


def _unsigned(a: np.ndarray):
    return np.dtype(f"u{a.dtype.itemsize}")


def main(src: Path) -> None:
    z = np.load(src / "h200_probe.npz")
    ops = sorted({k.split("|")[0] for k in z.files})
    DATA.mkdir(parents=True, exist_ok=True)
    PKG.mkdir(parents=True, exist_ok=True)
    machine = json.loads((src / "h200_machine.json").read_text())
    machine["date"] = "2026-12-03"
    machine["script"] = "tests/emulator/semantics/h200_probe.py"
    (DATA / "h200_machine.json").write_text(json.dumps(machine, indent=1) + "\n")

    facts = {}
    approx = {}
    rng = np.random.default_rng(7)
    for op in ops:
        ins = [z[f"{op}|in{k}"] for k in range(3) if f"{op}|in{k}" in z.files]
        out = z[f"{op}|out"]
        if op in HALF.values() or op.endswith("f16x2"):
            continue
        if op.startswith(APPROX):
            n = out.size
            rest = np.arange(N_SPECIALS, n)
            if rest.size > 4096:
                rest = np.sort(rng.choice(rest, 4096, replace=False))
            keep = np.concatenate([np.arange(min(N_SPECIALS, n)), rest])
            for k, a in enumerate(ins):
                approx[f"{op}|in{k}"] = a[keep]
            approx[f"{op}|out"] = out[keep]
            continue
        if out.size > 2048:  # the full-sample probes (abs, neg, rcp.rn, sqrt.rn): specials + 512
            keep = np.concatenate(
                [np.arange(N_SPECIALS), np.arange(N_SPECIALS, out.size, out.size // 512)]
            )
            ins, out = [a[keep] for a in ins], out[keep]
        rows = []
        for i in range(out.size):
            cells = [f"{int(a.view(_unsigned(a))[i]):0{a.dtype.itemsize * 2}x}" for a in ins]
            rows.append(
                " ".join(cells)
                + " > "
                + f"{int(out.view(_unsigned(out))[i]):0{out.dtype.itemsize * 2}x}"
            )
        facts[op] = {"in": [str(a.dtype) for a in ins], "out": str(out.dtype), "rows": rows}
    (DATA / "h200_facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    np.savez_compressed(DATA / "h200_approx_f32.npz", **approx)
    tables = {}
    for key, op in HALF.items():
        assert np.array_equal(z[f"{op}|in0"], np.arange(65536, dtype=np.uint16))
        tables[key] = z[f"{op}|out"].astype(np.uint16)
    np.savez_compressed(PKG / "h200_half_approx.npz", **tables)
    # the x2 forms: kept as test data (they must equal the scalar tables per element)
    x2 = {k: z[k][:4096] for k in z.files if k.split("|")[0].endswith("f16x2")}
    np.savez_compressed(DATA / "h200_approx_x2.npz", **x2)
    print(f"{len(facts)} exact probes, {len(approx) // 2} approx probes, {len(tables)} tables")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
