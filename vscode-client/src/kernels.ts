// The kernels of a document, as the language server reads them (request `ptxls/kernels`), so
// that "run GPU test / lower / show PTX for this kernel" can name the kernel under the cursor.
// The server's own PTX, CUDA and Triton readers answer: the editor never scans the text itself.
// No `vscode` import: unit-tested in test/kernels.test.ts with a stand-in client.

export const KERNELS_REQUEST = "ptxls/kernels";

export type KernelKind = "ptx-entry" | "cuda-global" | "triton-jit";

export interface KernelSite {
  name: string;
  // 0-based line of the kernel's name.
  line: number;
  kind: KernelKind;
}

// What this module needs of a vscode-languageclient LanguageClient.
export interface KernelSource {
  sendRequest(method: string, params: unknown): Promise<unknown>;
}

const KINDS: readonly string[] = ["ptx-entry", "cuda-global", "triton-jit"];

// The kernels the server finds in the open document `uri`; an answer of another shape (an older
// server) counts as none.
export async function requestKernels(client: KernelSource, uri: string): Promise<KernelSite[]> {
  const answer = await client.sendRequest(KERNELS_REQUEST, { textDocument: { uri } });
  return Array.isArray(answer) ? answer.filter(isKernelSite) : [];
}

function isKernelSite(value: unknown): value is KernelSite {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const site = value as Record<string, unknown>;
  return typeof site.name === "string" && Number.isInteger(site.line) && typeof site.kind === "string" && KINDS.includes(site.kind);
}

// The kernel whose definition is the closest one at or above `line`; with the cursor
// above every kernel, the only kernel if there is one.
export function kernelAt(kernels: KernelSite[], line: number): KernelSite | undefined {
  let best: KernelSite | undefined;
  for (const kernel of kernels) {
    if (kernel.line <= line && (best === undefined || kernel.line > best.line)) {
      best = kernel;
    }
  }
  return best ?? (kernels.length === 1 ? kernels[0] : undefined);
}
