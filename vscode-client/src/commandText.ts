// What a person sees of a server command (ptxls.lowerToPtx, runGpuTest, runSanitizer, showPtx,
// showSass, openLibraryKernel), whichever way it started: the palette, a code action (the light
// bulb) or a code lens. The words while it runs, the document to open when it ends, and the
// message that says what it did or why it failed. No `vscode` import: unit-tested in
// test/commandText.test.ts; commandResults.ts does the showing.

// The words for the progress notification: "lowering vec_add to PTX (nvcc)".
export function describeCommand(command: string, args: readonly unknown[]): string {
  const kernel = typeof args[1] === "string" && args[1] ? shorten(args[1]) : "the kernel";
  switch (command) {
    case "ptxls.lowerToPtx": {
      const backend = typeof args[2] === "string" ? args[2] : "";
      const mode = typeof args[4] === "string" ? args[4] : "lower";
      if (mode === "plan") return `planning the lowering of ${kernel} (${backend})`;
      if (mode === "optimize") return `optimizing ${kernel} (${backend})`;
      return `lowering ${kernel} to PTX (${backend === "llm" ? "LLM" : backend})`;
    }
    case "ptxls.runGpuTest":
      return `GPU test of ${kernel}`;
    case "ptxls.runSanitizer":
      return `compute-sanitizer on ${kernel}`;
    case "ptxls.showPtx":
      return `PTX of ${kernel}`;
    case "ptxls.showSass":
      return `SASS of ${kernel}`;
    default:
      return command.replace(/^ptxls\./, "");
  }
}

// What to add after a command's summary, where the result lives besides the message.
const HINTS: Record<string, string> = {
  "ptxls.runGpuTest": "Hover the kernel's name for the table.",
  "ptxls.runSanitizer": "Its reports are in the Problems view.",
};

export type OpenPlan =
  | { kind: "file"; uri: string }
  | { kind: "text"; content: string; language: "ptx" | "plaintext" }
  | undefined;

export interface ResultPlan {
  open: OpenPlan;
  // "none": nothing to say (no answer, or the person cancelled it)
  message: { kind: "info" | "warning" | "none"; text: string };
}

// How to show a command's answer `{ok, summary, uri?, ptx?, sass?, status?}` (or plain text).
export function planResult(command: string, args: readonly unknown[], result: unknown): ResultPlan {
  const what = describeCommand(command, args);
  if (result === undefined || result === null) {
    return { open: undefined, message: { kind: "none", text: "" } };
  }
  if (typeof result === "string") {
    return {
      open: result.trim() ? { kind: "text", content: result, language: "ptx" } : undefined,
      message: { kind: "none", text: "" },
    };
  }
  if (!isRecord(result)) {
    return { open: undefined, message: { kind: "none", text: "" } };
  }
  const ok = result.ok !== false;
  const summary = typeof result.summary === "string" && result.summary.trim() ? result.summary.trim() : `${what}: ${ok ? "done" : "failed"}`;
  const hint = ok || result.status === "no-gpu" ? HINTS[command] ?? "" : "";
  const cancelled = result.status === "cancelled";
  return {
    open: openPlan(result, ok),
    message: cancelled ? { kind: "none", text: "" } : { kind: ok ? "info" : "warning", text: `ptxls: ${withHint(summary, hint)}` },
  };
}

function openPlan(result: Record<string, unknown>, ok: boolean): OpenPlan {
  // a file the command wrote (it gets the server's diagnostics, and nothing asks to save it)
  if (ok && typeof result.uri === "string" && result.uri) {
    return { kind: "file", uri: result.uri };
  }
  // no file (the source is outside the workspace, or the file could not be written): the text
  // is still worth seeing
  if (typeof result.sass === "string" && result.sass.trim()) {
    return { kind: "text", content: result.sass, language: "plaintext" };
  }
  if (typeof result.ptx === "string" && result.ptx.trim()) {
    return { kind: "text", content: result.ptx, language: "ptx" };
  }
  return undefined;
}

function withHint(summary: string, hint: string): string {
  if (!hint) return summary;
  return `${summary}${/[.!?:)]$/.test(summary) ? "" : "."} ${hint}`;
}

function shorten(name: string): string {
  return name.length > 60 ? `${name.slice(0, 57)}…` : name;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
