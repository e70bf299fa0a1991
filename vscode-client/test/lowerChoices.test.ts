import assert from "node:assert/strict";
import { test } from "node:test";
import { lowerArguments, lowerChoices } from "../src/lowerChoices";

test("a Triton kernel offers the LLM and Triton (reference), as the code action does", () => {
  const choices = lowerChoices("triton-jit");
  assert.deepEqual(
    choices.map((c) => [c.label, c.backend]),
    [
      ["LLM", "llm"],
      ["Triton (reference)", "triton"],
    ],
  );
  assert.deepEqual(lowerArguments("file:///w/k.py", "add_kernel", 7, choices[1]), ["file:///w/k.py", "add_kernel", "triton", 7]);
});

test("a CUDA kernel offers the LLM and nvcc; nvcc is never offered for Triton or PTX", () => {
  assert.deepEqual(
    lowerChoices("cuda-global").map((c) => c.backend),
    ["llm", "nvcc"],
  );
  for (const kind of ["triton-jit", "ptx-entry"] as const) {
    assert.ok(!lowerChoices(kind).some((c) => c.backend === "nvcc"), kind);
  }
});

test("a PTX entry is optimized with the LLM (the code action's mode)", () => {
  const [only] = lowerChoices("ptx-entry");
  assert.deepEqual(lowerArguments("file:///w/k.ptx", "k", 3, only), ["file:///w/k.ptx", "k", "llm", 3, "optimize"]);
});

test("an unknown kind gets the CUDA choices", () => {
  assert.deepEqual(
    lowerChoices(undefined).map((c) => c.backend),
    ["llm", "nvcc"],
  );
});
