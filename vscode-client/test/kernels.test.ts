import assert from "node:assert/strict";
import { test } from "node:test";
import { KERNELS_REQUEST, type KernelSource, kernelAt, requestKernels } from "../src/kernels";

// A stand-in for the LanguageClient: records the request, answers what the test says.
function client(answer: unknown): KernelSource & { sent: [string, unknown][] } {
  const sent: [string, unknown][] = [];
  return {
    sent,
    async sendRequest(method: string, params: unknown) {
      sent.push([method, params]);
      return answer;
    },
  };
}

test("the kernels come from the server's ptxls/kernels answer, for the document's uri", async () => {
  const server = client([
    { name: "vec_add", line: 2, kind: "cuda-global" },
    { name: "scale", line: 5, kind: "cuda-global" },
  ]);
  const kernels = await requestKernels(server, "file:///w/two.cu");
  assert.deepEqual(server.sent, [[KERNELS_REQUEST, { textDocument: { uri: "file:///w/two.cu" } }]]);
  assert.deepEqual(
    kernels.map((k) => [k.name, k.line, k.kind]),
    [
      ["vec_add", 2, "cuda-global"],
      ["scale", 5, "cuda-global"],
    ],
  );
});

test("an answer of another shape (an older server, a bad entry) gives no kernel from it", async () => {
  assert.deepEqual(await requestKernels(client(null), "file:///a.ptx"), []);
  assert.deepEqual(await requestKernels(client({ kernels: [] }), "file:///a.ptx"), []);
  const mixed = await requestKernels(
    client([
      { name: "ok", line: 1, kind: "ptx-entry" },
      { name: "no-line", kind: "ptx-entry" },
      { name: "bad-kind", line: 3, kind: "function" },
      { name: 7, line: 4, kind: "ptx-entry" },
      { name: "half", line: 1.5, kind: "triton-jit" },
    ]),
    "file:///a.ptx",
  );
  assert.deepEqual(
    mixed.map((k) => k.name),
    ["ok"],
  );
});

test("the kernel under the cursor is the closest definition above it", () => {
  const kernels = [
    { name: "a", line: 2, kind: "ptx-entry" as const },
    { name: "b", line: 10, kind: "ptx-entry" as const },
  ];
  assert.equal(kernelAt(kernels, 5)?.name, "a");
  assert.equal(kernelAt(kernels, 10)?.name, "b");
  assert.equal(kernelAt(kernels, 40)?.name, "b");
  // Above every kernel with two to choose from: no guess.
  assert.equal(kernelAt(kernels, 0), undefined);
  // Above the only kernel: that one.
  assert.equal(kernelAt([{ name: "only", line: 4, kind: "triton-jit" }], 0)?.name, "only");
});
