import assert from "node:assert/strict";
import { test } from "node:test";
import { findKernels, kernelAt } from "../src/kernels";

test("PTX: every .entry, with its line", () => {
  const ptx = [
    ".version 8.5",
    ".target sm_90",
    ".visible .entry first(",
    "\t.param .u64 p",
    ")",
    "{ ret; }",
    ".entry second()",
    "{ ret; }",
    ".func helper() { ret; }",
  ].join("\n");
  assert.deepEqual(findKernels(ptx, "ptx"), [
    { name: "first", line: 2 },
    { name: "second", line: 6 },
  ]);
});

test("CUDA: __global__ kernels, with launch bounds, templates and extern C", () => {
  const cu = [
    "#include <cuda_runtime.h>",
    "__device__ float twice(float x) { return 2 * x; }",
    'extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {',
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
    "}",
    "__global__ void __launch_bounds__(256, 2)",
    "scale(float* x) {}",
    "template <int N> __global__ void tiled(float* x) {}",
    "int main() { vec_add<<<1, 1>>>(0, 0, 0, 0); }",
  ].join("\n");
  assert.deepEqual(findKernels(cu, "cuda-cpp"), [
    { name: "vec_add", line: 2 },
    { name: "scale", line: 5 },
    { name: "tiled", line: 7 },
  ]);
});

test("Triton: @triton.jit and @jit functions, reported at the def line", () => {
  const py = [
    "import triton",
    "from triton import jit",
    "@triton.jit",
    "def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
    "    pass",
    "def helper():",
    "    pass",
    "@jit(do_not_specialize=['n'])",
    "@some.other_decorator",
    "def mul_kernel(x_ptr):",
    "    pass",
  ].join("\n");
  assert.deepEqual(findKernels(py, "python"), [
    { name: "add_kernel", line: 3 },
    { name: "mul_kernel", line: 9 },
  ]);
});

test("the kernel under the cursor is the closest definition above it", () => {
  const kernels = [
    { name: "a", line: 2 },
    { name: "b", line: 10 },
  ];
  assert.equal(kernelAt(kernels, 5)?.name, "a");
  assert.equal(kernelAt(kernels, 10)?.name, "b");
  assert.equal(kernelAt(kernels, 40)?.name, "b");
  // Above every kernel with two to choose from: no guess.
  assert.equal(kernelAt(kernels, 0), undefined);
  // Above the only kernel: that one.
  assert.equal(kernelAt([{ name: "only", line: 4 }], 0)?.name, "only");
});

test("other languages have no kernels", () => {
  assert.deepEqual(findKernels("__global__ void k() {}", "plaintext"), []);
});
