// What the status bar item says, from the server's ptxls/status and the active PTX file's
// ptxls/fileStatus. Pure (no `vscode`), so test/statusText.test.ts checks it directly.

// Payload of the server's `ptxls/status` notification. Every field may be missing:
// the server grows over time and the client must not break on an older one.
export interface ServerStatus {
  ptxas?: string | null;
  ptxasReason?: string | null;
  arch?: string | null;
  gpu?: string | null;
  gpuReason?: string | null;
  llmModel?: string | null;
  llmHost?: string | null;
}

// Payload of `ptxls/fileStatus`: what the diagnostics use for one PTX file.
export interface FileStatus {
  uri: string;
  ptxVersion?: string | null;
  arch?: string | null;
  archFrom?: "setting" | ".target" | "GPU" | "default" | null;
  ptxas?: string | null;
  ptxasPath?: string | null;
  ptxasReason?: string | null;
}

const ARCH_FROM: Record<string, string> = {
  setting: "the ptxls.arch setting",
  ".target": "the file's .target",
  GPU: "the local GPU",
  default: "the default: no setting, .target or GPU",
};

// [status bar text, tooltip]. `file` is the active editor's PTX file, when there is one.
export function describeStatus(status: ServerStatus, file?: FileStatus): [string, string] {
  const ptxas = file ? file.ptxas : status.ptxas;
  const ptxasReason = file ? file.ptxasReason : status.ptxasReason;
  const arch = (file ? file.arch : status.arch) ?? "";
  const gpu = status.gpu ?? "no GPU";
  const llm = status.llmModel ? `${status.llmModel}${status.llmHost ? ` @ ${status.llmHost}` : ""}` : "no LLM";
  const text = ["$(chip) " + (ptxas ? `ptxas ${ptxas.replace(/ \(.*\)$/, "")}` : "no ptxas"), arch, gpu, llm].filter((s) => s !== "").join(" · ");
  const lines: string[] = [];
  if (file) {
    const name = decodeURIComponent(file.uri.split("/").pop() ?? file.uri);
    lines.push(`${name}${file.ptxVersion ? ` (.version ${file.ptxVersion})` : " (no .version)"}`);
  }
  lines.push(
    `ptxas: ${ptxas ?? `not found${ptxasReason ? ` (${ptxasReason})` : ""}`}${file?.ptxasPath ? ` — ${file.ptxasPath}` : ""}`,
    `arch: ${arch || "from the PTX .target"}${file?.archFrom ? ` (from ${ARCH_FROM[file.archFrom] ?? file.archFrom})` : ""}`,
    `GPU: ${status.gpu ?? `no CUDA device${status.gpuReason ? ` (${status.gpuReason})` : ""}`}`,
    `LLM: ${status.llmModel ? `${status.llmModel} at ${status.llmHost ?? "the OpenAI API"}` : "none (set ptxls.llm.model and the API key)"}`,
    "",
    "Click to show the ptxls output.",
  );
  return [text, lines.join("\n")];
}
