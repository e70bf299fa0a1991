// Finds kernel definitions in PTX, CUDA C++ and Triton (Python) source text, so that
// "run GPU test / lower / show PTX for this kernel" can name the kernel under the cursor.
// Plain text in, plain data out: no `vscode` import, unit-tested in test/kernels.test.ts.

export interface KernelSite {
  name: string;
  // 0-based line of the definition.
  line: number;
}

const PTX_ENTRY = /^[ \t]*(?:\.(?:visible|weak|extern)[ \t]+)*\.entry[ \t]+([A-Za-z_$%][\w$]*)/gm;
// `__global__ void name(` with anything but ; { ( between; __launch_bounds__(...) is blanked first.
const CUDA_GLOBAL = /__global__\b[^;{(]*?\b([A-Za-z_]\w*)\s*(?:<[^;{(]*>\s*)?\(/g;
const CUDA_ATTRIBUTE_CALLS = /\b(?:__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\([^)]*\)/g;
// `@triton.jit` or `@jit` (with or without arguments), other decorators, then `def name(`.
const TRITON_JIT = /^[ \t]*@(?:triton\.)?jit\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def[ \t]+([A-Za-z_]\w*)/gm;

export function findKernels(text: string, languageId: string): KernelSite[] {
  switch (languageId) {
    case "ptx":
      return matchAll(text, PTX_ENTRY);
    case "cuda-cpp":
    case "cuda":
      return matchAll(blankOut(text, CUDA_ATTRIBUTE_CALLS), CUDA_GLOBAL);
    case "python":
      return matchAll(text, TRITON_JIT, /def[ \t]+[A-Za-z_]/);
    default:
      return [];
  }
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

// `lineAnchor`, when given, moves the reported line from the start of the match to where
// the anchor pattern occurs inside it (the `def` line rather than the decorator line).
function matchAll(text: string, pattern: RegExp, lineAnchor?: RegExp): KernelSite[] {
  const sites: KernelSite[] = [];
  for (const match of text.matchAll(pattern)) {
    let offset = match.index ?? 0;
    if (lineAnchor) {
      const inner = match[0].search(lineAnchor);
      if (inner >= 0) {
        offset += inner;
      }
    } else {
      offset += match[0].length - match[0].trimStart().length;
    }
    sites.push({ name: match[1], line: lineOf(text, offset) });
  }
  return sites;
}

function lineOf(text: string, offset: number): number {
  let line = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
    }
  }
  return line;
}

// Replaces each match with spaces (newlines kept) so offsets and lines stay put.
function blankOut(text: string, pattern: RegExp): string {
  return text.replace(pattern, (m) => m.replace(/[^\n]/g, " "));
}
