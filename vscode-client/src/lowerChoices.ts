// What "ptxls: Lower this kernel to PTX…" offers for the kernel under the cursor: the same
// choices the server's code actions offer on that kind of kernel (server/features/
// lowering_feature.py and triton_feature.py), each the arguments of ptxls.lowerToPtx
// (uri, kernel, backend[, line[, mode]]). No `vscode` import: unit-tested in
// test/lowerChoices.test.ts.
import type { KernelKind } from "./kernels";

export type LowerBackend = "llm" | "nvcc" | "triton";

export interface LowerChoice {
  label: string;
  description: string;
  backend: LowerBackend;
  // ptxls.lowerToPtx's mode argument; "lower" unless said
  mode?: "optimize";
}

const LLM: LowerChoice = { label: "LLM", description: "generate → ptxas → GPU test → repair", backend: "llm" };

const CHOICES: Record<KernelKind, LowerChoice[]> = {
  "cuda-global": [LLM, { label: "nvcc", description: "reference lowering with nvcc -ptx", backend: "nvcc" }],
  "triton-jit": [
    LLM,
    { label: "Triton (reference)", description: "Triton's own PTX for the kernel, compiled offline", backend: "triton" },
  ],
  "ptx-entry": [{ label: "LLM (optimize)", description: "faster PTX for this kernel, verified and timed", backend: "llm", mode: "optimize" }],
};

// The choices for a kernel of `kind`; an unknown kind (an older server) gets the CUDA ones.
export function lowerChoices(kind: KernelKind | undefined): LowerChoice[] {
  return CHOICES[kind ?? "cuda-global"] ?? CHOICES["cuda-global"];
}

// The ptxls.lowerToPtx arguments for `choice` on the kernel at `line` (0-based).
export function lowerArguments(uri: string, kernel: string, line: number, choice: LowerChoice): unknown[] {
  return choice.mode ? [uri, kernel, choice.backend, line, choice.mode] : [uri, kernel, choice.backend, line];
}
