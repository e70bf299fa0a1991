"""Retrieval picks few-shot examples by family and shape, on a table of requests (plain
language, CUDA, Triton) → the examples they must get; and never the kernel being asked for."""

from __future__ import annotations

import pytest

from ptxls.fewshot.library import load_examples
from ptxls.fewshot.retrieve import defined_kernels, pick_examples

EXAMPLES = load_examples()
NAMES = {e.name for e in EXAMPLES}
FAMILY = {e.name: e.family for e in EXAMPLES}

RELU_CUDA = """__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}"""
TRANSPOSE_CUDA = """__global__ void flip(const float* a, float* b, int rows, int cols) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows && j < cols) b[j * rows + i] = a[i * cols + j];
}"""
HEAT_CUDA = """__global__ void heat(const float* u, float* v, int nx, int ny) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && j > 0 && i < ny - 1 && j < nx - 1)
        v[i * nx + j] = u[(i - 1) * nx + j] + u[(i + 1) * nx + j] + u[i * nx + j - 1] + u[i * nx + j + 1] - 4 * u[i * nx + j];
}"""
ROWMAX_TRITON = """@triton.jit
def row_max(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * cols + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < cols)
    tl.store(out_ptr + row, tl.max(x, axis=0))"""

# request → (the example that must come first, the family every pick must have or None)
TABLE = [
    ("add two float arrays elementwise, vectorized with float4", "vec_add", "elementwise"),
    ("bias add followed by GELU activation in half precision", "bias_gelu_f16", "elementwise"),
    (RELU_CUDA, None, "elementwise"),
    ("softmax over each row of the attention scores", "softmax_rows", "reduction"),
    ("layer norm of each row with gamma and beta", "layernorm_rows", "reduction"),
    ("sum of all elements of a huge float array in one pass", "reduce_sum", "reduction"),
    ("count how often each byte value occurs: a 256-bin histogram", "histogram256", "reduction"),
    (ROWMAX_TRITON, None, "reduction"),
    ("transpose a row-major matrix", "transpose", "transpose"),
    (TRANSPOSE_CUDA, "transpose", None),
    ("5-point Jacobi stencil on a 2D grid", "stencil5", "stencil"),
    (HEAT_CUDA, "stencil5", None),
    ("C = A @ B matrix multiply for a linear layer", None, "matmul"),
]


@pytest.mark.parametrize("request_text, first, family", TABLE)
def test_retrieval_table(request_text, first, family):
    picked = pick_examples(request_text, 2)
    names = [e.name for e in picked]
    if first is not None:
        if first not in NAMES:
            pytest.skip(f"{first} is not in the library")
        assert names[0] == first, names
    if family is not None:
        assert all(e.family == family for e in picked), [(e.name, e.family) for e in picked]


def test_scan_and_gemm_requests_reach_their_kernels_when_present():
    if "scan_inclusive" in NAMES:
        assert (
            pick_examples("inclusive prefix sum (cumsum) of an array", 1)[0].name
            == "scan_inclusive"
        )
    gemms = {n for n in NAMES if "gemm" in n}
    if gemms:
        assert pick_examples("fp16 gemm on tensor cores", 1)[0].name in gemms


def test_exclude_leaves_out_the_named_kernel_but_keeps_the_family():
    picked = pick_examples("row softmax, like softmax_rows", 2, exclude=["softmax_rows"])
    assert "softmax_rows" not in [e.name for e in picked]
    assert picked and picked[0].family == "reduction"


def test_the_kernel_the_request_defines_is_never_returned():
    request = """__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
        // softmax of each row
    }"""
    assert defined_kernels(request) == {"softmax_rows"}
    picked = pick_examples(request, 3)
    assert "softmax_rows" not in [e.name for e in picked]
    assert [e.family for e in picked][0] == "reduction"
    ptx = ".visible .entry transpose(\n .param .u64 p\n)\n{ ret; }  // transpose"
    assert "transpose" not in [e.name for e in pick_examples(ptx, 3)]
    triton = "import triton\n@triton.jit\ndef layernorm_rows(x_ptr, y_ptr, n):\n    pass\n"
    assert defined_kernels(triton) == {"layernorm_rows"}
    # a kernel only mentioned in a comment is not defined by the request
    assert defined_kernels("// like __global__ void transpose(float* a) {}\nmake it fast") == set()
