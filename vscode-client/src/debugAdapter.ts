// The `ptxls` debug type: VS Code's debugger talks the Debug Adapter Protocol to
// `ptxls debug-adapter` over stdio, started through the same Python (or command) the language
// server was started with, in the same private working directory (never the workspace folder:
// `python -m` would import a cloned repository's modules first; SECURITY.md).
import * as vscode from "vscode";
import type { ServerManager } from "./server";
import { serverWorkingDirectory } from "./server";
import { adapterArguments, DEBUG_FIRST_WRONG, firstWrongLaunch } from "./debugArgs";

export const DEBUG_TYPE = "ptxls";

export class PtxlsDebugAdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly servers: ServerManager,
  ) {}

  createDebugAdapterDescriptor(): vscode.ProviderResult<vscode.DebugAdapterDescriptor> {
    const server = this.servers.startedWith;
    const command = server?.command ?? "python3";
    const args = adapterArguments(server?.args ?? ["-m", "ptxls.server", "serve"]);
    return new vscode.DebugAdapterExecutable(command, args, { cwd: serverWorkingDirectory(this.context) });
  }
}

// F5 on a .ptx file without a launch.json: debug the open file's first kernel.
export class PtxlsDebugConfigurations implements vscode.DebugConfigurationProvider {
  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.ProviderResult<vscode.DebugConfiguration> {
    if (!config.type && !config.request && !config.name) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId !== "ptx") {
        return config;
      }
      return { type: DEBUG_TYPE, request: "launch", name: "Debug PTX on the emulator", program: editor.document.uri.fsPath };
    }
    return config;
  }
}

export async function debugFirstWrong(arg: unknown): Promise<boolean> {
  const config = firstWrongLaunch(arg);
  if (config === undefined) {
    void vscode.window.showErrorMessage("ptxls: this link does not name a ptxls launch configuration.");
    return false;
  }
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(config.program));
  return vscode.debug.startDebugging(folder, config);
}

export function registerDebugger(context: vscode.ExtensionContext, servers: ServerManager): void {
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new PtxlsDebugAdapterFactory(context, servers)),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new PtxlsDebugConfigurations()),
    vscode.commands.registerCommand(DEBUG_FIRST_WRONG, debugFirstWrong),
  );
}
