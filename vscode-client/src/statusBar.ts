// One status bar item: "ptxas 13.5 · sm_90 · NVIDIA H200 · gpt-4o" once the server
// reports it through the `ptxls/status` notification; before that, what the client knows.
import * as vscode from "vscode";

// Payload of the server's `ptxls/status` notification. Every field may be missing:
// the server grows over time and the client must not break on an older one.
export interface ServerStatus {
  ptxas?: string | null;
  ptxasReason?: string | null;
  arch?: string | null;
  gpu?: string | null;
  gpuReason?: string | null;
  llmModel?: string | null;
}

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem("ptxls.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "ptxls";
    this.item.command = "ptxls.showOutput";
    this.starting();
    this.item.show();
  }

  starting(): void {
    this.set("$(sync~spin) ptxls", "ptxls: starting the language server…");
  }

  // The server is up but has not (or not yet) sent `ptxls/status`.
  running(): void {
    this.set("$(check) ptxls", "ptxls: language server running");
  }

  failed(reason: string): void {
    this.set("$(error) ptxls", `ptxls: the language server is not running — ${reason}\n\nClick to show the output.`);
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
  }

  stopped(): void {
    this.set("$(circle-slash) ptxls", "ptxls: language server stopped");
  }

  update(status: ServerStatus): void {
    this.set(...describeStatus(status));
  }

  dispose(): void {
    this.item.dispose();
  }

  private set(text: string, tooltip: string): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = undefined;
  }
}

// [status bar text, tooltip]
export function describeStatus(status: ServerStatus): [string, string] {
  const ptxas = status.ptxas ? `ptxas ${status.ptxas}` : "no ptxas";
  const arch = status.arch ?? "";
  const gpu = status.gpu ?? "no GPU";
  const llm = status.llmModel ?? "no LLM";
  const text = ["$(chip) " + ptxas, arch, gpu, llm].filter((s) => s !== "").join(" · ");
  const lines = [
    `ptxas: ${status.ptxas ?? `not found${status.ptxasReason ? ` (${status.ptxasReason})` : ""}`}`,
    `arch: ${arch || "from the PTX .target"}`,
    `GPU: ${status.gpu ?? `none${status.gpuReason ? ` (${status.gpuReason})` : ""}`}`,
    `LLM: ${status.llmModel ?? "none (set ptxls.llm.model and the API key)"}`,
    "",
    "Click to show the ptxls output.",
  ];
  return [text, lines.join("\n")];
}
