// One status bar item: "ptxas 13.5 · sm_80 · NVIDIA H200 · gpt-4o @ api.openai.com" once the
// server reports it (`ptxls/status`, and `ptxls/fileStatus` for the active PTX file: its arch
// and ptxas); before that, what the client knows.
import * as vscode from "vscode";
import { describeStatus, type FileStatus, type ServerStatus } from "./statusText";

export type { FileStatus, ServerStatus };

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private status: ServerStatus | undefined;
  private readonly files = new Map<string, FileStatus>();
  private readonly editorListener: vscode.Disposable;

  constructor() {
    this.item = vscode.window.createStatusBarItem("ptxls.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "ptxls";
    this.item.command = "ptxls.showOutput";
    this.starting();
    this.item.show();
    this.editorListener = vscode.window.onDidChangeActiveTextEditor(() => this.render());
  }

  starting(): void {
    this.set("$(sync~spin) ptxls", "ptxls: starting the language server…");
  }

  settingUp(): void {
    this.set("$(sync~spin) ptxls: setting up", "ptxls: creating the Python environment for the language server…");
  }

  // The server is up but has not (or not yet) sent `ptxls/status`.
  running(): void {
    this.set("$(check) ptxls", "ptxls: language server running");
  }

  // The expected first run: no environment with ptxls yet. Not an error (no red item).
  needsSetup(reason: string): void {
    this.set("$(info) ptxls: set up", `ptxls: ${reason}\n\nClick to show the output.`);
  }

  failed(reason: string): void {
    this.set("$(error) ptxls", `ptxls: the language server is not running — ${reason}\n\nClick to show the output.`);
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
  }

  stopped(): void {
    this.status = undefined;
    this.files.clear();
    this.set("$(circle-slash) ptxls", "ptxls: language server stopped");
  }

  update(status: ServerStatus): void {
    this.status = status;
    this.render();
  }

  updateFile(file: FileStatus): void {
    this.files.set(file.uri, file);
    this.render();
  }

  dispose(): void {
    this.editorListener.dispose();
    this.item.dispose();
  }

  // Shows the server's status, with the active editor's file status when it is a PTX file.
  private render(): void {
    if (!this.status) {
      return;
    }
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    this.set(...describeStatus(this.status, uri ? this.files.get(uri) : undefined));
  }

  private set(text: string, tooltip: string): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = undefined;
  }
}
