"""PyTorch baselines for ``ptxls bench``: the same computation through torch, on the same inputs,
timed the same way (L2 flushed before each launch, events around the op alone, median of the
runs). A spec names its op from the fixed table below (``bench.torch.op``); nothing from a spec
runs as code. Each result is checked against the numpy reference too, so a ratio never
compares different computations.

Imported only inside the GPU worker, and only when a benchmark asks for torch: the worker must
run without torch, and importing it costs seconds.
"""

from __future__ import annotations

import contextlib
import statistics
import threading

import numpy as np

from . import exprs
from .dtypes import DTYPES, to_float64


def _ops():
    import torch
    import torch.nn.functional as F  # torch's own spelling

    def gelu_bias(x, b, n, cols):
        return F.gelu(x.view(-1, cols) + b, approximate="tanh")

    def stencil5(x, rows, cols):
        w = torch.tensor([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=x.dtype, device=x.device)
        return F.conv2d(x.view(1, 1, rows, cols), w.view(1, 1, 3, 3), padding=1)

    return {
        "add": lambda a, b, *_: a + b,
        "sum": lambda x, *_: x.sum(),
        "row_sum": lambda x, rows, cols: x.view(rows, cols).sum(dim=1),
        "softmax_rows": lambda x, rows, cols: torch.softmax(x.view(rows, cols), dim=1),
        "layernorm_rows": lambda x, g, b, rows, cols: F.layer_norm(
            x.view(rows, cols), (cols,), g, b, eps=1e-5
        ),
        "transpose": lambda x, rows, cols: x.view(rows, cols).t().contiguous(),
        "bincount256": lambda x, *_: torch.bincount(x, minlength=256),
        "cumsum": lambda x, *_: torch.cumsum(x, dim=0),
        "bias_gelu_f16": gelu_bias,
        "bias_gelu_bf16": gelu_bias,
        "stencil5": stencil5,
        "matmul_f32": lambda a, b, m, n, k: a.view(m, k) @ b.view(k, n),
        "matmul_f16": lambda a, b, m, n, k: a.view(m, k) @ b.view(k, n),
    }


OPS = (
    "add", "sum", "row_sum", "softmax_rows", "layernorm_rows", "transpose", "bincount256",
    "cumsum", "bias_gelu_f16", "bias_gelu_bf16", "stencil5", "matmul_f32", "matmul_f16",
)  # fmt: skip


def _tensor(torch, dtype_name: str, host: np.ndarray):
    if dtype_name == "bf16":  # stored as uint16 bit patterns
        return torch.from_numpy(host.view(np.int16).copy()).cuda().view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(host)).cuda()


def time_torch(torch_spec: dict, spec, host_inputs: dict, env: dict, expected: dict, runs: int,
               flush_bytes: int) -> dict:  # fmt: skip
    """{"torch_op", "torch_ms", "torch_min_ms", "torch_max_ms", "torch_check"} or
    {"torch_error": why}. Never raises: a missing torch is a reason, not a crash."""
    op_name = torch_spec.get("op", "")
    try:
        import torch
    except ImportError as e:
        return {"torch_error": f"torch is not importable: {e}"}
    if op_name not in OPS:
        return {"torch_error": f"unknown torch op '{op_name}' (known: {', '.join(OPS)})"}
    try:
        fn = _ops()[op_name]
        args = []
        for name in torch_spec.get("inputs", []):
            p = spec.param(name)
            args.append(_tensor(torch, p.dtype, host_inputs[name]))
        args += [exprs.evaluate_int(d, env) for d in torch_spec.get("dims", [])]
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 (cuBLAS SGEMM)
        flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        try:
            try:
                out = fn(*args)  # warm-up: handles, kernels loaded
            except RuntimeError:
                if op_name != "bincount256":
                    raise
                # a torch without uint8 bincount: what a user would do, converted untimed
                args[0] = args[0].to(torch.int32)
                out = fn(*args)
            torch.cuda.synchronize()
            times = []
            for _ in range(max(1, runs)):
                flush.zero_()
                start.record()
                out = fn(*args)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        result = {"torch_op": op_name, "torch_ms": statistics.median(times),
                  "torch_min_ms": min(times), "torch_max_ms": max(times),
                  "torch_check": _check(out, spec, expected)}  # fmt: skip
        del flush, out, args
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # give the memory back to the harness's allocations
        return result
    except Exception as e:  # a baseline that cannot run is a note, not a failure
        return {"torch_error": f"{type(e).__name__}: {e}"}


_PRELOAD: threading.Thread | None = None


def preload() -> None:
    """Start importing torch on a thread (seconds), while the request's inputs, reference and
    checks run; ``time_torch``'s own import then waits for it (Python's import lock)."""
    global _PRELOAD
    if _PRELOAD is None:

        def load() -> None:
            with contextlib.suppress(Exception):
                import torch  # noqa: F401

        _PRELOAD = threading.Thread(target=load, name="torch-import", daemon=True)
        _PRELOAD.start()


def _check(out, spec, expected: dict) -> str:
    """Whether torch computed what the numpy reference says (loose: torch may use other
    algorithms and precisions; this catches a wrong op or shape, not rounding)."""
    outs = [p for p in spec.params if p.role in ("out", "inout")]
    if not outs or outs[0].name not in expected:
        return "not checked"
    p = outs[0]
    import torch

    if DTYPES[p.dtype].decode is None or p.dtype == "bf16":
        # On the GPU: the reference uploaded in its storage type, both sides widened to float64
        # there, only the two maxima come back (a 2^28-element result took seconds on the host).
        with contextlib.suppress(RuntimeError, TypeError):
            want_t = _tensor(torch, p.dtype, expected[p.name]).reshape(-1).to(torch.float64)
            got_t = out.detach().reshape(-1).to(torch.float64)
            if got_t.shape != want_t.shape:
                return (f"shape differs: torch {got_t.shape[0]} elements, reference "
                        f"{want_t.shape[0]}")  # fmt: skip
            if not want_t.numel():
                return "ok"
            scale = max(float(want_t.abs().max()), 1e-30)
            err = float((got_t - want_t).abs().max()) / scale
            return (
                "ok"
                if err <= 2e-2
                else f"differs from the reference (max error {err:.1e} of max |ref|)"
            )
    want = to_float64(DTYPES[p.dtype], expected[p.name]).reshape(-1)
    got = out.detach().reshape(-1).to(torch.float64).cpu().numpy()
    if got.shape != want.shape:
        return f"shape differs: torch {got.shape[0]} elements, reference {want.shape[0]}"
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
    err = float(np.max(np.abs(got - want))) / scale if want.size else 0.0
    return "ok" if err <= 2e-2 else f"differs from the reference (max error {err:.1e} of max |ref|)"
