import assert from "node:assert/strict";
import { test } from "node:test";
import { describeStatus } from "../src/statusText";

const server = { ptxas: "13.5 (nvidia-cuda-nvcc wheel)", arch: "sm_90", gpu: null, gpuReason: "no NVIDIA driver", llmModel: "gpt-4o", llmHost: "api.openai.com" };

test("the active PTX file's arch and ptxas replace the server-wide ones", () => {
  const file = { uri: "file:///w/k.ptx", ptxVersion: "8.0", arch: "sm_80", archFrom: ".target" as const, ptxas: "12.4 (PATH)", ptxasPath: "/usr/local/cuda/bin/ptxas" };
  const [text, tooltip] = describeStatus(server, file);
  assert.equal(text, "$(chip) ptxas 12.4 · sm_80 · no GPU · gpt-4o @ api.openai.com");
  assert.match(tooltip, /^k\.ptx \(\.version 8\.0\)/);
  assert.match(tooltip, /arch: sm_80 \(from the file's \.target\)/);
  assert.match(tooltip, /ptxas: 12\.4 \(PATH\) — \/usr\/local\/cuda\/bin\/ptxas/);
  assert.match(tooltip, /GPU: no CUDA device \(no NVIDIA driver\)/);
});

test("without a PTX file: the server's defaults; without a model: no LLM", () => {
  const [text, tooltip] = describeStatus({ ...server, llmModel: null, llmHost: null });
  assert.equal(text, "$(chip) ptxas 13.5 · sm_90 · no GPU · no LLM");
  assert.match(tooltip, /LLM: none \(set ptxls\.llm\.model and the API key\)/);
});
