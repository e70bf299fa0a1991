import assert from "node:assert/strict";
import { test } from "node:test";
import { describeCommand, planResult } from "../src/commandText";

const LOWER_NVCC = ["file:///w/vec_add.cu", "vec_add", "nvcc", 3, "lower"];

test("the light bulb's nvcc lowering opens the file it wrote and says so", () => {
  const plan = planResult("ptxls.lowerToPtx", LOWER_NVCC, {
    ok: true,
    status: "compiled",
    summary: "nvcc lowered vec_add → vec_add.nvcc.ptx (vec_add.ptx was edited by hand)",
    uri: "file:///w/vec_add.nvcc.ptx",
  });
  assert.deepEqual(plan.open, { kind: "file", uri: "file:///w/vec_add.nvcc.ptx" });
  assert.deepEqual(plan.message, { kind: "info", text: "ptxls: nvcc lowered vec_add → vec_add.nvcc.ptx (vec_add.ptx was edited by hand)" });
  assert.equal(describeCommand("ptxls.lowerToPtx", LOWER_NVCC), "lowering vec_add to PTX (nvcc)");
});

test("a failure is a warning with the server's why, and opens nothing", () => {
  const plan = planResult("ptxls.lowerToPtx", LOWER_NVCC, { ok: false, summary: "nvcc failed: error: expected a ';'" });
  assert.equal(plan.open, undefined);
  assert.deepEqual(plan.message, { kind: "warning", text: "ptxls: nvcc failed: error: expected a ';'" });
});

test("a result that could not be written still shows its PTX; SASS outside the workspace shows as text", () => {
  assert.deepEqual(planResult("ptxls.lowerToPtx", LOWER_NVCC, { ok: false, summary: "not written: read-only", ptx: ".version 8.0" }).open, {
    kind: "text",
    content: ".version 8.0",
    language: "ptx",
  });
  assert.deepEqual(planResult("ptxls.showSass", ["u", "k"], { ok: true, summary: "k: 12 registers", sass: "SASS of k" }).open, {
    kind: "text",
    content: "SASS of k",
    language: "plaintext",
  });
});

test("a GPU test without a GPU says why and where the details are; a cancelled run says nothing", () => {
  const plan = planResult("ptxls.runGpuTest", ["u", "vec_add"], { ok: false, status: "no-gpu", summary: "no CUDA device" });
  assert.deepEqual(plan.message, { kind: "warning", text: "ptxls: no CUDA device. Hover the kernel's name for the table." });
  assert.equal(planResult("ptxls.runGpuTest", ["u", "vec_add"], { ok: false, status: "cancelled", summary: "cancelled" }).message.kind, "none");
  assert.equal(planResult("ptxls.showPtx", ["u", "k"], undefined).message.kind, "none");
});
